//! SELECT: from the parser's AST to a [`SelectPlan`]: the FROM clause (one table, or several
//! joined: see [`crate::exec::join`]), WHERE split over the tables, projection, aggregation,
//! ORDER BY and LIMIT.

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::agg_scope::AggScope;
use crate::bind::compile::{Compiler, Scope};
use crate::bind::env::{Env, FromItem};
use crate::bind::scope::{joined_column_meta, joined_types, FromScope};
use crate::catalog::Table;
use crate::expr::eval::{columns_of, mark_columns, shift_columns};
use crate::expr::{Cmp, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::join::KeyClass;
use crate::plan::rules::access_path::{choose_access, choose_access_at, conjuncts};
use crate::plan::select::{JoinMethod, JoinStep, SelectPlan, SetOp};
use crate::types::result::ColumnMeta;
use crate::types::sqltype::SqlType;
use crate::SqlError;

fn order_items(q: &ast::Query) -> Result<Vec<(ast::Expr, bool)>, SqlError> {
    match &q.order_by {
        None => Ok(Vec::new()),
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => Ok(v
                .iter()
                .map(|o| {
                    (
                        o.expr.clone(),
                        matches!(o.options.sort, Some(ast::OrderBySort::Desc)),
                    )
                })
                .collect()),
            ast::OrderByKind::All(_) => Err(SqlError::unsupported("ORDER BY ALL")),
        },
    }
}

fn limit_items(l: &Option<ast::LimitClause>) -> (Option<&ast::Expr>, Option<&ast::Expr>) {
    match l {
        None => (None, None),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
            (limit.as_ref(), offset.as_ref().map(|o| &o.value))
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
    }
}

fn is_aggregate_call(e: &ast::Expr) -> bool {
    // Text search is enough to decide whether a query aggregates: aggregate names followed by
    // '(' anywhere in the expression, outside subqueries (which aggregate on their own).
    let s = without_subqueries(&e.to_string().to_ascii_uppercase());
    ["COUNT(", "SUM(", "AVG(", "MIN(", "MAX("]
        .iter()
        .any(|f| s.contains(f))
}

/// `s` (the upper-cased text of an expression) with every parenthesized `(SELECT ...)` cut
/// out. Quoted strings are not parsed: a literal containing "(SELECT" only makes the caller
/// miss an aggregate inside that literal's parentheses, which it cannot contain anyway.
fn without_subqueries(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("(SELECT ") {
        out.push_str(&rest[..at]);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, ch) in rest[at..].char_indices() {
            match ch {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

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
    let subs_before = c.subqueries;
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
                    return Err(SqlError::new(1096, "HY000", "No tables used"));
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
                    return Err(SqlError::new(1051, "42S02", format!("Unknown table '{q}'")));
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
        has_sub: c.subqueries > subs_before,
        types: out_types,
    })
}

/// The operands of a chain of set operations, left to right, each with whether the
/// operation before it removes duplicates (UNION [DISTINCT]); the first operand's flag is
/// meaningless.
fn set_operands<'a>(
    e: &'a ast::SetExpr,
    op_before: SetOp,
    out: &mut Vec<(&'a ast::SetExpr, SetOp)>,
) -> Result<(), SqlError> {
    match e {
        ast::SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            let distinct = match set_quantifier {
                ast::SetQuantifier::All => false,
                ast::SetQuantifier::Distinct | ast::SetQuantifier::None => true,
                other => return Err(SqlError::unsupported(&format!("{op} {other}"))),
            };
            let this = match op {
                ast::SetOperator::Union => SetOp::Union { distinct },
                ast::SetOperator::Intersect => SetOp::Intersect { distinct },
                ast::SetOperator::Except | ast::SetOperator::Minus => SetOp::Except { distinct },
            };
            set_operands(left, op_before, out)?;
            // A set operation on the right binds tighter (INTERSECT over UNION, or
            // parentheses): it is one operand, compiled as a plan of its own.
            out.push((right, this));
            Ok(())
        }
        other => {
            out.push((other, op_before));
            Ok(())
        }
    }
}

