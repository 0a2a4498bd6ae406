//! What the operator tests share: a source of given rows and a context that polls KILL.

use crate::exec::op::{Operator, Row};
use crate::expr::Ctx;
use crate::runtime::limits::Interrupt;
use crate::SqlError;

/// Rows handed out in order.
pub(crate) struct Rows<I>(pub(crate) I);

impl<I: Iterator<Item = Row>> Operator for Rows<I> {
    fn next(&mut self, _: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        match self.0.next() {
            Some(r) => {
                *out = r;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// A context outside any session whose KILL flag is `intr`.
pub(crate) fn ctx(intr: &Interrupt) -> Ctx<'_> {
    Ctx {
        killed: Some(intr),
        ..Ctx::detached()
    }
}
