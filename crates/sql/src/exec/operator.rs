//! Pull-based operators (docs/design/issue20-sql-engine.md §4.2): a source (one table or
//! none read along its access path, a derived table's query, a set operation's operands),
//! filtered, extended by its join steps, then grouped, made distinct and sorted by the
//! blocking stages of [`crate::exec::op`], cut by LIMIT/OFFSET and projected, one row at a
//! time. The session pulls the root and hands each row to its sink at once, so a result is
//! never held whole (only what a blocking stage needs, under the memory budget). A plan that
//! locks (FOR UPDATE) reads the rows [`lock`](crate::exec::lock) locked for it before the
//! tree was built. The join steps, the sources made of other plans and the blocking stages
//! are in [`op`](crate::exec::op).
//!
//! The operators reproduce the buffered executor they replaced (`SelectPlan::run`, deleted in
//! E5; the comments here still name it) step for step: which rows are read, which expressions
//! are evaluated and in what order, so that results, warnings and errors stayed what it gave
//! (session/stream_tests.rs holds them to its pinned results). One difference is deliberate:
//! LIMIT stops a streamed derived table's query and skips later UNION ALL operands, where
//! `run` computed them whole first. Every SELECT runs here: the statement's own, its
//! subqueries' ([`collect`]), the SELECT of INSERT … SELECT.

use std::ops::Bound;

use zipdb_engine::{Transaction, TxnScan};

use crate::catalog::Table;
use crate::exec::join;
use crate::exec::keyrange::{as_ref, byte_ranges, KeyRange};
use crate::exec::locked::{Locked, LockedPlan};
use crate::exec::op::aggregate::Aggregate;
use crate::exec::op::distinct::Distinct;
use crate::exec::op::sort::{Sort, TopN};
use crate::exec::op::{self, setop, Cut};
use crate::exec::{fixed_terms_hold, limit_value};
use crate::expr::{Ctx, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::select::{JoinMethod, JoinStep, SelectPlan, Subquery};
use crate::runtime::memory::Reservation;
use crate::types::value::Value;
use crate::SqlError;

pub(crate) use crate::exec::op::{Operator, Row};

/// The operator tree of a plan. LIMIT, OFFSET, the WHERE terms that read no
/// row and the key ranges are evaluated here, in the order `SelectPlan::run` evaluates them,
/// so their errors and warnings come before any row.
///
/// `locked`: the rows of the plans that lock, locked and read before the tree
/// ([`lock_rows`](crate::exec::lock::lock_rows)); such a plan reads them instead of its table.
pub(crate) fn build<'a>(
    p: &'a SelectPlan,
    txn: Option<&'a Transaction>,
    ctx: &Ctx<'a>,
    subs: &'a [Subquery],
    locked: &'a Locked,
) -> Result<Box<dyn Operator + 'a>, SqlError> {
    let pre = locked.of(p);
    let (limit, offset) = match pre {
        Some(l) => (l.limit, l.offset),
        None => (
            limit_value(&p.limit, ctx)?,
            limit_value(&p.offset, ctx)?.unwrap_or(0),
        ),
    };
    // A derived table's query or a set operation's operands, before the WHERE's fixed terms
    // and the joins' tables, as `SelectPlan::run` takes them; what blocks is read here.
    let nested_rows = setop::source(p, txn, ctx, subs, locked, nested)?;
    // LIMIT 0 evaluates nothing; a false row-independent WHERE term reads no row.
    let impossible = match pre {
        Some(l) => l.impossible,
        None => {
            limit == Some(0)
                || match &p.filter {
                    Some(f) => !fixed_terms_hold(f, ctx)?,
                    None => false,
                }
        }
    };
    // The hash and loop steps' tables are read before the first table, as `run` reads them.
    let built = match txn {
        _ if impossible || p.joins.is_empty() => None,
        Some(t) => Some(join::build(&p.joins, t, ctx, &|d| {
            build(d, Some(t), ctx, subs, locked)
        })?),
        None => return Err(SqlError::internal("no transaction for a join")),
    };
    let mut op: Box<dyn Operator + 'a> = match (&p.table, nested_rows) {
        _ if impossible => Box::new(Empty),
        (_, Some(rows)) => rows,
        (None, None) => Box::new(OneRow { done: false }),
        (Some(_), None) if pre.is_some() => Box::new(setop::Held::new(
            pre.map(LockedPlan::take).unwrap_or_default(),
        )),
        (Some(t), None) => match t.virt {
            Some(k) => Box::new(SystemScan {
                rows: ctx.virtual_of(k)?,
                at: 0,
                scanned: 0,
            }),
            None => {
                let txn = txn.ok_or_else(|| SqlError::internal("no transaction for a scan"))?;
                let reverse = p.ordered_scan == Some(true);
                Box::new(TableScan::new(
                    txn,
                    t,
                    &p.access,
                    &p.wanted,
                    reverse,
                    &[],
                    ctx,
                )?)
            }
        },
    };
    if let Some(f) = p
        .filter
        .as_ref()
        .filter(|_| !pre.is_some_and(|l| l.filtered))
    {
        op = Box::new(Filter {
            child: op,
            pred: f,
            passed: 0,
        });
    }
    if let (Some(built), Some(txn)) = (built, txn) {
        op = op::join::steps(op, &p.joins, built, &|s| lookup(txn, s));
    }
    stages(p, op, limit, offset, ctx)
}

