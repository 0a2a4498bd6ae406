//! The result type of expressions whose value is one of several operands' values (IF, IFNULL,
//! COALESCE, CASE, LEAST, GREATEST) and of UNION columns, and the conversion of each operand's
//! values to it.
//!
//! MariaDB types such an expression once, from all its operands, and converts whichever operand
//! produced the value: `IF(c, 6543.6, 4807)` is a DECIMAL with one decimal, so the 4807 prints
//! as `4807.0`, and `SUM(LEAST(453, 0.1))` adds DECIMALs. The rules below were read off MariaDB
//! 10.11's result metadata (`mariadb --column-type-info`):
//!
//! * a NULL literal takes no part (`IF(c, NULL, 1.5)` is the DECIMAL);
//! * integers of one signedness give the widest of them; signed with unsigned give DECIMAL(n,0)
//!   (no integer type holds both ranges);
//! * integers with DECIMALs give a DECIMAL with the largest scale and room for the largest
//!   integer part;
//! * FLOAT or DOUBLE with any number gives DOUBLE (FLOAT only with FLOAT);
//! * DATE with DATETIME gives DATETIME (DATE only with DATE, TIMESTAMP only with TIMESTAMP);
//! * anything else (a string, or a temporal with a number) gives a string: TEXT if one operand
//!   is TEXT, CHAR if the strings are all CHAR, else VARCHAR; binary if a string operand is.
//!
//! UNION columns follow the same rules. LEAST and GREATEST compare their operands in the type
//! they return, which differs for mixtures: a number with a string is a DOUBLE (they compare as
//! numbers), a temporal with a number or a string is that temporal, and a NULL literal counts as
//! a string (so `LEAST(int_col, NULL)` is a DOUBLE).

use crate::types::sqltype::SqlType;
use crate::types::temporal::DateTime;
use crate::types::value::Value;

/// The type an operand contributes: `None` is a NULL literal's (MariaDB's NULL type), which
/// the other operands' types override.
pub type OperandType = Option<SqlType>;

/// MariaDB's largest DECIMAL precision (what metadata can report; zipdb's values hold 38
/// digits, which every operand of a mixture already fits).
const PRECISION_MAX: u8 = 65;

/// Digits before the point that a type's values can have.
fn int_digits(t: SqlType) -> u8 {
    match t {
        SqlType::Int { bytes, unsigned } => match (bytes, unsigned) {
            (1, _) => 3,
            (2, _) => 5,
            (3, false) => 7,
            (3, true) => 8,
            (4, _) => 10,
            (_, false) => 19,
            (_, true) => 20,
        },
        SqlType::Decimal { precision, scale } => precision.saturating_sub(scale),
        _ => 0,
    }
}

fn scale_of(t: SqlType) -> u8 {
    match t {
        SqlType::Decimal { scale, .. } => scale,
        _ => 0,
    }
}

fn fsp_of(t: SqlType) -> u8 {
    match t {
        SqlType::DateTime { fsp } | SqlType::Timestamp { fsp } => fsp,
        _ => 0,
    }
}

fn is_temporal(t: SqlType) -> bool {
    matches!(
        t,
        SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. }
    )
}

fn is_number(t: SqlType) -> bool {
    matches!(
        t,
        SqlType::Int { .. } | SqlType::Decimal { .. } | SqlType::Float | SqlType::Double
    )
}

/// Characters a value of the type takes as text (the length of a string that holds it).
fn char_len(t: SqlType) -> u32 {
    match t {
        SqlType::Int { unsigned, .. } => u32::from(int_digits(t)) + u32::from(!unsigned),
        SqlType::Decimal { precision, .. } => u32::from(precision) + 2,
        SqlType::Float => 12,
        SqlType::Double => 22,
        SqlType::Date => 10,
        SqlType::DateTime { fsp } | SqlType::Timestamp { fsp } => {
            19 + u32::from(fsp) + u32::from(fsp > 0)
        }
        SqlType::Char { len, .. } | SqlType::Varchar { len, .. } => len,
        SqlType::Text { max, .. } => max,
    }
}

