//! The optimizer's decisions as named rewrite passes over a query block's [`LogicalPlan`]
//! (issue 20, D2a/D2b). Each pass decides one thing and records it in the plan (where the
//! filters sit, the columns each table reads, a Scan's access path, a Join's method, a Sort
//! the scan order satisfies), so that `plan::lower` only translates, and EXPLAIN FORMAT=TREE
//! shows what was decided. Each pass works on every block of the plan: the statement's and
//! each derived table's (a set operation's operands are compiled on their own, through
//! [`optimize`] as well).

use crate::error::SqlError;
use crate::expr::Expr;
use crate::plan::logical::node::{LogicalPlan, SortKey};

pub(crate) mod access_path;
pub(crate) mod join_method;
pub(crate) mod prune;
pub(crate) mod push_down;
pub(crate) mod sort;
pub(crate) mod zero_dates;

#[cfg(test)]
mod tests;

/// The passes, in this order (each needs what the ones before it decided):
/// 1. [`zero_dates::zero_dates_are_null`]: a WHERE over one table, which it recognizes as the
///    Filter directly over the block's only table: after push-down the first table of a join
///    has such a Filter as well, where the rewrite must not apply.
/// 2. [`prune::prune_columns`]: the columns the block's expressions read, before the join
///    methods move ON terms into the methods (where they read a table's own row).
/// 3. [`push_down::push_down_filters`]: the WHERE terms and constant ON terms to the first
///    table, an inner join's ON or above a LEFT JOIN.
/// 4. [`access_path::choose_access_paths`]: from the terms where push-down left them.
/// 5. [`sort::eliminate_sort`]: needs the first table's access path.
/// 6. [`join_method::choose_join_methods`]: needs each joined table's access path.
pub(crate) fn optimize(mut plan: LogicalPlan) -> Result<LogicalPlan, SqlError> {
    for_each_block(&mut plan, &mut |b| {
        zero_dates::zero_dates_are_null(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut |b| {
        prune::prune_columns(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut push_down::push_down_filters)?;
    for_each_block(&mut plan, &mut |b| {
        access_path::choose_access_paths(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut |b| {
        sort::eliminate_sort(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut |b| {
        join_method::choose_join_methods(b);
        Ok(())
    })?;
    Ok(plan)
}

type BlockPass<'a> = dyn FnMut(&mut LogicalPlan) -> Result<(), SqlError> + 'a;

/// Calls `f` on each derived table's block below `plan` (innermost first), then on `plan`.
/// The depth is the query's nesting, which the parser bounds.
pub(crate) fn for_each_block(plan: &mut LogicalPlan, f: &mut BlockPass) -> Result<(), SqlError> {
    if let Some(b) = block(plan) {
        for_each_derived(b.from, f)?;
    }
    f(plan)
}

fn for_each_derived(node: &mut LogicalPlan, f: &mut BlockPass) -> Result<(), SqlError> {
    match node {
        LogicalPlan::Derived { input, .. } => for_each_block(input, f),
        LogicalPlan::Filter { input, .. } => for_each_derived(input, f),
        LogicalPlan::Join { left, right, .. } => {
            for_each_derived(left, f)?;
            for_each_derived(right, f)
        }
        _ => Ok(()),
    }
}

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
    access_path::conjuncts(e, &mut v);
    v.into_iter().cloned().collect()
}
