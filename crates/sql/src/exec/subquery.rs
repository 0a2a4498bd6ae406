//! Subqueries of a running plan: [`SubCtx`] resolves an expression's [`SubqueryId`] in the
//! statement's table (`PlanRoot::subqueries`), runs the plan, and keeps what a plan run
//! computes once: the rows of uncorrelated subqueries and the hash indexes of uncorrelated IN
//! subqueries' values, both by id. UPDATE/DELETE run theirs ahead ([`prefill`]).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use zipdb_engine::Transaction;

use crate::error::{ErrorKind, SqlError};
use crate::exec::locked::Locked;
use crate::exec::op::sort_spill::SPILL_ROOM;
use crate::exec::operator::{collect_up_to, for_each_row};
use crate::expr::{Cmp, Ctx, Expr, SubKind, SubqueryId, SubqueryRef, SubqueryRunner};
use crate::plan::select::{SelectPlan, Subquery};
use crate::types::value::Value;

/// What subqueries of a running plan share: the statement's table of subqueries, the
/// transaction, and the rows of the uncorrelated ones (computed once per plan run, on first
/// use).
pub struct SubCtx<'a> {
    /// The statement's subqueries, indexed by [`SubqueryId`].
    pub subs: &'a [Subquery],
    /// `None` once every subquery has been run ahead (UPDATE/DELETE, which then write
    /// through the transaction exclusively).
    pub txn: Option<&'a Transaction>,
    pub cache: std::cell::RefCell<HashMap<SubqueryId, Rc<Vec<Vec<Value>>>>>,
    /// Hash indexes of uncorrelated IN subqueries' values, built on first use.
    pub in_index: std::cell::RefCell<HashMap<SubqueryId, Rc<Option<InIndex>>>>,
    /// Uncorrelated IN and ANY/ALL subqueries whose rows did not fit in the statement's
    /// budget: run per outer row instead, streamed, as correlated ones are.
    pub streamed: std::cell::RefCell<HashSet<SubqueryId>>,
}

impl<'a> SubCtx<'a> {
    /// A plan run's subqueries, read through `txn` (shared while the plan scans).
    pub fn new(subs: &'a [Subquery], txn: &'a Transaction) -> SubCtx<'a> {
        SubCtx {
            subs,
            txn: Some(txn),
            cache: Default::default(),
            in_index: Default::default(),
            streamed: Default::default(),
        }
    }
}

/// The values of an IN subquery hashed for membership tests: only when every non-NULL value
/// hashes in one class, so that a probe of that class that misses means no equal value.
pub struct InIndex {
    class: crate::plan::join::KeyClass,
    buckets: HashMap<crate::exec::hash::HashPart, Vec<usize>>,
    has_null: bool,
}

impl InIndex {
    fn build(rows: &[Vec<Value>]) -> Option<InIndex> {
        let mut class = None;
        let mut buckets: HashMap<crate::exec::hash::HashPart, Vec<usize>> = HashMap::new();
        let mut has_null = false;
        for (i, r) in rows.iter().enumerate() {
            let v = r.first()?;
            let Some(c) = crate::exec::hash::value_class(v) else {
                has_null = true;
                continue;
            };
            if *class.get_or_insert(c) != c {
                return None;
            }
            match crate::exec::hash::hash_part(v, c) {
                Ok(Some(p)) => buckets.entry(p).or_default().push(i),
                _ => return None,
            }
        }
        Some(InIndex {
            class: class?,
            buckets,
            has_null,
        })
    }
}

/// Rows a subquery of `kind` reads at most: EXISTS needs one, a scalar subquery two (the
/// second is an error), IN and ANY/ALL every one.
fn rows_needed(kind: &SubKind) -> usize {
    match kind {
        SubKind::Exists(_) => 1,
        SubKind::Scalar => 2,
        SubKind::In(..) | SubKind::Quantified(..) => usize::MAX,
    }
}

