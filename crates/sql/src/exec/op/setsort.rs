//! INTERSECT and EXCEPT ([ALL | DISTINCT]) of everything before them and one more operand, by
//! sorting instead of holding a map of the operand's rows: past `sort_buffer_size` (or the
//! statement's budget) the rows spill to the session's temporary files as any sort's do,
//! instead of failing with 1290.
//!
//! Both sides go into one external sort on the whole row and then a side mark (the operand's
//! rows first), each left row numbered by arrival. The sort is stable, so each run of equal
//! rows (as DISTINCT compares them: collation-aware, NULLs equal) reads as: the operand's `r`
//! rows, then the left side's rows in arrival order. Left row `i` of the run (from 0) is kept
//! when
//!
//! | | DISTINCT | ALL |
//! |---|---|---|
//! | INTERSECT | `i == 0 && r > 0` | `i < r` |
//! | EXCEPT | `i == 0 && r == 0` | `i >= r` |
//!
//! which is SQL's rule (the first of each row for DISTINCT; for ALL each operand row matches,
//! and keeps or removes, one left row, the earliest first; `setsort_tests.rs` holds the
//! in-memory model it is tested against). The kept rows go through a second sort, on their
//! arrival number, so they leave in the left side's order.

use crate::exec::op::sort_spill::{Sorted, Sorter};
use crate::exec::op::{Operator, Row};
use crate::exec::KeyRef;
use crate::expr::Ctx;
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::runtime::spill::SessionTemp;
use crate::types::value::Value;
use crate::SqlError;

/// The operand's tree, built once everything before it has been read (as the buffered path
/// builds and reads the operands in order).
pub(crate) type Operand<'a> = Box<dyn FnOnce() -> Result<Box<dyn Operator + 'a>, SqlError> + 'a>;

/// Which set operation: INTERSECT (`intersect`) or EXCEPT, removing duplicates (`distinct`)
/// or not (ALL).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SetKind {
    pub(crate) intersect: bool,
    pub(crate) distinct: bool,
}

impl SetKind {
    /// Whether the `i`-th left row of a run of equal rows stays, the operand having `r` of
    /// them.
    fn keeps(self, i: u64, r: u64) -> bool {
        match (self.intersect, self.distinct) {
            (true, true) => i == 0 && r > 0,
            (false, true) => i == 0 && r == 0,
            (true, false) => i < r,
            (false, false) => i >= r,
        }
    }
}

/// The side mark of a sorted row: the operand's rows sort first.
const OPERAND: i64 = 0;
const LEFT: i64 = 1;

/// `left` combined with `operand` by `kind`: reads both now and returns the rows that stay,
/// in the left side's order. `buffer`: bytes a sort holds before it writes a run.
pub(crate) fn combine<'a>(
    mut left: Box<dyn Operator + 'a>,
    operand: Operand<'a>,
    kind: SetKind,
    mut mem: Reservation<'a>,
    temp: Option<&'a SessionTemp>,
    buffer: u64,
    cx: &Ctx,
) -> Result<SortedRows<'a>, SqlError> {
    let mut by_row: Option<Sorter<'a>> = None;
    let mut arrived = 0u64;
    let mut r = Row::new();
    while left.next(cx, &mut r)? {
        poll(arrived, cx)?;
        let width = r.len();
        let mut row = std::mem::take(&mut r);
        row.push(Value::Int(LEFT));
        row.push(Value::UInt(arrived));
        arrived += 1;
        by_row
            .get_or_insert_with(|| Sorter::new(temp, buffer, 0, &vec![false; width + 1]))
            .push(row, &mut mem, cx)?;
    }
    drop(left);
    let mut right = operand()?;
    let mut read = 0u64;
    while right.next(cx, &mut r)? {
        poll(read, cx)?;
        read += 1;
        let width = r.len();
        let mut row = std::mem::take(&mut r);
        row.push(Value::Int(OPERAND));
        row.push(Value::UInt(0));
        by_row
            .get_or_insert_with(|| Sorter::new(temp, buffer, 0, &vec![false; width + 1]))
            .push(row, &mut mem, cx)?;
    }
    drop(right);
    let Some(by_row) = by_row else {
        return Ok(SortedRows::empty(mem));
    };
    let mut rows = by_row.finish(&mut mem, cx)?;
    let mut by_arrival: Option<Sorter<'a>> = None;
    // The run being read (one row's values, not charged), and its counts so far.
    let mut run: Option<Row> = None;
    let (mut operand_rows, mut left_rows) = (0u64, 0u64);
    while let Some(row) = rows.next(&mut mem, cx)? {
        mem.shrink(row_bytes(&row));
        let n = row.len() - 2;
        if run
            .as_ref()
            .is_none_or(|k| KeyRef::new(k) != KeyRef::new(&row[..n]))
        {
            run = Some(row[..n].to_vec());
            (operand_rows, left_rows) = (0, 0);
        }
        if matches!(row[n], Value::Int(OPERAND)) {
            operand_rows += 1;
            continue;
        }
        left_rows += 1;
        if kind.keeps(left_rows - 1, operand_rows) {
            by_arrival
                .get_or_insert_with(|| Sorter::new(temp, buffer, n + 1, &[false]))
                .push(row, &mut mem, cx)?;
        }
    }
    // The first sort's file goes before the second is read.
    drop(rows);
    Ok(match by_arrival {
        Some(s) => SortedRows {
            rows: s.finish(&mut mem, cx)?,
            mem,
        },
        None => SortedRows::empty(mem),
    })
}

/// Every 512th row read looks at KILL and the deadline.
fn poll(n: u64, cx: &Ctx) -> Result<(), SqlError> {
    if n % 512 == 511 {
        cx.check_killed()?;
    }
    Ok(())
}

/// The rows [`combine`] kept, each without its side mark and arrival number, given back to
/// the budget as it leaves.
pub(crate) struct SortedRows<'a> {
    rows: Sorted<'a>,
    mem: Reservation<'a>,
}

impl<'a> SortedRows<'a> {
    fn empty(mem: Reservation<'a>) -> SortedRows<'a> {
        SortedRows {
            rows: Sorted::Memory(Vec::new().into_iter()),
            mem,
        }
    }
}

impl Operator for SortedRows<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        let Some(mut r) = self.rows.next(&mut self.mem, cx)? else {
            return Ok(false);
        };
        self.mem.shrink(row_bytes(&r));
        r.truncate(r.len() - 2);
        *out = r;
        Ok(true)
    }
}

#[cfg(test)]
#[path = "setsort_tests.rs"]
mod tests;
