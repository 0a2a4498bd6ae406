//! Storing a value in a column: MariaDB 10.11's `Field::store` conversions.
//!
//! [`convert`] turns any value into a column's type and says what was lost on the way, as a
//! list of [`Issue`]s: the value is always the one MariaDB stores when it goes on (clipped to
//! the type's range, cut at the column's length, a zero date for a bad date, the implicit
//! default for NULL in a NOT NULL column). Each issue knows both of its faces: the error a
//! strict statement fails with, and the warning an `IGNORE` statement reports instead. Notes
//! (rounding of decimals, trailing spaces cut off, the time of a DATE) are never errors.
//!
//! The rules were read off MariaDB 10.11 in its default `sql_mode` (`STRICT_TRANS_TABLES`,
//! no `NO_ZERO_DATE` / `NO_ZERO_IN_DATE`), value by value.

use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::temporal::{days_in_month, DateTime};
use crate::types::value::{format_double, Value};
use crate::SqlError;

/// Something a conversion lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issue {
    /// NULL into a NOT NULL column: the implicit default is stored (1048 either way).
    Null,
    /// Outside the type's range: clipped to the nearer end (1264 either way).
    OutOfRange,
    /// Text after a number (`'12abc'`): 1265 either way.
    Truncated,
    /// A string longer than the column: error 1406, or the cut string and warning 1265.
    TooLong,
    /// No number at all (`'abc'`, `''`): 1366 either way; zero is stored.
    BadValue { kind: &'static str, text: String },
    /// Not a date (`'2023-02-30'`), or a date with text after it: error 1292, or warning 1265
    /// with a zero date (or the date read before the text).
    BadTemporal { kind: &'static str, text: String },
    /// A TIMESTAMP outside 1970-01-01 00:00:01 .. 2038-01-19 03:14:07 (UTC): error 1292, or
    /// the zero timestamp and warning 1264.
    TimestampRange { text: String },
    /// A note 1265, never an error: digits past the scale rounded away, trailing spaces cut,
    /// the time of day dropped from a DATE.
    Note,
}

/// Where a value is stored, for the messages.
#[derive(Debug, Clone, Copy)]
pub struct Dest<'a> {
    pub db: &'a str,
    pub table: &'a str,
    pub column: &'a str,
    /// The statement's row (1-based), as "at row N" counts it.
    pub row: u64,
}

impl Issue {
    pub fn is_note(&self) -> bool {
        matches!(self, Issue::Note)
    }

    fn truncated(d: &Dest) -> String {
        format!("Data truncated for column '{}' at row {}", d.column, d.row)
    }

    fn full_name(d: &Dest) -> String {
        format!("`{}`.`{}`.`{}`", d.db, d.table, d.column)
    }

    /// The error of a strict statement.
    pub fn error(&self, d: &Dest) -> SqlError {
        match self {
            Issue::Null => SqlError::not_null(d.column),
            Issue::OutOfRange => SqlError::out_of_range(d.column, d.row),
            Issue::Truncated | Issue::Note => SqlError::new(1265, "01000", Issue::truncated(d)),
            Issue::TooLong => SqlError::too_long(d.column, d.row),
            Issue::BadValue { kind, text } => SqlError::new(
                1366,
                "22007",
                format!(
                    "Incorrect {kind} value: '{text}' for column {} at row {}",
                    Issue::full_name(d),
                    d.row
                ),
            ),
            Issue::TimestampRange { text } => SqlError::new(
                1292,
                "22007",
                format!(
                    "Incorrect datetime value: '{text}' for column {} at row {}",
                    Issue::full_name(d),
                    d.row
                ),
            ),
            Issue::BadTemporal { kind, text } => SqlError::new(
                1292,
                "22007",
                format!(
                    "Incorrect {kind} value: '{text}' for column {} at row {}",
                    Issue::full_name(d),
                    d.row
                ),
            ),
        }
    }

    /// The condition of an `IGNORE` statement (or the note of any statement): level, code,
    /// message.
    pub fn warning(&self, d: &Dest) -> (&'static str, u16, String) {
        match self {
            Issue::Note => ("Note", 1265, Issue::truncated(d)),
            Issue::TooLong | Issue::BadTemporal { .. } | Issue::Truncated => {
                ("Warning", 1265, Issue::truncated(d))
            }
            Issue::TimestampRange { .. } => {
                let e = SqlError::out_of_range(d.column, d.row);
                ("Warning", e.code, e.message)
            }
            other => {
                let e = other.error(d);
                ("Warning", e.code, e.message)
            }
        }
    }
}

/// The value a NOT NULL column takes when IGNORE stores NULL in it, or when a statement gives
/// it no value and it has no DEFAULT: zero, the empty string, the zero date.
pub fn implicit_default(ty: SqlType) -> Value {
    match ty {
        SqlType::Int { unsigned: true, .. } => Value::UInt(0),
        SqlType::Int { .. } => Value::Int(0),
        SqlType::Float | SqlType::Double => Value::Double(0.0),
        SqlType::Decimal { scale, .. } => Value::Decimal(Decimal { mant: 0, scale }),
        SqlType::Char { binary: true, .. }
        | SqlType::Varchar { binary: true, .. }
        | SqlType::Text { binary: true, .. } => Value::Bytes(Vec::new()),
        SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. } => {
            Value::Str(String::new())
        }
        SqlType::Date => Value::Date(0),
        SqlType::DateTime { .. } | SqlType::Timestamp { .. } => Value::DateTime(0),
    }
}

