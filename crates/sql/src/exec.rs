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

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use sqlparser::ast;
use zipdb_engine::Transaction;

use crate::catalog::Table;
use crate::codec;
use crate::expr::{Cmp, Compiler, Ctx, Expr, Scope};
use crate::result::{col_flags, describe, ColumnMeta};
use crate::value::{DateTime, Decimal, SqlType, Value};
use crate::SqlError;

// ---- Scopes ------------------------------------------------------------------------------

/// Resolves column names to positions in a table's row.
pub struct TableScope<'a> {
    pub table: &'a Table,
    pub alias: Option<&'a str>,
    pub clause: &'static str,
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
}

impl Scope for TableScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        if let Some(q) = q {
            let ok = q == self.table.def.name || Some(q) == self.alias;
            if !ok {
                return Err(SqlError::unknown_column(
                    &format!("{q}.{name}"),
                    self.clause,
                ));
            }
        }
        match self.table.column(name) {
            Some(i) => Ok(Expr::Col(i)),
            None => Err(SqlError::unknown_column(name, self.clause)),
        }
    }
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
}

/// A scope without columns (SELECT without FROM).
pub struct NoScope<'a> {
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
    pub clause: &'static str,
}

impl Scope for NoScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        let n = match q {
            Some(q) => format!("{q}.{name}"),
            None => name.to_string(),
        };
        Err(SqlError::unknown_column(&n, self.clause))
    }
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
}

// ---- Access paths ------------------------------------------------------------------------

/// Bounds on one key column.
#[derive(Debug, Clone)]
pub enum ColBound {
    Eq(Expr),
    In(Vec<Expr>),
    Range(Option<(Expr, bool)>, Option<(Expr, bool)>),
}

#[derive(Debug, Clone)]
pub enum Access {
    /// No table.
    None,
    Full,
    /// Bounds on a prefix of the primary key's columns.
    Primary(Vec<ColBound>),
    /// Bounds on a prefix of secondary index `i`'s columns.
    Index(usize, Vec<ColBound>),
}

impl Access {
    pub fn describe(&self, t: Option<&Table>) -> (String, Option<String>) {
        match (self, t) {
            (Access::Primary(b), _) if b.iter().all(|x| matches!(x, ColBound::Eq(_))) => {
                ("const".into(), Some("PRIMARY".into()))
            }
            (Access::Primary(_), _) => ("range".into(), Some("PRIMARY".into())),
            (Access::Index(i, b), Some(t)) => (
                if b.iter().all(|x| matches!(x, ColBound::Eq(_))) {
                    "ref".into()
                } else {
                    "range".into()
                },
                Some(t.def.indexes[*i].name.clone()),
            ),
            (Access::None, _) => ("".into(), None),
            _ => ("ALL".into(), None),
        }
    }
}

/// Splits a WHERE clause into its top-level AND terms.
fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// The bounds the WHERE terms put on column `col`.
fn bounds_on(terms: &[&Expr], col: usize) -> Option<ColBound> {
    let mut lo: Option<(Expr, bool)> = None;
    let mut hi: Option<(Expr, bool)> = None;
    for t in terms {
        match t {
            Expr::Cmp(op, a, b) => {
                let (op, v) = match (&**a, &**b) {
                    (Expr::Col(c), v) if *c == col && v.is_constant() => (*op, v),
                    (v, Expr::Col(c)) if *c == col && v.is_constant() => (op.flip(), v),
                    _ => continue,
                };
                match op {
                    Cmp::Eq => return Some(ColBound::Eq(v.clone())),
                    Cmp::Gt => lo = Some((v.clone(), false)),
                    Cmp::Ge => lo = Some((v.clone(), true)),
                    Cmp::Lt => hi = Some((v.clone(), false)),
                    Cmp::Le => hi = Some((v.clone(), true)),
                    _ => {}
                }
            }
            Expr::Between(x, l, h, false) => {
                if matches!(&**x, Expr::Col(c) if *c == col) && l.is_constant() && h.is_constant() {
                    lo = Some(((**l).clone(), true));
                    hi = Some(((**h).clone(), true));
                }
            }
            Expr::InList(x, list, false) => {
                if matches!(&**x, Expr::Col(c) if *c == col)
                    && list.iter().all(Expr::is_constant)
                    && list.len() <= 1000
                {
                    return Some(ColBound::In(list.clone()));
                }
            }
            _ => {}
        }
    }
    if lo.is_some() || hi.is_some() {
        Some(ColBound::Range(lo, hi))
    } else {
        None
    }
}

