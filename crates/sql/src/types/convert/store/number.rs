//! Numbers into integer, floating point and DECIMAL columns. Text is read by the one scanner
//! (`types::convert::number`); numbers are written out as text and read by it too.

use super::issue::Issue;
use crate::types::convert::number::{Scan, Tail};
use crate::types::decimal::Decimal;
use crate::types::temporal::DateTime;
use crate::types::value::Value;

/// The bytes of a string value (empty for any other).
fn text_of(v: &Value) -> &[u8] {
    match v {
        Value::Str(s) => s.as_bytes(),
        Value::Bytes(b) => b,
        _ => &[],
    }
}

pub(super) fn text_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Str(s) => s.as_bytes().to_vec(),
        Value::Bytes(b) => b.clone(),
        other => other.to_text().unwrap_or_default(),
    }
}

/// The text of a value for a message (invalid UTF-8 shown as `\xNN`).
pub(super) fn shown(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::new();
            for chunk in b.utf8_chunks() {
                out.push_str(chunk.valid());
                for x in chunk.invalid() {
                    out.push_str(&format!("\\x{x:02X}"));
                }
            }
            out
        }
    }
}

/// YYYYMMDD or YYYYMMDDHHMMSS, as a temporal reads as a number (fraction: microseconds), as
/// text for [`Scan`].
pub(super) fn temporal_text(p: i64, datetime: bool) -> String {
    let d = DateTime::unpack(p);
    let ymd = i128::from(d.year) * 10000 + i128::from(d.month) * 100 + i128::from(d.day);
    if !datetime {
        return ymd.to_string();
    }
    let hms = i128::from(d.hour) * 10000 + i128::from(d.minute) * 100 + i128::from(d.second);
    if d.micro == 0 {
        (ymd * 1_000_000 + hms).to_string()
    } else {
        format!("{}.{:06}", ymd * 1_000_000 + hms, d.micro)
    }
}

/// The shortest digits that read back as `f`, as text for [`Scan`] (MariaDB converts a double
/// to DECIMAL through them).
pub(super) fn double_text(f: f64) -> String {
    format!("{f:e}")
}

// ---- integers ----------------------------------------------------------------------------

fn int_value(m: i128, unsigned: bool) -> Value {
    if unsigned {
        Value::UInt(m as u64)
    } else {
        Value::Int(m as i64)
    }
}