/// Converts `v` for storage in a column of type `ty` (NULL allowed when `nullable`): the value
/// MariaDB stores, and what was lost.
pub fn convert(v: Value, ty: SqlType, nullable: bool) -> (Value, Vec<Issue>) {
    if v.is_null() {
        return if nullable {
            (Value::Null, Vec::new())
        } else {
            (implicit_default(ty), vec![Issue::Null])
        };
    }
    match ty {
        SqlType::Int { bytes, unsigned } => to_int(v, bytes, unsigned),
        SqlType::Float => to_double(v, true),
        SqlType::Double => to_double(v, false),
        SqlType::Decimal { precision, scale } => to_decimal(v, precision, scale),
        SqlType::Char { len, binary } => to_string(v, len, binary, StrKind::Char),
        SqlType::Varchar { len, binary } => to_string(v, len, binary, StrKind::Varchar),
        SqlType::Text { max, binary } => to_string(v, max, binary, StrKind::Text),
        SqlType::Date => to_temporal(v, None),
        SqlType::DateTime { fsp } => to_temporal(v, Some(fsp)),
        SqlType::Timestamp { fsp } => {
            let text = v.to_string_lossy().unwrap_or_default();
            let (v, mut issues) = to_temporal(v, Some(fsp));
            if let Value::DateTime(p) = v {
                let lo = DateTime::parse("1970-01-01 00:00:01").map_or(0, |d| d.pack());
                let hi = DateTime::parse("2038-01-19 03:14:08").map_or(0, |d| d.pack());
                if p != 0 && (p < lo || p >= hi) && !issues.iter().any(|i| !i.is_note()) {
                    issues = vec![Issue::TimestampRange { text }];
                    return (Value::DateTime(0), issues);
                }
            }
            (v, issues)
        }
    }
}

// ---- numbers in text ---------------------------------------------------------------------

/// MariaDB's "space" for trailing text: what may follow a number (a note) or be cut off a
/// string (a note) without being "important data".
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// What follows a number or a date in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    None,
    Spaces,
    Garbage,
}

