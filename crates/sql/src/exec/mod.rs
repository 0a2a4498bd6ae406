//! Planning and execution of single-table SELECT, INSERT/REPLACE, UPDATE and DELETE.
//!
//! A statement is compiled once into a plan (columns resolved, `?` numbered, an access path
//! chosen from the WHERE clause) and executed with parameter values. Prepared statements keep
//! their plan; text queries compile each time.
//!
//! Access paths: a primary-key point lookup or range, a secondary-index point lookup or range
//! (then each row fetched by its primary key), or a full scan. The whole WHERE clause is always
//! re-checked on every row, so an access path only has to return a superset of the matching
//! rows: key bounds that cannot be converted exactly to the column's type fall back to a scan.

pub mod dml;
pub(crate) mod hash;
pub(crate) mod join;
pub(crate) mod keyrange;
pub(crate) mod load;
pub(crate) mod lock;
pub(crate) mod op;
pub(crate) mod operator;
pub(crate) mod scan;
pub(crate) mod subquery;

use std::cmp::Ordering;
use std::collections::BTreeMap;

use zipdb_engine::Transaction;

use crate::error::SqlError;
use crate::exec::scan::scan_rows;
use crate::exec::subquery::SubCtx;
use crate::expr::{Ctx, Expr};
use crate::plan::select::{AggFn, AggSpec, SelectPlan, SetOp, Subquery};
use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

// ---- Aggregates --------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct AggState {
    count: u64,
    sum: Option<Value>,
    best: Option<Value>,
    /// DISTINCT aggregates: the values counted so far, ordered as GROUP BY compares them (a
    /// linear list made COUNT(DISTINCT) quadratic).
    seen: Option<std::collections::BTreeSet<SqlOrdered>>,
}

/// A value ordered by [`Value::order_cmp`] (the collation, numbers numerically), so that equal
/// values as GROUP BY and DISTINCT see them are one set element.
#[derive(Debug, Clone)]
struct SqlOrdered(Value);

impl PartialEq for SqlOrdered {
    fn eq(&self, o: &Self) -> bool {
        self.0.order_cmp(&o.0) == Ordering::Equal
    }
}
impl Eq for SqlOrdered {}
impl PartialOrd for SqlOrdered {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for SqlOrdered {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.order_cmp(&o.0)
    }
}

impl AggState {
    fn new(distinct: bool) -> AggState {
        AggState {
            count: 0,
            sum: None,
            best: None,
            seen: distinct.then(std::collections::BTreeSet::new),
        }
    }

    fn add(&mut self, spec: &AggSpec, v: Value) -> Result<(), SqlError> {
        if spec.func == AggFn::CountStar {
            self.count += 1;
            return Ok(());
        }
        if spec.func == AggFn::Any {
            if self.count == 0 {
                self.best = Some(v);
            }
            self.count += 1;
            return Ok(());
        }
        if v.is_null() {
            return Ok(());
        }
        if let Some(seen) = &mut self.seen {
            if !seen.insert(SqlOrdered(v.clone())) {
                return Ok(());
            }
        }
        self.count += 1;
        match spec.func {
            AggFn::Sum | AggFn::Avg => {
                let add = match (&self.sum, &v) {
                    (None, _) => match v {
                        Value::Double(_) | Value::Str(_) | Value::Bytes(_) => {
                            Value::Double(v.to_f64().unwrap_or(0.0))
                        }
                        _ => Value::Decimal(v.to_decimal().unwrap_or(Decimal::from_i64(0))),
                    },
                    (Some(Value::Decimal(s)), x) if !matches!(x, Value::Double(_)) => {
                        match x.to_decimal().and_then(|d| s.add(d)) {
                            Some(d) => Value::Decimal(d),
                            None => Value::Double(s.to_f64() + x.to_f64().unwrap_or(0.0)),
                        }
                    }
                    (Some(s), x) => {
                        Value::Double(s.to_f64().unwrap_or(0.0) + x.to_f64().unwrap_or(0.0))
                    }
                };
                self.sum = Some(add);
            }
            AggFn::Min | AggFn::Max => {
                let better = match &self.best {
                    None => true,
                    Some(b) => {
                        let o = v.sql_cmp(b).unwrap_or(Ordering::Equal);
                        (spec.func == AggFn::Min && o == Ordering::Less)
                            || (spec.func == AggFn::Max && o == Ordering::Greater)
                    }
                };
                if better {
                    self.best = Some(v);
                }
            }
            AggFn::Count | AggFn::CountStar | AggFn::Any => {}
        }
        Ok(())
    }

