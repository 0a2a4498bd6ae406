//! zipdb's SQL layer: parsing (MySQL dialect, with `sqlparser`), a catalog of databases and
//! tables over engine trees, planning and execution of single-table queries and DML, and
//! sessions with transactions, prepared statements and variables.
//!
//! `sqlparser`'s AST changes with every release, so it is pinned and does not leak out of this
//! crate: callers see [`Instance`], [`Session`], [`Value`], [`Outcome`] and [`SqlError`].

// Callbacks into the session (`&dyn Fn(&str, &str) -> Result<Arc<Table>, _>`) and scan
// visitors are spelled out where they are used; match arms keep their guard separate from the
// pattern where that reads better.
#![allow(clippy::type_complexity, clippy::collapsible_match)]

// The engine's layers (docs/design/issue20-sql-engine.md §2.1; lowest first: types, runtime,
// catalog, front, ..., ddl, admin, session); each folder's mod.rs says what it holds. The flat
// files below them are still to be moved (Phase A).
mod admin;
mod bind;
pub mod catalog;
mod ddl;
pub mod exec;
pub mod expr;
mod front;
mod runtime;
mod session;
mod types;

mod error;

// The paths from before the folders: the server, the fuzz targets and the crate's own code
// still name these modules at the root (`zipdb_sql::codec`, `crate::value`).
use admin::{infoschema, show, user};
use bind::select;
pub use catalog::{accounts, codec};
pub use exec::dml as plan;
use exec::join;
pub use expr::builtins;
use front::{depth, parse, split};
use runtime::limits;
use types::{collation_table, diag, typeagg};
pub use types::{result, store, value};

pub use error::SqlError;
pub use front::parse::{parse, sql_from_bytes, Statement};
pub use front::stack::{STATEMENT_STACK_BYTES, STATEMENT_STACK_NEEDED};
pub use runtime::limits::Interrupt;
pub use session::{Instance, InstanceOptions, PreparedInfo, Process, Session};
pub use types::diag::Warning;
pub use types::result::{ColumnMeta, Outcome};
pub use types::value::{Decimal, SqlType, Value};