/// Bounds on a prefix of `cols`: equalities, then at most one IN or range.
fn key_bounds(terms: &[&Expr], cols: &[usize]) -> Vec<ColBound> {
    let mut out = Vec::new();
    for &c in cols {
        match bounds_on(terms, c) {
            Some(b @ ColBound::Eq(_)) => out.push(b),
            Some(b) => {
                out.push(b);
                break;
            }
            None => break,
        }
    }
    out
}

/// Chooses the access path for `filter` over `t`.
pub fn choose_access(t: &Table, filter: Option<&Expr>) -> Access {
    let Some(f) = filter else {
        return Access::Full;
    };
    let mut terms = Vec::new();
    conjuncts(f, &mut terms);
    let score = |b: &[ColBound], ncols: usize, unique: bool| -> u32 {
        let eq = b.iter().filter(|x| matches!(x, ColBound::Eq(_))).count();
        if b.is_empty() {
            0
        } else if unique && eq == ncols {
            100
        } else {
            (eq as u32) * 10 + 5
        }
    };
    let mut best = Access::Full;
    let mut best_score = 0;
    if !t.def.pk.is_empty() {
        let b = key_bounds(&terms, &t.def.pk);
        let s = score(&b, t.def.pk.len(), true) + 1;
        if !b.is_empty() {
            best_score = s;
            best = Access::Primary(b);
        }
    }
    for (i, idx) in t.def.indexes.iter().enumerate() {
        let b = key_bounds(&terms, &idx.columns);
        let s = score(&b, idx.columns.len(), idx.unique);
        if !b.is_empty() && s > best_score {
            best_score = s;
            best = Access::Index(i, b);
        }
    }
    best
}

/// Converts a bound value to a key column's type, if that is exact; `Err(())` when the
/// comparison would not be by the column's own ordering (the caller then scans).
enum KeyVal {
    /// Matches nothing (e.g. `= NULL`, or `int_col = 1.5`).
    Empty,
    Val(Value),
}

fn key_value(v: Value, ty: SqlType, upper: Option<bool>) -> Result<KeyVal, ()> {
    if v.is_null() {
        return Ok(KeyVal::Empty);
    }
    match ty {
        SqlType::Int { unsigned, .. } => {
            let d = match &v {
                Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
                    v.to_decimal().ok_or(())?
                }
                Value::Str(s) => Decimal::parse(s).ok_or(())?,
                _ => return Err(()),
            };
            let whole = d.rescale(0).ok_or(())?;
            let exact = whole.cmp(d) == Ordering::Equal;
            let m = if exact {
                whole.mant
            } else {
                match upper {
                    // An equality with a fraction matches no integer.
                    None => return Ok(KeyVal::Empty),
                    // `< 1.5` / `<= 1.5` → up to 1; `> 1.5` → from 2.
                    Some(true) => (d.to_f64()).floor() as i128,
                    Some(false) => (d.to_f64()).ceil() as i128,
                }
            };
            if unsigned {
                if m < 0 {
                    return if upper == Some(false) {
                        Ok(KeyVal::Val(Value::UInt(0)))
                    } else {
                        Err(())
                    };
                }
                u64::try_from(m)
                    .map(|u| KeyVal::Val(Value::UInt(u)))
                    .map_err(|_| ())
            } else {
                i64::try_from(m)
                    .map(|i| KeyVal::Val(Value::Int(i)))
                    .map_err(|_| ())
            }
        }
        SqlType::Float | SqlType::Double => match v {
            Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
                Ok(KeyVal::Val(Value::Double(v.to_f64().ok_or(())?)))
            }
            _ => Err(()),
        },
        SqlType::Decimal { scale, .. } => match v {
            Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
                let d = v.to_decimal().ok_or(())?;
                let r = d.rescale(scale).ok_or(())?;
                if r.cmp(d) != Ordering::Equal {
                    return Err(());
                }
                Ok(KeyVal::Val(Value::Decimal(r)))
            }
            _ => Err(()),
        },
        t if t.is_text() => match v {
            Value::Str(s) => Ok(KeyVal::Val(Value::Str(s))),
            _ => Err(()),
        },
        SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. } => match v {
            Value::Bytes(b) => Ok(KeyVal::Val(Value::Bytes(b))),
            Value::Str(s) => Ok(KeyVal::Val(Value::Bytes(s.into_bytes()))),
            _ => Err(()),
        },
        SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. } => {
            let p = crate::expr::to_datetime(&v).ok_or(())?;
            Ok(KeyVal::Val(if ty == SqlType::Date {
                if DateTime::unpack(p).hour != 0 {
                    return Err(());
                }
                Value::Date(p)
            } else {
                Value::DateTime(p)
            }))
        }
    }
}

