//! Layer 4 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): the front end, from a
//! text to zipdb's typed [`Statement`]: executable comments and splitting a text into
//! statements on sqlparser's tokenizer (lex.rs), the grammars of the MySQL statements
//! sqlparser lacks (SHOW, accounts, dump compatibility, OPTIMIZE, LOAD DATA) on its `Parser`,
//! bounding the depth of what the parser produces, sqlparser's MySQL dialect.

pub(crate) mod account;
pub(crate) mod compat;
pub(crate) mod depth;
pub(crate) mod grammar;
pub(crate) mod lex;
pub(crate) mod load;
pub(crate) mod optimize;
pub(crate) mod parse;
pub(crate) mod show;
pub(crate) mod stack;
pub(crate) mod statement;
pub(crate) mod values;

pub(crate) use compat::Compat;
pub(crate) use statement::{parse_piece, Statement, Txn};