/// The plan of subquery `id` in the statement's table.
fn plan_of(subs: &[Subquery], id: SubqueryId) -> Result<&SelectPlan, SqlError> {
    subs.get(id.0)
        .map(|s| &s.plan)
        .ok_or_else(|| SqlError::internal("a subquery id outside the statement's table"))
}

/// Runs every (uncorrelated) subquery in `exprs` once through a shared borrow of `txn`, and
/// returns a [`SubCtx`] holding their rows and no transaction, for statements that go on to
/// write through `txn` (UPDATE/DELETE). `None` when there are no subqueries.
pub fn prefill<'a>(
    exprs: &[&Expr],
    subs: &'a [Subquery],
    txn: &Transaction,
    ctx: &Ctx,
) -> Result<Option<SubCtx<'a>>, SqlError> {
    let mut refs: Vec<(SubqueryRef, usize)> = Vec::new();
    for e in exprs {
        e.visit(&mut |x| {
            if let Expr::Subquery(sub, kind) = x {
                refs.push(((**sub).clone(), rows_needed(kind)));
            }
        });
    }
    if refs.is_empty() {
        return Ok(None);
    }
    let mut cache = HashMap::new();
    for (sub, max) in refs {
        debug_assert!(
            sub.outer_cols.is_empty(),
            "a correlated subquery in UPDATE/DELETE"
        );
        // Its own subqueries get a cache of their own per run.
        let own = SubCtx::new(subs, txn);
        let inner = Ctx {
            sub: Some(&own),
            ..*ctx
        };
        let none = Locked::default();
        let rows = collect_up_to(plan_of(subs, sub.id)?, Some(txn), &inner, subs, &none, max)?;
        cache.insert(sub.id, Rc::new(rows));
    }
    Ok(Some(SubCtx {
        subs,
        txn: None,
        cache: std::cell::RefCell::new(cache),
        in_index: Default::default(),
        streamed: Default::default(),
    }))
}

impl SubqueryRunner for SubCtx<'_> {
    fn eval(
        &self,
        sub: &SubqueryRef,
        kind: &SubKind,
        row: &[Value],
        ctx: &Ctx,
    ) -> Result<Value, SqlError> {
        eval_subquery(self, sub, kind, row, ctx)
    }
}

