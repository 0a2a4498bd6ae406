//! `prune_columns`: which columns each table of a block reads.

use crate::expr::eval::mark_columns;
use crate::expr::Expr;
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::shape::block;

/// Decides the columns each Scan and Derived of a block reads (their `columns`): those its
/// WHERE terms, ON clauses and the select list and ORDER BY keys read, or under GROUP BY the
/// group keys and the aggregates' arguments (the select list then reads the group row). The
/// others are not decoded, and a derived table's are not copied. Terms may sit anywhere on
/// the FROM side (before or after push-down): rows are positional, so a term reads the same
/// columns wherever it is; it must run before the join methods move terms into themselves.
pub(crate) fn prune_columns(plan: &mut LogicalPlan) {
    let Some(b) = block(plan) else {
        return;
    };
    let mut wanted = vec![false; b.from.schema().width()];
    match &b.grouped {
        None => b.outputs.iter().for_each(|e| mark_columns(e, &mut wanted)),
        Some(read) => read.iter().for_each(|e| mark_columns(e, &mut wanted)),
    }
    mark_from(b.from, &mut wanted);
    let mut offset = 0;
    set_columns(b.from, &wanted, &mut offset);
}

/// Marks what the FROM side's filters and ON clauses read.
fn mark_from(node: &LogicalPlan, wanted: &mut [bool]) {
    match node {
        LogicalPlan::Filter { input, predicate } => {
            mark_columns(predicate, wanted);
            mark_from(input, wanted);
        }
        LogicalPlan::Join {
            left, right, on, ..
        } => {
            on.iter().for_each(|e: &Expr| mark_columns(e, wanted));
            mark_from(left, wanted);
            mark_from(right, wanted);
        }
        _ => {}
    }
}

/// Gives each table, left to right, the wanted columns of its part of the row.
fn set_columns(node: &mut LogicalPlan, wanted: &[bool], offset: &mut usize) {
    match node {
        LogicalPlan::Filter { input, .. } => set_columns(input, wanted, offset),
        LogicalPlan::Join { left, right, .. } => {
            set_columns(left, wanted, offset);
            set_columns(right, wanted, offset);
        }
        LogicalPlan::Scan {
            columns, schema, ..
        }
        | LogicalPlan::Derived {
            columns, schema, ..
        } => {
            let w = schema.width();
            *columns = (0..w).filter(|&i| wanted[*offset + i]).collect();
            *offset += w;
        }
        _ => {}
    }
}
