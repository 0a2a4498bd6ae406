//! Values into DATE, DATETIME and TIMESTAMP columns.

use super::issue::Issue;
use super::number::is_space;
use super::number::shown;
use super::number::tail_of;
use super::number::text_bytes;
use super::number::Digits;
use super::number::Tail;
use crate::types::convert::temporal::number_to_datetime;
use crate::types::temporal::days_in_month;
use crate::types::temporal::DateTime;
use crate::types::value::format_double;
use crate::types::value::Value;

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

/// Into DATE (`fsp` None) or DATETIME/TIMESTAMP(fsp).
pub(super) fn to_temporal(v: Value, fsp: Option<u8>) -> (Value, Vec<Issue>) {
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
