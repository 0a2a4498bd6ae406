//! The date and time functions that compute dates: the clock, interval arithmetic, Unix
//! time, DATE_FORMAT and STR_TO_DATE (on the calendar of `types/temporal.rs` and the helpers
//! of [`crate::expr::builtins`]). The parts of a date (YEAR, HOUR, WEEK, ...) are in `parts`.

use crate::expr::builtins::{self as bi, Unit};
use crate::expr::cast::cast;
use crate::expr::func::args::{count_arg, now_micros};
use crate::expr::node::{Args, Arity, CastTo, Expr, ScalarFunction, Typing};
use crate::expr::typing::{BIGINT, DATETIME, INT, TEXT};
use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::temporal::{self, DateTime};
use crate::types::value::Value;
use crate::SqlError;

/// Argument `i` as a date (with a warning if it is not one); `None` for NULL, a bad value or
/// the zero date.
pub(crate) fn date_arg(a: &Args<'_>, i: usize) -> Result<Option<DateTime>, SqlError> {
    Ok(bi::temporal(&a.value(i)?)
        .map(|(d, _)| d)
        .filter(|d| !temporal::is_zero_date(d)))
}

fn date_only(d: &DateTime) -> Value {
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

/// NOW and its synonyms (CURRENT_TIMESTAMP, SYSDATE, UTC_TIMESTAMP, ...): the statement's
/// start, in whole seconds.
pub struct Now;

impl ScalarFunction for Now {
    fn name(&self) -> &'static str {
        "now"
    }
    fn arity(&self) -> Arity {
        Arity::between(0, 1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(DATETIME)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let now = a.ctx().now;
        Ok(Value::DateTime(now - now.rem_euclid(1_000_000)))
    }
}

/// CURDATE / CURRENT_DATE / UTC_DATE.
pub struct CurDate;

impl ScalarFunction for CurDate {
    fn name(&self) -> &'static str {
        "curdate"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Date)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(date_only(&DateTime::unpack(a.ctx().now)))
    }
}

/// CURTIME / CURRENT_TIME / UTC_TIME: `hh:mm:ss` (zipdb has no TIME type).
pub struct CurTime;

impl ScalarFunction for CurTime {
    fn name(&self) -> &'static str {
        "curtime"
    }
    fn arity(&self) -> Arity {
        Arity::between(0, 1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let d = DateTime::unpack(a.ctx().now);
        Ok(Value::Str(format!(
            "{:02}:{:02}:{:02}",
            d.hour, d.minute, d.second
        )))
    }
}

/// DATE(x): the date part (NULL, with a warning, for a value that is not a date; a comparison
/// reads that as the zero date, see `Expr::cmp_operand`).
pub struct Date;

impl ScalarFunction for Date {
    fn name(&self) -> &'static str {
        "date"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Date)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        cast(a.value(0)?, &CastTo::Date)
    }
}

/// `date ± INTERVAL n unit` (DATE_ADD, DATE_SUB, ADDDATE, SUBDATE and the `+`/`-` operators):
/// the arguments are the date and n.
pub struct DateAdd {
    pub unit: Unit,
    pub sub: bool,
}

impl ScalarFunction for DateAdd {
    fn name(&self) -> &'static str {
        if self.sub {
            "date_sub"
        } else {
            "date_add"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        Some(match call.ty(0) {
            Some(SqlType::Date) if self.unit.is_date_part() => SqlType::Date,
            Some(SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. }) => {
                SqlType::DateTime {
                    fsp: if self.unit == Unit::Microsecond { 6 } else { 0 },
                }
            }
            _ => TEXT,
        })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (arg, n) = (a.value(0)?, a.value(1)?);
        if arg.is_null() || n.is_null() {
            return Ok(Value::Null);
        }
        let Some((d, had_time)) = bi::temporal(&arg) else {
            return Ok(Value::Null);
        };
        let mut amount = match self.unit {
            Unit::Second => bi::seconds_to_micros(&n),
            _ => count_arg(&n).map(i128::from),
        }
        .unwrap_or(0);
        if self.sub {
            amount = -amount;
        }
        let Some(r) = bi::add_interval(&d, self.unit, amount) else {
            crate::types::diag::warn(crate::error::ErrorKind::DatetimeFunctionOverflow, || {
                "Datetime function: datetime field overflow".to_string()
            });
            return Ok(Value::Null);
        };
        let fsp = arg_fsp(a.expr(0), &arg).max(interval_fsp(a.expr(1), &n, self.unit));
        Ok(temporal_result(
            &arg,
            r,
            had_time,
            self.unit.is_date_part(),
            fsp,
        ))
    }
    fn explain(&self, args: &[String]) -> String {
        match args {
            [d, n] => format!("{}({d}, INTERVAL {n} {})", self.name(), self.unit.name()),
            _ => format!("{}({})", self.name(), args.join(", ")),
        }
    }
}