/// `SELECT ... UNION [ALL|DISTINCT] SELECT ... [ORDER BY ...] [LIMIT ...]`: each operand is a
/// plan of its own; the union's rows then go through an outer stage whose ORDER BY and LIMIT
/// name the first operand's columns.
fn compile_union(q: &ast::Query, env: &Env, c: &mut Compiler) -> Result<SelectPlan, SqlError> {
    let mut operands = Vec::new();
    let first = SetOp::Union { distinct: false };
    match &*q.body {
        ast::SetExpr::Query(inner) => operands.push((&*inner.body, first)),
        body => set_operands(body, first, &mut operands)?,
    }
    let mut parts: Vec<(SelectPlan, SetOp)> = Vec::with_capacity(operands.len());
    for (e, op) in operands {
        let sub = match e {
            ast::SetExpr::Query(inner) => (**inner).clone(),
            other => ast::Query {
                body: Box::new(other.clone()),
                with: None,
                order_by: None,
                limit_clause: None,
                fetch: None,
                locks: Vec::new(),
                for_clause: None,
                settings: None,
                format_clause: None,
                pipe_operators: Vec::new(),
            },
        };
        let p = compile_select(&sub, env, c)?;
        if let Some((first, _)) = parts.first() {
            if first.visible != p.visible {
                return Err(SqlError::new(
                    1222,
                    "21000",
                    "The used SELECT statements have a different number of columns",
                ));
            }
        }
        parts.push((p, op));
    }
    let first = &parts[0].0;
    let n = first.visible;
    let labels: Vec<String> = first.columns.iter().map(|m| m.name.clone()).collect();
    let (metas, types): (Vec<ColumnMeta>, Vec<SqlType>) = (0..n)
        .map(|i| union_meta(parts.iter().map(|(p, _)| (&p.columns[i], p.types[i]))))
        .unzip();
    // An operand's values of another type than the column's are converted in the operand, so
    // that DISTINCT, INTERSECT, EXCEPT and ORDER BY compare them as the column's type (`'abc'`
    // and 0 are distinct strings) and they print as it.
    for (p, _) in parts.iter_mut() {
        for (i, &ty) in types.iter().enumerate() {
            let own = (p.columns[i].wire_type != crate::types::result::wire_type::NULL)
                .then_some(p.types[i]);
            if crate::types::typeagg::needs_conversion(own, ty) {
                let x = std::mem::replace(&mut p.outputs[i], Expr::Col(0));
                p.outputs[i] = Expr::Coerce(Box::new(x), ty);
                p.types[i] = ty;
            }
        }
    }
    let mut outputs: Vec<Expr> = (0..n).map(Expr::Col).collect();
    let vars = env.vars;
    let mut scope = UnionScope {
        labels: &labels,
        types: &types,
        vars,
        clause: "order clause",
    };
    let order = order_items(q)?;
    for (e, _) in &order {
        let pos = match e {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(s, _) => s.parse::<usize>().ok(),
                _ => None,
            },
            _ => None,
        };
        outputs.push(match pos {
            Some(p) if p >= 1 && p <= n => Expr::Col(p - 1),
            Some(_) => {
                return Err(SqlError::unknown_column(&e.to_string(), "order clause"));
            }
            None => c.compile(e, &mut scope)?,
        });
    }
    let (limit, offset) = limit_items(&q.limit_clause);
    let mut none = UnionScope {
        labels: &[],
        types: &[],
        vars,
        clause: "limit",
    };
    let limit = limit.map(|e| c.compile(e, &mut none)).transpose()?;
    let offset = offset.map(|e| c.compile(e, &mut none)).transpose()?;
    Ok(SelectPlan {
        table: None,
        access: Access::None,
        filter: None,
        wanted: Vec::new(),
        group_by: None,
        having: None,
        outputs,
        visible: n,
        order: order.iter().map(|(_, d)| *d).collect(),
        distinct: false,
        limit,
        offset,
        ordered_scan: None,
        columns: Arc::new(metas),
        for_update: false,
        joins: Vec::new(),
        types,
        union: parts,
        derived: None,
        has_sub: false,
    })
}

