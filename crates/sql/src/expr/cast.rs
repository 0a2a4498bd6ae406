//! CAST and the conversions functions share with it.

use crate::error::ErrorKind;
use crate::expr::node::CastTo;
use crate::types::convert::temporal::to_datetime;
use crate::types::temporal::DateTime;
use crate::types::value::{format_double, text_int, Value};
use crate::SqlError;

pub fn cast(v: Value, to: CastTo) -> Result<Value, SqlError> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    Ok(match to {
        CastTo::Signed => match &v {
            Value::Str(s) => Value::Int(text_cast(s.as_bytes(), false)),
            Value::Bytes(b) => Value::Int(text_cast(b, false)),
            _ => Value::Int(v.to_i64().unwrap_or(0)),
        },
        CastTo::Unsigned => match v {
            Value::UInt(u) => Value::UInt(u),
            Value::Str(s) => Value::UInt(text_cast(s.as_bytes(), true) as u64),
            Value::Bytes(b) => Value::UInt(text_cast(&b, true) as u64),
            // A negative integer wraps (two's complement), a negative DECIMAL or DOUBLE
            // clips to 0, as in MariaDB.
            Value::Decimal(d) if d.mant < 0 => Value::UInt(0),
            Value::Double(f) if f < 0.0 => Value::UInt(0),
            other => Value::UInt(other.to_i64().unwrap_or(0) as u64),
        },
        CastTo::Char => Value::Str(v.to_string_lossy().unwrap_or_default()),
        CastTo::Binary => Value::Bytes(v.to_text().unwrap_or_default()),
        CastTo::Double => Value::Double(v.to_f64().unwrap_or(0.0)),
        CastTo::Decimal(s) => match v.to_decimal().and_then(|d| d.rescale(s)) {
            Some(d) => Value::Decimal(d),
            None => Value::Null,
        },
        CastTo::Date => match to_datetime_arg(&v) {
            Some(d) => Value::Date(DateTime::unpack(d).date_part().pack()),
            None => Value::Null,
        },
        CastTo::DateTime(fsp) => match to_datetime_arg(&v) {
            Some(d) => {
                let mut dt = DateTime::unpack(d);
                let cut = 10u32.pow(6 - u32::from(fsp.min(6)));
                dt.micro -= dt.micro % cut;
                Value::DateTime(dt.pack())
            }
            None => Value::Null,
        },
    })
}

/// Text CAST AS SIGNED or UNSIGNED, as MariaDB casts it: the integer prefix's 64 bits, wrapped
/// (`'18446744073709551615'` is -1 as SIGNED, `'-1'` is 18446744073709551615 as UNSIGNED) with
/// note 1105, or an end of the range with 1292 when it overflows.
fn text_cast(b: &[u8], unsigned: bool) -> i64 {
    let p = text_int(b);
    let (bits, overflow) = p.bits();
    let note = |m: &'static str| crate::types::diag::note(ErrorKind::UnknownError, || m.into());
    if unsigned && p.neg && p.found && !overflow {
        note("Cast to unsigned converted negative integer to it's positive complement");
    } else if !unsigned && !p.neg && bits < 0 && !overflow {
        note("Cast to signed converted positive out-of-range integer to it's negative complement");
    }
    bits
}

/// [`to_datetime`] for a function's argument or a CAST: a value that is not a date is NULL
/// with warning 1292.
pub(crate) fn to_datetime_arg(v: &Value) -> Option<i64> {
    let r = match v {
        Value::Str(s) => text_datetime(s.as_bytes()),
        Value::Bytes(b) => text_datetime(b),
        _ => to_datetime(v),
    };
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

/// Formats a double as MySQL does (re-exported for the SHOW code).
pub fn fmt_double(d: f64) -> String {
    format_double(d)
}

/// Text read as a date, with MariaDB's 1292 for what it ignored: a warning for text left
/// over (naming a date or a datetime by what was read), a note for fraction digits past the
/// sixth.
fn text_datetime(b: &[u8]) -> Option<i64> {
    let t = crate::types::datetext::read(b)?;
    if t.trailing || t.dropped_fraction {
        let what = if t.has_time { "datetime" } else { "date" };
        let message = || {
            format!(
                "Truncated incorrect {what} value: '{}'",
                crate::types::diag::quoted(b)
            )
        };
        if t.trailing {
            crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, message);
        } else {
            crate::types::diag::note(crate::error::ErrorKind::TruncatedWrongValue, message);
        }
    }
    Some(t.dt.pack())
}
