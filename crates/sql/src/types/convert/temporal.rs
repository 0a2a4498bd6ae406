//! Values read as dates: the packed datetime of a value, the date a number spells.

use crate::types::datetext::read;
use crate::types::value::Value;

/// A value as a packed datetime, if it is or reads as one.
pub fn to_datetime(v: &Value) -> Option<i64> {
    match v {
        Value::Date(p) | Value::DateTime(p) => Some(*p),
        Value::Str(s) => read(s.as_bytes()).map(|t| t.dt.pack()),
        Value::Bytes(b) => read(b).map(|t| t.dt.pack()),
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

pub use crate::types::temporal::number_to_datetime;