/// A union's column from its operands' columns (metadata and type): its metadata (the first
/// operand's when every operand has the same type) and its type (see [`crate::types::typeagg`]).
fn union_meta<'a>(cols: impl Iterator<Item = (&'a ColumnMeta, SqlType)>) -> (ColumnMeta, SqlType) {
    use crate::types::result::{col_flags, wire_type};
    let cols: Vec<(&ColumnMeta, Option<SqlType>)> = cols
        // A NULL literal's column has MariaDB's NULL type, which takes no part.
        .map(|(m, t)| (m, (m.wire_type != wire_type::NULL).then_some(t)))
        .collect();
    let Some(&(first, first_ty)) = cols.first() else {
        return (
            ColumnMeta::computed("", SqlType::Double, true),
            SqlType::Double,
        );
    };
    let merged = crate::types::typeagg::result_of(cols.iter().map(|(_, t)| *t));
    // A column of NULLs only is an empty binary string.
    let ty = merged.unwrap_or(SqlType::Char {
        len: 0,
        binary: true,
    });
    let same = cols
        .iter()
        .all(|(m, t)| *t == first_ty && m.wire_type == first.wire_type);
    let nullable = cols.iter().any(|(m, _)| m.flags & col_flags::NOT_NULL == 0);
    let mut m = if same && merged.is_some() {
        first.clone()
    } else {
        ColumnMeta::computed(&first.name, ty, nullable)
    };
    if nullable {
        m.flags &= !col_flags::NOT_NULL;
    }
    if same {
        m.length = cols.iter().map(|(c, _)| c.length).max().unwrap_or(m.length);
    }
    (m, ty)
}

/// Names in a union's ORDER BY: the first operand's column labels.
struct UnionScope<'a> {
    labels: &'a [String],
    /// The union's column types.
    types: &'a [SqlType],
    vars: &'a dyn Fn(&str) -> Result<crate::types::value::Value, SqlError>,
    clause: &'static str,
}

impl Scope for UnionScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        match (
            q,
            self.labels
                .iter()
                .position(|l| l.eq_ignore_ascii_case(name)),
        ) {
            (None, Some(i)) => Ok(Expr::Col(i)),
            (Some(q), _) => Err(SqlError::new(
                1250,
                "42000",
                format!(
                    "Table '{q}' from one of the SELECTs cannot be used in {}",
                    self.clause
                ),
            )),
            (None, None) => Err(SqlError::unknown_column(name, self.clause)),
        }
    }
    fn sysvar(&mut self, name: &str) -> Result<crate::types::value::Value, SqlError> {
        (self.vars)(name)
    }
    fn col_type(&self, i: usize) -> Option<SqlType> {
        self.types.get(i).copied()
    }
}

/// A table of the FROM clause, with how it joins the ones before it.
struct FromTable {
    table: Arc<Table>,
    alias: Option<String>,
    left: bool,
    on: Option<ast::Expr>,
    /// A derived table (`(SELECT ...) AS x`): the plan whose rows it holds; `table` then
    /// only describes its columns.
    derived: Option<Box<SelectPlan>>,
    /// Columns joined `USING` to an earlier table's.
    merged: Vec<String>,
    /// Position in the FROM clause as written (`SELECT *` order).
    declared: usize,
}

/// The innermost common table expression named `name` (a one-part name), if any.
fn cte_index(env: &Env, name: &ast::ObjectName) -> Option<usize> {
    let n = name.0.first()?.as_ident()?.value.as_str();
    env.ctes.iter().rposition(|c| c.alias.name.value == n)
}

