//! Expressions: compiled once from the parser's AST into [`Expr`] (columns resolved to row
//! positions, `?` to parameter slots), then evaluated per row.

use std::cmp::Ordering;

use sqlparser::ast;

use crate::value::{collate_cmp, fold_char, format_double, DateTime, Decimal, SqlType, Value};
use crate::SqlError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `<=>`: NULL-safe equality.
    NullSafeEq,
}

impl Cmp {
    pub fn flip(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
            c => c,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Concat,
    ConcatWs,
    Length,
    CharLength,
    Upper,
    Lower,
    Substring,
    Trim,
    LTrim,
    RTrim,
    Replace,
    Left,
    Right,
    Abs,
    Ceil,
    Floor,
    Round,
    Sqrt,
    Pow,
    Coalesce,
    NullIf,
    If,
    Greatest,
    Least,
    Now,
    CurDate,
    Database,
    User,
    Version,
    ConnectionId,
    LastInsertId,
    Hex,
    Year,
    Month,
    Day,
    Date,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastTo {
    Signed,
    Unsigned,
    Char,
    Binary,
    Double,
    Decimal(u8),
    Date,
    DateTime,
}

/// A compiled expression.
#[derive(Debug, Clone)]
pub enum Expr {
    Const(Value),
    Param(usize),
    /// A value of the row being evaluated.
    Col(usize),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Cmp(Cmp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Xor(Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    InList(Box<Expr>, Vec<Expr>, bool),
    Like(Box<Expr>, Box<Expr>, char, bool),
    Case(Option<Box<Expr>>, Vec<(Expr, Expr)>, Option<Box<Expr>>),
    Func(Func, Vec<Expr>),
    Cast(Box<Expr>, CastTo),
    /// A column of the enclosing query's row (in a correlated subquery).
    Outer(usize),
    /// A subquery: scalar, EXISTS, or the right side of IN.
    Subquery(std::sync::Arc<crate::exec::SubPlan>, SubKind),
}

/// What a subquery's rows become.
#[derive(Debug, Clone)]
pub enum SubKind {
    /// `(SELECT x ...)`: the one value (NULL for no row; an error for several).
    Scalar,
    /// `[NOT] EXISTS (SELECT ...)`.
    Exists(bool),
    /// `x [NOT] IN (SELECT ...)`.
    In(Box<Expr>, bool),
    /// `x op ANY (SELECT ...)` (`false`) or `x op ALL (SELECT ...)` (`true`).
    Quantified(Box<Expr>, Cmp, bool),
}

/// What evaluation needs besides the row.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub params: &'a [Value],
    /// Statement start time (packed [`DateTime`]).
    pub now: i64,
    pub db: Option<&'a str>,
    /// `user@host` of the session's account (what USER() and CURRENT_USER() return).
    pub user: &'a str,
    pub conn_id: u64,
    pub last_insert_id: u64,
    pub version: &'a str,
    /// The rows of the `information_schema` table the statement reads, computed by the
    /// session before execution.
    pub virtual_rows: Option<&'a [(crate::infoschema::Kind, Vec<Vec<Value>>)]>,
    /// What subqueries read through: set by the plan that runs them (see
    /// [`crate::exec::SubCtx`]).
    pub sub: Option<&'a crate::exec::SubCtx<'a>>,
    /// The row of the enclosing query, for a correlated subquery's outer references.
    pub outer: &'a [Value],
    /// Set by `KILL QUERY`: long scans check it every few hundred rows.
    pub killed: Option<&'a std::sync::atomic::AtomicBool>,
}

impl<'a> Ctx<'a> {
    /// The rows of `information_schema` table `kind`, computed by the session for every such
    /// table the statement reads (joins, UNION operands and subqueries included).
    pub fn virtual_of(&self, kind: crate::infoschema::Kind) -> Result<&'a [Vec<Value>], SqlError> {
        self.virtual_rows
            .and_then(|v| v.iter().find(|(k, _)| *k == kind))
            .map(|(_, rows)| rows.as_slice())
            .ok_or_else(|| SqlError::internal("information_schema rows were not computed"))
    }

    /// `Err(1317)` once the statement has been killed.
    pub fn check_killed(&self) -> Result<(), SqlError> {
        match self.killed {
            Some(k) if k.load(std::sync::atomic::Ordering::Relaxed) => Err(SqlError::new(
                1317,
                "70100",
                "Query execution was interrupted",
            )),
            _ => Ok(()),
        }
    }
}

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
    /// A subquery in an expression: its plan, compiled where the scope allows one.
    fn subquery(
        &mut self,
        _c: &mut Compiler,
        _q: &ast::Query,
    ) -> Result<crate::exec::SubPlan, SqlError> {
        Err(SqlError::unsupported("subqueries here"))
    }
}

/// Compiles expressions, numbering `?` placeholders by their position in the text.
pub struct Compiler {
    /// (line, column) of each placeholder met, in compile order.
    placeholders: Vec<(u64, u64)>,
    /// Subqueries compiled so far (a plan that saw one needs a transaction to share).
    pub subqueries: usize,
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
            subqueries: 0,
        }
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
                    Expr::Const(scope.sysvar(name)?)
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
                self.subqueries += 1;
                let p = scope.subquery(self, q)?;
                if p.plan.visible != 1 {
                    return Err(SqlError::operand_columns(1));
                }
                Expr::Subquery(std::sync::Arc::new(p), SubKind::Scalar)
            }
            A::Exists { subquery, negated } => {
                self.subqueries += 1;
                let p = scope.subquery(self, subquery)?;
                Expr::Subquery(std::sync::Arc::new(p), SubKind::Exists(*negated))
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
                self.subqueries += 1;
                let p = scope.subquery(self, q)?;
                if p.plan.visible != 1 {
                    return Err(SqlError::operand_columns(1));
                }
                Expr::Subquery(std::sync::Arc::new(p), SubKind::Quantified(b(x), op, all))
            }
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let x = self.compile(expr, scope)?;
                self.subqueries += 1;
                let p = scope.subquery(self, subquery)?;
                if p.plan.visible != 1 {
                    return Err(SqlError::operand_columns(1));
                }
                Expr::Subquery(std::sync::Arc::new(p), SubKind::In(b(x), *negated))
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
                b(Expr::Func(
                    Func::If,
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
                Expr::Case(op, whens, els)
            }
            A::Cast {
                expr, data_type, ..
            } => {
                let to = cast_target(data_type)?;
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
                Expr::Func(Func::Substring, args)
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
                let f = match trim_where {
                    Some(ast::TrimWhereField::Leading) => Func::LTrim,
                    Some(ast::TrimWhereField::Trailing) => Func::RTrim,
                    _ => Func::Trim,
                };
                Expr::Func(f, vec![self.compile(expr, scope)?])
            }
            A::Ceil { expr, .. } => Expr::Func(Func::Ceil, vec![self.compile(expr, scope)?]),
            A::Floor { expr, .. } => Expr::Func(Func::Floor, vec![self.compile(expr, scope)?]),
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

    fn function(&mut self, f: &ast::Function, scope: &mut dyn Scope) -> Result<Expr, SqlError> {
        let name = f.name.to_string().to_ascii_uppercase();
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
        let (func, min, max) = match name.as_str() {
            "CONCAT" => (Func::Concat, 1, usize::MAX),
            "CONCAT_WS" => (Func::ConcatWs, 2, usize::MAX),
            "LENGTH" | "OCTET_LENGTH" => (Func::Length, 1, 1),
            "CHAR_LENGTH" | "CHARACTER_LENGTH" => (Func::CharLength, 1, 1),
            "UPPER" | "UCASE" => (Func::Upper, 1, 1),
            "LOWER" | "LCASE" => (Func::Lower, 1, 1),
            "SUBSTRING" | "SUBSTR" | "MID" => (Func::Substring, 2, 3),
            "TRIM" => (Func::Trim, 1, 1),
            "LTRIM" => (Func::LTrim, 1, 1),
            "RTRIM" => (Func::RTrim, 1, 1),
            "REPLACE" => (Func::Replace, 3, 3),
            "LEFT" => (Func::Left, 2, 2),
            "RIGHT" => (Func::Right, 2, 2),
            "ABS" => (Func::Abs, 1, 1),
            "CEIL" | "CEILING" => (Func::Ceil, 1, 1),
            "FLOOR" => (Func::Floor, 1, 1),
            "ROUND" => (Func::Round, 1, 2),
            "SQRT" => (Func::Sqrt, 1, 1),
            "POW" | "POWER" => (Func::Pow, 2, 2),
            "MOD" => {
                if args.len() != 2 {
                    return Err(SqlError::wrong_args(&name));
                }
                let r = args.pop().expect("two");
                let l = args.pop().expect("two");
                return Ok(Expr::Arith(Arith::Mod, Box::new(l), Box::new(r)));
            }
            "COALESCE" => (Func::Coalesce, 1, usize::MAX),
            "IFNULL" => (Func::Coalesce, 2, 2),
            "NULLIF" => (Func::NullIf, 2, 2),
            "IF" => (Func::If, 3, 3),
            "GREATEST" => (Func::Greatest, 2, usize::MAX),
            "LEAST" => (Func::Least, 2, usize::MAX),
            "NOW" | "CURRENT_TIMESTAMP" | "SYSDATE" | "LOCALTIME" | "LOCALTIMESTAMP" => {
                (Func::Now, 0, 1)
            }
            "CURDATE" | "CURRENT_DATE" => (Func::CurDate, 0, 0),
            "DATABASE" | "SCHEMA" => (Func::Database, 0, 0),
            "USER" | "CURRENT_USER" | "SESSION_USER" | "SYSTEM_USER" => (Func::User, 0, 0),
            "VERSION" => (Func::Version, 0, 0),
            "CONNECTION_ID" => (Func::ConnectionId, 0, 0),
            "LAST_INSERT_ID" => (Func::LastInsertId, 0, 0),
            "HEX" => (Func::Hex, 1, 1),
            "YEAR" => (Func::Year, 1, 1),
            "MONTH" => (Func::Month, 1, 1),
            "DAY" | "DAYOFMONTH" => (Func::Day, 1, 1),
            "DATE" => (Func::Date, 1, 1),
            "COUNT" | "SUM" | "MIN" | "MAX" | "AVG" => {
                return Err(SqlError::new(
                    1111,
                    "HY000",
                    format!("Invalid use of group function {name}"),
                ))
            }
            _ => return Err(SqlError::unknown_function(&name)),
        };
        if args.len() < min || args.len() > max {
            return Err(SqlError::wrong_args(&name));
        }
        Ok(Expr::Func(func, args))
    }
}