/// Evaluates a subquery expression for `row` (the enclosing query's row).
fn eval_subquery(
    sc: &SubCtx,
    sub: &SubqueryRef,
    kind: &SubKind,
    row: &[Value],
    ctx: &Ctx,
) -> Result<Value, SqlError> {
    if matches!(kind, SubKind::In(..) | SubKind::Quantified(..)) {
        if !sub.outer_cols.is_empty() || sc.streamed.borrow().contains(&sub.id) {
            return eval_streamed(sc, sub, kind, row, ctx);
        }
        if !sc.cache.borrow().contains_key(&sub.id) {
            let fits = in_run(sc, &[], ctx, |txn, inner, none| {
                collect_if_fits(plan_of(sc.subs, sub.id)?, txn, inner, sc.subs, none)
            })?;
            match fits {
                Some(rows) => {
                    sc.cache.borrow_mut().insert(sub.id, Rc::new(rows));
                }
                None => {
                    sc.streamed.borrow_mut().insert(sub.id);
                    return eval_streamed(sc, sub, kind, row, ctx);
                }
            }
        }
    }
    let run = |outer: &[Value]| -> Result<Vec<Vec<Value>>, SqlError> {
        let max = rows_needed(kind);
        in_run(sc, outer, ctx, |txn, inner, none| {
            collect_up_to(
                plan_of(sc.subs, sub.id)?,
                Some(txn),
                inner,
                sc.subs,
                none,
                max,
            )
        })
    };
    let rows = if sub.outer_cols.is_empty() {
        let cached = sc.cache.borrow().get(&sub.id).cloned();
        match cached {
            Some(r) => r,
            None => {
                let r = Rc::new(run(&[])?);
                sc.cache.borrow_mut().insert(sub.id, r.clone());
                r
            }
        }
    } else {
        Rc::new(run(row)?)
    };
    Ok(match kind {
        SubKind::Scalar => match rows.len() {
            0 => Value::Null,
            1 => rows[0].first().cloned().unwrap_or(Value::Null),
            _ => {
                return Err(SqlError::of(
                    ErrorKind::SubqueryNo1Row,
                    "Subquery returns more than 1 row",
                ))
            }
        },
        SubKind::Exists(neg) => Value::Int(i64::from(rows.is_empty() == *neg)),
        SubKind::In(x, neg) => {
            if rows.is_empty() {
                return Ok(Value::Int(i64::from(*neg)));
            }
            let v = x.eval(row, ctx)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            // Uncorrelated and large enough: probe a hash index of the values.
            if sub.outer_cols.is_empty() && rows.len() >= 16 {
                let cached = sc.in_index.borrow().get(&sub.id).cloned();
                let index = match cached {
                    Some(ix) => ix,
                    None => {
                        let ix = Rc::new(InIndex::build(&rows));
                        sc.in_index.borrow_mut().insert(sub.id, ix.clone());
                        ix
                    }
                };
                if let Some(ix) = &*index {
                    if crate::exec::hash::value_class(&v) == Some(ix.class) {
                        if let Ok(Some(h)) = crate::exec::hash::hash_part(&v, ix.class) {
                            let hit = ix.buckets.get(&h).is_some_and(|b| {
                                b.iter().any(|&i| {
                                    rows[i].first().and_then(|c| v.sql_cmp(c))
                                        == Some(Ordering::Equal)
                                })
                            });
                            return Ok(if hit {
                                Value::Int(i64::from(!*neg))
                            } else if ix.has_null {
                                Value::Null
                            } else {
                                Value::Int(i64::from(*neg))
                            });
                        }
                    }
                }
            }
            let mut saw_null = false;
            for r in rows.iter() {
                match r.first().and_then(|c| v.sql_cmp(c)) {
                    Some(Ordering::Equal) => return Ok(Value::Int(i64::from(!*neg))),
                    None => saw_null = true,
                    Some(_) => {}
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Int(i64::from(*neg))
            }
        }
        SubKind::Quantified(x, op, all) => {
            // ALL: false at the first row the comparison fails, NULL if any is unknown, else
            // true (also for no rows). ANY: the mirror image.
            let v = x.eval(row, ctx)?;
            let mut unknown = false;
            for r in rows.iter() {
                match r.first().and_then(|c| v.sql_cmp(c)).map(|o| holds(*op, o)) {
                    Some(h) if h != *all => return Ok(Value::Int(i64::from(h))),
                    None => unknown = true,
                    Some(_) => {}
                }
            }
            if unknown {
                Value::Null
            } else {
                Value::Int(i64::from(*all))
            }
        }
    })
}

/// A correlated IN or ANY/ALL subquery, run for this outer `row` and read row by row up to
/// the row that decides it: nothing is held, where collecting every row made each outer row
/// hold (and be charged for) all of its matches. The answers are [`eval_subquery`]'s: IN
/// over no rows is false (true for NOT IN) without evaluating its operand, which is
/// evaluated at the first row.
fn eval_streamed(
    sc: &SubCtx,
    sub: &SubqueryRef,
    kind: &SubKind,
    row: &[Value],
    ctx: &Ctx,
) -> Result<Value, SqlError> {
    let plan = plan_of(sc.subs, sub.id)?;
    match kind {
        SubKind::In(x, neg) => {
            let mut v: Option<Value> = None;
            let mut decided: Option<Value> = None;
            let mut saw_null = false;
            in_run(sc, row, ctx, |txn, inner, none| {
                for_each_row(plan, Some(txn), inner, sc.subs, none, |r| {
                    let v = match &v {
                        Some(v) => v,
                        None => {
                            let x = x.eval(row, ctx)?;
                            if x.is_null() {
                                decided = Some(Value::Null);
                                return Ok(false);
                            }
                            v.insert(x)
                        }
                    };
                    match r.first().and_then(|c| v.sql_cmp(c)) {
                        Some(Ordering::Equal) => {
                            decided = Some(Value::Int(i64::from(!*neg)));
                            Ok(false)
                        }
                        None => {
                            saw_null = true;
                            Ok(true)
                        }
                        Some(_) => Ok(true),
                    }
                })
            })?;
            Ok(match decided {
                Some(d) => d,
                None if saw_null => Value::Null,
                None => Value::Int(i64::from(*neg)),
            })
        }
        SubKind::Quantified(x, op, all) => {
            let v = x.eval(row, ctx)?;
            let mut decided: Option<bool> = None;
            let mut unknown = false;
            in_run(sc, row, ctx, |txn, inner, none| {
                for_each_row(plan, Some(txn), inner, sc.subs, none, |r| {
                    match r.first().and_then(|c| v.sql_cmp(c)).map(|o| holds(*op, o)) {
                        Some(h) if h != *all => {
                            decided = Some(h);
                            Ok(false)
                        }
                        None => {
                            unknown = true;
                            Ok(true)
                        }
                        Some(_) => Ok(true),
                    }
                })
            })?;
            Ok(match decided {
                Some(h) => Value::Int(i64::from(h)),
                None if unknown => Value::Null,
                None => Value::Int(i64::from(*all)),
            })
        }
        SubKind::Scalar | SubKind::Exists(_) => {
            Err(SqlError::internal("a scalar or EXISTS subquery streamed"))
        }
    }
}

/// The rows of an uncorrelated IN or ANY/ALL subquery, each charged to the statement's
/// budget, if they all fit with [`SPILL_ROOM`] left besides; `None`, with nothing left
/// charged, when they do not (its caller then runs the subquery per outer row, holding
/// nothing: slower, where holding them failed the statement with 1290).
fn collect_if_fits(
    p: &SelectPlan,
    txn: &Transaction,
    ctx: &Ctx,
    subs: &[Subquery],
    locked: &Locked,
) -> Result<Option<Vec<Vec<Value>>>, SqlError> {
    let Some(budget) = ctx.killed else {
        return collect_up_to(p, Some(txn), ctx, subs, locked, usize::MAX).map(Some);
    };
    let mut rows = Vec::new();
    let mut held = 0u64;
    let mut fits = true;
    for_each_row(p, Some(txn), ctx, subs, locked, |r| {
        let bytes = crate::runtime::limits::row_bytes(r);
        if !budget.try_charge(bytes.saturating_add(SPILL_ROOM)) {
            fits = false;
            return Ok(false);
        }
        budget.release(SPILL_ROOM);
        held += bytes;
        rows.push(r.to_vec());
        Ok(true)
    })?;
    if fits {
        return Ok(Some(rows));
    }
    budget.release(held);
    Ok(None)
}

/// Runs `f` with what one run of a subquery for the outer row `outer` reads through: the
/// transaction, a context whose own subqueries get a cache of their own per run (a nested one
/// may read this run's outer row), and no locked rows.
fn in_run<R>(
    sc: &SubCtx,
    outer: &[Value],
    ctx: &Ctx,
    f: impl FnOnce(&Transaction, &Ctx, &Locked) -> Result<R, SqlError>,
) -> Result<R, SqlError> {
    let txn = sc
        .txn
        .ok_or_else(|| SqlError::internal("a subquery was not run ahead"))?;
    let own = SubCtx::new(sc.subs, txn);
    let inner = Ctx {
        outer,
        sub: Some(&own),
        ..*ctx
    };
    f(txn, &inner, &Locked::default())
}

/// Whether `v op c` holds, given `v`'s order against `c`.
fn holds(op: Cmp, o: Ordering) -> bool {
    match op {
        Cmp::Eq | Cmp::NullSafeEq => o == Ordering::Equal,
        Cmp::Ne => o != Ordering::Equal,
        Cmp::Lt => o == Ordering::Less,
        Cmp::Le => o != Ordering::Greater,
        Cmp::Gt => o == Ordering::Greater,
        Cmp::Ge => o != Ordering::Less,
    }
}
