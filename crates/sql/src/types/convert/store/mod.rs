//! Storing a value in a column: MariaDB 10.11's `Field::store` conversions.
//!
//! [`convert`] turns any value into a column's type and says what was lost on the way, as a
//! list of [`Issue`]s: the value is always the one MariaDB stores when it goes on (clipped to
//! the type's range, cut at the column's length, a zero date for a bad date, the implicit
//! default for NULL in a NOT NULL column). Each issue knows both of its faces: the error a
//! strict statement fails with, and the warning an `IGNORE` statement reports instead. Notes
//! (rounding of decimals, trailing spaces cut off, the time of a DATE) are never errors.
//!
//! The rules were read off MariaDB 10.11 in its default `sql_mode` (`STRICT_TRANS_TABLES`,
//! no `NO_ZERO_DATE` / `NO_ZERO_IN_DATE`), value by value.

mod dtoa;
mod issue;
mod number;
mod string;
mod temporal;

use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::temporal::DateTime;
use crate::types::value::Value;

pub use self::issue::{Dest, Issue};
use self::number::to_decimal;
use self::number::to_double;
use self::number::to_int;
use self::string::to_string;
use self::string::StrKind;
use self::temporal::to_temporal;

/// The value a NOT NULL column takes when IGNORE stores NULL in it, or when a statement gives
/// it no value and it has no DEFAULT: zero, the empty string, the zero date.
pub fn implicit_default(ty: SqlType) -> Value {
    match ty {
        SqlType::Int { unsigned: true, .. } => Value::UInt(0),
        SqlType::Int { .. } => Value::Int(0),
        SqlType::Float | SqlType::Double => Value::Double(0.0),
        SqlType::Decimal { scale, .. } => Value::Decimal(Decimal { mant: 0, scale }),
        SqlType::Char { binary: true, .. }
        | SqlType::Varchar { binary: true, .. }
        | SqlType::Text { binary: true, .. } => Value::Bytes(Vec::new()),
        SqlType::Char { .. } | SqlType::Varchar { .. } | SqlType::Text { .. } => {
            Value::Str(String::new())
        }
        SqlType::Date => Value::Date(0),
        SqlType::DateTime { .. } | SqlType::Timestamp { .. } => Value::DateTime(0),
    }
}

