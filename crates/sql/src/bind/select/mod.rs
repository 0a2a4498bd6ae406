//! SELECT: from the parser's AST to a [`SelectPlan`]: the FROM clause (one table, or several
//! joined: see [`crate::exec::join`]), WHERE split over the tables, projection, aggregation,
//! ORDER BY and LIMIT. The FROM clause's tables are in `from`, UNION and the other set
//! operations in `union`, ORDER BY and LIMIT in `clauses`. Those files compile the queries
//! they hold (derived tables, set operands) through [`Env::compile_query`], not by naming
//! [`compile_select`]: they do not import this file, which imports them.

mod clauses;
mod from;
mod union;

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::agg_scope::AggScope;
use crate::bind::compile::Compiler;
use crate::bind::env::{Env, FromItem};
use crate::bind::labels::SourceLabels;
use crate::bind::scope::{joined_column_meta, joined_types, FromScope};
use crate::error::ErrorKind;
use crate::expr::eval::{columns_of, mark_columns, shift_columns};
use crate::expr::{Cmp, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::join::KeyClass;
use crate::plan::rules::access_path::{choose_access, choose_access_at, conjuncts};
use crate::plan::select::{JoinMethod, JoinStep, SelectPlan};
use crate::types::result::ColumnMeta;
use crate::types::sqltype::SqlType;
use crate::SqlError;

use self::clauses::{is_aggregate_call, limit_items, order_items};
use self::from::{expand_star, from_tables};
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
        ast::SetExpr::SetOperation { .. } => return compile_union(q, env, c),
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
            return compile_union(q, env, c);
        }
        ast::SetExpr::Values(_) => return Err(SqlError::unsupported("VALUES as a query")),
        _ => return Err(SqlError::unsupported("this query form")),
    };
    let for_update = q
        .locks
        .iter()
        .any(|l| matches!(l.lock_type, ast::LockType::Update));
    let mut from = from_tables(sel, env, c)?;
    // Derived tables' plans, by FROM position (the items below borrow the tables).
    let mut derived: Vec<Option<Box<SelectPlan>>> =
        from.iter_mut().map(|f| f.derived.take()).collect();
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
    let vars = env.vars;
    let subs_before = c.subquery_count();
    let scope = |clause: &'static str, visible: usize| FromScope {
        items: &items,
        visible,
        clause,
        vars,
        env: Some(env),
    };
    let all = items.len();
    // Projection items: (label, AST, joined-row column for `*`), with `*` expanded.
    let mut outs: Vec<(String, ast::Expr, Option<usize>)> = Vec::new();
    let mut labels: Option<Option<SourceLabels>> = None;
    let mut aliases: Vec<(String, ast::Expr)> = Vec::new();
    for it in &sel.projection {
        match it {
            ast::SelectItem::UnnamedExpr(e) => {
                let label = match e {
                    ast::Expr::Identifier(i) => i.value.clone(),
                    ast::Expr::CompoundIdentifier(ids) => ids[ids.len() - 1].value.clone(),
                    // A string literal is named by its value: `SELECT 'it''s'` has a
                    // column `it's`, as in MySQL.
                    ast::Expr::Value(ast::ValueWithSpan {
                        value: ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s),
                        ..
                    }) => s.clone(),
                    other => env
                        .sql
                        .and_then(|sql| {
                            labels
                                .get_or_insert_with(|| SourceLabels::new(sql))
                                .as_ref()?
                                .label(other)
                        })
                        .unwrap_or_else(|| other.to_string()),
                };
                outs.push((label, e.clone(), None));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                outs.push((alias.value.clone(), expr.clone(), None));
                aliases.push((alias.value.clone(), expr.clone()));
            }
            ast::SelectItem::Wildcard(_) => {
                if items.is_empty() {
                    return Err(SqlError::of(ErrorKind::NoTablesUsed, "No tables used"));
                }
                // In the order the FROM clause names the tables (a RIGHT JOIN runs them the
                // other way round); USING columns once, first, as MySQL lists them.
                let mut order: Vec<usize> = (0..items.len()).collect();
                order.sort_by_key(|&i| from[i].declared);
                for it in &items {
                    for m in it.merged.iter() {
                        let first = order
                            .iter()
                            .map(|&i| &items[i])
                            .find(|x| !x.merged.iter().any(|n| n.eq_ignore_ascii_case(m)));
                        if let Some((x, c)) = first.and_then(|x| x.table.column(m).map(|c| (x, c)))
                        {
                            if !outs.iter().any(|o| o.2 == Some(x.offset + c)) {
                                let name = x.table.def.columns[c].name.clone();
                                outs.push((
                                    name.clone(),
                                    ast::Expr::Identifier(ast::Ident::new(name)),
                                    Some(x.offset + c),
                                ));
                            }
                        }
                    }
                }
                for &i in &order {
                    expand_star(&items[i], &mut outs);
                }
            }
            ast::SelectItem::QualifiedWildcard(kind, _) => {
                let ast::SelectItemQualifiedWildcardKind::ObjectName(name) = kind else {
                    return Err(SqlError::unsupported("expression.*"));
                };
                let q = name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.clone())
                    .unwrap_or_default();
                let q = q.as_str();
                let Some(it) = items.iter().find(|it| it.named(q)) else {
                    return Err(SqlError::of(
                        ErrorKind::BadTableError,
                        format!("Unknown table '{q}'"),
                    ));
                };
                expand_star(it, &mut outs);
            }
            other => return Err(SqlError::unsupported(&format!("select item {other}"))),
        }
    }
    let group_exprs: Vec<ast::Expr> = match &sel.group_by {
        ast::GroupByExpr::Expressions(v, _) => v.clone(),
        ast::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
    };
    let order = order_items(q)?;
    let aggregate = !group_exprs.is_empty()
        || sel.having.is_some()
        || outs.iter().any(|(_, e, _)| is_aggregate_call(e))
        || order.iter().any(|(e, _)| is_aggregate_call(e));
    // WHERE, over the joined row.
    let filter = match &sel.selection {
        None => None,
        Some(w) => {
            let mut f = c.compile(w, &mut scope("where clause", all))?;
            // A NOT NULL DATE's zero date IS NULL here (see the function); one table only, as
            // an outer join's NULLs would otherwise match too.
            if let [only] = items.as_slice() {
                crate::plan::rules::zero_dates::zero_dates_are_null(
                    &mut f,
                    &only.table.def.columns,
                );
            }
            Some(f)
        }
    };
    // ON clauses, each over the tables joined so far.
    let mut ons: Vec<Option<Expr>> = Vec::with_capacity(from.len());
    for (k, f) in from.iter().enumerate() {
        ons.push(match &f.on {
            Some(e) if k > 0 => Some(c.compile(e, &mut scope("on clause", k + 1))?),
            _ => None,
        });
    }
    let position = |e: &ast::Expr| -> Option<usize> {
        if let ast::Expr::Value(v) = e {
            if let ast::Value::Number(n, _) = &v.value {
                return n
                    .parse::<usize>()
                    .ok()
                    .filter(|&p| p >= 1 && p <= outs.len());
            }
        }
        None
    };
    // ORDER BY items resolve to a projection (by position or alias) or stand alone.
    let order_asts: Vec<ast::Expr> = order
        .iter()
        .map(|(e, _)| {
            if let Some(p) = position(e) {
                return outs[p - 1].1.clone();
            }
            if let ast::Expr::Identifier(id) = e {
                if let Some((_, a)) = aliases
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&id.value))
                {
                    return a.clone();
                }
            }
            e.clone()
        })
        .collect();
    let types = joined_types(&items);
    let mut outputs = Vec::new();
    let mut metas = Vec::new();
    let mut out_types = Vec::new();
    let mut group_by = None;
    let mut having = None;
    if aggregate {
        let mut ascope = AggScope {
            from: &items,
            env: Some(env),
            vars,
            group_by: Vec::new(),
            aggs: Vec::new(),
            aliases: aliases.clone(),
            clause: "field list",
        };
        let mut gkeys = Vec::new();
        for g in &group_exprs {
            let g = match position(g) {
                Some(p) => outs[p - 1].1.clone(),
                None => match g {
                    ast::Expr::Identifier(id)
                        if !items.iter().any(|it| it.table.column(&id.value).is_some()) =>
                    {
                        aliases
                            .iter()
                            .find(|(n, _)| n.eq_ignore_ascii_case(&id.value))
                            .map(|(_, a)| a.clone())
                            .unwrap_or_else(|| g.clone())
                    }
                    _ => g.clone(),
                },
            };
            let compiled = c.compile(&g, &mut scope("group statement", all))?;
            ascope.group_by.push((g.to_string(), compiled.clone()));
            gkeys.push(compiled);
        }
        for (label, e, _) in &outs {
            let x = c.compile(e, &mut ascope)?;
            let ty = group_row_type(&x, &ascope, &types);
            out_types.push(ty.unwrap_or_else(|| x.result_type(&|_| None)));
            metas.push(meta_for(&x, label, &items, &ascope.group_by, ty));
            outputs.push(x);
        }
        if let Some(h) = &sel.having {
            ascope.clause = "having clause";
            having = Some(c.compile(h, &mut ascope)?);
        }
        ascope.clause = "order clause";
        for o in &order_asts {
            outputs.push(c.compile(o, &mut ascope)?);
        }
        group_by = Some((gkeys, ascope.aggs));
    } else {
        for (label, e, star) in &outs {
            let x = match star {
                Some(i) => Expr::Col(*i),
                None => c.compile(e, &mut scope("field list", all))?,
            };
            let meta = match &x {
                Expr::Col(i) => joined_column_meta(&items, *i, label),
                _ => None,
            }
            .unwrap_or_else(|| match x.type_of(&|i| types.get(i).copied()) {
                Some(ty) => {
                    ColumnMeta::computed(label, ty, !matches!(&x, Expr::Const(v) if !v.is_null()))
                }
                None => ColumnMeta::null_type(label),
            });
            out_types.push(x.result_type(&|i| types.get(i).copied()));
            metas.push(meta);
            outputs.push(x);
        }
        for o in &order_asts {
            outputs.push(c.compile(o, &mut scope("order clause", all))?);
        }
    }
    let (limit, offset) = limit_items(&q.limit_clause);
    let mut lim = |e: Option<&ast::Expr>| -> Result<Option<Expr>, SqlError> {
        e.map(|e| c.compile(e, &mut scope("limit", 0))).transpose()
    };
    let limit = lim(limit)?;
    let offset = lim(offset)?;
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
    let visible = outs.len();
    let order_desc: Vec<bool> = order.iter().map(|(_, d)| *d).collect();
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
        has_sub: c.subquery_count() > subs_before,
        types: out_types,
    })
}

/// The AND of `terms` (`None` for none).
fn and_all(terms: Vec<Expr>) -> Option<Expr> {
    terms
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

/// The type of `x` over the group row (`None`: the NULL type).
fn group_row_type(x: &Expr, scope: &AggScope, types: &[SqlType]) -> Option<SqlType> {
    let ng = scope.group_by.len();
    x.type_of(&|i| {
        if i < ng {
            Some(scope.group_by[i].1.result_type(&|j| types.get(j).copied()))
        } else {
            scope.aggs.get(i - ng).map(|a| a.ty)
        }
    })
}

fn meta_for(
    x: &Expr,
    label: &str,
    items: &[FromItem],
    groups: &[(String, Expr)],
    ty: Option<SqlType>,
) -> ColumnMeta {
    if let Expr::Col(i) = x {
        if let Some((_, Expr::Col(src))) = groups.get(*i) {
            if let Some(m) = joined_column_meta(items, *src, label) {
                return m;
            }
        }
    }
    match ty {
        Some(ty) => ColumnMeta::computed(label, ty, true),
        None => ColumnMeta::null_type(label),
    }
}
