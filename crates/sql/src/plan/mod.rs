//! Layer 6 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): plans and the rules
//! that rewrite them. Today only the rules that are already separate functions;
//! the plan types follow (B6).

pub(crate) mod rules;