/// Converts `v` for storage in a column of type `ty` (NULL allowed when `nullable`): the value
/// MariaDB stores, and what was lost.
pub fn convert(v: Value, ty: SqlType, nullable: bool) -> (Value, Vec<Issue>) {
    if v.is_null() {
        return if nullable {
            (Value::Null, Vec::new())
        } else {
            (implicit_default(ty), vec![Issue::Null])
        };
    }
    match ty {
        SqlType::Int { bytes, unsigned } => to_int(v, bytes, unsigned),
        SqlType::Float => to_double(v, true),
        SqlType::Double => to_double(v, false),
        SqlType::Decimal { precision, scale } => to_decimal(v, precision, scale),
        SqlType::Char { len, binary } => to_string(v, len, binary, StrKind::Char),
        SqlType::Varchar { len, binary } => to_string(v, len, binary, StrKind::Varchar),
        SqlType::Text { max, binary } => to_string(v, max, binary, StrKind::Text),
        SqlType::Date => to_temporal(v, None),
        SqlType::DateTime { fsp } => to_temporal(v, Some(fsp)),
        SqlType::Timestamp { fsp } => {
            let text = v.to_string_lossy().unwrap_or_default();
            let (v, mut issues) = to_temporal(v, Some(fsp));
            if let Value::DateTime(p) = v {
                let lo = DateTime::parse("1970-01-01 00:00:01").map_or(0, |d| d.pack());
                let hi = DateTime::parse("2038-01-19 03:14:08").map_or(0, |d| d.pack());
                if p != 0 && (p < lo || p >= hi) && !issues.iter().any(|i| !i.is_note()) {
                    issues = vec![Issue::TimestampRange { text }];
                    return (Value::DateTime(0), issues);
                }
            }
            (v, issues)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::dtoa::gcvt;
    use super::*;
    use crate::error::ErrorKind;

    fn conv(ty: SqlType, v: Value) -> (String, Vec<Issue>) {
        let (v, i) = convert(v, ty, false);
        (v.to_string_lossy().unwrap_or_else(|| "NULL".into()), i)
    }

    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }

    const INT: SqlType = SqlType::Int {
        bytes: 4,
        unsigned: false,
    };
    const UINT: SqlType = SqlType::Int {
        bytes: 4,
        unsigned: true,
    };
    const TINY: SqlType = SqlType::Int {
        bytes: 1,
        unsigned: false,
    };
    const DEC51: SqlType = SqlType::Decimal {
        precision: 5,
        scale: 1,
    };

    fn bad(kind: &'static str, text: &str) -> Issue {
        Issue::BadValue {
            kind,
            text: text.into(),
        }
    }

    #[test]
    fn strings_into_integers() {
        use Issue::*;
        assert_eq!(
            conv(INT, s("abc")),
            ("0".into(), vec![bad("integer", "abc")])
        );
        assert_eq!(conv(INT, s("")), ("0".into(), vec![bad("integer", "")]));
        assert_eq!(conv(INT, s("12abc")), ("12".into(), vec![Truncated]));
        assert_eq!(conv(INT, s("  12  ")), ("12".into(), vec![Note]));
        assert_eq!(conv(INT, s(" 12")), ("12".into(), vec![]));
        assert_eq!(conv(INT, s("1.5")), ("2".into(), vec![]));
        assert_eq!(conv(INT, s("-2.5")), ("-3".into(), vec![]));
        assert_eq!(conv(INT, s("1e3")), ("1000".into(), vec![]));
        assert_eq!(conv(INT, s("1e")), ("1".into(), vec![Truncated]));
        assert_eq!(conv(INT, s("0x10")), ("0".into(), vec![Truncated]));
        assert_eq!(
            conv(INT, s("1e20")),
            ("2147483647".into(), vec![OutOfRange])
        );
        assert_eq!(conv(TINY, s("300abc")), ("127".into(), vec![OutOfRange]));
        assert_eq!(conv(UINT, s("-0.4")), ("0".into(), vec![]));
        assert_eq!(conv(UINT, s("-0.5")), ("0".into(), vec![OutOfRange]));
    }

    #[test]
    fn numbers_into_integers() {
        use Issue::*;
        assert_eq!(conv(INT, Value::Double(2.5)), ("2".into(), vec![]));
        assert_eq!(conv(INT, Value::Double(3.5)), ("4".into(), vec![]));
        assert_eq!(
            conv(INT, Value::Decimal(Decimal { mant: 25, scale: 1 })),
            ("3".into(), vec![])
        );
        assert_eq!(
            conv(UINT, Value::Decimal(Decimal { mant: -4, scale: 1 })),
            ("0".into(), vec![OutOfRange])
        );
        assert_eq!(conv(UINT, Value::Double(-0.5)), ("0".into(), vec![]));
        assert_eq!(conv(UINT, Value::Int(-5)), ("0".into(), vec![OutOfRange]));
        // Field_long's double warning.
        assert_eq!(
            conv(UINT, Value::Double(1e10)),
            ("4294967295".into(), vec![OutOfRange, OutOfRange])
        );
        assert_eq!(
            conv(TINY, Value::Int(300)),
            ("127".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(
                INT,
                Value::Date(DateTime::parse("2020-01-01").unwrap().pack())
            ),
            ("20200101".into(), vec![])
        );
    }

    #[test]
    fn decimals_round_with_a_note() {
        use Issue::*;
        let d = |m: i128, sc: u8| Value::Decimal(Decimal { mant: m, scale: sc });
        assert_eq!(conv(DEC51, d(155, 2)), ("1.6".into(), vec![Note]));
        assert_eq!(conv(DEC51, d(-5, 2)), ("-0.1".into(), vec![Note]));
        assert_eq!(conv(DEC51, d(-4, 2)), ("0.0".into(), vec![Note]));
        assert_eq!(conv(DEC51, d(150, 2)), ("1.5".into(), vec![]));
        assert_eq!(
            conv(DEC51, Value::Int(123456)),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, d(999995, 2)),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, d(-999995, 2)),
            ("-9999.9".into(), vec![OutOfRange])
        );
        // Doubles go through their shortest digits: 1.45 rounds up.
        assert_eq!(conv(DEC51, Value::Double(1.45)), ("1.5".into(), vec![Note]));
        assert_eq!(
            conv(DEC51, Value::Double(1e300)),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, Value::Double(1e-300)),
            ("0.0".into(), vec![Note])
        );
        assert_eq!(conv(DEC51, s(" 1.55 ")), ("1.6".into(), vec![Note]));
        assert_eq!(conv(DEC51, s("12 ")), ("12.0".into(), vec![Note]));
        assert_eq!(
            conv(DEC51, s("1.55x")),
            ("1.6".into(), vec![Truncated, Note])
        );
        assert_eq!(
            conv(DEC51, s("123456abc")),
            ("9999.9".into(), vec![Truncated, OutOfRange])
        );
        assert_eq!(
            conv(DEC51, s("123456 ")),
            ("9999.9".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(DEC51, s("abc")),
            ("0.0".into(), vec![bad("decimal", "abc")])
        );
        assert_eq!(conv(DEC51, s("1e-2")), ("0.0".into(), vec![Note]));
    }

    #[test]
    fn doubles() {
        use Issue::*;
        assert_eq!(conv(SqlType::Double, s("1.5")), ("1.5".into(), vec![]));
        assert_eq!(conv(SqlType::Double, s("12 ")), ("12".into(), vec![Note]));
        assert_eq!(
            conv(SqlType::Double, s("1.5x")),
            ("1.5".into(), vec![Truncated])
        );
        assert_eq!(
            conv(SqlType::Double, s("inf")),
            ("0".into(), vec![bad("double", "inf")])
        );
        assert_eq!(
            conv(SqlType::Double, s("1e400x")),
            ("1.7976931348623157e308".into(), vec![OutOfRange])
        );
        assert_eq!(
            conv(SqlType::Float, Value::Double(1e300)).1,
            vec![OutOfRange]
        );
    }

    #[test]
    fn strings_cut_at_the_length() {
        use Issue::*;
        let vc = SqlType::Varchar {
            len: 3,
            binary: false,
        };
        let ch = SqlType::Char {
            len: 3,
            binary: false,
        };
        let vb = SqlType::Varchar {
            len: 3,
            binary: true,
        };
        assert_eq!(conv(vc, s("abcdef")), ("abc".into(), vec![TooLong]));
        assert_eq!(conv(vc, s("abc  ")), ("abc".into(), vec![Note]));
        assert_eq!(conv(vc, s("ab    ")), ("ab ".into(), vec![Note]));
        assert_eq!(conv(vc, s("abc\t")), ("abc".into(), vec![Note]));
        assert_eq!(conv(vc, s("abcd ")), ("abc".into(), vec![TooLong]));
        assert_eq!(conv(vc, Value::Int(12345)), ("123".into(), vec![TooLong]));
        assert_eq!(conv(vc, s("äöüß")), ("äöü".into(), vec![TooLong]));
        assert_eq!(conv(ch, s("abc  ")), ("abc".into(), vec![]));
        assert_eq!(conv(ch, s("abcd")), ("abc".into(), vec![TooLong]));
        assert_eq!(conv(vb, s("abc ")).1, vec![TooLong]);
        let tiny = SqlType::Text {
            max: 4,
            binary: false,
        };
        assert_eq!(conv(tiny, s("aaää")), ("aaä".into(), vec![TooLong]));
    }

    #[test]
    fn doubles_into_strings_fit_the_column_as_my_gcvt_prints_them() {
        let g = |x: f64, w: usize| gcvt(x, w);
        // What MariaDB 10.11 stores for these in VARCHAR(1..6); "!" is error 1406.
        let seen = [
            (0.012345, 1, "!"),
            (0.0012345, 1, "!"),
            (-0.012, 1, "!"),
            (123.456, 1, "!"),
            (99.96, 1, "!"),
            (0.5, 1, "!"),
            (1.5, 1, "2"),
            (0.15, 1, "!"),
            (0.00012, 1, "!"),
            (1.25e-10, 1, "!"),
            (-1.25e10, 1, "!"),
            (0.012345, 2, "0"),
            (0.0012345, 2, "0"),
            (-0.012, 2, "!"),
            (123.456, 2, "!"),
            (99.96, 2, "!"),
            (0.5, 2, "0"),
            (1.5, 2, "2"),
            (0.15, 2, "0"),
            (0.00012, 2, "!"),
            (1.25e-10, 2, "!"),
            (-1.25e10, 2, "!"),
            (0.012345, 3, "0"),
            (0.0012345, 3, "0"),
            (-0.012, 3, "0"),
            (123.456, 3, "123"),
            (99.96, 3, "100"),
            (0.5, 3, "0.5"),
            (1.5, 3, "1.5"),
            (0.15, 3, "0.1"),
            (0.00012, 3, "!"),
            (1.25e-10, 3, "!"),
            (-1.25e10, 3, "!"),
            (0.012345, 4, "0.01"),
            (0.0012345, 4, "!"),
            (-0.012, 4, "0"),
            (123.456, 4, "123"),
            (99.96, 4, "100"),
            (0.5, 4, "0.5"),
            (1.5, 4, "1.5"),
            (0.15, 4, "0.15"),
            (0.00012, 4, "!"),
            (1.25e-10, 4, "!"),
            (-1.25e10, 4, "!"),
            (0.012345, 5, "0.012"),
            (0.0012345, 5, "0.001"),
            (-0.012, 5, "-0.01"),
            (123.456, 5, "123.5"),
            (99.96, 5, "99.96"),
            (0.5, 5, "0.5"),
            (1.5, 5, "1.5"),
            (0.15, 5, "0.15"),
            (0.00012, 5, "1e-4"),
            (1.25e-10, 5, "!"),
            (-1.25e10, 5, "!"),
            (0.012345, 6, "0.0123"),
            (0.0012345, 6, "0.0012"),
            (-0.012, 6, "-0.012"),
            (123.456, 6, "123.46"),
            (99.96, 6, "99.96"),
            (0.5, 6, "0.5"),
            (1.5, 6, "1.5"),
            (0.15, 6, "0.15"),
            (0.00012, 6, "1.2e-4"),
            (1.25e-10, 6, "1e-10"),
            (-1.25e10, 6, "-1e10"),
        ];
        for (x, w, want) in seen {
            let (text, cut) = g(x, w);
            if want == "!" {
                assert!(cut, "{x} in {w}: {text}");
            } else {
                assert_eq!((text.as_str(), cut), (want, false), "{x} in {w}");
            }
        }
        assert_eq!(g(3.3333, 3), ("3.3".into(), false));
        assert_eq!(g(-2.25, 3), ("-2".into(), false));
        assert_eq!(g(-0.5, 3), ("0".into(), false));
        assert_eq!(g(1e10, 3), ("1e1".into(), true));
        assert_eq!(g(1e-5, 3), ("1e-".into(), true));
        assert_eq!(g(123456789.125, 3), ("1e8".into(), true));
        assert_eq!(g(123456789.125, 5), ("1.2e8".into(), false));
        assert_eq!(g(1e-5, 5), ("1e-5".into(), false));
        assert_eq!(g(3.3333, 5), ("3.333".into(), false));
        assert_eq!(g(1e300, 5), ("1e300".into(), false));
        assert_eq!(g(0.1 + 0.2, 30), ("0.30000000000000004".into(), false));
        assert_eq!(g(1.5e-7, 30), ("0.00000015".into(), false));
        assert_eq!(g(1e15, 30), ("1e15".into(), false));
        assert_eq!(g(100.0, 30), ("100".into(), false));
        assert_eq!(
            g(12345678901234567.0, 30),
            ("1.2345678901234568e16".into(), false)
        );
        assert_eq!(g(0.0, 3), ("0".into(), false));
        let vc = SqlType::Varchar {
            len: 3,
            binary: false,
        };
        assert_eq!(
            conv(vc, Value::Double(1e10)),
            ("1e1".into(), vec![Issue::TooLong])
        );
        assert_eq!(conv(vc, Value::Double(1.5)), ("1.5".into(), vec![]));
    }

    #[test]
    fn dates() {
        use Issue::*;
        let bd = |t: &str| BadTemporal {
            kind: "date",
            text: t.into(),
        };
        let bdt = |t: &str| BadTemporal {
            kind: "datetime",
            text: t.into(),
        };
        let dt = SqlType::DateTime { fsp: 0 };
        let d = SqlType::Date;
        assert_eq!(conv(d, s("xyz")), ("0000-00-00".into(), vec![bd("xyz")]));
        assert_eq!(
            conv(d, s("2020-02-30")),
            ("0000-00-00".into(), vec![bd("2020-02-30")])
        );
        assert_eq!(conv(d, s("2020-02-29")), ("2020-02-29".into(), vec![]));
        assert_eq!(conv(d, s("0000-00-00")), ("0000-00-00".into(), vec![]));
        assert_eq!(conv(d, s("2020-01-00")), ("2020-01-00".into(), vec![]));
        assert_eq!(
            conv(d, s("2020-01-01 10:11:12")),
            ("2020-01-01".into(), vec![Note])
        );
        assert_eq!(
            conv(d, s("2020-01-01 00:00:00.5")),
            ("2020-01-01".into(), vec![])
        );
        assert_eq!(conv(d, s("2020-01-01 ")), ("2020-01-01".into(), vec![]));
        assert_eq!(
            conv(d, s("2020-01-01abc")),
            ("2020-01-01".into(), vec![bd("2020-01-01abc")])
        );
        assert_eq!(conv(d, s("20-1-1")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("99-12-31")), ("1999-12-31".into(), vec![]));
        assert_eq!(conv(d, s("2020/01/01")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("20200101")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("200101")), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, s("2020")), ("0000-00-00".into(), vec![bd("2020")]));
        assert_eq!(conv(d, Value::Int(20200101)), ("2020-01-01".into(), vec![]));
        assert_eq!(conv(d, Value::Int(0)), ("0000-00-00".into(), vec![]));
        assert_eq!(conv(d, Value::Int(101)), ("2000-01-01".into(), vec![]));
        assert_eq!(conv(d, Value::Int(1)), ("0000-00-00".into(), vec![bd("1")]));
        assert_eq!(
            conv(d, Value::Double(1.5)),
            ("0000-00-00".into(), vec![bd("1.5")])
        );
        assert_eq!(
            conv(dt, s("2023-01-01 25:00:00")),
            (
                "0000-00-00 00:00:00".into(),
                vec![bdt("2023-01-01 25:00:00")]
            )
        );
        assert_eq!(
            conv(dt, s("2020-01-01 10:11:12.5")),
            ("2020-01-01 10:11:12".into(), vec![])
        );
        assert_eq!(
            conv(dt, s("2020-01-01 10:11:12.1234567")),
            ("2020-01-01 10:11:12".into(), vec![Note])
        );
        assert_eq!(
            conv(dt, s("2020-01-01 10:11")),
            ("2020-01-01 10:11:00".into(), vec![])
        );
        assert_eq!(
            conv(dt, Value::Int(20200101101112)),
            ("2020-01-01 10:11:12".into(), vec![])
        );
    }

    #[test]
    fn null_takes_the_implicit_default_in_not_null_columns() {
        assert_eq!(conv(INT, Value::Null), ("0".into(), vec![Issue::Null]));
        assert_eq!(
            conv(SqlType::Date, Value::Null),
            ("0000-00-00".into(), vec![Issue::Null])
        );
        let (v, i) = convert(Value::Null, INT, true);
        assert!(v.is_null() && i.is_empty());
    }

    #[test]
    fn issues_have_a_strict_and_a_lenient_face() {
        let d = Dest {
            db: "d",
            table: "t",
            column: "c",
            row: 2,
        };
        assert_eq!(Issue::TooLong.error(&d).code(), 1406);
        assert_eq!(Issue::TooLong.warning(&d).1, ErrorKind::WarnDataTruncated);
        let b = Issue::BadTemporal {
            kind: "date",
            text: "x".into(),
        };
        assert_eq!(b.error(&d).code(), 1292);
        assert_eq!(
            b.error(&d).message(),
            "Incorrect date value: 'x' for column `d`.`t`.`c` at row 2"
        );
        assert_eq!(b.warning(&d).1, ErrorKind::WarnDataTruncated);
        assert_eq!(Issue::Truncated.error(&d).code(), 1265);
        assert_eq!(Issue::Note.warning(&d).0, "Note");
        assert_eq!(
            Issue::Null.warning(&d),
            (
                "Warning",
                ErrorKind::BadNullError,
                "Column 'c' cannot be null".into()
            )
        );
        assert_eq!(
            bad("integer", "abc").warning(&d).2,
            "Incorrect integer value: 'abc' for column `d`.`t`.`c` at row 2"
        );
    }
}
