//! Expressions from the parser's AST: [`Compiler`] turns an `ast::Expr` into an [`Expr`],
//! numbering `?` placeholders and resolving names through a [`Scope`].

use sqlparser::ast;

use crate::error::ErrorKind;
use crate::expr::builtins::Unit;
use crate::expr::{
    cast, lookup, Arith, CastTo, Cmp, DateAdd, Expr, Func, SubKind, SubqueryId, SubqueryRef,
    TimestampDiff,
};
use crate::plan::select::{SelectPlan, Subquery};
use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

/// Resolves names while compiling.
pub trait Scope {
    /// A column reference (`qualifier.name` or `name`).
    fn column(&mut self, qualifier: Option<&str>, name: &str) -> Result<Expr, SqlError>;
    /// Called for every node before the default translation: lets the aggregate stage map
    /// aggregate calls and GROUP BY expressions to slots.
    fn intercept(&mut self, _c: &mut Compiler, _e: &ast::Expr) -> Result<Option<Expr>, SqlError> {
        Ok(None)
    }
    /// A system variable (`@@name`), resolved at compile time.
    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError>;
    /// The type of `Col(i)` in the rows the expression reads, where the scope knows it: what
    /// IF, CASE, LEAST and the like need to type themselves (see [`crate::types::typeagg`]).
    fn col_type(&self, _i: usize) -> Option<SqlType> {
        None
    }
    /// A subquery in an expression, compiled (and added to `c`'s table with
    /// [`Compiler::add_subquery`]) where the scope allows one.
    fn subquery(&mut self, _c: &mut Compiler, _q: &ast::Query) -> Result<SubqueryRef, SqlError> {
        Err(SqlError::unsupported("subqueries here"))
    }
}

/// Compiles expressions, numbering `?` placeholders by their position in the text.
#[derive(Clone, Debug)]
pub struct Compiler {
    /// (line, column) of each placeholder met, in compile order.
    placeholders: Vec<(u64, u64)>,
    /// The statement's subqueries compiled so far, indexed by [`SubqueryId`] (a plan that
    /// saw one needs a transaction to share); the plan root takes them at the end.
    subqueries: Vec<Subquery>,
}

impl Default for Compiler {
    fn default() -> Self {
        Self::new()
    }
}

impl Compiler {
    pub fn new() -> Compiler {
        Compiler {
            placeholders: Vec::new(),
            subqueries: Vec::new(),
        }
    }

    /// How many subqueries have been compiled so far.
    pub fn subquery_count(&self) -> usize {
        self.subqueries.len()
    }

    /// Adds a compiled subquery to the statement's table; what the expression holds.
    pub fn add_subquery(&mut self, plan: SelectPlan, outer_cols: Vec<usize>) -> SubqueryRef {
        let ty = plan.types.first().copied().unwrap_or(SqlType::Varchar {
            len: 255,
            binary: false,
        });
        let id = SubqueryId(self.subqueries.len());
        self.subqueries.push(Subquery { plan });
        SubqueryRef { id, outer_cols, ty }
    }

    /// The statement's subqueries, for its plan root.
    pub fn take_subqueries(&mut self) -> Vec<Subquery> {
        std::mem::take(&mut self.subqueries)
    }

    /// How many columns subquery `sub`'s rows show.
    fn sub_visible(&self, sub: &SubqueryRef) -> usize {
        self.subqueries[sub.id.0].plan.visible
    }

    /// Compiles `e` with its `?` placeholders numbered on their own, from 0 (as a fresh
    /// compiler numbers them), while its subqueries join the statement's table.
    pub fn compile_apart(
        &mut self,
        e: &ast::Expr,
        scope: &mut dyn Scope,
    ) -> Result<Expr, SqlError> {
        let saved = std::mem::take(&mut self.placeholders);
        let r = self.compile(e, scope);
        self.placeholders = saved;
        r
    }

    pub fn param_count(&self) -> usize {
        self.placeholders.len()
    }

    /// For each placeholder slot (in compile order), the index of the client's parameter
    /// (placeholders in text order).
    pub fn param_order(&self) -> Vec<usize> {
        let mut by_pos: Vec<usize> = (0..self.placeholders.len()).collect();
        by_pos.sort_by_key(|&i| self.placeholders[i]);
        let mut order = vec![0; by_pos.len()];
        for (rank, &slot) in by_pos.iter().enumerate() {
            order[slot] = rank;
        }
        order
    }

