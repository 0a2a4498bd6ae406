//! The logical plan (§4.1 of docs/design/issue20-sql-engine.md): node types and their checked
//! constructors (node.rs), the statement root with its subqueries (root.rs), the tree
//! printer (tree.rs). Nothing here is executed yet: D1b's binder builds these plans and
//! lowers them to `SelectPlan`.

pub(crate) mod node;
pub(crate) mod root;
pub(crate) mod tree;

#[cfg(test)]
mod tests;
