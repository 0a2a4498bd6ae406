//! The functions that read one part of a date or time: YEAR, MONTH, DAY, HOUR, MINUTE,
//! SECOND, the day of the week or year and its name, the month's name, the quarter and the
//! week.

use crate::expr::builtins as bi;
use crate::expr::cast::to_datetime_arg;
use crate::expr::func::args::count_arg;
use crate::expr::func::temporal::{date_arg, DateAdd};
use crate::expr::node::{Args, Arity, Expr, ScalarFunction, Typing};
use crate::expr::typing::{INT, TEXT};
use crate::types::sqltype::SqlType;
use crate::types::temporal::{self, DateTime};
use crate::types::value::Value;
use crate::SqlError;

/// A part of a date.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DateField {
    Year,
    Month,
    Day,
}

/// YEAR, MONTH and DAY / DAYOFMONTH.
pub struct DatePart(pub DateField);

impl ScalarFunction for DatePart {
    fn name(&self) -> &'static str {
        match self.0 {
            DateField::Year => "year",
            DateField::Month => "month",
            DateField::Day => "day",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match to_datetime_arg(&a.value(0)?) {
            None => Value::Null,
            Some(p) => {
                let d = DateTime::unpack(p);
                Value::Int(match self.0 {
                    DateField::Year => i64::from(d.year),
                    DateField::Month => i64::from(d.month),
                    DateField::Day => i64::from(d.day),
                })
            }
        })
    }
}

/// A part of a time of day.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TimeField {
    Hour,
    Minute,
    Second,
}

/// HOUR, MINUTE and SECOND, of a datetime or a time of day (`'hh:mm:ss'`).
pub struct TimePart(pub TimeField);

impl ScalarFunction for TimePart {
    fn name(&self) -> &'static str {
        match self.0 {
            TimeField::Hour => "hour",
            TimeField::Minute => "minute",
            TimeField::Second => "second",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let hms = match a.expr(0) {
            // DATE_ADD on a string gives a string, but a temporal one: its time of day, not
            // a TIME number read from its digits.
            Expr::Func(f, _) if f.is::<DateAdd>() => bi::temporal(&a.value(0)?)
                .map(|(d, _)| (i64::from(d.hour), i64::from(d.minute), i64::from(d.second))),
            _ => bi::time_of(&a.value(0)?),
        };
        Ok(match hms {
            None => Value::Null,
            Some((h, m, s)) => Value::Int(match self.0 {
                TimeField::Hour => h,
                TimeField::Minute => m,
                TimeField::Second => s,
            }),
        })
    }
}

/// What of its day a date is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DayField {
    /// DAYOFWEEK: 1 (Sunday) to 7.
    OfWeek,
    /// WEEKDAY: 0 (Monday) to 6.
    Weekday,
    DayOfYear,
    DayName,
}

/// DAYOFWEEK, WEEKDAY, DAYOFYEAR and DAYNAME.
pub struct DayOf(pub DayField);

impl ScalarFunction for DayOf {
    fn name(&self) -> &'static str {
        match self.0 {
            DayField::OfWeek => "dayofweek",
            DayField::Weekday => "weekday",
            DayField::DayOfYear => "dayofyear",
            DayField::DayName => "dayname",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(if self.0 == DayField::DayName {
            TEXT
        } else {
            INT
        })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let Some(d) = date_arg(a, 0)? else {
            return Ok(Value::Null);
        };
        Ok(match self.0 {
            DayField::OfWeek => Value::Int((temporal::weekday(&d) + 1) % 7 + 1),
            DayField::Weekday => Value::Int(temporal::weekday(&d)),
            DayField::DayOfYear => Value::Int(temporal::day_of_year(&d)),
            DayField::DayName => {
                Value::Str(bi::DAY_NAMES[temporal::weekday(&d) as usize].to_string())
            }
        })
    }
}

/// MONTHNAME (`true`) and QUARTER.
pub struct MonthOf {
    pub name: bool,
}

impl ScalarFunction for MonthOf {
    fn name(&self) -> &'static str {
        if self.name {
            "monthname"
        } else {
            "quarter"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(if self.name { TEXT } else { INT })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match bi::temporal(&a.value(0)?) {
            None => Value::Null,
            Some((d, _)) if !self.name => Value::Int((i64::from(d.month) + 2) / 3),
            Some((d, _)) => match usize::from(d.month).checked_sub(1) {
                Some(m) => Value::Str(bi::MONTH_NAMES[m].to_string()),
                None => Value::Null,
            },
        })
    }
}

/// WEEK(date[, mode]).
pub struct Week;

impl ScalarFunction for Week {
    fn name(&self) -> &'static str {
        "week"
    }
    fn arity(&self) -> Arity {
        Arity::between(1, 2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let mode = if a.len() > 1 {
            match count_arg(&a.value(1)?) {
                None => return Ok(Value::Null),
                Some(m) => m,
            }
        } else {
            0
        };
        Ok(match date_arg(a, 0)? {
            None => Value::Null,
            Some(d) => Value::Int(temporal::calc_week(&d, temporal::week_mode(mode)).0),
        })
    }
}
