//! Sources made of other plans: a derived table's (or CTE use's) query, and the operands of a
//! set operation. A plan that streams itself becomes a subtree; any other runs on the
//! buffered path and its collected rows are read back ([`Held`]).
//!
//! UNION ALL streams operand after operand: each operand's tree is built only when the one
//! before it is used up, so its LIMIT, constant WHERE terms and key bounds are evaluated where
//! `SelectPlan::run` evaluates them, after the earlier operands' rows. A UNION (DISTINCT)
//! applies to everything before it: when every operation up to the last DISTINCT one is a
//! UNION, those operands stream, in order, into one [`Distinct`] (first occurrences in
//! arrival order; past `tmp_memory_table_size` it spills instead of failing with 1290).
//! INTERSECT and EXCEPT compare each row with all the others: each reads everything before it
//! and its operand whole, when the tree is built, through an external sort that spills past
//! `sort_buffer_size` (`setsort`; see [`combined`]). The UNION ALL operands after the last
//! DISTINCT operation stream behind either.
//!
//! The nesting of these trees follows the query's (a derived table in a derived table, a set
//! operation as an operand), which the parser bounds at `SELECT_NESTING_MAX` levels.

use zipdb_engine::Transaction;

use crate::exec::locked::Locked;
use crate::exec::op::distinct::Distinct;
use crate::exec::op::setsort::{combine, Operand, SetKind};
use crate::exec::op::{Operator, Row};
use crate::expr::Ctx;
use crate::plan::select::{SelectPlan, SetOp, Subquery};
use crate::runtime::memory::Reservation;
use crate::runtime::spill::SessionTemp;
use crate::SqlError;

/// Builds the rows of a nested plan: its operator tree when it streams, else its collected
/// rows. Handed down by the tree's builder (`operator::nested`), which this file may not call.
pub(crate) type Nested<'a> = fn(
    &'a SelectPlan,
    Option<&'a Transaction>,
    &Ctx<'a>,
    &'a [Subquery],
    &'a Locked,
) -> Result<Box<dyn Operator + 'a>, SqlError>;

/// The source of `p` when it reads a derived table or combines set operands; `None` when its
/// rows come from a table (or no table).
pub(crate) fn source<'a>(
    p: &'a SelectPlan,
    txn: Option<&'a Transaction>,
    ctx: &Ctx<'a>,
    subs: &'a [Subquery],
    locked: &'a Locked,
    nested: Nested<'a>,
) -> Result<Option<Box<dyn Operator + 'a>>, SqlError> {
    let trees = Trees {
        txn,
        ctx: *ctx,
        subs,
        locked,
        nested,
    };
    if let Some(d) = &p.derived {
        return Ok(Some(trees.build(d)?));
    }
    if p.union.is_empty() {
        return Ok(None);
    }
    // Each operand's operation applies to everything before it, the first's too (it is UNION
    // ALL as compiled): everything up to the last operation that is not UNION ALL is combined
    // whole.
    let all = SetOp::Union { distinct: false };
    let (head, rest): (Box<dyn Operator + 'a>, _) =
        match p.union.iter().rposition(|(_, op)| *op != all) {
            Some(last)
                if p.union[..=last]
                    .iter()
                    .all(|(_, op)| matches!(op, SetOp::Union { .. })) =>
            {
                let temp = ctx.killed.and_then(|i| i.temp());
                let operands = Box::new(trees.union_all(empty(), &p.union[..=last]));
                // Whole rows are compared, as DISTINCT compares them.
                let d = Distinct::new(operands, usize::MAX, Reservation::new(ctx.killed), temp);
                (Box::new(d), &p.union[last + 1..])
            }
            Some(last) => (combined(&p.union[..=last], trees)?, &p.union[last + 1..]),
            None => (empty(), &p.union[..]),
        };
    Ok(Some(Box::new(trees.union_all(head, rest))))
}

/// What building the tree of a nested plan takes, handed down from [`source`].
#[derive(Clone, Copy)]
struct Trees<'a> {
    txn: Option<&'a Transaction>,
    /// The statement's context, for building the later operands' trees (a scan of an
    /// `information_schema` table borrows its rows from it).
    ctx: Ctx<'a>,
    subs: &'a [Subquery],
    locked: &'a Locked,
    nested: Nested<'a>,
}

impl<'a> Trees<'a> {
    fn build(&self, q: &'a SelectPlan) -> Result<Box<dyn Operator + 'a>, SqlError> {
        (self.nested)(q, self.txn, &self.ctx, self.subs, self.locked)
    }

    /// `head`'s rows, then each of `rest`'s, its tree built when the one before is used up.
    fn union_all(
        self,
        head: Box<dyn Operator + 'a>,
        rest: &'a [(SelectPlan, SetOp)],
    ) -> UnionAll<'a> {
        UnionAll {
            head,
            rest,
            cur: None,
            trees: self,
            scanned: 0,
        }
    }
}

