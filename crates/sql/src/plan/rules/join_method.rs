//! `choose_join_methods`: how each joined table's rows are matched to the rows before it.

use crate::expr::eval::{columns_of, shift_columns};
use crate::expr::{Cmp, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::join::KeyClass;
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::shape::{and_all, block, terms_of};
use crate::plan::select::JoinMethod;
use crate::types::sqltype::SqlType;

/// Decides each Join's `method`. A table whose access path reads the outer row is looked up
/// per outer row (index nested loop). Otherwise it is read once, through its access path
/// (key bounds that read no earlier table select the same rows for every outer row), with
/// the ON terms that read only this table as the read's filter, and then hashed on the ON's
/// equalities between its columns and the earlier tables' (of types that compare as the
/// hash compares, `KeyClass`), or, without such an equality, tried against every outer row.
/// The terms moved into the build filter leave `on`; the hash keys' equalities stay, checked
/// again on the rows the hash finds. Terms with subqueries stay in `on`: their outer
/// references are positions in the joined row.
pub(crate) fn choose_join_methods(plan: &mut LogicalPlan) {
    let Some(b) = block(plan) else {
        return;
    };
    let mut types = Vec::new();
    methods_in(b.from, &mut types);
}

/// `types`: the joined row's column types up to here.
fn methods_in(node: &mut LogicalPlan, types: &mut Vec<SqlType>) {
    match node {
        LogicalPlan::Filter { input, .. } => methods_in(input, types),
        LogicalPlan::Join {
            left,
            right,
            on,
            method,
            ..
        } => {
            methods_in(left, types);
            let offset = types.len();
            let access = match &**right {
                LogicalPlan::Scan { access, .. } => access.clone(),
                _ => Access::Full,
            };
            methods_in(right, types);
            if method.is_some() {
                return;
            }
            let width = types.len();
            let mut terms = on.as_ref().map(terms_of).unwrap_or_default();
            *method = Some(Box::new(if reads_outer_row(&access, width) {
                JoinMethod::Lookup(access)
            } else {
                build_method(access, &mut terms, types, offset)
            }));
            *on = and_all(terms);
        }
        LogicalPlan::Scan { table, .. } | LogicalPlan::Derived { table, .. } => {
            types.extend(table.types.iter().copied());
        }
        other => {
            let s = other.schema();
            types.extend(s.fields.iter().map(|f| f.ty));
        }
    }
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

/// A hash join on the equalities between this table's columns and the earlier tables', else
/// a loop; the terms that read only this table move to the build side's filter, out of
/// `on_terms`. `types`: the joined row's up to this table, which starts at `offset`.
fn build_method(
    build_access: Access,
    on_terms: &mut Vec<Expr>,
    types: &[SqlType],
    offset: usize,
) -> JoinMethod {
    let width = types.len();
    let local = |x: &Expr| {
        !x.has_subquery()
            && columns_of(x, width)
                .iter()
                .all(|&col| col >= offset && col < width)
    };
    let known =
        |x: &Expr| !x.has_subquery() && columns_of(x, width).iter().all(|&col| col < offset);
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
