//! From a query block's [`LogicalPlan`] to the [`SelectPlan`] that runs it (issue 20, D1b):
//! the physical decisions that `compile_select` made at its end are made here, over the plan:
//! the access path (`choose_access`), the columns the scan fetches, and whether the scan's
//! order already is the ORDER BY's. Lowers the shape the binder builds for one table or none
//! (single.rs in bind/select): Limit? → Sort? → Distinct? → Project → [Filter (HAVING)] →
//! [Aggregate] → Filter? → Scan | OneRow. Any other shape is a binder bug: an internal error.

use std::sync::Arc;

use crate::error::SqlError;
use crate::expr::Expr;
use crate::plan::access::Access;
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::access_path::choose_access;
use crate::plan::select::SelectPlan;
use crate::types::result::ColumnMeta;

fn cannot(detail: &str) -> SqlError {
    SqlError::internal(format!("cannot lower this logical plan: {detail}"))
}

/// `columns`: the result's metadata (the wire's column definitions, which the plan's fields
/// do not carry); `has_sub`: some expression of the block runs a subquery.
pub(crate) fn lower(
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
    if let LogicalPlan::Sort { input, keys: k } = node {
        keys = k;
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
    let mut filter = None;
    if let LogicalPlan::Filter { input, predicate } = node {
        filter = Some(predicate);
        node = *input;
    }
    let (table, wanted, for_update) = match node {
        LogicalPlan::OneRow => (None, Vec::new(), false),
        LogicalPlan::Scan {
            table,
            columns: read,
            for_update,
            ..
        } => {
            let mut wanted = vec![false; table.types.len()];
            read.iter().for_each(|&c| wanted[c] = true);
            (Some(table), wanted, for_update)
        }
        _ => return Err(cannot("the block does not read one table or none")),
    };
    // The Scan's `access` is `Full` until D2b's `choose_access_paths`: chosen here for now.
    let access = match &table {
        None => Access::None,
        Some(t) if t.virt.is_some() => Access::Full,
        Some(t) => choose_access(t, filter.as_ref()),
    };
    let order: Vec<bool> = keys.iter().map(|k| k.desc).collect();
    // Rows come out of a primary-key scan (or a full scan) in key order: an ORDER BY on a
    // prefix of the key, all in one direction, needs no sort (D2b's `eliminate_sort`).
    let ordered_scan = match (&table, &access, group_by.is_some()) {
        (Some(t), Access::Full | Access::Primary(_), false)
            if !order.is_empty() && t.virt.is_none() =>
        {
            let same_dir = order.iter().all(|d| *d == order[0]);
            let on_pk = outputs[visible..]
                .iter()
                .enumerate()
                .all(|(i, e)| matches!(e, Expr::Col(c) if t.def.pk.get(i) == Some(c)));
            let numeric_pk = t.def.pk.iter().all(|&c| !t.types[c].is_text());
            (same_dir && on_pk && numeric_pk).then_some(order[0])
        }
        _ => None,
    };
    Ok(SelectPlan {
        table,
        access,
        filter,
        wanted,
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
        for_update,
        joins: Vec::new(),
        union: Vec::new(),
        derived: None,
        has_sub,
        types,
    })
}
