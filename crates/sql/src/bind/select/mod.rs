//! SELECT: from the parser's AST to a [`SelectPlan`]: the FROM clause (one table, or several
//! joined: see [`crate::exec::join`]), WHERE split over the tables, projection, aggregation,
//! ORDER BY and LIMIT. The FROM clause's tables are in `from`, UNION and the other set
//! operations in `union`, ORDER BY and LIMIT in `clauses`. Those files compile the queries
//! they hold (derived tables, set operands) through [`Env::compile_query`], not by naming
//! [`compile_select`]: they do not import this file, which imports them.
//!
//! A query block takes the LogicalPlan path (`block`, then `plan::lower`), and so does a set
//! operation (`union::plan_union`); `compile_from` and `union::compile_union` are the old
//! path, which the shadow check runs beside it in debug builds, and `compile_from` still
//! compiles `SELECT … FOR UPDATE` without a table to lock (D1e deletes the rest).

mod block;
mod clauses;
mod from;
mod front;
#[cfg(debug_assertions)]
pub(crate) mod shadow;
mod union;

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::env::{Env, FromItem};
use crate::bind::scope::joined_types;
use crate::expr::eval::{columns_of, mark_columns, shift_columns};
use crate::expr::{Cmp, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::join::KeyClass;
use crate::plan::logical::node::BlockMeta;
use crate::plan::lower::lower;
use crate::plan::rules::access_path::{choose_access, choose_access_at, conjuncts};
use crate::plan::select::{JoinMethod, JoinStep, SelectPlan};
use crate::SqlError;

use self::from::{from_tables, FromTable, Query};
use self::front::{bind_clauses, Bound};
use self::union::compile_union;

pub fn compile_select(q: &ast::Query, env: &Env, c: &mut Compiler) -> Result<SelectPlan, SqlError> {
    if let Some(with) = &q.with {
        // WITH: each common table expression is a derived table wherever the query names
        // it (see `from_tables`); it sees the ones defined before it.
        if with.recursive {
            return Err(SqlError::unsupported("WITH RECURSIVE"));
        }
        let mut ctes: Vec<&ast::Cte> = env.ctes.to_vec();
        ctes.extend(with.cte_tables.iter());
        let inner = Env {
            ctes: &ctes,
            ..*env
        };
        let mut rest = q.clone();
        rest.with = None;
        return compile_select(&rest, &inner, c);
    }
    let sel = match &*q.body {
        ast::SetExpr::Select(sel) => sel,
        ast::SetExpr::SetOperation { .. } => return compile_set(q, env, c),
        ast::SetExpr::Query(inner) => {
            // `(SELECT ...)`, with ORDER BY/LIMIT inside or outside the parentheses.
            if q.order_by.is_none() && q.limit_clause.is_none() {
                return compile_select(inner, env, c);
            }
            if inner.order_by.is_none() && inner.limit_clause.is_none() {
                let mut x = (**inner).clone();
                x.order_by.clone_from(&q.order_by);
                x.limit_clause.clone_from(&q.limit_clause);
                return compile_select(&x, env, c);
            }
            return compile_set(q, env, c);
        }
        ast::SetExpr::Values(_) => return Err(SqlError::unsupported("VALUES as a query")),
        _ => return Err(SqlError::unsupported("this query form")),
    };
    // The old path's plan is built again from the compiler as it is now (shadow.rs).
    #[cfg(debug_assertions)]
    let before = (!shadow::running()).then(|| c.clone());
    let from = from_tables(sel, env, c, &bind_query)?;
    if checking() {
        return compile_from(q, sel, env, c, from);
    }
    let lock = block::lock(&from, for_update(q));
    let plan = block::compile_block(q, sel, env, c, from, lock);
    #[cfg(debug_assertions)]
    if let Some(mut old) = before {
        let q = as_locked(q, lock);
        shadow::check(&plan, c, || {
            let p = compile_flat(&q, sel, env, &mut old);
            (p, old)
        });
    }
    plan
}

/// The query as the old path is to compile it for the check: without its FOR UPDATE where
/// the block has no table to lock, which the new path drops (see `block::lock`).
#[cfg(debug_assertions)]
fn as_locked(q: &ast::Query, lock: bool) -> std::borrow::Cow<'_, ast::Query> {
    if lock || !for_update(q) {
        return std::borrow::Cow::Borrowed(q);
    }
    let mut q = q.clone();
    q.locks.clear();
    std::borrow::Cow::Owned(q)
}

