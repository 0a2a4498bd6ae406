//! Arithmetic on values: MySQL's exact integer and decimal rules, doubles otherwise.

use crate::expr::node::Arith;
use crate::types::decimal::Decimal;
use crate::types::value::Value;
use crate::SqlError;

/// CEIL (`up`) or FLOOR of a decimal, as an integer.
pub(crate) fn decimal_ceil_floor(d: Decimal, up: bool) -> i128 {
    let p = 10i128.pow(u32::from(d.scale));
    let q = d.mant.div_euclid(p);
    if up && d.mant.rem_euclid(p) != 0 {
        q + 1
    } else {
        q
    }
}

pub(crate) fn int_result(v: i128) -> Result<Value, SqlError> {
    if let Ok(i) = i64::try_from(v) {
        Ok(Value::Int(i))
    } else if let Ok(u) = u64::try_from(v) {
        Ok(Value::UInt(u))
    } else {
        Err(SqlError::value_out_of_range("BIGINT"))
    }
}

pub(crate) fn as_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        _ => None,
    }
}

/// Whether arithmetic on this value is exact (integer or decimal) rather than double.
fn exact(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::UInt(_) | Value::Decimal(_))
}

/// `x / y` and `x % y` (truncating, `y != 0`) in 64 bits where both fit, which is nearly
/// always: a 128-bit division is a library call several times slower (`k % 100` over a
/// million rows spent 2% of a GROUP BY in it).
#[inline]
fn div_rem(x: i128, y: i128) -> (i128, i128) {
    match (i64::try_from(x), i64::try_from(y)) {
        // `i64::MIN / -1` overflows 64 bits; its 128-bit quotient is right.
        (Ok(a), Ok(b)) if !(a == i64::MIN && b == -1) => (i128::from(a / b), i128::from(a % b)),
        _ => (x / y, x % y),
    }
}

pub(crate) fn arith(op: Arith, a: Value, b: Value) -> Result<Value, SqlError> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let overflow = || SqlError::value_out_of_range("DECIMAL");
    if let (Some(x), Some(y)) = (as_i128(&a), as_i128(&b)) {
        // MySQL's integer rule: with an UNSIGNED operand the result is UNSIGNED (a negative
        // one is an error, as `1 - unsigned_col` is), otherwise it is a signed BIGINT.
        let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
        let typed = |r: Option<i128>| -> Result<Value, SqlError> {
            match (r, unsigned) {
                (Some(r), true) => u64::try_from(r)
                    .map(Value::UInt)
                    .map_err(|_| SqlError::value_out_of_range("BIGINT UNSIGNED")),
                (Some(r), false) => i64::try_from(r)
                    .map(Value::Int)
                    .map_err(|_| SqlError::value_out_of_range("BIGINT")),
                (None, true) => Err(SqlError::value_out_of_range("BIGINT UNSIGNED")),
                (None, false) => Err(SqlError::value_out_of_range("BIGINT")),
            }
        };
        return match op {
            Arith::Add => typed(x.checked_add(y)),
            Arith::Sub => typed(x.checked_sub(y)),
            Arith::Mul => typed(x.checked_mul(y)),
            Arith::IntDiv => {
                if y == 0 {
                    Ok(division_by_zero())
                } else {
                    typed(Some(div_rem(x, y).0))
                }
            }
            Arith::Mod => {
                if y == 0 {
                    Ok(division_by_zero())
                } else {
                    int_result(div_rem(x, y).1)
                }
            }
            Arith::Div => {
                if y == 0 {
                    return Ok(division_by_zero());
                }
                Ok(Decimal::from_i64(0)
                    .add(Decimal { mant: x, scale: 0 })
                    .and_then(|d| d.div(Decimal { mant: y, scale: 0 }))
                    .map(Value::Decimal)
                    .ok_or_else(overflow)?)
            }
        };
    }
    if exact(&a) && exact(&b) {
        let (x, y) = (
            a.to_decimal().ok_or_else(overflow)?,
            b.to_decimal().ok_or_else(overflow)?,
        );
        let r = match op {
            Arith::Add => x.add(y),
            Arith::Sub => x.sub(y),
            Arith::Mul => x.mul(y),
            Arith::Div => {
                if y.mant == 0 {
                    return Ok(division_by_zero());
                }
                x.div(y)
            }
            Arith::IntDiv => {
                if y.mant == 0 {
                    return Ok(division_by_zero());
                }
                let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
                return decimal_int_div(x, y, unsigned);
            }
            Arith::Mod => {
                if y.mant == 0 {
                    return Ok(division_by_zero());
                }
                let s = x.scale.max(y.scale);
                let (p, q) = (
                    x.rescale(s).ok_or_else(overflow)?,
                    y.rescale(s).ok_or_else(overflow)?,
                );
                Some(Decimal {
                    mant: p.mant % q.mant,
                    scale: s,
                })
            }
        };
        return r.map(Value::Decimal).ok_or_else(overflow);
    }
    if op == Arith::IntDiv {
        // MariaDB divides other operands as DECIMALs too: a double as its shortest decimal
        // form (0.3e0 DIV 0.1e0 is 3, where the doubles' quotient is 2.9999999999999996).
        let dec = |v: &Value| match v {
            Value::Double(f) => Decimal::parse(&format!("{f}")),
            other => other.to_decimal(),
        };
        if let (Some(x), Some(y)) = (dec(&a), dec(&b)) {
            if y.mant == 0 {
                return Ok(division_by_zero());
            }
            let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
            return decimal_int_div(x, y, unsigned);
        }
    }
    let (x, y) = (a.to_f64().unwrap_or(0.0), b.to_f64().unwrap_or(0.0));
    Ok(match op {
        Arith::Add => Value::Double(x + y),
        Arith::Sub => Value::Double(x - y),
        Arith::Mul => Value::Double(x * y),
        Arith::Div if y == 0.0 => division_by_zero(),
        Arith::Div => Value::Double(x / y),
        Arith::IntDiv if y == 0.0 => division_by_zero(),
        Arith::IntDiv => {
            let q = (x / y).trunc();
            // i64::MAX as f64 rounds up to 2^63, which is out of range itself.
            if !(q >= i64::MIN as f64 && q < i64::MAX as f64) {
                return Err(SqlError::value_out_of_range("BIGINT"));
            }
            Value::Int(q as i64)
        }
        Arith::Mod if y == 0.0 => division_by_zero(),
        Arith::Mod => Value::Double(x % y),
    })
}