    fn finish(self, spec: &AggSpec) -> Value {
        match spec.func {
            AggFn::CountStar | AggFn::Count => Value::Int(self.count as i64),
            AggFn::Sum => match self.sum {
                None => Value::Null,
                Some(Value::Decimal(d)) => match spec.ty {
                    SqlType::Decimal { scale, .. } => {
                        d.rescale(scale).map_or(Value::Decimal(d), Value::Decimal)
                    }
                    _ => Value::Decimal(d),
                },
                Some(v) => v,
            },
            AggFn::Avg => match self.sum {
                None => Value::Null,
                Some(Value::Decimal(d)) => {
                    let avg = d.div(Decimal {
                        mant: i128::from(self.count),
                        scale: 0,
                    });
                    match (avg, spec.ty) {
                        (Some(a), SqlType::Decimal { scale, .. }) => {
                            a.rescale(scale).map_or(Value::Null, Value::Decimal)
                        }
                        (Some(a), _) => Value::Decimal(a),
                        (None, _) => Value::Null,
                    }
                }
                Some(v) => Value::Double(v.to_f64().unwrap_or(0.0) / self.count as f64),
            },
            AggFn::Min | AggFn::Max | AggFn::Any => self.best.unwrap_or(Value::Null),
        }
    }
}

/// A row key compared as GROUP BY / DISTINCT compare (collation-aware, NULLs equal).
#[derive(Debug, Clone)]
pub struct GroupKey(pub Vec<Value>);

