//! The compiled expression ([`Expr`]) and what it is made of: its operators, the interface
//! of the scalar functions it calls ([`ScalarFunction`], held as a [`Func`]), its subquery
//! kinds, and what evaluation needs besides the row ([`Ctx`]). These are the types every
//! other file of expr/ works on, in one leaf so that they import it without a cycle: an
//! `Expr` holds functions, a function's arguments are `Expr`s evaluated in a `Ctx`, and a
//! `Ctx` runs the `Expr`'s subqueries.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use crate::types::sqltype::SqlType;
use crate::types::value::Value;
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CastTo {
    Signed,
    Unsigned,
    Char,
    Binary,
    Double,
    /// DECIMAL(precision, scale): a value of more digits is clipped to the largest of the
    /// type, with warning 1264 naming the CAST as written (`name`).
    Decimal {
        precision: u8,
        scale: u8,
        name: Arc<str>,
    },
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

// ---- evaluation context ----------------------------------------------------------------------

/// Runs the subqueries of a running plan (`exec::SubCtx`): the transaction they read and
/// the rows of the uncorrelated ones, handed down in [`Ctx::sub`].
pub trait SubqueryRunner {
    /// The value of subquery expression `sub`/`kind` for `row` (the enclosing query's row).
    fn eval(
        &self,
        sub: &SubqueryRef,
        kind: &SubKind,
        row: &[Value],
        ctx: &Ctx,
    ) -> Result<Value, SqlError>;
}

/// What evaluation needs besides the row.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub params: &'a [Value],
    /// Statement start time (packed [`DateTime`](crate::types::temporal::DateTime)).
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
    /// A context outside any session and statement (a column's DEFAULT, unit tests): no
    /// parameters, rows, subqueries or budget; time 0.
    pub fn detached() -> Ctx<'static> {
        Ctx {
            params: &[],
            now: 0,
            db: None,
            user: "",
            conn_id: 0,
            last_insert_id: 0,
            version: "",
            virtual_rows: None,
            sub: None,
            outer: &[],
            killed: None,
        }
    }

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

    /// Checks a transaction's buffered writes, with what the statement holds, against the
    /// session's memory budget (see `Interrupt::check_pending`).
    pub fn check_pending(&self, pending: u64) -> Result<(), SqlError> {
        match self.killed {
            Some(k) => k.check_pending(pending),
            None => Ok(()),
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

// ---- scalar functions -------------------------------------------------------------------------

/// One scalar function: the calls it accepts, the type it returns and how it computes a value,
/// together (as DataFusion's `ScalarUDFImpl`). Each function of `expr/func/` is a type
/// implementing it; `expr::func::lookup` finds one by the name a query calls it by.
pub trait ScalarFunction: Any + Send + Sync {
    /// The name EXPLAIN prints, in lower case (`concat_ws`).
    fn name(&self) -> &'static str;

    /// How many arguments a call takes (checked when the call is compiled).
    fn arity(&self) -> Arity;

    /// The type of the call's values, from its arguments; `None` for MariaDB's NULL type
    /// (see [`Expr::type_of`]).
    fn return_type(&self, call: &Typing<'_>) -> Option<SqlType>;

    /// The value of one call.
    fn eval(&self, call: &Args<'_>) -> Result<Value, SqlError>;

    /// Whether two calls with the same arguments may differ, or the call does something
    /// (RAND, UUID, SLEEP): such a call is evaluated per row, never folded.
    fn volatile(&self) -> bool {
        false
    }

    /// The first argument whose value the call may return as it is (IF's second, COALESCE's
    /// first): these arguments are converted to the type of the whole where theirs differs.
    fn first_result_operand(&self) -> Option<usize> {
        None
    }

    /// How EXPLAIN FORMAT=TREE shows a call, given its arguments as shown.
    fn explain(&self, args: &[String]) -> String {
        format!("{}({})", self.name(), args.join(", "))
    }
}

/// How many arguments a function takes: `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arity {
    pub min: usize,
    pub max: usize,
}

impl Arity {
    pub const fn exactly(n: usize) -> Arity {
        Arity { min: n, max: n }
    }

    pub const fn between(min: usize, max: usize) -> Arity {
        Arity { min, max }
    }

    pub const fn at_least(min: usize) -> Arity {
        Arity {
            min,
            max: usize::MAX,
        }
    }

    pub fn allows(self, n: usize) -> bool {
        (self.min..=self.max).contains(&n)
    }
}

/// A scalar function as an expression holds it: shared, cheap to clone with the plan.
#[derive(Clone)]
pub struct Func(Arc<dyn ScalarFunction>);

impl Func {
    pub fn new(f: impl ScalarFunction) -> Func {
        Func(Arc::new(f))
    }

    /// Whether this is function `F` (whatever its parameters).
    pub fn is<F: ScalarFunction>(&self) -> bool {
        // The call goes through the vtable: the concrete type's id, not the trait object's.
        let f: &dyn ScalarFunction = &*self.0;
        Any::type_id(f) == TypeId::of::<F>()
    }
}

impl std::ops::Deref for Func {
    type Target = dyn ScalarFunction;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Debug for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

/// A call's arguments as its function evaluates them: unevaluated, so that it evaluates only
/// those it needs (IF, COALESCE) and may look at their form (a constant's digits).
pub struct Args<'a> {
    exprs: &'a [Expr],
    row: &'a [Value],
    ctx: &'a Ctx<'a>,
}

impl<'a> Args<'a> {
    pub fn new(exprs: &'a [Expr], row: &'a [Value], ctx: &'a Ctx<'a>) -> Args<'a> {
        Args { exprs, row, ctx }
    }

    pub fn len(&self) -> usize {
        self.exprs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exprs.is_empty()
    }

    /// Argument `i` as written (compiled).
    pub fn expr(&self, i: usize) -> &'a Expr {
        &self.exprs[i]
    }

    /// The value of argument `i`.
    pub fn value(&self, i: usize) -> Result<Value, SqlError> {
        self.exprs[i].eval(self.row, self.ctx)
    }

    /// The value of argument `i` as text; `None` for NULL.
    pub fn text(&self, i: usize) -> Result<Option<String>, SqlError> {
        Ok(self.value(i)?.to_string_lossy())
    }

    /// The row the call is evaluated on.
    pub fn row(&self) -> &'a [Value] {
        self.row
    }

    pub fn ctx(&self) -> &'a Ctx<'a> {
        self.ctx
    }
}