/// NULL, with warning 1365 (an error in strict INSERT and UPDATE: ERROR_FOR_DIVISION_BY_ZERO,
/// on by default in MariaDB 10.11).
pub(crate) fn division_by_zero() -> Value {
    crate::types::diag::warn(crate::error::ErrorKind::DivisionByZero, || {
        "Division by 0".to_string()
    });
    Value::Null
}

/// `x DIV y` (y not zero) exactly, at a common scale: through a double the last digits of a
/// quotient near 1e16 and beyond were lost. The result is a BIGINT (UNSIGNED with an UNSIGNED
/// operand), and one out of its range is error 1690, as in MySQL.
fn decimal_int_div(x: Decimal, y: Decimal, unsigned: bool) -> Result<Value, SqlError> {
    let out_of_range = || {
        let what = if unsigned {
            "BIGINT UNSIGNED"
        } else {
            "BIGINT"
        };
        SqlError::value_out_of_range(what)
    };
    let s = x.scale.max(y.scale);
    let q = match (x.rescale(s), y.rescale(s)) {
        (Some(p), Some(q)) => p.mant / q.mant,
        // Scales too far apart for a common one: the quotient is 0 or out of range anyway,
        // which the double tells.
        _ => {
            let f = (x.to_f64() / y.to_f64()).trunc();
            if f.abs() >= 18_446_744_073_709_551_616.0 {
                return Err(out_of_range());
            }
            f as i128
        }
    };
    if unsigned {
        u64::try_from(q)
            .map(Value::UInt)
            .map_err(|_| out_of_range())
    } else {
        i64::try_from(q).map(Value::Int).map_err(|_| out_of_range())
    }
}