/// The table a derived table's rows are read as: its columns are the query's result columns.
/// It has no trees (`primary` is a placeholder handle that is never used).
fn derived_table(
    p: &SelectPlan,
    name: &str,
    renames: &[String],
    env: &Env,
) -> Result<Arc<Table>, SqlError> {
    use crate::catalog::{ColumnDef, TableDef, TableOptions};
    if !renames.is_empty() && renames.len() != p.visible {
        return Err(SqlError::new(
            4002,
            "HY000",
            "WITH column list and SELECT field list have different column counts",
        ));
    }
    let mut columns: Vec<ColumnDef> = Vec::with_capacity(p.visible);
    for (i, m) in p.columns.iter().take(p.visible).enumerate() {
        let col = renames.get(i).unwrap_or(&m.name);
        if columns.iter().any(|c| c.name.eq_ignore_ascii_case(col)) {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{col}'"),
            ));
        }
        columns.push(ColumnDef {
            name: col.clone(),
            ty: p.types.get(i).copied().unwrap_or(SqlType::Varchar {
                len: 255,
                binary: false,
            }),
            nullable: true,
            default: None,
            default_now: false,
            auto_increment: false,
        });
    }
    let placeholder = (env.lookup)(crate::catalog::system::DB, "TABLES")?
        .primary
        .clone();
    let types = columns.iter().map(|c| c.ty).collect();
    Ok(Arc::new(Table {
        def: TableDef {
            id: 0,
            db: String::new(),
            name: name.to_string(),
            columns,
            pk: Vec::new(),
            indexes: Vec::new(),
            format: zipdb_engine::TableFormat::Codec(zipdb_engine::Codec::None),
            options: TableOptions::default(),
            primary_tree: String::new(),
        },
        types,
        primary: placeholder,
        indexes: Vec::new(),
        next_id: std::sync::atomic::AtomicU64::new(0),
        auto_inc: None,
        virt: None,
    }))
}

