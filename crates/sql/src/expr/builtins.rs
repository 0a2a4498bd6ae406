//! The pieces of the scalar functions that are more than a line: interval arithmetic (on the
//! calendar of `types/temporal.rs`), DATE_FORMAT and STR_TO_DATE, string
//! searching and padding, and the checksums (MD5, CRC32) and encodings (base64) zipdb computes
//! itself. `expr::func` dispatches here.

use std::fmt::Write as _;

use crate::types::collation::fold_char;
use crate::types::decimal::Decimal;
use crate::types::temporal::{
    calc_week, civil_from_days, day_of_year, days_from_civil, days_in_month, from_micros, is_leap,
    is_zero_date, to_micros, weekday, DateTime, FIRST_WEEKDAY, MONDAY_FIRST, WEEK_YEAR,
};
use crate::types::value::temporal_quiet;
use crate::types::value::Value;

/// The most bytes a string function builds: MariaDB's default `max_allowed_packet`; a longer
/// result is NULL there (with warning 1301).
pub const MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;

/// A unit of `INTERVAL n unit` and TIMESTAMPDIFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Microsecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl Unit {
    pub fn from_name(s: &str) -> Option<Unit> {
        let s = s.to_ascii_uppercase();
        let s = s.strip_prefix("SQL_TSI_").unwrap_or(&s);
        Some(match s {
            "MICROSECOND" | "FRAC_SECOND" => Unit::Microsecond,
            "SECOND" => Unit::Second,
            "MINUTE" => Unit::Minute,
            "HOUR" => Unit::Hour,
            "DAY" => Unit::Day,
            "WEEK" => Unit::Week,
            "MONTH" => Unit::Month,
            "QUARTER" => Unit::Quarter,
            "YEAR" => Unit::Year,
            _ => return None,
        })
    }

    /// The unit as SQL spells it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Microsecond => "MICROSECOND",
            Unit::Second => "SECOND",
            Unit::Minute => "MINUTE",
            Unit::Hour => "HOUR",
            Unit::Day => "DAY",
            Unit::Week => "WEEK",
            Unit::Month => "MONTH",
            Unit::Quarter => "QUARTER",
            Unit::Year => "YEAR",
        }
    }

    /// Whether adding this unit to a date keeps it a date.
    pub fn is_date_part(self) -> bool {
        matches!(
            self,
            Unit::Day | Unit::Week | Unit::Month | Unit::Quarter | Unit::Year
        )
    }

    /// Microseconds in one unit, for the units of fixed length.
    fn micros(self) -> Option<i128> {
        Some(match self {
            Unit::Microsecond => 1,
            Unit::Second => 1_000_000,
            Unit::Minute => 60_000_000,
            Unit::Hour => 3_600_000_000,
            Unit::Day => 86_400_000_000,
            Unit::Week => 7 * 86_400_000_000,
            _ => return None,
        })
    }

    fn months(self) -> Option<i128> {
        Some(match self {
            Unit::Month => 1,
            Unit::Quarter => 3,
            Unit::Year => 12,
            _ => return None,
        })
    }
}

// ---- calendar ---------------------------------------------------------------------------------

/// `d + n unit` (n in microseconds for SECOND and MICROSECOND, else in units); `None` when
/// the result leaves the calendar (MariaDB: NULL with warning 1441).
pub fn add_interval(d: &DateTime, unit: Unit, n: i128) -> Option<DateTime> {
    if is_zero_date(d) {
        return None;
    }
    if let Some(per) = unit.months() {
        let months = i128::from(d.year) * 12 + i128::from(d.month) - 1 + n.checked_mul(per)?;
        if !(0..=9999 * 12 + 11).contains(&months) {
            return None;
        }
        let year = (months / 12) as u16;
        let month = (months % 12) as u8 + 1;
        return Some(DateTime {
            year,
            month,
            day: d.day.min(days_in_month(year, month)),
            ..*d
        });
    }
    let per = match unit {
        Unit::Second | Unit::Microsecond => 1,
        u => u.micros()?,
    };
    from_micros(to_micros(d).checked_add(n.checked_mul(per)?)?)
}

/// TIMESTAMPDIFF(unit, a, b): whole units from a to b, truncated toward zero.
pub fn timestamp_diff(unit: Unit, a: &DateTime, b: &DateTime) -> i64 {
    if let Some(per) = unit.months() {
        let ma = i64::from(a.year) * 12 + i64::from(a.month);
        let mb = i64::from(b.year) * 12 + i64::from(b.month);
        let mut months = mb - ma;
        // The rest of the date: day of the month and time of day.
        let rest = |d: &DateTime| (d.day, d.hour, d.minute, d.second, d.micro);
        if months > 0 && rest(b) < rest(a) {
            months -= 1;
        } else if months < 0 && rest(b) > rest(a) {
            months += 1;
        }
        return months / per as i64;
    }
    let per = unit.micros().unwrap_or(1);
    ((to_micros(b) - to_micros(a)) / per) as i64
}