/// The stages after the WHERE filter, in `SelectPlan::run`'s order: grouping and HAVING, the
/// select list, DISTINCT, the sort, OFFSET and LIMIT. Each evaluates what that function
/// evaluates, so results, warnings and errors stay the same.
fn stages<'a>(
    p: &'a SelectPlan,
    mut op: Box<dyn Operator + 'a>,
    limit: Option<u64>,
    offset: u64,
    ctx: &Ctx<'a>,
) -> Result<Box<dyn Operator + 'a>, SqlError> {
    let sorts = !p.order.is_empty() && p.ordered_scan.is_none();
    let mem = || Reservation::new(ctx.killed);
    let cut = limit.is_some() || offset > 0;
    if p.group_by.is_none() && !p.distinct {
        if !sorts {
            // Row at a time: rows before OFFSET are not projected, and nothing past LIMIT is
            // read.
            if cut {
                op = Box::new(Limit::new(op, offset, limit, false));
            }
            return Ok(Box::new(Project {
                child: op,
                outputs: &p.outputs,
                visible: p.visible,
                src: Vec::new(),
            }));
        }
        if cut {
            // ORDER BY … LIMIT: only the rows sent are projected.
            op = Box::new(TopN::new(
                op,
                &p.outputs[p.visible..],
                &p.order,
                limit,
                offset,
                mem(),
            ));
            return Ok(Box::new(Project {
                child: op,
                outputs: &p.outputs[..p.visible],
                visible: p.visible,
                src: Vec::new(),
            }));
        }
    }
    if let Some((keys, aggs)) = &p.group_by {
        let temp = ctx.killed.and_then(|i| i.temp());
        op = Box::new(Aggregate::new(op, keys, aggs, mem(), temp));
        if let Some(h) = &p.having {
            op = Box::new(Filter {
                child: op,
                pred: h,
                passed: 0,
            });
        }
    }
    // Every row (every group) is projected whole, hidden ORDER BY keys too, as the buffered
    // path does before DISTINCT and the sort.
    op = Box::new(Project {
        child: op,
        outputs: &p.outputs,
        visible: p.outputs.len(),
        src: Vec::new(),
    });
    if p.distinct {
        let temp = ctx.killed.and_then(|i| i.temp());
        op = Box::new(Distinct::new(op, p.visible, mem(), temp));
    }
    if sorts {
        let temp = ctx.killed.and_then(|i| i.temp());
        op = Box::new(Sort::new(op, p.visible, &p.order, mem(), temp));
    }
    if cut {
        // Grouped or DISTINCT: the buffered path computes every row before it cuts, so the
        // rows after LIMIT are still pulled (and their warnings and errors raised).
        op = Box::new(Limit::new(op, offset, limit, true));
    }
    if p.outputs.len() > p.visible {
        op = Box::new(Cut {
            child: op,
            visible: p.visible,
        });
    }
    Ok(op)
}