/// The FROM clause's tables in order (none for no FROM or `FROM DUAL`). Comma-separated
/// tables are inner joins without ON.
fn from_tables(sel: &ast::Select, env: &Env, c: &mut Compiler) -> Result<Vec<FromTable>, SqlError> {
    let mut out: Vec<FromTable> = Vec::new();
    let mut add = |rel: &ast::TableFactor,
                   left: bool,
                   on: Option<ast::Expr>,
                   out: &mut Vec<FromTable>|
     -> Result<(), SqlError> {
        let unique = |out: &[FromTable], shown: &str| -> Result<(), SqlError> {
            if out.iter().any(|f| {
                f.alias
                    .as_deref()
                    .unwrap_or(&f.table.def.name)
                    .eq_ignore_ascii_case(shown)
            }) {
                return Err(SqlError::new(
                    1066,
                    "42000",
                    format!("Not unique table/alias: '{shown}'"),
                ));
            }
            Ok(())
        };
        match rel {
            ast::TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                ..
            } => {
                // MariaDB's grammar requires the alias: a missing one is a syntax error there
                // (MySQL says 1248).
                let Some(alias) = alias.as_ref().map(|a| a.name.value.clone()) else {
                    return Err(SqlError::syntax("", 1));
                };
                unique(out, &alias)?;
                // A derived table does not see the tables beside it (no LATERAL).
                let inner = Env {
                    db: env.db,
                    lookup: env.lookup,
                    vars: env.vars,
                    outer: None,
                    sql: env.sql,
                    ctes: env.ctes,
                    compile_query: env.compile_query,
                };
                let p = compile_select(subquery, &inner, c)?;
                let table = derived_table(&p, &alias, &[], env)?;
                out.push(FromTable {
                    table,
                    alias: Some(alias),
                    left,
                    on,
                    derived: Some(Box::new(p)),
                    merged: Vec::new(),
                    declared: out.len(),
                });
                Ok(())
            }
            ast::TableFactor::Table { name, alias, .. }
                if name.0.len() == 1 && cte_index(env, name).is_some() =>
            {
                let i = cte_index(env, name).unwrap_or_default();
                let cte = env.ctes[i];
                let shown = alias
                    .as_ref()
                    .map_or(cte.alias.name.value.clone(), |a| a.name.value.clone());
                unique(out, &shown)?;
                // The CTE's query sees only the CTEs defined before it.
                let inner = Env {
                    outer: None,
                    ctes: &env.ctes[..i],
                    ..*env
                };
                let p = compile_select(&cte.query, &inner, c)?;
                let renames: Vec<String> = cte
                    .alias
                    .columns
                    .iter()
                    .map(|c| c.name.value.clone())
                    .collect();
                let table = derived_table(&p, &shown, &renames, env)?;
                out.push(FromTable {
                    table,
                    alias: Some(shown),
                    left,
                    on,
                    derived: Some(Box::new(p)),
                    merged: Vec::new(),
                    declared: out.len(),
                });
                Ok(())
            }
            ast::TableFactor::Table { name, alias, .. } => {
                if name.to_string().eq_ignore_ascii_case("dual") && out.is_empty() {
                    return Ok(());
                }
                let table = env.table_for_select(name)?;
                let alias = alias.as_ref().map(|a| a.name.value.clone());
                let shown = alias.clone().unwrap_or_else(|| table.def.name.clone());
                unique(out, &shown)?;
                out.push(FromTable {
                    table,
                    alias,
                    left,
                    on,
                    derived: None,
                    merged: Vec::new(),
                    declared: out.len(),
                });
                Ok(())
            }
            ast::TableFactor::Derived { .. } => Err(SqlError::unsupported("LATERAL")),
            other => Err(SqlError::unsupported(&format!(
                "FROM {}",
                other.to_string().chars().take(30).collect::<String>()
            ))),
        }
    };
    // Refuse unsupported joins before looking any table up, so that the error names the
    // construct rather than a missing table.
    for j in sel.from.iter().flat_map(|t| &t.joins) {
        join_kind(&j.join_operator)?;
    }
    for twj in &sel.from {
        add(&twj.relation, false, None, &mut out)?;
        for j in &twj.joins {
            let (kind, on, using) = join_kind(&j.join_operator)?;
            if out.is_empty() {
                return Err(SqlError::unsupported("a join with DUAL"));
            }
            let right = kind == JoinKind::Right;
            if right && out.len() > 1 {
                return Err(SqlError::unsupported(
                    "RIGHT JOIN after other joins (write it as a LEFT JOIN)",
                ));
            }
            add(&j.relation, kind == JoinKind::Left, on, &mut out)?;
            let new = out.len() - 1;
            if let Some(cols) = using {
                // USING (c, ...): ON earlier.c = new.c for each, with the earlier table the
                // first one that has the column.
                let name_of = |f: &FromTable| f.alias.clone().unwrap_or(f.table.def.name.clone());
                let mut terms = Vec::new();
                for c in &cols {
                    let earlier = out[..new].iter().find(|f| f.table.column(c).is_some());
                    let (Some(e), true) = (earlier, out[new].table.column(c).is_some()) else {
                        return Err(SqlError::unknown_column(c, "from clause"));
                    };
                    let id = |t: String| {
                        ast::Expr::CompoundIdentifier(vec![ast::Ident::new(t), ast::Ident::new(c)])
                    };
                    terms.push(ast::Expr::BinaryOp {
                        left: Box::new(id(name_of(e))),
                        op: ast::BinaryOperator::Eq,
                        right: Box::new(id(name_of(&out[new]))),
                    });
                }
                out[new].on = terms.into_iter().reduce(|a, b| ast::Expr::BinaryOp {
                    left: Box::new(a),
                    op: ast::BinaryOperator::And,
                    right: Box::new(b),
                });
                out[new].merged = cols;
            }
            if right {
                // a RIGHT JOIN b ON c runs as b LEFT JOIN a ON c; SELECT * keeps a's columns
                // first (`declared`), and USING columns are b's.
                out.swap(0, 1);
                let (first, second) = out.split_at_mut(1);
                let (b, a) = (&mut first[0], &mut second[0]);
                a.on = b.on.take();
                a.left = true;
                b.left = false;
                a.merged = std::mem::take(&mut b.merged);
                if !a.merged.is_empty() {
                    // With USING, MariaDB lists the right table's columns first.
                    std::mem::swap(&mut a.declared, &mut b.declared);
                }
            }
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JoinKind {
    Inner,
    Left,
    Right,
}

/// A join's kind, its ON condition and its USING columns; unsupported kinds are refused.
fn join_kind(
    op: &ast::JoinOperator,
) -> Result<(JoinKind, Option<ast::Expr>, Option<Vec<String>>), SqlError> {
    use ast::JoinOperator as J;
    let (kind, c) = match op {
        J::Join(c) | J::Inner(c) | J::CrossJoin(c) | J::StraightJoin(c) => (JoinKind::Inner, c),
        J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
        J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
        other => {
            return Err(SqlError::unsupported(&format!(
                "join {}",
                format!("{other:?}").chars().take(20).collect::<String>()
            )))
        }
    };
    Ok(match c {
        ast::JoinConstraint::On(e) => (kind, Some(e.clone()), None),
        ast::JoinConstraint::None => (kind, None, None),
        ast::JoinConstraint::Using(cols) => {
            let names = cols
                .iter()
                .map(|n| {
                    n.0.last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.clone())
                        .unwrap_or_default()
                })
                .collect();
            (kind, None, Some(names))
        }
        ast::JoinConstraint::Natural => return Err(SqlError::unsupported("NATURAL JOIN")),
    })
}

/// `SELECT *` (or `t.*`) columns of one table.
fn expand_star(it: &FromItem, outs: &mut Vec<(String, ast::Expr, Option<usize>)>) {
    for (i, col) in it.table.def.columns.iter().enumerate() {
        if outs.iter().any(|o| o.2 == Some(it.offset + i))
            || it.merged.iter().any(|m| m.eq_ignore_ascii_case(&col.name))
        {
            continue;
        }
        outs.push((
            col.name.clone(),
            ast::Expr::Identifier(ast::Ident::new(col.name.clone())),
            Some(it.offset + i),
        ));
    }
}

/// A select item's text as written in `sql` (MySQL labels an unnamed result column so).
/// The parser's position for an expression can start inside it (at `x` in `-x` or
/// `CAST(x AS CHAR)`), so the item is found in the tokens around that position: back to the
/// comma or SELECT keyword before it, forward to the comma, keyword or parenthesis that ends
/// it at its nesting level. `None` when the parser gave no position.
#[cfg(test)]
fn source_label(sql: &str, e: &ast::Expr) -> Option<String> {
    SourceLabels::new(sql)?.label(e)
}

/// The text of a statement, tokenized once, for labelling its unnamed select items: a
/// statement with thousands of them (generated SQL) costs one tokenization, not one each.
struct SourceLabels<'a> {
    sql: &'a str,
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
    /// Byte offset of each line's start, and whether the line is ASCII (columns are bytes).
    lines: Vec<(usize, bool)>,
}

