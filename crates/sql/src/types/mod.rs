//! Layer 1 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): SQL values and types,
//! the collation, storing a value in a column, the common type of several operands, the
//! statement's diagnostics area and result metadata. Imports only `error`.

pub(crate) mod collation;
pub(crate) mod collation_table;
pub(crate) mod convert;
pub(crate) mod datetext;
pub(crate) mod decimal;
pub(crate) mod diag;
pub mod result;
pub(crate) mod sqltype;
pub(crate) mod temporal;
pub(crate) mod typeagg;
pub mod value;
