//! The logical plan (§4.1 of docs/design/issue20-sql-engine.md): node types and their checked
//! constructors (node.rs), the statement root with its subqueries (root.rs), the tree
//! printer (tree.rs). The binder builds a plan for every SELECT, INSERT, UPDATE and DELETE
//! (D1b–D1d, D3), which `plan::lower` turns into the executor's plans; EXPLAIN FORMAT=TREE
//! (D4) prints a root.

pub(crate) mod node;
pub(crate) mod root;
pub(crate) mod tree;

#[cfg(test)]
mod tests;
