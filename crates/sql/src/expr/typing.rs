//! The types of compiled expressions' values, as the result metadata needs them.

use crate::expr::builtins::{self as bi, Unit};
use crate::expr::node::{Arith, CastTo, Expr, Func, SubKind};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

impl Expr {
    /// The type of the expression's values, as far as the metadata needs it; `row_types`
    /// gives the types of `Col` references. A NULL literal has [`value_type`]'s type for NULL.
    pub fn result_type(&self, row_types: &dyn Fn(usize) -> Option<SqlType>) -> SqlType {
        self.type_of(row_types)
            .unwrap_or_else(|| value_type(&Value::Null))
    }

    /// [`Expr::result_type`], `None` for MariaDB's NULL type: a NULL literal, or a CASE,
    /// COALESCE, NULLIF, LEAST or GREATEST of nothing else (what IF, CASE, UNION and the like
    /// leave out when they combine their operands' types).
    pub fn type_of(&self, row_types: &dyn Fn(usize) -> Option<SqlType>) -> Option<SqlType> {
        const BIGINT: SqlType = SqlType::Int {
            bytes: 8,
            unsigned: false,
        };
        // Comparisons, logic and the small integer functions are INTs in MariaDB.
        const INT: SqlType = SqlType::Int {
            bytes: 4,
            unsigned: false,
        };
        const TEXT: SqlType = SqlType::Varchar {
            len: 255,
            binary: false,
        };
        use crate::types::typeagg::{min_max_of, result_of};
        let operands = |l: &[Expr]| l.iter().map(|a| a.type_of(row_types)).collect::<Vec<_>>();
        Some(match self {
            Expr::Const(Value::Null) => return None,
            Expr::Const(v) => value_type(v),
            Expr::Coerce(_, t) => *t,
            Expr::Param(_) => TEXT,
            Expr::Col(i) => row_types(*i).unwrap_or(TEXT),
            Expr::Neg(x) => x.result_type(row_types),
            Expr::Arith(op, a, b) => {
                let (x, y) = (a.result_type(row_types), b.result_type(row_types));
                let is_int = |t: SqlType| t.is_integer();
                let is_dec = |t: SqlType| matches!(t, SqlType::Decimal { .. }) || t.is_integer();
                let scale = |t: SqlType| match t {
                    SqlType::Decimal { scale, .. } => scale,
                    _ => 0,
                };
                // The scale the value gets (`Decimal::add`, `mul`, `div`), as in MySQL: what
                // SUM() of the expression and the column metadata use.
                let (sx, sy) = (scale(x), scale(y));
                let dec = |scale: u8| SqlType::Decimal {
                    precision: 38,
                    scale: scale.min(30),
                };
                match op {
                    Arith::Div if is_dec(x) && is_dec(y) => dec(sx + 4),
                    Arith::Div => SqlType::Double,
                    Arith::IntDiv => BIGINT,
                    _ if is_int(x) && is_int(y) => BIGINT,
                    Arith::Mul if is_dec(x) && is_dec(y) => dec(sx + sy),
                    _ if is_dec(x) && is_dec(y) => dec(sx.max(sy)),
                    _ => SqlType::Double,
                }
            }
            Expr::Outer(_) => TEXT,
            Expr::Subquery(sub, SubKind::Scalar) => sub.ty,
            Expr::Subquery(..)
            | Expr::Cmp(..)
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::Xor(..)
            | Expr::Not(..)
            | Expr::IsNull(..)
            | Expr::Between(..)
            | Expr::InList(..)
            | Expr::Like(..) => INT,
            Expr::Case(_, whens, els) => {
                return result_of(
                    whens
                        .iter()
                        .map(|(_, r)| r)
                        .chain(els.as_deref())
                        .map(|r| r.type_of(row_types)),
                )
            }
            Expr::Cast(_, to) => match to {
                CastTo::Signed => BIGINT,
                CastTo::Unsigned => SqlType::Int {
                    bytes: 8,
                    unsigned: true,
                },
                CastTo::Char => TEXT,
                CastTo::Binary => SqlType::Varchar {
                    len: 255,
                    binary: true,
                },
                CastTo::Double => SqlType::Double,
                CastTo::Decimal(s) => SqlType::Decimal {
                    precision: 38,
                    scale: *s,
                },
                CastTo::Date => SqlType::Date,
                CastTo::DateTime(fsp) => SqlType::DateTime { fsp: *fsp },
            },
            Expr::Func(f, args) => match f {
                Func::ConnectionId | Func::LastInsertId => BIGINT,
                Func::Length | Func::CharLength | Func::Year | Func::Month | Func::Day => INT,
                // ROUND of a DECIMAL to constant places has that scale (MariaDB pads:
                // ROUND(1.5, 3) is 1.500); without places, scale 0.
                Func::Round if args.len() == 1 || matches!(args.get(1), Some(Expr::Const(_))) => {
                    match args.first().map(|a| a.result_type(row_types)) {
                        Some(SqlType::Decimal { precision, scale }) => {
                            let places = match args.get(1) {
                                Some(Expr::Const(v)) => v.to_i64().unwrap_or(0).clamp(0, 30) as u8,
                                _ => 0,
                            };
                            SqlType::Decimal {
                                // One more integer digit for a carry (9.5 rounds to 10).
                                precision: (precision.saturating_sub(scale) + 1 + places).min(65),
                                scale: places,
                            }
                        }
                        // To tens or more a BIGINT may need a 20th digit: MariaDB makes it a
                        // DECIMAL.
                        Some(SqlType::Int { bytes: 8, .. })
                            if matches!(args.get(1), Some(Expr::Const(v))
                                if v.to_i64().is_some_and(|p| p < 0)) =>
                        {
                            SqlType::Decimal {
                                precision: 21,
                                scale: 0,
                            }
                        }
                        Some(t) if t.is_integer() => BIGINT,
                        _ => SqlType::Double,
                    }
                }
                Func::Ceil | Func::Floor | Func::Round | Func::Abs => args
                    .first()
                    .map(|a| match a.result_type(row_types) {
                        t if t.is_integer() => BIGINT,
                        SqlType::Decimal { precision, .. }
                            if matches!(f, Func::Ceil | Func::Floor) =>
                        {
                            let _ = precision;
                            BIGINT
                        }
                        t @ SqlType::Decimal { .. } => t,
                        _ => SqlType::Double,
                    })
                    .unwrap_or(SqlType::Double),
                Func::Sqrt
                | Func::Pow
                | Func::Exp
                | Func::Ln
                | Func::Log
                | Func::Log2
                | Func::Log10
                | Func::Pi
                | Func::Degrees
                | Func::Radians
                | Func::Sin
                | Func::Cos
                | Func::Tan
                | Func::Rand => SqlType::Double,
                Func::Locate
                | Func::Ascii
                | Func::Strcmp
                | Func::Sign
                | Func::DateDiff
                | Func::Hour
                | Func::Minute
                | Func::Second
                | Func::DayOfWeek
                | Func::Weekday
                | Func::DayOfYear
                | Func::Quarter
                | Func::Week
                | Func::Sleep
                | Func::IsNull
                | Func::Field => INT,
                Func::TimestampDiff(_) | Func::UnixTimestamp | Func::InetAton => BIGINT,
                Func::Truncate => match args.first().map(|a| a.result_type(row_types)) {
                    Some(t) if t.is_integer() => t,
                    Some(SqlType::Decimal { precision, scale }) => SqlType::Decimal {
                        precision,
                        scale: match args.get(1) {
                            Some(Expr::Const(v)) => v.to_i64().unwrap_or(0).clamp(0, 30) as u8,
                            _ => scale,
                        },
                    },
                    _ => SqlType::Double,
                },
                Func::Crc32 => SqlType::Int {
                    bytes: 4,
                    unsigned: true,
                },
                Func::LastDay | Func::MakeDate => SqlType::Date,
                Func::FromUnixtime => SqlType::DateTime { fsp: 0 },
                Func::FromBase64 => SqlType::Varchar {
                    len: 255,
                    binary: true,
                },
                Func::DateAdd(unit, _) => match args.first().map(|a| a.result_type(row_types)) {
                    Some(SqlType::Date) if unit.is_date_part() => SqlType::Date,
                    Some(SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. }) => {
                        SqlType::DateTime {
                            fsp: if *unit == Unit::Microsecond { 6 } else { 0 },
                        }
                    }
                    _ => TEXT,
                },
                Func::StrToDate => match args.get(1) {
                    Some(Expr::Const(Value::Str(f))) => match bi::str_to_date_kind(f) {
                        bi::Parsed::Date => SqlType::Date,
                        bi::Parsed::DateTime => SqlType::DateTime { fsp: 0 },
                        bi::Parsed::Time => TEXT,
                    },
                    _ => SqlType::DateTime { fsp: 0 },
                },
                // `DEFAULT` in INSERT compiles to a COALESCE without arguments.
                Func::Coalesce if args.is_empty() => TEXT,
                Func::Coalesce => return result_of(operands(args)),
                Func::Greatest | Func::Least => return min_max_of(operands(args)),
                Func::NullIf => return args.first().and_then(|a| a.type_of(row_types)),
                // IF of two NULLs is a (binary, empty) string to MariaDB, not the NULL type.
                Func::If => result_of(operands(args.get(1..).unwrap_or_default())).unwrap_or(
                    SqlType::Char {
                        len: 0,
                        binary: false,
                    },
                ),
                Func::Now => SqlType::DateTime { fsp: 0 },
                Func::CurDate | Func::Date => SqlType::Date,
                _ => TEXT,
            },
        })
    }
}

