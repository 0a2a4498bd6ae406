//! The passes in their order, over every block of a plan.

use crate::error::SqlError;
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::access_path::choose_access_paths;
use crate::plan::rules::join_method::choose_join_methods;
use crate::plan::rules::prune::prune_columns;
use crate::plan::rules::push_down::push_down_filters;
use crate::plan::rules::shape::block;
use crate::plan::rules::sort::eliminate_sort;
use crate::plan::rules::zero_dates::zero_dates_are_null;

/// The passes, in this order (each needs what the ones before it decided):
/// 1. [`zero_dates_are_null`]: a WHERE over one table, which it recognizes as the
///    Filter directly over the block's only table: after push-down the first table of a join
///    has such a Filter as well, where the rewrite must not apply.
/// 2. [`prune_columns`]: the columns the block's expressions read, before the join
///    methods move ON terms into the methods (where they read a table's own row).
/// 3. [`push_down_filters`]: the WHERE terms and constant ON terms to the first
///    table, an inner join's ON or above a LEFT JOIN.
/// 4. [`choose_access_paths`]: from the terms where push-down left them.
/// 5. [`eliminate_sort`]: needs the first table's access path.
/// 6. [`choose_join_methods`]: needs each joined table's access path.
pub(crate) fn optimize(mut plan: LogicalPlan) -> Result<LogicalPlan, SqlError> {
    #[cfg(test)]
    RUNS.with(|r| r.set(r.get() + 1));
    for_each_block(&mut plan, &mut |b| {
        zero_dates_are_null(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut |b| {
        prune_columns(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut push_down_filters)?;
    for_each_block(&mut plan, &mut |b| {
        choose_access_paths(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut |b| {
        eliminate_sort(b);
        Ok(())
    })?;
    for_each_block(&mut plan, &mut |b| {
        choose_join_methods(b);
        Ok(())
    })?;
    Ok(plan)
}

// How many times `optimize` ran on this thread: tests check that a statement's plan is
// optimized once (EXPLAIN FORMAT=TREE prints the plan lowering translates, not a copy
// optimized again).
#[cfg(test)]
thread_local! {
    pub(crate) static RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

type BlockPass<'a> = dyn FnMut(&mut LogicalPlan) -> Result<(), SqlError> + 'a;

/// Calls `f` on each derived table's block below `plan` (innermost first), then on `plan`.
/// An INSERT's blocks are its source's: INSERT … SELECT's query is optimized as a SELECT
/// (INSERT … VALUES has none, and its rows are not visited). The depth is the query's
/// nesting, which the parser bounds.
pub(crate) fn for_each_block(plan: &mut LogicalPlan, f: &mut BlockPass) -> Result<(), SqlError> {
    if let LogicalPlan::Insert { source, .. } = plan {
        return match **source {
            LogicalPlan::Values { .. } | LogicalPlan::Compiled { .. } => Ok(()),
            _ => for_each_block(source, f),
        };
    }
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