/// A set operation (or a parenthesized query with its own ORDER BY/LIMIT and one outside):
/// SetOp nodes over its operands' plans, lowered, under the shadow check like a block.
fn compile_set(q: &ast::Query, env: &Env, c: &mut Compiler) -> Result<SelectPlan, SqlError> {
    if checking() {
        return compile_union(q, env, c);
    }
    #[cfg(debug_assertions)]
    let before = c.clone();
    let plan = union::plan_union(q, env, c).and_then(|(p, cols, sub)| lower(p, cols, sub));
    #[cfg(debug_assertions)]
    {
        let mut old = before;
        shadow::check(&plan, c, || {
            let p = compile_union(q, env, &mut old);
            (p, old)
        });
    }
    plan
}

/// The shadow check is running the old path: its blocks (derived tables', subqueries') take
/// the old path too, so that the check compares the new path with the old one all the way
/// down.
#[cfg(debug_assertions)]
fn checking() -> bool {
    shadow::running()
}

#[cfg(not(debug_assertions))]
fn checking() -> bool {
    false
}

/// For tests: a plain query block (under its WITH) compiled the new way, with `alter`
/// applied to its logical plan before lowering, and the old way from a copy of the compiler:
/// each result with the compiler after it. `None` when the block does not take the
/// LogicalPlan path, or its FROM clause fails (before the paths part).
#[cfg(all(test, debug_assertions))]
#[allow(clippy::type_complexity)]
pub(crate) fn both_ways(
    q: &ast::Query,
    env: &Env,
    c: &mut Compiler,
    alter: &dyn Fn(&mut crate::plan::logical::node::LogicalPlan),
) -> Option<(
    Result<SelectPlan, SqlError>,
    Compiler,
    Result<SelectPlan, SqlError>,
    Compiler,
)> {
    if let Some(with) = &q.with {
        if with.recursive {
            return None;
        }
        let mut ctes: Vec<&ast::Cte> = env.ctes.to_vec();
        ctes.extend(with.cte_tables.iter());
        let inner = Env {
            ctes: &ctes,
            ..*env
        };
        let mut rest = q.clone();
        rest.with = None;
        return both_ways(&rest, &inner, c, alter);
    }
    let sel = match &*q.body {
        ast::SetExpr::Select(sel) => sel,
        // As `compile_select` routes a parenthesized query.
        ast::SetExpr::Query(inner) if q.order_by.is_none() && q.limit_clause.is_none() => {
            return both_ways(inner, env, c, alter);
        }
        ast::SetExpr::Query(inner) if inner.order_by.is_none() && inner.limit_clause.is_none() => {
            let mut x = (**inner).clone();
            x.order_by.clone_from(&q.order_by);
            x.limit_clause.clone_from(&q.limit_clause);
            return both_ways(&x, env, c, alter);
        }
        ast::SetExpr::SetOperation { .. } | ast::SetExpr::Query(_) => {
            let mut old_c = c.clone();
            let new = union::plan_union(q, env, c).and_then(|(mut p, cols, sub)| {
                alter(&mut p);
                lower(p, cols, sub)
            });
            let old = shadow::as_old(|| compile_union(q, env, &mut old_c));
            return Some((new, c.clone(), old, old_c));
        }
        _ => return None,
    };
    let mut old_c = c.clone();
    let from = from_tables(sel, env, c, &bind_query).ok()?;
    let lock = block::lock(&from, for_update(q));
    let new = block::plan_block(q, sel, env, c, from, lock).and_then(|(mut p, cols, sub)| {
        alter(&mut p);
        lower(p, cols, sub)
    });
    let q = as_locked(q, lock);
    let old = shadow::as_old(|| compile_flat(&q, sel, env, &mut old_c));
    Some((new, c.clone(), old, old_c))
}

