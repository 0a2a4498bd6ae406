//! The FROM side of a query block's lowering (issue 20, D1c, D2): a left-deep tree of Joins
//! over Scans and Deriveds, as the passes of `plan::rules` left it, becomes the first table's
//! scan and one `JoinStep` per further table. Mechanical: the Filter directly over the first
//! table is its filter, a Filter directly over a Join that step's `after`; each Scan's access
//! path and columns, each Join's ON and method are taken as the passes decided them.

use std::sync::Arc;

use crate::catalog::Table;
use crate::error::SqlError;
use crate::expr::Expr;
use crate::plan::access::Access;
use crate::plan::logical::node::{BlockMeta, JoinKind, LogicalPlan};
use crate::plan::select::{JoinMethod, JoinStep, SelectPlan};

/// A plan the binder and the passes cannot have built: an internal error.
pub(super) fn cannot(detail: &str) -> SqlError {
    SqlError::internal(format!("cannot lower this logical plan: {detail}"))
}

/// One table of the block, in join order.
struct Leaf {
    table: Arc<Table>,
    /// A derived table's (or CTE use's) query, lowered.
    derived: Option<Box<SelectPlan>>,
    access: Access,
    /// The table's columns the block reads.
    read: Vec<usize>,
    for_update: bool,
    /// Joined to the tables before it by LEFT JOIN.
    left: bool,
    /// Its join's match condition, over the joined row up to this table.
    on: Option<Expr>,
    /// The WHERE terms checked after its LEFT JOIN's NULL extension.
    after: Option<Expr>,
    method: Option<Box<JoinMethod>>,
}

type LowerDerived<'a> = dyn Fn(LogicalPlan, Option<BlockMeta>) -> Result<SelectPlan, SqlError> + 'a;

/// What the FROM side gives the `SelectPlan`.
pub(super) struct Lowered {
    pub(super) table: Option<Arc<Table>>,
    pub(super) access: Access,
    /// The terms the first table's rows are read with (all of WHERE for one table).
    pub(super) filter: Option<Expr>,
    pub(super) wanted: Vec<bool>,
    pub(super) joins: Vec<JoinStep>,
    pub(super) derived: Option<Box<SelectPlan>>,
    pub(super) for_update: bool,
}

/// `node`: the FROM side with its filters (OneRow, possibly under a Filter, for a block
/// without tables); `derived` lowers a derived table's query.
pub(super) fn lower_from(node: LogicalPlan, derived: &LowerDerived) -> Result<Lowered, SqlError> {
    let mut leaves = Vec::new();
    let mut filter = None;
    collect(node, derived, &mut leaves, &mut filter)?;
    let for_update = leaves.iter().any(|l| l.for_update);
    let mut leaves = leaves.into_iter();
    let Some(first) = leaves.next() else {
        return Ok(Lowered {
            table: None,
            access: Access::None,
            filter,
            wanted: Vec::new(),
            joins: Vec::new(),
            derived: None,
            for_update,
        });
    };
    let wanted_of = |l: &Leaf| {
        let mut w = vec![false; l.table.types.len()];
        l.read.iter().for_each(|&c| w[c] = true);
        w
    };
    let mut offset = first.table.types.len();
    let mut joins = Vec::new();
    for l in leaves {
        let wanted = wanted_of(&l);
        let w = l.table.types.len();
        joins.push(JoinStep {
            method: *l.method.ok_or_else(|| cannot("a join without a method"))?,
            derived: l.derived,
            table: l.table,
            offset,
            left: l.left,
            on: l.on,
            after: l.after,
            wanted,
        });
        offset += w;
    }
    Ok(Lowered {
        wanted: wanted_of(&first),
        access: first.access,
        table: Some(first.table),
        filter,
        joins,
        derived: first.derived,
        for_update,
    })
}

fn collect(
    node: LogicalPlan,
    derived: &LowerDerived,
    out: &mut Vec<Leaf>,
    filter: &mut Option<Expr>,
) -> Result<(), SqlError> {
    let leaf = |table, derived, access, read, for_update| Leaf {
        table,
        derived,
        access,
        read,
        for_update,
        left: false,
        on: None,
        after: None,
        method: None,
    };
    match node {
        LogicalPlan::Filter { input, predicate } => match *input {
            LogicalPlan::Join { .. } => {
                collect(*input, derived, out, filter)?;
                match out.last_mut() {
                    Some(last) if last.after.is_none() => last.after = Some(predicate),
                    _ => return Err(cannot("two Filters over a Join")),
                }
            }
            first if out.is_empty() && filter.is_none() => {
                *filter = Some(predicate);
                collect(first, derived, out, filter)?;
            }
            _ => return Err(cannot("a Filter over a joined table")),
        },
        LogicalPlan::OneRow if out.is_empty() => {}
        LogicalPlan::Scan {
            table,
            columns,
            access,
            for_update,
            ..
        } => out.push(leaf(table, None, access, columns, for_update)),
        LogicalPlan::Derived {
            input,
            table,
            columns,
            meta,
            ..
        } => {
            let plan = Box::new(derived(*input, meta)?);
            out.push(leaf(table, Some(plan), Access::Full, columns, false));
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            method,
            ..
        } => {
            collect(*left, derived, out, filter)?;
            // One table at a time: the right input is one table.
            if !matches!(
                *right,
                LogicalPlan::Scan { .. } | LogicalPlan::Derived { .. }
            ) {
                return Err(cannot("a join's right input is not one table"));
            }
            collect(*right, derived, out, filter)?;
            if let Some(last) = out.last_mut() {
                last.left = kind == JoinKind::Left;
                last.on = on;
                last.method = method;
            }
        }
        _ => return Err(cannot("the FROM side is not Joins over Scans and Deriveds")),
    }
    Ok(())
}