/// `DATE 'yyyy-mm-dd'`, `TIMESTAMP '...'`, `DATETIME '...'`: a temporal constant; a string
/// that is not one is error 1525, as in MariaDB.
fn typed_literal(t: &ast::DataType, v: &ast::Value) -> Result<Expr, SqlError> {
    let (ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s)) = v else {
        return Err(SqlError::unsupported(&format!("literal {t} {v}")));
    };
    let (to, name) = match t {
        ast::DataType::Date => (CastTo::Date, "DATE"),
        ast::DataType::Timestamp(..) | ast::DataType::Datetime(_) => (CastTo::DateTime, "DATETIME"),
        other => return Err(SqlError::unsupported(&format!("literal {other} '{s}'"))),
    };
    match cast(Value::Str(s.clone()), to)? {
        Value::Null => Err(SqlError::new(
            1525,
            "HY000",
            format!("Incorrect {name} value: '{s}'"),
        )),
        v => Ok(Expr::Const(v)),
    }
}

fn cast_target(t: &ast::DataType) -> Result<CastTo, SqlError> {
    use ast::DataType as D;
    Ok(match t {
        D::Signed | D::SignedInteger | D::Int(_) | D::Integer(_) | D::BigInt(_) => CastTo::Signed,
        D::Unsigned | D::UnsignedInteger => CastTo::Unsigned,
        D::Char(_) | D::Varchar(_) | D::Text | D::String(_) => CastTo::Char,
        D::Binary(_) | D::Varbinary(_) | D::Blob(_) => CastTo::Binary,
        D::Double(_) | D::DoublePrecision | D::Float(_) | D::Real => CastTo::Double,
        D::Decimal(info) | D::Numeric(info) => CastTo::Decimal(match info {
            ast::ExactNumberInfo::PrecisionAndScale(_, s) => u8::try_from(*s).unwrap_or(30),
            _ => 0,
        }),
        D::Date => CastTo::Date,
        D::Datetime(_) | D::Timestamp(_, _) => CastTo::DateTime,
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

/// CEIL (`up`) or FLOOR of a decimal, as an integer.
fn decimal_ceil_floor(d: Decimal, up: bool) -> i128 {
    let p = 10i128.pow(u32::from(d.scale));
    let q = d.mant.div_euclid(p);
    if up && d.mant.rem_euclid(p) != 0 {
        q + 1
    } else {
        q
    }
}

fn int_result(v: i128) -> Result<Value, SqlError> {
    if let Ok(i) = i64::try_from(v) {
        Ok(Value::Int(i))
    } else if let Ok(u) = u64::try_from(v) {
        Ok(Value::UInt(u))
    } else {
        Err(SqlError::new(1690, "22003", "BIGINT value is out of range"))
    }
}

fn as_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        _ => None,
    }
}

/// Whether arithmetic on this value is exact (integer or decimal) rather than double.
fn exact(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::UInt(_) | Value::Decimal(_))
}

