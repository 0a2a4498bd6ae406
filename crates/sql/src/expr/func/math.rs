//! The numeric functions: rounding (exactly, on DECIMALs), logarithms, trigonometry and
//! RAND.

use crate::error::ErrorKind;
use crate::expr::arith::{as_i128, decimal_ceil_floor, division_by_zero, int_result};
use crate::expr::func::args::{count_arg, double_arg, double_or_null, next_random};
use crate::expr::node::{Args, Arity, Expr, ScalarFunction, Typing};
use crate::expr::typing::{BIGINT, INT};
use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::value::{format_double, Value};
use crate::SqlError;

/// The type of ABS, CEIL, FLOOR and ROUND to places that are not a constant: an integer
/// argument gives a BIGINT, a DECIMAL its own type (CEIL and FLOOR: a BIGINT), anything else
/// a DOUBLE.
fn like_argument(call: &Typing<'_>, to_integer: bool) -> SqlType {
    match call.ty(0) {
        Some(t) if t.is_integer() => BIGINT,
        Some(SqlType::Decimal { .. }) if to_integer => BIGINT,
        Some(t @ SqlType::Decimal { .. }) => t,
        _ => SqlType::Double,
    }
}

/// ABS(x).
pub struct Abs;

impl ScalarFunction for Abs {
    fn name(&self) -> &'static str {
        "abs"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        Some(like_argument(call, false))
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => int_result(i128::from(i).abs())?,
            Value::UInt(u) => Value::UInt(u),
            Value::Decimal(d) => Value::Decimal(Decimal {
                mant: d.mant.abs(),
                scale: d.scale,
            }),
            v => Value::Double(v.to_f64().unwrap_or(0.0).abs()),
        })
    }
}

/// CEIL / CEILING (`up`) and FLOOR.
pub struct CeilFloor {
    pub up: bool,
}

impl ScalarFunction for CeilFloor {
    fn name(&self) -> &'static str {
        if self.up {
            "ceil"
        } else {
            "floor"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        Some(like_argument(call, true))
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)? {
            Value::Null => Value::Null,
            v @ (Value::Int(_) | Value::UInt(_)) => v,
            // Exactly, on the mantissa: through f64, -99999999999999.9999 would become
            // -1e14.
            Value::Decimal(d) => int_result(decimal_ceil_floor(d, self.up))?,
            v => {
                let x = v.to_f64().unwrap_or(0.0);
                Value::Double(if self.up { x.ceil() } else { x.floor() })
            }
        })
    }
}

/// ROUND(x[, places]).
pub struct Round;

impl ScalarFunction for Round {
    fn name(&self) -> &'static str {
        "round"
    }
    fn arity(&self) -> Arity {
        Arity::between(1, 2)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        let places = match call.expr(1) {
            None => Some(0),
            Some(Expr::Const(v)) => Some(v.to_i64().unwrap_or(0)),
            Some(_) => None,
        };
        let Some(places) = places else {
            return Some(like_argument(call, false));
        };
        Some(match call.ty(0) {
            // ROUND of a DECIMAL to constant places has that scale (MariaDB pads: ROUND(1.5,
            // 3) is 1.500); without places, scale 0.
            Some(SqlType::Decimal { precision, scale }) => {
                let places = places.clamp(0, 30) as u8;
                SqlType::Decimal {
                    // One more integer digit for a carry (9.5 rounds to 10).
                    precision: (precision.saturating_sub(scale) + 1 + places).min(65),
                    scale: places,
                }
            }
            // To tens or more a BIGINT may need a 20th digit: MariaDB makes it a DECIMAL.
            Some(SqlType::Int { bytes: 8, .. }) if places < 0 => SqlType::Decimal {
                precision: 21,
                scale: 0,
            },
            Some(t) if t.is_integer() => BIGINT,
            _ => SqlType::Double,
        })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let places = if a.len() > 1 {
            a.value(1)?.to_i64().unwrap_or(0)
        } else {
            0
        };
        Ok(match a.value(0)? {
            Value::Null => Value::Null,
            v @ (Value::Int(_) | Value::UInt(_)) if places >= 0 => v,
            Value::Decimal(d) if (0..=30).contains(&places) => {
                d.rescale(places as u8).map_or(Value::Null, Value::Decimal)
            }
            // Tens, hundreds, ... of an exact number: exactly, halves away from zero
            // (ROUND(15, -1) is 20; a double would make 5 * 0.1 a tie and round it to
            // even), and beyond BIGINT as a DECIMAL, as MariaDB does.
            v @ (Value::Int(_) | Value::UInt(_) | Value::Decimal(_)) if places < 0 => {
                let Some(d) = v.to_decimal() else {
                    return Ok(Value::Null);
                };
                let k = places.unsigned_abs().min(60) as u32;
                let r = match 10i128.checked_pow(u32::from(d.scale) + k) {
                    // Every DECIMAL is below 10^38: it rounds to 0.
                    None => 0,
                    Some(unit) => {
                        let (q, rem) = (d.mant / unit, d.mant % unit);
                        let q = if rem.abs() * 2 >= unit {
                            q + d.mant.signum()
                        } else {
                            q
                        };
                        q.checked_mul(10i128.pow(k))
                            .ok_or_else(|| SqlError::value_out_of_range("DECIMAL"))?
                    }
                };
                match v {
                    Value::Decimal(_) => Value::Decimal(Decimal { mant: r, scale: 0 }),
                    _ => int_result(r).unwrap_or(Value::Decimal(Decimal { mant: r, scale: 0 })),
                }
            }
            v => {
                // Halves go to the even neighbour, as MariaDB's rint() does (ROUND(0.5e0) is
                // 0, ROUND(2.5e0) is 2); negative places divide, so that 15 reads as exactly
                // 1.5 tens.
                let x = v.to_f64().unwrap_or(0.0);
                let m = 10f64.powi(places.unsigned_abs().min(30) as i32);
                Value::Double(if places >= 0 {
                    (x * m).round_ties_even() / m
                } else {
                    (x / m).round_ties_even() * m
                })
            }
        })
    }
}

