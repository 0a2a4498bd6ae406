//! SQL values: what a row holds, how values compare (MySQL's rules, the default collation
//! `utf8mb4_general_ci` included) and how they print.

use std::cmp::Ordering;

use crate::types::collation::collate_cmp;
use crate::types::convert::number::{IntPrefix, Scan, Tail};
use crate::types::datetext::read as read_text;
use crate::types::decimal::Decimal;
// `zipdb_sql::value::{DateTime, days_in_month}` are public paths (the server's binary protocol).
pub use crate::types::temporal::{days_in_month, DateTime};

/// A value: in a row, a parameter or the result of an expression.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Int(i64),
    UInt(u64),
    Double(f64),
    Decimal(Decimal),
    /// A string in the default character set (utf8mb4, collation general_ci).
    Str(String),
    /// A binary string (BINARY, VARBINARY, BLOB, or a parameter sent as bytes).
    Bytes(Vec<u8>),
    /// A DATE, packed as [`DateTime::pack`] with a zero time.
    Date(i64),
    /// A DATETIME or TIMESTAMP, packed as [`DateTime::pack`].
    DateTime(i64),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// As a double (numbers, numeric prefixes of strings as MySQL reads them).
    pub fn to_f64(&self) -> Option<f64> {
        Some(match self {
            Value::Null => return None,
            Value::Int(i) => *i as f64,
            Value::UInt(u) => *u as f64,
            Value::Double(d) => *d,
            Value::Decimal(d) => d.to_f64(),
            Value::Str(s) => text_f64(s.as_bytes()),
            Value::Bytes(b) => text_f64(b),
            Value::Date(p) | Value::DateTime(p) => temporal_number(*p),
        })
    }

    /// As a signed integer (rounding, saturating), MySQL's implicit conversion; text by its
    /// integer prefix, as MariaDB's `val_int` reads it (`'2.7'` is 2, with a warning).
    pub fn to_i64(&self) -> Option<i64> {
        Some(match self {
            Value::Null => return None,
            Value::Str(s) => text_i64(s.as_bytes()),
            Value::Bytes(b) => text_i64(b),
            Value::Int(i) => *i,
            Value::UInt(u) => i64::try_from(*u).unwrap_or(i64::MAX),
            Value::Decimal(d) => {
                let r = d.rescale(0)?.mant;
                i64::try_from(r).unwrap_or(if r < 0 { i64::MIN } else { i64::MAX })
            }
            other => {
                let f = other.to_f64()?.round();
                if f >= i64::MAX as f64 {
                    i64::MAX
                } else if f <= i64::MIN as f64 {
                    i64::MIN
                } else {
                    f as i64
                }
            }
        })
    }

    pub fn to_decimal(&self) -> Option<Decimal> {
        match self {
            Value::Null => None,
            Value::Int(i) => Some(Decimal::from_i64(*i)),
            Value::UInt(u) => Some(Decimal {
                mant: i128::from(*u),
                scale: 0,
            }),
            Value::Decimal(d) => Some(*d),
            Value::Str(s) => text_decimal(s.as_bytes()),
            Value::Bytes(b) => text_decimal(b),
            other => Decimal::from_f64(other.to_f64()?, 6),
        }
    }

    /// Truth value for WHERE: NULL is unknown (`None`).
    pub fn truth(&self) -> Option<bool> {
        match self {
            Value::Null => None,
            Value::Int(i) => Some(*i != 0),
            Value::UInt(u) => Some(*u != 0),
            Value::Decimal(d) => Some(d.mant != 0),
            other => Some(other.to_f64()? != 0.0),
        }
    }

    /// The value as text, as the text protocol sends it (`None` for NULL).
    pub fn to_text(&self) -> Option<Vec<u8>> {
        Some(match self {
            Value::Null => return None,
            Value::Int(i) => i.to_string().into_bytes(),
            Value::UInt(u) => u.to_string().into_bytes(),
            Value::Double(d) => format_double(*d).into_bytes(),
            Value::Decimal(d) => d.to_string().into_bytes(),
            Value::Str(s) => s.clone().into_bytes(),
            Value::Bytes(b) => b.clone(),
            Value::Date(p) => DateTime::unpack(*p).format_date().into_bytes(),
            Value::DateTime(p) => {
                let dt = DateTime::unpack(*p);
                dt.format(if dt.micro == 0 { 0 } else { 6 }).into_bytes()
            }
        })
    }

    /// The value as a string (for string functions and LIKE).
    pub fn to_string_lossy(&self) -> Option<String> {
        match self {
            Value::Str(s) => Some(s.clone()),
            other => other
                .to_text()
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_)
        )
    }

    /// MySQL comparison: `None` when either side is NULL. Numbers compare numerically (exactly
    /// for integers and decimals), strings under the default collation unless either is binary,
    /// a number against a string as doubles, temporals against strings as temporals.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        Some(match (self, other) {
            (Null, _) | (_, Null) => return None,
            (Int(a), Int(b)) => a.cmp(b),
            (UInt(a), UInt(b)) => a.cmp(b),
            (Int(a), UInt(b)) => {
                if *a < 0 {
                    Ordering::Less
                } else {
                    (*a as u64).cmp(b)
                }
            }
            (UInt(_), Int(_)) => other.sql_cmp(self)?.reverse(),
            (Str(a), Str(b)) => collate_cmp(a, b),
            (Str(a), Bytes(b)) => a.as_bytes().cmp(b.as_slice()),
            (Bytes(a), Str(b)) => a.as_slice().cmp(b.as_bytes()),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            (Date(a) | DateTime(a), Date(b) | DateTime(b)) => a.cmp(b),
            (Date(a) | DateTime(a), Str(s)) => a.cmp(&temporal_of_text(s)),
            (Date(a) | DateTime(a), Int(_) | UInt(_) | Decimal(_) | Double(_)) => {
                a.cmp(&temporal_of_number(other))
            }
            (Int(_) | UInt(_) | Decimal(_) | Double(_), Date(_) | DateTime(_)) => {
                other.sql_cmp(self)?.reverse()
            }
            (Str(_), Date(_) | DateTime(_)) => other.sql_cmp(self)?.reverse(),
            (Decimal(_) | Int(_) | UInt(_), Decimal(_) | Int(_) | UInt(_)) => {
                self.to_decimal()?.cmp(other.to_decimal()?)
            }
            _ => self.to_f64()?.partial_cmp(&other.to_f64()?)?,
        })
    }

    /// Equality as GROUP BY and DISTINCT see it: NULLs equal each other.
    pub fn group_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Null, _) | (_, Value::Null) => false,
            _ => self.sql_cmp(other) == Some(Ordering::Equal),
        }
    }

    /// Total order for ORDER BY: NULL first (as MySQL sorts ascending).
    pub fn order_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            _ => self.sql_cmp(other).unwrap_or(Ordering::Equal),
        }
    }
}

