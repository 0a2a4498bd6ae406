//! Evaluation of compiled expressions, and the walks over them: the columns an expression
//! reads, and moving its column references.

use std::cmp::Ordering;

use crate::expr::arith::{arith, bool_val, int_result};
use crate::expr::cast::cast;
use crate::expr::func::{ColumnDefault, Date};
use crate::expr::like::like;
use crate::expr::node::{Args, CastTo, Cmp, Ctx, Expr, Func, SubKind};
use crate::types::decimal::Decimal;
use crate::types::value::Value;
use crate::SqlError;

impl Expr {
    /// Renumbers every column reference (`Col(i)` becomes `Col(f(i))`). Join planning never
    /// moves a term with a subquery (see `has_subquery`), and `visit_mut` does not enter
    /// subqueries' plans: only IN's left side reads this row.
    pub fn map_columns(&mut self, f: &dyn Fn(usize) -> usize) {
        self.visit_mut(&mut |e| {
            if let Expr::Col(i) = e {
                *i = f(*i);
            }
        });
    }

    /// [`Expr::visit`] with mutable access, children before their parent.
    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match self {
            Expr::Col(_) | Expr::Const(_) | Expr::Param(_) | Expr::Outer(_) => {}
            Expr::Neg(x)
            | Expr::Not(x)
            | Expr::IsNull(x, _)
            | Expr::Cast(x, _)
            | Expr::Coerce(x, _) => x.visit_mut(f),
            Expr::Arith(_, a, b)
            | Expr::Cmp(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Xor(a, b)
            | Expr::Like(a, b, _, _) => {
                a.visit_mut(f);
                b.visit_mut(f);
            }
            Expr::Between(a, b, c, _) => {
                a.visit_mut(f);
                b.visit_mut(f);
                c.visit_mut(f);
            }
            Expr::InList(a, l, _) => {
                a.visit_mut(f);
                l.iter_mut().for_each(|x| x.visit_mut(f));
            }
            Expr::Case(o, w, e) => {
                if let Some(o) = o {
                    o.visit_mut(f);
                }
                for (a, b) in w {
                    a.visit_mut(f);
                    b.visit_mut(f);
                }
                if let Some(e) = e {
                    e.visit_mut(f);
                }
            }
            Expr::Func(_, args) => args.iter_mut().for_each(|x| x.visit_mut(f)),
            Expr::Subquery(_, SubKind::In(x, _) | SubKind::Quantified(x, _, _)) => x.visit_mut(f),
            Expr::Subquery(..) => {}
        }
        f(self);
    }

    /// `DEFAULT` as INSERT, UPDATE and LOAD DATA compile it: the column's default, which
    /// the statement substitutes.
    pub fn column_default() -> Expr {
        Expr::Func(Func::new(ColumnDefault), Vec::new())
    }

    /// Whether this is [`Expr::column_default`].
    pub fn is_column_default(&self) -> bool {
        matches!(self, Expr::Func(f, _) if f.is::<ColumnDefault>())
    }

