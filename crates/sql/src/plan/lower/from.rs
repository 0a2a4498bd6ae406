//! The FROM side of a query block's lowering (issue 20, D1c): a left-deep tree of Joins over
//! Scans and Deriveds becomes the first table's scan and one `JoinStep` per further table.
//! This is the physical half of `compile_select`'s old tail, over the plan's nodes: the
//! WHERE split over the tables and the constant ON terms (D2a's `push_down_filters`), the
//! join methods (D2b's `choose_join_methods`), the access paths and the scan order (D2b's
//! `choose_access_paths`, `eliminate_sort`). Until those passes exist it decides exactly as
//! the old code did (the shadow check of D1b–D1d compared the two until D1e deleted it).

use std::sync::Arc;

use crate::catalog::Table;
use crate::error::SqlError;
use crate::expr::eval::{columns_of, shift_columns};
use crate::expr::{Cmp, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::join::KeyClass;
use crate::plan::logical::node::{BlockMeta, JoinKind, LogicalPlan};
use crate::plan::rules::access_path::{choose_access, choose_access_at, conjuncts};
use crate::plan::select::{JoinMethod, JoinStep, SelectPlan};
use crate::types::sqltype::SqlType;

/// A plan the binder cannot have built: an internal error.
pub(super) fn cannot(detail: &str) -> SqlError {
    SqlError::internal(format!("cannot lower this logical plan: {detail}"))
}

/// One table of the block, in join order.
pub(super) struct Leaf {
    table: Arc<Table>,
    /// A derived table's (or CTE use's) query, lowered.
    derived: Option<Box<SelectPlan>>,
    /// The table's columns the block reads.
    read: Vec<usize>,
    /// Joined to the tables before it by LEFT JOIN.
    left: bool,
    /// Its join's ON, over the joined row up to this table.
    on: Option<Expr>,
    for_update: bool,
}

/// The tables of a block's FROM side, left to right; none for OneRow. `derived` lowers a
/// derived table's query.
pub(super) fn leaves(
    node: LogicalPlan,
    derived: &dyn Fn(LogicalPlan, Option<BlockMeta>) -> Result<SelectPlan, SqlError>,
) -> Result<Vec<Leaf>, SqlError> {
    let mut out = Vec::new();
    if !matches!(node, LogicalPlan::OneRow) {
        collect(node, derived, &mut out)?;
    }
    Ok(out)
}

fn collect(
    node: LogicalPlan,
    derived: &dyn Fn(LogicalPlan, Option<BlockMeta>) -> Result<SelectPlan, SqlError>,
    out: &mut Vec<Leaf>,
) -> Result<(), SqlError> {
    match node {
        LogicalPlan::Scan {
            table,
            columns,
            for_update,
            ..
        } => out.push(Leaf {
            table,
            derived: None,
            read: columns,
            left: false,
            on: None,
            for_update,
        }),
        LogicalPlan::Derived {
            input,
            table,
            columns,
            meta,
            ..
        } => out.push(Leaf {
            table,
            derived: Some(Box::new(derived(*input, meta)?)),
            read: columns,
            left: false,
            on: None,
            for_update: false,
        }),
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            ..
        } => {
            collect(*left, derived, out)?;
            let before = out.len();
            collect(*right, derived, out)?;
            // The old plan joins one table at a time: the right input is one table.
            let (true, Some(last)) = (out.len() == before + 1, out.last_mut()) else {
                return Err(cannot("a join's right input is not one table"));
            };
            last.left = kind == JoinKind::Left;
            last.on = on;
        }
        _ => return Err(cannot("the FROM side is not Joins over Scans and Deriveds")),
    }
    Ok(())
}

/// What the FROM side gives the `SelectPlan`.
pub(super) struct Lowered {
    pub(super) table: Option<Arc<Table>>,
    pub(super) access: Access,
    /// The WHERE terms over the first table (all of WHERE for one table).
    pub(super) filter: Option<Expr>,
    pub(super) wanted: Vec<bool>,
    pub(super) joins: Vec<JoinStep>,
    pub(super) derived: Option<Box<SelectPlan>>,
    pub(super) ordered_scan: Option<bool>,
    pub(super) for_update: bool,
}