fn empty<'a>() -> Box<dyn Operator + 'a> {
    Box::new(Held::new(Vec::new()))
}

/// The rows of `ops`, a chain of set operations with at least one INTERSECT or EXCEPT, each
/// applied to everything before it: runs of UNION operands stream (through one spilling
/// [`Distinct`] up to a run's last UNION DISTINCT), and each INTERSECT or EXCEPT reads what
/// comes before it and its operand whole, by an external sort (`setsort`), when the tree is
/// built. The chain is walked by a loop: however long it is (`SET_OPERANDS_MAX`), each
/// INTERSECT or EXCEPT leaves sorted rows behind it, not a deeper tree.
fn combined<'a>(
    ops: &'a [(SelectPlan, SetOp)],
    trees: Trees<'a>,
) -> Result<Box<dyn Operator + 'a>, SqlError> {
    let ctx = &trees.ctx;
    let temp = ctx.killed.and_then(|i| i.temp());
    let buffer = temp.map_or(u64::MAX, SessionTemp::sort_buffer);
    let mut acc = empty();
    let mut i = 0;
    while i < ops.len() {
        let kind = match ops[i].1 {
            SetOp::Union { .. } => {
                let end = ops[i..]
                    .iter()
                    .position(|(_, op)| !matches!(op, SetOp::Union { .. }))
                    .map_or(ops.len(), |n| i + n);
                let run = &ops[i..end];
                let distinct = SetOp::Union { distinct: true };
                let (dedup, after) = match run.iter().rposition(|(_, op)| *op == distinct) {
                    Some(d) => run.split_at(d + 1),
                    None => (&run[..0], run),
                };
                if !dedup.is_empty() {
                    let u = Box::new(trees.union_all(acc, dedup));
                    acc = Box::new(Distinct::new(
                        u,
                        usize::MAX,
                        Reservation::new(ctx.killed),
                        temp,
                    ));
                }
                if !after.is_empty() {
                    acc = Box::new(trees.union_all(acc, after));
                }
                i = end;
                continue;
            }
            SetOp::Intersect { distinct } => SetKind {
                intersect: true,
                distinct,
            },
            SetOp::Except { distinct } => SetKind {
                intersect: false,
                distinct,
            },
        };
        let q = &ops[i].0;
        let operand: Operand<'a> = Box::new(move || trees.build(q));
        acc = Box::new(combine(
            acc,
            operand,
            kind,
            Reservation::new(ctx.killed),
            temp,
            buffer,
            ctx,
        )?);
        i += 1;
    }
    Ok(acc)
}

/// Rows collected before the tree runs, handed out one by one (each freed as it goes).
pub(crate) struct Held {
    rows: std::vec::IntoIter<Row>,
    scanned: u32,
}

impl Held {
    pub(crate) fn new(rows: Vec<Row>) -> Held {
        Held {
            rows: rows.into_iter(),
            scanned: 0,
        }
    }
}

impl Operator for Held {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        let Some(r) = self.rows.next() else {
            return Ok(false);
        };
        tick(&mut self.scanned, cx)?;
        *out = r;
        Ok(true)
    }
}

/// The rows of `head` (the combined blocking operands, if any), then each further UNION ALL
/// operand's rows as its tree yields them.
struct UnionAll<'a> {
    head: Box<dyn Operator + 'a>,
    rest: &'a [(SelectPlan, SetOp)],
    cur: Option<Box<dyn Operator + 'a>>,
    trees: Trees<'a>,
    scanned: u32,
}

impl Operator for UnionAll<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.head.next(cx, out)? {
            return Ok(true);
        }
        loop {
            if let Some(op) = &mut self.cur {
                if op.next(cx, out)? {
                    tick(&mut self.scanned, cx)?;
                    return Ok(true);
                }
                self.cur = None;
            }
            let Some(((q, _), rest)) = self.rest.split_first() else {
                return Ok(false);
            };
            self.rest = rest;
            self.cur = Some(self.trees.build(q)?);
        }
    }
}

/// Every 512th source row looks at KILL and the deadline, as `SelectPlan::run` does.
fn tick(n: &mut u32, cx: &Ctx) -> Result<(), SqlError> {
    *n = n.wrapping_add(1);
    if n.is_multiple_of(512) {
        cx.check_killed()?;
    }
    Ok(())
}
