//! `choose_access_paths`: a table's access path from the terms it is read with.

use crate::catalog::Table;
use crate::expr::eval::columns_of;
use crate::expr::{Cmp, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::shape::{conjuncts, from_side, is_leaf};

/// The bounds the WHERE terms put on column `col`. `known` says whether an expression's value
/// is known before the table is read (constants and parameters; in a join, also columns of
/// the tables before it).
fn bounds_on(terms: &[&Expr], col: usize, known: &dyn Fn(&Expr) -> bool) -> Option<ColBound> {
    let mut lo: Option<(Expr, bool)> = None;
    let mut hi: Option<(Expr, bool)> = None;
    for t in terms {
        match t {
            Expr::Cmp(op, a, b) => {
                let (op, v) = match (&**a, &**b) {
                    (Expr::Col(c), v) if *c == col && known(v) => (*op, v),
                    (v, Expr::Col(c)) if *c == col && known(v) => (op.flip(), v),
                    _ => continue,
                };
                match op {
                    Cmp::Eq => return Some(ColBound::Eq(v.clone())),
                    Cmp::Gt => lo = Some((v.clone(), false)),
                    Cmp::Ge => lo = Some((v.clone(), true)),
                    Cmp::Lt => hi = Some((v.clone(), false)),
                    Cmp::Le => hi = Some((v.clone(), true)),
                    _ => {}
                }
            }
            Expr::Between(x, l, h, false) => {
                if matches!(&**x, Expr::Col(c) if *c == col) && known(l) && known(h) {
                    lo = Some(((**l).clone(), true));
                    hi = Some(((**h).clone(), true));
                }
            }
            Expr::InList(x, list, false) => {
                if matches!(&**x, Expr::Col(c) if *c == col)
                    && list.iter().all(known)
                    && list.len() <= 1000
                {
                    return Some(ColBound::In(list.clone()));
                }
            }
            _ => {}
        }
    }
    if lo.is_some() || hi.is_some() {
        Some(ColBound::Range(lo, hi))
    } else {
        None
    }
}

/// Bounds on a prefix of `cols`: equalities, then at most one IN or range.
fn key_bounds(
    terms: &[&Expr],
    cols: &[usize],
    base: usize,
    known: &dyn Fn(&Expr) -> bool,
) -> Vec<ColBound> {
    let mut out = Vec::new();
    for &c in cols {
        match bounds_on(terms, base + c, known) {
            Some(b @ ColBound::Eq(_)) => out.push(b),
            Some(b) => {
                out.push(b);
                break;
            }
            None => break,
        }
    }
    out
}

/// Chooses the access path for `filter` over `t`.
pub fn choose_access(t: &Table, filter: Option<&Expr>) -> Access {
    let Some(f) = filter else {
        return Access::Full;
    };
    let mut terms = Vec::new();
    conjuncts(f, &mut terms);
    choose_access_at(t, &terms, 0, &Expr::is_constant)
}

/// Chooses the access path for a table whose columns start at `base` in the row the `terms`
/// are over; `known` tells which expressions can bound a key (see [`bounds_on`]).
pub fn choose_access_at(
    t: &Table,
    terms: &[&Expr],
    base: usize,
    known: &dyn Fn(&Expr) -> bool,
) -> Access {
    let score = |b: &[ColBound], ncols: usize, unique: bool| -> u32 {
        let eq = b.iter().filter(|x| matches!(x, ColBound::Eq(_))).count();
        if b.is_empty() {
            0
        } else if unique && eq == ncols {
            100
        } else {
            (eq as u32) * 10 + 5
        }
    };
    let mut best = Access::Full;
    let mut best_score = 0;
    if !t.def.pk.is_empty() {
        let b = key_bounds(terms, &t.def.pk, base, known);
        let s = score(&b, t.def.pk.len(), true) + 1;
        if !b.is_empty() {
            best_score = s;
            best = Access::Primary(b);
        }
    }
    for (i, idx) in t.def.indexes.iter().enumerate() {
        let b = key_bounds(terms, &idx.columns, base, known);
        let s = score(&b, idx.columns.len(), idx.unique);
        if !b.is_empty() && s > best_score {
            best_score = s;
            best = Access::Index(i, b);
        }
    }
    best
}

/// Decides how each table of a block is read (each Scan's `access`): the first table through
/// the key its Filter (WHERE terms, after push-down) bounds best; a joined table through the
/// key its join's ON terms bound best, where the values may come from the tables before it
/// (then it is looked up per outer row, see `choose_join_methods`). A primary key beats a
/// secondary one on a tie; equalities on a whole unique key beat everything. Information
/// schema tables and derived tables have no trees: they are read in full. An UPDATE's or
/// DELETE's target is read as a block's only table.
pub(crate) fn choose_access_paths(plan: &mut LogicalPlan) {
    let Some(from) = from_side(plan) else {
        return;
    };
    let mut offset = 0;
    access_in(from, None, &mut offset);
}

/// `on`: the ON of the join whose right input `node` is.
fn access_in(node: &mut LogicalPlan, on: Option<&Expr>, offset: &mut usize) {
    match node {
        LogicalPlan::Filter { input, predicate } if is_leaf(input) && *offset == 0 => {
            if let LogicalPlan::Scan { table, access, .. } = &mut **input {
                if table.virt.is_none() {
                    *access = choose_access(table, Some(predicate));
                }
            }
            *offset += input.schema().width();
        }
        LogicalPlan::Filter { input, .. } => access_in(input, None, offset),
        LogicalPlan::Join {
            left, right, on, ..
        } => {
            access_in(left, None, offset);
            access_in(right, on.as_ref(), offset);
        }
        LogicalPlan::Scan {
            table,
            access,
            schema,
            ..
        } => {
            let base = *offset;
            *offset += schema.width();
            if table.virt.is_some() {
                return;
            }
            *access = match (base, on) {
                (0, _) | (_, None) => Access::Full,
                (_, Some(on)) => {
                    let mut terms = Vec::new();
                    conjuncts(on, &mut terms);
                    // The ON reads no column past this table's.
                    let end = *offset;
                    // Terms with subqueries cannot bound a key: their outer references are
                    // positions in the joined row, not values known before the lookup.
                    let known = |x: &Expr| {
                        !x.has_subquery() && columns_of(x, end).iter().all(|&c| c < base)
                    };
                    choose_access_at(table, &terms, base, &known)
                }
            };
        }
        other => *offset += other.schema().width(),
    }
}
