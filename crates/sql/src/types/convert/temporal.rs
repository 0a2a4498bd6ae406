//! Values read as dates: the packed datetime of a value, the date a number spells.

use crate::types::temporal::DateTime;
use crate::types::value::Value;

/// A value as a packed datetime, if it is or reads as one.
pub fn to_datetime(v: &Value) -> Option<i64> {
    match v {
        Value::Date(p) | Value::DateTime(p) => Some(*p),
        Value::Str(s) => DateTime::parse(s).map(|d| d.pack()),
        Value::Bytes(b) => DateTime::parse(std::str::from_utf8(b).ok()?).map(|d| d.pack()),
        Value::Int(i) => number_to_datetime(i128::from(*i)).map(|d| d.pack()),
        Value::UInt(u) => number_to_datetime(i128::from(*u)).map(|d| d.pack()),
        // The integer part (MariaDB reads 20000101.9 as 2000-01-01).
        Value::Decimal(d) => {
            number_to_datetime(d.mant / 10i128.checked_pow(u32::from(d.scale))?).map(|d| d.pack())
        }
        Value::Double(f) if f.is_finite() && f.abs() < 1e15 => {
            number_to_datetime(f.trunc() as i128).map(|d| d.pack())
        }
        Value::Double(_) | Value::Null => None,
    }
}

/// A number read as a date or datetime as MariaDB reads one: YYMMDD, YYYYMMDD, YYMMDDHHMMSS or
/// YYYYMMDDHHMMSS by its magnitude (two-digit years below 70 are 20xx, the others 19xx), 0 as
/// the zero date. Other magnitudes, negative numbers and out-of-range fields are no date (zero
/// months and days are allowed, as in date strings).
pub fn number_to_datetime(n: i128) -> Option<DateTime> {
    let century = |yymmdd: i128| {
        yymmdd
            + if yymmdd < 700_101 {
                20_000_000
            } else {
                19_000_000
            }
    };
    let (ymd, hms) = match n {
        0 => return Some(DateTime::default()),
        101..=991_231 => (century(n), 0),
        10_000_101..=99_991_231 => (n, 0),
        101_000_000..=991_231_235_959 => (century(n / 1_000_000), n % 1_000_000),
        991_231_235_960..=99_991_231_235_959 => (n / 1_000_000, n % 1_000_000),
        _ => return None,
    };
    // Every field is below 10000 here, so the casts cannot truncate.
    let d = DateTime {
        year: (ymd / 10_000) as u16,
        month: (ymd / 100 % 100) as u8,
        day: (ymd % 100) as u8,
        hour: (hms / 10_000) as u8,
        minute: (hms / 100 % 100) as u8,
        second: (hms % 100) as u8,
        micro: 0,
    };
    let day_ok = d.month == 0
        || d.day == 0
        || d.day <= crate::types::temporal::days_in_month(d.year, d.month);
    (d.month <= 12 && d.day <= 31 && day_ok && d.hour <= 23 && d.minute <= 59 && d.second <= 59)
        .then_some(d)
}