/// The smallest byte string greater than every string starting with `p` (None: no bound).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut v = p.to_vec();
    while let Some(last) = v.pop() {
        if last < 0xff {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}

type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Byte ranges for bounds over `cols`; `None`: fall back to a full scan. `points`: whether
/// every range is one exact key (all columns of a unique key bound by equality).
fn byte_ranges(
    bounds: &[ColBound],
    cols: &[usize],
    types: &[SqlType],
    row: &[Value],
    ctx: &Ctx,
) -> Result<Option<Vec<KeyRange>>, SqlError> {
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    for (b, &c) in bounds.iter().zip(cols) {
        let ty = types[c];
        match b {
            ColBound::Eq(e) => match key_value(e.eval(row, ctx)?, ty, None) {
                Err(()) => return Ok(None),
                Ok(KeyVal::Empty) => return Ok(Some(Vec::new())),
                Ok(KeyVal::Val(v)) => {
                    for p in &mut prefixes {
                        codec::encode_key(p, &v, ty);
                    }
                }
            },
            ColBound::In(list) => {
                let mut keys = Vec::new();
                for e in list {
                    match key_value(e.eval(row, ctx)?, ty, None) {
                        Err(()) => return Ok(None),
                        Ok(KeyVal::Empty) => {}
                        Ok(KeyVal::Val(v)) => {
                            let mut k = Vec::new();
                            codec::encode_key(&mut k, &v, ty);
                            keys.push(k);
                        }
                    }
                }
                keys.sort();
                keys.dedup();
                let mut next = Vec::new();
                for p in &prefixes {
                    for k in &keys {
                        let mut x = p.clone();
                        x.extend_from_slice(k);
                        next.push(x);
                    }
                }
                prefixes = next;
            }
            ColBound::Range(lo, hi) => {
                let enc =
                    |e: &Expr, upper: bool| -> Result<Result<Option<Vec<u8>>, ()>, SqlError> {
                        Ok(match key_value(e.eval(row, ctx)?, ty, Some(upper)) {
                            Err(()) => Err(()),
                            Ok(KeyVal::Empty) => Ok(None),
                            Ok(KeyVal::Val(v)) => {
                                let mut k = Vec::new();
                                codec::encode_key(&mut k, &v, ty);
                                Ok(Some(k))
                            }
                        })
                    };
                let lo_k = match lo {
                    None => None,
                    Some((e, incl)) => match enc(e, false)? {
                        Err(()) => return Ok(None),
                        Ok(None) => return Ok(Some(Vec::new())),
                        Ok(Some(k)) => Some((k, *incl)),
                    },
                };
                let hi_k = match hi {
                    None => None,
                    Some((e, incl)) => match enc(e, true)? {
                        Err(()) => return Ok(None),
                        Ok(None) => return Ok(Some(Vec::new())),
                        Ok(Some(k)) => Some((k, *incl)),
                    },
                };
                let mut out = Vec::new();
                for p in &prefixes {
                    let start = match &lo_k {
                        // NULLs (tag 0x00) sort first: a lower bound of any kind excludes them.
                        None if hi_k.is_some() => {
                            let mut x = p.clone();
                            x.push(1);
                            Bound::Included(x)
                        }
                        None => incl_or_unbounded(p),
                        Some((k, incl)) => {
                            let mut x = p.clone();
                            x.extend_from_slice(k);
                            if *incl {
                                Bound::Included(x)
                            } else {
                                match prefix_end(&x) {
                                    Some(e) => Bound::Included(e),
                                    None => return Ok(Some(Vec::new())),
                                }
                            }
                        }
                    };
                    let end = match &hi_k {
                        None => excl_end(p),
                        Some((k, incl)) => {
                            let mut x = p.clone();
                            x.extend_from_slice(k);
                            if *incl {
                                excl_end(&x)
                            } else {
                                Bound::Excluded(x)
                            }
                        }
                    };
                    out.push((start, end));
                }
                return Ok(Some(out));
            }
        }
    }
    Ok(Some(
        prefixes
            .into_iter()
            .map(|p| (incl_or_unbounded(&p), excl_end(&p)))
            .collect(),
    ))
}

fn incl_or_unbounded(p: &[u8]) -> Bound<Vec<u8>> {
    if p.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Included(p.to_vec())
    }
}

