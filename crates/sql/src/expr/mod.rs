//! Expressions: compiled once from the parser's AST into [`Expr`] (by
//! `crate::bind::compile`: columns resolved to row positions, `?` to parameter slots), then
//! evaluated per row.

pub mod builtins;
pub(crate) mod eval;

use std::cmp::Ordering;

use crate::expr::builtins::{self as bi, Unit};
use crate::types::collation::{collate_cmp, fold_char, lower_char, upper_char};
use crate::types::convert::temporal::to_datetime;
use crate::types::decimal::Decimal;
use crate::types::sqltype::SqlType;
use crate::types::temporal::{self, DateTime};
use crate::types::value::{format_double, Value};
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
    Repeat,
    Reverse,
    LPad,
    RPad,
    /// LOCATE(needle, hay[, pos]); INSTR and POSITION compile to it.
    Locate,
    SubstringIndex,
    Space,
    Ascii,
    Md5,
    Sha1,
    Sha2,
    ToBase64,
    FromBase64,
    Format,
    Strcmp,
    Sign,
    Truncate,
    Exp,
    Ln,
    /// LOG(x) or LOG(base, x).
    Log,
    Log2,
    Log10,
    Pi,
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
    Rand,
    Crc32,
    /// `date ± INTERVAL n unit` (`true`: subtract); the arguments are the date and n.
    DateAdd(Unit, bool),
    DateDiff,
    TimestampDiff(Unit),
    UnixTimestamp,
    FromUnixtime,
    Hour,
    Minute,
    Second,
    DayOfWeek,
    Weekday,
    DayOfYear,
    DayName,
    MonthName,
    Quarter,
    Week,
    LastDay,
    MakeDate,
    DateFormat,
    StrToDate,
    CurTime,
    Sleep,
    IsNull,
    Field,
    Elt,
    InetAton,
    InetNtoa,
    Uuid,
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
    /// An operand of IF/CASE/COALESCE/LEAST/... converted to the type of the whole, which its
    /// own type differs from (see [`crate::types::typeagg`]): a value of a type, not a CAST.
    Coerce(Box<Expr>, SqlType),
    /// A column of the enclosing query's row (in a correlated subquery).
    Outer(usize),
    /// A subquery: scalar, EXISTS, or the right side of IN.
    Subquery(std::sync::Arc<dyn SubqueryPlan>, SubKind),
}

/// A compiled subquery as an expression holds it. Its plan (`plan::select::SubPlan`) is of a
/// higher layer than expr/, so expressions see it through this trait and exec/ reads the plan
/// back with `as_any` (until the statement's side table of subqueries, step B8).
pub trait SubqueryPlan: std::fmt::Debug + Send + Sync {
    /// Columns of the enclosing query's row it reads (none: it is run once per statement).
    fn outer_cols(&self) -> &[usize];
    /// How many columns its rows show.
    fn visible(&self) -> usize;
    /// The type of its (first) column: a scalar subquery's value.
    fn result_type(&self) -> SqlType;
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Runs the subqueries of a running plan (`exec::SubCtx`): the transaction they read and
/// the rows of the uncorrelated ones, handed down in [`Ctx::sub`].
pub trait SubqueryRunner {
    /// The value of subquery expression `p`/`kind` for `row` (the enclosing query's row).
    fn eval(
        &self,
        p: &std::sync::Arc<dyn SubqueryPlan>,
        kind: &SubKind,
        row: &[Value],
        ctx: &Ctx,
    ) -> Result<Value, SqlError>;
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
    pub virtual_rows: Option<&'a [(crate::catalog::system::SystemTable, Vec<Vec<Value>>)]>,
    /// What subqueries read through: set by the plan that runs them (`exec::SubCtx`).
    pub sub: Option<&'a dyn SubqueryRunner>,
    /// The row of the enclosing query, for a correlated subquery's outer references.
    pub outer: &'a [Value],
    /// Set by `KILL QUERY`: long scans check it every few hundred rows.
    /// The statement's stop signal and memory budget (`None`: internal evaluation).
    pub killed: Option<&'a crate::runtime::limits::Interrupt>,
}

impl<'a> Ctx<'a> {
    /// The rows of `information_schema` table `kind`, computed by the session for every such
    /// table the statement reads (joins, UNION operands and subqueries included).
    pub fn virtual_of(
        &self,
        kind: crate::catalog::system::SystemTable,
    ) -> Result<&'a [Vec<Value>], SqlError> {
        self.virtual_rows
            .and_then(|v| v.iter().find(|(k, _)| *k == kind))
            .map(|(_, rows)| rows.as_slice())
            .ok_or_else(|| SqlError::internal("information_schema rows were not computed"))
    }

    /// The statement's error once it has been stopped: 1317 (KILL), 3024 or 1969 (time).
    pub fn check_killed(&self) -> Result<(), SqlError> {
        match self.killed {
            Some(k) if k.is_set() => Err(k.error()),
            _ => Ok(()),
        }
    }