/// TRUNCATE(x, d): toward zero at `d` places (left of the point for a negative `d`).
pub struct Truncate;

impl ScalarFunction for Truncate {
    fn name(&self) -> &'static str {
        "truncate"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        Some(match call.ty(0) {
            Some(t) if t.is_integer() => t,
            Some(SqlType::Decimal { precision, scale }) => SqlType::Decimal {
                precision,
                scale: match call.constant(1) {
                    Some(v) => v.to_i64().unwrap_or(0).clamp(0, 30) as u8,
                    None => scale,
                },
            },
            _ => SqlType::Double,
        })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (v, d) = (a.value(0)?, count_arg(&a.value(1)?));
        let Some(d) = d else {
            return Ok(Value::Null);
        };
        let scale = match (&v, a.expr(1)) {
            (Value::Decimal(x), e) if !matches!(e, Expr::Const(_)) => Some(x.scale),
            _ => None,
        };
        Ok(match (truncate(v, d)?, scale) {
            // With a places argument that is not a constant, MariaDB types the result with the
            // argument's scale and prints every value at it.
            (Value::Decimal(r), Some(s)) => Value::Decimal(r.rescale(s).unwrap_or(r)),
            (r, _) => r,
        })
    }
}

fn truncate(v: Value, d: i64) -> Result<Value, SqlError> {
    Ok(match v {
        Value::Null => Value::Null,
        Value::Int(_) | Value::UInt(_) if d >= 0 => v,
        Value::Int(_) | Value::UInt(_) => {
            let x = as_i128(&v).unwrap_or(0);
            let p = 10i128.checked_pow(d.unsigned_abs().min(40) as u32);
            let r = match p {
                Some(p) => x - x % p,
                None => 0,
            };
            match v {
                Value::UInt(_) => Value::UInt(r as u64),
                _ => Value::Int(r as i64),
            }
        }
        Value::Decimal(x) => {
            if d >= i64::from(x.scale) {
                let s = d.min(30) as u8;
                Value::Decimal(x.rescale(s).unwrap_or(x))
            } else if d >= 0 {
                let p = 10i128.pow(u32::from(x.scale) - d as u32);
                Value::Decimal(Decimal {
                    mant: x.mant / p,
                    scale: d as u8,
                })
            } else {
                let int = x.mant / 10i128.pow(u32::from(x.scale));
                let r = match 10i128.checked_pow(d.unsigned_abs().min(40) as u32) {
                    Some(p) => int - int % p,
                    None => 0,
                };
                Value::Decimal(Decimal { mant: r, scale: 0 })
            }
        }
        other => {
            let x = other.to_f64().unwrap_or(0.0);
            let r = if d >= 0 {
                let m = 10f64.powi(d.min(308) as i32);
                let t = (x * m).trunc() / m;
                if t.is_finite() {
                    t
                } else {
                    x
                }
            } else {
                let m = 10f64.powi(d.unsigned_abs().min(308) as i32);
                (x / m).trunc() * m
            };
            Value::Double(r)
        }
    })
}

/// SIGN(x): -1, 0 or 1.
pub struct Sign;

