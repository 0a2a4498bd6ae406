//! The compiled expression ([`Expr`]) and the operators, functions and subquery kinds it is
//! made of: the types every other file of expr/ works on, in a leaf of its own so that they
//! import it without a cycle through mod.rs.

use crate::expr::builtins::Unit;
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

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
    /// DATETIME(fsp): fraction digits past `fsp` are cut, as MariaDB cuts them.
    DateTime(u8),
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
    Subquery(Box<SubqueryRef>, SubKind),
}

/// A subquery's number in its statement's table of subqueries (`plan::select::Subquery`,
/// owned by the plan root, `plan::dml::PlanRoot`): ids are given in compile order, one per
/// subquery compiled, nested ones included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubqueryId(pub usize);

/// A subquery as an expression refers to it: its id, and what walks over the enclosing
/// expression need to know of it without the statement's table (which is of a higher
/// layer): the enclosing row's columns it reads and the type of its value.
#[derive(Debug, Clone)]
pub struct SubqueryRef {
    pub id: SubqueryId,
    /// Columns of the enclosing query's row it reads (none: it is run once per plan run).
    pub outer_cols: Vec<usize>,
    /// The type of its (first) column: a scalar subquery's value.
    pub ty: SqlType,
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
