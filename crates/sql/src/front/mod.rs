//! Layer 4 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): the front end, from a
//! text to the parser's statements: executable comments, splitting a text into statements,
//! bounding the depth of what the parser produces, sqlparser's MySQL dialect.

pub(crate) mod depth;
pub(crate) mod parse;
pub(crate) mod split;
pub(crate) mod stack;
