//! `eliminate_sort`: whether the scan order already is the ORDER BY's.

use crate::expr::Expr;
use crate::plan::access::Access;
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::shape::{block, first_table};

/// Marks a block's Sort as satisfied by the scan (`by_scan`) when the rows already come in
/// its order: a full or primary-key scan yields them in primary-key order (forward or
/// reversed), and joins keep the order of the first table's rows. So: the ORDER BY keys are
/// a prefix of the first table's primary key, all in one direction, and the key is numeric
/// (a text key's order is its collation's, which need not be the sort's). Not under GROUP BY
/// (the groups come out in their own order), not through a secondary index (not chosen for
/// order), not over a derived or information_schema table.
pub(crate) fn eliminate_sort(plan: &mut LogicalPlan) {
    let Some(b) = block(plan) else {
        return;
    };
    let Some((keys, by_scan)) = b.sort else {
        return;
    };
    if b.grouped.is_some() {
        return;
    }
    let Some(LogicalPlan::Scan { table, access, .. }) = first_table(b.from) else {
        return;
    };
    if table.virt.is_some() || !matches!(access, Access::Full | Access::Primary(_)) {
        return;
    }
    // The binder's sort keys are the Project's hidden columns, in order.
    let hidden = &b.outputs[b.visible..];
    let dir = keys[0].desc;
    let same_dir = keys.iter().all(|k| k.desc == dir);
    let on_pk = hidden
        .iter()
        .enumerate()
        .all(|(i, e)| matches!(e, Expr::Col(c) if table.def.pk.get(i) == Some(c)));
    let numeric_pk = table.def.pk.iter().all(|&c| !table.types[c].is_text());
    if same_dir && on_pk && numeric_pk {
        *by_scan = Some(dir);
    }
}
