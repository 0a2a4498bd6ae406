//! What evaluation needs besides the row ([`Ctx`]), and the trait subqueries are run
//! through ([`SubqueryRunner`]).

use crate::expr::node::{SubKind, SubqueryRef};
use crate::types::value::Value;
use crate::SqlError;

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
