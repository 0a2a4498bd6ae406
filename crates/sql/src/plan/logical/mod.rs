//! The logical plan (§4.1 of docs/design/issue20-sql-engine.md): node types and their checked
//! constructors (node.rs), the statement root with its subqueries (root.rs), the tree
//! printer (tree.rs). Since D1b/D1c the binder builds plans for every query block that is not
//! a set operation (one table or none, joins, derived tables, CTE uses), which `plan::lower`
//! turns into a `SelectPlan`; the other nodes, the root and the printer wait for D1d (set
//! operations, subqueries), D3 (DML) and D4 (EXPLAIN FORMAT=TREE), and until then only tests
//! use them.

pub(crate) mod node;
// Only tests build a root and print it until D1d and D4.
#[allow(dead_code)]
pub(crate) mod root;
#[allow(dead_code)]
pub(crate) mod tree;

#[cfg(test)]
mod tests;