    /// Charges `bytes` the statement now holds in memory against its budget.
    pub fn charge(&self, bytes: u64) -> Result<(), SqlError> {
        match self.killed {
            Some(k) => k.charge(bytes),
            None => Ok(()),
        }
    }
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
                    Ok(division_by_zero())
                } else {
                    typed(Some(x / y))
                }
            }
            Arith::Mod => {
                if y == 0 {
                    Ok(division_by_zero())
                } else {
                    int_result(x % y)
                }
            }
            Arith::Div => {
                if y == 0 {
                    return Ok(division_by_zero());
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
                    return Ok(division_by_zero());
                }
                x.div(y)
            }
            Arith::IntDiv => {
                if y.mant == 0 {
                    return Ok(division_by_zero());
                }
                let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
                return decimal_int_div(x, y, unsigned);
            }
            Arith::Mod => {
                if y.mant == 0 {
                    return Ok(division_by_zero());
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
    if op == Arith::IntDiv {
        // MariaDB divides other operands as DECIMALs too: a double as its shortest decimal
        // form (0.3e0 DIV 0.1e0 is 3, where the doubles' quotient is 2.9999999999999996).
        let dec = |v: &Value| match v {
            Value::Double(f) => Decimal::parse(&format!("{f}")),
            other => other.to_decimal(),
        };
        if let (Some(x), Some(y)) = (dec(&a), dec(&b)) {
            if y.mant == 0 {
                return Ok(division_by_zero());
            }
            let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
            return decimal_int_div(x, y, unsigned);
        }
    }
    let (x, y) = (a.to_f64().unwrap_or(0.0), b.to_f64().unwrap_or(0.0));
    Ok(match op {
        Arith::Add => Value::Double(x + y),
        Arith::Sub => Value::Double(x - y),
        Arith::Mul => Value::Double(x * y),
        Arith::Div if y == 0.0 => division_by_zero(),
        Arith::Div => Value::Double(x / y),
        Arith::IntDiv if y == 0.0 => division_by_zero(),
        Arith::IntDiv => {
            let q = (x / y).trunc();
            // i64::MAX as f64 rounds up to 2^63, which is out of range itself.
            if !(q >= i64::MIN as f64 && q < i64::MAX as f64) {
                return Err(SqlError::new(1690, "22003", "BIGINT value is out of range"));
            }
            Value::Int(q as i64)
        }
        Arith::Mod if y == 0.0 => division_by_zero(),
        Arith::Mod => Value::Double(x % y),
    })
}

/// NULL, with warning 1365 (an error in strict INSERT and UPDATE: ERROR_FOR_DIVISION_BY_ZERO,
/// on by default in MariaDB 10.11).
fn division_by_zero() -> Value {
    crate::types::diag::warn(1365, || "Division by 0".to_string());
    Value::Null
}

/// `x DIV y` (y not zero) exactly, at a common scale: through a double the last digits of a
/// quotient near 1e16 and beyond were lost. The result is a BIGINT (UNSIGNED with an UNSIGNED
/// operand), and one out of its range is error 1690, as in MySQL.
fn decimal_int_div(x: Decimal, y: Decimal, unsigned: bool) -> Result<Value, SqlError> {
    let out_of_range = || {
        let what = if unsigned {
            "BIGINT UNSIGNED"
        } else {
            "BIGINT"
        };
        SqlError::new(1690, "22003", format!("{what} value is out of range"))
    };
    let s = x.scale.max(y.scale);
    let q = match (x.rescale(s), y.rescale(s)) {
        (Some(p), Some(q)) => p.mant / q.mant,
        // Scales too far apart for a common one: the quotient is 0 or out of range anyway,
        // which the double tells.
        _ => {
            let f = (x.to_f64() / y.to_f64()).trunc();
            if f.abs() >= 18_446_744_073_709_551_616.0 {
                return Err(out_of_range());
            }
            f as i128
        }
    };
    if unsigned {
        u64::try_from(q)
            .map(Value::UInt)
            .map_err(|_| out_of_range())
    } else {
        i64::try_from(q).map(Value::Int).map_err(|_| out_of_range())
    }
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
            fixed &= !matches!(
                e,
                Expr::Col(_)
                    | Expr::Subquery(..)
                    | Expr::Func(Func::Rand | Func::Sleep | Func::Uuid, _)
            )
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
            Expr::Func(Func::Date, args) if args.len() == 1 => (&args[0], Value::Date(0)),
            Expr::Cast(arg, CastTo::Date) => (&**arg, Value::Date(0)),
            Expr::Cast(arg, CastTo::DateTime) => (&**arg, Value::DateTime(0)),
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
                    None => {
                        return Err(SqlError::new(1690, "22003", "BIGINT value is out of range"))
                    }
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
            Expr::Coerce(x, ty) => crate::types::typeagg::conform(x.eval(row, ctx)?, *ty),
            Expr::Func(f, args) => func(*f, args, row, ctx)?,
            Expr::Outer(i) => ctx
                .outer
                .get(*i)
                .cloned()
                .ok_or_else(|| SqlError::internal("outer column out of range"))?,
            Expr::Subquery(p, kind) => ctx
                .sub
                .ok_or_else(|| SqlError::internal("a subquery outside a transaction"))?
                .eval(p, kind, row, ctx)?,
        })
    }

    /// WHERE semantics: only TRUE passes.
    pub fn test(&self, row: &[Value], ctx: &Ctx) -> Result<bool, SqlError> {
        Ok(self.eval(row, ctx)?.truth() == Some(true))
    }

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
        const BIGINT: SqlType = SqlType::Int {
            bytes: 8,
            unsigned: false,
        };
        // Comparisons, logic and the small integer functions are INTs in MariaDB.
        const INT: SqlType = SqlType::Int {
            bytes: 4,
            unsigned: false,
        };
        const TEXT: SqlType = SqlType::Varchar {
            len: 255,
            binary: false,
        };
        use crate::types::typeagg::{min_max_of, result_of};
        let operands = |l: &[Expr]| l.iter().map(|a| a.type_of(row_types)).collect::<Vec<_>>();
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
                Func::ConnectionId | Func::LastInsertId => BIGINT,
                Func::Length | Func::CharLength | Func::Year | Func::Month | Func::Day => INT,
                // ROUND of a DECIMAL to constant places has that scale (MariaDB pads:
                // ROUND(1.5, 3) is 1.500); without places, scale 0.
                Func::Round if args.len() == 1 || matches!(args.get(1), Some(Expr::Const(_))) => {
                    match args.first().map(|a| a.result_type(row_types)) {
                        Some(SqlType::Decimal { precision, scale }) => {
                            let places = match args.get(1) {
                                Some(Expr::Const(v)) => v.to_i64().unwrap_or(0).clamp(0, 30) as u8,
                                _ => 0,
                            };
                            SqlType::Decimal {
                                // One more integer digit for a carry (9.5 rounds to 10).
                                precision: (precision.saturating_sub(scale) + 1 + places).min(65),
                                scale: places,
                            }
                        }
                        // To tens or more a BIGINT may need a 20th digit: MariaDB makes it a
                        // DECIMAL.
                        Some(SqlType::Int { bytes: 8, .. })
                            if matches!(args.get(1), Some(Expr::Const(v))
                                if v.to_i64().is_some_and(|p| p < 0)) =>
                        {
                            SqlType::Decimal {
                                precision: 21,
                                scale: 0,
                            }
                        }
                        Some(t) if t.is_integer() => BIGINT,
                        _ => SqlType::Double,
                    }
                }
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
                Func::Sqrt
                | Func::Pow
                | Func::Exp
                | Func::Ln
                | Func::Log
                | Func::Log2
                | Func::Log10
                | Func::Pi
                | Func::Degrees
                | Func::Radians
                | Func::Sin
                | Func::Cos
                | Func::Tan
                | Func::Rand => SqlType::Double,
                Func::Locate
                | Func::Ascii
                | Func::Strcmp
                | Func::Sign
                | Func::DateDiff
                | Func::Hour
                | Func::Minute
                | Func::Second
                | Func::DayOfWeek
                | Func::Weekday
                | Func::DayOfYear
                | Func::Quarter
                | Func::Week
                | Func::Sleep
                | Func::IsNull
                | Func::Field => INT,
                Func::TimestampDiff(_) | Func::UnixTimestamp | Func::InetAton => BIGINT,
                Func::Truncate => match args.first().map(|a| a.result_type(row_types)) {
                    Some(t) if t.is_integer() => t,
                    Some(SqlType::Decimal { precision, scale }) => SqlType::Decimal {
                        precision,
                        scale: match args.get(1) {
                            Some(Expr::Const(v)) => v.to_i64().unwrap_or(0).clamp(0, 30) as u8,
                            _ => scale,
                        },
                    },
                    _ => SqlType::Double,
                },
                Func::Crc32 => SqlType::Int {
                    bytes: 4,
                    unsigned: true,
                },
                Func::LastDay | Func::MakeDate => SqlType::Date,
                Func::FromUnixtime => SqlType::DateTime { fsp: 0 },
                Func::FromBase64 => SqlType::Varchar {
                    len: 255,
                    binary: true,
                },
                Func::DateAdd(unit, _) => match args.first().map(|a| a.result_type(row_types)) {
                    Some(SqlType::Date) if unit.is_date_part() => SqlType::Date,
                    Some(SqlType::Date | SqlType::DateTime { .. } | SqlType::Timestamp { .. }) => {
                        SqlType::DateTime {
                            fsp: if *unit == Unit::Microsecond { 6 } else { 0 },
                        }
                    }
                    _ => TEXT,
                },
                Func::StrToDate => match args.get(1) {
                    Some(Expr::Const(Value::Str(f))) => match bi::str_to_date_kind(f) {
                        bi::Parsed::Date => SqlType::Date,
                        bi::Parsed::DateTime => SqlType::DateTime { fsp: 0 },
                        bi::Parsed::Time => TEXT,
                    },
                    _ => SqlType::DateTime { fsp: 0 },
                },
                // `DEFAULT` in INSERT compiles to a COALESCE without arguments.
                Func::Coalesce if args.is_empty() => TEXT,
                Func::Coalesce => return result_of(operands(args)),
                Func::Greatest | Func::Least => return min_max_of(operands(args)),
                Func::NullIf => return args.first().and_then(|a| a.type_of(row_types)),
                // IF of two NULLs is a (binary, empty) string to MariaDB, not the NULL type.
                Func::If => result_of(operands(args.get(1..).unwrap_or_default())).unwrap_or(
                    SqlType::Char {
                        len: 0,
                        binary: false,
                    },
                ),
                Func::Now => SqlType::DateTime { fsp: 0 },
                Func::CurDate | Func::Date => SqlType::Date,
                _ => TEXT,
            },
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
        CastTo::Date => match to_datetime_arg(&v) {
            Some(d) => Value::Date(DateTime::unpack(d).date_part().pack()),
            None => Value::Null,
        },
        CastTo::DateTime => match to_datetime_arg(&v) {
            Some(d) => Value::DateTime(d),
            None => Value::Null,
        },
    })
}