/// The natural type of a value (for constants in metadata).
pub fn value_type(v: &Value) -> SqlType {
    match v {
        Value::Null => SqlType::Varchar {
            len: 0,
            binary: true,
        },
        // MariaDB types an integer literal of up to 9 characters as INT, longer ones as BIGINT
        // (what IF(c, tinyint_col, 5) and UNIONs widen to).
        Value::Int(i) => SqlType::Int {
            bytes: if (-99_999_999..=999_999_999).contains(i) {
                4
            } else {
                8
            },
            unsigned: false,
        },
        Value::UInt(_) => SqlType::Int {
            bytes: 8,
            unsigned: true,
        },
        Value::Double(_) => SqlType::Double,
        // The literal's digits, at least one before the point (as MariaDB counts `0.5`).
        Value::Decimal(d) => SqlType::Decimal {
            precision: (d.mant.unsigned_abs().checked_ilog10().unwrap_or(0) + 1)
                .max(u32::from(d.scale) + 1)
                .min(65) as u8,
            scale: d.scale,
        },
        Value::Str(s) => SqlType::Varchar {
            len: s.chars().count().max(1) as u32,
            binary: false,
        },
        Value::Bytes(b) => SqlType::Varchar {
            len: b.len().max(1) as u32,
            binary: true,
        },
        Value::Date(_) => SqlType::Date,
        Value::DateTime(_) => SqlType::DateTime { fsp: 0 },
    }
}