pub const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

pub const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A temporal argument: the datetime, and whether it carried a time of day (a DATETIME, or a
/// string or number with one). `None` if it is not a valid date, with warning 1292 as MySQL
/// raises it for a date function's argument.
pub fn temporal(v: &Value) -> Option<(DateTime, bool)> {
    let r = temporal_quiet(v);
    if r.is_none() && !v.is_null() {
        crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, || {
            let t = v.to_text().unwrap_or_default();
            format!(
                "Incorrect datetime value: '{}'",
                crate::types::diag::quoted(&t)
            )
        });
    }
    r
}

/// Digits after the point in a temporal string (`'... 10:00:00.50'` has 2), at most 6.
pub fn fraction_digits(v: &Value) -> u8 {
    match v {
        Value::Str(s) if s.contains(':') => s
            .rsplit_once('.')
            .map_or(0, |(_, f)| f.trim().len().min(6) as u8),
        _ => 0,
    }
}

/// HOUR/MINUTE/SECOND's argument: a datetime, or a time of day (`'hh:mm:ss'`).
pub fn time_of(v: &Value) -> Option<(i64, i64, i64)> {
    if let Value::Str(_) | Value::Bytes(_) = v {
        let s = v.to_string_lossy()?;
        let s = s.trim();
        if !s.contains(':') {
            // MariaDB reads a string without a colon as a TIME number, `[H..]HMMSS`, from its
            // leading digits: '2021-11-30' is 00:20:21 and '1999-12-31' is no time at all.
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            let Ok(n) = digits.parse::<i64>() else {
                crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, || {
                    format!("Incorrect time value: '{s}'")
                });
                return None;
            };
            if digits.len() < s.len() {
                crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, || {
                    format!("Truncated incorrect time value: '{s}'")
                });
            }
            let (h, m, sec) = (n / 10_000, n / 100 % 100, n % 100);
            if m >= 60 || sec >= 60 {
                return None;
            }
            return Some(if h > 838 { (838, 59, 59) } else { (h, m, sec) });
        }
    }
    if let Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) = v {
        // A number is a TIME `[H..]HMMSS` (the sign ignored), a datetime when it has 8 to 14
        // digits, and beyond that clipped to 838:59:59, as MariaDB reads it.
        let n: u64 = match v {
            Value::UInt(u) => *u,
            Value::Int(i) => i.unsigned_abs(),
            other => other.to_f64()?.abs().trunc() as u64,
        };
        if n > 99_999_999_999_999 {
            return Some((838, 59, 59));
        }
        if n > 8_385_959 {
            let (d, _) = temporal_quiet(&Value::UInt(n))?;
            return Some((i64::from(d.hour), i64::from(d.minute), i64::from(d.second)));
        }
        let n = n as i64;
        let (h, m, sec) = (n / 10_000, n / 100 % 100, n % 100);
        return (m < 60 && sec < 60).then_some((h, m, sec));
    }
    if let Some((d, _)) = temporal_quiet(v) {
        return Some((i64::from(d.hour), i64::from(d.minute), i64::from(d.second)));
    }
    let r = time_of_text(v);
    if r.is_none() && !v.is_null() {
        crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, || {
            let t = v.to_text().unwrap_or_default();
            format!("Incorrect time value: '{}'", crate::types::diag::quoted(&t))
        });
    }
    r
}

/// `'[-]hh:mm[:ss][.f]'`.
fn time_of_text(v: &Value) -> Option<(i64, i64, i64)> {
    let s = v.to_string_lossy()?;
    let s = s.trim();
    let s = s.strip_prefix('-').unwrap_or(s);
    let hms = s.split('.').next()?;
    let mut p = hms.split(':');
    let h: i64 = p.next()?.parse().ok()?;
    let m: i64 = p.next()?.parse().ok()?;
    let sec: i64 = p.next().unwrap_or("0").parse().ok()?;
    if p.next().is_some() || m > 59 || sec > 59 {
        return None;
    }
    Some((h, m, sec))
}

fn ordinal_suffix(day: u8) -> &'static str {
    match day {
        11..=13 => "th",
        _ => match day % 10 {
            1 => "st",
            2 => "nd",
            3 => "rd",
            _ => "th",
        },
    }
}