/// [`to_datetime`] for a function's argument or a CAST: a value that is not a date is NULL
/// with warning 1292.
fn to_datetime_arg(v: &Value) -> Option<i64> {
    let r = to_datetime(v);
    if r.is_none() && !v.is_null() {
        crate::types::diag::warn(1292, || {
            let t = v.to_text().unwrap_or_default();
            format!(
                "Incorrect datetime value: '{}'",
                crate::types::diag::quoted(&t)
            )
        });
    }
    r
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
        // The collation's one-to-one case maps, not Rust's (UPPER('ß') is 'ß' in MariaDB).
        Func::Upper => str_or_null(s(0)?.map(|x| x.chars().map(upper_char).collect())),
        Func::Lower => str_or_null(s(0)?.map(|x| x.chars().map(lower_char).collect())),
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
                // Tens, hundreds, ... of an exact number: exactly, halves away from zero
                // (ROUND(15, -1) is 20; a double would make 5 * 0.1 a tie and round it to
                // even), and beyond BIGINT as a DECIMAL, as MariaDB does.
                v @ (Value::Int(_) | Value::UInt(_) | Value::Decimal(_)) if places < 0 => {
                    let Some(d) = v.to_decimal() else {
                        return Ok(Value::Null);
                    };
                    let k = places.unsigned_abs().min(60) as u32;
                    let r = match 10i128.checked_pow(u32::from(d.scale) + k) {
                        // Every DECIMAL is below 10^38: it rounds to 0.
                        None => 0,
                        Some(unit) => {
                            let (q, rem) = (d.mant / unit, d.mant % unit);
                            let q = if rem.abs() * 2 >= unit {
                                q + d.mant.signum()
                            } else {
                                q
                            };
                            q.checked_mul(10i128.pow(k)).ok_or_else(|| {
                                SqlError::new(1690, "22003", "DECIMAL value is out of range")
                            })?
                        }
                    };
                    match v {
                        Value::Decimal(_) => Value::Decimal(Decimal { mant: r, scale: 0 }),
                        _ => int_result(r).unwrap_or(Value::Decimal(Decimal { mant: r, scale: 0 })),
                    }
                }
                v => {
                    // Halves go to the even neighbour, as MariaDB's rint() does
                    // (ROUND(0.5e0) is 0, ROUND(2.5e0) is 2); negative places divide, so
                    // that 15 reads as exactly 1.5 tens.
                    let x = v.to_f64().unwrap_or(0.0);
                    let m = 10f64.powi(places.unsigned_abs().min(30) as i32);
                    Value::Double(if places >= 0 {
                        (x * m).round_ties_even() / m
                    } else {
                        (x / m).round_ties_even() * m
                    })
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
            Value::Int(i) => Value::Str(format!("{i:X}")),
            Value::UInt(u) => Value::Str(format!("{u:X}")),
            // A DECIMAL or DOUBLE is hexed as the integer it rounds to (halves away from zero),
            // as a 64-bit two's complement; beyond that range, all ones, as MariaDB does.
            v @ (Value::Decimal(_) | Value::Double(_)) => {
                let r = match v {
                    Value::Decimal(d) => d.rescale(0).map(|d| d.mant),
                    other => other
                        .to_f64()
                        .filter(|f| f.is_finite() && f.abs() < 1e20)
                        .map(|f| f.round() as i128),
                };
                let bits = match r {
                    Some(n) if i64::try_from(n).is_ok() => n as i64 as u64,
                    Some(n) if u64::try_from(n).is_ok() => n as u64,
                    _ => u64::MAX,
                };
                Value::Str(format!("{bits:X}"))
            }
            v => Value::Str(
                v.to_text()
                    .unwrap_or_default()
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect(),
            ),
        },
        Func::Year | Func::Month | Func::Day => match to_datetime_arg(&ev(0)?) {
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
        _ => more_func(f, args, row, ctx)?,
    })
}

