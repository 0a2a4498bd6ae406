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

// The engine's layers (docs/design/issue20-sql-engine.md §2.1; lowest first: error, types,
// runtime, catalog, front, expr, plan, bind, exec, instance, ddl, admin, session); each
// folder's mod.rs says what it holds. `exec` and `expr` are still public: `expr::text_cmp`
// and `expr::fmt_double` are used by no code of the crate, and they become crate-private
// (§2.1) once those go.
mod admin;
mod bind;
pub mod catalog;
mod ddl;
mod error;
pub mod exec;
pub mod expr;
mod front;
mod instance;
mod plan;
mod runtime;
mod session;
mod types;

// The public paths of modules: the server and the fuzz targets name them
// (`zipdb_sql::codec::encode_row`, `zipdb_sql::value::DateTime`).
pub use catalog::{accounts, codec};
pub use types::{result, value};

pub use error::{ErrorKind, SqlError};
pub use front::depth::SET_OPERANDS_MAX;
pub use front::parse::{parse, sql_from_bytes, Statement};
pub use front::stack::{STATEMENT_STACK_BYTES, STATEMENT_STACK_NEEDED};
pub use instance::session::Session;
pub use instance::{Instance, InstanceOptions, Process};
pub use runtime::limits::Interrupt;
pub use session::sink::{ResultSink, SinkClosed, StatementEnd, Status};
pub use session::PreparedInfo;
pub use types::decimal::Decimal;
pub use types::diag::Warning;
pub use types::result::{ColumnMeta, Outcome};
pub use types::sqltype::SqlType;
pub use types::value::Value;
