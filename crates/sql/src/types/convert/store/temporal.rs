//! Values into DATE, DATETIME and TIMESTAMP columns.

use super::issue::Issue;
use super::number::shown;
use super::number::text_bytes;
use super::number::Digits;
use crate::types::convert::temporal::number_to_datetime;
use crate::types::temporal::DateTime;
use crate::types::value::format_double;
use crate::types::value::Value;

// ---- dates and times ---------------------------------------------------------------------

/// Microseconds from fraction digits, and whether non-zero digits past the sixth were cut.
fn fraction(f: &[u8]) -> (u32, u32) {
    let mut micro = 0u32;
    for k in 0..6 {
        micro = micro * 10 + f.get(k).map_or(0, |c| u32::from(c - b'0'));
    }
    let lost = u32::from(f.iter().skip(6).any(|&c| c != b'0'));
    (micro, lost)
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
            match crate::types::datetext::read(&b) {
                None => return (zero_temporal(fsp), vec![bad(shown(&b))]),
                Some(t) => {
                    if t.trailing {
                        issues.push(bad(shown(&b)));
                    } else if fsp.is_some() && t.lost_fraction {
                        issues.push(Issue::Note);
                    }
                    t.dt
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
