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
pub(crate) mod insert_batch;
pub(crate) mod join;
pub(crate) mod keyrange;
pub(crate) mod load;
pub(crate) mod lock;
pub(crate) mod locked;
pub(crate) mod op;
pub(crate) mod operator;
pub(crate) mod scan;
pub(crate) mod subquery;

use std::cmp::Ordering;

use crate::error::SqlError;
use crate::expr::{Ctx, Expr};
use crate::plan::select::{AggFn, AggSpec, SelectPlan, Subquery};
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
    /// Bytes of the values in `seen`, charged to the statement's budget by the caller.
    seen_bytes: u64,
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
            seen_bytes: 0,
        }
    }

    /// Bytes [`AggState::add`] of `v` would newly hold: a DISTINCT aggregate's unseen value.
    fn would_hold(&self, spec: &AggSpec, v: &Value) -> u64 {
        match &self.seen {
            Some(seen)
                if !matches!(spec.func, AggFn::CountStar | AggFn::Any)
                    && !v.is_null()
                    && !seen.contains(&SqlOrdered(v.clone())) =>
            {
                crate::runtime::limits::row_bytes(std::slice::from_ref(v))
            }
            _ => 0,
        }
    }

    /// Bytes this state holds beyond its fixed size: a DISTINCT aggregate's values.
    fn held_bytes(&self) -> u64 {
        self.seen_bytes
    }

    /// Folds `v` in; returns the bytes the state newly holds (a DISTINCT aggregate's new
    /// value), which the caller charges: a COUNT(DISTINCT) over a large table holds every
    /// distinct value, and was not charged before (one fixed charge per state).
    fn add(&mut self, spec: &AggSpec, v: Value) -> Result<u64, SqlError> {
        if spec.func == AggFn::CountStar {
            self.count += 1;
            return Ok(0);
        }
        if spec.func == AggFn::Any {
            if self.count == 0 {
                self.best = Some(v);
            }
            self.count += 1;
            return Ok(0);
        }
        if v.is_null() {
            return Ok(0);
        }
        let mut held = 0;
        if let Some(seen) = &mut self.seen {
            let bytes = crate::runtime::limits::row_bytes(std::slice::from_ref(&v));
            if !seen.insert(SqlOrdered(v.clone())) {
                return Ok(0);
            }
            self.seen_bytes += bytes;
            held = bytes;
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
                    // An integer into an integer sum (SUM of an INT column): no conversion.
                    (Some(Value::Decimal(s)), Value::Int(i)) if s.scale == 0 => {
                        match s.mant.checked_add(i128::from(*i)) {
                            Some(mant) => Value::Decimal(Decimal { mant, scale: 0 }),
                            None => Value::Double(s.to_f64() + *i as f64),
                        }
                    }
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
        Ok(held)
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