/// The rows of a nested plan (a derived table's query, a set operand): its own tree. Its
/// subqueries read through the statement's `SubCtx` in `ctx`.
fn nested<'a>(
    p: &'a SelectPlan,
    txn: Option<&'a Transaction>,
    ctx: &Ctx<'a>,
    subs: &'a [Subquery],
    locked: &'a Locked,
) -> Result<Box<dyn Operator + 'a>, SqlError> {
    build(p, txn, ctx, subs, locked)
}

/// The scan a lookup step opens for each row of the tables before it.
fn lookup<'a>(txn: &'a Transaction, s: &'a JoinStep) -> op::join::OpenLookup<'a> {
    Box::new(move |outer: &[Value], cx: &Ctx| {
        let JoinMethod::Lookup(access) = &s.method else {
            return Err(SqlError::internal(
                "a lookup scan for a step that is not one",
            ));
        };
        let scan = TableScan::new(txn, &s.table, access, &s.wanted, false, outer, cx)?;
        Ok(Box::new(scan) as Box<dyn Operator + 'a>)
    })
}

/// Every 512th row a scan produces (or a filter passes) looks at KILL and the deadline, as
/// `SelectPlan::run` does.
fn tick(n: &mut u32, cx: &Ctx) -> Result<(), SqlError> {
    *n = n.wrapping_add(1);
    if n.is_multiple_of(512) {
        cx.check_killed()?;
    }
    Ok(())
}

/// No rows: LIMIT 0 or an impossible WHERE.
struct Empty;

impl Operator for Empty {
    fn next(&mut self, _: &Ctx, _: &mut Row) -> Result<bool, SqlError> {
        Ok(false)
    }
}

/// SELECT without FROM: one empty row.
struct OneRow {
    done: bool,
}

impl Operator for OneRow {
    fn next(&mut self, _: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.done {
            return Ok(false);
        }
        self.done = true;
        out.clear();
        Ok(true)
    }
}

/// An `information_schema` table: the rows the session computed before the statement.
struct SystemScan<'a> {
    rows: &'a [Vec<Value>],
    at: usize,
    scanned: u32,
}

impl Operator for SystemScan<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        let Some(r) = self.rows.get(self.at) else {
            return Ok(false);
        };
        self.at += 1;
        tick(&mut self.scanned, cx)?;
        out.clone_from(r);
        Ok(true)
    }
}

/// Which tree a [`TableScan`]'s ranges are keys of.
enum Keys {
    /// Whole primary keys: each range is one key, read with a point get.
    Points,
    Primary,
    /// Secondary index `i`: each entry's row is fetched by the primary key it ends with.
    Index(usize),
}

/// A table read along its access path, as `scan::scan_rows_from` reads it: PK points, IN
/// lists and ranges, index ranges with a fetch per entry, or the whole table; forward or
/// reversed.
struct TableScan<'a> {
    txn: &'a Transaction,
    t: &'a Table,
    wanted: &'a [bool],
    reverse: bool,
    keys: Keys,
    ranges: Vec<KeyRange>,
    next_range: usize,
    it: Option<TxnScan<'a>>,
    scanned: u32,
    /// The row the scan read last, its buffers reused for the next (no allocation per row).
    key: Vec<u8>,
    value: Vec<u8>,
}