fn arith(op: Arith, a: Value, b: Value) -> Result<Value, SqlError> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let overflow = || SqlError::new(1690, "22003", "DECIMAL value is out of range");
    if let (Some(x), Some(y)) = (as_i128(&a), as_i128(&b)) {
        // MySQL's integer rule: with an UNSIGNED operand the result is UNSIGNED (a negative
        // one is an error, as `1 - unsigned_col` is), otherwise it is a signed BIGINT.
        let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
        let typed = |r: Option<i128>| -> Result<Value, SqlError> {
            match (r, unsigned) {
                (Some(r), true) => u64::try_from(r).map(Value::UInt).map_err(|_| {
                    SqlError::new(1690, "22003", "BIGINT UNSIGNED value is out of range")
                }),
                (Some(r), false) => i64::try_from(r)
                    .map(Value::Int)
                    .map_err(|_| SqlError::new(1690, "22003", "BIGINT value is out of range")),
                (None, true) => Err(SqlError::new(
                    1690,
                    "22003",
                    "BIGINT UNSIGNED value is out of range",
                )),
                (None, false) => Err(SqlError::new(1690, "22003", "BIGINT value is out of range")),
            }
        };
        return match op {
            Arith::Add => typed(x.checked_add(y)),
            Arith::Sub => typed(x.checked_sub(y)),
            Arith::Mul => typed(x.checked_mul(y)),
            Arith::IntDiv => {
                if y == 0 {
                    Ok(Value::Null)
                } else {
                    int_result(x / y)
                }
            }
            Arith::Mod => {
                if y == 0 {
                    Ok(Value::Null)
                } else {
                    int_result(x % y)
                }
            }
            Arith::Div => {
                if y == 0 {
                    return Ok(Value::Null);
                }
                Ok(Decimal::from_i64(0)
                    .add(Decimal { mant: x, scale: 0 })
                    .and_then(|d| d.div(Decimal { mant: y, scale: 0 }))
                    .map(Value::Decimal)
                    .ok_or_else(overflow)?)
            }
        };
    }
    if exact(&a) && exact(&b) {
        let (x, y) = (
            a.to_decimal().ok_or_else(overflow)?,
            b.to_decimal().ok_or_else(overflow)?,
        );
        let r = match op {
            Arith::Add => x.add(y),
            Arith::Sub => x.sub(y),
            Arith::Mul => x.mul(y),
            Arith::Div => {
                if y.mant == 0 {
                    return Ok(Value::Null);
                }
                x.div(y)
            }
            Arith::IntDiv => {
                if y.mant == 0 {
                    return Ok(Value::Null);
                }
                return Ok(Value::Int((x.to_f64() / y.to_f64()).trunc() as i64));
            }
            Arith::Mod => {
                if y.mant == 0 {
                    return Ok(Value::Null);
                }
                let s = x.scale.max(y.scale);
                let (p, q) = (
                    x.rescale(s).ok_or_else(overflow)?,
                    y.rescale(s).ok_or_else(overflow)?,
                );
                Some(Decimal {
                    mant: p.mant % q.mant,
                    scale: s,
                })
            }
        };
        return r.map(Value::Decimal).ok_or_else(overflow);
    }
    let (x, y) = (a.to_f64().unwrap_or(0.0), b.to_f64().unwrap_or(0.0));
    Ok(match op {
        Arith::Add => Value::Double(x + y),
        Arith::Sub => Value::Double(x - y),
        Arith::Mul => Value::Double(x * y),
        Arith::Div if y == 0.0 => Value::Null,
        Arith::Div => Value::Double(x / y),
        Arith::IntDiv if y == 0.0 => Value::Null,
        Arith::IntDiv => Value::Int((x / y).trunc() as i64),
        Arith::Mod if y == 0.0 => Value::Null,
        Arith::Mod => Value::Double(x % y),
    })
}