    /// Whether the expression contains a subquery.
    pub fn has_subquery(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Subquery(..)));
        found
    }

    /// Whether the expression has the same value for every row of one execution: it reads no
    /// column of the query's rows and no subquery, and calls nothing volatile (RAND, SLEEP,
    /// UUID). An outer reference counts as fixed: a correlated subquery runs once per outer row.
    pub fn row_independent(&self) -> bool {
        let mut fixed = true;
        self.visit(&mut |e| {
            fixed &= !matches!(e, Expr::Col(_) | Expr::Subquery(..))
                && !matches!(e, Expr::Func(f, _) if f.volatile())
        });
        fixed
    }

    /// The value of an operand of a comparison. `DATE(x)` and `CAST(x AS DATE|DATETIME)` of a
    /// value that is not a date compare as the zero date there (`DATE('x') = DATE('y')` is
    /// true in MySQL), though they are NULL elsewhere (`DATE('x') IS NULL` is true too).
    #[inline]
    fn cmp_operand(&self, row: &[Value], ctx: &Ctx) -> Result<Value, SqlError> {
        // The kind is checked first: comparisons are hot, these operands rare.
        let (arg, zero) = match self {
            Expr::Func(f, args) if args.len() == 1 && f.is::<Date>() => (&args[0], Value::Date(0)),
            Expr::Cast(arg, CastTo::Date) => (&**arg, Value::Date(0)),
            Expr::Cast(arg, CastTo::DateTime(_)) => (&**arg, Value::DateTime(0)),
            _ => return self.eval(row, ctx),
        };
        let v = self.eval(row, ctx)?;
        if !v.is_null() {
            return Ok(v);
        }
        // Rare (a failed conversion): the argument is evaluated again to tell it from NULL.
        Ok(if arg.eval(row, ctx)?.is_null() {
            v
        } else {
            zero
        })
    }

    /// Calls `f` on this node and every node below it (not into subqueries' plans).
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Col(_) | Expr::Const(_) | Expr::Param(_) | Expr::Outer(_) => {}
            Expr::Neg(x)
            | Expr::Not(x)
            | Expr::IsNull(x, _)
            | Expr::Cast(x, _)
            | Expr::Coerce(x, _) => x.visit(f),
            Expr::Arith(_, a, b)
            | Expr::Cmp(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Xor(a, b)
            | Expr::Like(a, b, _, _) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Between(a, b, c, _) => {
                a.visit(f);
                b.visit(f);
                c.visit(f);
            }
            Expr::InList(a, l, _) => {
                a.visit(f);
                l.iter().for_each(|x| x.visit(f));
            }
            Expr::Case(o, w, e) => {
                if let Some(o) = o {
                    o.visit(f);
                }
                for (a, b) in w {
                    a.visit(f);
                    b.visit(f);
                }
                if let Some(e) = e {
                    e.visit(f);
                }
            }
            Expr::Func(_, args) => args.iter().for_each(|x| x.visit(f)),
            Expr::Subquery(_, SubKind::In(x, _) | SubKind::Quantified(x, _, _)) => x.visit(f),
            Expr::Subquery(..) => {}
        }
    }

    /// Whether the expression is a constant or a parameter (known before any row is read).
    pub fn is_constant(&self) -> bool {
        match self {
            Expr::Const(_) | Expr::Param(_) => true,
            Expr::Neg(x) | Expr::Cast(x, _) | Expr::Coerce(x, _) => x.is_constant(),
            Expr::Arith(_, a, b) => a.is_constant() && b.is_constant(),
            _ => false,
        }
    }

    pub fn eval(&self, row: &[Value], ctx: &Ctx) -> Result<Value, SqlError> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Param(i) => ctx
                .params
                .get(*i)
                .cloned()
                .ok_or_else(|| SqlError::internal("parameter missing"))?,
            Expr::Col(i) => row
                .get(*i)
                .cloned()
                .ok_or_else(|| SqlError::internal("column out of range"))?,
            Expr::Neg(x) => match x.eval(row, ctx)? {
                Value::Null => Value::Null,
                Value::Int(i) => match i.checked_neg() {
                    Some(n) => Value::Int(n),
                    // A constant (`-(-9223372036854775808)`) widens to DECIMAL, as MySQL types
                    // such literals; a column's BIGINT minimum negated is out of range.
                    None if x.is_constant() => Value::Decimal(Decimal {
                        mant: -i128::from(i),
                        scale: 0,
                    }),
                    None => return Err(SqlError::value_out_of_range("BIGINT")),
                },
                Value::UInt(u) => int_result(-i128::from(u))?,
                Value::Decimal(d) => Value::Decimal(Decimal {
                    mant: -d.mant,
                    scale: d.scale,
                }),
                v => Value::Double(-v.to_f64().unwrap_or(0.0)),
            },
            Expr::Not(x) => bool_val(x.eval(row, ctx)?.truth().map(|t| !t)),
            Expr::Arith(op, a, b) => arith(*op, a.eval(row, ctx)?, b.eval(row, ctx)?)?,
            Expr::Cmp(op, a, b) => {
                let x = a.cmp_operand(row, ctx)?;
                // A NULL left side decides the comparison without the right one, which MariaDB
                // then never evaluates (nor fails on: `NULL < big DIV 0.5`).
                if x.is_null() && *op != Cmp::NullSafeEq {
                    return Ok(Value::Null);
                }
                let y = b.cmp_operand(row, ctx)?;
                if *op == Cmp::NullSafeEq {
                    return Ok(bool_val(Some(x.group_eq(&y))));
                }
                bool_val(x.sql_cmp(&y).map(|o| match op {
                    Cmp::Eq => o == Ordering::Equal,
                    Cmp::Ne => o != Ordering::Equal,
                    Cmp::Lt => o == Ordering::Less,
                    Cmp::Le => o != Ordering::Greater,
                    Cmp::Gt => o == Ordering::Greater,
                    Cmp::Ge => o != Ordering::Less,
                    Cmp::NullSafeEq => unreachable!("handled above"),
                }))
            }
            Expr::And(a, b) => {
                let x = a.eval(row, ctx)?.truth();
                if x == Some(false) {
                    return Ok(Value::Int(0));
                }
                let y = b.eval(row, ctx)?.truth();
                bool_val(match (x, y) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Expr::Or(a, b) => {
                let x = a.eval(row, ctx)?.truth();
                if x == Some(true) {
                    return Ok(Value::Int(1));
                }
                let y = b.eval(row, ctx)?.truth();
                bool_val(match (x, y) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
            Expr::Xor(a, b) => {
                // NULL on the left decides the result: the right side is not evaluated (nor
                // are its warnings raised), as in MySQL.
                let Some(p) = a.eval(row, ctx)?.truth() else {
                    return Ok(Value::Null);
                };
                bool_val(b.eval(row, ctx)?.truth().map(|q| p != q))
            }
            Expr::IsNull(x, neg) => bool_val(Some(x.eval(row, ctx)?.is_null() != *neg)),
            Expr::Between(x, lo, hi, neg) => {
                let mut v = x.cmp_operand(row, ctx)?;
                let (l, h) = (lo.cmp_operand(row, ctx)?, hi.cmp_operand(row, ctx)?);
                if matches!(v, Value::Str(_) | Value::Bytes(_)) && l.is_numeric() && h.is_numeric()
                {
                    // Read the string as a number once (one warning if it is not one), as
                    // MySQL does, rather than once per bound.
                    v = v.to_f64().map_or(Value::Null, Value::Double);
                }
                let ge = v.sql_cmp(&l).map(|o| o != Ordering::Less);
                let le = v.sql_cmp(&h).map(|o| o != Ordering::Greater);
                let r = match (ge, le) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                bool_val(r.map(|t| t != *neg))
            }
            Expr::InList(x, list, neg) => {
                let v = x.cmp_operand(row, ctx)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                let mut found = false;
                for e in list {
                    let w = e.cmp_operand(row, ctx)?;
                    match v.sql_cmp(&w) {
                        Some(Ordering::Equal) => {
                            found = true;
                            break;
                        }
                        None => saw_null = true,
                        _ => {}
                    }
                }
                bool_val(if found {
                    Some(!*neg)
                } else if saw_null {
                    None
                } else {
                    Some(*neg)
                })
            }
            Expr::Like(x, p, esc, neg) => {
                // A column and a constant pattern (the usual case) are read where they lie:
                // no copy of either per row.
                let (xv, pv);
                let v = match &**x {
                    Expr::Col(i) if *i < row.len() => &row[*i],
                    e => {
                        xv = e.eval(row, ctx)?;
                        &xv
                    }
                };
                let pat = match &**p {
                    Expr::Const(c) => c,
                    e => {
                        pv = e.eval(row, ctx)?;
                        &pv
                    }
                };
                if v.is_null() || pat.is_null() {
                    return Ok(Value::Null);
                }
                let ci = !matches!(v, Value::Bytes(_)) && !matches!(pat, Value::Bytes(_));
                bool_val(Some(like(&text_of(v), &text_of(pat), *esc, ci) != *neg))
            }
            Expr::Case(op, whens, els) => {
                let subject = match op {
                    Some(o) => Some(o.eval(row, ctx)?),
                    None => None,
                };
                for (w, r) in whens {
                    let c = w.eval(row, ctx)?;
                    let hit = match &subject {
                        Some(s) => s.sql_cmp(&c) == Some(Ordering::Equal),
                        None => c.truth() == Some(true),
                    };
                    if hit {
                        return r.eval(row, ctx);
                    }
                }
                match els {
                    Some(e) => e.eval(row, ctx)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(x, to) => cast(x.eval(row, ctx)?, to)?,
            Expr::Coerce(x, ty) => crate::types::typeagg::conform(x.eval(row, ctx)?, *ty),
            Expr::Func(f, args) => f.eval(&Args::new(args, row, ctx))?,
            Expr::Outer(i) => ctx
                .outer
                .get(*i)
                .cloned()
                .ok_or_else(|| SqlError::internal("outer column out of range"))?,
            Expr::Subquery(sub, kind) => ctx
                .sub
                .ok_or_else(|| SqlError::internal("a subquery outside a transaction"))?
                .eval(sub, kind, row, ctx)?,
        })
    }

    /// WHERE semantics: only TRUE passes.
    pub fn test(&self, row: &[Value], ctx: &Ctx) -> Result<bool, SqlError> {
        Ok(self.eval(row, ctx)?.truth() == Some(true))
    }
}

/// A value as text for LIKE, borrowed when it is text already (as `to_string_lossy` reads
/// it otherwise).
fn text_of(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::Str(s) => std::borrow::Cow::Borrowed(s),
        Value::Bytes(b) => String::from_utf8_lossy(b),
        other => std::borrow::Cow::Owned(other.to_string_lossy().unwrap_or_default()),
    }
}

/// Column positions an expression reads.
pub fn mark_columns(e: &Expr, out: &mut [bool]) {
    let mut mark = |i: usize| {
        if let Some(w) = out.get_mut(i) {
            *w = true;
        }
    };
    e.visit(&mut |x| match x {
        Expr::Col(i) => mark(*i),
        // A correlated subquery reads these columns of this row.
        Expr::Subquery(sub, _) => sub.outer_cols.iter().for_each(|&c| mark(c)),
        _ => {}
    });
}

/// The columns an expression reads, as positions in the joined row.
pub fn columns_of(e: &Expr, width: usize) -> Vec<usize> {
    let mut m = vec![false; width];
    mark_columns(e, &mut m);
    m.iter()
        .enumerate()
        .filter_map(|(i, &b)| b.then_some(i))
        .collect()
}

/// `e` with every column reference moved by `-by` (joined row to one table's own row).
pub fn shift_columns(e: &Expr, by: usize) -> Expr {
    let mut x = e.clone();
    x.map_columns(&|i| i - by);
    x
}
