//! SELECT: from the parser's AST to a [`SelectPlan`], through a [`LogicalPlan`]
//! (`crate::plan::logical`): a query block binds to one in `block` (its FROM clause in
//! `from`, its clauses in `front`), a set operation in `union`; `plan::lower` turns it into
//! the `SelectPlan` that runs. Those files compile the queries they hold (derived tables, set
//! operands, subqueries) through [`Env::compile_query`], not by naming [`compile_select`]:
//! they do not import this file, which imports them.
//!
//! [`LogicalPlan`]: crate::plan::logical::node::LogicalPlan

mod block;
mod clauses;
mod from;
mod front;
mod union;

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::env::Env;
use crate::plan::logical::node::{BlockMeta, LogicalPlan};
use crate::plan::lower::{lower, lower_optimized};
use crate::plan::rules::pipeline::optimize;
use crate::plan::select::SelectPlan;
use crate::SqlError;

use self::from::{from_tables, Query};

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
    let from = from_tables(sel, env, c, &bind_query)?;
    let lock = block::lock(&from, for_update(q));
    block::compile_block(q, sel, env, c, from, lock)
}

/// A set operation (or a parenthesized query with its own ORDER BY/LIMIT and one outside):
/// SetOp nodes over its operands' plans, lowered.
fn compile_set(q: &ast::Query, env: &Env, c: &mut Compiler) -> Result<SelectPlan, SqlError> {
    union::plan_union(q, env, c).and_then(|(p, cols, sub)| lower(p, cols, sub))
}

/// A plain query block or set operation (under its WITH) bound to a LogicalPlan and
/// optimized, `alter` applied to the optimized plan (tests change plans there; EXPLAIN
/// FORMAT=TREE keeps a copy: the tree it prints is the plan translated, optimized once), then
/// lowered. `None` when its FROM clause fails (the statement's error) or it is no SELECT.
pub(crate) fn bind_and_lower(
    q: &ast::Query,
    env: &Env,
    c: &mut Compiler,
    alter: &dyn Fn(&mut LogicalPlan),
) -> Option<Result<SelectPlan, SqlError>> {
    let finish = |p: LogicalPlan, cols, sub| {
        let mut p = optimize(p)?;
        alter(&mut p);
        lower_optimized(p, cols, sub)
    };
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
        return bind_and_lower(&rest, &inner, c, alter);
    }
    let sel = match &*q.body {
        ast::SetExpr::Select(sel) => sel,
        // As `compile_select` routes a parenthesized query.
        ast::SetExpr::Query(inner) if q.order_by.is_none() && q.limit_clause.is_none() => {
            return bind_and_lower(inner, env, c, alter);
        }
        ast::SetExpr::Query(inner) if inner.order_by.is_none() && inner.limit_clause.is_none() => {
            let mut x = (**inner).clone();
            x.order_by.clone_from(&q.order_by);
            x.limit_clause.clone_from(&q.limit_clause);
            return bind_and_lower(&x, env, c, alter);
        }
        ast::SetExpr::SetOperation { .. } | ast::SetExpr::Query(_) => {
            return Some(
                union::plan_union(q, env, c).and_then(|(p, cols, sub)| finish(p, cols, sub)),
            );
        }
        _ => return None,
    };
    let from = from_tables(sel, env, c, &bind_query).ok()?;
    let lock = block::lock(&from, for_update(q));
    Some(
        block::plan_block(q, sel, env, c, from, lock)
            .and_then(|(p, cols, sub)| finish(p, cols, sub)),
    )
}

/// INSERT … SELECT's query, not yet optimized: a query block as its LogicalPlan with its
/// metadata (the statement's passes optimize it), anything else (a set operation, a
/// parenthesized query) lowered on its own and held as a Compiled node, as a derived
/// table's query is.
pub(crate) fn bind_insert_source(
    q: &ast::Query,
    env: &Env,
    c: &mut Compiler,
) -> Result<(LogicalPlan, Option<BlockMeta>), SqlError> {
    Ok(match bind_query(q, env, c)? {
        Query::Lowered(p) => (LogicalPlan::compiled(*p), None),
        Query::New(p, meta) => (p, Some(meta)),
    })
}

fn for_update(q: &ast::Query) -> bool {
    q.locks
        .iter()
        .any(|l| matches!(l.lock_type, ast::LockType::Update))
}

/// A derived table's or CTE's query: a block binds to a LogicalPlan (lowered with the block
/// that reads it); a set operation or a parenthesized query is lowered on its own and held
/// as a Compiled node (its operands have no `BlockMeta` of their own in a SetOp yet).
fn bind_query(q: &ast::Query, env: &Env, c: &mut Compiler) -> Result<Query, SqlError> {
    let lowered = |c: &mut Compiler| compile_select(q, env, c).map(|p| Query::Lowered(Box::new(p)));
    if let Some(with) = &q.with {
        if with.recursive {
            return lowered(c);
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
        return lowered(c);
    };
    let from = from_tables(sel, env, c, &bind_query)?;
    let lock = block::lock(&from, for_update(q));
    let (plan, columns, has_sub) = block::plan_block(q, sel, env, c, from, lock)?;
    Ok(Query::New(plan, BlockMeta { columns, has_sub }))
}