/// DATE_FORMAT; `None` where MariaDB gives NULL (a weekday or week of a zero date).
pub fn date_format(d: &DateTime, fmt: &str) -> Option<String> {
    let mut out = String::new();
    let mut it = fmt.chars();
    let hour12 = |h: u8| if h.is_multiple_of(12) { 12 } else { h % 12 };
    let ampm = |h: u8| if h < 12 { "AM" } else { "PM" };
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(s) = it.next() else {
            out.push('%');
            break;
        };
        let needs_day = matches!(s, 'W' | 'a' | 'w' | 'U' | 'u' | 'V' | 'v' | 'X' | 'x' | 'j');
        if needs_day && is_zero_date(d) {
            return None;
        }
        match s {
            'Y' => write!(out, "{:04}", d.year).ok()?,
            'y' => write!(out, "{:02}", d.year % 100).ok()?,
            'm' => write!(out, "{:02}", d.month).ok()?,
            'c' => write!(out, "{}", d.month).ok()?,
            'M' | 'b' => {
                let name = MONTH_NAMES.get(usize::from(d.month).checked_sub(1)?)?;
                out.push_str(if s == 'M' { name } else { &name[..3] });
            }
            'd' => write!(out, "{:02}", d.day).ok()?,
            'e' => write!(out, "{}", d.day).ok()?,
            'D' => write!(out, "{}{}", d.day, ordinal_suffix(d.day)).ok()?,
            'H' => write!(out, "{:02}", d.hour).ok()?,
            'k' => write!(out, "{}", d.hour).ok()?,
            'h' | 'I' => write!(out, "{:02}", hour12(d.hour)).ok()?,
            'l' => write!(out, "{}", hour12(d.hour)).ok()?,
            'i' => write!(out, "{:02}", d.minute).ok()?,
            's' | 'S' => write!(out, "{:02}", d.second).ok()?,
            'f' => write!(out, "{:06}", d.micro).ok()?,
            'p' => out.push_str(ampm(d.hour)),
            'T' => write!(out, "{:02}:{:02}:{:02}", d.hour, d.minute, d.second).ok()?,
            'r' => write!(
                out,
                "{:02}:{:02}:{:02} {}",
                hour12(d.hour),
                d.minute,
                d.second,
                ampm(d.hour)
            )
            .ok()?,
            'W' => out.push_str(DAY_NAMES[weekday(d) as usize]),
            'a' => out.push_str(&DAY_NAMES[weekday(d) as usize][..3]),
            'w' => write!(out, "{}", (weekday(d) + 1) % 7).ok()?,
            'j' => write!(out, "{:03}", day_of_year(d)).ok()?,
            'U' | 'u' | 'V' | 'v' => {
                let flags = match s {
                    'U' => FIRST_WEEKDAY,
                    'u' => MONDAY_FIRST,
                    'V' => WEEK_YEAR | FIRST_WEEKDAY,
                    _ => WEEK_YEAR | MONDAY_FIRST,
                };
                write!(out, "{:02}", calc_week(d, flags).0).ok()?
            }
            'X' | 'x' => {
                let flags = if s == 'X' {
                    WEEK_YEAR | FIRST_WEEKDAY
                } else {
                    WEEK_YEAR | MONDAY_FIRST
                };
                write!(out, "{:04}", calc_week(d, flags).1).ok()?
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// What STR_TO_DATE returns for a format: a date, a datetime, or a time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Date,
    DateTime,
    Time,
}

/// The kind of value a STR_TO_DATE format yields.
pub fn str_to_date_kind(fmt: &str) -> Parsed {
    let (mut date, mut time) = (false, false);
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c == '%' {
            match it.next() {
                Some('Y' | 'y' | 'm' | 'c' | 'd' | 'e' | 'D' | 'M' | 'b' | 'j') => date = true,
                Some('H' | 'k' | 'h' | 'I' | 'l' | 'i' | 's' | 'S' | 'f' | 'p' | 'T' | 'r') => {
                    time = true
                }
                _ => {}
            }
        }
    }
    match (date, time) {
        (true, true) => Parsed::DateTime,
        (false, true) => Parsed::Time,
        _ => Parsed::Date,
    }
}

/// STR_TO_DATE: the fields the format reads from the text (missing ones stay zero, as in
/// MariaDB, which returns `2024-03-00` for `('2024-3', '%Y-%m-%d')`). `None` where the text
/// does not match the format.
pub fn str_to_date(text: &str, fmt: &str) -> Option<DateTime> {
    let v: Vec<char> = text.chars().collect();
    let f: Vec<char> = fmt.chars().collect();
    let (mut vi, mut fi) = (0, 0);
    let mut d = DateTime::default();
    let mut pm: Option<bool> = None;
    let mut hour12 = false;
    let mut yday: Option<i64> = None;
    fn num(v: &[char], vi: &mut usize, max: usize) -> Option<i64> {
        let start = *vi;
        let mut n: i64 = 0;
        while *vi < v.len() && *vi - start < max && v[*vi].is_ascii_digit() {
            n = n * 10 + i64::from(v[*vi] as u8 - b'0');
            *vi += 1;
        }
        if *vi == start {
            None
        } else {
            Some(n)
        }
    }
    fn word(v: &[char], vi: &mut usize, names: &[&str], abbrev: bool) -> Option<usize> {
        for (i, n) in names.iter().enumerate() {
            let n = if abbrev { &n[..3] } else { n };
            let len = n.chars().count();
            if *vi + len <= v.len()
                && v[*vi..*vi + len]
                    .iter()
                    .zip(n.chars())
                    .all(|(a, b)| fold_char(*a) == fold_char(b))
            {
                *vi += len;
                return Some(i);
            }
        }
        None
    }
    while fi < f.len() && vi < v.len() {
        while vi < v.len() && v[vi].is_whitespace() {
            vi += 1;
        }
        if vi >= v.len() {
            break;
        }
        let c = f[fi];
        if c == '%' && fi + 1 < f.len() {
            let s = f[fi + 1];
            fi += 2;
            match s {
                'Y' => {
                    let start = vi;
                    let y = num(&v, &mut vi, 4)?;
                    d.year = if vi - start <= 2 {
                        two_digit_year(y)
                    } else {
                        y as u16
                    };
                }
                'y' => d.year = two_digit_year(num(&v, &mut vi, 2)?),
                'm' | 'c' => d.month = u8::try_from(num(&v, &mut vi, 2)?).ok()?,
                'd' | 'e' => d.day = u8::try_from(num(&v, &mut vi, 2)?).ok()?,
                'D' => {
                    d.day = u8::try_from(num(&v, &mut vi, 2)?).ok()?;
                    vi = (vi + 2).min(v.len());
                }
                'H' | 'k' => d.hour = u8::try_from(num(&v, &mut vi, 2)?).ok()?,
                'h' | 'I' | 'l' => {
                    d.hour = u8::try_from(num(&v, &mut vi, 2)?).ok()?;
                    hour12 = true;
                }
                'i' => d.minute = u8::try_from(num(&v, &mut vi, 2)?).ok()?,
                's' | 'S' => d.second = u8::try_from(num(&v, &mut vi, 2)?).ok()?,
                'f' => {
                    let start = vi;
                    let n = num(&v, &mut vi, 6)?;
                    d.micro = (n * 10i64.pow(6 - (vi - start) as u32)) as u32;
                }
                'j' => yday = Some(num(&v, &mut vi, 3)?),
                'p' => {
                    let w: String = v[vi..(vi + 2).min(v.len())].iter().collect();
                    pm = Some(match w.to_ascii_uppercase().as_str() {
                        "AM" => false,
                        "PM" => true,
                        _ => return None,
                    });
                    vi += 2;
                }
                'M' => d.month = word(&v, &mut vi, &MONTH_NAMES, false)? as u8 + 1,
                'b' => d.month = word(&v, &mut vi, &MONTH_NAMES, true)? as u8 + 1,
                'W' => {
                    word(&v, &mut vi, &DAY_NAMES, false)?;
                }
                'a' => {
                    word(&v, &mut vi, &DAY_NAMES, true)?;
                }
                'T' | 'r' => {
                    d.hour = u8::try_from(num(&v, &mut vi, 2)?).ok()?;
                    for field in [&mut d.minute, &mut d.second] {
                        if v.get(vi) != Some(&':') {
                            return None;
                        }
                        vi += 1;
                        *field = u8::try_from(num(&v, &mut vi, 2)?).ok()?;
                    }
                    if s == 'r' {
                        hour12 = true;
                        while vi < v.len() && v[vi].is_whitespace() {
                            vi += 1;
                        }
                        let w: String = v[vi..(vi + 2).min(v.len())].iter().collect();
                        pm = Some(match w.to_ascii_uppercase().as_str() {
                            "AM" => false,
                            "PM" => true,
                            _ => return None,
                        });
                        vi += 2;
                    }
                }
                '%' => {
                    if v[vi] != '%' {
                        return None;
                    }
                    vi += 1;
                }
                other => {
                    if v[vi] != other {
                        return None;
                    }
                    vi += 1;
                }
            }
        } else {
            fi += 1;
            if !c.is_whitespace() {
                if v[vi] != c {
                    return None;
                }
                vi += 1;
            }
        }
    }
    if hour12 {
        if d.hour > 12 || d.hour == 0 {
            return None;
        }
        d.hour %= 12;
    }
    if pm == Some(true) {
        if d.hour >= 12 {
            return None;
        }
        d.hour += 12;
    }
    if let Some(n) = yday {
        if n < 1 || n > if is_leap(i64::from(d.year)) { 366 } else { 365 } {
            return None;
        }
        let (_, m, dd) = civil_from_days(days_from_civil(i64::from(d.year), 1, 1) + n - 1);
        d.month = m;
        d.day = dd;
    }
    if d.month > 12 || d.day > 31 || d.hour > 23 || d.minute > 59 || d.second > 59 || d.year > 9999
    {
        return None;
    }
    Some(d)
}

fn two_digit_year(y: i64) -> u16 {
    if y < 70 {
        (y + 2000) as u16
    } else if y < 100 {
        (y + 1900) as u16
    } else {
        y as u16
    }
}

// ---- strings -----------------------------------------------------------------------------------

/// LOCATE(needle, hay[, pos]) under the default collation (`ci`) or bytewise: the 1-based
/// character position, 0 if absent.
///
/// Under the collation a match is, as in MariaDB, a run of whole characters of the haystack
/// with exactly the needle's length in UTF-8 bytes whose weights equal the needle's: so
/// `LOCATE('é', 'É')` is 1 but `LOCATE('e', 'é')` is 0 although `'e' = 'é'`, and
/// `LOCATE('ée', 'eÉ')` is 1 (MariaDB compares a window of the needle's byte length).
pub fn locate(needle: &str, hay: &str, pos: Option<i64>, ci: bool) -> i64 {
    let h: Vec<char> = hay.chars().collect();
    let n: Vec<char> = needle.chars().collect();
    let start = match pos {
        None => 0,
        Some(p) if p < 1 || p as usize > h.len() => return 0,
        Some(p) => p as usize - 1,
    };
    if n.is_empty() {
        return start as i64 + 1;
    }
    if ci {
        let len = needle.len();
        return hay
            .char_indices()
            .enumerate()
            .skip(start)
            .take_while(|&(_, (b, _))| b + len <= hay.len())
            .find(|&(_, (b, _))| {
                hay.is_char_boundary(b + len)
                    && hay[b..b + len]
                        .chars()
                        .map(fold_char)
                        .eq(n.iter().copied().map(fold_char))
            })
            .map_or(0, |(i, _)| i as i64 + 1);
    }
    if n.len() > h.len() {
        return 0;
    }
    (start..=h.len() - n.len())
        .find(|&i| h[i..i + n.len()] == n[..])
        .map_or(0, |i| i as i64 + 1)
}

/// SUBSTRING_INDEX(s, delim, count): matched bytewise (case-sensitive, as in MariaDB).
pub fn substring_index(s: &str, delim: &str, count: i64) -> String {
    if delim.is_empty() || count == 0 || count == i64::MIN {
        return String::new();
    }
    let hits: Vec<usize> = s.match_indices(delim).map(|(i, _)| i).collect();
    if count > 0 {
        match hits.get(count as usize - 1) {
            Some(&i) => s[..i].to_string(),
            None => s.to_string(),
        }
    } else {
        let k = count.unsigned_abs() as usize;
        if k > hits.len() {
            s.to_string()
        } else {
            s[hits[hits.len() - k] + delim.len()..].to_string()
        }
    }
}

/// LPAD / RPAD to `len` characters; `None` (NULL) for a negative length, an empty pad that is
/// needed, or a result over [`MAX_RESULT_BYTES`].
pub fn pad(s: &str, len: i64, with: &str, left: bool) -> Option<String> {
    if len < 0 {
        return None;
    }
    let len = usize::try_from(len).ok()?;
    let have = s.chars().count();
    if len <= have {
        return Some(s.chars().take(len).collect());
    }
    if with.is_empty() {
        return None;
    }
    let need = len - have;
    let per = with.len().div_ceil(with.chars().count().max(1));
    if need.saturating_mul(per).saturating_add(s.len()) > MAX_RESULT_BYTES {
        return None;
    }
    let fill: String = with.chars().cycle().take(need).collect();
    Some(if left {
        fill + s
    } else {
        let mut o = s.to_string();
        o.push_str(&fill);
        o
    })
}

/// FORMAT(x, d): rounded to `d` places with `,` between thousands.
pub fn format_number(v: &Value, d: i64) -> Option<String> {
    let d = d.clamp(0, 38) as usize;
    let text = match v {
        Value::Null => return None,
        Value::Double(_) | Value::Str(_) | Value::Bytes(_) => {
            let x = v.to_f64()?;
            if !x.is_finite() {
                return None;
            }
            format!("{x:.d$}")
        }
        other => {
            let dec = other.to_decimal()?;
            let scaled = if d <= 30 {
                dec.rescale(d as u8)?
            } else {
                dec.rescale(30)?
            };
            let mut t = scaled.to_string();
            if d > 30 {
                t.push_str(&"0".repeat(d - 30));
            }
            t
        }
    };
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text.as_str()),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    let zero = out.bytes().all(|c| matches!(c, b'0' | b',' | b'.'));
    Some(if neg && !zero { format!("-{out}") } else { out })
}

