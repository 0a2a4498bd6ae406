//! zipdb's SQL layer. Today: parsing (MySQL dialect, with `sqlparser`) and the errors a MySQL
//! client expects for bad or unsupported SQL. Planning and execution over the engine come next
//! (issue 5).
//!
//! `sqlparser`'s AST changes with every release, so it is pinned and does not leak out of this
//! crate: callers see [`Statement`] and [`SqlError`].

mod error;
mod parse;

pub use error::SqlError;
pub use parse::{parse, Statement};
