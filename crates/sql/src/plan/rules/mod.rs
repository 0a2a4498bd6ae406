//! The optimizer's decisions as named rewrite passes over a query block's `LogicalPlan`
//! (issue 20, D2a/D2b). Each pass decides one thing and records it in the plan (where the
//! filters sit, the columns each table reads, a Scan's access path, a Join's method, a Sort
//! the scan order satisfies), so that `plan::lower` only translates, and EXPLAIN FORMAT=TREE
//! shows what was decided. Each pass works on every block of the plan: the statement's and
//! each derived table's (a set operation's operands are compiled on their own, through
//! `pipeline::optimize` as well).

pub(crate) mod access_path;
pub(crate) mod join_method;
pub(crate) mod pipeline;
pub(crate) mod prune;
pub(crate) mod push_down;
pub(crate) mod shape;
pub(crate) mod sort;
pub(crate) mod zero_dates;

#[cfg(test)]
mod tests;