/// A value read as a date or datetime, as MariaDB reads one (text by `types::datetext`,
/// numbers by `number_to_datetime`); `None` when it is none. For the server's binary rows.
pub fn datetime_of(v: &Value) -> Option<DateTime> {
    temporal_quiet(v).map(|(d, _)| d)
}

/// [`crate::expr::builtins::temporal`] without the warning (for callers that try other
/// readings next).
pub(crate) fn temporal_quiet(v: &Value) -> Option<(DateTime, bool)> {
    match v {
        Value::Date(p) => Some((DateTime::unpack(*p), false)),
        Value::DateTime(p) => Some((DateTime::unpack(*p), true)),
        Value::Str(s) => read_text(s.as_bytes()).map(|t| (t.dt, t.has_time)),
        Value::Bytes(b) => read_text(b).map(|t| (t.dt, t.has_time)),
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            // The integer part (a fraction is cut, not rounded); negative is no date.
            let n: u64 = match v {
                Value::Int(i) => u64::try_from(*i).ok()?,
                Value::UInt(u) => *u,
                other => {
                    let f = other.to_f64()?;
                    if !(0.0..1e15).contains(&f) {
                        return None;
                    }
                    f.trunc() as u64
                }
            };
            // The forms with a time part are the ones above YYYYMMDD.
            let d = crate::types::temporal::number_to_datetime(i128::from(n))?;
            Some((d, n > 99_991_231))
        }
        Value::Null => None,
    }
}

/// A string compared with a DATE or DATETIME, read as MariaDB reads it there (the one text
/// reader, `types::datetext`): text after the date is ignored with warning 1292, and text
/// that is no date reads as the zero datetime `0000-00-00` (below every date), also with 1292.
fn temporal_of_text(s: &str) -> i64 {
    let read = read_text(s.as_bytes());
    if read.is_none_or(|t| t.trailing || t.dropped_fraction) {
        let what = match read {
            Some(t) if !t.has_time => "date",
            _ => "datetime",
        };
        crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, || {
            format!(
                "Truncated incorrect {what} value: '{}'",
                crate::types::diag::quoted(s.as_bytes())
            )
        });
    }
    read.map_or(0, |t| t.dt.pack())
}

/// A number compared with a DATE or DATETIME: read as one (`20240102`, `240102`,
/// `20240102030405`), else the zero datetime, with warning 1292.
fn temporal_of_number(v: &Value) -> i64 {
    match temporal_quiet(v) {
        Some((d, _)) => d.pack(),
        None => {
            crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, || {
                let t = v.to_text().unwrap_or_default();
                format!(
                    "Incorrect datetime value: '{}'",
                    crate::types::diag::quoted(&t)
                )
            });
            0
        }
    }
}

