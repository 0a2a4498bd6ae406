//! A query block as a [`LogicalPlan`] (issue 20, D1b, D1c): its FROM side (OneRow, a Scan
//! or Derived, or a left-deep tree of Joins over them, whose row is left ++ right as the old
//! joined row) → Filter (WHERE) → Aggregate → Filter (HAVING) → Project → Distinct → Sort →
//! Limit, each node only where the query needs it; [`lower`] turns it into the `SelectPlan`
//! that runs. RIGHT JOIN arrives as LEFT JOIN with the tables swapped and USING as ON
//! (from.rs). A derived table's or CTE's query block binds to a plan of its own under the
//! Derived (a set operation is compiled on its own and held as a Compiled node);
//! subqueries are compiled through `Env::compile_query`, so their blocks take this path as
//! well. Set operations are union.rs's.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::env::{Env, FromItem};
use crate::expr::Expr;
use crate::plan::logical::node::{Field, JoinKind, LogicalPlan, SortKey};
use crate::plan::lower::lower;
use crate::plan::select::SelectPlan;
use crate::types::result::{col_flags, ColumnMeta};
use crate::SqlError;

use super::from::{FromTable, Query};
use super::front::{bind_clauses, Bound};

/// Whether the block's Scans lock the rows they read. `SELECT … FOR UPDATE` without a
/// table, or over derived tables only, locks nothing: there is no row of a table to lock (a
/// derived table's rows are computed, and its query reads without locks, as before D1e).
/// So the lock is dropped there, and with it the refusal of subqueries under FOR UPDATE,
/// which exists for the locking scan alone.
pub(super) fn lock(from: &[FromTable], for_update: bool) -> bool {
    for_update && from.iter().any(|f| f.derived.is_none())
}

pub(super) fn compile_block(
    q: &ast::Query,
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
    from: Vec<FromTable>,
    for_update: bool,
) -> Result<SelectPlan, SqlError> {
    let (plan, columns, has_sub) = plan_block(q, sel, env, c, from, for_update)?;
    lower(plan, columns, has_sub)
}

/// The logical plan of a query block, with what lowering needs beside it: the
/// result's column metadata and whether a clause runs a subquery.
pub(super) fn plan_block(
    q: &ast::Query,
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
    from: Vec<FromTable>,
    for_update: bool,
) -> Result<(LogicalPlan, Arc<Vec<ColumnMeta>>, bool), SqlError> {
    // The FROM items borrow the tables: offsets in the joined row, in join order.
    let mut width = 0;
    let items: Vec<FromItem> = from
        .iter()
        .map(|f| {
            let it = FromItem {
                table: &f.table,
                alias: f.alias.as_deref(),
                offset: width,
                merged: &f.merged,
            };
            width += f.table.types.len();
            it
        })
        .collect();
    let b = bind_clauses(q, sel, env, c, &from, &items)?;
    drop(items);
    let distinct = matches!(sel.distinct, Some(ast::Distinct::Distinct));
    let has_sub = b.has_sub;
    let (plan, metas) = build(from, b, distinct, for_update)?;
    Ok((plan, Arc::new(metas), has_sub))
}

/// The FROM side: each table a Scan (or a Derived over its query's plan), joined left-deep
/// in FROM order with its ON; the joined row is the tables' rows one after another.
/// Every Scan and Derived reads all its columns until `rules::prune_columns` decides.
fn from_side(
    from: Vec<FromTable>,
    ons: &mut [Option<Expr>],
    for_update: bool,
) -> Result<LogicalPlan, SqlError> {
    let mut plan: Option<LogicalPlan> = None;
    for (k, f) in from.into_iter().enumerate() {
        let read: Vec<usize> = (0..f.table.types.len()).collect();
        let leaf = match f.derived {
            Some(Query::Lowered(p)) => {
                LogicalPlan::derived(LogicalPlan::compiled(*p), f.table, read, None)?
            }
            Some(Query::New(p, meta)) => LogicalPlan::derived(p, f.table, read, Some(meta))?,
            None => {
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
        plan = Some(match plan {
            None => leaf,
            Some(l) => {
                let kind = if f.left {
                    JoinKind::Left
                } else {
                    JoinKind::Inner
                };
                LogicalPlan::join(l, leaf, kind, ons[k].take())?
            }
        });
    }
    Ok(plan.unwrap_or(LogicalPlan::OneRow))
}

fn build(
    from: Vec<FromTable>,
    mut b: Bound,
    distinct: bool,
    for_update: bool,
) -> Result<(LogicalPlan, Vec<ColumnMeta>), SqlError> {
    let mut plan = from_side(from, &mut b.ons, for_update)?;
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
