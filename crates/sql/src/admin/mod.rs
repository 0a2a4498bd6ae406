//! Layer 11 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): SHOW, the
//! information_schema tables' rows, status and process lists, account statements.

pub(crate) mod infoschema;
pub(crate) mod show;
pub(crate) mod user;
