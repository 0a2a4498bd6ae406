//! What several scalar functions share: reading a count argument, a double result, the clock
//! and the random source.

use crate::expr::node::Ctx;
use crate::types::temporal::{self, DateTime};
use crate::types::value::Value;

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

pub(crate) fn double_or_null(x: f64) -> Value {
    if x.is_finite() {
        Value::Double(x)
    } else {
        Value::Null
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

/// A numeric argument as a double. A DATETIME reads as YYYYMMDDhhmmss here, also at midnight
/// (`Value::to_f64` keeps midnight as YYYYMMDD for its comparisons with date numbers).
pub(crate) fn double_arg(v: &Value) -> Option<f64> {
    match v {
        Value::DateTime(_) => count_arg(v).map(|n| n as f64),
        v => v.to_f64(),
    }
}
