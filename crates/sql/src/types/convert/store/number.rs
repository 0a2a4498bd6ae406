//! Numbers into columns: the number scanner (`strtod` / `str2my_decimal`), and conversion
//! into integer, floating point and DECIMAL columns.

use super::issue::Issue;
use crate::types::decimal::Decimal;
use crate::types::temporal::DateTime;
use crate::types::value::Value;

// ---- numbers in text ---------------------------------------------------------------------

/// MariaDB's "space" for trailing text: what may follow a number (a note) or be cut off a
/// string (a note) without being "important data".
pub(super) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// What follows a number or a date in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tail {
    None,
    Spaces,
    Garbage,
}

pub(super) fn tail_of(rest: &[u8]) -> Tail {
    if rest.is_empty() {
        Tail::None
    } else if rest.iter().all(|&c| is_space(c)) {
        Tail::Spaces
    } else {
        Tail::Garbage
    }
}

/// A number read from the start of text, as `strtod` / `str2my_decimal` read it: leading
/// spaces, a sign, digits with an optional point, an optional exponent.
#[derive(Debug, Clone)]
pub(super) struct Digits {
    pub(super) neg: bool,
    /// Significant digits, no leading zeros (empty for zero).
    pub(super) digits: Vec<u8>,
    /// How many of `digits` stand before the decimal point (may be negative or exceed the
    /// count: 1e5 is digits "1", point 6).
    pub(super) point: i64,
}

