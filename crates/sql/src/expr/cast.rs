//! CAST and the conversions functions share with it.

use crate::error::ErrorKind;
use crate::expr::node::CastTo;
use crate::types::convert::temporal::to_datetime;
use crate::types::decimal::Decimal;
use crate::types::temporal::DateTime;
use crate::types::value::{format_double, text_int, Value};
use crate::SqlError;

pub fn cast(v: Value, to: &CastTo) -> Result<Value, SqlError> {
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
        CastTo::Decimal {
            precision,
            scale,
            name,
        } => decimal_cast(&v, *precision, *scale, name),
        CastTo::Date => match to_datetime_arg(&v) {
            Some(d) => Value::Date(DateTime::unpack(d).date_part().pack()),
            None => Value::Null,
        },
        CastTo::DateTime(fsp) => match to_datetime_arg(&v) {
            Some(d) => {
                let mut dt = DateTime::unpack(d);
                let cut = 10u32.pow(6 - u32::from((*fsp).min(6)));
                dt.micro -= dt.micro % cut;
                Value::DateTime(dt.pack())
            }
            None => Value::Null,
        },
    })
}

/// CAST AS DECIMAL(precision, scale): rounded to `scale` places (halves away from zero), and
/// clipped to the type's largest magnitude (999.99 for DECIMAL(5,2)) with warning 1264, as
/// MariaDB does; a number beyond DECIMAL's range (a huge DOUBLE) clips the same way.
fn decimal_cast(v: &Value, precision: u8, scale: u8, name: &str) -> Value {
    // zipdb computes with up to 38 digits: a wider type holds every value it can have.
    let digits = u32::from(precision.min(38));
    let largest = 10i128.pow(digits) - 1;
    let rounded = v.to_decimal().and_then(|d| d.rescale(scale));
    let negative = match &rounded {
        Some(d) if d.mant.abs() <= largest => return Value::Decimal(*d),
        Some(d) => d.mant < 0,
        // Beyond DECIMAL's range (to_decimal has warned for text): the sign is all it takes.
        None => match v {
            Value::Double(f) => {
                // MariaDB reports the overflow of its own 65 digits first (with no text).
                if f.abs() >= 1e65 {
                    crate::types::diag::warn(ErrorKind::DataOverflow, || {
                        "Got overflow when converting '' to DECIMAL. Value truncated".into()
                    });
                }
                *f < 0.0
            }
            Value::Str(_) | Value::Bytes(_) => v
                .to_text()
                .is_some_and(|t| t.trim_ascii_start().first() == Some(&b'-')),
            _ => return Value::Null,
        },
    };
    crate::types::diag::warn(ErrorKind::WarnDataOutOfRange, || {
        // zipdb does not count the rows of a SELECT for its warnings: the row is always 1
        // (docs/COMPATIBILITY.md).
        format!("Out of range value for column '{name}' at row 1")
    });
    Value::Decimal(Decimal {
        mant: if negative { -largest } else { largest },
        scale,
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
        let r = cast(v, &to).expect("casts");
        let d = scope.finish();
        let w = d.warnings.iter().map(|w| (w.level, w.code)).collect();
        (format!("{r:?}"), w)
    }

    #[test]
    fn decimal_casts_keep_their_precision_and_clip_with_1264() {
        let to = |precision, scale| CastTo::Decimal {
            precision,
            scale,
            name: "c".into(),
        };
        let d = |t: &str| Value::Decimal(Decimal::parse(t).unwrap());
        // The value as text, and the warnings.
        let run = |v: Value, to: CastTo| {
            let scope = Scope::begin(false);
            let r = cast(v, &to).expect("casts");
            let w: Vec<_> = scope
                .finish()
                .warnings
                .iter()
                .map(|w| (w.level, w.code))
                .collect();
            (r.to_string_lossy(), w)
        };
        let out = vec![("Warning", 1264)];
        assert_eq!(run(d("123.456"), to(5, 2)), (Some("123.46".into()), vec![]));
        assert_eq!(
            run(d("123.456"), to(4, 2)),
            (Some("99.99".into()), out.clone())
        );
        // Rounding can carry past the precision: 99.995 is 100.00, clipped.
        assert_eq!(
            run(Value::Str("-99.995".into()), to(4, 2)),
            (Some("-99.99".into()), out.clone())
        );
        assert_eq!(
            run(Value::Int(12_345_678_901), to(10, 0)),
            (Some("9999999999".into()), out.clone())
        );
        // Beyond DECIMAL's range altogether: MariaDB's overflow first, then the clip.
        assert_eq!(
            run(Value::Double(-1e300), to(3, 1)),
            (
                Some("-99.9".into()),
                vec![("Warning", 1916), ("Warning", 1264)]
            )
        );
        // A wide type holds every value zipdb's 38 digits can.
        assert_eq!(run(d("-1.5"), to(65, 30)).1, Vec::<(&str, u16)>::new());
        assert_eq!(run(Value::Null, to(1, 0)), (None, vec![]));
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
