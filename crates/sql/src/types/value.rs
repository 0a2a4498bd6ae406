//! SQL values and column types: what a row holds, how values compare (MySQL's rules, the
//! default collation `utf8mb4_general_ci` included) and how they print.

use std::cmp::Ordering;
use std::fmt::Write as _;

/// The type of a column, as declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlType {
    /// TINYINT (1), SMALLINT (2), MEDIUMINT (3), INT (4), BIGINT (8).
    Int {
        bytes: u8,
        unsigned: bool,
    },
    Float,
    Double,
    /// DECIMAL(precision, scale); zipdb holds up to 38 digits.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// CHAR(len) / BINARY(len) (`binary`): stored without trailing spaces, which MySQL strips
    /// from CHAR on read anyway.
    Char {
        len: u32,
        binary: bool,
    },
    /// VARCHAR(len) / VARBINARY(len).
    Varchar {
        len: u32,
        binary: bool,
    },
    /// TINYTEXT..LONGTEXT / TINYBLOB..LONGBLOB (`binary`), by the maximum byte length.
    Text {
        max: u32,
        binary: bool,
    },
    Date,
    DateTime {
        fsp: u8,
    },
    Timestamp {
        fsp: u8,
    },
}

impl SqlType {
    /// Strings compared under the default collation (case-insensitive, trailing spaces
    /// ignored), as opposed to binary strings and non-strings.
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            SqlType::Char { binary: false, .. }
                | SqlType::Varchar { binary: false, .. }
                | SqlType::Text { binary: false, .. }
        )
    }

    pub fn is_string(&self) -> bool {
        matches!(
            self,
            SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. }
        )
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, SqlType::Int { .. })
    }

    /// Maximum length in characters (strings) or bytes, for `CHAR_LENGTH` checks.
    pub fn max_len(&self) -> Option<u32> {
        match *self {
            SqlType::Char { len, .. } | SqlType::Varchar { len, .. } => Some(len),
            SqlType::Text { max, .. } => Some(max),
            _ => None,
        }
    }

    /// The type as `SHOW CREATE TABLE` prints it.
    pub fn sql_name(&self) -> String {
        match *self {
            SqlType::Int { bytes, unsigned } => {
                let n = match bytes {
                    1 => "tinyint",
                    2 => "smallint",
                    3 => "mediumint",
                    4 => "int",
                    _ => "bigint",
                };
                if unsigned {
                    format!("{n} unsigned")
                } else {
                    n.to_string()
                }
            }
            SqlType::Float => "float".into(),
            SqlType::Double => "double".into(),
            SqlType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            SqlType::Char { len, binary } => {
                format!("{}({len})", if binary { "binary" } else { "char" })
            }
            SqlType::Varchar { len, binary } => {
                format!("{}({len})", if binary { "varbinary" } else { "varchar" })
            }
            SqlType::Text { max, binary } => {
                let size = match max {
                    0..=255 => "tiny",
                    256..=65535 => "",
                    65536..=16_777_215 => "medium",
                    _ => "long",
                };
                format!("{size}{}", if binary { "blob" } else { "text" })
            }
            SqlType::Date => "date".into(),
            SqlType::DateTime { fsp: 0 } => "datetime".into(),
            SqlType::DateTime { fsp } => format!("datetime({fsp})"),
            SqlType::Timestamp { fsp: 0 } => "timestamp".into(),
            SqlType::Timestamp { fsp } => format!("timestamp({fsp})"),
        }
    }
}

/// A fixed-point decimal: `mant / 10^scale`.
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    pub mant: i128,
    pub scale: u8,
}

/// Most digits a [`Decimal`] holds (i128 holds 38 decimal digits).
pub const DECIMAL_DIGITS_MAX: u32 = 38;

fn pow10(n: u8) -> i128 {
    10i128.pow(u32::from(n))
}

// Checked arithmetic returning Option: not the std operator traits.
#[allow(clippy::should_implement_trait)]
impl Decimal {
    pub fn from_i64(v: i64) -> Decimal {
        Decimal {
            mant: i128::from(v),
            scale: 0,
        }
    }