/// Two numeric types together (`None` unless both are numbers).
fn numeric(a: SqlType, b: SqlType) -> Option<SqlType> {
    use SqlType as T;
    Some(match (a, b) {
        (
            T::Int {
                bytes: x,
                unsigned: u,
            },
            T::Int {
                bytes: y,
                unsigned: v,
            },
        ) if u == v => T::Int {
            bytes: x.max(y),
            unsigned: u,
        },
        (T::Int { .. } | T::Decimal { .. }, T::Int { .. } | T::Decimal { .. }) => {
            let scale = scale_of(a).max(scale_of(b));
            T::Decimal {
                precision: (int_digits(a).max(int_digits(b)) + scale).min(PRECISION_MAX),
                scale,
            }
        }
        (T::Float, T::Float) => T::Float,
        _ if is_number(a) && is_number(b) => T::Double,
        _ => return None,
    })
}

/// Two temporal types together (`None` unless both are temporal).
fn temporal(a: SqlType, b: SqlType) -> Option<SqlType> {
    use SqlType as T;
    Some(match (a, b) {
        (T::Date, T::Date) => T::Date,
        (T::Timestamp { fsp: x }, T::Timestamp { fsp: y }) => T::Timestamp { fsp: x.max(y) },
        _ if is_temporal(a) && is_temporal(b) => T::DateTime {
            fsp: fsp_of(a).max(fsp_of(b)),
        },
        _ => return None,
    })
}

/// The string type that holds values of both types.
fn string(a: SqlType, b: SqlType) -> SqlType {
    use SqlType as T;
    let binary_str = |t: SqlType| t.is_string() && !t.is_text();
    let binary = binary_str(a) || binary_str(b);
    let len = char_len(a).max(char_len(b));
    let is = |f: fn(SqlType) -> bool| f(a) || f(b);
    if is(|t| matches!(t, T::Text { .. })) {
        T::Text { max: len, binary }
    } else if is(|t| matches!(t, T::Char { .. })) && !is(|t| matches!(t, T::Varchar { .. })) {
        T::Char { len, binary }
    } else {
        T::Varchar { len, binary }
    }
}

/// The type of IF/IFNULL/COALESCE/CASE over operands of types `a` and `b`, and of a UNION
/// column over them.
pub fn for_result(a: OperandType, b: OperandType) -> OperandType {
    let (a, b) = match (a, b) {
        (None, x) | (x, None) => return x,
        (Some(a), Some(b)) => (a, b),
    };
    Some(
        numeric(a, b)
            .or_else(|| temporal(a, b))
            .unwrap_or_else(|| string(a, b)),
    )
}

/// [`for_result`] over any number of operands (`None` when all are NULL literals).
pub fn result_of(types: impl IntoIterator<Item = OperandType>) -> OperandType {
    types.into_iter().fold(None, for_result)
}

/// The type LEAST/GREATEST compare and return operands of types `a` and `b` in.
pub fn for_min_max(a: OperandType, b: OperandType) -> OperandType {
    // A NULL literal counts as an (empty) string here.
    const NULL_STRING: SqlType = SqlType::Varchar {
        len: 0,
        binary: false,
    };
    if a.is_none() && b.is_none() {
        return None;
    }
    let (a, b) = (a.unwrap_or(NULL_STRING), b.unwrap_or(NULL_STRING));
    if let Some(t) = numeric(a, b).or_else(|| temporal(a, b)) {
        return Some(t);
    }
    Some(if is_temporal(a) {
        a
    } else if is_temporal(b) {
        b
    } else if a.is_string() && b.is_string() {
        string(a, b)
    } else {
        SqlType::Double
    })
}

/// [`for_min_max`] over any number of operands (`None` when all are NULL literals).
pub fn min_max_of(types: impl IntoIterator<Item = OperandType>) -> OperandType {
    let mut it = types.into_iter();
    let first = it.next().flatten();
    it.fold(first, for_min_max)
}

/// Whether values of an operand of type `from` must be converted to print, compare and add up
/// as values of type `to` (integers print alike at every width, so they never need it).
pub fn needs_conversion(from: OperandType, to: SqlType) -> bool {
    use SqlType as T;
    let Some(from) = from else {
        return false;
    };
    match to {
        T::Int { .. } => false,
        T::Decimal { scale, .. } => !matches!(from, T::Decimal { scale: s, .. } if s == scale),
        T::Float | T::Double => !matches!(from, T::Float | T::Double),
        T::Date => from != T::Date,
        T::DateTime { .. } | T::Timestamp { .. } => {
            !matches!(from, T::DateTime { .. } | T::Timestamp { .. })
        }
        T::Char { binary, .. } | T::Varchar { binary, .. } | T::Text { binary, .. } => {
            !from.is_string() || (binary && from.is_text())
        }
    }
}