fn bool_val(b: Option<bool>) -> Value {
    match b {
        None => Value::Null,
        Some(t) => Value::Int(i64::from(t)),
    }
}

/// LIKE under the default collation (case-insensitive), `%` and `_`, with an escape char.
pub fn like(text: &str, pat: &str, esc: char, ci: bool) -> bool {
    let t: Vec<char> = text.chars().collect();
    let p: Vec<char> = pat.chars().collect();
    let eq = |a: char, b: char| {
        if ci {
            fold_char(a) == fold_char(b)
        } else {
            a == b
        }
    };
    // Iterative matcher with backtracking to the last '%'.
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '%' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '_' => {
                    ti += 1;
                    pi += 1;
                    continue;
                }
                c => {
                    let (lit, step) = if c == esc && pi + 1 < p.len() {
                        (p[pi + 1], 2)
                    } else {
                        (c, 1)
                    };
                    if eq(lit, t[ti]) {
                        ti += 1;
                        pi += step;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == '%' {
        pi += 1;
    }
    pi == p.len()
}

impl Expr {
    /// Renumbers every column reference (`Col(i)` becomes `Col(f(i))`).
    pub fn map_columns(&mut self, f: &dyn Fn(usize) -> usize) {
        match self {
            Expr::Col(i) => *i = f(*i),
            Expr::Const(_) | Expr::Param(_) => {}
            Expr::Neg(x) | Expr::Not(x) | Expr::IsNull(x, _) | Expr::Cast(x, _) => x.map_columns(f),
            Expr::Arith(_, a, b)
            | Expr::Cmp(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Xor(a, b)
            | Expr::Like(a, b, _, _) => {
                a.map_columns(f);
                b.map_columns(f);
            }
            Expr::Between(a, b, c, _) => {
                a.map_columns(f);
                b.map_columns(f);
                c.map_columns(f);
            }
            Expr::InList(a, l, _) => {
                a.map_columns(f);
                l.iter_mut().for_each(|x| x.map_columns(f));
            }
            Expr::Case(o, w, e) => {
                if let Some(o) = o {
                    o.map_columns(f);
                }
                for (a, b) in w {
                    a.map_columns(f);
                    b.map_columns(f);
                }
                if let Some(e) = e {
                    e.map_columns(f);
                }
            }
            Expr::Func(_, args) => args.iter_mut().for_each(|x| x.map_columns(f)),
            Expr::Outer(_) => {}
            // Join planning never moves a term with a subquery (see `has_subquery`); only
            // IN's left side reads this row.
            Expr::Subquery(_, SubKind::In(x, _) | SubKind::Quantified(x, _, _)) => x.map_columns(f),
            Expr::Subquery(..) => {}
        }
    }

    /// Whether the expression contains a subquery.
    pub fn has_subquery(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Subquery(..)));
        found
    }

    /// Calls `f` on this node and every node below it (not into subqueries' plans).
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Col(_) | Expr::Const(_) | Expr::Param(_) | Expr::Outer(_) => {}
            Expr::Neg(x) | Expr::Not(x) | Expr::IsNull(x, _) | Expr::Cast(x, _) => x.visit(f),
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
            Expr::Neg(x) | Expr::Cast(x, _) => x.is_constant(),
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
                    None => Value::Decimal(Decimal {
                        mant: -i128::from(i),
                        scale: 0,
                    }),
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
                let (x, y) = (a.eval(row, ctx)?, b.eval(row, ctx)?);
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
                let (x, y) = (a.eval(row, ctx)?.truth(), b.eval(row, ctx)?.truth());
                bool_val(match (x, y) {
                    (Some(p), Some(q)) => Some(p != q),
                    _ => None,
                })
            }
            Expr::IsNull(x, neg) => bool_val(Some(x.eval(row, ctx)?.is_null() != *neg)),
            Expr::Between(x, lo, hi, neg) => {
                let v = x.eval(row, ctx)?;
                let (l, h) = (lo.eval(row, ctx)?, hi.eval(row, ctx)?);
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
                let v = x.eval(row, ctx)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                let mut found = false;
                for e in list {
                    let w = e.eval(row, ctx)?;
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
                let (v, pat) = (x.eval(row, ctx)?, p.eval(row, ctx)?);
                if v.is_null() || pat.is_null() {
                    return Ok(Value::Null);
                }
                let ci = !matches!(v, Value::Bytes(_)) && !matches!(pat, Value::Bytes(_));
                let (s, ps) = (
                    v.to_string_lossy().unwrap_or_default(),
                    pat.to_string_lossy().unwrap_or_default(),
                );
                bool_val(Some(like(&s, &ps, *esc, ci) != *neg))
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
            Expr::Cast(x, to) => cast(x.eval(row, ctx)?, *to)?,
            Expr::Func(f, args) => func(*f, args, row, ctx)?,
            Expr::Outer(i) => ctx
                .outer
                .get(*i)
                .cloned()
                .ok_or_else(|| SqlError::internal("outer column out of range"))?,
            Expr::Subquery(p, kind) => crate::exec::eval_subquery(p, kind, row, ctx)?,
        })
    }

    /// WHERE semantics: only TRUE passes.
    pub fn test(&self, row: &[Value], ctx: &Ctx) -> Result<bool, SqlError> {
        Ok(self.eval(row, ctx)?.truth() == Some(true))
    }

    /// The type of the expression's values, as far as the metadata needs it; `row_types`
    /// gives the types of `Col` references.
    pub fn result_type(&self, row_types: &dyn Fn(usize) -> Option<SqlType>) -> SqlType {
        const BIGINT: SqlType = SqlType::Int {
            bytes: 8,
            unsigned: false,
        };
        const TEXT: SqlType = SqlType::Varchar {
            len: 255,
            binary: false,
        };
        match self {
            Expr::Const(v) => value_type(v),
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
            Expr::Subquery(p, SubKind::Scalar) => p.result_type(),
            Expr::Subquery(..)
            | Expr::Cmp(..)
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::Xor(..)
            | Expr::Not(..)
            | Expr::IsNull(..)
            | Expr::Between(..)
            | Expr::InList(..)
            | Expr::Like(..) => BIGINT,
            Expr::Case(_, whens, els) => whens
                .first()
                .map(|(_, r)| r.result_type(row_types))
                .or_else(|| els.as_ref().map(|e| e.result_type(row_types)))
                .unwrap_or(TEXT),
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
                CastTo::DateTime => SqlType::DateTime { fsp: 0 },
            },
            Expr::Func(f, args) => match f {
                Func::Length
                | Func::CharLength
                | Func::ConnectionId
                | Func::LastInsertId
                | Func::Year
                | Func::Month
                | Func::Day => BIGINT,
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
                Func::Sqrt | Func::Pow => SqlType::Double,
                Func::Coalesce | Func::Greatest | Func::Least | Func::NullIf => args
                    .first()
                    .map(|a| a.result_type(row_types))
                    .unwrap_or(TEXT),
                Func::If => args
                    .get(1)
                    .map(|a| a.result_type(row_types))
                    .unwrap_or(TEXT),
                Func::Now => SqlType::DateTime { fsp: 0 },
                Func::CurDate | Func::Date => SqlType::Date,
                _ => TEXT,
            },
        }
    }
}