fn excl_end(p: &[u8]) -> Bound<Vec<u8>> {
    match prefix_end(p) {
        Some(e) if !p.is_empty() => Bound::Excluded(e),
        _ => Bound::Unbounded,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Reads the rows the access path yields, in key order (reversed with `reverse`), calling `f`
/// with (primary key, row) until it returns `false`.
#[allow(clippy::too_many_arguments)]
pub fn scan_rows(
    txn: &Transaction,
    t: &Table,
    access: &Access,
    wanted: &[bool],
    reverse: bool,
    ctx: &Ctx,
    f: &mut dyn FnMut(&[u8], Vec<Value>) -> Result<bool, SqlError>,
) -> Result<(), SqlError> {
    let eng = SqlError::engine;
    let decode = |v: &[u8]| t.decode_some(v, wanted);
    let full: Vec<KeyRange> = vec![(Bound::Unbounded, Bound::Unbounded)];
    match access {
        Access::None => Ok(()),
        Access::Full | Access::Primary(_) => {
            let ranges = match access {
                Access::Primary(b) => match byte_ranges(b, &t.def.pk, &t.types, &[], ctx)? {
                    Some(r) => r,
                    None => full,
                },
                _ => full,
            };
            let points = matches!(access, Access::Primary(b)
                if b.len() == t.def.pk.len() && b.iter().all(|x| !matches!(x, ColBound::Range(..))));
            let mut ranges = ranges;
            if reverse {
                ranges.reverse();
            }
            for (lo, hi) in &ranges {
                if points {
                    if let Bound::Included(k) = lo {
                        if let Some(v) = txn.get(&t.primary, k).map_err(eng)? {
                            if !f(k, decode(&v)?)? {
                                return Ok(());
                            }
                        }
                        continue;
                    }
                }
                let r = (as_ref(lo), as_ref(hi));
                let it = if reverse {
                    txn.scan_rev(&t.primary, r).map_err(eng)?
                } else {
                    txn.scan(&t.primary, r).map_err(eng)?
                };
                for kv in it {
                    let (k, v) = kv.map_err(eng)?;
                    if !f(&k, decode(&v)?)? {
                        return Ok(());
                    }
                }
            }
            Ok(())
        }
        Access::Index(i, b) => {
            let idx = &t.def.indexes[*i];
            let tree = &t.indexes[*i];
            let Some(mut ranges) = byte_ranges(b, &idx.columns, &t.types, &[], ctx)? else {
                return scan_rows(txn, t, &Access::Full, wanted, reverse, ctx, f);
            };
            if reverse {
                ranges.reverse();
            }
            for (lo, hi) in &ranges {
                let r = (as_ref(lo), as_ref(hi));
                let it = if reverse {
                    txn.scan_rev(tree, r).map_err(eng)?
                } else {
                    txn.scan(tree, r).map_err(eng)?
                };
                for kv in it {
                    let (k, _) = kv.map_err(eng)?;
                    let n = t.index_prefix_len(*i, &k)?;
                    let pk = &k[n..];
                    match txn.get(&t.primary, pk).map_err(eng)? {
                        Some(v) => {
                            if !f(pk, decode(&v)?)? {
                                return Ok(());
                            }
                        }
                        None => {
                            return Err(SqlError::corrupt(format!(
                                "index {} of table {}.{} names a row that does not exist",
                                idx.name, t.def.db, t.def.name
                            )))
                        }
                    }
                }
            }
            Ok(())
        }
    }
}

/// Column positions an expression reads.
pub fn mark_columns(e: &Expr, out: &mut [bool]) {
    match e {
        Expr::Col(i) => {
            if let Some(w) = out.get_mut(*i) {
                *w = true;
            }
        }
        Expr::Const(_) | Expr::Param(_) => {}
        Expr::Neg(x) | Expr::Not(x) | Expr::IsNull(x, _) | Expr::Cast(x, _) => mark_columns(x, out),
        Expr::Arith(_, a, b)
        | Expr::Cmp(_, a, b)
        | Expr::And(a, b)
        | Expr::Or(a, b)
        | Expr::Xor(a, b)
        | Expr::Like(a, b, _, _) => {
            mark_columns(a, out);
            mark_columns(b, out);
        }
        Expr::Between(a, b, c, _) => {
            mark_columns(a, out);
            mark_columns(b, out);
            mark_columns(c, out);
        }
        Expr::InList(a, l, _) => {
            mark_columns(a, out);
            l.iter().for_each(|x| mark_columns(x, out));
        }
        Expr::Case(o, w, e) => {
            if let Some(o) = o {
                mark_columns(o, out);
            }
            for (a, b) in w {
                mark_columns(a, out);
                mark_columns(b, out);
            }
            if let Some(e) = e {
                mark_columns(e, out);
            }
        }
        Expr::Func(_, args) => args.iter().for_each(|x| mark_columns(x, out)),
    }
}

/// Metadata of a table column in a result.
pub fn table_column_meta(t: &Table, i: usize, label: &str) -> ColumnMeta {
    let c = &t.def.columns[i];
    let (wire_type, length, decimals, charset, mut flags) = describe(c.ty);
    if !c.nullable {
        flags |= col_flags::NOT_NULL;
    }
    if t.def.pk.contains(&i) {
        flags |= col_flags::PRI_KEY;
    }
    if c.auto_increment {
        flags |= col_flags::AUTO_INCREMENT;
    }
    for idx in &t.def.indexes {
        if idx.columns.first() == Some(&i) {
            flags |= if idx.unique && idx.columns.len() == 1 {
                col_flags::UNIQUE_KEY
            } else {
                col_flags::MULTIPLE_KEY
            };
        }
    }
    ColumnMeta {
        schema: t.def.db.clone(),
        table: t.def.name.clone(),
        org_table: t.def.name.clone(),
        name: label.to_string(),
        org_name: c.name.clone(),
        charset,
        length,
        wire_type,
        flags,
        decimals,
    }
}

// ---- Aggregates --------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFn {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// A column outside GROUP BY: any value of the group (MySQL without ONLY_FULL_GROUP_BY).
    Any,
}

#[derive(Debug, Clone)]
pub struct AggSpec {
    pub func: AggFn,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub ty: SqlType,
}

#[derive(Debug, Clone)]
struct AggState {
    count: u64,
    sum: Option<Value>,
    best: Option<Value>,
    seen: Option<Vec<Value>>,
}

impl AggState {
    fn new(distinct: bool) -> AggState {
        AggState {
            count: 0,
            sum: None,
            best: None,
            seen: distinct.then(Vec::new),
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
            if seen.iter().any(|s| s.group_eq(&v)) {
                return Ok(());
            }
            seen.push(v.clone());
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
        for (a, b) in self.0.iter().zip(&o.0) {
            let c = a.order_cmp(b);
            if c != Ordering::Equal {
                return c;
            }
        }
        self.0.len().cmp(&o.0.len())
    }
}

/// The aggregate stage's scope: aggregate calls and GROUP BY expressions become slots of the
/// group row (`[group values..., aggregate values...]`).
pub struct AggScope<'a> {
    pub table: Option<&'a Table>,
    pub alias: Option<&'a str>,
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
    pub group_by: Vec<(String, Expr)>,
    pub aggs: Vec<AggSpec>,
    pub aliases: Vec<(String, ast::Expr)>,
    pub clause: &'static str,
}

impl AggScope<'_> {
    fn source_scope(&self) -> Box<dyn Scope + '_> {
        match self.table {
            Some(t) => Box::new(TableScope {
                table: t,
                alias: self.alias,
                clause: self.clause,
                vars: self.vars,
            }),
            None => Box::new(NoScope {
                vars: self.vars,
                clause: self.clause,
            }),
        }
    }

    fn source_types(&self) -> Vec<SqlType> {
        self.table.map(|t| t.types.clone()).unwrap_or_default()
    }

    fn agg_slot(&mut self, spec: AggSpec) -> Expr {
        let n = self.group_by.len();
        self.aggs.push(spec);
        Expr::Col(n + self.aggs.len() - 1)
    }
}

