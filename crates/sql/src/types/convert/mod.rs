//! Conversions between values (docs/design/issue20-sql-engine.md §2.2: the one conversion
//! module; today only reading values as dates).

pub(crate) mod temporal;
