//! A rewrite of WHERE conditions: `IS NULL` on a NOT NULL DATE or DATETIME column finds the
//! zero dates stored there. A pass over a query block's plan or an UPDATE's or DELETE's
//! ([`zero_dates_are_null`]), which applies the expression's rewrite
//! ([`zero_dates_are_null_in`]).

use crate::catalog::ColumnDef;
use crate::expr::{Cmp, Expr, IsNull};
use crate::plan::logical::node::LogicalPlan;
use crate::plan::rules::shape::from_side;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

/// Decides which `IS NULL` terms of a block's WHERE find zero dates (see
/// [`zero_dates_are_null_in`]): only a WHERE over one table, the Filter directly over the
/// block's only Scan or Derived (or an UPDATE's or DELETE's target), since over an outer join the NULLs of a missing row would
/// match as well. Runs before push-down, which puts such a Filter over a join's first table.
pub(crate) fn zero_dates_are_null(plan: &mut LogicalPlan) {
    let Some(from) = from_side(plan) else {
        return;
    };
    if let LogicalPlan::Filter { input, predicate } = from {
        if let LogicalPlan::Scan { table, .. } | LogicalPlan::Derived { table, .. } = &**input {
            zero_dates_are_null_in(predicate, &table.def.columns);
        }
    }
}

/// MariaDB reads `col IS NULL` (or `ISNULL(col)`) as a term of a WHERE condition's AND/OR
/// tree as `col = '0000-00-00'` when `col` is a NOT NULL DATE or DATETIME: it is how the zero
/// dates IGNORE stores there are found. Under NOT or inside other expressions IS NULL stays
/// false for them. `columns`: the definitions of the row's columns (one table's).
pub fn zero_dates_are_null_in(e: &mut Expr, columns: &[ColumnDef]) {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            zero_dates_are_null_in(a, columns);
            zero_dates_are_null_in(b, columns);
        }
        Expr::IsNull(x, false) => {
            if let Expr::Col(i) = **x {
                if let Some(zero) = zero_date_of(columns.get(i)) {
                    *e = Expr::Cmp(Cmp::Eq, Box::new(Expr::Col(i)), Box::new(Expr::Const(zero)));
                }
            }
        }
        Expr::Func(f, args) if f.is::<IsNull>() => {
            if let [Expr::Col(i)] = args.as_slice() {
                let i = *i;
                if let Some(zero) = zero_date_of(columns.get(i)) {
                    *e = Expr::Cmp(Cmp::Eq, Box::new(Expr::Col(i)), Box::new(Expr::Const(zero)));
                }
            }
        }
        _ => {}
    }
}

fn zero_date_of(c: Option<&ColumnDef>) -> Option<Value> {
    let c = c?;
    if c.nullable {
        return None;
    }
    match c.ty {
        SqlType::Date => Some(Value::Date(0)),
        SqlType::DateTime { .. } => Some(Value::DateTime(0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INT: SqlType = SqlType::Int {
        bytes: 4,
        unsigned: false,
    };

    fn col(ty: SqlType, nullable: bool) -> ColumnDef {
        ColumnDef {
            name: "c".into(),
            ty,
            nullable,
            default: None,
            default_now: false,
            auto_increment: false,
            display_width: None,
        }
    }

    #[test]
    fn is_null_finds_zero_dates_of_not_null_date_columns_in_where_terms() {
        let cols = [
            col(SqlType::Date, false),
            col(SqlType::Date, true),
            col(INT, false),
        ];
        let is_null = |i: usize| Expr::IsNull(Box::new(Expr::Col(i)), false);
        let mut e = Expr::Or(Box::new(is_null(0)), Box::new(is_null(1)));
        zero_dates_are_null_in(&mut e, &cols);
        let Expr::Or(a, b) = &e else { panic!("{e:?}") };
        assert!(matches!(&**a, Expr::Cmp(Cmp::Eq, c, z)
            if matches!(**c, Expr::Col(0)) && matches!(**z, Expr::Const(Value::Date(0)))));
        assert!(matches!(&**b, Expr::IsNull(..)));
        // Under NOT it stays IS NULL; other types are left alone.
        let mut e = Expr::Not(Box::new(is_null(0)));
        zero_dates_are_null_in(&mut e, &cols);
        assert!(matches!(&e, Expr::Not(x) if matches!(**x, Expr::IsNull(..))));
        let mut e = is_null(2);
        zero_dates_are_null_in(&mut e, &cols);
        assert!(matches!(e, Expr::IsNull(..)));
    }
}