/// `v` as a value of type `to` (see [`needs_conversion`]). A value that does not read as a
/// temporal becomes the zero date with warning 1292, as MariaDB's LEAST(date_col, 'x') gives
/// `0000-00-00`.
pub fn conform(v: Value, to: SqlType) -> Value {
    use SqlType as T;
    if v.is_null() {
        return v;
    }
    match to {
        T::Int { .. } => v,
        T::Decimal { scale, .. } => match v.to_decimal().and_then(|d| d.rescale(scale)) {
            Some(d) => Value::Decimal(d),
            None => v,
        },
        T::Float | T::Double => Value::Double(v.to_f64().unwrap_or(0.0)),
        T::Date | T::DateTime { .. } | T::Timestamp { .. } => {
            let d = match crate::types::convert::temporal::to_datetime(&v) {
                Some(p) => DateTime::unpack(p),
                None => {
                    crate::types::diag::warn(crate::error::ErrorKind::TruncatedWrongValue, || {
                        let t = v.to_text().unwrap_or_default();
                        format!(
                            "Truncated incorrect datetime value: '{}'",
                            crate::types::diag::quoted(&t)
                        )
                    });
                    DateTime::default()
                }
            };
            if to == T::Date {
                Value::Date(d.date_part().pack())
            } else {
                Value::DateTime(d.pack())
            }
        }
        T::Char { binary, .. } | T::Varchar { binary, .. } | T::Text { binary, .. } => match v {
            Value::Str(s) if binary => Value::Bytes(s.into_bytes()),
            Value::Str(_) | Value::Bytes(_) => v,
            other if binary => Value::Bytes(other.to_text().unwrap_or_default()),
            other => Value::Str(other.to_string_lossy().unwrap_or_default()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::decimal::Decimal;
    use SqlType as T;

    const TINY: T = T::Int {
        bytes: 1,
        unsigned: false,
    };
    const UTINY: T = T::Int {
        bytes: 1,
        unsigned: true,
    };
    const INT: T = T::Int {
        bytes: 4,
        unsigned: false,
    };
    const UINT: T = T::Int {
        bytes: 4,
        unsigned: true,
    };
    const BIGINT: T = T::Int {
        bytes: 8,
        unsigned: false,
    };
    const UBIGINT: T = T::Int {
        bytes: 8,
        unsigned: true,
    };
    const VC: T = T::Varchar {
        len: 10,
        binary: false,
    };
    const CH: T = T::Char {
        len: 5,
        binary: false,
    };

    fn dec(precision: u8, scale: u8) -> T {
        T::Decimal { precision, scale }
    }

    fn res(a: T, b: T) -> T {
        for_result(Some(a), Some(b)).expect("typed")
    }

    #[test]
    fn integers_widen_and_mixed_signedness_is_a_decimal() {
        assert_eq!(res(TINY, INT), INT);
        assert_eq!(res(UTINY, UINT), UINT);
        assert_eq!(res(TINY, UTINY), dec(3, 0));
        assert_eq!(res(INT, UINT), dec(10, 0));
        assert_eq!(res(BIGINT, UBIGINT), dec(20, 0));
        assert_eq!(res(UBIGINT, UBIGINT), UBIGINT);
    }

    #[test]
    fn decimals_take_the_largest_scale_and_integer_part() {
        assert_eq!(res(TINY, dec(5, 1)), dec(5, 1));
        assert_eq!(res(dec(5, 1), dec(10, 2)), dec(10, 2));
        assert_eq!(res(UBIGINT, dec(5, 1)), dec(21, 1));
        assert_eq!(res(dec(20, 0), dec(38, 10)), dec(38, 10));
        assert_eq!(res(dec(38, 0), dec(38, 30)), dec(65, 30));
    }

    #[test]
    fn reals_temporals_and_strings() {
        assert_eq!(res(TINY, T::Double), T::Double);
        assert_eq!(res(dec(5, 1), T::Float), T::Double);
        assert_eq!(res(T::Float, T::Float), T::Float);
        assert_eq!(res(T::Date, T::Date), T::Date);
        assert_eq!(res(T::Date, T::DateTime { fsp: 3 }), T::DateTime { fsp: 3 });
        assert!(res(T::Date, INT).is_string());
        assert!(res(T::DateTime { fsp: 0 }, T::Double).is_string());
        assert!(matches!(res(INT, VC), T::Varchar { binary: false, .. }));
        assert!(matches!(res(CH, INT), T::Char { .. }));
        assert!(matches!(res(CH, VC), T::Varchar { .. }));
        let bin = T::Varchar {
            len: 5,
            binary: true,
        };
        assert!(matches!(res(bin, CH), T::Varchar { binary: true, .. }));
        let text = T::Text {
            max: 65535,
            binary: false,
        };
        assert!(matches!(res(text, INT), T::Text { max: 65535, .. }));
    }

    #[test]
    fn null_literals_take_no_part_in_results() {
        assert_eq!(for_result(None, Some(TINY)), Some(TINY));
        assert_eq!(result_of([None, None]), None);
        assert_eq!(
            result_of([None, Some(TINY), Some(dec(5, 1))]),
            Some(dec(5, 1))
        );
    }

    #[test]
    fn least_and_greatest_compare_mixtures_as_numbers_or_temporals() {
        assert_eq!(min_max_of([Some(TINY), Some(dec(5, 1))]), Some(dec(5, 1)));
        assert_eq!(min_max_of([Some(TINY), Some(VC)]), Some(T::Double));
        assert_eq!(min_max_of([Some(T::Date), Some(VC)]), Some(T::Date));
        assert_eq!(min_max_of([Some(T::Date), Some(INT)]), Some(T::Date));
        assert_eq!(
            min_max_of([Some(VC), Some(CH)]).map(|t| t.is_string()),
            Some(true)
        );
        // A NULL literal is a string to LEAST: with a number, a DOUBLE.
        assert_eq!(min_max_of([Some(TINY), None]), Some(T::Double));
        assert_eq!(min_max_of([None, Some(TINY)]), Some(T::Double));
        assert_eq!(min_max_of([Some(T::Date), None]), Some(T::Date));
        assert_eq!(min_max_of([None, None]), None);
        assert_eq!(min_max_of([Some(INT), Some(UINT)]), Some(dec(10, 0)));
    }

    #[test]
    fn conversions_decide_how_values_print() {
        assert!(!needs_conversion(Some(TINY), INT));
        assert!(needs_conversion(Some(INT), dec(10, 1)));
        assert!(needs_conversion(Some(dec(5, 1)), dec(10, 2)));
        assert!(!needs_conversion(Some(dec(10, 2)), dec(12, 2)));
        assert!(!needs_conversion(None, dec(10, 2)));
        assert!(needs_conversion(Some(T::Date), T::DateTime { fsp: 0 }));
        assert!(!needs_conversion(Some(VC), CH));
        let text = |v: Value| String::from_utf8(v.to_text().expect("not null")).expect("utf8");
        assert_eq!(text(conform(Value::Int(4807), dec(5, 1))), "4807.0");
        assert_eq!(text(conform(Value::Int(-128), dec(8, 2))), "-128.00");
        let d = Value::Decimal(Decimal { mant: 15, scale: 1 });
        assert_eq!(text(conform(d.clone(), dec(10, 2))), "1.50");
        assert_eq!(text(conform(d, T::Double)), "1.5");
        assert_eq!(text(conform(Value::Str("abc".into()), T::Double)), "0");
        assert_eq!(text(conform(Value::Int(7), VC)), "7");
        assert!(matches!(conform(Value::Int(7), VC), Value::Str(_)));
        let date = Value::Date(DateTime::parse("2020-01-02").expect("date").pack());
        assert_eq!(
            text(conform(date, T::DateTime { fsp: 0 })),
            "2020-01-02 00:00:00"
        );
        assert_eq!(text(conform(Value::Int(-5), T::Date)), "0000-00-00");
        assert_eq!(text(conform(Value::Int(20200101), T::Date)), "2020-01-01");
        assert!(conform(Value::Null, dec(5, 1)).is_null());
    }
}
