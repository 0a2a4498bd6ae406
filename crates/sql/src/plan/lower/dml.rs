//! From a DML statement's [`LogicalPlan`] to the plan the executor runs (issue 20, D3).
//! UPDATE/DELETE: the passes that apply to one table (`plan::rules::pipeline::optimize`: the
//! zero-dates rewrite of the WHERE and the target's access path) decide, then this translates
//! the shape the binder builds (bind/dml.rs): Update/Delete → Limit? → Sort? → Filter (WHERE)?
//! → Scan of the target. The executor sorts and limits the rows itself (exec/dml.rs), so a
//! Sort here is never satisfied by the scan. INSERT: the source's query block (INSERT …
//! SELECT) goes through the passes as a SELECT's and lowers as one; VALUES rows move into the
//! executable plan as they are. Any other shape is a bug: an internal error.

use crate::error::SqlError;
use crate::expr::Expr;
use crate::plan::access::Access;
use crate::plan::dml::{DeletePlan, InsertPlan, UpdatePlan};
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::pipeline::optimize;

use super::from::cannot;

/// The optimized plan of an INSERT (a [`LogicalPlan::Insert`]).
pub(crate) fn lower_insert(plan: LogicalPlan) -> Result<InsertPlan, SqlError> {
    let LogicalPlan::Insert {
        table,
        columns,
        source,
        source_meta,
        mode,
        on_dup,
    } = optimize(plan)?
    else {
        return Err(cannot("an INSERT that is no Insert node"));
    };
    let (rows, select) = match (*source, source_meta) {
        (LogicalPlan::Values { rows, .. }, None) => (rows, None),
        (LogicalPlan::Compiled { plan, .. }, None) => (Vec::new(), Some(plan)),
        (block, Some(m)) => {
            let p = super::block::lower_block(block, m.columns, m.has_sub)?;
            (Vec::new(), Some(Box::new(p)))
        }
        _ => return Err(cannot("an INSERT source without its block's metadata")),
    };
    Ok(InsertPlan {
        table,
        columns,
        rows,
        select,
        mode,
        on_dup,
    })
}

/// The optimized plan of an UPDATE (a [`LogicalPlan::Update`]).
pub(crate) fn lower_update(plan: LogicalPlan) -> Result<UpdatePlan, SqlError> {
    match optimize(plan)? {
        LogicalPlan::Update {
            table,
            source,
            set,
            ignore,
        } => {
            let s = lower_source(*source)?;
            Ok(UpdatePlan {
                table,
                access: s.access,
                filter: s.filter,
                assignments: set,
                order: s.order,
                limit: s.limit,
                ignore,
            })
        }
        _ => Err(cannot("an UPDATE that is no Update node")),
    }
}

/// The optimized plan of a DELETE (a [`LogicalPlan::Delete`]).
pub(crate) fn lower_delete(plan: LogicalPlan) -> Result<DeletePlan, SqlError> {
    match optimize(plan)? {
        LogicalPlan::Delete { table, source } => {
            let s = lower_source(*source)?;
            Ok(DeletePlan {
                table,
                access: s.access,
                filter: s.filter,
                order: s.order,
                limit: s.limit,
            })
        }
        _ => Err(cannot("a DELETE that is no Delete node")),
    }
}

struct Source {
    access: Access,
    filter: Option<Expr>,
    order: Vec<(Expr, bool)>,
    limit: Option<Expr>,
}

fn lower_source(mut node: LogicalPlan) -> Result<Source, SqlError> {
    let mut limit = None;
    if let LogicalPlan::Limit {
        input,
        offset: None,
        fetch,
    } = node
    {
        limit = fetch;
        node = *input;
    }
    let mut order = Vec::new();
    if let LogicalPlan::Sort { input, keys, .. } = node {
        order = keys.into_iter().map(|k| (k.expr, k.desc)).collect();
        node = *input;
    }
    let mut filter = None;
    if let LogicalPlan::Filter { input, predicate } = node {
        filter = Some(predicate);
        node = *input;
    }
    match node {
        LogicalPlan::Scan { access, .. } => Ok(Source {
            access,
            filter,
            order,
            limit,
        }),
        _ => Err(cannot(
            "a DML source that is not Limit? → Sort? → Filter? → Scan",
        )),
    }
}
