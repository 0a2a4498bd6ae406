//! Layer 11 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): SHOW, the
//! information_schema tables' rows, status and process lists, account statements.

pub(crate) mod infoschema;
pub(crate) mod optimize;
pub(crate) mod processlist;
pub(crate) mod show;
pub(crate) mod status;
pub(crate) mod tables;
pub(crate) mod user;

use crate::types::value::Value;

/// A text value (the rows of SHOW and `information_schema` are mostly text).
pub(crate) fn s(v: impl Into<String>) -> Value {
    Value::Str(v.into())
}
