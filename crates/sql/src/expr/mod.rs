//! Expressions: compiled once from the parser's AST into [`Expr`] (by
//! `crate::bind::compile`: columns resolved to row positions, `?` to parameter slots), then
//! evaluated per row.
//!
//! This file defines nothing: it declares the parts, re-exports their public items and holds
//! the unit tests of whole expressions. The parts: [`Expr`], its operators, the scalar-function interface and the evaluation context (`node`), the
//! evaluation context (`ctx`), evaluation ([`eval`]), typing (`typing`), arithmetic (`arith`),
//! LIKE (`like`), CAST (`cast`) and the scalar functions (`func`, with the helpers of
//! [`builtins`]). They import each other's items from the files that define them, so that no
//! file imports its parent (a cycle for crates/sql/tests/layers.rs).

mod arith;
pub mod builtins;
mod cast;
pub(crate) mod eval;
mod func;
mod like;
mod node;
#[cfg(test)]
mod number_golden;
mod typing;

pub use self::cast::{cast, fmt_double};
pub(crate) use self::func::{lookup, DateAdd, IsNull, Now, TimestampDiff};
pub use self::like::{like, text_cmp};
pub use self::node::{
    Arith, Arity, CastTo, Cmp, Ctx, Expr, Func, ScalarFunction, SubKind, SubqueryId, SubqueryRef,
    SubqueryRunner,
};
pub use self::typing::value_type;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bind::compile::{Compiler, Scope};
    use crate::expr::arith::arith;
    use crate::expr::builtins::Unit;
    use crate::types::convert::temporal::number_to_datetime;
    use crate::types::decimal::Decimal;
    use crate::types::sqltype::SqlType;
    use crate::types::temporal::DateTime;
    use crate::types::value::Value;
    use crate::SqlError;

    fn call(f: Func, args: Vec<Value>) -> Value {
        let ctx = Ctx {
            now: DateTime::parse("2024-02-29 13:14:15.25").unwrap().pack(),
            user: "root@localhost",
            conn_id: 1,
            version: "test",
            ..Ctx::detached()
        };
        let args = args.into_iter().map(Expr::Const).collect();
        Expr::Func(f, args).eval(&[], &ctx).unwrap()
    }

    fn text(v: Value) -> String {
        String::from_utf8(v.to_text().unwrap()).unwrap()
    }

    #[test]
    fn new_functions_propagate_null() {
        let s = |x: &str| Value::Str(x.into());
        for (f, args) in [
            (lookup("REPEAT").unwrap(), vec![Value::Null, Value::Int(2)]),
            (lookup("LPAD").unwrap(), vec![s("a"), Value::Null, s("x")]),
            (lookup("LOCATE").unwrap(), vec![s("a"), Value::Null]),
            (
                lookup("SUBSTRING_INDEX").unwrap(),
                vec![s("a.b"), s("."), Value::Null],
            ),
            (
                lookup("TRUNCATE").unwrap(),
                vec![Value::Int(1), Value::Null],
            ),
            (lookup("LOG").unwrap(), vec![Value::Int(2), Value::Null]),
            (
                Func::new(DateAdd {
                    unit: Unit::Month,
                    sub: false,
                }),
                vec![Value::Null, Value::Int(1)],
            ),
            (
                Func::new(DateAdd {
                    unit: Unit::Day,
                    sub: true,
                }),
                vec![s("2024-01-01"), Value::Null],
            ),
            (
                lookup("DATEDIFF").unwrap(),
                vec![s("2024-01-01"), Value::Null],
            ),
            (
                lookup("DATE_FORMAT").unwrap(),
                vec![s("2024-01-01"), Value::Null],
            ),
            (lookup("MD5").unwrap(), vec![Value::Null]),
            (lookup("CRC32").unwrap(), vec![Value::Null]),
            (lookup("ELT").unwrap(), vec![Value::Null, s("a")]),
        ] {
            assert!(call(f.clone(), args).is_null(), "{f:?}");
        }
        assert_eq!(
            text(call(lookup("ISNULL").unwrap(), vec![Value::Null])),
            "1"
        );
        assert_eq!(
            text(call(
                lookup("FIELD").unwrap(),
                vec![Value::Null, Value::Null]
            )),
            "0"
        );
    }

    #[test]
    fn date_arithmetic_keeps_the_argument_kind() {
        let s = |x: &str| Value::Str(x.into());
        let date = Value::Date(DateTime::parse("2024-01-31").unwrap().pack());
        let r = call(
            Func::new(DateAdd {
                unit: Unit::Month,
                sub: false,
            }),
            vec![date.clone(), Value::Int(1)],
        );
        assert!(matches!(r, Value::Date(_)));
        assert_eq!(text(r), "2024-02-29");
        let r = call(
            Func::new(DateAdd {
                unit: Unit::Hour,
                sub: false,
            }),
            vec![date, Value::Int(-1)],
        );
        assert!(matches!(r, Value::DateTime(_)));
        assert_eq!(text(r), "2024-01-30 23:00:00");
        let r = call(
            Func::new(DateAdd {
                unit: Unit::Year,
                sub: true,
            }),
            vec![s("2024-02-29"), Value::Int(-4)],
        );
        assert_eq!(text(r), "2028-02-29");
        let r = call(
            Func::new(DateAdd {
                unit: Unit::Day,
                sub: false,
            }),
            vec![s("2024-02-28 10:00:00"), Value::Int(1)],
        );
        assert_eq!(text(r), "2024-02-29 10:00:00");
        let r = call(
            Func::new(DateAdd {
                unit: Unit::Microsecond,
                sub: false,
            }),
            vec![s("2024-01-01"), Value::Int(1)],
        );
        assert_eq!(text(r), "2024-01-01 00:00:00.000001");
        let r = call(
            lookup("LPAD").unwrap(),
            vec![s("wörld"), Value::Int(8), s("é")],
        );
        assert_eq!(text(r), "éééwörld");
        let r = call(
            lookup("SUBSTRING_INDEX").unwrap(),
            vec![s("wörld.ü.x"), s("."), Value::Int(-2)],
        );
        assert_eq!(text(r), "ü.x");
    }

    #[test]
    fn huge_and_fractional_counts_do_not_panic_and_round_like_mariadb() {
        let s = |x: &str| Value::Str(x.into());
        // 2.5 rounds to 2 (half to even), as MariaDB's rint() does.
        assert_eq!(
            text(call(
                lookup("REPEAT").unwrap(),
                vec![s("ab"), Value::Double(2.5)]
            )),
            "abab"
        );
        assert!(call(
            lookup("MAKEDATE").unwrap(),
            vec![Value::Int(2024), Value::Int(i64::MAX)]
        )
        .is_null());
        assert!(call(
            lookup("REPEAT").unwrap(),
            vec![s("ab"), Value::Int(i64::MAX)]
        )
        .is_null());
        assert!(call(lookup("SPACE").unwrap(), vec![Value::UInt(u64::MAX)])
            .to_text()
            .unwrap()
            .is_empty());
        assert!(call(
            Func::new(DateAdd {
                unit: Unit::Year,
                sub: false
            }),
            vec![s("2024-01-01"), Value::Int(i64::MAX)]
        )
        .is_null());
        assert!(call(
            lookup("FROM_UNIXTIME").unwrap(),
            vec![Value::Double(f64::MAX)]
        )
        .is_null());
        // The count is kept in 32 bits: 4294967295 is -1.
        assert_eq!(
            text(call(
                lookup("SUBSTRING_INDEX").unwrap(),
                vec![s("a.b.c"), s("."), Value::UInt(4_294_967_295)]
            )),
            "c"
        );
    }

    #[test]
    fn clock_and_random_functions_have_their_formats() {
        assert_eq!(text(call(lookup("CURTIME").unwrap(), vec![])), "13:14:15");
        assert_eq!(
            text(call(lookup("NOW").unwrap(), vec![])),
            "2024-02-29 13:14:15"
        );
        assert_eq!(text(call(lookup("CURDATE").unwrap(), vec![])), "2024-02-29");
        assert_eq!(
            text(call(lookup("UNIX_TIMESTAMP").unwrap(), vec![])),
            "1709212455"
        );
        let u = text(call(lookup("UUID").unwrap(), vec![]));
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(u.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert!(parts[2].starts_with('1'));
        assert_ne!(u, text(call(lookup("UUID").unwrap(), vec![])));
        for _ in 0..100 {
            let r = call(lookup("RAND").unwrap(), vec![]).to_f64().unwrap();
            assert!((0.0..1.0).contains(&r));
        }
        assert_eq!(
            text(call(lookup("SLEEP").unwrap(), vec![Value::Int(0)])),
            "0"
        );
    }

    #[test]
    fn decimal_arithmetic_types_have_the_scale_of_their_values() {
        // DECIMAL(10,2) * INT is DECIMAL(.., 2): SUM(price * qty) prints 346.30, as in MySQL.
        let dec = |scale| SqlType::Decimal {
            precision: 10,
            scale,
        };
        let int = SqlType::Int {
            bytes: 4,
            unsigned: false,
        };
        let types = [dec(2), int, dec(3)];
        let row = |i: usize| types.get(i).copied();
        let col = |i| Box::new(Expr::Col(i));
        let scale_of = |op, a, b| match Expr::Arith(op, col(a), col(b)).result_type(&row) {
            SqlType::Decimal { scale, .. } => scale,
            t => panic!("{t:?}"),
        };
        assert_eq!(scale_of(Arith::Mul, 0, 1), 2);
        assert_eq!(scale_of(Arith::Mul, 0, 2), 5);
        assert_eq!(scale_of(Arith::Add, 0, 2), 3);
        assert_eq!(scale_of(Arith::Sub, 1, 0), 2);
        assert_eq!(scale_of(Arith::Div, 0, 1), 6);
        assert_eq!(scale_of(Arith::Div, 1, 1), 4);
        // The values agree.
        let d = |s: &str| Decimal::parse(s).unwrap();
        assert_eq!(d("1.10").mul(d("2")).unwrap().scale, 2);
        assert_eq!(d("1.10").div(d("2")).unwrap().scale, 6);
    }

    /// A scope over columns `a` (TINYINT), `u` (TINYINT UNSIGNED), `d` (DECIMAL(5,1)),
    /// `f` (DOUBLE), `s` (VARCHAR(10)), `dt` (DATE) and `ts` (DATETIME).
    struct Typed;

    const TYPED: [(&str, SqlType); 7] = [
        (
            "a",
            SqlType::Int {
                bytes: 1,
                unsigned: false,
            },
        ),
        (
            "u",
            SqlType::Int {
                bytes: 1,
                unsigned: true,
            },
        ),
        (
            "d",
            SqlType::Decimal {
                precision: 5,
                scale: 1,
            },
        ),
        ("f", SqlType::Double),
        (
            "s",
            SqlType::Varchar {
                len: 10,
                binary: false,
            },
        ),
        ("dt", SqlType::Date),
        ("ts", SqlType::DateTime { fsp: 0 }),
    ];

    impl Scope for Typed {
        fn column(&mut self, _q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
            TYPED
                .iter()
                .position(|(n, _)| *n == name)
                .map(Expr::Col)
                .ok_or_else(|| SqlError::unknown_column(name, "field list"))
        }
        fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
            Err(SqlError::unknown_column(name, "field list"))
        }
        fn col_type(&self, i: usize) -> Option<SqlType> {
            TYPED.get(i).map(|(_, t)| *t)
        }
    }

    /// `expr` compiled over [`Typed`]: its type and its value's text for `row`.
    fn typed(expr: &str, row: &[Value]) -> (Option<SqlType>, Option<String>) {
        let stmts = crate::front::parse::parse_ast(&format!("SELECT {expr}")).expect("parses");
        let sqlparser::ast::Statement::Query(q) = &stmts[0] else {
            panic!("not a query")
        };
        let sqlparser::ast::SetExpr::Select(sel) = &*q.body else {
            panic!("not a select")
        };
        let sqlparser::ast::SelectItem::UnnamedExpr(e) = &sel.projection[0] else {
            panic!("not an expression")
        };
        let x = Compiler::new().compile(e, &mut Typed).expect("compiles");
        let ctx = Ctx {
            user: "root@localhost",
            conn_id: 1,
            version: "test",
            ..Ctx::detached()
        };
        let ty = x.type_of(&|i| TYPED.get(i).map(|(_, t)| *t));
        let v = x.eval(row, &ctx).expect("evaluates");
        (ty, v.to_string_lossy())
    }

    #[test]
    fn control_flow_operands_take_the_type_of_the_whole() {
        let date = Value::Date(DateTime::parse("2020-01-02").unwrap().pack());
        let row = [
            Value::Int(-2),
            Value::UInt(200),
            Value::Null,
            Value::Double(1.25),
            Value::Str("abc".into()),
            date,
            Value::Null,
        ];
        let dec = |precision, scale| Some(SqlType::Decimal { precision, scale });
        let text = |e: &str| typed(e, &row).1;
        // An INT operand beside a DECIMAL one prints with its scale.
        assert_eq!(
            typed("IF(a, 6543.6, 4807)", &row),
            (dec(11, 1), Some("6543.6".into()))
        );
        assert_eq!(text("IF(a = 0, 6543.6, 4807)").as_deref(), Some("4807.0"));
        assert_eq!(
            text("CASE WHEN a = 0 THEN 1.5 ELSE a END").as_deref(),
            Some("-2.0")
        );
        assert_eq!(text("IFNULL(a, 999999.99)").as_deref(), Some("-2.00"));
        assert_eq!(text("COALESCE(d, a, 0.25)").as_deref(), Some("-2.00"));
        assert_eq!(text("LEAST(a, 9921.3)").as_deref(), Some("-2.0"));
        // Signed with unsigned: DECIMAL(n,0), printed as before.
        assert_eq!(typed("IF(a, a, u)", &row), (dec(3, 0), Some("-2".into())));
        // A DOUBLE makes a DOUBLE; a string a string; a DATE beside a DATETIME a DATETIME.
        assert_eq!(text("IF(a = 0, 1.50, f)").as_deref(), Some("1.25"));
        assert_eq!(text("IF(a, 1.50, f)").as_deref(), Some("1.5"));
        assert!(matches!(
            typed("IF(a, a, s)", &row).0,
            Some(SqlType::Varchar { .. })
        ));
        assert_eq!(
            text("IF(a, dt, ts)").as_deref(),
            Some("2020-01-02 00:00:00")
        );
        // LEAST of a number and a string compares and returns doubles.
        assert_eq!(
            typed("LEAST(a, s)", &row),
            (Some(SqlType::Double), Some("-2".into()))
        );
        assert_eq!(text("GREATEST(a, s)").as_deref(), Some("0"));
        // NULL literals take no part; NULLIF keeps its first operand's type.
        assert_eq!(typed("IF(a, NULL, 1.5)", &row).0, dec(2, 1));
        assert_eq!(typed("COALESCE(NULL, NULL)", &row).0, None);
        assert_eq!(typed("NULLIF(a, 1.5)", &row).0, TYPED[0].1.into());
        // Integer literals up to nine characters are INTs.
        assert_eq!(
            typed("IF(a, a, 5)", &row).0,
            Some(SqlType::Int {
                bytes: 4,
                unsigned: false
            })
        );
    }

    #[test]
    fn numbers_read_as_dates_by_their_magnitude() {
        let d = |n: i128| number_to_datetime(n).map(|d| d.format(0));
        assert_eq!(d(20000101).as_deref(), Some("2000-01-01 00:00:00"));
        assert_eq!(d(991231).as_deref(), Some("1999-12-31 00:00:00"));
        assert_eq!(d(691231).as_deref(), Some("2069-12-31 00:00:00"));
        assert_eq!(d(101).as_deref(), Some("2000-01-01 00:00:00"));
        assert_eq!(d(0).as_deref(), Some("0000-00-00 00:00:00"));
        assert_eq!(d(20000100).as_deref(), Some("2000-01-00 00:00:00"));
        assert_eq!(d(991231235959).as_deref(), Some("1999-12-31 23:59:59"));
        assert_eq!(d(20000101123456).as_deref(), Some("2000-01-01 12:34:56"));
        assert_eq!(d(200001011).as_deref(), Some("2000-02-00 00:10:11"));
        // 13 and 14 digits are YYYYMMDDHHMMSS with any year (MariaDB: 0100-01-01).
        assert_eq!(d(1000101000000).as_deref(), Some("0100-01-01 00:00:00"));
        assert_eq!(d(99991231235959).as_deref(), Some("9999-12-31 23:59:59"));
        assert_eq!(d(700101).as_deref(), Some("1970-01-01 00:00:00"));
        for bad in [
            // The gap between 2069 and 1970 in YYMMDD (MariaDB: NULL with 1292), and in
            // YYMMDDHHMMSS.
            700100,
            692000,
            700100000000,
            1,
            100,
            1232,
            1000101,
            100000101,
            20000230,
            20000101246060,
            -20000101,
        ] {
            assert_eq!(d(bad), None, "{bad}");
        }
        let cast_date = |v: Value| text(cast(v, &CastTo::Date).unwrap());
        assert_eq!(cast_date(Value::Int(991231)), "1999-12-31");
        assert_eq!(
            cast_date(Value::Decimal(Decimal::parse("20000101.9").unwrap())),
            "2000-01-01"
        );
        assert!(cast(Value::Double(1e7), &CastTo::Date).unwrap().is_null());
    }

    #[test]
    fn div_of_non_integers_is_exact() {
        let d = |s: &str| Value::Decimal(Decimal::parse(s).unwrap());
        let div = |a, b| text(arith(Arith::IntDiv, a, b).unwrap());
        assert_eq!(div(d("12345678901234567.5"), d("1")), "12345678901234567");
        assert_eq!(
            div(d("9999999999999999.99"), d("0.01")),
            "999999999999999999"
        );
        assert_eq!(div(d("-7.5"), d("2")), "-3");
        assert_eq!(div(Value::Double(0.3), Value::Double(0.1)), "3");
        assert_eq!(div(Value::Int(31), Value::Double(1e-5)), "3100000");
        assert_eq!(
            div(Value::Str("31".into()), Value::Str("0.00001".into())),
            "3100000"
        );
        for (a, b) in [
            (d("9223372036854775808.5"), d("1")),
            (Value::Double(1e300), Value::Int(1)),
        ] {
            assert_eq!(arith(Arith::IntDiv, a, b).unwrap_err().code(), 1690);
        }
        assert!(arith(Arith::IntDiv, d("1.5"), Value::Double(0.0))
            .unwrap()
            .is_null());
    }

    #[test]
    fn round_is_exact_for_exact_numbers_and_ties_to_even_for_doubles() {
        let round = |v: Value, p: i64| text(call(lookup("ROUND").unwrap(), vec![v, Value::Int(p)]));
        let d = |s: &str| Value::Decimal(Decimal::parse(s).unwrap());
        assert_eq!(round(Value::Int(5), -1), "10");
        assert_eq!(round(Value::Int(-15), -1), "-20");
        assert_eq!(round(Value::UInt(u64::MAX), -1), "18446744073709551620");
        assert_eq!(round(d("1249.5"), -2), "1200");
        assert_eq!(round(d("-1250.0"), -2), "-1300");
        assert_eq!(round(Value::Int(5), -20), "0");
        assert_eq!(round(Value::Double(0.5), 0), "0");
        assert_eq!(round(Value::Double(2.5), 0), "2");
        assert_eq!(round(Value::Double(-0.5), 0), "0");
        assert_eq!(round(Value::Double(1.25), 1), "1.2");
        assert_eq!(round(Value::Double(15.0), -1), "20");
        assert_eq!(round(Value::Double(25.0), -1), "20");
    }

    #[test]
    fn hex_of_a_number_is_of_the_integer_it_rounds_to() {
        let hex = |v: Value| text(call(lookup("HEX").unwrap(), vec![v]));
        let d = |s: &str| Value::Decimal(Decimal::parse(s).unwrap());
        assert_eq!(hex(d("297380.08")), "489A4");
        assert_eq!(hex(d("-11.00")), "FFFFFFFFFFFFFFF5");
        assert_eq!(hex(d("2.5")), "3");
        assert_eq!(hex(Value::Double(-1.5)), "FFFFFFFFFFFFFFFE");
        assert_eq!(hex(Value::Double(1e300)), "FFFFFFFFFFFFFFFF");
        assert_eq!(hex(Value::UInt(u64::MAX)), "FFFFFFFFFFFFFFFF");
        assert_eq!(hex(Value::Str("abc".into())), "616263");
    }
}
