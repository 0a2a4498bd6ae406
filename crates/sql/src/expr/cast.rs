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
            // Wraps too, without the note text gets (MariaDB 10.11).
            Value::UInt(u) => Value::Int(*u as i64),
            _ => Value::Int(v.to_i64().unwrap_or(0)),
        },
        CastTo::Unsigned => match v {
            Value::UInt(u) => Value::UInt(u),
            Value::Str(s) => Value::UInt(text_cast(s.as_bytes(), true) as u64),
            Value::Bytes(b) => Value::UInt(text_cast(&b, true) as u64),
            // A negative integer wraps (two's complement, with a note), a negative DECIMAL or
            // DOUBLE clips to 0, as in MariaDB.
            Value::Int(i) if i < 0 => {
                cast_note(true);
                Value::UInt(i as u64)
            }
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
    let wrapped = if unsigned {
        p.neg && p.found
    } else {
        !p.neg && bits < 0
    };
    if wrapped && !overflow {
        cast_note(unsigned);
    }
    bits
}

/// MariaDB's note 1105 for an integer CAST that wrapped around.
fn cast_note(unsigned: bool) {
    crate::types::diag::note(ErrorKind::UnknownError, || {
        if unsigned {
            "Cast to unsigned converted negative integer to it's positive complement".into()
        } else {
            "Cast to signed converted positive out-of-range integer to it's negative complement"
                .into()
        }
    });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::diag::Scope;

    /// The value and the warnings' codes and levels of one CAST.
    fn cast_diag(v: Value, to: CastTo) -> (String, Vec<(&'static str, u16)>) {
        let scope = Scope::begin(false);
        let r = cast(v, to).expect("casts");
        let d = scope.finish();
        let w = d.warnings.iter().map(|w| (w.level, w.code)).collect();
        (format!("{r:?}"), w)
    }

    #[test]
    fn integer_casts_wrap_with_a_note_and_text_reads_its_integer_prefix() {
        let s = |t: &str| Value::Str(t.into());
        let note = vec![("Note", 1105)];
        let warn = vec![("Warning", 1292)];
        assert_eq!(
            cast_diag(Value::UInt(u64::MAX), CastTo::Signed),
            ("Int(-1)".into(), vec![])
        );
        assert_eq!(
            cast_diag(Value::Int(-1), CastTo::Unsigned),
            (format!("UInt({})", u64::MAX), note.clone())
        );
        assert_eq!(
            cast_diag(s("18446744073709551615"), CastTo::Signed),
            ("Int(-1)".into(), note.clone())
        );
        assert_eq!(
            cast_diag(s("-1.5"), CastTo::Unsigned),
            (
                format!("UInt({})", u64::MAX),
                vec![("Warning", 1292), ("Note", 1105)]
            )
        );
        assert_eq!(
            cast_diag(s("99999999999999999999"), CastTo::Signed),
            ("Int(-1)".into(), warn.clone())
        );
        assert_eq!(
            cast_diag(s("-99999999999999999999"), CastTo::Signed),
            (format!("Int({})", i64::MIN), warn.clone())
        );
        assert_eq!(cast_diag(s("1e3"), CastTo::Signed), ("Int(1)".into(), warn));
        assert_eq!(
            cast_diag(s(" 12 "), CastTo::Signed),
            ("Int(12)".into(), vec![("Note", 1292)])
        );
        assert_eq!(
            cast_diag(Value::Int(-1), CastTo::Signed),
            ("Int(-1)".into(), vec![])
        );
    }
}
