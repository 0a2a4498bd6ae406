//! Values into DATE, DATETIME and TIMESTAMP columns.

use super::issue::Issue;
use super::number::double_text;
use super::number::shown;
use super::number::text_bytes;
use crate::types::convert::number::Scan;
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
            // The number as text for the scanner: a double by its shortest digits.
            let digits = match &v {
                Value::Double(f) => double_text(*f),
                other => other.to_string_lossy().unwrap_or_default(),
            };
            let d = Scan::read(digits.as_bytes());
            let text = match &v {
                Value::Double(f) => format_double(*f),
                _ => digits.clone(),
            };
            // The integer part, truncated; a negative number is no date.
            let int_part = if d.neg && !d.is_zero() {
                None
            } else {
                d.int_part()
            };
            let frac_digits: Vec<u8> = match int_part {
                Some(_) => d.frac_digits().map(|c| c + b'0').collect(),
                None => Vec::new(),
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