pub(super) fn to_int(v: Value, bytes: u8, unsigned: bool) -> (Value, Vec<Issue>) {
    let bits = u32::from(bytes) * 8;
    let (lo, hi) = if unsigned {
        (0i128, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    let clip = |m: i128| -> (Value, Vec<Issue>) {
        if m < lo {
            (int_value(lo, unsigned), vec![Issue::OutOfRange])
        } else if m > hi {
            (int_value(hi, unsigned), vec![Issue::OutOfRange])
        } else {
            (int_value(m, unsigned), Vec::new())
        }
    };
    // From a scanned number: the rounded value, clipped; past 38 digits clipped by sign.
    let from_digits = |d: &Scan| -> (Value, Vec<Issue>) {
        match d.scaled(0).0 {
            Some(m) => clip(if d.neg { -m } else { m }),
            None => clip(if d.neg { i128::MIN } else { i128::MAX }),
        }
    };
    match v {
        Value::Null => (Value::Null, Vec::new()),
        Value::Int(i) => clip(i128::from(i)),
        Value::UInt(u) => clip(i128::from(u)),
        Value::Decimal(d) => {
            // Any negative decimal is out of range for UNSIGNED, even one that rounds to 0.
            if unsigned && d.mant < 0 {
                return (int_value(0, true), vec![Issue::OutOfRange]);
            }
            clip(d.rescale(0).map_or(d.mant.signum() * i128::MAX, |r| r.mant))
        }
        Value::Double(f) => {
            // rint(): halves to even.
            let r = f.round_ties_even();
            if r.is_nan() {
                return (int_value(0, unsigned), vec![Issue::OutOfRange]);
            }
            if r < lo as f64 {
                (int_value(lo, unsigned), vec![Issue::OutOfRange])
            } else if r > hi as f64 {
                // MariaDB's Field_long warns twice for an UNSIGNED INT overflowing upwards.
                let n = if unsigned && bytes == 4 { 2 } else { 1 };
                (int_value(hi, unsigned), vec![Issue::OutOfRange; n])
            } else if r >= hi as f64 {
                // 2^63 and 2^64 as doubles: clipped without a warning, as MariaDB does.
                (int_value(hi, unsigned), Vec::new())
            } else {
                clip(r as i128)
            }
        }
        Value::Date(p) => from_digits(&Scan::read(temporal_text(p, false).as_bytes())),
        Value::DateTime(p) => from_digits(&Scan::read(temporal_text(p, true).as_bytes())),
        Value::Str(_) | Value::Bytes(_) => {
            let b = text_of(&v);
            let d = Scan::read(b);
            if !d.found() {
                return (
                    int_value(0, unsigned),
                    vec![Issue::BadValue {
                        kind: "integer",
                        text: shown(b),
                    }],
                );
            }
            let (val, issues) = from_digits(&d);
            if !issues.is_empty() {
                return (val, issues);
            }
            (val, tail_issues(d.tail()))
        }
    }
}

fn temporal_f64(p: i64, datetime: bool) -> f64 {
    let t = temporal_text(p, datetime);
    Scan::read(t.as_bytes()).double()
}

fn tail_issues(tail: Tail) -> Vec<Issue> {
    match tail {
        Tail::None => Vec::new(),
        Tail::Spaces => vec![Issue::Note],
        Tail::Garbage => vec![Issue::Truncated],
    }
}

// ---- floating point ----------------------------------------------------------------------

pub(super) fn to_double(v: Value, float: bool) -> (Value, Vec<Issue>) {
    let max = if float { f64::from(f32::MAX) } else { f64::MAX };
    let store = |f: f64| Value::Double(if float { f64::from(f as f32) } else { f });
    let (f, mut issues) = match &v {
        Value::Str(_) | Value::Bytes(_) => {
            let b = text_of(&v);
            let d = Scan::read(b);
            if !d.found() {
                return (
                    Value::Double(0.0),
                    vec![Issue::BadValue {
                        kind: "double",
                        text: shown(b),
                    }],
                );
            }
            // Zero is stored positive (`-0` too), as the digits read it.
            let f = if d.is_zero() { 0.0 } else { d.double() };
            if f.is_infinite() || f.abs() > max {
                return (store(max.copysign(f)), vec![Issue::OutOfRange]);
            }
            (f, tail_issues(d.tail()))
        }
        Value::Decimal(d) => (d.to_string().parse().unwrap_or(0.0), Vec::new()),
        Value::Date(p) => (temporal_f64(*p, false), Vec::new()),
        Value::DateTime(p) => (temporal_f64(*p, true), Vec::new()),
        other => (other.to_f64().unwrap_or(0.0), Vec::new()),
    };
    if f.is_nan() {
        return (Value::Double(0.0), vec![Issue::OutOfRange]);
    }
    if f.abs() > max {
        issues = vec![Issue::OutOfRange];
        return (store(max.copysign(f)), issues);
    }
    (store(f), issues)
}

// ---- DECIMAL -----------------------------------------------------------------------------

pub(super) fn to_decimal(v: Value, precision: u8, scale: u8) -> (Value, Vec<Issue>) {
    let max = 10i128
        .checked_pow(u32::from(precision.min(38)))
        .map_or(i128::MAX, |p| p - 1);
    let dec = |mant: i128| Value::Decimal(Decimal { mant, scale });
    // From a sign and |value| × 10^scale (`None`: too many digits).
    let fit = |neg: bool, m: Option<i128>, lost: bool| -> (Value, Vec<Issue>) {
        match m {
            Some(m) if m <= max => (
                dec(if neg { -m } else { m }),
                if lost { vec![Issue::Note] } else { Vec::new() },
            ),
            _ => (dec(if neg { -max } else { max }), vec![Issue::OutOfRange]),
        }
    };
    let from_digits = |d: &Scan| {
        let (m, lost) = d.scaled(scale);
        fit(d.neg && !d.is_zero(), m, lost)
    };
    let from_text = |t: &str| from_digits(&Scan::read(t.as_bytes()));
    match v {
        Value::Null => (Value::Null, Vec::new()),
        Value::Int(i) => from_text(&i.to_string()),
        Value::UInt(u) => from_text(&u.to_string()),
        Value::Decimal(d) => {
            let neg = d.mant < 0;
            let a = d.mant.unsigned_abs();
            if scale >= d.scale {
                let m = 10u128
                    .checked_pow(u32::from(scale - d.scale))
                    .and_then(|f| a.checked_mul(f))
                    .and_then(|m| i128::try_from(m).ok());
                fit(neg, m, false)
            } else {
                let f = 10u128.pow(u32::from(d.scale - scale));
                let (q, r) = (a / f, a % f);
                let q = if r * 2 >= f { q + 1 } else { q };
                fit(neg, i128::try_from(q).ok(), r != 0)
            }
        }
        Value::Double(f) => {
            if !f.is_finite() {
                return fit(f < 0.0, None, false);
            }
            from_text(&double_text(f))
        }
        Value::Date(p) => from_text(&temporal_text(p, false)),
        Value::DateTime(p) => from_text(&temporal_text(p, true)),
        Value::Str(_) | Value::Bytes(_) => {
            let b = text_of(&v);
            let d = Scan::read(b);
            if !d.found() {
                return (
                    dec(0),
                    vec![Issue::BadValue {
                        kind: "decimal",
                        text: shown(b),
                    }],
                );
            }
            let (val, issues) = from_digits(&d);
            match d.tail() {
                // Text after the number: a warning, then what storing the number gives.
                Tail::Garbage => {
                    let mut all = vec![Issue::Truncated];
                    all.extend(issues);
                    (val, all)
                }
                // Trailing spaces and rounding make one note; out of range wins.
                Tail::Spaces if issues.is_empty() => (val, vec![Issue::Note]),
                _ => (val, issues),
            }
        }
    }
}
