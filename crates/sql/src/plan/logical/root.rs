//! A statement's logical plan with the table of its subqueries, which expressions name by
//! [`SubqueryId`] (B8's numbering: `Compiler::add_subquery` gives ids in compile order, so a
//! nested subquery, compiled first, has a lower id than the one that holds it).

use crate::error::SqlError;
use crate::expr::{Expr, SubqueryId};
use crate::plan::logical::node::LogicalPlan;

#[derive(Debug, Clone)]
pub struct LogicalRoot {
    pub plan: LogicalPlan,
    /// Indexed by `SubqueryId`, nested subqueries included.
    pub subqueries: Vec<LogicalPlan>,
}

impl LogicalRoot {
    /// Refuses a plan that names a subquery the table lacks, or a subquery whose plan names
    /// itself or one compiled after it (which would make the table cyclic).
    pub fn new(plan: LogicalPlan, subqueries: Vec<LogicalPlan>) -> Result<LogicalRoot, SqlError> {
        check_ids(&plan, subqueries.len(), "the statement")?;
        for (i, s) in subqueries.iter().enumerate() {
            check_ids(s, i, &format!("subquery #{i}"))?;
        }
        Ok(LogicalRoot { plan, subqueries })
    }

    /// Calls `f` on every node of the statement: the plan's, then each subquery's in id order
    /// (what a check of the tables a statement reads or writes has to see).
    #[allow(dead_code)] // for the privilege checks of a later issue; tests use it
    pub fn walk(&self, f: &mut dyn FnMut(&LogicalPlan)) {
        self.plan.walk(f);
        for s in &self.subqueries {
            s.walk(f);
        }
    }
}

/// The subqueries `e` names directly (not through their plans), in order.
pub(crate) fn subqueries_of(e: &Expr, out: &mut Vec<SubqueryId>) {
    e.visit(&mut |x| {
        if let Expr::Subquery(sub, _) = x {
            out.push(sub.id);
        }
    });
}

fn check_ids(plan: &LogicalPlan, below: usize, owner: &str) -> Result<(), SqlError> {
    let mut ids = Vec::new();
    plan.walk(&mut |p| {
        p.exprs()
            .into_iter()
            .for_each(|e| subqueries_of(e, &mut ids))
    });
    match ids.into_iter().find(|id| id.0 >= below) {
        Some(id) => Err(SqlError::internal(format!(
            "invalid logical plan: {owner} names subquery #{} of {below} it may name",
            id.0
        ))),
        None => Ok(()),
    }
}
