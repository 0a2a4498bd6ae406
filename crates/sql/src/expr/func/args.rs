//! Reading the arguments of scalar functions, and the clock and random source they share.

use crate::expr::builtins::{self as bi, Unit};
use crate::expr::ctx::Ctx;
use crate::expr::node::{Expr, Func};
use crate::types::temporal::{self, DateTime};
use crate::types::value::Value;
use crate::SqlError;

pub(crate) fn text_arg(
    args: &[Expr],
    i: usize,
    row: &[Value],
    ctx: &Ctx,
) -> Result<Option<String>, SqlError> {
    Ok(args[i].eval(row, ctx)?.to_string_lossy())
}

/// An integer argument as MariaDB reads a count: a BIGINT UNSIGNED above BIGINT's range wraps
/// to a negative value.
pub(crate) fn count_arg(v: &Value) -> Option<i64> {
    match v {
        Value::UInt(u) => Some(*u as i64),
        // A DOUBLE rounds half to even (2.5 is 2), as MariaDB's rint() does.
        Value::Double(f) => {
            let r = f.round_ties_even();
            Some(if r >= i64::MAX as f64 {
                i64::MAX
            } else if r <= i64::MIN as f64 {
                i64::MIN
            } else {
                r as i64
            })
        }
        // A DATETIME as a number is YYYYMMDDhhmmss even at midnight.
        Value::DateTime(p) => {
            let d = DateTime::unpack(*p);
            Some(
                ((i64::from(d.year) * 100 + i64::from(d.month)) * 100 + i64::from(d.day))
                    * 1_000_000
                    + (i64::from(d.hour) * 100 + i64::from(d.minute)) * 100
                    + i64::from(d.second),
            )
        }
        other => other.to_i64(),
    }
}

/// The digits of fraction a temporal string result shows: MariaDB types it at compile time,
/// from a literal's own digits, or 6 for a value that is not a constant (a column).
pub(crate) fn arg_fsp(e: &Expr, v: &Value) -> u8 {
    match (e, v) {
        (Expr::Const(_), v) => bi::fraction_digits(v),
        // Another temporal function's text already shows the digits it was typed with.
        (Expr::Func(Func::DateAdd(..) | Func::FromUnixtime | Func::StrToDate, _), v) => {
            bi::fraction_digits(v)
        }
        (_, Value::Str(_) | Value::Bytes(_)) => 6,
        _ => 0,
    }
}

/// The digits of fraction an `INTERVAL n SECOND` adds: a DECIMAL's scale, 6 for a DOUBLE or a
/// string that is not a constant.
pub(crate) fn interval_fsp(e: &Expr, n: &Value, unit: Unit) -> u8 {
    match (unit, n) {
        (Unit::Microsecond, _) => 6,
        (Unit::Second, Value::Decimal(d)) => d.scale.min(6),
        (Unit::Second, Value::Double(_)) => 6,
        (Unit::Second, Value::Str(_)) if !matches!(e, Expr::Const(_)) => 6,
        _ => 0,
    }
}

pub(crate) fn double_or_null(x: f64) -> Value {
    if x.is_finite() {
        Value::Double(x)
    } else {
        Value::Null
    }
}

/// A date result as its argument's kind: a DATE or DATETIME stays one, a string or number
/// becomes a string (a date without time when it had none and the unit is of days or more).
pub(crate) fn temporal_result(
    arg: &Value,
    d: DateTime,
    had_time: bool,
    date_unit: bool,
    fsp: u8,
) -> Value {
    match arg {
        Value::Date(_) if date_unit => Value::Date(d.pack()),
        // A DATETIME(n) result prints n digits of fraction, zeros too: only text can say so.
        Value::Date(_) | Value::DateTime(_) if fsp == 0 => Value::DateTime(d.pack()),
        Value::Date(_) | Value::DateTime(_) => Value::Str(d.format(fsp)),
        _ if !had_time && date_unit => Value::Str(d.format_date()),
        _ => Value::Str(d.format(fsp)),
    }
}

/// The time now, as microseconds since the epoch, from the statement's packed start time.
pub(crate) fn now_micros(ctx: &Ctx) -> i128 {
    temporal::to_micros(&DateTime::unpack(ctx.now))
}

pub(crate) fn next_random() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0x9E37_79B9_7F4A_7C15);
            let here = &x as *const u64 as u64;
            x = (t ^ here.rotate_left(32)) | 1;
        }
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}
