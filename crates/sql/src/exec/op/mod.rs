//! The operator interface (docs/design/issue20-sql-engine.md §4.2) and the operators that
//! combine other operators' rows: the join steps (lookup, hash, loop), the sources made of
//! other plans (a derived table's query, a set operation's operands), and the blocking stages
//! of a pipeline (Aggregate, Distinct, Sort and TopN, each holding what it keeps under a
//! [`Reservation`](crate::runtime::memory::Reservation)). The single-table sources, the
//! row-at-a-time stages and the assembly of a plan's tree are in
//! [`operator`](crate::exec::operator).
//!
//! The trait lives here, below every operator file, so that `operator.rs` (which builds the
//! tree out of them) and the operator files (which implement it) do not import each other.
//! What an operator here needs from `operator.rs` (a table scan for each outer row, the tree
//! of a nested plan) it is handed as a function value.

pub(crate) mod aggregate;
pub(crate) mod distinct;
pub(crate) mod join;
pub(crate) mod join_spill;
pub(crate) mod materialize;
pub(crate) mod setop;
pub(crate) mod setsort;
pub(crate) mod sort;
pub(crate) mod sort_spill;
#[cfg(test)]
pub(crate) mod testing;

use crate::expr::Ctx;
use crate::types::value::Value;
use crate::SqlError;

pub(crate) type Row = Vec<Value>;

/// A source of rows. The caller owns the row buffer: a borrowed-return `next` cannot be
/// written for a filter that loops over its input without Polonius, and a lent buffer lets
/// later steps (E8) reuse its capacity.
pub(crate) trait Operator {
    /// Fills `out` with the next row; `Ok(false)` when there is none.
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError>;
}

/// The visible columns of each row: what is left once the stages that needed the hidden
/// ORDER BY keys are done.
pub(crate) struct Cut<'a> {
    pub(crate) child: Box<dyn Operator + 'a>,
    pub(crate) visible: usize,
}

impl Operator for Cut<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        let more = self.child.next(cx, out)?;
        out.truncate(self.visible);
        Ok(more)
    }
}
