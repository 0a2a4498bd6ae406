//! A query block over one table, or none, as a [`LogicalPlan`] (issue 20, D1b): Scan (or
//! OneRow) → Filter (WHERE) → Aggregate → Filter (HAVING) → Project → Distinct → Sort →
//! Limit, each node only where the query needs it; [`lower`] turns it into the `SelectPlan`
//! that runs. Joins and derived tables (CTE uses among them) stay on mod.rs's old path until
//! D1c; subqueries are compiled through `Env::compile_query`, so theirs take this path too
//! when they have its shape.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::env::{Env, FromItem};
use crate::expr::eval::mark_columns;
use crate::expr::Expr;
use crate::plan::logical::node::{Field, LogicalPlan, SortKey};
use crate::plan::lower::lower;
use crate::plan::select::SelectPlan;
use crate::types::result::{col_flags, ColumnMeta};
use crate::SqlError;

use super::from::FromTable;
use super::front::{bind_clauses, Bound};

/// Whether a query block with these FROM tables takes this path. `SELECT … FOR UPDATE`
/// without a table stays on the old one: with no Scan, the plan has no place for the lock.
pub(super) fn takes(from: &[FromTable], for_update: bool) -> bool {
    match from {
        [] => !for_update,
        [only] => only.derived.is_none(),
        _ => false,
    }
}

pub(super) fn compile_single(
    q: &ast::Query,
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
    from: Vec<FromTable>,
    for_update: bool,
) -> Result<SelectPlan, SqlError> {
    let (plan, columns, has_sub) = plan_single(q, sel, env, c, from, for_update)?;
    lower(plan, columns, has_sub)
}

/// The logical plan of a block [`takes`] accepts, with what lowering needs beside it: the
/// result's column metadata and whether a clause runs a subquery.
pub(super) fn plan_single(
    q: &ast::Query,
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
    from: Vec<FromTable>,
    for_update: bool,
) -> Result<(LogicalPlan, Arc<Vec<ColumnMeta>>, bool), SqlError> {
    let items: Vec<FromItem> = from
        .iter()
        .map(|f| FromItem {
            table: &f.table,
            alias: f.alias.as_deref(),
            offset: 0,
            merged: &f.merged,
        })
        .collect();
    let b = bind_clauses(q, sel, env, c, &from, &items)?;
    let distinct = matches!(sel.distinct, Some(ast::Distinct::Distinct));
    let has_sub = b.has_sub;
    let (plan, metas) = build(from.into_iter().next(), b, distinct, for_update)?;
    Ok((plan, Arc::new(metas), has_sub))
}

fn build(
    table: Option<FromTable>,
    b: Bound,
    distinct: bool,
    for_update: bool,
) -> Result<(LogicalPlan, Vec<ColumnMeta>), SqlError> {
    let mut plan = match table {
        None => LogicalPlan::OneRow,
        Some(f) => {
            let read = columns_read(f.table.types.len(), &b);
            let mut scan = LogicalPlan::scan(f.table, f.alias.as_deref(), read)?;
            if let LogicalPlan::Scan {
                for_update: lock, ..
            } = &mut scan
            {
                *lock = for_update;
            }
            scan
        }
    };
    if let Some(w) = b.filter {
        plan = LogicalPlan::filter(plan, w)?;
    }
    if let Some((group, aggs)) = b.group_by {
        let input = plan.schema().clone();
        let group = group
            .into_iter()
            .zip(b.group_labels)
            .map(|(e, label)| {
                let ty = e.result_type(&|i| input.fields.get(i).map(|f| f.ty));
                (e, Field::new(None, &label, ty, true))
            })
            .collect();
        let aggs = aggs
            .into_iter()
            .map(|a| {
                let name = format!("{:?}", a.func).to_lowercase();
                (a, name)
            })
            .collect();
        plan = LogicalPlan::aggregate(plan, group, aggs)?;
        if let Some(h) = b.having {
            plan = LogicalPlan::filter(plan, h)?;
        }
    }
    let input = plan.schema().clone();
    let exprs = b
        .outputs
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let field = match (b.metas.get(i), b.out_types.get(i)) {
                (Some(m), Some(&ty)) if i < b.visible => Field::new(
                    Some(m.table.as_str()).filter(|t| !t.is_empty()),
                    &m.name,
                    ty,
                    m.flags & col_flags::NOT_NULL == 0,
                ),
                // An ORDER BY key the select list lacks: typed over the row it reads.
                _ => Field::new(
                    None,
                    &format!("order key {}", i - b.visible + 1),
                    e.result_type(&|j| input.fields.get(j).map(|f| f.ty)),
                    true,
                ),
            };
            (e, field)
        })
        .collect();
    plan = LogicalPlan::project(plan, exprs, b.visible)?;
    if distinct {
        plan = LogicalPlan::distinct(plan, b.visible)?;
    }
    if !b.order_desc.is_empty() {
        let keys = b
            .order_desc
            .iter()
            .enumerate()
            .map(|(k, &desc)| SortKey {
                expr: Expr::Col(b.visible + k),
                desc,
            })
            .collect();
        plan = LogicalPlan::sort(plan, keys)?;
    }
    if b.limit.is_some() || b.offset.is_some() {
        plan = LogicalPlan::limit(plan, b.offset, b.limit)?;
    }
    Ok((plan, b.metas))
}

/// The table's columns the block reads (today's `wanted`; D2a makes it `prune_columns`):
/// those of WHERE, and of the select list and ORDER BY, or with GROUP BY of the group keys
/// and the aggregates' arguments (the select list then reads the group row).
fn columns_read(width: usize, b: &Bound) -> Vec<usize> {
    let mut wanted = vec![false; width];
    if let Some(e) = &b.filter {
        mark_columns(e, &mut wanted);
    }
    match &b.group_by {
        None => b.outputs.iter().for_each(|e| mark_columns(e, &mut wanted)),
        Some((g, aggs)) => {
            g.iter().for_each(|e| mark_columns(e, &mut wanted));
            aggs.iter()
                .filter_map(|a| a.arg.as_ref())
                .for_each(|e| mark_columns(e, &mut wanted));
        }
    }
    (0..width).filter(|&i| wanted[i]).collect()
}
