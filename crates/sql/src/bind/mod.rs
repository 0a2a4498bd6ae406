//! Layer 7 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): from the parser's AST
//! to plans: the environment ([`env`]), the scopes that resolve names ([`scope`],
//! [`agg_scope`]), SELECT ([`select`], its result columns' labels in [`labels`]) and
//! INSERT/UPDATE/DELETE ([`dml`]).

pub(crate) mod agg_scope;
pub(crate) mod compile;
pub(crate) mod dml;
pub(crate) mod env;
pub(crate) mod labels;
pub(crate) mod scope;
pub(crate) mod select;