/// An integer argument as MariaDB reads a count: a BIGINT UNSIGNED above BIGINT's range wraps
/// to a negative value.
fn count_arg(v: &Value) -> Option<i64> {
    match v {
        Value::UInt(u) => Some(*u as i64),
        // A DOUBLE rounds half to even (2.5 is 2), as MariaDB's rint() does.
        Value::Double(f) => {
            let r = f.round_ties_even();
            Some(if r >= i64::MAX as f64 {
                i64::MAX
            } else if r <= i64::MIN as f64 {
                i64::MIN
            } else {
                r as i64
            })
        }
        // A DATETIME as a number is YYYYMMDDhhmmss even at midnight.
        Value::DateTime(p) => {
            let d = DateTime::unpack(*p);
            Some(
                ((i64::from(d.year) * 100 + i64::from(d.month)) * 100 + i64::from(d.day))
                    * 1_000_000
                    + (i64::from(d.hour) * 100 + i64::from(d.minute)) * 100
                    + i64::from(d.second),
            )
        }
        other => other.to_i64(),
    }
}

/// The digits of fraction a temporal string result shows: MariaDB types it at compile time,
/// from a literal's own digits, or 6 for a value that is not a constant (a column).
fn arg_fsp(e: &Expr, v: &Value) -> u8 {
    match (e, v) {
        (Expr::Const(_), v) => bi::fraction_digits(v),
        // Another temporal function's text already shows the digits it was typed with.
        (Expr::Func(Func::DateAdd(..) | Func::FromUnixtime | Func::StrToDate, _), v) => {
            bi::fraction_digits(v)
        }
        (_, Value::Str(_) | Value::Bytes(_)) => 6,
        _ => 0,
    }
}

/// The digits of fraction an `INTERVAL n SECOND` adds: a DECIMAL's scale, 6 for a DOUBLE or a
/// string that is not a constant.
fn interval_fsp(e: &Expr, n: &Value, unit: Unit) -> u8 {
    match (unit, n) {
        (Unit::Microsecond, _) => 6,
        (Unit::Second, Value::Decimal(d)) => d.scale.min(6),
        (Unit::Second, Value::Double(_)) => 6,
        (Unit::Second, Value::Str(_)) if !matches!(e, Expr::Const(_)) => 6,
        _ => 0,
    }
}

fn double_or_null(x: f64) -> Value {
    if x.is_finite() {
        Value::Double(x)
    } else {
        Value::Null
    }
}

/// A date result as its argument's kind: a DATE or DATETIME stays one, a string or number
/// becomes a string (a date without time when it had none and the unit is of days or more).
fn temporal_result(arg: &Value, d: DateTime, had_time: bool, date_unit: bool, fsp: u8) -> Value {
    match arg {
        Value::Date(_) if date_unit => Value::Date(d.pack()),
        // A DATETIME(n) result prints n digits of fraction, zeros too: only text can say so.
        Value::Date(_) | Value::DateTime(_) if fsp == 0 => Value::DateTime(d.pack()),
        Value::Date(_) | Value::DateTime(_) => Value::Str(d.format(fsp)),
        _ if !had_time && date_unit => Value::Str(d.format_date()),
        _ => Value::Str(d.format(fsp)),
    }
}

/// The time now, as microseconds since the epoch, from the statement's packed start time.
fn now_micros(ctx: &Ctx) -> i128 {
    temporal::to_micros(&DateTime::unpack(ctx.now))
}

