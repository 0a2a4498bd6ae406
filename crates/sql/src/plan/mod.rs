//! Layer 6 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): plans and the rules
//! that rewrite them: the plan types of SELECT, joins and DML, access paths, and the rules
//! that are already separate functions.

pub(crate) mod access;
pub(crate) mod dml;
pub(crate) mod join;
pub(crate) mod logical;
pub(crate) mod lower;
pub(crate) mod rules;
pub(crate) mod select;
