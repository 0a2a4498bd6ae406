//! The first scalar functions: strings, numbers, control flow, the session's values and the
//! date parts; the others are in `more`.

use std::cmp::Ordering;

use crate::expr::arith::{decimal_ceil_floor, int_result};
use crate::expr::cast::{cast, to_datetime_arg};
use crate::expr::ctx::Ctx;
use crate::expr::func::args::text_arg;
use crate::expr::func::more::more_func;
use crate::expr::node::{CastTo, Expr, Func};
use crate::types::collation::{lower_char, upper_char};
use crate::types::decimal::Decimal;
use crate::types::temporal::DateTime;
use crate::types::value::Value;
use crate::SqlError;

pub(crate) fn func(f: Func, args: &[Expr], row: &[Value], ctx: &Ctx) -> Result<Value, SqlError> {
    let ev = |i: usize| args[i].eval(row, ctx);
    let s = |i: usize| text_arg(args, i, row, ctx);
    let str_or_null = |o: Option<String>| o.map_or(Value::Null, Value::Str);
    Ok(match f {
        Func::Concat => {
            let mut out = String::new();
            for i in 0..args.len() {
                match s(i)? {
                    Some(x) => out.push_str(&x),
                    None => return Ok(Value::Null),
                }
            }
            Value::Str(out)
        }
        Func::ConcatWs => {
            let Some(sep) = s(0)? else {
                return Ok(Value::Null);
            };
            let mut parts = Vec::new();
            for i in 1..args.len() {
                if let Some(x) = s(i)? {
                    parts.push(x);
                }
            }
            Value::Str(parts.join(&sep))
        }
        // A column is measured where it lies: no copy of the text per row.
        Func::Length => match &args[0] {
            Expr::Col(c) if *c < row.len() => byte_length(&row[*c]),
            _ => byte_length(&ev(0)?),
        },
        Func::CharLength => match s(0)? {
            None => Value::Null,
            Some(x) => Value::Int(x.chars().count() as i64),
        },
        // The collation's one-to-one case maps, not Rust's (UPPER('ß') is 'ß' in MariaDB).
        Func::Upper => str_or_null(s(0)?.map(|x| x.chars().map(upper_char).collect())),
        Func::Lower => str_or_null(s(0)?.map(|x| x.chars().map(lower_char).collect())),
        Func::Trim => str_or_null(s(0)?.map(|x| x.trim_matches(' ').to_string())),
        Func::LTrim => str_or_null(s(0)?.map(|x| x.trim_start_matches(' ').to_string())),
        Func::RTrim => str_or_null(s(0)?.map(|x| x.trim_end_matches(' ').to_string())),
        Func::Substring => {
            let Some(x) = s(0)? else {
                return Ok(Value::Null);
            };
            let Some(pos) = ev(1)?.to_i64() else {
                return Ok(Value::Null);
            };
            let chars: Vec<char> = x.chars().collect();
            let n = chars.len() as i64;
            let start = if pos > 0 {
                pos - 1
            } else if pos < 0 {
                n + pos
            } else {
                return Ok(Value::Str(String::new()));
            };
            if start < 0 || start >= n {
                return Ok(Value::Str(String::new()));
            }
            let len = if args.len() > 2 {
                match ev(2)?.to_i64() {
                    None => return Ok(Value::Null),
                    Some(l) => l.max(0),
                }
            } else {
                n
            };
            let end = (start + len).min(n);
            Value::Str(chars[start as usize..end as usize].iter().collect())
        }
        Func::Replace => match (s(0)?, s(1)?, s(2)?) {
            (Some(x), Some(from), Some(to)) if !from.is_empty() => {
                Value::Str(x.replace(&from, &to))
            }
            (Some(x), Some(_), Some(_)) => Value::Str(x),
            _ => Value::Null,
        },
        Func::Left | Func::Right => {
            let (Some(x), Some(n)) = (s(0)?, ev(1)?.to_i64()) else {
                return Ok(Value::Null);
            };
            let chars: Vec<char> = x.chars().collect();
            let n = (n.max(0) as usize).min(chars.len());
            Value::Str(if f == Func::Left {
                chars[..n].iter().collect()
            } else {
                chars[chars.len() - n..].iter().collect()
            })
        }
        Func::Abs => match ev(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => int_result(i128::from(i).abs())?,
            Value::UInt(u) => Value::UInt(u),
            Value::Decimal(d) => Value::Decimal(Decimal {
                mant: d.mant.abs(),
                scale: d.scale,
            }),
            v => Value::Double(v.to_f64().unwrap_or(0.0).abs()),
        },
        Func::Ceil | Func::Floor => match ev(0)? {
            Value::Null => Value::Null,
            v @ (Value::Int(_) | Value::UInt(_)) => v,
            // Exactly, on the mantissa: through f64, -99999999999999.9999 would become
            // -1e14.
            Value::Decimal(d) => int_result(decimal_ceil_floor(d, f == Func::Ceil))?,
            v => {
                let x = v.to_f64().unwrap_or(0.0);
                Value::Double(if f == Func::Ceil { x.ceil() } else { x.floor() })
            }
        },
        Func::Round => {
            let places = if args.len() > 1 {
                ev(1)?.to_i64().unwrap_or(0)
            } else {
                0
            };
            match ev(0)? {
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
                    // Halves go to the even neighbour, as MariaDB's rint() does
                    // (ROUND(0.5e0) is 0, ROUND(2.5e0) is 2); negative places divide, so
                    // that 15 reads as exactly 1.5 tens.
                    let x = v.to_f64().unwrap_or(0.0);
                    let m = 10f64.powi(places.unsigned_abs().min(30) as i32);
                    Value::Double(if places >= 0 {
                        (x * m).round_ties_even() / m
                    } else {
                        (x / m).round_ties_even() * m
                    })
                }
            }
        }
        Func::Sqrt => match ev(0)?.to_f64() {
            Some(x) if x >= 0.0 => Value::Double(x.sqrt()),
            _ => Value::Null,
        },
        Func::Pow => match (ev(0)?.to_f64(), ev(1)?.to_f64()) {
            (Some(a), Some(b)) => Value::Double(a.powf(b)),
            _ => Value::Null,
        },
        Func::Coalesce => {
            for i in 0..args.len() {
                let v = ev(i)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Func::NullIf => {
            let (a, b) = (ev(0)?, ev(1)?);
            if a.sql_cmp(&b) == Some(Ordering::Equal) {
                Value::Null
            } else {
                a
            }
        }
        Func::If => {
            if ev(0)?.truth() == Some(true) {
                ev(1)?
            } else {
                ev(2)?
            }
        }
        Func::Greatest | Func::Least => {
            let mut best = ev(0)?;
            for i in 1..args.len() {
                let v = ev(i)?;
                match v.sql_cmp(&best) {
                    None => return Ok(Value::Null),
                    Some(o) => {
                        if (f == Func::Greatest && o == Ordering::Greater)
                            || (f == Func::Least && o == Ordering::Less)
                        {
                            best = v;
                        }
                    }
                }
            }
            if best.is_null() {
                Value::Null
            } else {
                best
            }
        }
        Func::Now => Value::DateTime(ctx.now - ctx.now.rem_euclid(1_000_000)),
        Func::CurDate => {
            let d = DateTime::unpack(ctx.now);
            Value::Date(
                DateTime {
                    year: d.year,
                    month: d.month,
                    day: d.day,
                    ..DateTime::default()
                }
                .pack(),
            )
        }
        Func::Database => ctx.db.map_or(Value::Null, |d| Value::Str(d.to_string())),
        Func::User => Value::Str(ctx.user.to_string()),
        Func::Version => Value::Str(ctx.version.to_string()),
        Func::ConnectionId => Value::UInt(ctx.conn_id),
        Func::LastInsertId => Value::UInt(ctx.last_insert_id),
        Func::Hex => match ev(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Str(format!("{i:X}")),
            Value::UInt(u) => Value::Str(format!("{u:X}")),
            // A DECIMAL or DOUBLE is hexed as the integer it rounds to (halves away from zero),
            // as a 64-bit two's complement; beyond that range, all ones, as MariaDB does.
            v @ (Value::Decimal(_) | Value::Double(_)) => {
                let r = match v {
                    Value::Decimal(d) => d.rescale(0).map(|d| d.mant),
                    other => other
                        .to_f64()
                        .filter(|f| f.is_finite() && f.abs() < 1e20)
                        .map(|f| f.round() as i128),
                };
                let bits = match r {
                    Some(n) if i64::try_from(n).is_ok() => n as i64 as u64,
                    Some(n) if u64::try_from(n).is_ok() => n as u64,
                    _ => u64::MAX,
                };
                Value::Str(format!("{bits:X}"))
            }
            v => Value::Str(
                v.to_text()
                    .unwrap_or_default()
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect(),
            ),
        },
        Func::Year | Func::Month | Func::Day => match to_datetime_arg(&ev(0)?) {
            None => Value::Null,
            Some(p) => {
                let d = DateTime::unpack(p);
                Value::Int(match f {
                    Func::Year => i64::from(d.year),
                    Func::Month => i64::from(d.month),
                    _ => i64::from(d.day),
                })
            }
        },
        Func::Date => cast(ev(0)?, CastTo::Date)?,
        _ => more_func(f, args, row, ctx)?,
    })
}

/// LENGTH: the bytes of the value's text form (NULL for NULL).
fn byte_length(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Str(s) => Value::Int(s.len() as i64),
        Value::Bytes(b) => Value::Int(b.len() as i64),
        v => Value::Int(v.to_text().map_or(0, |b| b.len()) as i64),
    }
}