/// A call's arguments as its function types them.
pub struct Typing<'a> {
    exprs: &'a [Expr],
    row_types: &'a dyn Fn(usize) -> Option<SqlType>,
}

impl<'a> Typing<'a> {
    pub fn new(exprs: &'a [Expr], row_types: &'a dyn Fn(usize) -> Option<SqlType>) -> Typing<'a> {
        Typing { exprs, row_types }
    }

    pub fn len(&self) -> usize {
        self.exprs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exprs.is_empty()
    }

    /// Argument `i` as written, if the call has one.
    pub fn expr(&self, i: usize) -> Option<&'a Expr> {
        self.exprs.get(i)
    }

    /// The type of argument `i` ([`Expr::result_type`]), if the call has one.
    pub fn ty(&self, i: usize) -> Option<SqlType> {
        self.exprs.get(i).map(|e| e.result_type(self.row_types))
    }

    /// The types of the arguments from `i` on ([`Expr::type_of`]: `None` for the NULL type).
    pub fn types_from(&self, i: usize) -> Vec<Option<SqlType>> {
        self.exprs
            .get(i..)
            .unwrap_or_default()
            .iter()
            .map(|e| e.type_of(self.row_types))
            .collect()
    }

    /// Argument `i` if it is a constant: its value.
    pub fn constant(&self, i: usize) -> Option<&'a Value> {
        match self.exprs.get(i) {
            Some(Expr::Const(v)) => Some(v),
            _ => None,
        }
    }
}