    /// The same value at another scale (rounding half away from zero when it shrinks);
    /// `None` on overflow.
    pub fn rescale(self, scale: u8) -> Option<Decimal> {
        if scale >= self.scale {
            let f = 10i128.checked_pow(u32::from(scale - self.scale))?;
            Some(Decimal {
                mant: self.mant.checked_mul(f)?,
                scale,
            })
        } else {
            let f = pow10(self.scale - scale);
            let q = self.mant / f;
            let r = self.mant % f;
            let q = if r.abs() * 2 >= f {
                q + self.mant.signum()
            } else {
                q
            };
            Some(Decimal { mant: q, scale })
        }
    }

    pub fn to_f64(self) -> f64 {
        self.mant as f64 / 10f64.powi(i32::from(self.scale))
    }

    pub fn from_f64(v: f64, scale: u8) -> Option<Decimal> {
        if !v.is_finite() {
            return None;
        }
        let m = (v * 10f64.powi(i32::from(scale))).round();
        if m.abs() >= 1e38 {
            return None;
        }
        Some(Decimal {
            mant: m as i128,
            scale,
        })
    }

    /// Parses `[-+]digits[.digits]` (and an exponent, via f64 when present).
    pub fn parse(s: &str) -> Option<Decimal> {
        let s = s.trim();
        if s.contains(['e', 'E']) {
            let v: f64 = s.parse().ok()?;
            return Decimal::from_f64(v, 10);
        }
        let (neg, digits) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) {
            return None;
        }
        let frac = &frac[..frac.len().min(30)];
        let mut mant: i128 = 0;
        for c in int.bytes().chain(frac.bytes()) {
            mant = mant.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
        }
        Some(Decimal {
            mant: if neg { -mant } else { mant },
            scale: frac.len() as u8,
        })
    }

    fn align(a: Decimal, b: Decimal) -> Option<(i128, i128, u8)> {
        let s = a.scale.max(b.scale);
        Some((a.rescale(s)?.mant, b.rescale(s)?.mant, s))
    }

    pub fn add(self, o: Decimal) -> Option<Decimal> {
        let (a, b, scale) = Decimal::align(self, o)?;
        Some(Decimal {
            mant: a.checked_add(b)?,
            scale,
        })
    }

    pub fn sub(self, o: Decimal) -> Option<Decimal> {
        self.add(Decimal {
            mant: -o.mant,
            scale: o.scale,
        })
    }

    pub fn mul(self, o: Decimal) -> Option<Decimal> {
        let d = Decimal {
            mant: self.mant.checked_mul(o.mant)?,
            scale: self.scale.checked_add(o.scale)?,
        };
        if d.scale > 30 {
            d.rescale(30)
        } else {
            Some(d)
        }
    }

    /// Division with MySQL's `div_precision_increment` (4 more digits of scale).
    pub fn div(self, o: Decimal) -> Option<Decimal> {
        if o.mant == 0 {
            return None;
        }
        let scale = (self.scale + 4).min(30);
        // self * 10^(scale + o.scale - self.scale) / o.mant, rounded.
        let shift = scale + o.scale - self.scale;
        let n = self
            .mant
            .checked_mul(10i128.checked_pow(u32::from(shift))?)?;
        let q = n / o.mant;
        let r = n % o.mant;
        let q = if r.abs() * 2 >= o.mant.abs() {
            q + (n.signum() * o.mant.signum())
        } else {
            q
        };
        Some(Decimal { mant: q, scale })
    }

    pub fn cmp(self, o: Decimal) -> Ordering {
        match Decimal::align(self, o) {
            Some((a, b, _)) => a.cmp(&b),
            None => self.to_f64().total_cmp(&o.to_f64()),
        }
    }

    /// Digits before the point (for precision checks).
    pub fn int_digits(self) -> u32 {
        let int = (self.mant / pow10(self.scale)).unsigned_abs();
        if int == 0 {
            0
        } else {
            int.ilog10() + 1
        }
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let neg = self.mant < 0;
        let digits = self.mant.unsigned_abs().to_string();
        let scale = usize::from(self.scale);
        let s = if scale == 0 {
            digits
        } else if digits.len() > scale {
            format!(
                "{}.{}",
                &digits[..digits.len() - scale],
                &digits[digits.len() - scale..]
            )
        } else {
            format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
        };
        if neg {
            write!(f, "-{s}")
        } else {
            f.write_str(&s)
        }
    }
}