impl PartialEq for GroupKey {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for GroupKey {}
impl PartialOrd for GroupKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for GroupKey {
    fn cmp(&self, o: &Self) -> Ordering {
        KeyRef::new(&self.0).cmp(KeyRef::new(&o.0))
    }
}

/// A borrowed [`GroupKey`]: a map of groups is searched with the key values of the row at
/// hand, without building an owned key per row.
#[repr(transparent)]
#[derive(Debug)]
pub(crate) struct KeyRef([Value]);

impl KeyRef {
    pub(crate) fn new(values: &[Value]) -> &KeyRef {
        // SAFETY: `KeyRef` is `repr(transparent)` over `[Value]`, so both have the same
        // layout and pointer metadata (the length); the reference keeps the lifetime and
        // the shared access of `values`.
        unsafe { &*(values as *const [Value] as *const KeyRef) }
    }
}

impl std::borrow::Borrow<KeyRef> for GroupKey {
    fn borrow(&self) -> &KeyRef {
        KeyRef::new(&self.0)
    }
}

impl PartialEq for KeyRef {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for KeyRef {}
impl PartialOrd for KeyRef {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for KeyRef {
    fn cmp(&self, o: &Self) -> Ordering {
        for (a, b) in self.0.iter().zip(&o.0) {
            let c = a.order_cmp(b);
            if c != Ordering::Equal {
                return c;
            }
        }
        self.0.len().cmp(&o.0.len())
    }
}

// ---- SELECT --------------------------------------------------------------------------------

/// `acc` combined with `part` by `op`, rows compared as DISTINCT compares them.
pub(crate) fn set_combine(op: SetOp, acc: &mut Vec<Vec<Value>>, part: Vec<Vec<Value>>) {
    let dedup = |rows: &mut Vec<Vec<Value>>| {
        let mut seen = std::collections::BTreeSet::new();
        rows.retain(|r| seen.insert(GroupKey(r.clone())));
    };
    match op {
        SetOp::Union { distinct } => {
            acc.extend(part);
            if distinct {
                dedup(acc);
            }
        }
        SetOp::Intersect { distinct } | SetOp::Except { distinct } => {
            let keep_found = matches!(op, SetOp::Intersect { .. });
            let mut counts: BTreeMap<GroupKey, usize> = BTreeMap::new();
            for r in part {
                *counts.entry(GroupKey(r)).or_default() += 1;
            }
            if distinct {
                dedup(acc);
                acc.retain(|r| counts.contains_key(&GroupKey(r.clone())) == keep_found);
            } else {
                // Multisets: each row of the operand matches (and keeps, or removes) one row.
                acc.retain(|r| {
                    let n = counts.get_mut(&GroupKey(r.clone()));
                    let found = match n {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            true
                        }
                        _ => false,
                    };
                    found == keep_found
                });
            }
        }
    }
}

/// The transaction a plan reads through: none (no table), shared (scans, subqueries) or
/// exclusive (locking reads).
pub(crate) enum Txn<'a> {
    None,
    Shared(&'a Transaction),
    Mut(&'a mut Transaction),
}

impl Txn<'_> {
    fn shared(&self) -> Option<&Transaction> {
        match self {
            Txn::None => None,
            Txn::Shared(t) => Some(t),
            Txn::Mut(t) => Some(t),
        }
    }

    fn reborrow(&mut self) -> Txn<'_> {
        match self {
            Txn::None => Txn::None,
            Txn::Shared(t) => Txn::Shared(t),
            Txn::Mut(t) => Txn::Mut(t),
        }
    }
}

/// Whether the WHERE terms that read no row (see [`Expr::row_independent`]) are all true. They
/// are decided once, before any row is read; when one is not true, no row is read (MySQL's
/// "Impossible WHERE"). All are evaluated, not up to the first false one: MySQL raises their
/// warnings too, even over an empty table. Walks the AND tree rather than collecting the
/// conjuncts: this runs for every execution of every query.
fn fixed_terms_hold(e: &Expr, ctx: &Ctx) -> Result<bool, SqlError> {
    Ok(match e {
        Expr::And(a, b) => {
            let x = fixed_terms_hold(a, ctx)?;
            fixed_terms_hold(b, ctx)? && x
        }
        e if e.row_independent() => e.test(&[], ctx)?,
        _ => true,
    })
}

fn limit_value(e: &Option<Expr>, ctx: &Ctx) -> Result<Option<u64>, SqlError> {
    match e {
        None => Ok(None),
        Some(e) => match e.eval(&[], ctx)? {
            Value::Int(i) if i >= 0 => Ok(Some(i as u64)),
            Value::UInt(u) => Ok(Some(u)),
            Value::Str(s) => s
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|_| SqlError::syntax(&s, 1)),
            other => Err(SqlError::wrong_arguments(&format!(
                "LIMIT: {}",
                other.to_string_lossy().unwrap_or_default()
            ))),
        },
    }
}

impl SelectPlan {
    /// Whether the statement reads tables (and so needs a transaction).
    pub fn reads_tables(&self) -> bool {
        self.table.is_some() || self.has_sub || self.union.iter().any(|(p, _)| p.reads_tables())
    }

