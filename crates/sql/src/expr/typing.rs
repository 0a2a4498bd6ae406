//! The types of compiled expressions' values, as the result metadata needs them.

use crate::expr::node::{Arith, CastTo, Expr, SubKind, Typing};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

pub const BIGINT: SqlType = SqlType::Int {
    bytes: 8,
    unsigned: false,
};
/// Comparisons, logic and the small integer functions are INTs in MariaDB.
pub const INT: SqlType = SqlType::Int {
    bytes: 4,
    unsigned: false,
};
/// A string of no declared length (what metadata shows for computed text).
pub const TEXT: SqlType = SqlType::Varchar {
    len: 255,
    binary: false,
};
pub const BINARY_TEXT: SqlType = SqlType::Varchar {
    len: 255,
    binary: true,
};
pub const DATETIME: SqlType = SqlType::DateTime { fsp: 0 };

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
        use crate::types::typeagg::result_of;
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
                CastTo::Binary => BINARY_TEXT,
                CastTo::Double => SqlType::Double,
                CastTo::Decimal {
                    precision, scale, ..
                } => SqlType::Decimal {
                    precision: (*precision).min(38),
                    scale: *scale,
                },
                CastTo::Date => SqlType::Date,
                CastTo::DateTime(fsp) => SqlType::DateTime { fsp: *fsp },
            },
            Expr::Func(f, args) => return f.return_type(&Typing::new(args, row_types)),
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