/// A date and time of day, with microseconds. Packs into an i64 whose order is the
/// chronological order (so it can be compared and used in keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DateTime {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub micro: u32,
}

impl DateTime {
    pub fn pack(&self) -> i64 {
        let ymd = (i64::from(self.year) * 13 + i64::from(self.month)) * 32 + i64::from(self.day);
        let hms =
            (i64::from(self.hour) * 60 + i64::from(self.minute)) * 60 + i64::from(self.second);
        (ymd * 86_400 + hms) * 1_000_000 + i64::from(self.micro)
    }

    pub fn unpack(p: i64) -> DateTime {
        let micro = p.rem_euclid(1_000_000) as u32;
        let secs = p.div_euclid(1_000_000);
        let hms = secs.rem_euclid(86_400);
        let ymd = secs.div_euclid(86_400);
        DateTime {
            year: (ymd / (13 * 32)) as u16,
            month: ((ymd / 32) % 13) as u8,
            day: (ymd % 32) as u8,
            hour: (hms / 3600) as u8,
            minute: ((hms / 60) % 60) as u8,
            second: (hms % 60) as u8,
            micro,
        }
    }

    /// Parses `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.ffffff]` (also with `T`), checking ranges.
    /// Zero dates (`0000-00-00`) are accepted, as MySQL does outside strict NO_ZERO_DATE.
    pub fn parse(s: &str) -> Option<DateTime> {
        let s = s.trim();
        let (date, time) = match s.find([' ', 'T']) {
            Some(i) => (&s[..i], Some(s[i + 1..].trim())),
            None => (s, None),
        };
        let mut d = date.split('-');
        let year: u16 = d.next()?.parse().ok()?;
        let month: u8 = d.next()?.parse().ok()?;
        let day: u8 = d.next()?.parse().ok()?;
        if d.next().is_some() || year > 9999 || month > 12 || day > 31 {
            return None;
        }
        let zero = month == 0 || day == 0;
        if !zero && day > days_in_month(year, month) {
            return None;
        }
        let mut dt = DateTime {
            year,
            month,
            day,
            ..DateTime::default()
        };
        if let Some(t) = time.filter(|t| !t.is_empty()) {
            let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
            let mut p = hms.split(':');
            dt.hour = p.next()?.parse().ok()?;
            dt.minute = p.next()?.parse().ok()?;
            dt.second = p.next().unwrap_or("0").parse().ok()?;
            if p.next().is_some() || dt.hour > 23 || dt.minute > 59 || dt.second > 59 {
                return None;
            }
            if !frac.is_empty() {
                if !frac.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                let mut f: String = frac.chars().take(6).collect();
                while f.len() < 6 {
                    f.push('0');
                }
                dt.micro = f.parse().ok()?;
            }
        }
        Some(dt)
    }

    /// The same day at midnight (what a DATE keeps of a datetime).
    pub fn date_part(&self) -> DateTime {
        DateTime {
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
            ..*self
        }
    }

    pub fn format_date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `YYYY-MM-DD HH:MM:SS` with `fsp` fractional digits.
    pub fn format(&self, fsp: u8) -> String {
        let mut s = format!(
            "{} {:02}:{:02}:{:02}",
            self.format_date(),
            self.hour,
            self.minute,
            self.second
        );
        if fsp > 0 {
            let f = format!("{:06}", self.micro);
            let _ = write!(s, ".{}", &f[..usize::from(fsp.min(6))]);
        }
        s
    }
}