    /// The `information_schema` tables the statement reads anywhere: FROM, joins, UNION
    /// operands and subqueries (the session computes their rows before execution); `subs`
    /// is the statement's table of subqueries.
    pub fn virtual_kinds(
        &self,
        subs: &[Subquery],
        out: &mut Vec<crate::catalog::system::SystemTable>,
    ) {
        let tables = self.table.iter().chain(self.joins.iter().map(|j| &j.table));
        for t in tables {
            if let Some(k) = t.virt {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        for (p, _) in &self.union {
            p.virtual_kinds(subs, out);
        }
        let derived = self
            .derived
            .iter()
            .chain(self.joins.iter().filter_map(|j| j.derived.as_ref()));
        for p in derived {
            p.virtual_kinds(subs, out);
        }
        let mut exprs: Vec<&Expr> = Vec::new();
        exprs.extend(self.filter.iter());
        exprs.extend(self.having.iter());
        exprs.extend(self.outputs.iter());
        if let Some((keys, aggs)) = &self.group_by {
            exprs.extend(keys.iter());
            exprs.extend(aggs.iter().filter_map(|a| a.arg.as_ref()));
        }
        for j in &self.joins {
            exprs.extend(j.on.iter());
            exprs.extend(j.after.iter());
        }
        for e in exprs {
            e.visit(&mut |x| {
                if let Some(q) = match x {
                    Expr::Subquery(sub, _) => subs.get(sub.id.0),
                    _ => None,
                } {
                    q.plan.virtual_kinds(subs, out);
                }
            });
        }
    }

    /// Runs the plan; `subs` is its statement's table of subqueries.
    pub fn execute(
        &self,
        txn: Option<&mut Transaction>,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        match txn {
            Some(t) => self.execute_in(Txn::Mut(t), ctx, subs),
            None => self.execute_in(Txn::None, ctx, subs),
        }
    }

    /// Runs the plan through a shared borrow of `txn` (a subquery's plan, while the plan
    /// that holds it scans).
    pub(crate) fn execute_shared(
        &self,
        txn: &Transaction,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        self.execute_in(Txn::Shared(txn), ctx, subs)
    }

    pub(crate) fn execute_in(
        &self,
        txn: Txn,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        if self.has_sub {
            // Subqueries read through a shared transaction while this plan scans.
            let shared = match &txn {
                _ if self.for_update => {
                    return Err(SqlError::unsupported("FOR UPDATE with subqueries"))
                }
                Txn::Mut(t) => &**t,
                Txn::Shared(t) => *t,
                Txn::None => return Err(SqlError::internal("no transaction for a subquery")),
            };
            let sc = SubCtx::new(subs, shared);
            let ctx = Ctx {
                sub: Some(&sc),
                ..*ctx
            };
            return self.run(Txn::Shared(shared), &ctx, subs);
        }
        self.run(txn, ctx, subs)
    }

    fn run(&self, txn: Txn, ctx: &Ctx, subs: &[Subquery]) -> Result<Vec<Vec<Value>>, SqlError> {
        let limit = limit_value(&self.limit, ctx)?;
        let offset = limit_value(&self.offset, ctx)?.unwrap_or(0);
        let mut rows: Vec<Vec<Value>> = Vec::new();
        // Rows can stop early when no later stage needs them all.
        let early = self.group_by.is_none()
            && !self.distinct
            && (self.order.is_empty() || self.ordered_scan.is_some());
        let stop_at = limit.map(|l| l.saturating_add(offset));
        // A sort under LIMIT/OFFSET without grouping or DISTINCT keeps each row's sort keys
        // and source row, and computes the select list only for the rows that survive, as
        // MySQL does: less work, and no error or warning from rows not sent.
        // Only under LIMIT/OFFSET: without them every row is sent anyway, and keeping the
        // source rows would cost allocations for nothing.
        let defer = self.group_by.is_none()
            && !self.distinct
            && !self.order.is_empty()
            && self.ordered_scan.is_none()
            && (limit.is_some() || offset > 0);
        let keys_at = if defer { 0 } else { self.visible };
        let mut groups: BTreeMap<GroupKey, Vec<AggState>> = BTreeMap::new();
        let mut txn = txn;
        let union_rows = if let Some(d) = &self.derived {
            Some(d.execute_in(txn.reborrow(), ctx, subs)?)
        } else if self.union.is_empty() {
            None
        } else {
            let mut all: Vec<Vec<Value>> = Vec::new();
            for (p, op) in &self.union {
                let rows = p.execute_in(txn.reborrow(), ctx, subs)?;
                set_combine(*op, &mut all, rows);
            }
            Some(all)
        };
        // WHERE terms that read no row are decided once, before any row is read; when one is
        // not true, no row is read (MySQL's "Impossible WHERE"). This also raises their
        // warnings once even when the table is empty, as MySQL does.
        // LIMIT 0 reads nothing (and evaluates nothing), as in MySQL.
        let impossible = limit == Some(0)
            || match &self.filter {
                Some(f) => !fixed_terms_hold(f, ctx)?,
                None => false,
            };
        let built = match (txn.shared(), self.joins.is_empty()) {
            _ if impossible => Vec::new(),
            (_, true) => Vec::new(),
            (Some(txn), false) => crate::exec::join::build(&self.joins, txn, ctx, &|p| {
                p.execute_in(Txn::Shared(txn), ctx, subs)
            })?,
            (None, false) => return Err(SqlError::internal("no transaction for a join")),
        };
        {
            // A complete (joined) row that passed every filter.
            let mut seen = 0u32;
            let mut sink = |row: &[Value]| -> Result<bool, SqlError> {
                seen = seen.wrapping_add(1);
                if seen.is_multiple_of(512) {
                    ctx.check_killed()?;
                }
                match &self.group_by {
                    None if defer => {
                        let keys = &self.outputs[self.visible..];
                        let mut kept = Vec::with_capacity(keys.len() + row.len());
                        for e in keys {
                            kept.push(e.eval(row, ctx)?);
                        }
                        kept.extend_from_slice(row);
                        ctx.charge(crate::runtime::limits::row_bytes(&kept))?;
                        rows.push(kept);
                    }
                    None => {
                        // Rows in scan order before OFFSET are dropped: not computed (MySQL
                        // does not evaluate their select list either).
                        let out = if !self.distinct && (rows.len() as u64) < offset {
                            Vec::new()
                        } else {
                            self.outputs
                                .iter()
                                .map(|e| e.eval(row, ctx))
                                .collect::<Result<Vec<_>, _>>()?
                        };
                        // Held until the statement ends: charged against its memory budget.
                        ctx.charge(crate::runtime::limits::row_bytes(&out))?;
                        rows.push(out);
                        if early {
                            if let Some(s) = stop_at {
                                return Ok((rows.len() as u64) < s);
                            }
                        }
                    }
                    Some((keys, aggs)) => {
                        let k = GroupKey(
                            keys.iter()
                                .map(|e| e.eval(row, ctx))
                                .collect::<Result<_, _>>()?,
                        );
                        let states = match groups.entry(k) {
                            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                            std::collections::btree_map::Entry::Vacant(v) => {
                                // A new group is held until the statement ends.
                                let held = crate::runtime::limits::row_bytes(&v.key().0);
                                ctx.charge(held + 64 * aggs.len() as u64)?;
                                v.insert(aggs.iter().map(|a| AggState::new(a.distinct)).collect())
                            }
                        };
                        for (st, spec) in states.iter_mut().zip(aggs) {
                            let v = match &spec.arg {
                                Some(a) => a.eval(row, ctx)?,
                                None => Value::Null,
                            };
                            st.add(spec, v)?;
                        }
                    }
                }
                Ok(true)
            };
            let mut joined = Vec::new();
            // A row of the first table; `jt` reads the joined tables.
            let mut scanned = 0u32;
            let mut on_row = |row: &[Value], jt: Option<&Transaction>| -> Result<bool, SqlError> {
                scanned = scanned.wrapping_add(1);
                if scanned.is_multiple_of(512) {
                    ctx.check_killed()?;
                }
                if let Some(f) = &self.filter {
                    if !f.test(row, ctx)? {
                        return Ok(true);
                    }
                }
                match jt.filter(|_| !self.joins.is_empty()) {
                    None => sink(row),
                    Some(jt) => {
                        joined.clear();
                        joined.extend_from_slice(row);
                        crate::exec::join::drive(
                            &self.joins,
                            &built,
                            0,
                            &mut joined,
                            jt,
                            ctx,
                            &mut sink,
                        )
                    }
                }
            };
            match (&self.table, txn) {
                _ if impossible => {}
                (_, txn) if union_rows.is_some() => {
                    // A UNION's operands, or a derived table's query, as source rows.
                    let jt = txn.shared();
                    for r in union_rows.iter().flatten() {
                        if !on_row(r, jt)? {
                            break;
                        }
                    }
                }
                (None, _) => {
                    on_row(&[], None)?;
                }
                (Some(t), txn) if t.virt.is_some() => {
                    let rows = match t.virt {
                        Some(k) => ctx.virtual_of(k)?,
                        None => &[],
                    };
                    let jt = txn.shared();
                    for r in rows {
                        if !on_row(r, jt)? {
                            break;
                        }
                    }
                }
                (Some(t), Txn::Mut(txn)) if self.for_update => {
                    let reverse = self.ordered_scan == Some(true);
                    {
                        // Locking read: lock each row found, then read its newest version.
                        let mut keys = Vec::new();
                        scan_rows(
                            txn,
                            t,
                            &self.access,
                            &self.wanted,
                            reverse,
                            ctx,
                            &mut |k, _| {
                                keys.push(k.to_vec());
                                Ok(true)
                            },
                        )?;
                        for k in keys {
                            if let Some(v) = txn
                                .get_for_update(&t.primary, &k)
                                .map_err(SqlError::engine)?
                            {
                                if !on_row(&t.decode_some(&v, &self.wanted)?, Some(&*txn))? {
                                    break;
                                }
                            }
                        }
                    }
                }
                (Some(t), txn) => {
                    let Some(txn) = txn.shared() else {
                        return Err(SqlError::internal("no transaction for a table read"));
                    };
                    let reverse = self.ordered_scan == Some(true);
                    scan_rows(
                        txn,
                        t,
                        &self.access,
                        &self.wanted,
                        reverse,
                        ctx,
                        &mut |_, r| on_row(&r, Some(txn)),
                    )?;
                }
            }
        }
        if let Some((keys, aggs)) = &self.group_by {
            if groups.is_empty() && keys.is_empty() {
                groups.insert(
                    GroupKey(Vec::new()),
                    aggs.iter().map(|a| AggState::new(a.distinct)).collect(),
                );
            }
            for (k, states) in groups {
                let mut grow = k.0;
                for (st, spec) in states.into_iter().zip(aggs) {
                    grow.push(st.finish(spec));
                }
                if let Some(h) = &self.having {
                    if !h.test(&grow, ctx)? {
                        continue;
                    }
                }
                let out = self
                    .outputs
                    .iter()
                    .map(|e| e.eval(&grow, ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                rows.push(out);
            }
        }
        if self.distinct {
            let mut seen = std::collections::BTreeSet::new();
            rows.retain(|r| seen.insert(GroupKey(r[..self.visible].to_vec())));
        }
        if !self.order.is_empty() && self.ordered_scan.is_none() {
            let v = keys_at;
            let desc = &self.order;
            rows.sort_by(|a, b| {
                for (i, d) in desc.iter().enumerate() {
                    let c = a[v + i].order_cmp(&b[v + i]);
                    if c != Ordering::Equal {
                        return if *d { c.reverse() } else { c };
                    }
                }
                Ordering::Equal
            });
        }
        let skip = (offset as usize).min(rows.len());
        let mut rows: Vec<Vec<Value>> = rows.drain(skip..).collect();
        if let Some(l) = limit {
            rows.truncate(l as usize);
        }
        if defer {
            let n_keys = self.outputs.len() - self.visible;
            for r in &mut rows {
                let source = &r[n_keys..];
                let out = self.outputs[..self.visible]
                    .iter()
                    .map(|e| e.eval(source, ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                *r = out;
            }
            return Ok(rows);
        }
        if self.outputs.len() > self.visible {
            for r in &mut rows {
                r.truncate(self.visible);
            }
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod group_key_tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A map of groups searched with a row's borrowed key values finds the group that an
    /// owned key finds: collation-equal text ('a' and 'A'), NULLs equal, and a key that is a
    /// prefix of another is a different group.
    #[test]
    fn a_borrowed_key_finds_what_an_owned_key_finds() {
        let keys = [
            vec![Value::Str("a".into()), Value::Int(1)],
            vec![Value::Null, Value::Int(1)],
            vec![Value::Str("b".into())],
            vec![Value::Str("b".into()), Value::Null],
        ];
        let mut groups = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            groups.insert(GroupKey(k.clone()), i);
        }
        assert_eq!(groups.len(), 4);
        let probes = [
            (vec![Value::Str("A".into()), Value::Int(1)], Some(0)),
            (vec![Value::Null, Value::Int(1)], Some(1)),
            (vec![Value::Str("B".into())], Some(2)),
            (vec![Value::Str("b".into()), Value::Null], Some(3)),
            (vec![Value::Str("a".into())], None),
            (vec![Value::Str("a".into()), Value::Int(2)], None),
        ];
        for (probe, want) in probes {
            let owned = groups.get(&GroupKey(probe.clone())).copied();
            let borrowed = groups.get(KeyRef::new(&probe)).copied();
            assert_eq!(borrowed, want, "{probe:?}");
            assert_eq!(owned, borrowed, "{probe:?}");
        }
    }
}