impl<'a> SourceLabels<'a> {
    fn new(sql: &'a str) -> Option<SourceLabels<'a>> {
        let dialect = sqlparser::dialect::MySqlDialect {};
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql)
            .tokenize_with_location()
            .ok()?;
        let mut lines = Vec::new();
        let mut at = 0;
        for l in sql.split_inclusive('\n') {
            lines.push((at, l.is_ascii()));
            at += l.len();
        }
        Some(SourceLabels { sql, tokens, lines })
    }

    /// Byte offset of a location (lines and columns count characters from 1).
    fn offset(&self, loc: sqlparser::tokenizer::Location) -> Option<usize> {
        let sql = self.sql;
        let &(line_at, ascii) = self.lines.get(loc.line.checked_sub(1)? as usize)?;
        let col = loc.column.checked_sub(1)? as usize;
        if ascii {
            return Some((line_at + col).min(sql.len()));
        }
        Some(
            line_at
                + sql[line_at..]
                    .char_indices()
                    .nth(col)
                    .map_or(sql.len() - line_at, |(i, _)| i),
        )
    }

    /// The text of the select item `e`, as written.
    fn label(&self, e: &ast::Expr) -> Option<String> {
        use sqlparser::ast::Spanned;
        use sqlparser::tokenizer::Token;
        let sql = self.sql;
        let tokens = &self.tokens;
        let start = e.span().start;
        if start.line == 0 || start.column == 0 {
            return None;
        }
        // Tokens are in text order.
        let key =
            |t: &sqlparser::tokenizer::TokenWithSpan| (t.span.start.line, t.span.start.column);
        let mut at = tokens.partition_point(|t| key(t) < (start.line, start.column));
        // Empty tokens (EOF) share a place with others: the first real one at `start`.
        while tokens
            .get(at)
            .is_some_and(|t| t.span.start == start && matches!(t.token, Token::Whitespace(_)))
        {
            at += 1;
        }
        if tokens.get(at).is_none_or(|t| t.span.start != start) {
            return None;
        }
        let word = |t: &Token, set: &[&str]| match t {
            Token::Word(w) if w.quote_style.is_none() => {
                set.contains(&w.value.to_ascii_uppercase().as_str())
            }
            _ => false,
        };
        const BEFORE: &[&str] = &[
            "SELECT",
            "DISTINCT",
            "DISTINCTROW",
            "ALL",
            "HIGH_PRIORITY",
            "STRAIGHT_JOIN",
            "SQL_SMALL_RESULT",
            "SQL_BIG_RESULT",
            "SQL_BUFFER_RESULT",
            "SQL_CACHE",
            "SQL_NO_CACHE",
            "SQL_CALC_FOUND_ROWS",
        ];
        const AFTER: &[&str] = &[
            "FROM",
            "INTO",
            "WHERE",
            "GROUP",
            "HAVING",
            "ORDER",
            "LIMIT",
            "UNION",
            "INTERSECT",
            "EXCEPT",
            "FOR",
            "LOCK",
            "WINDOW",
        ];
        let mut first = at;
        while first > 0 {
            let t = &tokens[first - 1].token;
            if matches!(t, Token::Comma) || word(t, BEFORE) {
                break;
            }
            first -= 1;
        }
        while matches!(tokens[first].token, Token::Whitespace(_)) && first < at {
            first += 1;
        }
        let mut depth = 0usize;
        let mut last = tokens.len();
        for (i, t) in tokens.iter().enumerate().skip(first) {
            let stop = match &t.token {
                Token::LParen => {
                    depth += 1;
                    false
                }
                Token::RParen if depth == 0 => true,
                Token::RParen => {
                    depth -= 1;
                    false
                }
                Token::Comma | Token::SemiColon | Token::EOF => depth == 0,
                t => depth == 0 && word(t, AFTER),
            };
            if stop {
                last = i;
                break;
            }
        }
        let from = self.offset(tokens[first].span.start)?;
        let to = match tokens.get(last) {
            Some(t) => self.offset(t.span.start)?,
            None => sql.len(),
        };
        let label = sql.get(from..to)?.trim_end();
        (!label.is_empty()).then(|| label.to_string())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels of a statement's unnamed select items, as `source_label` finds them.
    fn labels(sql: &str) -> Vec<String> {
        let stmts = crate::front::parse::parse_ast(sql).expect("parses");
        let ast::Statement::Query(q) = &stmts[0] else {
            panic!("not a query: {sql}");
        };
        let ast::SetExpr::Select(sel) = &*q.body else {
            panic!("not a plain SELECT: {sql}");
        };
        sel.projection
            .iter()
            .map(|it| match it {
                ast::SelectItem::UnnamedExpr(e) => {
                    source_label(sql, e).unwrap_or_else(|| format!("<none: {e}>"))
                }
                other => format!("<{other}>"),
            })
            .collect()
    }

    #[test]
    fn unnamed_columns_are_labelled_with_their_text_as_written() {
        assert_eq!(
            labels("select x+1, -x, - x ,count(*), CAST(x as char), (select 1), not x from t"),
            [
                "x+1",
                "-x",
                "- x",
                "count(*)",
                "CAST(x as char)",
                "(select 1)",
                "not x"
            ]
        );
        // Modifiers before the first item, strings with commas and parentheses, comments,
        // several lines, a trailing ORDER BY and a nested subquery's own FROM.
        assert_eq!(
            labels(
                "SELECT DISTINCT concat(s, ',)'),\n  y  *  2 /* c */ , (SELECT a FROM u WHERE b)\n\
                 FROM t ORDER BY 1"
            ),
            [
                "concat(s, ',)')",
                "y  *  2 /* c */",
                "(SELECT a FROM u WHERE b)"
            ]
        );
        // Multi-byte characters before the item: positions count characters.
        assert_eq!(labels("select 'é', upper('ü')"), ["'é'", "upper('ü')"]);
        // The second statement of a multi-statement text.
        let sql = "select 1; select a  +  b from t";
        let stmts = crate::front::parse::parse_ast(sql).expect("parses");
        let ast::Statement::Query(q) = &stmts[1] else {
            panic!("query");
        };
        let ast::SetExpr::Select(sel) = &*q.body else {
            panic!("select");
        };
        let ast::SelectItem::UnnamedExpr(e) = &sel.projection[0] else {
            panic!("item");
        };
        assert_eq!(source_label(sql, e).as_deref(), Some("a  +  b"));
    }
}
