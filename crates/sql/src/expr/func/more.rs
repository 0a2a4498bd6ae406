//! The scalar functions added with the calendar, string and math helpers of
//! [`crate::expr::builtins`].

use std::cmp::Ordering;

use crate::error::ErrorKind;
use crate::expr::arith::{as_i128, division_by_zero};
use crate::expr::builtins::{self as bi, Unit};
use crate::expr::ctx::Ctx;
use crate::expr::func::args::{
    arg_fsp, count_arg, double_or_null, interval_fsp, next_random, now_micros, temporal_result,
    text_arg,
};
use crate::expr::node::{Expr, Func};
use crate::types::collation::collate_cmp;
use crate::types::decimal::Decimal;
use crate::types::temporal::{self, DateTime};
use crate::types::value::{format_double, Value};
use crate::SqlError;

/// The functions added with the calendar, string and math helpers of [`crate::expr::builtins`].
pub(crate) fn more_func(
    f: Func,
    args: &[Expr],
    row: &[Value],
    ctx: &Ctx,
) -> Result<Value, SqlError> {
    let ev = |i: usize| args[i].eval(row, ctx);
    let s = |i: usize| text_arg(args, i, row, ctx);
    // A DATETIME reads as YYYYMMDDhhmmss here, also at midnight (Value::to_f64 keeps
    // midnight as YYYYMMDD for its comparisons with date numbers).
    let num = |i: usize| -> Result<Option<f64>, SqlError> {
        Ok(match ev(i)? {
            v @ Value::DateTime(_) => count_arg(&v).map(|n| n as f64),
            v => v.to_f64(),
        })
    };
    let date = |i: usize| -> Result<Option<DateTime>, SqlError> {
        Ok(bi::temporal(&ev(i)?)
            .map(|(d, _)| d)
            .filter(|d| !temporal::is_zero_date(d)))
    };
    let int = |x: i64| Value::Int(x);
    Ok(match f {
        Func::Repeat => {
            let (Some(x), Some(n)) = (s(0)?, count_arg(&ev(1)?)) else {
                return Ok(Value::Null);
            };
            if n <= 0 || x.is_empty() {
                return Ok(Value::Str(String::new()));
            }
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if x.len().saturating_mul(n) > bi::MAX_RESULT_BYTES {
                return Ok(Value::Null);
            }
            Value::Str(x.repeat(n))
        }
        Func::Reverse => match ev(0)? {
            Value::Null => Value::Null,
            Value::Bytes(mut b) => {
                b.reverse();
                Value::Bytes(b)
            }
            v => Value::Str(
                v.to_string_lossy()
                    .unwrap_or_default()
                    .chars()
                    .rev()
                    .collect(),
            ),
        },
        Func::LPad | Func::RPad => {
            let (Some(x), Some(n), Some(p)) = (s(0)?, count_arg(&ev(1)?), s(2)?) else {
                return Ok(Value::Null);
            };
            bi::pad(&x, n, &p, f == Func::LPad).map_or(Value::Null, Value::Str)
        }
        Func::Locate => {
            let (needle, hay) = (ev(0)?, ev(1)?);
            if needle.is_null() || hay.is_null() {
                return Ok(Value::Null);
            }
            let pos = if args.len() > 2 {
                match count_arg(&ev(2)?) {
                    None => return Ok(Value::Null),
                    p => p,
                }
            } else {
                None
            };
            let ci = !matches!(needle, Value::Bytes(_)) && !matches!(hay, Value::Bytes(_));
            int(bi::locate(
                &needle.to_string_lossy().unwrap_or_default(),
                &hay.to_string_lossy().unwrap_or_default(),
                pos,
                ci,
            ))
        }
        Func::SubstringIndex => {
            let (Some(x), Some(d), Some(n)) = (s(0)?, s(1)?, count_arg(&ev(2)?)) else {
                return Ok(Value::Null);
            };
            // MariaDB keeps the count in 32 bits: 4294967295 counts as -1.
            Value::Str(bi::substring_index(&x, &d, i64::from(n as i32)))
        }
        Func::Space => match count_arg(&ev(0)?) {
            None => Value::Null,
            Some(n) if n <= 0 => Value::Str(String::new()),
            Some(n) if n as u64 > bi::MAX_RESULT_BYTES as u64 => Value::Null,
            Some(n) => Value::Str(" ".repeat(n as usize)),
        },
        Func::Ascii => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => int(i64::from(b.first().copied().unwrap_or(0))),
        },
        Func::Md5 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => Value::Str(bi::hex_lower(&bi::md5(&b))),
        },
        Func::Sha1 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => {
                use sha1::Digest;
                Value::Str(bi::hex_lower(&sha1::Sha1::digest(&b)))
            }
        },
        Func::Sha2 => {
            let Some(b) = ev(0)?.to_text() else {
                return Ok(Value::Null);
            };
            // A NULL length reads as 0, which means 256.
            let n = count_arg(&ev(1)?).unwrap_or(0);
            use sha2::Digest;
            Value::Str(match n {
                0 | 256 => bi::hex_lower(&sha2::Sha256::digest(&b)),
                224 => bi::hex_lower(&sha2::Sha224::digest(&b)),
                384 => bi::hex_lower(&sha2::Sha384::digest(&b)),
                512 => bi::hex_lower(&sha2::Sha512::digest(&b)),
                _ => return Ok(Value::Null),
            })
        }
        Func::ToBase64 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => Value::Str(bi::to_base64(&b)),
        },
        Func::FromBase64 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => bi::from_base64(&b).map_or(Value::Null, Value::Bytes),
        },
        Func::Format => {
            let (v, d) = (ev(0)?, count_arg(&ev(1)?));
            match d {
                None => Value::Null,
                // The places are kept in 32 bits, as MariaDB does.
                Some(d) => {
                    bi::format_number(&v, i64::from(d as i32)).map_or(Value::Null, Value::Str)
                }
            }
        }
        Func::Strcmp => {
            let (a, b) = (ev(0)?, ev(1)?);
            if a.is_null() || b.is_null() {
                return Ok(Value::Null);
            }
            let o = if matches!(a, Value::Bytes(_)) || matches!(b, Value::Bytes(_)) {
                a.to_text().cmp(&b.to_text())
            } else {
                collate_cmp(
                    &a.to_string_lossy().unwrap_or_default(),
                    &b.to_string_lossy().unwrap_or_default(),
                )
            };
            int(o as i64)
        }
        Func::Sign => match ev(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => int(i.signum()),
            Value::UInt(u) => int(i64::from(u > 0)),
            Value::Decimal(d) => int(d.mant.signum() as i64),
            v => {
                let x = v.to_f64().unwrap_or(0.0);
                int(if x > 0.0 {
                    1
                } else if x < 0.0 {
                    -1
                } else {
                    0
                })
            }
        },
        Func::Truncate => {
            let (v, d) = (ev(0)?, count_arg(&ev(1)?));
            let Some(d) = d else {
                return Ok(Value::Null);
            };
            let scale = match (&v, &args[1]) {
                (Value::Decimal(x), e) if !matches!(e, Expr::Const(_)) => Some(x.scale),
                _ => None,
            };
            match (truncate(v, d)?, scale) {
                // With a places argument that is not a constant, MariaDB types the result
                // with the argument's scale and prints every value at it.
                (Value::Decimal(r), Some(s)) => Value::Decimal(r.rescale(s).unwrap_or(r)),
                (r, _) => r,
            }
        }
        Func::Exp => match num(0)? {
            None => Value::Null,
            Some(x) => {
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
                Value::Double(r)
            }
        },
        Func::Ln | Func::Log2 | Func::Log10 | Func::Log if args.len() == 1 => match num(0)? {
            Some(x) if x > 0.0 => Value::Double(match f {
                // As MariaDB computes it (x.log2() differs in the last digit).
                Func::Log2 => x.ln() / std::f64::consts::LN_2,
                Func::Log10 => x.log10(),
                _ => x.ln(),
            }),
            // MariaDB reports the logarithm of a number that is not positive as a division by
            // zero (1365).
            Some(_) => division_by_zero(),
            None => Value::Null,
        },
        Func::Log => match (num(0)?, num(1)?) {
            (Some(base), Some(x)) if base > 0.0 && base != 1.0 && x > 0.0 => {
                double_or_null(x.ln() / base.ln())
            }
            (Some(_), Some(_)) => division_by_zero(),
            _ => Value::Null,
        },
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Degrees | Func::Radians | Func::Sin | Func::Cos | Func::Tan => match num(0)? {
            None => Value::Null,
            Some(x) => double_or_null(match f {
                Func::Degrees => x.to_degrees(),
                Func::Radians => x.to_radians(),
                Func::Sin => x.sin(),
                Func::Cos => x.cos(),
                _ => x.tan(),
            }),
        },
        Func::Rand => Value::Double((next_random() >> 11) as f64 / (1u64 << 53) as f64),
        Func::Crc32 => match ev(0)?.to_text() {
            None => Value::Null,
            // INT UNSIGNED in MariaDB: `CRC32(x) * -1` is out of range there too.
            Some(b) => Value::UInt(u64::from(bi::crc32(&b))),
        },
        Func::DateAdd(unit, sub) => {
            let (arg, n) = (ev(0)?, ev(1)?);
            if arg.is_null() || n.is_null() {
                return Ok(Value::Null);
            }
            let Some((d, had_time)) = bi::temporal(&arg) else {
                return Ok(Value::Null);
            };
            let mut amount = match unit {
                Unit::Second => bi::seconds_to_micros(&n),
                _ => count_arg(&n).map(i128::from),
            }
            .unwrap_or(0);
            if sub {
                amount = -amount;
            }
            let Some(r) = bi::add_interval(&d, unit, amount) else {
                crate::types::diag::warn(crate::error::ErrorKind::DatetimeFunctionOverflow, || {
                    "Datetime function: datetime field overflow".to_string()
                });
                return Ok(Value::Null);
            };
            let fsp = arg_fsp(&args[0], &arg).max(interval_fsp(&args[1], &n, unit));
            temporal_result(&arg, r, had_time, unit.is_date_part(), fsp)
        }
        Func::DateDiff => match (date(0)?, date(1)?) {
            (Some(a), Some(b)) => int(temporal::daynr(&a) - temporal::daynr(&b)),
            _ => Value::Null,
        },
        Func::TimestampDiff(unit) => match (date(0)?, date(1)?) {
            (Some(a), Some(b)) => int(bi::timestamp_diff(unit, &a, &b)),
            _ => Value::Null,
        },
        Func::UnixTimestamp if args.is_empty() => int((now_micros(ctx) / 1_000_000) as i64),
        Func::UnixTimestamp => {
            let v = ev(0)?;
            let Some(d) = date(0)? else {
                return Ok(Value::Null);
            };
            let us = temporal::to_micros(&d);
            if !(0..=2_147_483_647_999_999).contains(&us) {
                return Ok(Value::Null);
            }
            let scale = match &v {
                Value::DateTime(_) if d.micro != 0 => 6,
                _ => arg_fsp(&args[0], &v),
            };
            if scale == 0 {
                int((us / 1_000_000) as i64)
            } else {
                Value::Decimal(
                    Decimal { mant: us, scale: 6 }
                        .rescale(scale)
                        .ok_or_else(|| SqlError::internal("timestamp"))?,
                )
            }
        }
        Func::FromUnixtime => {
            let Some(us) = bi::seconds_to_micros(&ev(0)?) else {
                return Ok(Value::Null);
            };
            if !(0..=2_147_483_647_999_999).contains(&us) {
                return Ok(Value::Null);
            }
            let Some(d) = temporal::from_micros(us) else {
                return Ok(Value::Null);
            };
            match ev(0)? {
                // The fraction prints with the argument's digits (`1.5` gives `...:01.5`).
                Value::Decimal(x) if x.scale > 0 => Value::Str(d.format(x.scale.min(6))),
                _ => Value::DateTime(d.pack()),
            }
        }
        Func::Hour | Func::Minute | Func::Second => match match &args[0] {
            // DATE_ADD on a string gives a string, but a temporal one: its time of day, not
            // a TIME number read from its digits.
            Expr::Func(Func::DateAdd(..), _) => bi::temporal(&ev(0)?)
                .map(|(d, _)| (i64::from(d.hour), i64::from(d.minute), i64::from(d.second))),
            _ => bi::time_of(&ev(0)?),
        } {
            None => Value::Null,
            Some((h, m, sec)) => int(match f {
                Func::Hour => h,
                Func::Minute => m,
                _ => sec,
            }),
        },
        Func::DayOfWeek | Func::Weekday | Func::DayOfYear | Func::DayName => match date(0)? {
            None => Value::Null,
            Some(d) => match f {
                Func::DayOfWeek => int((temporal::weekday(&d) + 1) % 7 + 1),
                Func::Weekday => int(temporal::weekday(&d)),
                Func::DayOfYear => int(temporal::day_of_year(&d)),
                _ => Value::Str(bi::DAY_NAMES[temporal::weekday(&d) as usize].to_string()),
            },
        },
        Func::MonthName | Func::Quarter => match bi::temporal(&ev(0)?) {
            None => Value::Null,
            Some((d, _)) if f == Func::Quarter => int((i64::from(d.month) + 2) / 3),
            Some((d, _)) => match usize::from(d.month).checked_sub(1) {
                Some(m) => Value::Str(bi::MONTH_NAMES[m].to_string()),
                None => Value::Null,
            },
        },
        Func::Week => {
            let mode = if args.len() > 1 {
                match count_arg(&ev(1)?) {
                    None => return Ok(Value::Null),
                    Some(m) => m,
                }
            } else {
                0
            };
            match date(0)? {
                None => Value::Null,
                Some(d) => int(temporal::calc_week(&d, temporal::week_mode(mode)).0),
            }
        }
        Func::LastDay => match date(0)? {
            None => Value::Null,
            Some(d) => Value::Date(
                DateTime {
                    year: d.year,
                    month: d.month,
                    day: crate::types::temporal::days_in_month(d.year, d.month),
                    ..DateTime::default()
                }
                .pack(),
            ),
        },
        Func::MakeDate => {
            let (Some(y), Some(n)) = (count_arg(&ev(0)?), count_arg(&ev(1)?)) else {
                return Ok(Value::Null);
            };
            if n <= 0 || n > 4_000_000 || !(0..=9999).contains(&y) {
                return Ok(Value::Null);
            }
            let y = match y {
                0..=69 => y + 2000,
                70..=99 => y + 1900,
                y => y,
            };
            let days = temporal::days_from_civil(y, 1, 1) + (n - 1);
            let (yy, m, d) = temporal::civil_from_days(days);
            if yy > 9999 {
                return Ok(Value::Null);
            }
            Value::Date(
                DateTime {
                    year: yy as u16,
                    month: m,
                    day: d,
                    ..DateTime::default()
                }
                .pack(),
            )
        }
        Func::DateFormat => {
            let (v, fmt) = (ev(0)?, s(1)?);
            let (Some((d, _)), Some(fmt)) = (bi::temporal(&v), fmt) else {
                return Ok(Value::Null);
            };
            if fmt.is_empty() {
                // An empty format is NULL in MariaDB, not ''.
                return Ok(Value::Null);
            }
            bi::date_format(&d, &fmt).map_or(Value::Null, Value::Str)
        }
        Func::StrToDate => {
            let (Some(text), Some(fmt)) = (s(0)?, s(1)?) else {
                return Ok(Value::Null);
            };
            let Some(d) = bi::str_to_date(&text, &fmt) else {
                return Ok(Value::Null);
            };
            match bi::str_to_date_kind(&fmt) {
                bi::Parsed::Date => Value::Date(d.date_part().pack()),
                bi::Parsed::DateTime => Value::DateTime(d.pack()),
                bi::Parsed::Time => {
                    let mut t = format!("{:02}:{:02}:{:02}", d.hour, d.minute, d.second);
                    if d.micro != 0 {
                        t.push_str(&format!(".{:06}", d.micro));
                    }
                    Value::Str(t)
                }
            }
        }
        Func::CurTime => {
            let d = DateTime::unpack(ctx.now);
            Value::Str(format!("{:02}:{:02}:{:02}", d.hour, d.minute, d.second))
        }
        Func::Sleep => {
            let secs = num(0)?.unwrap_or(0.0);
            if secs > 0.0 && secs.is_finite() {
                std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(1e9)));
            }
            int(0)
        }
        Func::IsNull => int(i64::from(ev(0)?.is_null())),
        Func::Field => {
            let vals = args
                .iter()
                .map(|a| a.eval(row, ctx))
                .collect::<Result<Vec<_>, _>>()?;
            if vals[0].is_null() {
                return Ok(int(0));
            }
            // All strings compare as strings, all numbers as numbers, a mix as doubles.
            let strings = vals
                .iter()
                .all(|v| matches!(v, Value::Str(_) | Value::Bytes(_) | Value::Null));
            let numbers = vals.iter().all(|v| v.is_numeric() || v.is_null());
            for (i, v) in vals.iter().enumerate().skip(1) {
                let eq = if strings || numbers {
                    vals[0].sql_cmp(v) == Some(Ordering::Equal)
                } else {
                    matches!((vals[0].to_f64(), v.to_f64()), (Some(a), Some(b)) if a == b)
                };
                if eq {
                    return Ok(int(i as i64));
                }
            }
            int(0)
        }
        // MariaDB keeps the low 32 bits of the index (ELT(-9223372036854775807, 'a') is 'a').
        Func::Elt => match count_arg(&ev(0)?).map(|n| n as u32 as usize) {
            Some(n) if n >= 1 && n < args.len() => match ev(n)? {
                Value::Null => Value::Null,
                Value::Bytes(b) => Value::Bytes(b),
                v => Value::Str(v.to_string_lossy().unwrap_or_default()),
            },
            _ => Value::Null,
        },
        Func::InetAton => match s(0)? {
            None => Value::Null,
            Some(x) => bi::inet_aton(&x).map_or(Value::Null, |n| int(n as i64)),
        },
        Func::InetNtoa => match ev(0)? {
            Value::Null => Value::Null,
            v => match count_arg(&v) {
                Some(n) if n >= 0 => bi::inet_ntoa(n as u64).map_or(Value::Null, Value::Str),
                _ => Value::Null,
            },
        },
        Func::Uuid => Value::Str(bi::uuid(now_micros(ctx), next_random())),
        other => return Err(SqlError::internal(format!("function {other:?}"))),
    })
}

/// TRUNCATE(x, d): toward zero at `d` places (left of the point for a negative `d`).
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