/// `filter`: WHERE over the joined row; `outputs`/`visible`/`order`: the Project's columns
/// and the Sort's directions (the hidden keys are the ORDER BY's); `grouped`: an Aggregate
/// sits above (no sort elimination then).
pub(super) fn lower_from(
    leaves: Vec<Leaf>,
    filter: Option<Expr>,
    grouped: bool,
    outputs: &[Expr],
    visible: usize,
    order: &[bool],
) -> Result<Lowered, SqlError> {
    let mut offsets = Vec::with_capacity(leaves.len());
    let mut width = 0;
    for l in &leaves {
        offsets.push(width);
        width += l.table.types.len();
    }
    let types: Vec<SqlType> = leaves
        .iter()
        .flat_map(|l| l.table.types.iter().copied())
        .collect();
    let for_update = leaves.iter().any(|l| l.for_update);
    let mut wanted = vec![false; width];
    for (l, &off) in leaves.iter().zip(&offsets) {
        l.read.iter().for_each(|&c| wanted[off + c] = true);
    }
    let n = leaves.len();
    let mut lefts = Vec::with_capacity(n);
    let mut ons = Vec::with_capacity(n);
    let mut tables = Vec::with_capacity(n);
    let mut derived = Vec::with_capacity(n);
    for l in leaves {
        lefts.push(l.left);
        ons.push(l.on);
        tables.push(l.table);
        derived.push(l.derived);
    }
    // WHERE terms go to the first table or to the join step of the last table they read.
    let table_of = |col: usize| offsets.iter().rposition(|&o| o <= col).unwrap_or(0);
    let mut base_terms: Vec<Expr> = Vec::new();
    let mut step_terms: Vec<Vec<Expr>> = vec![Vec::new(); n];
    if let Some(f) = &filter {
        let mut terms = Vec::new();
        conjuncts(f, &mut terms);
        for x in terms {
            let last = columns_of(x, width).last().map_or(0, |&col| table_of(col));
            if last == 0 {
                base_terms.push(x.clone());
            } else {
                step_terms[last].push(x.clone());
            }
        }
    }
    // An inner join's ON terms that read no row belong to the whole query, like WHERE terms:
    // the first table's filter decides them once before reading (see `SelectPlan::run`).
    for k in 1..n {
        if lefts[k] {
            continue;
        }
        if let Some(on) = ons[k].take() {
            let mut v = Vec::new();
            conjuncts(&on, &mut v);
            let (fixed, rest): (Vec<&Expr>, Vec<&Expr>) =
                v.into_iter().partition(|x| x.row_independent());
            base_terms.extend(fixed.into_iter().cloned());
            ons[k] = and_all(rest.into_iter().cloned().collect());
        }
    }
    let base_filter = if n <= 1 { filter } else { and_all(base_terms) };
    let mut joins = Vec::new();
    for k in 1..n {
        let table = &tables[k];
        let offset = offsets[k];
        let left = lefts[k];
        let mut on_terms: Vec<Expr> = Vec::new();
        if let Some(on) = &ons[k] {
            let mut v = Vec::new();
            conjuncts(on, &mut v);
            on_terms.extend(v.into_iter().cloned());
        }
        let mut after_terms = std::mem::take(&mut step_terms[k]);
        if !left {
            on_terms.append(&mut after_terms);
        }
        let w = table.types.len();
        // Terms with subqueries stay in the match condition: their outer references are
        // positions in the joined row, which moving a term to the table's own row would break.
        let local = |x: &Expr| {
            !x.has_subquery()
                && columns_of(x, width)
                    .iter()
                    .all(|&col| col >= offset && col < offset + w)
        };
        let known =
            |x: &Expr| !x.has_subquery() && columns_of(x, width).iter().all(|&col| col < offset);
        let refs: Vec<&Expr> = on_terms.iter().collect();
        // An information_schema or derived table has no trees to look up in: hash or loop
        // over its rows.
        let access = if table.virt.is_some() || derived[k].is_some() {
            Access::Full
        } else {
            choose_access_at(table, &refs, offset, &known)
        };
        let method = if reads_outer_row(&access, width) {
            JoinMethod::Lookup(access)
        } else {
            build_method(access, &mut on_terms, &local, &known, &types, offset, width)
        };
        joins.push(JoinStep {
            derived: derived[k].take(),
            table: table.clone(),
            offset,
            left,
            on: and_all(on_terms),
            after: and_all(after_terms),
            wanted: wanted[offset..offset + w].to_vec(),
            method,
        });
    }
    let base_derived = derived.first_mut().and_then(Option::take);
    let t = tables.into_iter().next();
    let access = match &t {
        None => Access::None,
        Some(t) if t.virt.is_some() || base_derived.is_some() => Access::Full,
        Some(t) => choose_access(t, base_filter.as_ref()),
    };
    // Rows come out of a primary-key scan (or a full scan) in key order, and joins keep the
    // order of the first table's rows: an ORDER BY on a prefix of its key, all in one
    // direction, needs no sort (D2b's `eliminate_sort`).
    let ordered_scan = match (&t, &access, grouped) {
        (Some(t), Access::Full | Access::Primary(_), false)
            if !order.is_empty() && t.virt.is_none() && base_derived.is_none() =>
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
    wanted.truncate(t.as_ref().map_or(0, |t| t.types.len()));
    Ok(Lowered {
        table: t,
        access,
        filter: base_filter,
        wanted,
        joins,
        derived: base_derived,
        ordered_scan,
        for_update,
    })
}

/// Key bounds that read an earlier table must be looked up again per outer row. Bounds that
/// read none (`b.id <= 2000`) select the same rows for every outer row: those rows are read
/// once, through the bounds, and hashed or looped over.
fn reads_outer_row(access: &Access, width: usize) -> bool {
    match access {
        Access::Primary(b) | Access::Index(_, b) => b.iter().any(|x| {
            let mut cols = false;
            let mut see = |e: &Expr| cols |= !columns_of(e, width).is_empty();
            match x {
                ColBound::Eq(e) => see(e),
                ColBound::In(l) => l.iter().for_each(&mut see),
                ColBound::Range(lo, hi) => lo.iter().chain(hi.iter()).for_each(|(e, _)| see(e)),
            }
            cols
        }),
        _ => false,
    }
}

/// A hash join on the equalities between this table's columns (`local`) and the earlier
/// tables' (`known`), else a loop; the terms that read only this table move to the build
/// side's filter, out of `on_terms`.
fn build_method(
    build_access: Access,
    on_terms: &mut Vec<Expr>,
    local: &dyn Fn(&Expr) -> bool,
    known: &dyn Fn(&Expr) -> bool,
    types: &[SqlType],
    offset: usize,
    width: usize,
) -> JoinMethod {
    let mut build_keys = Vec::new();
    let mut probe_keys = Vec::new();
    let mut classes = Vec::new();
    for x in on_terms.iter() {
        let Expr::Cmp(Cmp::Eq, a, b) = x else {
            continue;
        };
        let (inner, outer) = if local(a) && known(b) {
            (a, b)
        } else if local(b) && known(a) {
            (b, a)
        } else {
            continue;
        };
        if columns_of(inner, width).is_empty() || columns_of(outer, width).is_empty() {
            continue;
        }
        let ty = |e: &Expr| e.result_type(&|i| types.get(i).copied());
        if let Some(class) = KeyClass::of(ty(inner), ty(outer)) {
            build_keys.push(shift_columns(inner, offset));
            probe_keys.push((**outer).clone());
            classes.push(class);
        }
    }
    let (own, rest): (Vec<Expr>, Vec<Expr>) = std::mem::take(on_terms).into_iter().partition(local);
    *on_terms = rest;
    let build_filter = and_all(own.iter().map(|x| shift_columns(x, offset)).collect());
    if build_keys.is_empty() {
        JoinMethod::Loop {
            build_access,
            build_filter,
        }
    } else {
        JoinMethod::Hash {
            build_access,
            build_filter,
            build_keys,
            probe_keys,
            classes,
        }
    }
}

/// The AND of `terms` (`None` for none).
pub(super) fn and_all(terms: Vec<Expr>) -> Option<Expr> {
    terms
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}
