//! The rows a statement's locking reads took ([`lock_rows`](crate::exec::lock::lock_rows)),
//! as the operator trees find them: by plan.

use std::cell::RefCell;

use crate::exec::op::Row;
use crate::plan::select::SelectPlan;

/// The rows locked for the plans of one statement that lock, by plan.
#[derive(Default)]
pub(crate) struct Locked {
    plans: Vec<LockedPlan>,
}

/// What a locking plan's tree takes from the locking pass instead of computing it again (its
/// LIMIT and constant WHERE terms were evaluated there, and must be evaluated once).
pub(crate) struct LockedPlan {
    /// Identity only (never dereferenced): the plan these rows are for.
    plan: *const SelectPlan,
    pub(crate) limit: Option<u64>,
    pub(crate) offset: u64,
    pub(crate) impossible: bool,
    /// Whether the rows already passed the plan's WHERE (the early-stop case).
    pub(crate) filtered: bool,
    rows: RefCell<Vec<Row>>,
}

impl Locked {
    /// Records `p`'s locked rows: its LIMIT and OFFSET, whether its constant WHERE terms
    /// ruled every row out, whether `rows` already passed its WHERE.
    pub(crate) fn push(
        &mut self,
        p: &SelectPlan,
        (limit, offset, impossible): (Option<u64>, u64, bool),
        filtered: bool,
        rows: Vec<Row>,
    ) {
        self.plans.push(LockedPlan {
            plan: p,
            limit,
            offset,
            impossible,
            filtered,
            rows: RefCell::new(rows),
        });
    }

    /// The locked rows of `p`, if it locks.
    pub(crate) fn of(&self, p: &SelectPlan) -> Option<&LockedPlan> {
        self.plans.iter().find(|l| std::ptr::eq(l.plan, p))
    }
}

impl LockedPlan {
    /// The rows, handed over once (a plan's tree is built once per statement).
    pub(crate) fn take(&self) -> Vec<Row> {
        std::mem::take(&mut *self.rows.borrow_mut())
    }
}

/// Whether `p`, a derived table's query in it or a set operand locks rows. Recursion as deep
/// as the query's nesting of derived tables and set operations, which the parser bounds
/// (`SELECT_NESTING_MAX`).
pub(crate) fn locks(p: &SelectPlan) -> bool {
    p.for_update || p.derived.as_deref().is_some_and(locks) || p.union.iter().any(|(q, _)| locks(q))
}