impl Digits {
    /// Reads a number from the start of `s`: the number (`None` when there are no digits)
    /// and what follows it.
    pub(super) fn scan(s: &[u8]) -> (Option<Digits>, Tail) {
        let mut i = 0;
        while i < s.len() && is_space(s[i]) {
            i += 1;
        }
        let mut neg = false;
        if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
            neg = s[i] == b'-';
            i += 1;
        }
        let int_start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        let int = &s[int_start..i];
        let mut frac: &[u8] = &[];
        if i < s.len() && s[i] == b'.' {
            let f0 = i + 1;
            let mut j = f0;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            if !int.is_empty() || j > f0 {
                frac = &s[f0..j];
                i = j;
            }
        }
        if int.is_empty() && frac.is_empty() {
            return (None, tail_of(s));
        }
        let mut exp: i64 = 0;
        if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
            let mut j = i + 1;
            let mut eneg = false;
            if j < s.len() && (s[j] == b'-' || s[j] == b'+') {
                eneg = s[j] == b'-';
                j += 1;
            }
            let e0 = j;
            while j < s.len() && s[j].is_ascii_digit() {
                exp = (exp * 10 + i64::from(s[j] - b'0')).min(1_000_000);
                j += 1;
            }
            if j > e0 {
                if eneg {
                    exp = -exp;
                }
                i = j;
            } else {
                exp = 0;
            }
        }
        (Some(Digits::new(neg, int, frac, exp)), tail_of(&s[i..]))
    }

    fn new(neg: bool, int: &[u8], frac: &[u8], exp: i64) -> Digits {
        let mut all: Vec<u8> = int.iter().chain(frac).copied().collect();
        let lead = all.iter().take_while(|&&c| c == b'0').count();
        all.drain(..lead);
        let point = int.len() as i64 - lead as i64 + exp;
        Digits {
            neg: neg && !all.is_empty(),
            digits: all,
            point,
        }
    }

    /// The shortest digits that read back as `f` (MariaDB converts a double to DECIMAL
    /// through them).
    pub(super) fn of_double(f: f64) -> Digits {
        let s = format!("{:e}", f.abs());
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let (int, frac) = m.split_once('.').unwrap_or((m, ""));
        let mut d = Digits::new(
            false,
            int.as_bytes(),
            frac.as_bytes(),
            e.parse().unwrap_or(0),
        );
        d.neg = f < 0.0 && !d.digits.is_empty();
        d
    }

    /// |value| × 10^scale rounded half away from zero (`None` past 38 digits), and whether a
    /// non-zero digit was rounded away.
    pub(super) fn scaled(&self, scale: u8) -> (Option<i128>, bool) {
        let keep = self.point + i64::from(scale);
        let n = self.digits.len() as i64;
        if keep > 38 {
            return (None, false);
        }
        if keep < 0 {
            return (Some(0), n > 0);
        }
        let keep_u = keep as usize;
        let mut m: i128 = 0;
        for k in 0..keep_u {
            let d = self.digits.get(k).map_or(0, |c| c - b'0');
            m = m * 10 + i128::from(d);
        }
        let dropped = if keep_u < self.digits.len() {
            &self.digits[keep_u..]
        } else {
            &[][..]
        };
        if dropped.first().is_some_and(|&c| c >= b'5') {
            m += 1;
        }
        (Some(m), dropped.iter().any(|&c| c != b'0'))
    }

    fn to_f64(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        let s = format!(
            "{}0.{}e{}",
            if self.neg { "-" } else { "" },
            std::str::from_utf8(&self.digits).unwrap_or("0"),
            self.point
        );
        s.parse().unwrap_or(0.0)
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

/// YYYYMMDD or YYYYMMDDHHMMSS, as a temporal reads as a number (fraction: microseconds).
fn temporal_digits(p: i64, datetime: bool) -> Digits {
    let d = DateTime::unpack(p);
    let ymd = i128::from(d.year) * 10000 + i128::from(d.month) * 100 + i128::from(d.day);
    let (int, frac) = if datetime {
        let hms = i128::from(d.hour) * 10000 + i128::from(d.minute) * 100 + i128::from(d.second);
        let frac = if d.micro == 0 {
            String::new()
        } else {
            format!("{:06}", d.micro)
        };
        ((ymd * 1_000_000 + hms).to_string(), frac)
    } else {
        (ymd.to_string(), String::new())
    };
    Digits::new(false, int.as_bytes(), frac.as_bytes(), 0)
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
    // From digits: the rounded value, clipped; `None` past 38 digits (clipped by sign).
    let from_digits = |d: &Digits| -> (Value, Vec<Issue>) {
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
        Value::Date(p) => from_digits(&temporal_digits(p, false)),
        Value::DateTime(p) => from_digits(&temporal_digits(p, true)),
        Value::Str(_) | Value::Bytes(_) => {
            let b = text_bytes(&v);
            let (d, tail) = Digits::scan(&b);
            let Some(d) = d else {
                return (
                    int_value(0, unsigned),
                    vec![Issue::BadValue {
                        kind: "integer",
                        text: shown(&b),
                    }],
                );
            };
            let (val, issues) = from_digits(&d);
            if !issues.is_empty() {
                return (val, issues);
            }
            (val, tail_issues(tail))
        }
    }
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
            let b = text_bytes(&v);
            let (d, tail) = Digits::scan(&b);
            match d {
                None => {
                    return (
                        Value::Double(0.0),
                        vec![Issue::BadValue {
                            kind: "double",
                            text: shown(&b),
                        }],
                    )
                }
                Some(d) => {
                    let f = d.to_f64();
                    if f.is_infinite() || f.abs() > max {
                        return (store(max.copysign(f)), vec![Issue::OutOfRange]);
                    }
                    (f, tail_issues(tail))
                }
            }
        }
        Value::Decimal(d) => (d.to_string().parse().unwrap_or(0.0), Vec::new()),
        Value::Date(p) => (temporal_digits(*p, false).to_f64(), Vec::new()),
        Value::DateTime(p) => (temporal_digits(*p, true).to_f64(), Vec::new()),
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
    let from_digits = |d: &Digits| {
        let (m, lost) = d.scaled(scale);
        fit(d.neg, m, lost)
    };
    match v {
        Value::Null => (Value::Null, Vec::new()),
        Value::Int(i) => from_digits(&Digits::new(
            i < 0,
            i.unsigned_abs().to_string().as_bytes(),
            b"",
            0,
        )),
        Value::UInt(u) => from_digits(&Digits::new(false, u.to_string().as_bytes(), b"", 0)),
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
            from_digits(&Digits::of_double(f))
        }
        Value::Date(p) => from_digits(&temporal_digits(p, false)),
        Value::DateTime(p) => from_digits(&temporal_digits(p, true)),
        Value::Str(_) | Value::Bytes(_) => {
            let b = text_bytes(&v);
            let (d, tail) = Digits::scan(&b);
            let Some(d) = d else {
                return (
                    dec(0),
                    vec![Issue::BadValue {
                        kind: "decimal",
                        text: shown(&b),
                    }],
                );
            };
            let (val, issues) = from_digits(&d);
            match tail {
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