fn tail_of(rest: &[u8]) -> Tail {
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
struct Digits {
    neg: bool,
    /// Significant digits, no leading zeros (empty for zero).
    digits: Vec<u8>,
    /// How many of `digits` stand before the decimal point (may be negative or exceed the
    /// count: 1e5 is digits "1", point 6).
    point: i64,
}

impl Digits {
    /// Reads a number from the start of `s`: the number (`None` when there are no digits)
    /// and what follows it.
    fn scan(s: &[u8]) -> (Option<Digits>, Tail) {
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
    fn of_double(f: f64) -> Digits {
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
    fn scaled(&self, scale: u8) -> (Option<i128>, bool) {
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

fn text_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Str(s) => s.as_bytes().to_vec(),
        Value::Bytes(b) => b.clone(),
        other => other.to_text().unwrap_or_default(),
    }
}

/// The text of a value for a message (invalid UTF-8 shown as `\xNN`).
fn shown(b: &[u8]) -> String {
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

fn to_int(v: Value, bytes: u8, unsigned: bool) -> (Value, Vec<Issue>) {
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

fn to_double(v: Value, float: bool) -> (Value, Vec<Issue>) {
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

fn to_decimal(v: Value, precision: u8, scale: u8) -> (Value, Vec<Issue>) {
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

// ---- strings -----------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrKind {
    Char,
    Varchar,
    Text,
}

fn to_string(v: Value, len: u32, binary: bool, kind: StrKind) -> (Value, Vec<Issue>) {
    let len = len as usize;
    if binary {
        let mut b = match v {
            Value::Bytes(b) => b,
            Value::Str(s) => s.into_bytes(),
            other => other.to_text().unwrap_or_default(),
        };
        let mut issues = Vec::new();
        if b.len() > len {
            b.truncate(len);
            issues.push(Issue::TooLong);
        }
        if kind == StrKind::Char {
            while b.last() == Some(&0) {
                b.pop();
            }
        }
        return (Value::Bytes(b), issues);
    }
    let mut issues = Vec::new();
    let s = match v {
        Value::Str(s) => s,
        Value::Bytes(b) => match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => {
                let b = e.into_bytes();
                let valid = b.utf8_chunks().next().map_or("", |c| c.valid()).to_string();
                let bad: String = b[valid.len()..]
                    .iter()
                    .take(4)
                    .map(|x| format!("\\x{x:02X}"))
                    .collect();
                issues.push(Issue::BadValue {
                    kind: "string",
                    text: bad,
                });
                valid
            }
        },
        Value::Double(f) => {
            // Field_str::store(double): printed to fit the column, fewer digits first.
            let chars = if kind == StrKind::Text { len / 4 } else { len };
            let (text, cut) = gcvt(f, chars.max(1));
            if cut || chars == 0 {
                issues.push(Issue::TooLong);
            }
            text
        }
        other => other.to_string_lossy().unwrap_or_default(),
    };
    // Where the column's length ends (in characters; TEXT in bytes, at a character boundary).
    let cut = if kind == StrKind::Text {
        if s.len() <= len {
            None
        } else {
            let mut c = len;
            while !s.is_char_boundary(c) {
                c -= 1;
            }
            Some(c)
        }
    } else {
        s.char_indices().nth(len).map(|(i, _)| i)
    };
    let mut s = s;
    if let Some(c) = cut {
        let rest = &s.as_bytes()[c..];
        if rest.iter().all(|&x| is_space(x)) {
            // Only spaces lost: a note (none for CHAR, which pads with spaces anyway).
            if kind != StrKind::Char && issues.is_empty() {
                issues.push(Issue::Note);
            }
        } else {
            issues.push(Issue::TooLong);
        }
        s.truncate(c);
    }
    if kind == StrKind::Char {
        let n = s.trim_end_matches(' ').len();
        s.truncate(n);
    }
    (Value::Str(s), issues)
}

/// The decimal digits of `x` (no leading zeros, no trailing zeros) and the position of the
/// point (`x` = 0.DIGITS × 10^decpt), from Rust's formatting of it: `e` with the shortest
/// digits (`prec` None), with `prec + 1` significant digits, or fixed with `prec` decimals.
fn dtoa(x: f64, mode: Dtoa) -> (Vec<u8>, i64) {
    let x = x.abs();
    let (digits, decpt) = match mode {
        Dtoa::Shortest | Dtoa::Significant(_) => {
            let s = match mode {
                Dtoa::Significant(n) => format!("{:.*e}", n.max(1) - 1, x),
                _ => format!("{x:e}"),
            };
            let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
            let digits: Vec<u8> = m.bytes().filter(u8::is_ascii_digit).collect();
            (digits, e.parse::<i64>().unwrap_or(0) + 1)
        }
        Dtoa::Fixed(n) => {
            let s = format!("{:.*}", n, x);
            let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
            let int = int.trim_start_matches('0');
            if int.is_empty() {
                let lead = frac.bytes().take_while(|&c| c == b'0').count();
                let digits = frac.as_bytes()[lead..].to_vec();
                (digits, -(lead as i64))
            } else {
                let digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
                (digits, int.len() as i64)
            }
        }
    };
    let mut digits = digits;
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits.is_empty() && matches!(mode, Dtoa::Shortest | Dtoa::Significant(_)) {
        return (b"0".to_vec(), 1);
    }
    (digits, decpt)
}

#[derive(Debug, Clone, Copy)]
enum Dtoa {
    Shortest,
    Significant(usize),
    Fixed(usize),
}

/// A DOUBLE as MariaDB stores it in a string column of `width` characters (observed on the
/// oracle, see the tests): its shortest digits in the form SELECT prints, when they fit;
/// otherwise rounded to fewer digits, in plain notation when the integer part fits and no
/// more than two zeros follow the point, in exponent notation else. `true` when even that
/// does not fit (the text is cut to the width).
fn gcvt(x: f64, width: usize) -> (String, bool) {
    let neg = x < 0.0;
    let room = width as i64 - i64::from(neg);
    let (digits, point) = dtoa(x, Dtoa::Shortest);
    let n = digits.len() as i64;
    let exp_digits = |point: i64| {
        let e = (point - 1).abs();
        1 + i64::from(e >= 10) + i64::from(e >= 100)
    };
    // What all the digits take in plain notation: "0.00ddd", "dd.ddd" or "ddd000".
    let plain_len = if point <= 0 {
        2 - point + n
    } else if point < n {
        n + 1
    } else {
        point
    };
    // SELECT prints very large and very small numbers with an exponent.
    let select_plain = (-14..=15).contains(&point) || n > point;
    let plain = if plain_len <= room {
        select_plain
    } else {
        // A number below one whose "0.0…" leaves no room for a digit goes to the exponent
        // form when one digit of that fits.
        let exp_fits = point <= 0 && room <= 2 - point && room >= 3 + exp_digits(point);
        !exp_fits && point <= room && point >= -2
    };
    let (text, cut) = if plain {
        fit_plain(x, neg, room, digits, point)
    } else {
        fit_exponent(x, neg, room, digits, point, exp_digits(point))
    };
    // Rounding may carry into one more digit (99.96 in two characters is "100").
    let cut = cut || text.chars().count() > width;
    let text: String = text.chars().take(width).collect();
    (text, cut)
}

/// Plain notation in `room` characters (the sign aside), rounding decimals away.
fn fit_plain(x: f64, neg: bool, room: i64, digits: Vec<u8>, point: i64) -> (String, bool) {
    let (mut digits, mut point) = (digits, point);
    let n = digits.len() as i64;
    // Places for digits: the room less the point and any "0." and zeros before the digits.
    let mut places = room - i64::from(point < n) - if point <= 0 { 1 - point } else { 0 };
    let mut cut = false;
    if places < n {
        // Cut when the integer digits do not fit, or a number below one has no room for
        // "0." (observed: 0.5 does not fit one character, 1.5 does, as "2").
        cut = if point > 0 { room < point } else { room < 2 };
        places = places.max(point);
        (digits, point) = dtoa(x, Dtoa::Fixed((places - point).max(0) as usize));
        if digits.is_empty() {
            // Rounded to nothing: zero, without a sign.
            return ("0".into(), cut);
        }
    }
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
    }
    for (i, &d) in digits.iter().enumerate() {
        out.push(char::from(d));
        if i as i64 + 1 == point && (i + 1) < digits.len() {
            out.push('.');
        }
    }
    for _ in digits.len() as i64..point {
        out.push('0');
    }
    (out, cut)
}

/// Exponent notation ("d.dddeN", "de-N") in `room` characters, with fewer digits as needed.
fn fit_exponent(
    x: f64,
    neg: bool,
    room: i64,
    digits: Vec<u8>,
    point: i64,
    exp_digits: i64,
) -> (String, bool) {
    let (mut digits, mut point) = (digits, point);
    let exp_neg = point < 1;
    let n = digits.len() as i64;
    let mut places = room - i64::from(exp_neg) - 1 - exp_digits - i64::from(n > 1);
    let mut cut = false;
    if places <= 0 {
        cut = true;
        places = 0;
    }
    if places < n {
        (digits, point) = dtoa(x, Dtoa::Significant(places.max(1) as usize));
    }
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push(char::from(digits[0]));
    if digits.len() > 1 {
        out.push('.');
        out.extend(digits[1..].iter().map(|&d| char::from(d)));
    }
    out.push('e');
    if exp_neg {
        out.push('-');
    }
    out.push_str(&(point - 1).abs().to_string());
    (out, cut)
}

// ---- dates and times ---------------------------------------------------------------------

/// A date read from text: the value, and whether text (other than spaces) followed it.
fn parse_temporal(s: &[u8]) -> Option<(DateTime, bool, u32)> {
    let mut i = 0;
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    let digits_at = |i: usize| s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let num = |a: usize, n: usize| -> u32 {
        s[a..a + n].iter().fold(0u32, |acc, &c| {
            acc.saturating_mul(10).saturating_add(u32::from(c - b'0'))
        })
    };
    let first = digits_at(i);
    if first == 0 {
        return None;
    }
    let mut dt = DateTime::default();
    // Fraction digits beyond microseconds that are not zero (a note on a DATETIME).
    let mut lost_frac = 0u32;
    let year2 = |y: u32| if y < 70 { 2000 + y } else { 1900 + y };
    let after_first = s.get(i + first).copied();
    let compact =
        first >= 5 && !matches!(after_first, Some(c) if c.is_ascii_punctuation() && c != b'.');
    if compact {
        // YYMMDD, YYYYMMDD, YYMMDDHHMMSS, YYYYMMDDHHMMSS.
        let (ylen, has_time) = match first {
            6 => (2, false),
            8 => (4, false),
            12 => (2, true),
            14 => (4, true),
            _ => return None,
        };
        let y = num(i, ylen);
        dt.year = if ylen == 2 { year2(y) } else { y } as u16;
        let mut p = i + ylen;
        dt.month = num(p, 2) as u8;
        dt.day = num(p + 2, 2) as u8;
        p += 4;
        if has_time {
            dt.hour = num(p, 2) as u8;
            dt.minute = num(p + 2, 2) as u8;
            dt.second = num(p + 4, 2) as u8;
            p += 6;
            if s.get(p) == Some(&b'.') && digits_at(p + 1) > 0 {
                let n = digits_at(p + 1);
                (dt.micro, lost_frac) = fraction(&s[p + 1..p + 1 + n]);
                p += 1 + n;
            }
        }
        i = p;
    } else {
        // Y-M-D with any punctuation between the parts, then [T| ]H:M:S[.f].
        let mut parts = [0u32; 3];
        let mut p = i;
        for (k, part) in parts.iter_mut().enumerate() {
            let n = digits_at(p);
            if n == 0 || (k > 0 && n > 2) || (k == 0 && n > 4) {
                return None;
            }
            *part = num(p, n);
            if k == 0 && n <= 2 {
                *part = year2(*part);
            }
            p += n;
            if k < 2 {
                match s.get(p) {
                    Some(c) if c.is_ascii_punctuation() => p += 1,
                    _ => return None,
                }
            }
        }
        dt.year = parts[0] as u16;
        dt.month = parts[1] as u8;
        dt.day = parts[2] as u8;
        // The time of day, when there is one.
        let mut q = p;
        if s.get(q) == Some(&b'T') {
            q += 1;
        } else {
            while q < s.len() && is_space(s[q]) {
                q += 1;
            }
        }
        if q > p && digits_at(q) > 0 {
            let mut t = [0u32; 3];
            let mut k = 0;
            loop {
                let n = digits_at(q);
                if n == 0 || n > 2 {
                    break;
                }
                t[k] = num(q, n);
                q += n;
                k += 1;
                if k == 3 {
                    break;
                }
                match s.get(q) {
                    Some(&b':') if digits_at(q + 1) > 0 => q += 1,
                    _ => break,
                }
            }
            dt.hour = t[0] as u8;
            dt.minute = t[1] as u8;
            dt.second = t[2] as u8;
            if t[0] > 23 || t[1] > 59 || t[2] > 59 {
                return None;
            }
            if k == 3 && s.get(q) == Some(&b'.') {
                let n = digits_at(q + 1);
                (dt.micro, lost_frac) = fraction(&s[q + 1..q + 1 + n]);
                q += 1 + n;
            }
            p = q;
        }
        i = p;
    }
    if !valid_date(&dt) {
        return None;
    }
    let garbage = tail_of(&s[i..]) == Tail::Garbage;
    Some((dt, garbage, lost_frac))
}

/// Microseconds from fraction digits, and whether non-zero digits past the sixth were cut.
fn fraction(f: &[u8]) -> (u32, u32) {
    let mut micro = 0u32;
    for k in 0..6 {
        micro = micro * 10 + f.get(k).map_or(0, |c| u32::from(c - b'0'));
    }
    let lost = u32::from(f.iter().skip(6).any(|&c| c != b'0'));
    (micro, lost)
}

fn valid_date(d: &DateTime) -> bool {
    if d.year > 9999 || d.month > 12 || d.day > 31 {
        return false;
    }
    if d.hour > 23 || d.minute > 59 || d.second > 59 {
        return false;
    }
    // Zero months and days pass (no NO_ZERO_IN_DATE); otherwise the day must exist.
    d.month == 0 || d.day == 0 || d.day <= days_in_month(d.year, d.month)
}

/// A number as a date, as MariaDB reads one (observed): YYMMDD, YYYYMMDD,
/// YYMMDDHHMMSS or YYYYMMDDHHMMSS, two-digit years 70–99 in the 1900s.
fn number_to_datetime(nr: i128) -> Option<DateTime> {
    if nr == 0 {
        return Some(DateTime::default());
    }
    let mut nr = nr;
    if nr < 101 {
        return None;
    }
    if nr <= 691231 {
        nr = (nr + 20_000_000) * 1_000_000;
    } else if nr < 700101 {
        return None;
    } else if nr <= 991231 {
        nr = (nr + 19_000_000) * 1_000_000;
    } else if nr < 10_000_101 {
        return None;
    } else if nr <= 99_991_231 {
        nr *= 1_000_000;
    } else if nr < 101_000_000 {
        return None;
    } else if nr <= 691_231_235_959 {
        nr += 20_000_000_000_000;
    } else if nr < 700_101_000_000 {
        return None;
    } else if nr <= 991_231_235_959 {
        nr += 19_000_000_000_000;
    } else if nr > 99_991_231_235_959 {
        return None;
    }
    let ymd = nr / 1_000_000;
    let hms = nr % 1_000_000;
    let d = DateTime {
        year: (ymd / 10000) as u16,
        month: ((ymd / 100) % 100) as u8,
        day: (ymd % 100) as u8,
        hour: (hms / 10000) as u8,
        minute: ((hms / 100) % 100) as u8,
        second: (hms % 100) as u8,
        micro: 0,
    };
    valid_date(&d).then_some(d)
}

/// Into DATE (`fsp` None) or DATETIME/TIMESTAMP(fsp).
fn to_temporal(v: Value, fsp: Option<u8>) -> (Value, Vec<Issue>) {
    let kind = if fsp.is_some() { "datetime" } else { "date" };
    let bad = |text: String| Issue::BadTemporal { kind, text };
    let mut issues = Vec::new();
    let dt = match &v {
        Value::Date(p) | Value::DateTime(p) => DateTime::unpack(*p),
        Value::Str(_) | Value::Bytes(_) => {
            let b = text_bytes(&v);
            match parse_temporal(&b) {
                None => return (zero_temporal(fsp), vec![bad(shown(&b))]),
                Some((dt, garbage, lost_frac)) => {
                    if garbage {
                        issues.push(bad(shown(&b)));
                    } else if fsp.is_some() && lost_frac != 0 {
                        issues.push(Issue::Note);
                    }
                    dt
                }
            }
        }
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            let d = match &v {
                Value::Double(f) => Digits::of_double(*f),
                Value::Decimal(d) => {
                    let s = d.to_string();
                    Digits::scan(s.as_bytes()).0.unwrap_or(Digits {
                        neg: false,
                        digits: Vec::new(),
                        point: 0,
                    })
                }
                other => Digits::scan(&text_bytes(other)).0.unwrap_or(Digits {
                    neg: false,
                    digits: Vec::new(),
                    point: 0,
                }),
            };
            let text = match &v {
                Value::Double(f) => format_double(*f),
                other => other.to_string_lossy().unwrap_or_default(),
            };
            let int = if d.neg { None } else { d.scaled(0).0 };
            // The integer part, truncated (scaled() rounds: undo a round-up).
            let (int_part, frac_digits) = match int {
                Some(_) => {
                    let p = d.point.max(0) as usize;
                    let ip: i128 = d.digits[..p.min(d.digits.len())]
                        .iter()
                        .fold(0i128, |a, &c| a * 10 + i128::from(c - b'0'))
                        * 10i128.pow(p.saturating_sub(d.digits.len()) as u32);
                    let frac: Vec<u8> = if d.point < 0 {
                        std::iter::repeat_n(b'0', (-d.point) as usize)
                            .chain(d.digits.iter().copied())
                            .collect()
                    } else {
                        d.digits[p.min(d.digits.len())..].to_vec()
                    };
                    (Some(ip), frac)
                }
                None => (None, Vec::new()),
            };
            match int_part.and_then(number_to_datetime) {
                None => return (zero_temporal(fsp), vec![bad(text)]),
                Some(mut dt) => {
                    let frac_nonzero = frac_digits.iter().any(|&c| c != b'0');
                    if int_part.unwrap_or(0) <= 99_991_231 {
                        // A date-only number with a fraction: the fraction is dropped.
                        if frac_nonzero {
                            issues.push(Issue::Note);
                        }
                    } else {
                        let (micro, lost) = fraction(&frac_digits);
                        dt.micro = micro;
                        if fsp.is_some() && lost != 0 {
                            issues.push(Issue::Note);
                        }
                    }
                    dt
                }
            }
        }
        Value::Null => return (Value::Null, Vec::new()),
    };
    let mut dt = dt;
    match fsp {
        None => {
            // The time of day is dropped: a note unless the text was already bad.
            if (dt.hour, dt.minute, dt.second) != (0, 0, 0) && issues.is_empty() {
                issues.push(Issue::Note);
            }
            dt.hour = 0;
            dt.minute = 0;
            dt.second = 0;
            dt.micro = 0;
            (Value::Date(dt.pack()), issues)
        }
        Some(fsp) => {
            let unit = 10u32.pow(6 - u32::from(fsp.min(6)));
            dt.micro = (dt.micro / unit) * unit;
            (Value::DateTime(dt.pack()), issues)
        }
    }
}

fn zero_temporal(fsp: Option<u8>) -> Value {
    if fsp.is_some() {
        Value::DateTime(0)
    } else {
        Value::Date(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(ty: SqlType, v: Value) -> (String, Vec<Issue>) {
        let (v, i) = convert(v, ty, false);
        (v.to_string_lossy().unwrap_or_else(|| "NULL".into()), i)
    }

    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }

    const INT: SqlType = SqlType::Int {
        bytes: 4,
        unsigned: false,
    };
    const UINT: SqlType = SqlType::Int {
        bytes: 4,
        unsigned: true,
    };
    const TINY: SqlType = SqlType::Int {
        bytes: 1,
        unsigned: false,
    };
    const DEC51: SqlType = SqlType::Decimal {
        precision: 5,
        scale: 1,
    };

    fn bad(kind: &'static str, text: &str) -> Issue {
        Issue::BadValue {
            kind,
            text: text.into(),
        }
    }

    #[test]
    fn strings_into_integers() {
        use Issue::*;
        assert_eq!(
            conv(INT, s("abc")),
            ("0".into(), vec![bad("integer", "abc")])
        );
        assert_eq!(conv(INT, s("")), ("0".into(), vec![bad("integer", "")]));
        assert_eq!(conv(INT, s("12abc")), ("12".into(), vec![Truncated]));
        assert_eq!(conv(INT, s("  12  ")), ("12".into(), vec![Note]));
        assert_eq!(conv(INT, s(" 12")), ("12".into(), vec![]));
        assert_eq!(conv(INT, s("1.5")), ("2".into(), vec![]));
        assert_eq!(conv(INT, s("-2.5")), ("-3".into(), vec![]));
        assert_eq!(conv(INT, s("1e3")), ("1000".into(), vec![]));
        assert_eq!(conv(INT, s("1e")), ("1".into(), vec![Truncated]));
        assert_eq!(conv(INT, s("0x10")), ("0".into(), vec![Truncated]));
        assert_eq!(
            conv(INT, s("1e20")),
            ("2147483647".into(), vec![OutOfRange])
        );
        assert_eq!(conv(TINY, s("300abc")), ("127".into(), vec![OutOfRange]));
        assert_eq!(conv(UINT, s("-0.4")), ("0".into(), vec![]));
        assert_eq!(conv(UINT, s("-0.5")), ("0".into(), vec![OutOfRange]));
    }

    #[test]
    fn numbers_into_integers() {
        use Issue::*;
        assert_eq!(conv(INT, Value::Double(2.5)), ("2".into(), vec![]));
        assert_eq!(conv(INT, Value::Double(3.5)), ("4".into(), vec![]));
        assert_eq!(
            conv(INT, Value::Decimal(Decimal { mant: 25, scale: 1 })),
            ("3".into(), vec![])
        );
        assert_eq!(
            conv(UINT, Value::Decimal(Decimal { mant: -4, scale: 1 })),
            ("0".into(), vec![OutOfRange])
        );
        assert_eq!(conv(UINT, Value::Double(-0.5)), ("0".into(), vec![]));
        assert_eq!(conv(UINT, Value::Int(-5)), ("0".into(), vec![OutOfRange]));
        // Field_long's double warning.
        assert_eq!(
            conv(UINT, Value::Double(1e10)),
            ("4294967295".into(), vec![OutOfRange, OutOfRange])
        );
        assert_eq!(
            conv(TINY, Value::Int(300)),
            ("127".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(
                INT,
                Value::Date(DateTime::parse("2020-01-01").unwrap().pack())
            ),
            ("20200101".into(), vec![])
        );
    }

    #[test]
    fn decimals_round_with_a_note() {
        use Issue::*;
        let d = |m: i128, sc: u8| Value::Decimal(Decimal { mant: m, scale: sc });
        assert_eq!(conv(DEC51, d(155, 2)), ("1.6".into(), vec![Note]));
        assert_eq!(conv(DEC51, d(-5, 2)), ("-0.1".into(), vec![Note]));
        assert_eq!(conv(DEC51, d(-4, 2)), ("0.0".into(), vec![Note]));
        assert_eq!(conv(DEC51, d(150, 2)), ("1.5".into(), vec![]));
        assert_eq!(
            conv(DEC51, Value::Int(123456)),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, d(999995, 2)),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, d(-999995, 2)),
            ("-9999.9".into(), vec![OutOfRange])
        );
        // Doubles go through their shortest digits: 1.45 rounds up.
        assert_eq!(conv(DEC51, Value::Double(1.45)), ("1.5".into(), vec![Note]));
        assert_eq!(
            conv(DEC51, Value::Double(1e300)),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, Value::Double(1e-300)),
            ("0.0".into(), vec![Note])
        );
        assert_eq!(conv(DEC51, s(" 1.55 ")), ("1.6".into(), vec![Note]));
        assert_eq!(conv(DEC51, s("12 ")), ("12.0".into(), vec![Note]));
        assert_eq!(
            conv(DEC51, s("1.55x")),
            ("1.6".into(), vec![Truncated, Note])
        );
        assert_eq!(
            conv(DEC51, s("123456abc")),
            ("9999.9".into(), vec![Truncated, OutOfRange])
        );
        assert_eq!(
            conv(DEC51, s("123456 ")),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, s("abc")),
            ("0.0".into(), vec![bad("decimal", "abc")])
        );
        assert_eq!(conv(DEC51, s("1e-2")), ("0.0".into(), vec![Note]));
    }

    #[test]
    fn doubles() {
        use Issue::*;
        assert_eq!(conv(SqlType::Double, s("1.5")), ("1.5".into(), vec![]));
        assert_eq!(conv(SqlType::Double, s("12 ")), ("12".into(), vec![Note]));
        assert_eq!(
            conv(SqlType::Double, s("1.5x")),
            ("1.5".into(), vec![Truncated])
        );
        assert_eq!(
            conv(SqlType::Double, s("inf")),
            ("0".into(), vec![bad("double", "inf")])
        );
        assert_eq!(
            conv(SqlType::Double, s("1e400x")),
            ("1.7976931348623157e308".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(SqlType::Float, Value::Double(1e300)).1,
            vec![OutOfRange]
        );
    }

    #[test]
    fn strings_cut_at_the_length() {
        use Issue::*;
        let vc = SqlType::Varchar {
            len: 3,
            binary: false,
        };
        let ch = SqlType::Char {
            len: 3,
            binary: false,
        };
        let vb = SqlType::Varchar {
            len: 3,
            binary: true,
        };
        assert_eq!(conv(vc, s("abcdef")), ("abc".into(), vec![TooLong]));
        assert_eq!(conv(vc, s("abc  ")), ("abc".into(), vec![Note]));
        assert_eq!(conv(vc, s("ab    ")), ("ab ".into(), vec![Note]));
        assert_eq!(conv(vc, s("abc\t")), ("abc".into(), vec![Note]));
        assert_eq!(conv(vc, s("abcd ")), ("abc".into(), vec![TooLong]));
        assert_eq!(conv(vc, Value::Int(12345)), ("123".into(), vec![TooLong]));
        assert_eq!(conv(vc, s("äöüß")), ("äöü".into(), vec![TooLong]));
        assert_eq!(conv(ch, s("abc  ")), ("abc".into(), vec![]));
        assert_eq!(conv(ch, s("abcd")), ("abc".into(), vec![TooLong]));
        assert_eq!(conv(vb, s("abc ")).1, vec![TooLong]);
        let tiny = SqlType::Text {
            max: 4,
            binary: false,
        };
        assert_eq!(conv(tiny, s("aaää")), ("aaä".into(), vec![TooLong]));
    }

    #[test]
    fn doubles_into_strings_fit_the_column_as_my_gcvt_prints_them() {
        let g = |x: f64, w: usize| gcvt(x, w);
        // What MariaDB 10.11 stores for these in VARCHAR(1..6); "!" is error 1406.
        let seen = [
            (0.012345, 1, "!"),
            (0.0012345, 1, "!"),
            (-0.012, 1, "!"),
            (123.456, 1, "!"),
            (99.96, 1, "!"),
            (0.5, 1, "!"),
            (1.5, 1, "2"),
            (0.15, 1, "!"),
            (0.00012, 1, "!"),
            (1.25e-10, 1, "!"),
            (-1.25e10, 1, "!"),
            (0.012345, 2, "0"),
            (0.0012345, 2, "0"),
            (-0.012, 2, "!"),
            (123.456, 2, "!"),
            (99.96, 2, "!"),
            (0.5, 2, "0"),
            (1.5, 2, "2"),
            (0.15, 2, "0"),
            (0.00012, 2, "!"),
            (1.25e-10, 2, "!"),
            (-1.25e10, 2, "!"),
            (0.012345, 3, "0"),
            (0.0012345, 3, "0"),
            (-0.012, 3, "0"),
            (123.456, 3, "123"),
            (99.96, 3, "100"),
            (0.5, 3, "0.5"),
            (1.5, 3, "1.5"),
            (0.15, 3, "0.1"),
            (0.00012, 3, "!"),
            (1.25e-10, 3, "!"),
            (-1.25e10, 3, "!"),
            (0.012345, 4, "0.01"),
            (0.0012345, 4, "!"),
            (-0.012, 4, "0"),
            (123.456, 4, "123"),
            (99.96, 4, "100"),
            (0.5, 4, "0.5"),
            (1.5, 4, "1.5"),
            (0.15, 4, "0.15"),
            (0.00012, 4, "!"),
            (1.25e-10, 4, "!"),
            (-1.25e10, 4, "!"),
            (0.012345, 5, "0.012"),
            (0.0012345, 5, "0.001"),
            (-0.012, 5, "-0.01"),
            (123.456, 5, "123.5"),
            (99.96, 5, "99.96"),
            (0.5, 5, "0.5"),
            (1.5, 5, "1.5"),
            (0.15, 5, "0.15"),
            (0.00012, 5, "1e-4"),
            (1.25e-10, 5, "!"),
            (-1.25e10, 5, "!"),
            (0.012345, 6, "0.0123"),
            (0.0012345, 6, "0.0012"),
            (-0.012, 6, "-0.012"),
            (123.456, 6, "123.46"),
            (99.96, 6, "99.96"),
            (0.5, 6, "0.5"),
            (1.5, 6, "1.5"),
            (0.15, 6, "0.15"),
            (0.00012, 6, "1.2e-4"),
            (1.25e-10, 6, "1e-10"),
            (-1.25e10, 6, "-1e10"),
        ];
        for (x, w, want) in seen {
            let (text, cut) = g(x, w);
            if want == "!" {
                assert!(cut, "{x} in {w}: {text}");
            } else {
                assert_eq!((text.as_str(), cut), (want, false), "{x} in {w}");
            }
        }
        assert_eq!(g(3.3333, 3), ("3.3".into(), false));
        assert_eq!(g(-2.25, 3), ("-2".into(), false));
        assert_eq!(g(-0.5, 3), ("0".into(), false));
        assert_eq!(g(1e10, 3), ("1e1".into(), true));
        assert_eq!(g(1e-5, 3), ("1e-".into(), true));
        assert_eq!(g(123456789.125, 3), ("1e8".into(), true));
        assert_eq!(g(123456789.125, 5), ("1.2e8".into(), false));
        assert_eq!(g(1e-5, 5), ("1e-5".into(), false));
        assert_eq!(g(3.3333, 5), ("3.333".into(), false));
        assert_eq!(g(1e300, 5), ("1e300".into(), false));
        assert_eq!(g(0.1 + 0.2, 30), ("0.30000000000000004".into(), false));
        assert_eq!(g(1.5e-7, 30), ("0.00000015".into(), false));
        assert_eq!(g(1e15, 30), ("1e15".into(), false));
        assert_eq!(g(100.0, 30), ("100".into(), false));
        assert_eq!(
            g(12345678901234567.0, 30),
            ("1.2345678901234568e16".into(), false)
        );
        assert_eq!(g(0.0, 3), ("0".into(), false));
        let vc = SqlType::Varchar {
            len: 3,
            binary: false,
        };
        assert_eq!(
            conv(vc, Value::Double(1e10)),
            ("1e1".into(), vec![Issue::TooLong])
        );
        assert_eq!(conv(vc, Value::Double(1.5)), ("1.5".into(), vec![]));
    }

    #[test]
    fn dates() {
        use Issue::*;
        let bd = |t: &str| BadTemporal {
            kind: "date",
            text: t.into(),
        };
        let bdt = |t: &str| BadTemporal {
            kind: "datetime",
            text: t.into(),
        };
        let dt = SqlType::DateTime { fsp: 0 };
        let d = SqlType::Date;
        assert_eq!(conv(d, s("xyz")), ("0000-00-00".into(), vec![bd("xyz")]));
        assert_eq!(
            conv(d, s("2020-02-30")),
            ("0000-00-00".into(), vec![bd("2020-02-30")])
        );
        assert_eq!(conv(d, s("2020-02-29")), ("2020-02-29".into(), vec![]));
        assert_eq!(conv(d, s("0000-00-00")), ("0000-00-00".into(), vec![]));
        assert_eq!(conv(d, s("2020-01-00")), ("2020-01-00".into(), vec![]));
        assert_eq!(
            conv(d, s("2020-01-01 10:11:12")),
            ("2020-01-01".into(), vec![Note])
        );
        assert_eq!(
            conv(d, s("2020-01-01 00:00:00.5")),
            ("2020-01-01".into(), vec![])
        );
        assert_eq!(conv(d, s("2020-01-01 ")), ("2020-01-01".into(), vec![]));
        assert_eq!(
            conv(d, s("2020-01-01abc")),
            ("2020-01-01".into(), vec![bd("2020-01-01abc")])
        );
        assert_eq!(conv(d, s("20-1-1")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("99-12-31")), ("1999-12-31".into(), vec![]));
        assert_eq!(conv(d, s("2020/01/01")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("20200101")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("200101")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("2020")), ("0000-00-00".into(), vec![bd("2020")]));
        assert_eq!(conv(d, Value::Int(20200101)), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, Value::Int(0)), ("0000-00-00".into(), vec![]));
        assert_eq!(conv(d, Value::Int(101)), ("2000-01-01".into(), vec![]));
        assert_eq!(conv(d, Value::Int(1)), ("0000-00-00".into(), vec![bd("1")]));
        assert_eq!(
            conv(d, Value::Double(1.5)),
            ("0000-00-00".into(), vec![bd("1.5")])
        );
        assert_eq!(
            conv(dt, s("2023-01-01 25:00:00")),
            (
                "0000-00-00 00:00:00".into(),
                vec![bdt("2023-01-01 25:00:00")]
            )
        );
        assert_eq!(
            conv(dt, s("2020-01-01 10:11:12.5")),
            ("2020-01-01 10:11:12".into(), vec![])
        );
        assert_eq!(
            conv(dt, s("2020-01-01 10:11:12.1234567")),
            ("2020-01-01 10:11:12".into(), vec![Note])
        );
        assert_eq!(
            conv(dt, s("2020-01-01 10:11")),
            ("2020-01-01 10:11:00".into(), vec![])
        );
        assert_eq!(
            conv(dt, Value::Int(20200101101112)),
            ("2020-01-01 10:11:12".into(), vec![])
        );
    }

    #[test]
    fn null_takes_the_implicit_default_in_not_null_columns() {
        assert_eq!(conv(INT, Value::Null), ("0".into(), vec![Issue::Null]));
        assert_eq!(
            conv(SqlType::Date, Value::Null),
            ("0000-00-00".into(), vec![Issue::Null])
        );
        let (v, i) = convert(Value::Null, INT, true);
        assert!(v.is_null() && i.is_empty());
    }

    #[test]
    fn issues_have_a_strict_and_a_lenient_face() {
        let d = Dest {
            db: "d",
            table: "t",
            column: "c",
            row: 2,
        };
        assert_eq!(Issue::TooLong.error(&d).code, 1406);
        assert_eq!(Issue::TooLong.warning(&d).1, 1265);
        let b = Issue::BadTemporal {
            kind: "date",
            text: "x".into(),
        };
        assert_eq!(b.error(&d).code, 1292);
        assert_eq!(
            b.error(&d).message,
            "Incorrect date value: 'x' for column `d`.`t`.`c` at row 2"
        );
        assert_eq!(b.warning(&d).1, 1265);
        assert_eq!(Issue::Truncated.error(&d).code, 1265);
        assert_eq!(Issue::Note.warning(&d).0, "Note");
        assert_eq!(
            Issue::Null.warning(&d),
            ("Warning", 1048, "Column 'c' cannot be null".into())
        );
        assert_eq!(
            bad("integer", "abc").warning(&d).2,
            "Incorrect integer value: 'abc' for column `d`.`t`.`c` at row 2"
        );
    }
}