fn next_random() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0x9E37_79B9_7F4A_7C15);
            let here = &x as *const u64 as u64;
            x = (t ^ here.rotate_left(32)) | 1;
        }
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// The functions added with the calendar, string and math helpers of [`crate::expr::builtins`].
fn more_func(f: Func, args: &[Expr], row: &[Value], ctx: &Ctx) -> Result<Value, SqlError> {
    let ev = |i: usize| args[i].eval(row, ctx);
    let s = |i: usize| text_arg(args, i, row, ctx);
    // A DATETIME reads as YYYYMMDDhhmmss here, also at midnight (Value::to_f64 keeps
    // midnight as YYYYMMDD for its comparisons with date numbers).
    let num = |i: usize| -> Result<Option<f64>, SqlError> {
        Ok(match ev(i)? {
            v @ Value::DateTime(_) => count_arg(&v).map(|n| n as f64),
            v => v.to_f64(),
        })
    };
    let date = |i: usize| -> Result<Option<DateTime>, SqlError> {
        Ok(bi::temporal(&ev(i)?)
            .map(|(d, _)| d)
            .filter(|d| !temporal::is_zero_date(d)))
    };
    let int = |x: i64| Value::Int(x);
    Ok(match f {
        Func::Repeat => {
            let (Some(x), Some(n)) = (s(0)?, count_arg(&ev(1)?)) else {
                return Ok(Value::Null);
            };
            if n <= 0 || x.is_empty() {
                return Ok(Value::Str(String::new()));
            }
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if x.len().saturating_mul(n) > bi::MAX_RESULT_BYTES {
                return Ok(Value::Null);
            }
            Value::Str(x.repeat(n))
        }
        Func::Reverse => match ev(0)? {
            Value::Null => Value::Null,
            Value::Bytes(mut b) => {
                b.reverse();
                Value::Bytes(b)
            }
            v => Value::Str(
                v.to_string_lossy()
                    .unwrap_or_default()
                    .chars()
                    .rev()
                    .collect(),
            ),
        },
        Func::LPad | Func::RPad => {
            let (Some(x), Some(n), Some(p)) = (s(0)?, count_arg(&ev(1)?), s(2)?) else {
                return Ok(Value::Null);
            };
            bi::pad(&x, n, &p, f == Func::LPad).map_or(Value::Null, Value::Str)
        }
        Func::Locate => {
            let (needle, hay) = (ev(0)?, ev(1)?);
            if needle.is_null() || hay.is_null() {
                return Ok(Value::Null);
            }
            let pos = if args.len() > 2 {
                match count_arg(&ev(2)?) {
                    None => return Ok(Value::Null),
                    p => p,
                }
            } else {
                None
            };
            let ci = !matches!(needle, Value::Bytes(_)) && !matches!(hay, Value::Bytes(_));
            int(bi::locate(
                &needle.to_string_lossy().unwrap_or_default(),
                &hay.to_string_lossy().unwrap_or_default(),
                pos,
                ci,
            ))
        }
        Func::SubstringIndex => {
            let (Some(x), Some(d), Some(n)) = (s(0)?, s(1)?, count_arg(&ev(2)?)) else {
                return Ok(Value::Null);
            };
            // MariaDB keeps the count in 32 bits: 4294967295 counts as -1.
            Value::Str(bi::substring_index(&x, &d, i64::from(n as i32)))
        }
        Func::Space => match count_arg(&ev(0)?) {
            None => Value::Null,
            Some(n) if n <= 0 => Value::Str(String::new()),
            Some(n) if n as u64 > bi::MAX_RESULT_BYTES as u64 => Value::Null,
            Some(n) => Value::Str(" ".repeat(n as usize)),
        },
        Func::Ascii => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => int(i64::from(b.first().copied().unwrap_or(0))),
        },
        Func::Md5 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => Value::Str(bi::hex_lower(&bi::md5(&b))),
        },
        Func::Sha1 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => {
                use sha1::Digest;
                Value::Str(bi::hex_lower(&sha1::Sha1::digest(&b)))
            }
        },
        Func::Sha2 => {
            let Some(b) = ev(0)?.to_text() else {
                return Ok(Value::Null);
            };
            // A NULL length reads as 0, which means 256.
            let n = count_arg(&ev(1)?).unwrap_or(0);
            use sha2::Digest;
            Value::Str(match n {
                0 | 256 => bi::hex_lower(&sha2::Sha256::digest(&b)),
                224 => bi::hex_lower(&sha2::Sha224::digest(&b)),
                384 => bi::hex_lower(&sha2::Sha384::digest(&b)),
                512 => bi::hex_lower(&sha2::Sha512::digest(&b)),
                _ => return Ok(Value::Null),
            })
        }
        Func::ToBase64 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => Value::Str(bi::to_base64(&b)),
        },
        Func::FromBase64 => match ev(0)?.to_text() {
            None => Value::Null,
            Some(b) => bi::from_base64(&b).map_or(Value::Null, Value::Bytes),
        },
        Func::Format => {
            let (v, d) = (ev(0)?, count_arg(&ev(1)?));
            match d {
                None => Value::Null,
                // The places are kept in 32 bits, as MariaDB does.
                Some(d) => {
                    bi::format_number(&v, i64::from(d as i32)).map_or(Value::Null, Value::Str)
                }
            }
        }
        Func::Strcmp => {
            let (a, b) = (ev(0)?, ev(1)?);
            if a.is_null() || b.is_null() {
                return Ok(Value::Null);
            }
            let o = if matches!(a, Value::Bytes(_)) || matches!(b, Value::Bytes(_)) {
                a.to_text().cmp(&b.to_text())
            } else {
                collate_cmp(
                    &a.to_string_lossy().unwrap_or_default(),
                    &b.to_string_lossy().unwrap_or_default(),
                )
            };
            int(o as i64)
        }
        Func::Sign => match ev(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => int(i.signum()),
            Value::UInt(u) => int(i64::from(u > 0)),
            Value::Decimal(d) => int(d.mant.signum() as i64),
            v => {
                let x = v.to_f64().unwrap_or(0.0);
                int(if x > 0.0 {
                    1
                } else if x < 0.0 {
                    -1
                } else {
                    0
                })
            }
        },
        Func::Truncate => {
            let (v, d) = (ev(0)?, count_arg(&ev(1)?));
            let Some(d) = d else {
                return Ok(Value::Null);
            };
            let scale = match (&v, &args[1]) {
                (Value::Decimal(x), e) if !matches!(e, Expr::Const(_)) => Some(x.scale),
                _ => None,
            };
            match (truncate(v, d)?, scale) {
                // With a places argument that is not a constant, MariaDB types the result
                // with the argument's scale and prints every value at it.
                (Value::Decimal(r), Some(s)) => Value::Decimal(r.rescale(s).unwrap_or(r)),
                (r, _) => r,
            }
        }
        Func::Exp => match num(0)? {
            None => Value::Null,
            Some(x) => {
                let r = x.exp();
                if r.is_infinite() {
                    return Err(SqlError::new(
                        1690,
                        "22003",
                        format!(
                            "DOUBLE value is out of range in 'exp({})'",
                            format_double(x)
                        ),
                    ));
                }
                Value::Double(r)
            }
        },
        Func::Ln | Func::Log2 | Func::Log10 | Func::Log if args.len() == 1 => match num(0)? {
            Some(x) if x > 0.0 => Value::Double(match f {
                // As MariaDB computes it (x.log2() differs in the last digit).
                Func::Log2 => x.ln() / std::f64::consts::LN_2,
                Func::Log10 => x.log10(),
                _ => x.ln(),
            }),
            // MariaDB reports the logarithm of a number that is not positive as a division by
            // zero (1365).
            Some(_) => division_by_zero(),
            None => Value::Null,
        },
        Func::Log => match (num(0)?, num(1)?) {
            (Some(base), Some(x)) if base > 0.0 && base != 1.0 && x > 0.0 => {
                double_or_null(x.ln() / base.ln())
            }
            (Some(_), Some(_)) => division_by_zero(),
            _ => Value::Null,
        },
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Degrees | Func::Radians | Func::Sin | Func::Cos | Func::Tan => match num(0)? {
            None => Value::Null,
            Some(x) => double_or_null(match f {
                Func::Degrees => x.to_degrees(),
                Func::Radians => x.to_radians(),
                Func::Sin => x.sin(),
                Func::Cos => x.cos(),
                _ => x.tan(),
            }),
        },
        Func::Rand => Value::Double((next_random() >> 11) as f64 / (1u64 << 53) as f64),
        Func::Crc32 => match ev(0)?.to_text() {
            None => Value::Null,
            // INT UNSIGNED in MariaDB: `CRC32(x) * -1` is out of range there too.
            Some(b) => Value::UInt(u64::from(bi::crc32(&b))),
        },
        Func::DateAdd(unit, sub) => {
            let (arg, n) = (ev(0)?, ev(1)?);
            if arg.is_null() || n.is_null() {
                return Ok(Value::Null);
            }
            let Some((d, had_time)) = bi::temporal(&arg) else {
                return Ok(Value::Null);
            };
            let mut amount = match unit {
                Unit::Second => bi::seconds_to_micros(&n),
                _ => count_arg(&n).map(i128::from),
            }
            .unwrap_or(0);
            if sub {
                amount = -amount;
            }
            let Some(r) = bi::add_interval(&d, unit, amount) else {
                crate::types::diag::warn(1441, || {
                    "Datetime function: datetime field overflow".to_string()
                });
                return Ok(Value::Null);
            };
            let fsp = arg_fsp(&args[0], &arg).max(interval_fsp(&args[1], &n, unit));
            temporal_result(&arg, r, had_time, unit.is_date_part(), fsp)
        }
        Func::DateDiff => match (date(0)?, date(1)?) {
            (Some(a), Some(b)) => int(temporal::daynr(&a) - temporal::daynr(&b)),
            _ => Value::Null,
        },
        Func::TimestampDiff(unit) => match (date(0)?, date(1)?) {
            (Some(a), Some(b)) => int(bi::timestamp_diff(unit, &a, &b)),
            _ => Value::Null,
        },
        Func::UnixTimestamp if args.is_empty() => int((now_micros(ctx) / 1_000_000) as i64),
        Func::UnixTimestamp => {
            let v = ev(0)?;
            let Some(d) = date(0)? else {
                return Ok(Value::Null);
            };
            let us = temporal::to_micros(&d);
            if !(0..=2_147_483_647_999_999).contains(&us) {
                return Ok(Value::Null);
            }
            let scale = match &v {
                Value::DateTime(_) if d.micro != 0 => 6,
                _ => arg_fsp(&args[0], &v),
            };
            if scale == 0 {
                int((us / 1_000_000) as i64)
            } else {
                Value::Decimal(
                    Decimal { mant: us, scale: 6 }
                        .rescale(scale)
                        .ok_or_else(|| SqlError::internal("timestamp"))?,
                )
            }
        }
        Func::FromUnixtime => {
            let Some(us) = bi::seconds_to_micros(&ev(0)?) else {
                return Ok(Value::Null);
            };
            if !(0..=2_147_483_647_999_999).contains(&us) {
                return Ok(Value::Null);
            }
            let Some(d) = temporal::from_micros(us) else {
                return Ok(Value::Null);
            };
            match ev(0)? {
                // The fraction prints with the argument's digits (`1.5` gives `...:01.5`).
                Value::Decimal(x) if x.scale > 0 => Value::Str(d.format(x.scale.min(6))),
                _ => Value::DateTime(d.pack()),
            }
        }
        Func::Hour | Func::Minute | Func::Second => match match &args[0] {
            // DATE_ADD on a string gives a string, but a temporal one: its time of day, not
            // a TIME number read from its digits.
            Expr::Func(Func::DateAdd(..), _) => bi::temporal(&ev(0)?)
                .map(|(d, _)| (i64::from(d.hour), i64::from(d.minute), i64::from(d.second))),
            _ => bi::time_of(&ev(0)?),
        } {
            None => Value::Null,
            Some((h, m, sec)) => int(match f {
                Func::Hour => h,
                Func::Minute => m,
                _ => sec,
            }),
        },
        Func::DayOfWeek | Func::Weekday | Func::DayOfYear | Func::DayName => match date(0)? {
            None => Value::Null,
            Some(d) => match f {
                Func::DayOfWeek => int((temporal::weekday(&d) + 1) % 7 + 1),
                Func::Weekday => int(temporal::weekday(&d)),
                Func::DayOfYear => int(temporal::day_of_year(&d)),
                _ => Value::Str(bi::DAY_NAMES[temporal::weekday(&d) as usize].to_string()),
            },
        },
        Func::MonthName | Func::Quarter => match bi::temporal(&ev(0)?) {
            None => Value::Null,
            Some((d, _)) if f == Func::Quarter => int((i64::from(d.month) + 2) / 3),
            Some((d, _)) => match usize::from(d.month).checked_sub(1) {
                Some(m) => Value::Str(bi::MONTH_NAMES[m].to_string()),
                None => Value::Null,
            },
        },
        Func::Week => {
            let mode = if args.len() > 1 {
                match count_arg(&ev(1)?) {
                    None => return Ok(Value::Null),
                    Some(m) => m,
                }
            } else {
                0
            };
            match date(0)? {
                None => Value::Null,
                Some(d) => int(temporal::calc_week(&d, temporal::week_mode(mode)).0),
            }
        }
        Func::LastDay => match date(0)? {
            None => Value::Null,
            Some(d) => Value::Date(
                DateTime {
                    year: d.year,
                    month: d.month,
                    day: crate::types::temporal::days_in_month(d.year, d.month),
                    ..DateTime::default()
                }
                .pack(),
            ),
        },
        Func::MakeDate => {
            let (Some(y), Some(n)) = (count_arg(&ev(0)?), count_arg(&ev(1)?)) else {
                return Ok(Value::Null);
            };
            if n <= 0 || n > 4_000_000 || !(0..=9999).contains(&y) {
                return Ok(Value::Null);
            }
            let y = match y {
                0..=69 => y + 2000,
                70..=99 => y + 1900,
                y => y,
            };
            let days = temporal::days_from_civil(y, 1, 1) + (n - 1);
            let (yy, m, d) = temporal::civil_from_days(days);
            if yy > 9999 {
                return Ok(Value::Null);
            }
            Value::Date(
                DateTime {
                    year: yy as u16,
                    month: m,
                    day: d,
                    ..DateTime::default()
                }
                .pack(),
            )
        }
        Func::DateFormat => {
            let (v, fmt) = (ev(0)?, s(1)?);
            let (Some((d, _)), Some(fmt)) = (bi::temporal(&v), fmt) else {
                return Ok(Value::Null);
            };
            if fmt.is_empty() {
                // An empty format is NULL in MariaDB, not ''.
                return Ok(Value::Null);
            }
            bi::date_format(&d, &fmt).map_or(Value::Null, Value::Str)
        }
        Func::StrToDate => {
            let (Some(text), Some(fmt)) = (s(0)?, s(1)?) else {
                return Ok(Value::Null);
            };
            let Some(d) = bi::str_to_date(&text, &fmt) else {
                return Ok(Value::Null);
            };
            match bi::str_to_date_kind(&fmt) {
                bi::Parsed::Date => Value::Date(d.date_part().pack()),
                bi::Parsed::DateTime => Value::DateTime(d.pack()),
                bi::Parsed::Time => {
                    let mut t = format!("{:02}:{:02}:{:02}", d.hour, d.minute, d.second);
                    if d.micro != 0 {
                        t.push_str(&format!(".{:06}", d.micro));
                    }
                    Value::Str(t)
                }
            }
        }
        Func::CurTime => {
            let d = DateTime::unpack(ctx.now);
            Value::Str(format!("{:02}:{:02}:{:02}", d.hour, d.minute, d.second))
        }
        Func::Sleep => {
            let secs = num(0)?.unwrap_or(0.0);
            if secs > 0.0 && secs.is_finite() {
                std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(1e9)));
            }
            int(0)
        }
        Func::IsNull => int(i64::from(ev(0)?.is_null())),
        Func::Field => {
            let vals = args
                .iter()
                .map(|a| a.eval(row, ctx))
                .collect::<Result<Vec<_>, _>>()?;
            if vals[0].is_null() {
                return Ok(int(0));
            }
            // All strings compare as strings, all numbers as numbers, a mix as doubles.
            let strings = vals
                .iter()
                .all(|v| matches!(v, Value::Str(_) | Value::Bytes(_) | Value::Null));
            let numbers = vals.iter().all(|v| v.is_numeric() || v.is_null());
            for (i, v) in vals.iter().enumerate().skip(1) {
                let eq = if strings || numbers {
                    vals[0].sql_cmp(v) == Some(Ordering::Equal)
                } else {
                    matches!((vals[0].to_f64(), v.to_f64()), (Some(a), Some(b)) if a == b)
                };
                if eq {
                    return Ok(int(i as i64));
                }
            }
            int(0)
        }
        // MariaDB keeps the low 32 bits of the index (ELT(-9223372036854775807, 'a') is 'a').
        Func::Elt => match count_arg(&ev(0)?).map(|n| n as u32 as usize) {
            Some(n) if n >= 1 && n < args.len() => match ev(n)? {
                Value::Null => Value::Null,
                Value::Bytes(b) => Value::Bytes(b),
                v => Value::Str(v.to_string_lossy().unwrap_or_default()),
            },
            _ => Value::Null,
        },
        Func::InetAton => match s(0)? {
            None => Value::Null,
            Some(x) => bi::inet_aton(&x).map_or(Value::Null, |n| int(n as i64)),
        },
        Func::InetNtoa => match ev(0)? {
            Value::Null => Value::Null,
            v => match count_arg(&v) {
                Some(n) if n >= 0 => bi::inet_ntoa(n as u64).map_or(Value::Null, Value::Str),
                _ => Value::Null,
            },
        },
        Func::Uuid => Value::Str(bi::uuid(now_micros(ctx), next_random())),
        other => return Err(SqlError::internal(format!("function {other:?}"))),
    })
}

