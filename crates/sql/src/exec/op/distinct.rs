//! SELECT DISTINCT: the first row of each distinct combination of the visible columns, in
//! input order; the later ones are dropped as they come. What it holds is one key per
//! distinct row sent.

use std::collections::BTreeSet;

use crate::exec::op::{Operator, Row};
use crate::exec::GroupKey;
use crate::expr::Ctx;
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::SqlError;

pub(crate) struct Distinct<'a> {
    child: Box<dyn Operator + 'a>,
    /// The columns compared: the first `visible` of each row (hidden ORDER BY keys are not).
    visible: usize,
    /// Compared as GROUP BY compares (collation-aware, NULLs equal).
    seen: BTreeSet<GroupKey>,
    mem: Reservation<'a>,
}

impl<'a> Distinct<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        visible: usize,
        mem: Reservation<'a>,
    ) -> Distinct<'a> {
        Distinct {
            child,
            visible,
            seen: BTreeSet::new(),
            mem,
        }
    }
}

impl Operator for Distinct<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        while self.child.next(cx, out)? {
            let key = &out[..self.visible.min(out.len())];
            if self.seen.insert(GroupKey(key.to_vec())) {
                self.mem.grow(row_bytes(key))?;
                return Ok(true);
            }
        }
        Ok(false)
    }
}
