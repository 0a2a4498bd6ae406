//! The scalar functions: one type per function (or per family sharing one body, such as
//! LTRIM/RTRIM), each implementing [`ScalarFunction`](crate::expr::node::ScalarFunction) —
//! its arity, return type and evaluation together — and found by name by [`lookup`].
//!
//! The parts: `string`, `math`, `control` (IF, COALESCE, ...), `temporal` (the clock and
//! date arithmetic), `parts` (YEAR, HOUR, WEEK, ...), `encode` (checksums and encodings),
//! `system` (the session's values, SLEEP, UUID); `args` holds what several of them share, and
//! `registry` the names.

mod args;
mod control;
mod encode;
mod math;
mod parts;
mod registry;
mod string;
mod system;
mod temporal;

pub(crate) use self::control::{ColumnDefault, IsNull};
pub(crate) use self::registry::lookup;
pub(crate) use self::temporal::{Date, DateAdd, Now, TimestampDiff};

#[cfg(test)]
mod tests {
    use super::control::{Coalesce, If};
    use super::registry::FUNCTIONS;
    use super::*;
    use crate::expr::builtins::Unit;
    use crate::expr::node::{Ctx, Expr, Func, Typing};
    use crate::types::value::Value;

    #[test]
    fn is_sees_the_function_behind_the_handle() {
        let f = lookup("IFNULL").unwrap();
        assert!(f.is::<Coalesce>() && !f.is::<If>());
        assert_eq!(f.name(), "ifnull");
        assert!(lookup("IF").unwrap().is::<If>());
        let d = Func::new(DateAdd {
            unit: Unit::Day,
            sub: true,
        });
        assert!(d.is::<DateAdd>() && !d.is::<TimestampDiff>());
        assert_eq!(format!("{d:?}"), "date_sub");
        assert!(Expr::column_default().is_column_default());
        assert!(!Expr::Func(lookup("NOW").unwrap(), vec![]).is_column_default());
    }

    #[test]
    fn names_are_unique_and_found() {
        for (i, (name, make)) in FUNCTIONS.iter().enumerate() {
            assert!(
                FUNCTIONS[..i].iter().all(|(n, _)| n != name),
                "{name} is listed twice"
            );
            assert_eq!(name.to_ascii_uppercase(), *name);
            let f = make();
            assert!(!f.name().is_empty());
            assert_eq!(f.name().to_ascii_lowercase(), f.name());
            assert_eq!(lookup(name).unwrap().name(), f.name());
            let a = f.arity();
            assert!(a.min <= a.max, "{name}");
        }
        assert!(lookup("NO_SUCH_FUNCTION").is_none());
        // The binder's names are not functions of their own.
        for name in [
            "MOD",
            "INSTR",
            "DATE_ADD",
            "TIMESTAMPDIFF",
            "default",
            "DEFAULT",
        ] {
            assert!(lookup(name).is_none(), "{name}");
        }
    }

    /// Every function at every arity it takes (up to three past its minimum), with NULL
    /// arguments: a value (NULL, except for those that say otherwise about NULL) and a type,
    /// never an error or a panic.
    #[test]
    fn every_function_takes_nulls() {
        // Functions whose value for NULL arguments is not NULL, or that ignore their argument.
        const NOT_NULL: &[&str] = &["isnull", "field", "sleep", "now", "curtime"];
        let ctx = Ctx::detached();
        let no_types = |_: usize| None;
        for (name, make) in FUNCTIONS {
            let f = make();
            let a = f.arity();
            for n in a.min..=a.max.min(a.min + 3) {
                let args = vec![Expr::Const(Value::Null); n];
                let _ = f.return_type(&Typing::new(&args, &no_types));
                if n == 0 {
                    continue;
                }
                let v = Expr::Func(f.clone(), args)
                    .eval(&[], &ctx)
                    .unwrap_or_else(|e| panic!("{name} of {n} NULLs: {e:?}"));
                if !NOT_NULL.contains(&f.name()) {
                    assert!(v.is_null(), "{name} of {n} NULLs is {v:?}");
                }
            }
        }
    }
}
