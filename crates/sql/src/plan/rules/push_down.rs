//! `push_down_filters`: where a block's WHERE terms and an inner join's constant ON terms
//! are checked.

use crate::error::SqlError;
use crate::expr::eval::columns_of;
use crate::expr::Expr;
use crate::plan::logical::node::{JoinKind, LogicalPlan};
use crate::plan::rules::shape::{and_all, block, is_leaf, terms_of};

/// Places a joined block's WHERE terms as early as they can be checked: a term goes to the
/// last table it reads (a constant one to the first). The first table's terms become a
/// Filter directly above it (they filter, and may bound, its scan); a later table's join into
/// the inner join's ON (they decide the match and may bound a lookup); for a LEFT JOIN they
/// stay a Filter directly above that join, checked after NULL extension, since below it they
/// would turn rows without a match into missing rows. An inner join's ON terms that read no
/// row are the whole query's, like WHERE terms: they go to the first table's Filter, which
/// decides them once before reading. A LEFT JOIN's ON keeps all its terms. A block of one
/// table (or none) is left as it is. Idempotent: a FROM side already placed is not a Filter
/// over a tree of Joins over tables.
pub(crate) fn push_down_filters(plan: &mut LogicalPlan) -> Result<(), SqlError> {
    let Some(b) = block(plan) else {
        return Ok(());
    };
    let (filter, top) = match &*b.from {
        LogicalPlan::Filter { input, predicate } => (Some(predicate), &**input),
        other => (None, other),
    };
    if !matches!(top, LogicalPlan::Join { .. }) || !joins_of_leaves(top) {
        return Ok(());
    }
    let filter = filter.cloned();
    let from = std::mem::replace(b.from, LogicalPlan::OneRow);
    let from = match from {
        LogicalPlan::Filter { input, .. } => *input,
        other => other,
    };
    let mut steps = Vec::new();
    let first = flatten(from, &mut steps);
    let n = steps.len() + 1;
    let mut offsets = vec![0];
    let mut width = first.schema().width();
    for s in &steps {
        offsets.push(width);
        width += s.right.schema().width();
    }
    let table_of = |col: usize| offsets.iter().rposition(|&o| o <= col).unwrap_or(0);
    let mut base: Vec<Expr> = Vec::new();
    let mut at: Vec<Vec<Expr>> = vec![Vec::new(); n];
    for x in filter.iter().flat_map(terms_of) {
        let last = columns_of(&x, width).last().map_or(0, |&c| table_of(c));
        if last == 0 {
            base.push(x);
        } else {
            at[last].push(x);
        }
    }
    let mut ons: Vec<Option<Expr>> = Vec::with_capacity(steps.len());
    for s in &mut steps {
        let on = s.on.take();
        ons.push(match (s.kind, on) {
            (JoinKind::Inner, Some(on)) => {
                let (fixed, rest): (Vec<Expr>, Vec<Expr>) =
                    terms_of(&on).into_iter().partition(Expr::row_independent);
                base.extend(fixed);
                and_all(rest)
            }
            (_, on) => on,
        });
    }
    let mut node = first;
    if let Some(f) = and_all(base) {
        node = LogicalPlan::filter(node, f)?;
    }
    for (k, (s, on)) in steps.into_iter().zip(ons).enumerate() {
        let mut terms = on.as_ref().map(terms_of).unwrap_or_default();
        let mut after = std::mem::take(&mut at[k + 1]);
        if s.kind == JoinKind::Inner {
            terms.append(&mut after);
        }
        node = LogicalPlan::Join {
            left: Box::new(node),
            right: Box::new(s.right),
            kind: s.kind,
            on: and_all(terms),
            method: None,
            schema: s.schema,
        };
        if let Some(a) = and_all(after) {
            node = LogicalPlan::filter(node, a)?;
        }
    }
    *b.from = node;
    Ok(())
}

/// One join of a left-deep tree: its right input and what the Join node held.
struct Step {
    right: LogicalPlan,
    kind: JoinKind,
    on: Option<Expr>,
    schema: crate::plan::logical::node::Schema,
}

/// A left-deep tree of Joins whose right inputs are tables.
fn joins_of_leaves(p: &LogicalPlan) -> bool {
    match p {
        LogicalPlan::Join {
            left,
            right,
            method: None,
            ..
        } => is_leaf(right) && joins_of_leaves(left),
        other => is_leaf(other),
    }
}

/// The first table; `steps` gets the joins, left to right.
fn flatten(p: LogicalPlan, steps: &mut Vec<Step>) -> LogicalPlan {
    match p {
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            schema,
            ..
        } => {
            let first = flatten(*left, steps);
            steps.push(Step {
                right: *right,
                kind,
                on,
                schema,
            });
            first
        }
        leaf => leaf,
    }
}