impl Scope for AggScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        if q.is_none() {
            if let Some((_, ast)) = self
                .aliases
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(name))
                .cloned()
            {
                let mut c = Compiler::new();
                return c.compile(&ast, self);
            }
        }
        let e = self.source_scope().column(q, name)?;
        let types = self.source_types();
        let ty = match &e {
            Expr::Col(i) => types.get(*i).copied(),
            _ => None,
        }
        .unwrap_or(SqlType::Varchar {
            len: 255,
            binary: false,
        });
        Ok(self.agg_slot(AggSpec {
            func: AggFn::Any,
            arg: Some(e),
            distinct: false,
            ty,
        }))
    }

    fn intercept(&mut self, c: &mut Compiler, e: &ast::Expr) -> Result<Option<Expr>, SqlError> {
        let text = e.to_string();
        if let Some(i) = self
            .group_by
            .iter()
            .position(|(g, _)| g.eq_ignore_ascii_case(&text))
        {
            return Ok(Some(Expr::Col(i)));
        }
        let ast::Expr::Function(f) = e else {
            return Ok(None);
        };
        let name = f.name.to_string().to_ascii_uppercase();
        let func = match name.as_str() {
            "COUNT" => AggFn::Count,
            "SUM" => AggFn::Sum,
            "AVG" => AggFn::Avg,
            "MIN" => AggFn::Min,
            "MAX" => AggFn::Max,
            _ => return Ok(None),
        };
        let ast::FunctionArguments::List(l) = &f.args else {
            return Err(SqlError::wrong_args(&name));
        };
        let distinct = matches!(
            l.duplicate_treatment,
            Some(ast::DuplicateTreatment::Distinct)
        );
        if l.args.len() != 1 {
            return Err(SqlError::wrong_args(&name));
        }
        let (func, arg) = match &l.args[0] {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) if func == AggFn::Count => {
                (AggFn::CountStar, None)
            }
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                let mut src = self.source_scope();
                (func, Some(c.compile(x, &mut *src)?))
            }
            _ => return Err(SqlError::wrong_args(&name)),
        };
        let types = self.source_types();
        let arg_ty = arg
            .as_ref()
            .map(|a| a.result_type(&|i| types.get(i).copied()));
        let ty = match (func, arg_ty) {
            (AggFn::CountStar | AggFn::Count, _) => SqlType::Int {
                bytes: 8,
                unsigned: false,
            },
            (AggFn::Sum, Some(t)) if t.is_integer() => SqlType::Decimal {
                precision: 38,
                scale: 0,
            },
            (AggFn::Sum, Some(SqlType::Decimal { scale, .. })) => SqlType::Decimal {
                precision: 38,
                scale,
            },
            (AggFn::Avg, Some(t)) if t.is_integer() => SqlType::Decimal {
                precision: 38,
                scale: 4,
            },
            (AggFn::Avg, Some(SqlType::Decimal { scale, .. })) => SqlType::Decimal {
                precision: 38,
                scale: (scale + 4).min(30),
            },
            (AggFn::Sum | AggFn::Avg, _) => SqlType::Double,
            (_, Some(t)) => t,
            (_, None) => SqlType::Double,
        };
        Ok(Some(self.agg_slot(AggSpec {
            func,
            arg,
            distinct,
            ty,
        })))
    }

    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }
}