/// Days in `month` (1–12) of `year`, by the Gregorian rule.
pub fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

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
            Value::Str(s) => numeric_prefix(s.as_bytes()),
            Value::Bytes(b) => numeric_prefix(b),
            Value::Date(p) | Value::DateTime(p) => temporal_number(*p),
        })
    }

    /// As a signed integer (rounding, saturating), MySQL's implicit conversion.
    pub fn to_i64(&self) -> Option<i64> {
        Some(match self {
            Value::Null => return None,
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
            Value::Str(s) => match Decimal::parse(s) {
                Some(d) => {
                    let body = s.trim_end_matches(' ').len();
                    if body < s.len() {
                        crate::types::diag::truncated_number("DECIMAL", s.as_bytes(), body);
                    }
                    Some(d)
                }
                None => Decimal::from_f64(numeric_prefix_as(s.as_bytes(), "DECIMAL"), 6),
            },
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

/// A string compared with a DATE or DATETIME, read as MySQL reads it there: as a datetime; if
/// it is not one, its longest prefix that is one; else the zero datetime `0000-00-00` (below
/// every date). The last two raise warning 1292.
fn temporal_of_text(s: &str) -> i64 {
    if let Some(d) = DateTime::parse(s) {
        return d.pack();
    }
    // The other spellings MySQL accepts ('20240102', ...), off the common path.
    if let Some((d, _)) = crate::expr::builtins::temporal_quiet(&Value::Str(s.to_string())) {
        return d.pack();
    }
    let t = s.trim_start();
    let prefix = (1..t.len())
        .rev()
        .filter(|&i| t.is_char_boundary(i) && t.as_bytes()[i - 1].is_ascii_digit())
        .find_map(|i| DateTime::parse(&t[..i]));
    crate::types::diag::warn(1292, || {
        format!(
            "Truncated incorrect datetime value: '{}'",
            crate::types::diag::quoted(s.as_bytes())
        )
    });
    prefix.map_or(0, |d| d.pack())
}

/// A number compared with a DATE or DATETIME: read as one (`20240102`, `240102`,
/// `20240102030405`), else the zero datetime, with warning 1292.
fn temporal_of_number(v: &Value) -> i64 {
    match crate::expr::builtins::temporal_quiet(v) {
        Some((d, _)) => d.pack(),
        None => {
            crate::types::diag::warn(1292, || {
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

/// The number a string starts with, as MySQL converts `'12abc'` to 12, raising 1292 (see
/// [`crate::types::diag::truncated_number`]) when it is not all number.
pub fn numeric_prefix(b: &[u8]) -> f64 {
    numeric_prefix_as(b, "DOUBLE")
}

/// [`numeric_prefix`], naming the type read in the warning (DOUBLE, DECIMAL, INTEGER).
pub fn numeric_prefix_as(b: &[u8], kind: &str) -> f64 {
    let Ok(whole) = std::str::from_utf8(b) else {
        crate::types::diag::truncated_number(kind, b, 0);
        return 0.0;
    };
    let s = whole.trim_start();
    let lead = whole.len() - s.len();
    let mut end = 0;
    let bytes = s.as_bytes();
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut seen_e = false;
    while end < bytes.len() {
        let c = bytes[end];
        let ok = match c {
            b'0'..=b'9' => {
                seen_digit = true;
                true
            }
            b'+' | b'-' => end == 0 || matches!(bytes[end - 1], b'e' | b'E'),
            b'.' if !seen_dot && !seen_e => {
                seen_dot = true;
                true
            }
            b'e' | b'E' if seen_digit && !seen_e => {
                seen_e = true;
                true
            }
            _ => false,
        };
        if !ok {
            break;
        }
        end += 1;
    }
    let mut t = &s[..end];
    while !t.is_empty() && t.parse::<f64>().is_err() {
        t = &t[..t.len() - 1];
    }
    let consumed = if t.is_empty() { 0 } else { lead + t.len() };
    let v: f64 = t.parse().unwrap_or(0.0);
    if v.is_infinite() {
        // '1e400': MySQL saturates at the largest double, with a warning.
        crate::types::diag::truncated_number(kind, b, 0);
        return f64::MAX.copysign(v);
    }
    crate::types::diag::truncated_number(kind, b, consumed);
    v
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

/// The weight of one character under `utf8mb4_general_ci`, zipdb's only text collation, as a
/// character: strings compare by their weights, one per character (no expansions or
/// contractions), and weights order by code point. ASCII letters weigh as upper case; BMP
/// characters by a table (`collation_table.rs`, generated by `scripts/gen-general-ci.py` and
/// checked against MariaDB 10.11 for every code point by `tests/diff/collation_bmp.py`): upper
/// case, accents of Latin, Greek and Cyrillic letters folded (`'é'`, `'È'` and `'e'` all weigh
/// `'E'`, `'ß'` weighs `'S'`), Unicode 3.0's repertoire only. Everything outside the BMP weighs
/// U+FFFD: MariaDB's general_ci has 16-bit weights, so all emoji are equal to each other.
#[inline]
pub fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    if c as u32 > 0xFFFF {
        return '\u{FFFD}';
    }
    FOLDS.get(c)
}

/// UPPER() of one character under utf8mb4_general_ci: one character to one, accents kept,
/// Unicode 3.0's case pairs (`'ß'` stays `'ß'`, `'é'` becomes `'É'`); outside the BMP unchanged.
#[inline]
pub fn upper_char(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_uppercase()
    } else {
        UPPER.get(c)
    }
}

/// LOWER() of one character under utf8mb4_general_ci (see [`upper_char`]).
#[inline]
pub fn lower_char(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_lowercase()
    } else {
        LOWER.get(c)
    }
}

static FOLDS: BmpMap<{ BmpMap::pages_for(&crate::types::collation_table::GENERAL_CI_FOLDS) }> =
    BmpMap::new(&crate::types::collation_table::GENERAL_CI_FOLDS);
static UPPER: BmpMap<{ BmpMap::pages_for(&crate::types::collation_table::GENERAL_CI_UPPER) }> =
    BmpMap::new(&crate::types::collation_table::GENERAL_CI_UPPER);
static LOWER: BmpMap<{ BmpMap::pages_for(&crate::types::collation_table::GENERAL_CI_LOWER) }> =
    BmpMap::new(&crate::types::collation_table::GENERAL_CI_LOWER);

/// A map of characters to characters that changes only a few 256-character blocks of the BMP,
/// built at compile time from the generated `(from, to)` pairs: a lookup is two loads, and the
/// tables (11 blocks each, 11 KiB) cost nothing at startup.
struct BmpMap<const PAGES: usize> {
    /// Each block's index into `pages`, or [`BmpMap::IDENTITY`].
    page_of: [u8; 256],
    pages: [[char; 256]; PAGES],
}

impl BmpMap<0> {
    const IDENTITY: u8 = u8::MAX;

    const fn page_of(pairs: &[(u16, u16)]) -> [u8; 256] {
        let mut of = [Self::IDENTITY; 256];
        let mut n = 0;
        let mut i = 0;
        while i < pairs.len() {
            let block = (pairs[i].0 >> 8) as usize;
            if of[block] == Self::IDENTITY {
                of[block] = n;
                n += 1;
            }
            i += 1;
        }
        of
    }

    /// The number of blocks `pairs` change.
    const fn pages_for(pairs: &[(u16, u16)]) -> usize {
        let of = Self::page_of(pairs);
        let mut n = 0;
        let mut i = 0;
        while i < 256 {
            if of[i] != Self::IDENTITY {
                n += 1;
            }
            i += 1;
        }
        n
    }
}

impl<const PAGES: usize> BmpMap<PAGES> {
    const fn new(pairs: &[(u16, u16)]) -> Self {
        let page_of = BmpMap::page_of(pairs);
        let mut pages = [['\0'; 256]; PAGES];
        // Identity first, then the pairs over it.
        let mut block = 0;
        while block < 256 {
            if page_of[block] != BmpMap::IDENTITY {
                let mut lo = 0;
                while lo < 256 {
                    pages[page_of[block] as usize][lo] =
                        match char::from_u32((block << 8 | lo) as u32) {
                            Some(c) => c,
                            // A surrogate: no `char` (and no UTF-8 text) holds one.
                            None => '\u{FFFD}',
                        };
                    lo += 1;
                }
            }
            block += 1;
        }
        let mut i = 0;
        while i < pairs.len() {
            let (from, to) = pairs[i];
            pages[page_of[(from >> 8) as usize] as usize][(from & 0xFF) as usize] =
                match char::from_u32(to as u32) {
                    Some(c) => c,
                    None => panic!("a surrogate in the table"),
                };
            i += 1;
        }
        BmpMap { page_of, pages }
    }

    /// The image of `c` (a character outside the BMP maps to itself).
    #[inline]
    fn get(&self, c: char) -> char {
        let u = c as u32;
        if u > 0xFFFF {
            return c;
        }
        match self.page_of[(u >> 8) as usize] {
            BmpMap::IDENTITY => c,
            p => self.pages[p as usize][(u & 0xFF) as usize],
        }
    }
}

/// Comparison under the default collation (utf8mb4_general_ci): case- and accent-insensitive,
/// PAD SPACE: the strings compare by their characters' [`fold_char`] weights as if the shorter
/// were padded with spaces to the longer's length. So trailing spaces are ignored, and a string
/// sorts after itself followed by a character below a space (`'a\t' < 'a' < 'ab'`).
pub fn collate_cmp(a: &str, b: &str) -> Ordering {
    // Hot in ORDER BY, DISTINCT and GROUP BY over text: walk the common ASCII prefix once,
    // without looking at the whole strings first. Where both have an ASCII character their
    // weights decide (padding only matters past the shorter string's end, spaces included);
    // the rest is compared by `collate_cmp_suffix`, which is exact for suffixes that start
    // after an equal prefix (a char boundary in both), as PAD SPACE compares position by
    // position.
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let n = x.len().min(y.len());
    let mut i = 0;
    while i < n {
        let (p, q) = (x[i], y[i]);
        if p >= 0x80 || q >= 0x80 {
            break;
        }
        if p != q {
            let (fp, fq) = (p.to_ascii_uppercase(), q.to_ascii_uppercase());
            if fp != fq {
                return fp.cmp(&fq);
            }
        }
        i += 1;
    }
    collate_cmp_suffix(&a[i..], &b[i..])
}

/// [`collate_cmp`] by its definition, one character at a time.
fn collate_cmp_suffix(a: &str, b: &str) -> Ordering {
    let mut x = a.chars().map(fold_char);
    let mut y = b.chars().map(fold_char);
    loop {
        match (x.next(), y.next()) {
            (Some(p), Some(q)) if p == q => {}
            (Some(p), Some(q)) => return p.cmp(&q),
            (None, None) => return Ordering::Equal,
            (None, Some(q)) => return pad_cmp(q, y).reverse(),
            (Some(p), None) => return pad_cmp(p, x),
        }
    }
}

/// How the rest of a string (weights `first`, then `rest`) compares with spaces: by its first
/// weight that is not a space (only control characters weigh less), equal if there is none.
fn pad_cmp(first: char, rest: impl Iterator<Item = char>) -> Ordering {
    std::iter::once(first)
        .chain(rest)
        .find(|&w| w != ' ')
        .map_or(Ordering::Equal, |w| w.cmp(&' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PAD SPACE spelled out: both strings padded with spaces to the same length, then their
    /// weights compared one by one.
    fn padded_cmp(a: &str, b: &str) -> Ordering {
        let n = a.chars().count().max(b.chars().count());
        let pad = |s: &str| {
            let mut w: Vec<char> = s.chars().map(fold_char).collect();
            w.resize(n, ' ');
            w
        };
        pad(a).cmp(&pad(b))
    }

    proptest::proptest! {
        /// collate_cmp is PAD SPACE comparison of the weights.
        #[test]
        fn collate_cmp_pads_with_spaces(
            a in "[ aAeé\\t\\n\\x00\\x1f!~ßS😀]{0,6}",
            b in "[ aAeé\\t\\n\\x00\\x1f!~ßS😀]{0,6}",
        ) {
            proptest::prop_assert_eq!(collate_cmp(&a, &b), padded_cmp(&a, &b));
        }

        /// The fast path agrees with the definition, on strings made of the characters where
        /// it could go wrong: spaces (trailing or not), bytes below a space, both cases,
        /// non-ASCII letters with and without case, accented letters that weigh as ASCII ones
        /// (`é`, `ß`, `ſ` against `e`, `s`), a letter that does not fold (`Й`), characters
        /// outside the BMP (weight U+FFFD) and around U+FFFD.
        #[test]
        fn collate_cmp_matches_its_definition(
            a in "[ aAbBeEsS\\t!éÉèßſЙИ😀🙂\u{FFFD}\u{FFFF}]{0,8}",
            b in "[ aAbBeEsS\\t!éÉèßſЙИ😀🙂\u{FFFD}\u{FFFF}]{0,8}",
        ) {
            proptest::prop_assert_eq!(collate_cmp(&a, &b), collate_cmp_suffix(&a, &b));
            proptest::prop_assert_eq!(collate_cmp(&b, &a), collate_cmp(&a, &b).reverse());
        }
    }

    /// Weights MariaDB 10.11's utf8mb4_general_ci was seen to give (tests/diff/collation_bmp.py
    /// checks every BMP code point against it).
    #[test]
    fn fold_char_is_general_ci() {
        for (c, w) in [
            ('a', 'A'),
            ('é', 'E'),
            ('È', 'E'),
            ('ë', 'E'),
            ('Ḕ', 'E'),
            ('ß', 'S'),
            ('ſ', 'S'),
            ('ǅ', 'Ǆ'),
            ('ǆ', 'Ǆ'),
            ('ı', 'I'),
            ('İ', 'I'),
            ('µ', 'Μ'),
            ('ά', 'Α'),
            ('ς', 'Σ'),
            ('ϲ', 'Σ'),
            ('ё', 'Е'),
            ('й', 'Й'),
            ('ⓐ', 'Ⓐ'),
            ('ａ', 'Ａ'),
            // Not folded: distinct letters, no decomposition, or not in Unicode 3.0.
            ('Æ', 'Æ'),
            ('Ø', 'Ø'),
            ('Ð', 'Ð'),
            ('æ', 'Æ'),
            ('ø', 'Ø'),
            ('K', 'K'),
            ('\u{212A}', '\u{212A}'),
            ('ƞ', 'ƞ'),
            ('ԁ', 'ԁ'),
            // Outside the BMP: all one weight.
            ('😀', '\u{FFFD}'),
            ('\u{10000}', '\u{FFFD}'),
            ('\u{10FFFF}', '\u{FFFD}'),
            ('\u{FFFD}', '\u{FFFD}'),
            ('\u{FFFF}', '\u{FFFF}'),
        ] {
            assert_eq!(fold_char(c), w, "{c:?} (U+{:04X})", c as u32);
        }
        assert_eq!(collate_cmp("Éte", "ETE  "), Ordering::Equal);
        assert_eq!(collate_cmp("Straße", "STRASE"), Ordering::Equal);
        assert_eq!(collate_cmp("Straße", "Strasse"), Ordering::Less);
        assert_eq!(collate_cmp("é", "f"), Ordering::Less);
        assert_eq!(collate_cmp("é", "_"), Ordering::Less);
        assert_eq!(collate_cmp("😀", "🙂"), Ordering::Equal);
        // PAD SPACE: below a space, a longer string sorts first.
        assert_eq!(collate_cmp("a\t", "a"), Ordering::Less);
        assert_eq!(collate_cmp("a  \n", "a"), Ordering::Less);
        assert_eq!(collate_cmp("a  !", "a"), Ordering::Greater);
        assert_eq!(collate_cmp("\0", ""), Ordering::Less);
        assert_eq!(collate_cmp("\0", " "), Ordering::Less);
        assert_eq!(collate_cmp("a \t", "a\t"), Ordering::Greater);
    }

    /// A weight weighs as itself (each weight is a member of its class, so keys and hashes
    /// built from weights agree with comparisons of the original text), and the tables hold
    /// every generated pair.
    #[test]
    fn fold_char_weights_are_fixed_points() {
        for u in 0..=0x10FFFFu32 {
            let Some(c) = char::from_u32(u) else { continue };
            let w = fold_char(c);
            assert_eq!(fold_char(w), w, "U+{u:04X}");
            if u < 0x80 {
                assert_eq!(w, c.to_ascii_uppercase());
            }
        }
        for (tab, f) in [
            (
                &crate::types::collation_table::GENERAL_CI_FOLDS[..],
                fold_char as fn(char) -> char,
            ),
            (
                &crate::types::collation_table::GENERAL_CI_UPPER[..],
                upper_char,
            ),
            (
                &crate::types::collation_table::GENERAL_CI_LOWER[..],
                lower_char,
            ),
        ] {
            for &(c, w) in tab {
                let c = char::from_u32(u32::from(c)).unwrap();
                assert_eq!(f(c) as u32, u32::from(w));
            }
        }
    }

    /// UPPER/LOWER map one character to one and keep accents, as MariaDB's general_ci does.
    #[test]
    fn upper_and_lower_are_general_ci() {
        for (c, u, l) in [
            ('a', 'A', 'a'),
            ('é', 'É', 'é'),
            ('É', 'É', 'é'),
            ('ß', 'ß', 'ß'),
            ('ſ', 'S', 'ſ'),
            ('İ', 'İ', 'i'),
            ('ı', 'I', 'ı'),
            ('ǅ', 'Ǆ', 'ǆ'),
            ('ᾀ', 'ᾈ', 'ᾀ'),
            ('ϲ', 'Σ', 'ϲ'),
            ('ϴ', 'ϴ', 'ϴ'),
            ('ƞ', 'ƞ', 'ƞ'),
            ('Ω', 'Ω', 'ω'),
            ('Ø', 'Ø', 'ø'),
            ('\u{10428}', '\u{10428}', '\u{10428}'),
            ('😀', '😀', '😀'),
        ] {
            assert_eq!((upper_char(c), lower_char(c)), (u, l), "{c:?}");
        }
    }

    #[test]
    fn decimals_parse_print_and_compute() {
        let d = Decimal::parse("-12.340").unwrap();
        assert_eq!(d.to_string(), "-12.340");
        assert_eq!(Decimal::parse("0.05").unwrap().to_string(), "0.05");
        assert_eq!(
            Decimal::parse("1.5")
                .unwrap()
                .add(Decimal::parse("2.25").unwrap())
                .unwrap()
                .to_string(),
            "3.75"
        );
        assert_eq!(
            Decimal::from_i64(10)
                .div(Decimal::from_i64(4))
                .unwrap()
                .to_string(),
            "2.5000"
        );
        assert_eq!(
            Decimal::parse("2.345")
                .unwrap()
                .rescale(2)
                .unwrap()
                .to_string(),
            "2.35"
        );
        assert_eq!(
            Decimal::parse("-2.345")
                .unwrap()
                .rescale(2)
                .unwrap()
                .to_string(),
            "-2.35"
        );
        assert!(Decimal::parse("1x").is_none());
        assert!(Decimal::parse(".").is_none());
        assert_eq!(
            Decimal::parse("1.10")
                .unwrap()
                .cmp(Decimal::parse("1.1").unwrap()),
            Ordering::Equal
        );
    }

    #[test]
    fn datetimes_pack_in_order_and_round_trip() {
        let a = DateTime::parse("2024-02-29 23:59:59.5").unwrap();
        assert_eq!(a.format(6), "2024-02-29 23:59:59.500000");
        assert_eq!(DateTime::unpack(a.pack()), a);
        let b = DateTime::parse("2024-03-01").unwrap();
        assert!(a.pack() < b.pack());
        assert!(DateTime::parse("2023-02-29").is_none());
        assert!(DateTime::parse("2023-13-01").is_none());
        assert!(DateTime::parse("0000-00-00").is_some());
        assert_eq!(DateTime::unpack(0), DateTime::default());
    }

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
        assert_eq!(numeric_prefix(b" 12abc"), 12.0);
        assert_eq!(numeric_prefix(b"1e3x"), 1000.0);
        assert_eq!(numeric_prefix(b"abc"), 0.0);
        assert_eq!(format_double(1.0), "1");
        assert_eq!(format_double(0.1), "0.1");
        assert_eq!(format_double(1e20), "1e20");
    }
}
