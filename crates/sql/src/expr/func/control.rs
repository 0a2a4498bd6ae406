//! The functions that choose among their arguments (IF, COALESCE, NULLIF, GREATEST, LEAST),
//! ISNULL, and the column-default marker INSERT compiles `DEFAULT` to.

use std::cmp::Ordering;

use crate::expr::node::{Args, Arity, ScalarFunction, Typing};
use crate::expr::typing::{INT, TEXT};
use crate::types::sqltype::SqlType;
use crate::types::typeagg::{min_max_of, result_of};
use crate::types::value::Value;
use crate::SqlError;

/// COALESCE(a, ...), and IFNULL(a, b) (`ifnull`: its two arguments): the first argument
/// that is not NULL.
pub struct Coalesce {
    pub ifnull: bool,
}

impl ScalarFunction for Coalesce {
    fn name(&self) -> &'static str {
        if self.ifnull {
            "ifnull"
        } else {
            "coalesce"
        }
    }
    fn arity(&self) -> Arity {
        if self.ifnull {
            Arity::exactly(2)
        } else {
            Arity::at_least(1)
        }
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        result_of(call.types_from(0))
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        for i in 0..a.len() {
            let v = a.value(i)?;
            if !v.is_null() {
                return Ok(v);
            }
        }
        Ok(Value::Null)
    }
    fn first_result_operand(&self) -> Option<usize> {
        Some(0)
    }
}

/// NULLIF(a, b): NULL if they are equal, else `a`.
pub struct NullIf;

impl ScalarFunction for NullIf {
    fn name(&self) -> &'static str {
        "nullif"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        call.types_from(0).into_iter().next().flatten()
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let (x, y) = (a.value(0)?, a.value(1)?);
        Ok(if x.sql_cmp(&y) == Some(Ordering::Equal) {
            Value::Null
        } else {
            x
        })
    }
}

/// IF(cond, then, else): only the chosen branch is evaluated.
pub struct If;

impl ScalarFunction for If {
    fn name(&self) -> &'static str {
        "if"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        // IF of two NULLs is a (binary, empty) string to MariaDB, not the NULL type.
        Some(result_of(call.types_from(1)).unwrap_or(SqlType::Char {
            len: 0,
            binary: false,
        }))
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        if a.value(0)?.truth() == Some(true) {
            a.value(1)
        } else {
            a.value(2)
        }
    }
    fn first_result_operand(&self) -> Option<usize> {
        Some(1)
    }
}

/// GREATEST (`true`) and LEAST: NULL if any argument is.
pub struct Extreme {
    pub greatest: bool,
}

impl ScalarFunction for Extreme {
    fn name(&self) -> &'static str {
        if self.greatest {
            "greatest"
        } else {
            "least"
        }
    }
    fn arity(&self) -> Arity {
        Arity::at_least(2)
    }
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType> {
        min_max_of(call.types_from(0))
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let better = if self.greatest {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        let mut best = a.value(0)?;
        for i in 1..a.len() {
            let v = a.value(i)?;
            match v.sql_cmp(&best) {
                None => return Ok(Value::Null),
                Some(o) if o == better => best = v,
                Some(_) => {}
            }
        }
        Ok(best)
    }
    fn first_result_operand(&self) -> Option<usize> {
        Some(0)
    }
}

/// ISNULL(x): 1 or 0.
pub struct IsNull;

impl ScalarFunction for IsNull {
    fn name(&self) -> &'static str {
        "isnull"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(Value::Int(i64::from(a.value(0)?.is_null())))
    }
}

/// `DEFAULT` in an INSERT's VALUES or an UPDATE's SET, and a column LOAD DATA does not fill:
/// the column's default, which the statement substitutes (as a value alone it is NULL). Not a
/// name a query can call.
pub struct ColumnDefault;

impl ScalarFunction for ColumnDefault {
    fn name(&self) -> &'static str {
        "default"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, _: &Args<'_>) -> Result<Value, SqlError> {
        Ok(Value::Null)
    }
    fn explain(&self, _: &[String]) -> String {
        "DEFAULT".to_string()
    }
}