// ---- checksums and encodings --------------------------------------------------------------------

pub fn hex_lower(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// MD5 (RFC 1321).
pub fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> = (0..64)
        .map(|i| ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32)
        .collect();
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_le_bytes());
    let mut h: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    for chunk in msg.chunks_exact(64) {
        let m: Vec<u32> = chunk
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let [mut a, mut b, mut c, mut d] = h;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let t = d;
            d = c;
            c = b;
            b = b.wrapping_add(
                a.wrapping_add(f)
                    .wrapping_add(k[i])
                    .wrapping_add(m[g])
                    .rotate_left(S[i]),
            );
            a = t;
        }
        h[0] = h[0].wrapping_add(a);
        h[1] = h[1].wrapping_add(b);
        h[2] = h[2].wrapping_add(c);
        h[3] = h[3].wrapping_add(d);
    }
    let mut out = [0u8; 16];
    for (i, w) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// CRC-32 (ISO-HDLC, zlib's), as CRC32() computes it.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// TO_BASE64: padded, with a newline after every 76 characters (as MariaDB writes it).
pub fn to_base64(data: &[u8]) -> String {
    let mut out = String::new();
    let mut line = 0;
    for c in data.chunks(3) {
        if line == 76 {
            out.push('\n');
            line = 0;
        }
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
        line += 4;
    }
    out
}