fn for_update(q: &ast::Query) -> bool {
    q.locks
        .iter()
        .any(|l| matches!(l.lock_type, ast::LockType::Update))
}

#[cfg(debug_assertions)]
/// A query block the way it was compiled before D1b, FROM clause included: what the shadow
/// check compares the LogicalPlan path with (D1e deletes it with the old tail).
fn compile_flat(
    q: &ast::Query,
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
) -> Result<SelectPlan, SqlError> {
    let from = from_tables(sel, env, c, &bind_query)?;
    compile_from(q, sel, env, c, from)
}

/// A derived table's or CTE's query: a block binds to a LogicalPlan (lowered with the block
/// that reads it, and checked with it); a set operation or a parenthesized query compiles
/// the old way (D1d), and so does every query while the shadow check runs the old path.
fn bind_query(q: &ast::Query, env: &Env, c: &mut Compiler) -> Result<Query, SqlError> {
    let old = |c: &mut Compiler| compile_select(q, env, c).map(|p| Query::Old(Box::new(p)));
    if checking() {
        return old(c);
    }
    if let Some(with) = &q.with {
        if with.recursive {
            return old(c);
        }
        let mut ctes: Vec<&ast::Cte> = env.ctes.to_vec();
        ctes.extend(with.cte_tables.iter());
        let inner = Env {
            ctes: &ctes,
            ..*env
        };
        let mut rest = q.clone();
        rest.with = None;
        return bind_query(&rest, &inner, c);
    }
    let ast::SetExpr::Select(sel) = &*q.body else {
        return old(c);
    };
    let from = from_tables(sel, env, c, &bind_query)?;
    let lock = block::lock(&from, for_update(q));
    let (plan, columns, has_sub) = block::plan_block(q, sel, env, c, from, lock)?;
    Ok(Query::New(plan, BlockMeta { columns, has_sub }))
}