/// The digits of fraction a temporal string result shows: MariaDB types it at compile time,
/// from a literal's own digits, or 6 for a value that is not a constant (a column).
fn arg_fsp(e: &Expr, v: &Value) -> u8 {
    match (e, v) {
        (Expr::Const(_), v) => bi::fraction_digits(v),
        // Another temporal function's text already shows the digits it was typed with.
        (Expr::Func(f, _), v)
            if f.is::<DateAdd>() || f.is::<FromUnixtime>() || f.is::<StrToDate>() =>
        {
            bi::fraction_digits(v)
        }
        (_, Value::Str(_) | Value::Bytes(_)) => 6,
        _ => 0,
    }
}

/// The digits of fraction an `INTERVAL n SECOND` adds: a DECIMAL's scale, 6 for a DOUBLE or a
/// string that is not a constant.
fn interval_fsp(e: &Expr, n: &Value, unit: Unit) -> u8 {
    match (unit, n) {
        (Unit::Microsecond, _) => 6,
        (Unit::Second, Value::Decimal(d)) => d.scale.min(6),
        (Unit::Second, Value::Double(_)) => 6,
        (Unit::Second, Value::Str(_)) if !matches!(e, Expr::Const(_)) => 6,
        _ => 0,
    }
}

/// A date result as its argument's kind: a DATE or DATETIME stays one, a string or number
/// becomes a string (a date without time when it had none and the unit is of days or more).
fn temporal_result(arg: &Value, d: DateTime, had_time: bool, date_unit: bool, fsp: u8) -> Value {
    match arg {
        Value::Date(_) if date_unit => Value::Date(d.pack()),
        // A DATETIME(n) result prints n digits of fraction, zeros too: only text can say so.
        Value::Date(_) | Value::DateTime(_) if fsp == 0 => Value::DateTime(d.pack()),
        Value::Date(_) | Value::DateTime(_) => Value::Str(d.format(fsp)),
        _ if !had_time && date_unit => Value::Str(d.format_date()),
        _ => Value::Str(d.format(fsp)),
    }
}

/// DATEDIFF(a, b): days from b to a.
pub struct DateDiff;

impl ScalarFunction for DateDiff {
    fn name(&self) -> &'static str {
        "datediff"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match (date_arg(a, 0)?, date_arg(a, 1)?) {
            (Some(x), Some(y)) => Value::Int(temporal::daynr(&x) - temporal::daynr(&y)),
            _ => Value::Null,
        })
    }
}

/// TIMESTAMPDIFF(unit, a, b): whole units from a to b; the arguments are a and b.
pub struct TimestampDiff {
    pub unit: Unit,
}

impl ScalarFunction for TimestampDiff {
    fn name(&self) -> &'static str {
        "timestampdiff"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(BIGINT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match (date_arg(a, 0)?, date_arg(a, 1)?) {
            (Some(x), Some(y)) => Value::Int(bi::timestamp_diff(self.unit, &x, &y)),
            _ => Value::Null,
        })
    }
    fn explain(&self, args: &[String]) -> String {
        format!("{}({}, {})", self.name(), self.unit.name(), args.join(", "))
    }
}

/// UNIX_TIMESTAMP([date]): seconds since 1970, with the date's fraction digits.
pub struct UnixTimestamp;