// ---- SELECT --------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub table: Option<Arc<Table>>,
    pub access: Access,
    pub filter: Option<Expr>,
    pub wanted: Vec<bool>,
    /// Aggregation: GROUP BY expressions and aggregates over the source row.
    pub group_by: Option<(Vec<Expr>, Vec<AggSpec>)>,
    pub having: Option<Expr>,
    /// Output expressions: visible columns, then hidden ORDER BY keys.
    pub outputs: Vec<Expr>,
    pub visible: usize,
    pub order: Vec<bool>,
    pub distinct: bool,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// The scan already yields rows in ORDER BY order (forward or reversed).
    pub ordered_scan: Option<bool>,
    pub columns: Arc<Vec<ColumnMeta>>,
    pub for_update: bool,
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
            other => Err(SqlError::new(
                1210,
                "HY000",
                format!(
                    "Incorrect arguments to LIMIT: {}",
                    other.to_string_lossy().unwrap_or_default()
                ),
            )),
        },
    }
}

impl SelectPlan {
    pub fn execute(
        &self,
        txn: Option<&mut Transaction>,
        ctx: &Ctx,
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        let limit = limit_value(&self.limit, ctx)?;
        let offset = limit_value(&self.offset, ctx)?.unwrap_or(0);
        let mut rows: Vec<Vec<Value>> = Vec::new();
        // Rows can stop early when no later stage needs them all.
        let early = self.group_by.is_none()
            && !self.distinct
            && (self.order.is_empty() || self.ordered_scan.is_some());
        let stop_at = limit.map(|l| l.saturating_add(offset));
        let mut groups: BTreeMap<GroupKey, Vec<AggState>> = BTreeMap::new();
        {
            let mut on_row = |row: &[Value]| -> Result<bool, SqlError> {
                if let Some(f) = &self.filter {
                    if !f.test(row, ctx)? {
                        return Ok(true);
                    }
                }
                match &self.group_by {
                    None => {
                        let out = self
                            .outputs
                            .iter()
                            .map(|e| e.eval(row, ctx))
                            .collect::<Result<Vec<_>, _>>()?;
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
                        let states = groups.entry(k).or_insert_with(|| {
                            aggs.iter().map(|a| AggState::new(a.distinct)).collect()
                        });
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
            match (&self.table, txn) {
                (None, _) => {
                    on_row(&[])?;
                }
                (Some(t), _) if t.virt.is_some() => {
                    let rows = ctx.virtual_rows.ok_or_else(|| {
                        SqlError::internal("information_schema rows were not computed")
                    })?;
                    for r in rows {
                        if !on_row(r)? {
                            break;
                        }
                    }
                }
                (Some(t), Some(txn)) => {
                    let reverse = self.ordered_scan == Some(true);
                    if self.for_update {
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
                                if !on_row(&t.decode_some(&v, &self.wanted)?)? {
                                    break;
                                }
                            }
                        }
                    } else {
                        scan_rows(
                            txn,
                            t,
                            &self.access,
                            &self.wanted,
                            reverse,
                            ctx,
                            &mut |_, r| on_row(&r),
                        )?;
                    }
                }
                (Some(_), None) => {
                    return Err(SqlError::internal("no transaction for a table read"))
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
            let v = self.visible;
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
        if self.outputs.len() > self.visible {
            for r in &mut rows {
                r.truncate(self.visible);
            }
        }
        Ok(rows)
    }
}