fn compile_from(
    q: &ast::Query,
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
    mut from: Vec<FromTable>,
) -> Result<SelectPlan, SqlError> {
    let for_update = for_update(q);
    // Derived tables' plans, by FROM position (the items below borrow the tables).
    let mut derived: Vec<Option<Box<SelectPlan>>> = Vec::with_capacity(from.len());
    for f in from.iter_mut() {
        derived.push(
            f.derived
                .take()
                .map(|d| d.into_plan().map(Box::new))
                .transpose()?,
        );
    }
    // The FROM items borrow the tables: offsets in the joined row, in FROM order.
    let mut items: Vec<FromItem> = Vec::with_capacity(from.len());
    let mut width = 0;
    for f in &from {
        items.push(FromItem {
            table: &f.table,
            alias: f.alias.as_deref(),
            offset: width,
            merged: &f.merged,
        });
        width += f.table.types.len();
    }
    let t = items.first().map(|it| it.table);
    let Bound {
        filter,
        mut ons,
        visible,
        outputs,
        metas,
        out_types,
        group_by,
        having,
        order_desc,
        limit,
        offset,
        has_sub,
        ..
    } = bind_clauses(q, sel, env, c, &from, &items)?;
    let types = joined_types(&items);
    // Every column the statement reads, in the joined row.
    let mut wanted = vec![false; width];
    for e in filter.iter().chain(ons.iter().flatten()) {
        mark_columns(e, &mut wanted);
    }
    match &group_by {
        None => outputs.iter().for_each(|e| mark_columns(e, &mut wanted)),
        Some((g, aggs)) => {
            g.iter().for_each(|e| mark_columns(e, &mut wanted));
            aggs.iter()
                .filter_map(|a| a.arg.as_ref())
                .for_each(|e| mark_columns(e, &mut wanted));
        }
    }
    // WHERE terms go to the first table or to the join step of the last table they read.
    let table_of = |col: usize| items.iter().rposition(|it| it.offset <= col).unwrap_or(0);
    let mut base_terms: Vec<Expr> = Vec::new();
    let mut step_terms: Vec<Vec<Expr>> = vec![Vec::new(); items.len()];
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
    for k in 1..items.len() {
        if from[k].left {
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
    let base_filter = if items.len() <= 1 {
        filter
    } else {
        and_all(base_terms)
    };
    let mut joins = Vec::new();
    for k in 1..items.len() {
        let it = items[k];
        let left = from[k].left;
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
        let w = it.table.types.len();
        // Terms with subqueries stay in the match condition: their outer references are
        // positions in the joined row, which moving a term to the table's own row would break.
        let local = |x: &Expr| {
            !x.has_subquery()
                && columns_of(x, width)
                    .iter()
                    .all(|&col| col >= it.offset && col < it.offset + w)
        };
        let known =
            |x: &Expr| !x.has_subquery() && columns_of(x, width).iter().all(|&col| col < it.offset);
        let refs: Vec<&Expr> = on_terms.iter().collect();
        // An information_schema or derived table has no trees to look up in: hash or loop
        // over its rows.
        let access = if it.table.virt.is_some() || derived[k].is_some() {
            Access::Full
        } else {
            choose_access_at(it.table, &refs, it.offset, &known)
        };
        // Key bounds that read no earlier table (`b.id <= 2000`) select the same rows for
        // every outer row: those rows are read once, through the bounds, and hashed or looped
        // over, rather than looked up again per outer row.
        let per_row = match &access {
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
        };
        let method = if per_row {
            JoinMethod::Lookup(access)
        } else {
            // Constant bounds are in the table's own row now (they read no column).
            let build_access = access;
            let mut build_keys = Vec::new();
            let mut probe_keys = Vec::new();
            let mut classes = Vec::new();
            for x in &on_terms {
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
                    build_keys.push(shift_columns(inner, it.offset));
                    probe_keys.push((**outer).clone());
                    classes.push(class);
                }
            }
            let (own, rest): (Vec<Expr>, Vec<Expr>) = on_terms.into_iter().partition(local);
            on_terms = rest;
            let build_filter = and_all(own.iter().map(|x| shift_columns(x, it.offset)).collect());
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
        };
        joins.push(JoinStep {
            derived: derived[k].take(),
            table: from[k].table.clone(),
            offset: it.offset,
            left,
            on: and_all(on_terms),
            after: and_all(after_terms),
            wanted: wanted[it.offset..it.offset + w].to_vec(),
            method,
        });
    }
    let base_width = t.map_or(0, |t| t.types.len());
    let base_derived = derived.first_mut().and_then(Option::take);
    let access = match t {
        None => Access::None,
        Some(t) if t.virt.is_some() || base_derived.is_some() => Access::Full,
        Some(t) => choose_access(t, base_filter.as_ref()),
    };
    // Rows come out of a primary-key scan (or a full scan) in key order, and joins keep the
    // order of the first table's rows: an ORDER BY on a prefix of its key, all in one
    // direction, needs no sort.
    let ordered_scan = match (t, &access, group_by.is_some()) {
        (Some(t), Access::Full | Access::Primary(_), false)
            if !order_desc.is_empty() && t.virt.is_none() && base_derived.is_none() =>
        {
            let same_dir = order_desc.iter().all(|d| *d == order_desc[0]);
            let on_pk = outputs[visible..]
                .iter()
                .enumerate()
                .all(|(i, e)| matches!(e, Expr::Col(c) if t.def.pk.get(i) == Some(c)));
            let numeric_pk = t.def.pk.iter().all(|&c| !t.types[c].is_text());
            (same_dir && on_pk && numeric_pk).then_some(order_desc[0])
        }
        _ => None,
    };
    wanted.truncate(base_width);
    let table = from.into_iter().next().map(|f| f.table);
    Ok(SelectPlan {
        table,
        access,
        filter: base_filter,
        wanted,
        group_by,
        having,
        outputs,
        visible,
        order: order_desc,
        distinct: matches!(sel.distinct, Some(ast::Distinct::Distinct)),
        limit,
        offset,
        ordered_scan,
        columns: Arc::new(metas),
        for_update,
        joins,
        union: Vec::new(),
        derived: base_derived,
        has_sub,
        types: out_types,
    })
}

/// The AND of `terms` (`None` for none).
fn and_all(terms: Vec<Expr>) -> Option<Expr> {
    terms
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}
