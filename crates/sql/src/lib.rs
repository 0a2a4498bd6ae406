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

pub mod accounts;
pub mod builtins;
pub mod catalog;
pub mod codec;
mod collation_table;
mod ddl;
mod depth;
pub(crate) mod diag;
mod error;
pub mod exec;
pub mod expr;
pub(crate) mod infoschema;
mod join;
mod limits;
mod parse;
pub mod plan;
pub mod result;
mod select;
mod session;
mod show;
mod split;
pub mod store;
mod typeagg;
mod user;
pub mod value;

pub use error::SqlError;
pub use limits::Interrupt;
pub use parse::{parse, sql_from_bytes, Statement};
pub use result::{ColumnMeta, Outcome};
pub use session::{Instance, InstanceOptions, PreparedInfo, Process, Session, Warning};
pub use value::{Decimal, SqlType, Value};

/// Stack a thread needs to run statements through a [`Session`]: room for the deepest
/// expression the parser accepts (see `depth.rs`) through compilation and evaluation, with
/// about 2.5 times what the deepest shapes measured in a debug build (12 MiB). A statement
/// that starts with less stack than [`STATEMENT_STACK_NEEDED`] left runs on a stack of this
/// size allocated for it, so any thread may call a session; threads of this size never pay
/// for that. Only touched pages cost memory. `tests/hostile.rs` runs the deepest shapes.
pub const STATEMENT_STACK_BYTES: usize = 32 << 20;

/// The stack a statement must find left when it starts, else it gets a fresh one.
pub const STATEMENT_STACK_NEEDED: usize = 24 << 20;