/// TRUNCATE(x, d): toward zero at `d` places (left of the point for a negative `d`).
fn truncate(v: Value, d: i64) -> Result<Value, SqlError> {
    Ok(match v {
        Value::Null => Value::Null,
        Value::Int(_) | Value::UInt(_) if d >= 0 => v,
        Value::Int(_) | Value::UInt(_) => {
            let x = as_i128(&v).unwrap_or(0);
            let p = 10i128.checked_pow(d.unsigned_abs().min(40) as u32);
            let r = match p {
                Some(p) => x - x % p,
                None => 0,
            };
            match v {
                Value::UInt(_) => Value::UInt(r as u64),
                _ => Value::Int(r as i64),
            }
        }
        Value::Decimal(x) => {
            if d >= i64::from(x.scale) {
                let s = d.min(30) as u8;
                Value::Decimal(x.rescale(s).unwrap_or(x))
            } else if d >= 0 {
                let p = 10i128.pow(u32::from(x.scale) - d as u32);
                Value::Decimal(Decimal {
                    mant: x.mant / p,
                    scale: d as u8,
                })
            } else {
                let int = x.mant / 10i128.pow(u32::from(x.scale));
                let r = match 10i128.checked_pow(d.unsigned_abs().min(40) as u32) {
                    Some(p) => int - int % p,
                    None => 0,
                };
                Value::Decimal(Decimal { mant: r, scale: 0 })
            }
        }
        other => {
            let x = other.to_f64().unwrap_or(0.0);
            let r = if d >= 0 {
                let m = 10f64.powi(d.min(308) as i32);
                let t = (x * m).trunc() / m;
                if t.is_finite() {
                    t
                } else {
                    x
                }
            } else {
                let m = 10f64.powi(d.unsigned_abs().min(308) as i32);
                (x / m).trunc() * m
            };
            Value::Double(r)
        }
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
    use crate::bind::compile::{Compiler, Scope};
    use crate::types::convert::temporal::number_to_datetime;

    fn call(f: Func, args: Vec<Value>) -> Value {
        let ctx = Ctx {
            params: &[],
            now: DateTime::parse("2024-02-29 13:14:15.25").unwrap().pack(),
            db: None,
            user: "root@localhost",
            conn_id: 1,
            last_insert_id: 0,
            version: "test",
            virtual_rows: None,
            sub: None,
            outer: &[],
            killed: None,
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
            (Func::Repeat, vec![Value::Null, Value::Int(2)]),
            (Func::LPad, vec![s("a"), Value::Null, s("x")]),
            (Func::Locate, vec![s("a"), Value::Null]),
            (Func::SubstringIndex, vec![s("a.b"), s("."), Value::Null]),
            (Func::Truncate, vec![Value::Int(1), Value::Null]),
            (Func::Log, vec![Value::Int(2), Value::Null]),
            (
                Func::DateAdd(Unit::Month, false),
                vec![Value::Null, Value::Int(1)],
            ),
            (
                Func::DateAdd(Unit::Day, true),
                vec![s("2024-01-01"), Value::Null],
            ),
            (Func::DateDiff, vec![s("2024-01-01"), Value::Null]),
            (Func::DateFormat, vec![s("2024-01-01"), Value::Null]),
            (Func::Md5, vec![Value::Null]),
            (Func::Crc32, vec![Value::Null]),
            (Func::Elt, vec![Value::Null, s("a")]),
        ] {
            assert!(call(f, args).is_null(), "{f:?}");
        }
        assert_eq!(text(call(Func::IsNull, vec![Value::Null])), "1");
        assert_eq!(text(call(Func::Field, vec![Value::Null, Value::Null])), "0");
    }

    #[test]
    fn date_arithmetic_keeps_the_argument_kind() {
        let s = |x: &str| Value::Str(x.into());
        let date = Value::Date(DateTime::parse("2024-01-31").unwrap().pack());
        let r = call(
            Func::DateAdd(Unit::Month, false),
            vec![date.clone(), Value::Int(1)],
        );
        assert!(matches!(r, Value::Date(_)));
        assert_eq!(text(r), "2024-02-29");
        let r = call(Func::DateAdd(Unit::Hour, false), vec![date, Value::Int(-1)]);
        assert!(matches!(r, Value::DateTime(_)));
        assert_eq!(text(r), "2024-01-30 23:00:00");
        let r = call(
            Func::DateAdd(Unit::Year, true),
            vec![s("2024-02-29"), Value::Int(-4)],
        );
        assert_eq!(text(r), "2028-02-29");
        let r = call(
            Func::DateAdd(Unit::Day, false),
            vec![s("2024-02-28 10:00:00"), Value::Int(1)],
        );
        assert_eq!(text(r), "2024-02-29 10:00:00");
        let r = call(
            Func::DateAdd(Unit::Microsecond, false),
            vec![s("2024-01-01"), Value::Int(1)],
        );
        assert_eq!(text(r), "2024-01-01 00:00:00.000001");
        let r = call(Func::LPad, vec![s("wörld"), Value::Int(8), s("é")]);
        assert_eq!(text(r), "éééwörld");
        let r = call(
            Func::SubstringIndex,
            vec![s("wörld.ü.x"), s("."), Value::Int(-2)],
        );
        assert_eq!(text(r), "ü.x");
    }

    #[test]
    fn huge_and_fractional_counts_do_not_panic_and_round_like_mariadb() {
        let s = |x: &str| Value::Str(x.into());
        // 2.5 rounds to 2 (half to even), as MariaDB's rint() does.
        assert_eq!(
            text(call(Func::Repeat, vec![s("ab"), Value::Double(2.5)])),
            "abab"
        );
        assert!(call(Func::MakeDate, vec![Value::Int(2024), Value::Int(i64::MAX)]).is_null());
        assert!(call(Func::Repeat, vec![s("ab"), Value::Int(i64::MAX)]).is_null());
        assert!(call(Func::Space, vec![Value::UInt(u64::MAX)])
            .to_text()
            .unwrap()
            .is_empty());
        assert!(call(
            Func::DateAdd(Unit::Year, false),
            vec![s("2024-01-01"), Value::Int(i64::MAX)]
        )
        .is_null());
        assert!(call(Func::FromUnixtime, vec![Value::Double(f64::MAX)]).is_null());
        // The count is kept in 32 bits: 4294967295 is -1.
        assert_eq!(
            text(call(
                Func::SubstringIndex,
                vec![s("a.b.c"), s("."), Value::UInt(4_294_967_295)]
            )),
            "c"
        );
    }

    #[test]
    fn clock_and_random_functions_have_their_formats() {
        assert_eq!(text(call(Func::CurTime, vec![])), "13:14:15");
        assert_eq!(text(call(Func::Now, vec![])), "2024-02-29 13:14:15");
        assert_eq!(text(call(Func::CurDate, vec![])), "2024-02-29");
        assert_eq!(text(call(Func::UnixTimestamp, vec![])), "1709212455");
        let u = text(call(Func::Uuid, vec![]));
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(u.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert!(parts[2].starts_with('1'));
        assert_ne!(u, text(call(Func::Uuid, vec![])));
        for _ in 0..100 {
            let r = call(Func::Rand, vec![]).to_f64().unwrap();
            assert!((0.0..1.0).contains(&r));
        }
        assert_eq!(text(call(Func::Sleep, vec![Value::Int(0)])), "0");
    }

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
            params: &[],
            now: 0,
            db: None,
            user: "root@localhost",
            conn_id: 1,
            last_insert_id: 0,
            version: "test",
            virtual_rows: None,
            sub: None,
            outer: &[],
            killed: None,
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
        for bad in [
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
        let cast_date = |v: Value| text(cast(v, CastTo::Date).unwrap());
        assert_eq!(cast_date(Value::Int(991231)), "1999-12-31");
        assert_eq!(
            cast_date(Value::Decimal(Decimal::parse("20000101.9").unwrap())),
            "2000-01-01"
        );
        assert!(cast(Value::Double(1e7), CastTo::Date).unwrap().is_null());
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
            assert_eq!(arith(Arith::IntDiv, a, b).unwrap_err().code, 1690);
        }
        assert!(arith(Arith::IntDiv, d("1.5"), Value::Double(0.0))
            .unwrap()
            .is_null());
    }

    #[test]
    fn round_is_exact_for_exact_numbers_and_ties_to_even_for_doubles() {
        let round = |v: Value, p: i64| text(call(Func::Round, vec![v, Value::Int(p)]));
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
        let hex = |v: Value| text(call(Func::Hex, vec![v]));
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