    pub fn compile(&mut self, e: &ast::Expr, scope: &mut dyn Scope) -> Result<Expr, SqlError> {
        use ast::Expr as A;
        if let Some(x) = scope.intercept(self, e)? {
            return Ok(x);
        }
        let b = |x: Expr| Box::new(x);
        let b2 = |x: SubqueryRef| Box::new(x);
        Ok(match e {
            A::Identifier(id) => {
                if let Some(v) = id.value.strip_prefix("@@") {
                    Expr::Const(scope.sysvar(v)?)
                } else if id.value.starts_with('@') {
                    // A user variable: the scope asks the session (see `Session::sysvar`).
                    Expr::Const(scope.sysvar(&id.value)?)
                } else {
                    scope.column(None, &id.value)?
                }
            }
            A::CompoundIdentifier(ids) => {
                let first = &ids[0].value;
                if first.starts_with("@@") {
                    let name = &ids[ids.len() - 1].value;
                    // `@@global.x` reads the global value where it differs from the session's.
                    let v = if ids.len() == 2 && first.eq_ignore_ascii_case("@@global") {
                        scope.sysvar(&format!("global.{name}"))?
                    } else {
                        scope.sysvar(name)?
                    };
                    Expr::Const(v)
                } else {
                    let n = ids.len();
                    let q = if n >= 2 {
                        Some(ids[n - 2].value.as_str())
                    } else {
                        None
                    };
                    scope.column(q, &ids[n - 1].value)?
                }
            }
            A::Value(v) => self.literal(v)?,
            A::TypedString(ts) => typed_literal(&ts.data_type, &ts.value.value)?,
            A::Nested(x) => self.compile(x, scope)?,
            A::Subquery(q) => {
                let p = scope.subquery(self, q)?;
                if self.sub_visible(&p) != 1 {
                    return Err(SqlError::operand_columns(1));
                }
                Expr::Subquery(b2(p), SubKind::Scalar)
            }
            A::Exists { subquery, negated } => {
                let p = scope.subquery(self, subquery)?;
                Expr::Subquery(b2(p), SubKind::Exists(*negated))
            }
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | A::AllOp {
                left,
                compare_op,
                right,
            } => {
                let all = matches!(e, A::AllOp { .. });
                let A::Subquery(q) = &**right else {
                    return Err(SqlError::unsupported("ANY/ALL over a non-subquery"));
                };
                use ast::BinaryOperator as B;
                let op = match compare_op {
                    B::Eq => Cmp::Eq,
                    B::NotEq => Cmp::Ne,
                    B::Lt => Cmp::Lt,
                    B::LtEq => Cmp::Le,
                    B::Gt => Cmp::Gt,
                    B::GtEq => Cmp::Ge,
                    other => return Err(SqlError::unsupported(&format!("{other} ANY/ALL"))),
                };
                let x = self.compile(left, scope)?;
                let p = scope.subquery(self, q)?;
                if self.sub_visible(&p) != 1 {
                    return Err(SqlError::operand_columns(1));
                }
                Expr::Subquery(b2(p), SubKind::Quantified(b(x), op, all))
            }
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let x = self.compile(expr, scope)?;
                let p = scope.subquery(self, subquery)?;
                if self.sub_visible(&p) != 1 {
                    return Err(SqlError::operand_columns(1));
                }
                Expr::Subquery(b2(p), SubKind::In(b(x), *negated))
            }
            A::UnaryOp { op, expr } => {
                let x = self.compile(expr, scope)?;
                match op {
                    ast::UnaryOperator::Minus => match x {
                        Expr::Const(Value::Int(i)) if i != i64::MIN => Expr::Const(Value::Int(-i)),
                        Expr::Const(Value::UInt(u)) if u == 1 << 63 => {
                            Expr::Const(Value::Int(i64::MIN))
                        }
                        // A negative literal below BIGINT's range is a DECIMAL, as in
                        // MySQL (-9223372036854775809): only a negated unsigned value that
                        // is not a literal is out of range.
                        Expr::Const(Value::UInt(u)) => Expr::Const(Value::Decimal(Decimal {
                            mant: -i128::from(u),
                            scale: 0,
                        })),
                        x => Expr::Neg(b(x)),
                    },
                    ast::UnaryOperator::Plus => x,
                    ast::UnaryOperator::Not => Expr::Not(b(x)),
                    other => return Err(SqlError::unsupported(&format!("operator {other}"))),
                }
            }
            A::BinaryOp { left, op, right } => {
                use ast::BinaryOperator as B;
                // `d + INTERVAL n unit`, `INTERVAL n unit + d`, `d - INTERVAL n unit`.
                match (&**left, op, &**right) {
                    (d, B::Plus | B::Minus, A::Interval(iv)) => {
                        let d = self.compile(d, scope)?;
                        return self.interval(d, iv, *op == B::Minus, scope);
                    }
                    (A::Interval(iv), B::Plus, d) => {
                        let d = self.compile(d, scope)?;
                        return self.interval(d, iv, false, scope);
                    }
                    _ => {}
                }
                let l = self.compile(left, scope)?;
                let r = self.compile(right, scope)?;
                match op {
                    B::Plus => Expr::Arith(Arith::Add, b(l), b(r)),
                    B::Minus => Expr::Arith(Arith::Sub, b(l), b(r)),
                    B::Multiply => Expr::Arith(Arith::Mul, b(l), b(r)),
                    B::Divide => Expr::Arith(Arith::Div, b(l), b(r)),
                    B::MyIntegerDivide => Expr::Arith(Arith::IntDiv, b(l), b(r)),
                    B::Modulo => Expr::Arith(Arith::Mod, b(l), b(r)),
                    B::Eq => Expr::Cmp(Cmp::Eq, b(l), b(r)),
                    B::NotEq => Expr::Cmp(Cmp::Ne, b(l), b(r)),
                    B::Lt => Expr::Cmp(Cmp::Lt, b(l), b(r)),
                    B::LtEq => Expr::Cmp(Cmp::Le, b(l), b(r)),
                    B::Gt => Expr::Cmp(Cmp::Gt, b(l), b(r)),
                    B::GtEq => Expr::Cmp(Cmp::Ge, b(l), b(r)),
                    B::Spaceship => Expr::Cmp(Cmp::NullSafeEq, b(l), b(r)),
                    B::And => Expr::And(b(l), b(r)),
                    B::Or => Expr::Or(b(l), b(r)),
                    B::Xor => Expr::Xor(b(l), b(r)),
                    other => return Err(SqlError::unsupported(&format!("operator {other}"))),
                }
            }
            A::IsNull(x) => Expr::IsNull(b(self.compile(x, scope)?), false),
            A::IsNotNull(x) => Expr::IsNull(b(self.compile(x, scope)?), true),
            A::IsTrue(x) => Expr::Cmp(
                Cmp::NullSafeEq,
                b(builtin(
                    "IF",
                    vec![
                        self.compile(x, scope)?,
                        Expr::Const(Value::Int(1)),
                        Expr::Const(Value::Int(0)),
                    ],
                )),
                b(Expr::Const(Value::Int(1))),
            ),
            A::Between {
                expr,
                negated,
                low,
                high,
            } => Expr::Between(
                b(self.compile(expr, scope)?),
                b(self.compile(low, scope)?),
                b(self.compile(high, scope)?),
                *negated,
            ),
            A::InList {
                expr,
                list,
                negated,
            } => {
                let x = self.compile(expr, scope)?;
                let l = list
                    .iter()
                    .map(|e| self.compile(e, scope))
                    .collect::<Result<_, _>>()?;
                Expr::InList(b(x), l, *negated)
            }
            A::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any,
            } => {
                if *any {
                    return Err(SqlError::unsupported("LIKE ANY"));
                }
                let esc = match escape_char {
                    None => '\\',
                    Some(v) => match &**v {
                        ast::Expr::Value(ast::ValueWithSpan {
                            value: ast::Value::SingleQuotedString(s),
                            ..
                        }) if s.chars().count() == 1 => s.chars().next().unwrap_or('\\'),
                        _ => return Err(SqlError::unsupported("this LIKE ... ESCAPE")),
                    },
                };
                Expr::Like(
                    b(self.compile(expr, scope)?),
                    b(self.compile(pattern, scope)?),
                    esc,
                    *negated,
                )
            }
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let op = match operand {
                    Some(o) => Some(b(self.compile(o, scope)?)),
                    None => None,
                };
                let mut whens = Vec::new();
                for w in conditions {
                    whens.push((
                        self.compile(&w.condition, scope)?,
                        self.compile(&w.result, scope)?,
                    ));
                }
                let els = match else_result {
                    Some(e) => Some(b(self.compile(e, scope)?)),
                    None => None,
                };
                settle(Expr::Case(op, whens, els), scope)
            }
            A::Cast {
                expr, data_type, ..
            } => {
                let to = cast_target(data_type, e, expr)?;
                Expr::Cast(b(self.compile(expr, scope)?), to)
            }
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.compile(expr, scope)?];
                args.push(match substring_from {
                    Some(f) => self.compile(f, scope)?,
                    None => Expr::Const(Value::Int(1)),
                });
                if let Some(f) = substring_for {
                    args.push(self.compile(f, scope)?);
                }
                builtin("SUBSTRING", args)
            }
            A::Trim {
                expr,
                trim_where,
                trim_what,
                ..
            } => {
                if trim_what.is_some() {
                    return Err(SqlError::unsupported("TRIM(... FROM ...)"));
                }
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "LTRIM",
                    Some(ast::TrimWhereField::Trailing) => "RTRIM",
                    _ => "TRIM",
                };
                builtin(name, vec![self.compile(expr, scope)?])
            }
            A::Position { expr, r#in } => builtin(
                "LOCATE",
                vec![self.compile(expr, scope)?, self.compile(r#in, scope)?],
            ),
            A::Ceil { expr, .. } => builtin("CEIL", vec![self.compile(expr, scope)?]),
            A::Floor { expr, .. } => builtin("FLOOR", vec![self.compile(expr, scope)?]),
            A::Function(f) => self.function(f, scope)?,
            // A charset introducer: `_binary'..'` is a binary string, `_utf8mb4'..'` a string.
            A::Prefixed { prefix, value } => match self.compile(value, scope)? {
                Expr::Const(Value::Str(s)) if prefix.value.eq_ignore_ascii_case("_binary") => {
                    Expr::Const(Value::Bytes(s.into_bytes()))
                }
                e => e,
            },
            other => {
                let text = other.to_string();
                let head: String = text.chars().take(40).collect();
                return Err(SqlError::unsupported(&format!("expression '{head}'")));
            }
        })
    }

    fn literal(&mut self, v: &ast::ValueWithSpan) -> Result<Expr, SqlError> {
        use ast::Value as V;
        Ok(Expr::Const(match &v.value {
            V::Number(n, _) => number(n)?,
            V::SingleQuotedString(s) | V::DoubleQuotedString(s) => Value::Str(s.clone()),
            V::HexStringLiteral(h) => {
                Value::Bytes(unhex(h).ok_or_else(|| SqlError::syntax(&format!("x'{h}'"), 1))?)
            }
            V::Boolean(t) => Value::Int(i64::from(*t)),
            V::Null => Value::Null,
            V::Placeholder(_) => {
                let start = v.span.start;
                self.placeholders.push((start.line, start.column));
                return Ok(Expr::Param(self.placeholders.len() - 1));
            }
            other => return Err(SqlError::unsupported(&format!("literal {other}"))),
        }))
    }

    /// `d ± INTERVAL n unit`.
    fn interval(
        &mut self,
        d: Expr,
        iv: &ast::Interval,
        sub: bool,
        scope: &mut dyn Scope,
    ) -> Result<Expr, SqlError> {
        let unit = match (&iv.leading_field, &iv.last_field) {
            (Some(f), None) => interval_unit(f)?,
            _ => return Err(SqlError::unsupported(&format!("{iv}"))),
        };
        let n = self.compile(&iv.value, scope)?;
        Ok(Expr::Func(Func::new(DateAdd { unit, sub }), vec![d, n]))
    }

    /// Functions whose arguments are not all expressions: DATE_ADD(d, INTERVAL n unit) and
    /// friends, TIMESTAMPDIFF(unit, a, b).
    fn special_function(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        scope: &mut dyn Scope,
    ) -> Result<Option<Expr>, SqlError> {
        match name {
            "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" => {
                if args.len() != 2 {
                    return Err(wrong_count(name));
                }
                let sub = name == "DATE_SUB" || name == "SUBDATE";
                let d = self.compile(args[0], scope)?;
                match args[1] {
                    ast::Expr::Interval(iv) => Ok(Some(self.interval(d, iv, sub, scope)?)),
                    // ADDDATE(d, n): n days.
                    n if name == "ADDDATE" || name == "SUBDATE" => {
                        let n = self.compile(n, scope)?;
                        Ok(Some(Expr::Func(
                            Func::new(DateAdd {
                                unit: Unit::Day,
                                sub,
                            }),
                            vec![d, n],
                        )))
                    }
                    other => Err(SqlError::syntax(&other.to_string(), 1)),
                }
            }
            "TIMESTAMPDIFF" => {
                if args.len() != 3 {
                    return Err(wrong_count(name));
                }
                let unit = match args[0] {
                    ast::Expr::Identifier(id) => Unit::from_name(&id.value),
                    _ => None,
                }
                .ok_or_else(|| SqlError::syntax(&args[0].to_string(), 1))?;
                let a = self.compile(args[1], scope)?;
                let b = self.compile(args[2], scope)?;
                Ok(Some(Expr::Func(
                    Func::new(TimestampDiff { unit }),
                    vec![a, b],
                )))
            }
            _ => Ok(None),
        }
    }

    fn function(&mut self, f: &ast::Function, scope: &mut dyn Scope) -> Result<Expr, SqlError> {
        let name = f.name.to_string().to_ascii_uppercase();
        if let ast::FunctionArguments::List(l) = &f.args {
            if matches!(
                name.as_str(),
                "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE" | "TIMESTAMPDIFF"
            ) && l.duplicate_treatment.is_none()
            {
                let mut raw = Vec::new();
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => raw.push(e),
                        _ => {
                            return Err(SqlError::unsupported(&format!("this argument of {name}")))
                        }
                    }
                }
                if let Some(e) = self.special_function(&name, &raw, scope)? {
                    return Ok(e);
                }
            }
        }
        let mut args = Vec::new();
        match &f.args {
            ast::FunctionArguments::None => {}
            ast::FunctionArguments::List(l) => {
                if l.duplicate_treatment.is_some() {
                    return Err(SqlError::unsupported(&format!("{name}(DISTINCT ...) here")));
                }
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                            args.push(self.compile(e, scope)?)
                        }
                        _ => {
                            return Err(SqlError::unsupported(&format!("this argument of {name}")))
                        }
                    }
                }
            }
            ast::FunctionArguments::Subquery(_) => return Err(SqlError::unsupported("subqueries")),
        }
        match name.as_str() {
            "MOD" => {
                if args.len() != 2 {
                    return Err(SqlError::wrong_args(&name));
                }
                let r = args.pop().expect("two");
                let l = args.pop().expect("two");
                return Ok(Expr::Arith(Arith::Mod, Box::new(l), Box::new(r)));
            }
            // INSTR(hay, needle) is LOCATE(needle, hay); POSITION(needle, hay) too (its `IN`
            // form is compiled above).
            "INSTR" | "POSITION" => {
                if args.len() != 2 {
                    return Err(SqlError::wrong_args(&name));
                }
                if name == "INSTR" {
                    args.swap(0, 1);
                }
                return Ok(builtin("LOCATE", args));
            }
            "RAND" if !args.is_empty() => return Err(SqlError::unsupported("RAND(seed)")),
            "COUNT" | "SUM" | "MIN" | "MAX" | "AVG" => {
                return Err(SqlError::of(
                    ErrorKind::InvalidGroupFuncUse,
                    format!("Invalid use of group function {name}"),
                ))
            }
            _ => {}
        }
        let Some(func) = lookup(&name) else {
            return Err(SqlError::unknown_function(&name));
        };
        if !func.arity().allows(args.len()) {
            return Err(wrong_count(&name));
        }
        Ok(settle(Expr::Func(func, args), scope))
    }
}

