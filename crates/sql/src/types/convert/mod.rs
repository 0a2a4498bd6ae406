//! Conversions between values (docs/design/issue20-sql-engine.md §2.2: the one conversion
//! module; today storing a value in a column, and reading values as dates).

pub mod store;
pub(crate) mod temporal;