impl<'a> TableScan<'a> {
    /// `outer`: the row of the tables before this one, which a lookup step's key bounds
    /// read (empty for the first table).
    fn new(
        txn: &'a Transaction,
        t: &'a Table,
        access: &Access,
        wanted: &'a [bool],
        reverse: bool,
        outer: &[Value],
        ctx: &Ctx,
    ) -> Result<TableScan<'a>, SqlError> {
        let full = || vec![(Bound::Unbounded, Bound::Unbounded)];
        let (keys, mut ranges) = match access {
            Access::None => (Keys::Primary, Vec::new()),
            Access::Full => (Keys::Primary, full()),
            Access::Primary(b) => match byte_ranges(b, &t.def.pk, &t.types, outer, ctx)? {
                Some(r) => {
                    let points = b.len() == t.def.pk.len()
                        && b.iter().all(|x| !matches!(x, ColBound::Range(..)));
                    (if points { Keys::Points } else { Keys::Primary }, r)
                }
                None => (Keys::Primary, full()),
            },
            Access::Index(i, b) => {
                let cols = &t.def.indexes[*i].columns;
                match byte_ranges(b, cols, &t.types, outer, ctx)? {
                    Some(r) => (Keys::Index(*i), r),
                    None => (Keys::Primary, full()),
                }
            }
        };
        if reverse {
            ranges.reverse();
        }
        Ok(TableScan {
            txn,
            t,
            wanted,
            reverse,
            keys,
            ranges,
            next_range: 0,
            it: None,
            scanned: 0,
            key: Vec::new(),
            value: Vec::new(),
        })
    }

    /// The row an index entry names.
    fn fetch(&self, i: usize, entry: &[u8]) -> Result<Vec<u8>, SqlError> {
        let n = self.t.index_prefix_len(i, entry)?;
        match self.txn.get(&self.t.primary, &entry[n..]) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(SqlError::corrupt(format!(
                "index {} of table {}.{} names a row that does not exist",
                self.t.def.indexes[i].name, self.t.def.db, self.t.def.name
            ))),
            Err(e) => Err(SqlError::engine(e)),
        }
    }
}

impl Operator for TableScan<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        let eng = SqlError::engine;
        loop {
            if let Some(it) = &mut self.it {
                match it.next_into(&mut self.key, &mut self.value) {
                    Some(r) => {
                        r.map_err(eng)?;
                        let fetched;
                        let v = match self.keys {
                            Keys::Index(i) => {
                                fetched = self.fetch(i, &self.key)?;
                                &fetched
                            }
                            Keys::Points | Keys::Primary => &self.value,
                        };
                        tick(&mut self.scanned, cx)?;
                        self.t.decode_some_into(v, self.wanted, out)?;
                        return Ok(true);
                    }
                    None => self.it = None,
                }
            }
            let Some((lo, hi)) = self.ranges.get(self.next_range) else {
                return Ok(false);
            };
            self.next_range += 1;
            if let (Keys::Points, Bound::Included(k)) = (&self.keys, lo) {
                if let Some(v) = self.txn.get(&self.t.primary, k).map_err(eng)? {
                    tick(&mut self.scanned, cx)?;
                    *out = self.t.decode_some(&v, self.wanted)?;
                    return Ok(true);
                }
                continue;
            }
            let tree = match self.keys {
                Keys::Index(i) => &self.t.indexes[i],
                Keys::Points | Keys::Primary => &self.t.primary,
            };
            let r = (as_ref(lo), as_ref(hi));
            self.it = Some(if self.reverse {
                self.txn.scan_rev(tree, r).map_err(eng)?
            } else {
                self.txn.scan(tree, r).map_err(eng)?
            });
        }
    }
}

/// WHERE: the rows of `child` for which `pred` is true.
struct Filter<'a> {
    child: Box<dyn Operator + 'a>,
    pred: &'a Expr,
    passed: u32,
}

