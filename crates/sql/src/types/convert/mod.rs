//! Conversions between values (docs/design/issue20-sql-engine.md §2.2: the one conversion
//! module; today storing a value in a column, reading values as dates, and reading text as
//! numbers).

pub(crate) mod number;
pub mod store;
pub(crate) mod temporal;