impl ScalarFunction for Sign {
    fn name(&self) -> &'static str {
        "sign"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(i.signum()),
            Value::UInt(u) => Value::Int(i64::from(u > 0)),
            Value::Decimal(d) => Value::Int(d.mant.signum() as i64),
            v => {
                let x = v.to_f64().unwrap_or(0.0);
                Value::Int(if x > 0.0 {
                    1
                } else if x < 0.0 {
                    -1
                } else {
                    0
                })
            }
        })
    }
}

/// SQRT(x): NULL for a negative x.
pub struct Sqrt;

impl ScalarFunction for Sqrt {
    fn name(&self) -> &'static str {
        "sqrt"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Double)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)?.to_f64() {
            Some(x) if x >= 0.0 => Value::Double(x.sqrt()),
            _ => Value::Null,
        })
    }
}

/// POW / POWER(x, y).
pub struct Pow;

impl ScalarFunction for Pow {
    fn name(&self) -> &'static str {
        "pow"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Double)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match (a.value(0)?.to_f64(), a.value(1)?.to_f64()) {
            (Some(x), Some(y)) => Value::Double(x.powf(y)),
            _ => Value::Null,
        })
    }
}

/// EXP(x): error 1690 when it overflows, as in MariaDB.
pub struct Exp;

impl ScalarFunction for Exp {
    fn name(&self) -> &'static str {
        "exp"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Double)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let Some(x) = double_arg(&a.value(0)?) else {
            return Ok(Value::Null);
        };
        let r = x.exp();
        if r.is_infinite() {
            return Err(SqlError::of(
                ErrorKind::DataOutOfRange,
                format!(
                    "DOUBLE value is out of range in 'exp({})'",
                    format_double(x)
                ),
            ));
        }
        Ok(Value::Double(r))
    }
}

/// The logarithms.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// LN(x), and LOG(x) (`Any`: LOG(base, x) with two arguments).
    E,
    Any,
    Two,
    Ten,
}

/// LN, LOG, LOG2 and LOG10. The logarithm of a number that is not positive is NULL with
/// MariaDB's division-by-zero warning (1365).
pub struct Log(pub Base);

impl ScalarFunction for Log {
    fn name(&self) -> &'static str {
        match self.0 {
            Base::E => "ln",
            Base::Any => "log",
            Base::Two => "log2",
            Base::Ten => "log10",
        }
    }
    fn arity(&self) -> Arity {
        match self.0 {
            Base::Any => Arity::between(1, 2),
            _ => Arity::exactly(1),
        }
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Double)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        if a.len() == 2 {
            let (base, x) = (double_arg(&a.value(0)?), double_arg(&a.value(1)?));
            return Ok(match (base, x) {
                (Some(base), Some(x)) if base > 0.0 && base != 1.0 && x > 0.0 => {
                    double_or_null(x.ln() / base.ln())
                }
                (Some(_), Some(_)) => division_by_zero(),
                _ => Value::Null,
            });
        }
        Ok(match double_arg(&a.value(0)?) {
            Some(x) if x > 0.0 => Value::Double(match self.0 {
                // As MariaDB computes it (x.log2() differs in the last digit).
                Base::Two => x.ln() / std::f64::consts::LN_2,
                Base::Ten => x.log10(),
                Base::E | Base::Any => x.ln(),
            }),
            Some(_) => division_by_zero(),
            None => Value::Null,
        })
    }
}

/// PI().
pub struct Pi;

impl ScalarFunction for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Double)
    }
    fn eval(&self, _: &Args<'_>) -> Result<Value, SqlError> {
        Ok(Value::Double(std::f64::consts::PI))
    }
}

/// The functions of one double to a double.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unary {
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
}

/// DEGREES, RADIANS, SIN, COS and TAN: NULL where the result is not finite.
pub struct Trig(pub Unary);

impl ScalarFunction for Trig {
    fn name(&self) -> &'static str {
        match self.0 {
            Unary::Degrees => "degrees",
            Unary::Radians => "radians",
            Unary::Sin => "sin",
            Unary::Cos => "cos",
            Unary::Tan => "tan",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Double)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match double_arg(&a.value(0)?) {
            None => Value::Null,
            Some(x) => double_or_null(match self.0 {
                Unary::Degrees => x.to_degrees(),
                Unary::Radians => x.to_radians(),
                Unary::Sin => x.sin(),
                Unary::Cos => x.cos(),
                Unary::Tan => x.tan(),
            }),
        })
    }
}

/// RAND(): uniform in [0, 1).
pub struct Rand;

impl ScalarFunction for Rand {
    fn name(&self) -> &'static str {
        "rand"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Double)
    }
    fn eval(&self, _: &Args<'_>) -> Result<Value, SqlError> {
        Ok(Value::Double(
            (next_random() >> 11) as f64 / (1u64 << 53) as f64,
        ))
    }
    fn volatile(&self) -> bool {
        true
    }
}
