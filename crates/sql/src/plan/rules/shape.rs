//! The shape of a query block as the binder builds it, which the passes find their way
//! through, and helpers over AND terms.

use crate::expr::Expr;
use crate::plan::logical::node::{LogicalPlan, SortKey};

/// A query block's parts, in the shape the binder builds (bind/select/block.rs): Limit? →
/// Sort? → Distinct? → Project → [Filter (HAVING)] → [Aggregate] → the WHERE Filter or the
/// FROM side.
pub(crate) struct Block<'a> {
    /// The Sort's keys and its `by_scan`.
    pub(crate) sort: Option<(&'a [SortKey], &'a mut Option<bool>)>,
    /// The Project's expressions and how many are visible (the rest are ORDER BY keys).
    pub(crate) outputs: &'a [Expr],
    pub(crate) visible: usize,
    /// The Aggregate, when there is one: its group keys and the aggregates' arguments.
    pub(crate) grouped: Option<Vec<&'a Expr>>,
    /// What lies under them: the WHERE Filter, the FROM side, or (after push-down) the
    /// filters and joins it placed.
    pub(crate) from: &'a mut LogicalPlan,
}

/// The parts of the block `plan` is the top of, or `None` when it is no block.
pub(crate) fn block(plan: &mut LogicalPlan) -> Option<Block<'_>> {
    let mut node = plan;
    let mut sort = None;
    loop {
        node = match node {
            LogicalPlan::Limit { input, .. } | LogicalPlan::Distinct { input, .. } => input,
            LogicalPlan::Sort {
                input,
                keys,
                by_scan,
            } => {
                sort = Some((&keys[..], by_scan));
                input
            }
            _ => break,
        };
    }
    let LogicalPlan::Project {
        input,
        exprs,
        visible,
        ..
    } = node
    else {
        return None;
    };
    let mut node: &mut LogicalPlan = input;
    let having = matches!(node, LogicalPlan::Filter { input, .. }
        if matches!(**input, LogicalPlan::Aggregate { .. }));
    if having {
        node = match node {
            LogicalPlan::Filter { input, .. } => input,
            other => other,
        };
    }
    let mut grouped = None;
    node = match node {
        LogicalPlan::Aggregate {
            input, group, aggs, ..
        } => {
            let mut read: Vec<&Expr> = group.iter().collect();
            read.extend(aggs.iter().filter_map(|a| a.arg.as_ref()));
            grouped = Some(read);
            input
        }
        other => other,
    };
    Some(Block {
        sort,
        outputs: exprs,
        visible: *visible,
        grouped,
        from: node,
    })
}

/// What a pass over one table's rows reads: a query block's FROM side (see [`block`]), or
/// the source of an UPDATE or DELETE, which the binder builds as Limit? → Sort? → the WHERE
/// Filter? → Scan of the target table (bind/dml.rs).
pub(crate) fn from_side(plan: &mut LogicalPlan) -> Option<&mut LogicalPlan> {
    let mut node = match plan {
        LogicalPlan::Update { source, .. } | LogicalPlan::Delete { source, .. } => &mut **source,
        other => return block(other).map(|b| b.from),
    };
    loop {
        node = match node {
            LogicalPlan::Limit { input, .. } | LogicalPlan::Sort { input, .. } => input,
            other => return Some(other),
        };
    }
}

/// The FROM side's leftmost table (a Scan or Derived): the block's first table.
pub(crate) fn first_table(from: &LogicalPlan) -> Option<&LogicalPlan> {
    match from {
        LogicalPlan::Filter { input, .. } => first_table(input),
        LogicalPlan::Join { left, .. } => first_table(left),
        leaf if is_leaf(leaf) => Some(leaf),
        _ => None,
    }
}

/// A table of the FROM side.
pub(crate) fn is_leaf(p: &LogicalPlan) -> bool {
    matches!(p, LogicalPlan::Scan { .. } | LogicalPlan::Derived { .. })
}

/// The AND of `terms` (`None` for none), left-associated.
pub(crate) fn and_all(terms: Vec<Expr>) -> Option<Expr> {
    terms
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

/// The top-level AND terms of `e`, owned.
pub(crate) fn terms_of(e: &Expr) -> Vec<Expr> {
    let mut v = Vec::new();
    conjuncts(e, &mut v);
    v.into_iter().cloned().collect()
}

/// Splits a condition into its top-level AND terms.
pub fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}
