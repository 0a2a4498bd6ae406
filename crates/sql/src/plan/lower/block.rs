//! A query block's optimized [`LogicalPlan`] translated to its [`SelectPlan`]: the shape the
//! binder builds (bind/select/block.rs), Limit? → Sort? → Distinct? → Project → [Filter
//! (HAVING)] → [Aggregate] → the FROM side (from.rs) with its Filters, or a set operation's
//! operands. A SELECT's and INSERT … SELECT's query lower through here.

use std::sync::Arc;

use crate::error::SqlError;
use crate::expr::Expr;
use crate::plan::logical::node::{BlockMeta, LogicalPlan, SetKind};
use crate::plan::select::{SelectPlan, SetOp};
use crate::types::result::ColumnMeta;

use super::from::{self, cannot};

/// A block the passes have run over (its derived tables' blocks too).
pub(super) fn lower_block(
    plan: LogicalPlan,
    columns: Arc<Vec<ColumnMeta>>,
    has_sub: bool,
) -> Result<SelectPlan, SqlError> {
    let mut node = plan;
    let (mut limit, mut offset) = (None, None);
    if let LogicalPlan::Limit {
        input,
        offset: o,
        fetch,
    } = node
    {
        (limit, offset) = (fetch, o);
        node = *input;
    }
    let mut keys = Vec::new();
    let mut ordered_scan = None;
    if let LogicalPlan::Sort {
        input,
        keys: k,
        by_scan,
    } = node
    {
        keys = k;
        ordered_scan = by_scan;
        node = *input;
    }
    let mut distinct = None;
    if let LogicalPlan::Distinct { input, width } = node {
        distinct = Some(width);
        node = *input;
    }
    let LogicalPlan::Project {
        input,
        exprs: outputs,
        visible,
        schema,
    } = node
    else {
        return Err(cannot("no Project under Limit, Sort and Distinct"));
    };
    // The old plan sorts by the outputs after the visible ones, in order.
    let hidden = keys
        .iter()
        .enumerate()
        .all(|(k, key)| matches!(key.expr, Expr::Col(c) if c == visible + k));
    if !hidden || visible + keys.len() != outputs.len() {
        return Err(cannot("the sort keys are not the Project's hidden columns"));
    }
    if distinct.is_some_and(|w| w != visible) {
        return Err(cannot("DISTINCT not on the visible columns"));
    }
    let types = schema.fields[..visible].iter().map(|f| f.ty).collect();
    let mut node = *input;
    let mut having = None;
    if let LogicalPlan::Filter { input, predicate } = node {
        if matches!(*input, LogicalPlan::Aggregate { .. }) {
            having = Some(predicate);
            node = *input;
        } else {
            node = LogicalPlan::Filter { input, predicate };
        }
    }
    let mut group_by = None;
    if let LogicalPlan::Aggregate {
        input, group, aggs, ..
    } = node
    {
        group_by = Some((group, aggs));
        node = *input;
    }
    // A set operation's operands are the rows of a plan without a table.
    let (node, union) = match node {
        LogicalPlan::SetOp { .. } | LogicalPlan::Compiled { .. } => {
            let mut parts = Vec::new();
            set_operands(node, &mut parts)?;
            (LogicalPlan::OneRow, parts)
        }
        other => (other, Vec::new()),
    };
    let from = from::lower_from(node, &lower_derived)?;
    let order: Vec<bool> = keys.iter().map(|k| k.desc).collect();
    Ok(SelectPlan {
        table: from.table,
        access: from.access,
        filter: from.filter,
        wanted: from.wanted,
        group_by,
        having,
        outputs,
        visible,
        order,
        distinct: distinct.is_some(),
        limit,
        offset,
        ordered_scan,
        columns,
        for_update: from.for_update,
        joins: from.joins,
        union,
        derived: from.derived,
        has_sub,
        types,
    })
}

/// A left-deep chain of SetOps over Compiled operands, left to right, each with the
/// operation that combines it with the rows before it (the first one's is the old plan's
/// placeholder, UNION ALL).
fn set_operands(node: LogicalPlan, out: &mut Vec<(SelectPlan, SetOp)>) -> Result<(), SqlError> {
    match node {
        LogicalPlan::Compiled { plan, .. } if out.is_empty() => {
            out.push((*plan, SetOp::Union { distinct: false }));
        }
        LogicalPlan::SetOp {
            left,
            right,
            kind,
            all,
            ..
        } => {
            set_operands(*left, out)?;
            let LogicalPlan::Compiled { plan, .. } = *right else {
                return Err(cannot("a set operand is not compiled"));
            };
            let distinct = !all;
            let op = match kind {
                SetKind::Union => SetOp::Union { distinct },
                SetKind::Intersect => SetOp::Intersect { distinct },
                SetKind::Except => SetOp::Except { distinct },
            };
            out.push((*plan, op));
        }
        _ => return Err(cannot("a set operation's first operand is not compiled")),
    }
    Ok(())
}

/// A derived table's query: a block lowered as the statement's is, or a set operation
/// lowered on its own (a Compiled node).
fn lower_derived(input: LogicalPlan, meta: Option<BlockMeta>) -> Result<SelectPlan, SqlError> {
    match (input, meta) {
        (LogicalPlan::Compiled { plan, .. }, _) => Ok(*plan),
        (block, Some(m)) => lower_block(block, m.columns, m.has_sub),
        (_, None) => Err(cannot("a derived table's block without its metadata")),
    }
}