/// FROM_BASE64; `None` for text that is not base64 (whitespace is skipped).
pub fn from_base64(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut nbits = 0;
    let mut pad = 0;
    for &c in text {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                pad += 1;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if pad > 0 {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((acc >> nbits) as u8);
            acc &= (1 << nbits) - 1;
        }
    }
    // Only whole groups of four: MariaDB rejects 'YQ=' and '3'.
    let groups = text.iter().filter(|c| !c.is_ascii_whitespace()).count();
    if pad > 2 || groups % 4 != 0 {
        return None;
    }
    Some(out)
}

/// INET_ATON: `a.b.c.d` (also the short forms `a.b` = `a.0.0.b`... as MariaDB reads them).
pub fn inet_aton(s: &str) -> Option<u64> {
    let mut result: u64 = 0;
    let mut byte: u64 = 0;
    let mut dots = 0;
    let mut digits = false;
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                byte = byte * 10 + u64::from(c - b'0');
                if byte > 255 {
                    return None;
                }
                digits = true;
            }
            b'.' => {
                if !digits || dots == 3 || i + 1 == bytes.len() {
                    return None;
                }
                result = (result << 8) + byte;
                byte = 0;
                dots += 1;
                digits = false;
            }
            _ => return None,
        }
    }
    if !digits {
        return None;
    }
    // The last part is the last byte; the ones before it fill from the top (`127.1` is
    // 127.0.0.1, `1.2.3` is 1.2.0.3).
    Some((result << (8 * (4 - dots))) + byte)
}