/// Converts the operands of an expression whose value is one of its operands' (CASE, IF,
/// IFNULL/COALESCE, LEAST/GREATEST) to the type the whole has where theirs differs, so that
/// every value prints, compares and adds up as that type (`IF(c, 6543.6, 4807)` gives
/// `4807.0`). Other expressions come back as they are. Operands the scope cannot type (outer
/// references, parameters) leave the expression as it is.
fn settle(mut e: Expr, scope: &dyn Scope) -> Expr {
    /// The operands whose values the expression returns.
    fn operands(e: &mut Expr) -> Vec<&mut Expr> {
        match e {
            Expr::Case(_, whens, els) => whens
                .iter_mut()
                .map(|(_, r)| r)
                .chain(els.as_deref_mut())
                .collect(),
            Expr::Func(f, args) => match f.first_result_operand() {
                Some(first) => args.iter_mut().skip(first).collect(),
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
    let ty = |x: &Expr| x.type_of(&|i| scope.col_type(i));
    let known = |x: &Expr| {
        let mut ok = true;
        x.visit(&mut |n| match n {
            Expr::Outer(_) | Expr::Param(_) => ok = false,
            Expr::Col(i) if scope.col_type(*i).is_none() => ok = false,
            _ => {}
        });
        ok
    };
    let ops = operands(&mut e);
    if ops.is_empty() || !ops.iter().all(|x| known(x)) {
        return e;
    }
    let Some(target) = ty(&e) else {
        return e;
    };
    for x in operands(&mut e) {
        if crate::types::typeagg::needs_conversion(ty(x), target) {
            let inner = std::mem::replace(x, Expr::Const(Value::Null));
            *x = Expr::Coerce(Box::new(inner), target);
        }
    }
    e
}

/// A call of built-in function `name` that the binder makes itself (TRIM's `LEADING` form,
/// `IS TRUE`, ...): the name is one [`lookup`] knows.
fn builtin(name: &str, args: Vec<Expr>) -> Expr {
    let f = lookup(name).unwrap_or_else(|| panic!("{name} is not a built-in function"));
    Expr::Func(f, args)
}

/// A call with the wrong number of arguments: error 1582, or a syntax error (1064) for the
/// functions MariaDB's grammar spells out itself.
fn wrong_count(name: &str) -> SqlError {
    match name {
        "REPEAT" | "ASCII" | "TRUNCATE" | "DATE_ADD" | "DATE_SUB" | "ADDDATE" | "SUBDATE"
        | "TIMESTAMPDIFF" | "HOUR" | "MINUTE" | "SECOND" | "CURTIME" | "CURRENT_TIME"
        | "UTC_TIME" | "UTC_TIMESTAMP" | "UTC_DATE" => SqlError::syntax(")", 1),
        _ => SqlError::wrong_args(name),
    }
}

/// The unit of `INTERVAL n unit` (singular or plural).
fn interval_unit(f: &ast::DateTimeField) -> Result<Unit, SqlError> {
    use ast::DateTimeField as F;
    Ok(match f {
        F::Microsecond | F::Microseconds => Unit::Microsecond,
        F::Second | F::Seconds => Unit::Second,
        F::Minute | F::Minutes => Unit::Minute,
        F::Hour | F::Hours => Unit::Hour,
        F::Day | F::Days => Unit::Day,
        F::Week(None) | F::Weeks => Unit::Week,
        F::Month | F::Months => Unit::Month,
        F::Quarter => Unit::Quarter,
        F::Year | F::Years => Unit::Year,
        other => return Err(SqlError::unsupported(&format!("INTERVAL unit {other}"))),
    })
}

/// `DATE 'yyyy-mm-dd'`, `TIMESTAMP '...'`, `DATETIME '...'`: a temporal constant; a string
/// that is not one is error 1525, as in MariaDB.
fn typed_literal(t: &ast::DataType, v: &ast::Value) -> Result<Expr, SqlError> {
    let (ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s)) = v else {
        return Err(SqlError::unsupported(&format!("literal {t} {v}")));
    };
    let (to, name) = match t {
        ast::DataType::Date => (CastTo::Date, "DATE"),
        // The literal keeps the fraction digits it was written with.
        ast::DataType::Timestamp(..) | ast::DataType::Datetime(_) => (
            CastTo::DateTime(crate::expr::builtins::fraction_digits(&Value::Str(
                s.clone(),
            ))),
            "DATETIME",
        ),
        other => return Err(SqlError::unsupported(&format!("literal {other} '{s}'"))),
    };
    match cast(Value::Str(s.clone()), &to)? {
        Value::Null => Err(SqlError::of(
            ErrorKind::WrongValue,
            format!("Incorrect {name} value: '{s}'"),
        )),
        v => Ok(Expr::Const(v)),
    }
}

/// The type of `cast` (`CAST(arg AS t)` as written), checked as MariaDB checks it.
fn cast_target(t: &ast::DataType, cast: &ast::Expr, arg: &ast::Expr) -> Result<CastTo, SqlError> {
    use ast::DataType as D;
    Ok(match t {
        D::Signed | D::SignedInteger | D::Int(_) | D::Integer(_) | D::BigInt(_) => CastTo::Signed,
        D::Unsigned | D::UnsignedInteger => CastTo::Unsigned,
        D::Char(_) | D::Varchar(_) | D::Text | D::String(_) => CastTo::Char,
        D::Binary(_) | D::Varbinary(_) | D::Blob(_) => CastTo::Binary,
        D::Double(_) | D::DoublePrecision | D::Float(_) | D::Real => CastTo::Double,
        D::Decimal(info) | D::Numeric(info) => {
            let (precision, scale) = match info {
                ast::ExactNumberInfo::None => (10, 0),
                ast::ExactNumberInfo::Precision(p) => (*p, 0),
                ast::ExactNumberInfo::PrecisionAndScale(p, s) => (*p, s.unsigned_abs()),
            };
            if precision > 65 {
                return Err(SqlError::of(
                    ErrorKind::TooBigPrecision,
                    format!("Too big precision specified for '{arg}'. Maximum is 65"),
                ));
            }
            if scale > 38 {
                return Err(SqlError::of(
                    ErrorKind::TooBigScale,
                    format!("Too big scale specified for '{arg}'. Maximum is 38"),
                ));
            }
            if scale > precision {
                return Err(SqlError::of(
                    ErrorKind::MBiggerThanD,
                    "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '')",
                ));
            }
            CastTo::Decimal {
                precision: precision as u8,
                scale: scale as u8,
                name: cast.to_string().into(),
            }
        }
        D::Date => CastTo::Date,
        D::Datetime(p) | D::Timestamp(p, _) => match p.unwrap_or(0) {
            p @ 0..=6 => CastTo::DateTime(p as u8),
            _ => {
                return Err(SqlError::of(
                    ErrorKind::TooBigPrecision,
                    "Too big precision specified for CAST AS DATETIME. Maximum is 6",
                ))
            }
        },
        other => return Err(SqlError::unsupported(&format!("CAST AS {other}"))),
    })
}

/// A numeric literal: an integer if it fits, a decimal if it has a point, else a double.
pub fn number(n: &str) -> Result<Value, SqlError> {
    if let Ok(i) = n.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(u) = n.parse::<u64>() {
        return Ok(Value::UInt(u));
    }
    if !n.contains(['e', 'E']) {
        if let Some(d) = Decimal::parse(n) {
            return Ok(Value::Decimal(d));
        }
    }
    n.parse::<f64>()
        .map(Value::Double)
        .map_err(|_| SqlError::syntax(n, 1))
}

fn unhex(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return unhex(&format!("0{h}"));
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_temporal_literals_are_constants() {
        let v = |s: &str| ast::Value::SingleQuotedString(s.into());
        let Expr::Const(d) = typed_literal(&ast::DataType::Date, &v("2024-02-29")).unwrap() else {
            panic!("not a constant")
        };
        assert!(matches!(d, Value::Date(_)));
        assert_eq!(d.to_text().unwrap(), b"2024-02-29");
        let Expr::Const(t) = typed_literal(
            &ast::DataType::Timestamp(None, ast::TimezoneInfo::None),
            &v("2020-01-02 03:04:05"),
        )
        .unwrap() else {
            panic!("not a constant")
        };
        assert_eq!(t.to_text().unwrap(), b"2020-01-02 03:04:05");
        let e = typed_literal(&ast::DataType::Date, &v("2023-02-30")).unwrap_err();
        assert_eq!(e.code(), 1525);
    }
}