impl Operator for Filter<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        while self.child.next(cx, out)? {
            if self.pred.test(out, cx)? {
                tick(&mut self.passed, cx)?;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// OFFSET then LIMIT, below the projection: skipped rows are not projected (MySQL does not
/// evaluate their select list), and once the limit is reached no further row is pulled, so
/// no later row's filter runs (or warns); unless `drain`, where the rows past the limit are
/// pulled and dropped.
struct Limit<'a> {
    child: Box<dyn Operator + 'a>,
    offset: u64,
    limit: Option<u64>,
    skipped: u64,
    sent: u64,
    drain: bool,
}

impl<'a> Limit<'a> {
    /// `drain`: once LIMIT rows are out, pull the rest and drop them (their warnings and
    /// errors still happen, as on the buffered path for grouped and DISTINCT plans).
    fn new(child: Box<dyn Operator + 'a>, offset: u64, limit: Option<u64>, drain: bool) -> Self {
        Limit {
            child,
            offset,
            limit,
            skipped: 0,
            sent: 0,
            drain,
        }
    }
}

impl Operator for Limit<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        while self.skipped < self.offset {
            if !self.child.next(cx, out)? {
                return Ok(false);
            }
            self.skipped += 1;
        }
        if self.limit.is_some_and(|l| self.sent >= l) {
            if self.drain {
                while self.child.next(cx, out)? {}
                self.drain = false;
            }
            return Ok(false);
        }
        let more = self.child.next(cx, out)?;
        self.sent += u64::from(more);
        Ok(more)
    }
}

/// The select list. Every output is evaluated, the hidden ORDER BY keys too (the buffered
/// path evaluates them, and their warnings count), then cut to the visible columns.
struct Project<'a> {
    child: Box<dyn Operator + 'a>,
    outputs: &'a [Expr],
    visible: usize,
    src: Row,
}

impl Operator for Project<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if !self.child.next(cx, &mut self.src)? {
            return Ok(false);
        }
        out.clear();
        for e in self.outputs {
            out.push(e.eval(&self.src, cx)?);
        }
        out.truncate(self.visible);
        Ok(true)
    }
}

/// Runs `p` through its operator tree and hands each row to `f` until it returns false; no
/// row is held (a correlated IN or ANY/ALL subquery stops at the row that decides it).
pub(crate) fn for_each_row(
    p: &SelectPlan,
    txn: Option<&Transaction>,
    ctx: &Ctx,
    subs: &[Subquery],
    locked: &Locked,
    mut f: impl FnMut(&[Value]) -> Result<bool, SqlError>,
) -> Result<(), SqlError> {
    let mut op = build(p, txn, ctx, subs, locked)?;
    let mut row = Vec::new();
    while op.next(ctx, &mut row)? {
        if !f(&row)? {
            break;
        }
    }
    Ok(())
}

/// Runs `p` through its operator tree and collects up to `max` of its rows, each charged to
/// the statement's memory budget (they are held until their reader is done): a subquery's
/// rows (an EXISTS needs one, a scalar subquery two, so they read no further, as MariaDB's
/// do). Its subqueries read through the `SubCtx` in `ctx`, which the caller set up.
pub(crate) fn collect_up_to(
    p: &SelectPlan,
    txn: Option<&Transaction>,
    ctx: &Ctx,
    subs: &[Subquery],
    locked: &Locked,
    max: usize,
) -> Result<Vec<Row>, SqlError> {
    let mut op = build(p, txn, ctx, subs, locked)?;
    let mut rows = Vec::new();
    let mut row = Vec::new();
    while rows.len() < max && op.next(ctx, &mut row)? {
        ctx.charge(crate::runtime::limits::row_bytes(&row))?;
        rows.push(std::mem::take(&mut row));
    }
    Ok(rows)
}

/// Whether `p` reads the table `db`.`name` anywhere: its FROM, joins, derived tables, set
/// operands, or any subquery of the statement (`subs`, all of them: an INSERT's subqueries
/// are its SELECT's). Recursion as deep as the query's nesting, which the parser bounds.
pub(crate) fn reads_table(p: &SelectPlan, subs: &[Subquery], db: &str, name: &str) -> bool {
    fn within(p: &SelectPlan, db: &str, name: &str) -> bool {
        let named = |t: &Table| t.virt.is_none() && t.def.db == db && t.def.name == name;
        p.table.as_deref().is_some_and(named)
            || p.joins.iter().any(|j| {
                named(&j.table) || j.derived.as_deref().is_some_and(|d| within(d, db, name))
            })
            || p.derived.as_deref().is_some_and(|d| within(d, db, name))
            || p.union.iter().any(|(q, _)| within(q, db, name))
    }
    within(p, db, name) || subs.iter().any(|s| within(&s.plan, db, name))
}