/// The natural type of a value (for constants in metadata).
pub fn value_type(v: &Value) -> SqlType {
    match v {
        Value::Null => SqlType::Varchar {
            len: 0,
            binary: true,
        },
        Value::Int(_) => SqlType::Int {
            bytes: 8,
            unsigned: false,
        },
        Value::UInt(_) => SqlType::Int {
            bytes: 8,
            unsigned: true,
        },
        Value::Double(_) => SqlType::Double,
        Value::Decimal(d) => SqlType::Decimal {
            precision: 38,
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

pub fn cast(v: Value, to: CastTo) -> Result<Value, SqlError> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    Ok(match to {
        CastTo::Signed => Value::Int(v.to_i64().unwrap_or(0)),
        CastTo::Unsigned => match v {
            Value::UInt(u) => Value::UInt(u),
            // A negative integer wraps (two's complement), a negative DECIMAL or DOUBLE
            // clips to 0, as in MariaDB.
            Value::Decimal(d) if d.mant < 0 => Value::UInt(0),
            Value::Double(f) if f < 0.0 => Value::UInt(0),
            other => Value::UInt(other.to_i64().unwrap_or(0) as u64),
        },
        CastTo::Char => Value::Str(v.to_string_lossy().unwrap_or_default()),
        CastTo::Binary => Value::Bytes(v.to_text().unwrap_or_default()),
        CastTo::Double => Value::Double(v.to_f64().unwrap_or(0.0)),
        CastTo::Decimal(s) => match v.to_decimal().and_then(|d| d.rescale(s)) {
            Some(d) => Value::Decimal(d),
            None => Value::Null,
        },
        CastTo::Date => match to_datetime(&v) {
            Some(d) => Value::Date(
                DateTime {
                    hour: 0,
                    minute: 0,
                    second: 0,
                    micro: 0,
                    ..DateTime::unpack(d)
                }
                .pack(),
            ),
            None => Value::Null,
        },
        CastTo::DateTime => match to_datetime(&v) {
            Some(d) => Value::DateTime(d),
            None => Value::Null,
        },
    })
}

/// A value as a packed datetime, if it is or reads as one.
pub fn to_datetime(v: &Value) -> Option<i64> {
    match v {
        Value::Date(p) | Value::DateTime(p) => Some(*p),
        Value::Str(s) => DateTime::parse(s).map(|d| d.pack()),
        Value::Bytes(b) => DateTime::parse(std::str::from_utf8(b).ok()?).map(|d| d.pack()),
        Value::Int(_) | Value::UInt(_) => {
            // 20240102 or 20240102030405.
            let n = v.to_i64()?;
            let s = n.to_string();
            let t = match s.len() {
                8 => format!("{}-{}-{}", &s[0..4], &s[4..6], &s[6..8]),
                14 => format!(
                    "{}-{}-{} {}:{}:{}",
                    &s[0..4],
                    &s[4..6],
                    &s[6..8],
                    &s[8..10],
                    &s[10..12],
                    &s[12..14]
                ),
                _ => return None,
            };
            DateTime::parse(&t).map(|d| d.pack())
        }
        _ => None,
    }
}

fn text_arg(args: &[Expr], i: usize, row: &[Value], ctx: &Ctx) -> Result<Option<String>, SqlError> {
    Ok(args[i].eval(row, ctx)?.to_string_lossy())
}

fn func(f: Func, args: &[Expr], row: &[Value], ctx: &Ctx) -> Result<Value, SqlError> {
    let ev = |i: usize| args[i].eval(row, ctx);
    let s = |i: usize| text_arg(args, i, row, ctx);
    let str_or_null = |o: Option<String>| o.map_or(Value::Null, Value::Str);
    Ok(match f {
        Func::Concat => {
            let mut out = String::new();
            for i in 0..args.len() {
                match s(i)? {
                    Some(x) => out.push_str(&x),
                    None => return Ok(Value::Null),
                }
            }
            Value::Str(out)
        }
        Func::ConcatWs => {
            let Some(sep) = s(0)? else {
                return Ok(Value::Null);
            };
            let mut parts = Vec::new();
            for i in 1..args.len() {
                if let Some(x) = s(i)? {
                    parts.push(x);
                }
            }
            Value::Str(parts.join(&sep))
        }
        Func::Length => match ev(0)? {
            Value::Null => Value::Null,
            v => Value::Int(v.to_text().map_or(0, |b| b.len()) as i64),
        },
        Func::CharLength => match s(0)? {
            None => Value::Null,
            Some(x) => Value::Int(x.chars().count() as i64),
        },
        Func::Upper => str_or_null(s(0)?.map(|x| x.to_uppercase())),
        Func::Lower => str_or_null(s(0)?.map(|x| x.to_lowercase())),
        Func::Trim => str_or_null(s(0)?.map(|x| x.trim_matches(' ').to_string())),
        Func::LTrim => str_or_null(s(0)?.map(|x| x.trim_start_matches(' ').to_string())),
        Func::RTrim => str_or_null(s(0)?.map(|x| x.trim_end_matches(' ').to_string())),
        Func::Substring => {
            let Some(x) = s(0)? else {
                return Ok(Value::Null);
            };
            let Some(pos) = ev(1)?.to_i64() else {
                return Ok(Value::Null);
            };
            let chars: Vec<char> = x.chars().collect();
            let n = chars.len() as i64;
            let start = if pos > 0 {
                pos - 1
            } else if pos < 0 {
                n + pos
            } else {
                return Ok(Value::Str(String::new()));
            };
            if start < 0 || start >= n {
                return Ok(Value::Str(String::new()));
            }
            let len = if args.len() > 2 {
                match ev(2)?.to_i64() {
                    None => return Ok(Value::Null),
                    Some(l) => l.max(0),
                }
            } else {
                n
            };
            let end = (start + len).min(n);
            Value::Str(chars[start as usize..end as usize].iter().collect())
        }
        Func::Replace => match (s(0)?, s(1)?, s(2)?) {
            (Some(x), Some(from), Some(to)) if !from.is_empty() => {
                Value::Str(x.replace(&from, &to))
            }
            (Some(x), Some(_), Some(_)) => Value::Str(x),
            _ => Value::Null,
        },
        Func::Left | Func::Right => {
            let (Some(x), Some(n)) = (s(0)?, ev(1)?.to_i64()) else {
                return Ok(Value::Null);
            };
            let chars: Vec<char> = x.chars().collect();
            let n = (n.max(0) as usize).min(chars.len());
            Value::Str(if f == Func::Left {
                chars[..n].iter().collect()
            } else {
                chars[chars.len() - n..].iter().collect()
            })
        }
        Func::Abs => match ev(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => int_result(i128::from(i).abs())?,
            Value::UInt(u) => Value::UInt(u),
            Value::Decimal(d) => Value::Decimal(Decimal {
                mant: d.mant.abs(),
                scale: d.scale,
            }),
            v => Value::Double(v.to_f64().unwrap_or(0.0).abs()),
        },
        Func::Ceil | Func::Floor => match ev(0)? {
            Value::Null => Value::Null,
            v @ (Value::Int(_) | Value::UInt(_)) => v,
            // Exactly, on the mantissa: through f64, -99999999999999.9999 would become
            // -1e14.
            Value::Decimal(d) => int_result(decimal_ceil_floor(d, f == Func::Ceil))?,
            v => {
                let x = v.to_f64().unwrap_or(0.0);
                Value::Double(if f == Func::Ceil { x.ceil() } else { x.floor() })
            }
        },
        Func::Round => {
            let places = if args.len() > 1 {
                ev(1)?.to_i64().unwrap_or(0)
            } else {
                0
            };
            match ev(0)? {
                Value::Null => Value::Null,
                v @ (Value::Int(_) | Value::UInt(_)) if places >= 0 => v,
                Value::Decimal(d) if (0..=30).contains(&places) => {
                    d.rescale(places as u8).map_or(Value::Null, Value::Decimal)
                }
                v => {
                    let x = v.to_f64().unwrap_or(0.0);
                    let m = 10f64.powi(places.clamp(-30, 30) as i32);
                    Value::Double((x * m).round() / m)
                }
            }
        }
        Func::Sqrt => match ev(0)?.to_f64() {
            Some(x) if x >= 0.0 => Value::Double(x.sqrt()),
            _ => Value::Null,
        },
        Func::Pow => match (ev(0)?.to_f64(), ev(1)?.to_f64()) {
            (Some(a), Some(b)) => Value::Double(a.powf(b)),
            _ => Value::Null,
        },
        Func::Coalesce => {
            for i in 0..args.len() {
                let v = ev(i)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Func::NullIf => {
            let (a, b) = (ev(0)?, ev(1)?);
            if a.sql_cmp(&b) == Some(Ordering::Equal) {
                Value::Null
            } else {
                a
            }
        }
        Func::If => {
            if ev(0)?.truth() == Some(true) {
                ev(1)?
            } else {
                ev(2)?
            }
        }
        Func::Greatest | Func::Least => {
            let mut best = ev(0)?;
            for i in 1..args.len() {
                let v = ev(i)?;
                match v.sql_cmp(&best) {
                    None => return Ok(Value::Null),
                    Some(o) => {
                        if (f == Func::Greatest && o == Ordering::Greater)
                            || (f == Func::Least && o == Ordering::Less)
                        {
                            best = v;
                        }
                    }
                }
            }
            if best.is_null() {
                Value::Null
            } else {
                best
            }
        }
        Func::Now => Value::DateTime(ctx.now - ctx.now.rem_euclid(1_000_000)),
        Func::CurDate => {
            let d = DateTime::unpack(ctx.now);
            Value::Date(
                DateTime {
                    year: d.year,
                    month: d.month,
                    day: d.day,
                    ..DateTime::default()
                }
                .pack(),
            )
        }
        Func::Database => ctx.db.map_or(Value::Null, |d| Value::Str(d.to_string())),
        Func::User => Value::Str(ctx.user.to_string()),
        Func::Version => Value::Str(ctx.version.to_string()),
        Func::ConnectionId => Value::UInt(ctx.conn_id),
        Func::LastInsertId => Value::UInt(ctx.last_insert_id),
        Func::Hex => match ev(0)? {
            Value::Null => Value::Null,
            v @ (Value::Int(_) | Value::UInt(_)) => {
                Value::Str(format!("{:X}", v.to_i64().unwrap_or(0)))
            }
            v => Value::Str(
                v.to_text()
                    .unwrap_or_default()
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect(),
            ),
        },
        Func::Year | Func::Month | Func::Day => match to_datetime(&ev(0)?) {
            None => Value::Null,
            Some(p) => {
                let d = DateTime::unpack(p);
                Value::Int(match f {
                    Func::Year => i64::from(d.year),
                    Func::Month => i64::from(d.month),
                    _ => i64::from(d.day),
                })
            }
        },
        Func::Date => cast(ev(0)?, CastTo::Date)?,
    })
}

/// Orders by a collation-aware comparison, for callers outside `Value` (kept here so the
/// string rules live in one place).
pub fn text_cmp(a: &str, b: &str) -> Ordering {
    collate_cmp(a, b)
}

/// Formats a double as MySQL does (re-exported for the SHOW code).
pub fn fmt_double(d: f64) -> String {
    format_double(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_floor_of_decimals_are_exact() {
        let d = |s: &str| Decimal::parse(s).unwrap();
        assert_eq!(
            decimal_ceil_floor(d("-99999999999999.9999"), true),
            -99999999999999
        );
        assert_eq!(
            decimal_ceil_floor(d("-99999999999999.9999"), false),
            -100000000000000
        );
        assert_eq!(decimal_ceil_floor(d("2.5"), true), 3);
        assert_eq!(decimal_ceil_floor(d("2.5"), false), 2);
        assert_eq!(decimal_ceil_floor(d("-3"), true), -3);
        assert!(matches!(
            cast(Value::Decimal(d("-999999.99")), CastTo::Unsigned).unwrap(),
            Value::UInt(0)
        ));
        assert!(matches!(
            cast(Value::Int(-100), CastTo::Unsigned).unwrap(),
            Value::UInt(18446744073709551516)
        ));
    }

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
        assert_eq!(e.code, 1525);
    }

    #[test]
    fn like_matches_with_wildcards_case_and_escape() {
        assert!(like("Hello", "h%o", '\\', true));
        assert!(!like("Hello", "h%o", '\\', false));
        assert!(like("abc", "a_c", '\\', true));
        assert!(!like("abc", "a_", '\\', true));
        assert!(like("a%c", "a\\%c", '\\', true));
        assert!(!like("abc", "a\\%c", '\\', true));
        assert!(like("", "%", '\\', true));
        assert!(like("aXbXc", "%b%c", '\\', true));
        assert!(!like("ab", "%b%c", '\\', true));
    }

    #[test]
    fn arithmetic_is_exact_for_integers_and_decimals() {
        let d = |s: &str| Value::Decimal(Decimal::parse(s).unwrap());
        // Signed overflow is an error; an UNSIGNED operand makes the result UNSIGNED, and a
        // negative one an error.
        assert_eq!(
            arith(Arith::Add, Value::Int(i64::MAX), Value::Int(1))
                .unwrap_err()
                .code,
            1690
        );
        assert!(matches!(
            arith(Arith::Add, Value::UInt(u64::MAX - 1), Value::Int(1)).unwrap(),
            Value::UInt(u64::MAX)
        ));
        assert_eq!(
            arith(Arith::Sub, Value::Int(1), Value::UInt(2))
                .unwrap_err()
                .code,
            1690
        );
        assert!(matches!(
            arith(Arith::Sub, Value::UInt(5), Value::Int(2)).unwrap(),
            Value::UInt(3)
        ));
        assert!(arith(Arith::Mul, Value::Int(i64::MAX), Value::Int(i64::MAX)).is_err());
        assert_eq!(
            arith(Arith::Add, d("0.1"), d("0.2"))
                .unwrap()
                .to_text()
                .unwrap(),
            b"0.3"
        );
        assert_eq!(
            arith(Arith::Div, Value::Int(1), Value::Int(3))
                .unwrap()
                .to_text()
                .unwrap(),
            b"0.3333"
        );
        assert!(arith(Arith::Div, Value::Int(1), Value::Int(0))
            .unwrap()
            .is_null());
        assert!(arith(Arith::Add, Value::Null, Value::Int(0))
            .unwrap()
            .is_null());
        assert_eq!(
            arith(Arith::Mod, Value::Int(-7), Value::Int(3))
                .unwrap()
                .to_i64(),
            Some(-1)
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
}