/// Doubles print like MySQL: integers without a fraction, otherwise the shortest form that
/// reads back to the same value, with an exponent only for very large or small magnitudes.
pub fn format_double(d: f64) -> String {
    if d.is_nan() || d.is_infinite() {
        return "NULL".into();
    }
    let a = d.abs();
    if a != 0.0 && !(1e-15..1e15).contains(&a) {
        let s = format!("{d:e}");
        // Rust prints 1e20; MySQL prints 1e20 too, and 1.5e-20 as 1.5e-20.
        return s;
    }
    let s = format!("{d}");
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// Says what reading `text` as a number of `kind` (DOUBLE, DECIMAL, INTEGER) left out:
/// warning 1292 for no number or text after it, a note when only spaces followed.
fn report(kind: &str, text: &[u8], found: bool, tail: Tail) {
    match (found, tail) {
        (true, Tail::None) => {}
        (true, Tail::Spaces) => crate::types::diag::truncated_number(kind, text, true),
        _ => crate::types::diag::truncated_number(kind, text, false),
    }
}

/// Text as a double, as MySQL converts `'12abc'` to 12 (with 1292): the numeric prefix, 0 when
/// there is none, the largest double past it (`'1e400'`, with a warning).
fn text_f64(b: &[u8]) -> f64 {
    let d = Scan::read(b);
    let f = d.double();
    if f.is_infinite() {
        report("DOUBLE", b, false, Tail::Garbage);
        return f64::MAX.copysign(f);
    }
    report("DOUBLE", b, d.found(), d.tail());
    f
}

/// Text as a DECIMAL, exactly (its own scale, up to 30 digits; `None` past 38 digits).
fn text_decimal(b: &[u8]) -> Option<Decimal> {
    let d = Scan::read(b);
    let r = Decimal::of_scan(&d);
    // Past 38 digits: NULL, with the warning of text that is no number.
    report("DECIMAL", b, d.found() && r.is_some(), d.tail());
    r
}

/// Text read as an integer, as MariaDB's `val_int` reads it: sign and integer digits (a point
/// or an exponent ends them), with 1292 (INTEGER) for no digits, overflow or text after them.
pub(crate) fn text_int(b: &[u8]) -> IntPrefix {
    let p = Scan::read(b).int_prefix();
    report("INTEGER", b, p.found && !p.bits().1, p.tail);
    p
}

/// [`text_int`], saturating at the ends of `i64`.
fn text_i64(b: &[u8]) -> i64 {
    let p = text_int(b);
    let bits = p.bits().0;
    if !p.neg && bits < 0 {
        // Past i64::MAX (as MariaDB's unsigned result), saturated for signed callers.
        i64::MAX
    } else {
        bits
    }
}

fn temporal_number(p: i64) -> f64 {
    let d = DateTime::unpack(p);
    let ymd = f64::from(d.year) * 10000.0 + f64::from(d.month) * 100.0 + f64::from(d.day);
    if d.hour == 0 && d.minute == 0 && d.second == 0 && d.micro == 0 {
        ymd
    } else {
        ymd * 1_000_000.0
            + f64::from(d.hour) * 10000.0
            + f64::from(d.minute) * 100.0
            + f64::from(d.second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_follow_mysql() {
        use Value::*;
        assert_eq!(
            Str("abc".into()).sql_cmp(&Str("ABC  ".into())),
            Some(Ordering::Equal)
        );
        assert_eq!(
            Bytes(b"abc".to_vec()).sql_cmp(&Bytes(b"ABC".to_vec())),
            Some(Ordering::Greater)
        );
        assert_eq!(Int(-1).sql_cmp(&UInt(u64::MAX)), Some(Ordering::Less));
        assert_eq!(Int(10).sql_cmp(&Str("9".into())), Some(Ordering::Greater));
        assert_eq!(Int(1).sql_cmp(&Null), None);
        assert_eq!(
            Decimal(super::Decimal::parse("1.5").unwrap()).sql_cmp(&Int(1)),
            Some(Ordering::Greater)
        );
        assert_eq!(Double(1.5).sql_cmp(&Int(2)), Some(Ordering::Less));
        let d = super::DateTime::parse("2020-01-02").unwrap().pack();
        assert_eq!(
            Date(d).sql_cmp(&Str("2020-01-02".into())),
            Some(Ordering::Equal)
        );
        assert_eq!(text_f64(b" 12abc"), 12.0);
        assert_eq!(text_f64(b"1e3x"), 1000.0);
        assert_eq!(text_f64(b"abc"), 0.0);
        assert_eq!(text_f64(b"-1e400"), -f64::MAX);
        assert_eq!(text_i64(b"-2.7"), -2);
        assert_eq!(text_i64(b"99999999999999999999"), i64::MAX);
        assert_eq!(text_i64(b"-99999999999999999999"), i64::MIN);
        assert_eq!(
            text_decimal(b"1.5e-3x").map(|d| d.to_string()),
            Some("0.0015".into())
        );
        assert_eq!(format_double(1.0), "1");
        assert_eq!(format_double(0.1), "0.1");
        assert_eq!(format_double(1e20), "1e20");
    }
}