pub fn inet_ntoa(n: u64) -> Option<String> {
    let n = u32::try_from(n).ok()?;
    let b = n.to_be_bytes();
    Some(format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]))
}

/// A Decimal as a count of microseconds (an interval in SECOND with a fraction).
pub fn seconds_to_micros(v: &Value) -> Option<i128> {
    match v {
        Value::Int(_) | Value::UInt(_) => Some(i128::from(v.to_i64()?) * 1_000_000),
        Value::Double(f) => Some((f * 1e6).round() as i128),
        other => {
            let d: Decimal = other.to_decimal()?.rescale(6)?;
            Some(d.mant)
        }
    }
}

/// A time-based UUID (version 1, random node), in MariaDB's text form.
pub fn uuid(now_micros: i128, random: u64) -> String {
    // 100-ns intervals since 1582-10-15.
    let t = (now_micros * 10 + 0x01B2_1DD2_1381_4000) as u64;
    let time_low = t & 0xFFFF_FFFF;
    let time_mid = (t >> 32) & 0xFFFF;
    let time_hi = ((t >> 48) & 0x0FFF) | 0x1000;
    let clock = ((random >> 48) & 0x3FFF) | 0x8000;
    let node = (random & 0xFFFF_FFFF_FFFF) | 0x0100_0000_0000;
    format!("{time_low:08x}-{time_mid:04x}-{time_hi:04x}-{clock:04x}-{node:012x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(s: &str) -> DateTime {
        DateTime::parse(s).unwrap()
    }

    #[test]
    fn month_arithmetic_clamps_the_day() {
        let add = |s: &str, u, n| add_interval(&dt(s), u, n).map(|d| d.format(0));
        assert_eq!(
            add("2024-01-31", Unit::Month, 1).unwrap(),
            "2024-02-29 00:00:00"
        );
        assert_eq!(
            add("2023-01-31", Unit::Month, 1).unwrap(),
            "2023-02-28 00:00:00"
        );
        assert_eq!(
            add("2024-03-31", Unit::Month, -1).unwrap(),
            "2024-02-29 00:00:00"
        );
        assert_eq!(
            add("2024-02-29", Unit::Year, 1).unwrap(),
            "2025-02-28 00:00:00"
        );
        assert_eq!(
            add("2024-01-01", Unit::Quarter, 2).unwrap(),
            "2024-07-01 00:00:00"
        );
        assert_eq!(
            add("2024-03-01 10:00:00", Unit::Minute, -90).unwrap(),
            "2024-03-01 08:30:00"
        );
        assert_eq!(
            add("2024-03-01", Unit::Day, -1).unwrap(),
            "2024-02-29 00:00:00"
        );
        assert_eq!(
            add("2023-03-01", Unit::Day, -1).unwrap(),
            "2023-02-28 00:00:00"
        );
        assert_eq!(
            add("2024-01-01", Unit::Microsecond, -1).unwrap(),
            "2023-12-31 23:59:59"
        );
        assert!(add("9999-12-31", Unit::Day, 1).is_none());
        assert!(add("0001-01-01", Unit::Day, -1).is_none());
        assert!(add("9999-12-01", Unit::Month, 1).is_none());
        assert!(add("2024-01-01", Unit::Day, i128::MAX).is_none());
        assert!(add("0000-00-00", Unit::Day, 1).is_none());
    }

    #[test]
    fn timestampdiff_counts_whole_units() {
        let diff = |u, a: &str, b: &str| timestamp_diff(u, &dt(a), &dt(b));
        assert_eq!(diff(Unit::Month, "2024-01-31", "2024-02-29"), 0);
        assert_eq!(diff(Unit::Month, "2024-02-29", "2024-01-31"), 0);
        assert_eq!(diff(Unit::Month, "2024-01-15", "2024-03-15"), 2);
        assert_eq!(diff(Unit::Year, "2000-02-29", "2001-02-28"), 0);
        assert_eq!(diff(Unit::Quarter, "2024-01-01", "2024-12-31"), 3);
        assert_eq!(diff(Unit::Hour, "2024-01-02", "2024-01-01 00:30:00"), -23);
        assert_eq!(diff(Unit::Week, "2024-01-01", "2024-01-14"), 1);
    }

    #[test]
    fn date_format_and_back() {
        let d = dt("2024-03-05 14:07:09.012345");
        assert_eq!(
            date_format(
                &d,
                "%Y %y %m %c %d %e %H %h %i %s %f %p %W %a %M %b %j %T %r %% %D"
            )
            .unwrap(),
            "2024 24 03 3 05 5 14 02 07 09 012345 PM Tuesday Tue March Mar 065 14:07:09 \
             02:07:09 PM % 5th"
        );
        assert!(date_format(&dt("0000-00-00"), "%W").is_none());
        assert_eq!(date_format(&dt("0000-00-00"), "%Y").unwrap(), "0000");
        let p = |s: &str, f: &str| str_to_date(s, f).map(|d| d.format(0));
        assert_eq!(
            p("Mar 5 2024 2:07 PM", "%b %e %Y %h:%i %p").unwrap(),
            "2024-03-05 14:07:00"
        );
        assert_eq!(p("5 March 24", "%e %M %y").unwrap(), "2024-03-05 00:00:00");
        assert_eq!(p("2024-3", "%Y-%m-%d").unwrap(), "2024-03-00 00:00:00");
        assert_eq!(p("20240305", "%Y%m%d").unwrap(), "2024-03-05 00:00:00");
        assert!(p("abc", "%Y").is_none());
        assert_eq!(str_to_date_kind("%Y-%m-%d %H"), Parsed::DateTime);
        assert_eq!(str_to_date_kind("%H:%i"), Parsed::Time);
    }

    #[test]
    fn string_helpers_count_characters() {
        assert_eq!(pad("héllo", 7, "ñ", true).unwrap(), "ññhéllo");
        assert_eq!(pad("abc", 6, "xy", false).unwrap(), "abcxyx");
        assert_eq!(pad("abc", 2, "x", true).unwrap(), "ab");
        assert!(pad("abc", 5, "", true).is_none());
        assert!(pad("abc", -1, "x", true).is_none());
        assert!(pad("a", i64::MAX, "x", true).is_none());
        assert_eq!(locate("b", "abcb", None, true), 2);
        assert_eq!(locate("b", "abcb", Some(3), true), 4);
        assert_eq!(locate("B", "abc", None, true), 2);
        assert_eq!(locate("B", "abc", None, false), 0);
        assert_eq!(locate("é", "aé", None, true), 2);
        // Accents fold, but only within the needle's byte length (as MariaDB matches).
        assert_eq!(locate("é", "xÉ", None, true), 2);
        assert_eq!(locate("e", "xéE", None, true), 3);
        assert_eq!(locate("É", "e", None, true), 0);
        assert_eq!(locate("ée", "xeÉ", None, true), 2);
        assert_eq!(locate("ée", "xéE", None, true), 2);
        assert_eq!(locate("éx", "ḕx", None, true), 0);
        assert_eq!(locate("ё", "Е", None, true), 1);
        assert_eq!(locate("s", "ß", None, true), 0);
        assert_eq!(locate("e", "ée", Some(2), true), 2);
        assert_eq!(locate("é", "éé", Some(2), true), 2);
        assert_eq!(locate("😀", "a🙂", None, true), 2);
        assert_eq!(locate("é", "aé", None, false), 2);
        assert_eq!(locate("É", "aé", None, false), 0);
        assert_eq!(locate("", "abc", Some(4), true), 0);
        assert_eq!(locate("", "abc", None, true), 1);
        assert_eq!(substring_index("a.b.c", ".", 2), "a.b");
        assert_eq!(substring_index("a.b.c", ".", -2), "b.c");
        assert_eq!(substring_index("a.b.c", ".", -5), "a.b.c");
        assert_eq!(substring_index("aaaaa", "aa", -1), "a");
        assert_eq!(substring_index("aaaaa", "aa", -2), "aaa");
        assert_eq!(substring_index("aXbxc", "x", 1), "aXb");
        assert_eq!(substring_index("a.b", ".", 0), "");
        assert_eq!(
            format_number(&Value::Decimal(Decimal::parse("-1234567.891").unwrap()), 2).unwrap(),
            "-1,234,567.89"
        );
        assert_eq!(format_number(&Value::Int(0), 0).unwrap(), "0");
    }

    #[test]
    fn checksums_and_encodings() {
        assert_eq!(hex_lower(&md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex_lower(&md5(b"a")), "0cc175b9c0f1b6a831c399e269772661");
        assert_eq!(hex_lower(&md5(&[b'x'; 200])), hex_lower(&md5(&[b'x'; 200])));
        assert_eq!(crc32(b"hello"), 907_060_870);
        assert_eq!(crc32(b"123"), 2_286_445_522);
        assert_eq!(to_base64(b"a"), "YQ==");
        assert_eq!(from_base64(b"YQ==").unwrap(), b"a");
        assert!(from_base64(b"Y!").is_none());
        let long = vec![7u8; 100];
        assert_eq!(from_base64(to_base64(&long).as_bytes()).unwrap(), long);
        assert_eq!(inet_aton("1.2.3.4"), Some(16_909_060));
        assert_eq!(inet_aton("1.2.3.256"), None);
        assert_eq!(inet_aton("127.1"), Some(2_130_706_433));
        assert_eq!(inet_aton("1.2.3"), Some(16_908_291));
        assert_eq!(inet_ntoa(16_909_060).unwrap(), "1.2.3.4");
        let u = uuid(1_700_000_000_000_000, 0x1234_5678_9abc_def0);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "1");
        assert_eq!(u.matches('-').count(), 4);
    }
}