pub(crate) fn bool_val(b: Option<bool>) -> Value {
    match b {
        None => Value::Null,
        Some(t) => Value::Int(i64::from(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{cast, CastTo};

    #[test]
    fn ceil_floor_of_decimals_are_exact() {
        let d = |s: &str| Decimal::parse(s).unwrap();
        assert_eq!(
            decimal_ceil_floor(d("-99999999999999.9999"), true),
            -99999999999999
        );
        assert_eq!(
            decimal_ceil_floor(d("-99999999999999.9999"), false),
            -100000000000000
        );
        assert_eq!(decimal_ceil_floor(d("2.5"), true), 3);
        assert_eq!(decimal_ceil_floor(d("2.5"), false), 2);
        assert_eq!(decimal_ceil_floor(d("-3"), true), -3);
        assert!(matches!(
            cast(Value::Decimal(d("-999999.99")), &CastTo::Unsigned).unwrap(),
            Value::UInt(0)
        ));
        assert!(matches!(
            cast(Value::Int(-100), &CastTo::Unsigned).unwrap(),
            Value::UInt(18446744073709551516)
        ));
    }

    #[test]
    fn arithmetic_is_exact_for_integers_and_decimals() {
        let d = |s: &str| Value::Decimal(Decimal::parse(s).unwrap());
        // Signed overflow is an error; an UNSIGNED operand makes the result UNSIGNED, and a
        // negative one an error.
        assert_eq!(
            arith(Arith::Add, Value::Int(i64::MAX), Value::Int(1))
                .unwrap_err()
                .code(),
            1690
        );
        assert!(matches!(
            arith(Arith::Add, Value::UInt(u64::MAX - 1), Value::Int(1)).unwrap(),
            Value::UInt(u64::MAX)
        ));
        assert_eq!(
            arith(Arith::Sub, Value::Int(1), Value::UInt(2))
                .unwrap_err()
                .code(),
            1690
        );
        assert!(matches!(
            arith(Arith::Sub, Value::UInt(5), Value::Int(2)).unwrap(),
            Value::UInt(3)
        ));
        assert!(arith(Arith::Mul, Value::Int(i64::MAX), Value::Int(i64::MAX)).is_err());
        assert_eq!(
            arith(Arith::Add, d("0.1"), d("0.2"))
                .unwrap()
                .to_text()
                .unwrap(),
            b"0.3"
        );
        assert_eq!(
            arith(Arith::Div, Value::Int(1), Value::Int(3))
                .unwrap()
                .to_text()
                .unwrap(),
            b"0.3333"
        );
        assert!(arith(Arith::Div, Value::Int(1), Value::Int(0))
            .unwrap()
            .is_null());
        assert!(arith(Arith::Add, Value::Null, Value::Int(0))
            .unwrap()
            .is_null());
        assert_eq!(
            arith(Arith::Mod, Value::Int(-7), Value::Int(3))
                .unwrap()
                .to_i64(),
            Some(-1)
        );
    }

    /// The 64-bit fast path of DIV and % agrees with 128-bit arithmetic at the edges.
    #[test]
    fn integer_div_and_mod_at_the_edges() {
        let int = |op, a: i64, b: i64| arith(op, Value::Int(a), Value::Int(b));
        assert_eq!(int(Arith::Mod, i64::MIN, -1).unwrap().to_i64(), Some(0));
        assert_eq!(int(Arith::Mod, i64::MIN, 7).unwrap().to_i64(), Some(-1));
        assert_eq!(int(Arith::Mod, 7, -3).unwrap().to_i64(), Some(1));
        assert_eq!(int(Arith::IntDiv, -7, 2).unwrap().to_i64(), Some(-3));
        assert_eq!(
            int(Arith::IntDiv, i64::MIN, 1).unwrap().to_i64(),
            Some(i64::MIN)
        );
        // 2^63 is no BIGINT: out of range, as in MariaDB.
        assert_eq!(int(Arith::IntDiv, i64::MIN, -1).unwrap_err().code(), 1690);
        let big = Value::UInt(u64::MAX);
        assert_eq!(
            arith(Arith::Mod, big.clone(), Value::Int(10))
                .unwrap()
                .to_i64(),
            Some(5)
        );
        assert_eq!(
            arith(Arith::IntDiv, big, Value::Int(-1))
                .unwrap_err()
                .code(),
            1690
        );
    }
}
