//! zipdb's SQL layer: parsing (MySQL dialect, with `sqlparser`), values and types, and the
//! errors a MySQL client expects. Planning and execution over the engine are being built
//! (issue 5).
//!
//! `sqlparser`'s AST changes with every release, so it is pinned and does not leak out of this
//! crate: callers see [`Statement`], [`Value`], [`Outcome`] and [`SqlError`].

mod error;
mod parse;
pub mod result;
pub mod value;

pub use error::SqlError;
pub use parse::{parse, Statement};
pub use result::{ColumnMeta, Outcome};
pub use value::{Decimal, SqlType, Value};
