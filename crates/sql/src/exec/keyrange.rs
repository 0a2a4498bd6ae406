//! Key ranges: an access path's column bounds, evaluated and converted to the key columns'
//! types, as byte ranges of the encoded keys.

use std::cmp::Ordering;
use std::ops::Bound;

use crate::catalog::codec;
use crate::expr::{Ctx, Expr};
use crate::plan::access::ColBound;
use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::temporal::DateTime;
use crate::types::value::Value;
use crate::SqlError;

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
            let p = crate::types::convert::temporal::to_datetime(&v).ok_or(())?;
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

pub(crate) type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Byte ranges for bounds over `cols`; `None`: fall back to a full scan. `points`: whether
/// every range is one exact key (all columns of a unique key bound by equality).
pub(crate) fn byte_ranges(
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

pub(crate) fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}
