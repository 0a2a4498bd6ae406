//! The clauses of a flat SELECT (one query block over its FROM tables) bound to expressions:
//! the select list with `*` expanded, WHERE, the ON clauses, GROUP BY, the aggregates,
//! HAVING, ORDER BY and LIMIT. Used by block.rs, which builds the LogicalPlan over them.

use sqlparser::ast;

use crate::bind::agg_scope::AggScope;
use crate::bind::compile::Compiler;
use crate::bind::env::{Env, FromItem};
use crate::bind::scope::{joined_column_meta, joined_types, FromScope};
use crate::error::ErrorKind;
use crate::expr::Expr;
use crate::plan::select::AggSpec;
use crate::types::result::ColumnMeta;
use crate::types::sqltype::SqlType;
use crate::SqlError;

use super::clauses::{is_aggregate_call, limit_items, order_items};
use super::from::{expand_star, FromTable};

/// A query block's clauses as expressions. `outputs` are over the joined row, or with
/// `group_by` over the group row (the group's values, then the aggregates').
pub(super) struct Bound {
    /// WHERE, over the joined row.
    pub(super) filter: Option<Expr>,
    /// Each FROM table's ON clause, over the tables joined up to it.
    pub(super) ons: Vec<Option<Expr>>,
    /// The select list's width: `outputs` after it are the ORDER BY keys.
    pub(super) visible: usize,
    pub(super) outputs: Vec<Expr>,
    pub(super) metas: Vec<ColumnMeta>,
    /// The types of the select list's columns.
    pub(super) out_types: Vec<SqlType>,
    pub(super) group_by: Option<(Vec<Expr>, Vec<AggSpec>)>,
    /// GROUP BY items as written (the names of the group row's first columns).
    pub(super) group_labels: Vec<String>,
    pub(super) having: Option<Expr>,
    /// One per ORDER BY key: descending.
    pub(super) order_desc: Vec<bool>,
    pub(super) limit: Option<Expr>,
    pub(super) offset: Option<Expr>,
    /// Some clause compiled a subquery.
    pub(super) has_sub: bool,
}

pub(super) fn bind_clauses(
    q: &ast::Query,
    sel: &ast::Select,
    env: &Env,
    c: &mut Compiler,
    from: &[FromTable],
    items: &[FromItem],
) -> Result<Bound, SqlError> {
    let vars = env.vars;
    let subs_before = c.subquery_count();
    let scope = |clause: &'static str, visible: usize| FromScope {
        items,
        visible,
        clause,
        vars,
        env: Some(env),
    };
    let all = items.len();
    // Projection items: (label, AST, joined-row column for `*`), with `*` expanded.
    let mut outs: Vec<(String, ast::Expr, Option<usize>)> = Vec::new();
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
                        .and_then(|sql| sql.label(other))
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
                for it in items {
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
        // A NOT NULL DATE's zero date IS NULL in it: the plan pass `zero_dates_are_null`.
        Some(w) => Some(c.compile(w, &mut scope("where clause", all))?),
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
    let types = joined_types(items);
    let mut outputs = Vec::new();
    let mut metas = Vec::new();
    let mut out_types = Vec::new();
    let mut group_by = None;
    let mut having = None;
    let mut group_labels = Vec::new();
    if aggregate {
        let mut ascope = AggScope {
            from: items,
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
            metas.push(meta_for(&x, label, items, &ascope.group_by, ty));
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
        group_labels = ascope.group_by.into_iter().map(|(l, _)| l).collect();
        group_by = Some((gkeys, ascope.aggs));
    } else {
        for (label, e, star) in &outs {
            let x = match star {
                Some(i) => Expr::Col(*i),
                None => c.compile(e, &mut scope("field list", all))?,
            };
            let meta = match &x {
                Expr::Col(i) => joined_column_meta(items, *i, label),
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
    Ok(Bound {
        filter,
        ons,
        visible: outs.len(),
        outputs,
        metas,
        out_types,
        group_by,
        group_labels,
        having,
        order_desc: order.iter().map(|(_, d)| *d).collect(),
        limit,
        offset,
        has_sub: c.subquery_count() > subs_before,
    })
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
