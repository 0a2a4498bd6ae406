//! Layer 2 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): what a running
//! statement may consume and how it learns that it must stop.

pub(crate) mod limits;
pub(crate) mod memory;
pub(crate) mod spill;
