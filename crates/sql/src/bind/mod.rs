//! Layer 7 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): from the parser's AST
//! to plans. Today: SELECT's compiler.

pub(crate) mod select;