impl ScalarFunction for UnixTimestamp {
    fn name(&self) -> &'static str {
        "unix_timestamp"
    }
    fn arity(&self) -> Arity {
        Arity::between(0, 1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(BIGINT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        if a.is_empty() {
            return Ok(Value::Int((now_micros(a.ctx()) / 1_000_000) as i64));
        }
        let v = a.value(0)?;
        let Some(d) = date_arg(a, 0)? else {
            return Ok(Value::Null);
        };
        let us = temporal::to_micros(&d);
        if !(0..=2_147_483_647_999_999).contains(&us) {
            return Ok(Value::Null);
        }
        let scale = match &v {
            Value::DateTime(_) if d.micro != 0 => 6,
            _ => arg_fsp(a.expr(0), &v),
        };
        Ok(if scale == 0 {
            Value::Int((us / 1_000_000) as i64)
        } else {
            Value::Decimal(
                Decimal { mant: us, scale: 6 }
                    .rescale(scale)
                    .ok_or_else(|| SqlError::internal("timestamp"))?,
            )
        })
    }
}

/// FROM_UNIXTIME(seconds).
pub struct FromUnixtime;

impl ScalarFunction for FromUnixtime {
    fn name(&self) -> &'static str {
        "from_unixtime"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(DATETIME)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let v = a.value(0)?;
        let Some(us) = bi::seconds_to_micros(&v) else {
            return Ok(Value::Null);
        };
        if !(0..=2_147_483_647_999_999).contains(&us) {
            return Ok(Value::Null);
        }
        let Some(d) = temporal::from_micros(us) else {
            return Ok(Value::Null);
        };
        Ok(match v {
            // The fraction prints with the argument's digits (`1.5` gives `...:01.5`).
            Value::Decimal(x) if x.scale > 0 => Value::Str(d.format(x.scale.min(6))),
            _ => Value::DateTime(d.pack()),
        })
    }
}

/// LAST_DAY(date): the last day of its month.
pub struct LastDay;

impl ScalarFunction for LastDay {
    fn name(&self) -> &'static str {
        "last_day"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Date)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match date_arg(a, 0)? {
            None => Value::Null,
            Some(d) => date_only(&DateTime {
                day: temporal::days_in_month(d.year, d.month),
                ..d
            }),
        })
    }
}

/// MAKEDATE(year, day_of_year).
pub struct MakeDate;

impl ScalarFunction for MakeDate {
    fn name(&self) -> &'static str {
        "makedate"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Date)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (Some(y), Some(n)) = (count_arg(&a.value(0)?), count_arg(&a.value(1)?)) else {
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
        Ok(date_only(&DateTime {
            year: yy as u16,
            month: m,
            day: d,
            ..DateTime::default()
        }))
    }
}

/// DATE_FORMAT(date, format).
pub struct DateFormat;

impl ScalarFunction for DateFormat {
    fn name(&self) -> &'static str {
        "date_format"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (v, fmt) = (a.value(0)?, a.text(1)?);
        let (Some((d, _)), Some(fmt)) = (bi::temporal(&v), fmt) else {
            return Ok(Value::Null);
        };
        if fmt.is_empty() {
            // An empty format is NULL in MariaDB, not ''.
            return Ok(Value::Null);
        }
        Ok(bi::date_format(&d, &fmt).map_or(Value::Null, Value::Str))
    }
}

/// STR_TO_DATE(text, format): a DATE, DATETIME or time text, by what the format reads.
pub struct StrToDate;

impl ScalarFunction for StrToDate {
    fn name(&self) -> &'static str {
        "str_to_date"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        Some(match call.constant(1) {
            Some(Value::Str(f)) => match bi::str_to_date_kind(f) {
                bi::Parsed::Date => SqlType::Date,
                bi::Parsed::DateTime => DATETIME,
                bi::Parsed::Time => TEXT,
            },
            _ => DATETIME,
        })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (Some(text), Some(fmt)) = (a.text(0)?, a.text(1)?) else {
            return Ok(Value::Null);
        };
        let Some(d) = bi::str_to_date(&text, &fmt) else {
            return Ok(Value::Null);
        };
        Ok(match bi::str_to_date_kind(&fmt) {
            bi::Parsed::Date => Value::Date(d.date_part().pack()),
            bi::Parsed::DateTime => Value::DateTime(d.pack()),
            bi::Parsed::Time => {
                let mut t = format!("{:02}:{:02}:{:02}", d.hour, d.minute, d.second);
                if d.micro != 0 {
                    t.push_str(&format!(".{:06}", d.micro));
                }
                Value::Str(t)
            }
        })
    }
}
