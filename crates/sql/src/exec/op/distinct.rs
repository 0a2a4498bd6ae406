//! SELECT DISTINCT: the first row of each distinct combination of the visible columns, in
//! input order; the later ones are dropped as they come. What it holds is one key per
//! distinct row sent.
//!
//! The keys are held up to `tmp_memory_table_size`, or while the statement's budget keeps
//! `SPILL_ROOM` free besides (for the spill's own buffer). Past that, rows whose key is held are still dropped as they come, and every other row goes,
//! numbered by arrival, to an external sort on its key (`sort_spill::Sorter`). At the end of
//! the input the first row of each key there (the sort is stable) goes to a second sort, on
//! the arrival number, and those rows are sent after the ones already sent. Every key first
//! seen before the table was full was sent then, and every other key's first row came after
//! that point, so the order is the first-occurrence order of the in-memory path.

use std::collections::BTreeSet;

use crate::exec::op::sort_spill::{try_hold, Sorted, Sorter};
use crate::exec::op::{Operator, Row};
use crate::exec::{GroupKey, KeyRef};
use crate::expr::Ctx;
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::runtime::spill::SessionTemp;
use crate::types::value::Value;
use crate::SqlError;

pub(crate) struct Distinct<'a> {
    child: Box<dyn Operator + 'a>,
    /// The columns compared: the first `visible` of each row (hidden ORDER BY keys are not).
    visible: usize,
    /// Compared as GROUP BY compares (collation-aware, NULLs equal).
    seen: BTreeSet<GroupKey>,
    mem: Reservation<'a>,
    /// Where rows of keys not held go (`None`: outside a session, every key is held).
    temp: Option<&'a SessionTemp>,
    /// Bytes of keys held before new keys spill (`tmp_memory_table_size`).
    table: u64,
    /// Bytes of spilled rows held before a sorted run is written (`sort_buffer_size`).
    buffer: u64,
    /// Bytes of `seen`, against `table`.
    held: u64,
    /// Rows read, the arrival number of a spilled row.
    arrived: u64,
    /// Made when the first key does not fit: rows with keys not in `seen`, by key.
    spill: Option<Sorter<'a>>,
    /// Once the input is read: the first row of each spilled key, by arrival.
    late: Option<Sorted<'a>>,
    done: bool,
}

impl<'a> Distinct<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        visible: usize,
        mem: Reservation<'a>,
        temp: Option<&'a SessionTemp>,
    ) -> Distinct<'a> {
        Distinct {
            child,
            visible,
            seen: BTreeSet::new(),
            mem,
            temp,
            table: temp.map_or(u64::MAX, SessionTemp::tmp_table),
            buffer: temp.map_or(u64::MAX, SessionTemp::sort_buffer),
            held: 0,
            arrived: 0,
            spill: None,
            late: None,
            done: false,
        }
    }

    /// With `table` bytes of keys and a sort buffer of `buffer` instead of the session's
    /// (tests).
    #[cfg(test)]
    pub(crate) fn with_sizes(mut self, table: u64, buffer: u64) -> Distinct<'a> {
        self.table = table;
        self.buffer = buffer;
        self
    }

    /// Whether `row` is the first of its key so far and fits in memory (then its key is
    /// held); otherwise a row of a new key past the table goes to the spill.
    fn admit(&mut self, row: &mut Row, cx: &Ctx) -> Result<bool, SqlError> {
        let n = self.visible.min(row.len());
        if self.seen.contains(KeyRef::new(&row[..n])) {
            return Ok(false);
        }
        if self.spill.is_none() {
            let bytes = row_bytes(&row[..n]);
            match self.temp {
                // Room is left in the budget for the spill's own buffer.
                Some(t) if !try_hold(&mut self.mem, self.held, bytes, self.table) => {
                    self.spill = Some(Sorter::new(Some(t), self.buffer, 0, &vec![false; n]));
                }
                Some(_) => {
                    self.held += bytes;
                    self.seen.insert(GroupKey(row[..n].to_vec()));
                    return Ok(true);
                }
                None => {
                    self.mem.grow(bytes)?;
                    self.seen.insert(GroupKey(row[..n].to_vec()));
                    return Ok(true);
                }
            }
        }
        let mut r = std::mem::take(row);
        r.push(Value::UInt(self.arrived));
        let sorter = self.spill.as_mut().expect("made above");
        sorter.push(r, &mut self.mem, cx)?;
        Ok(false)
    }

    /// The spilled rows' first of each key, sorted back into arrival order.
    fn firsts(&mut self, spill: Sorter<'a>, cx: &Ctx) -> Result<Sorted<'a>, SqlError> {
        let mut by_key = spill.finish(&mut self.mem, cx)?;
        let mut by_arrival: Option<Sorter<'a>> = None;
        // The key of the rows being skipped (not charged: one key).
        let mut last: Option<Row> = None;
        while let Some(r) = by_key.next(&mut self.mem, cx)? {
            self.mem.shrink(row_bytes(&r));
            // The arrival number is the last value.
            let n = self.visible.min(r.len() - 1);
            if last
                .as_ref()
                .is_some_and(|k| KeyRef::new(k) == KeyRef::new(&r[..n]))
            {
                continue;
            }
            last = Some(r[..n].to_vec());
            let s = by_arrival
                .get_or_insert_with(|| Sorter::new(self.temp, self.buffer, r.len() - 1, &[false]));
            s.push(r, &mut self.mem, cx)?;
        }
        // The first file goes before the second is read.
        drop(by_key);
        match by_arrival {
            Some(s) => s.finish(&mut self.mem, cx),
            None => Ok(Sorted::Memory(Vec::new().into_iter())),
        }
    }
}

impl Operator for Distinct<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if !self.done {
            while self.child.next(cx, out)? {
                self.arrived += 1;
                if self.admit(out, cx)? {
                    return Ok(true);
                }
            }
            self.done = true;
            if let Some(spill) = self.spill.take() {
                self.late = Some(self.firsts(spill, cx)?);
            }
        }
        let Some(late) = self.late.as_mut() else {
            return Ok(false);
        };
        let Some(mut r) = late.next(&mut self.mem, cx)? else {
            return Ok(false);
        };
        self.mem.shrink(row_bytes(&r));
        r.pop();
        *out = r;
        Ok(true)
    }
}

#[cfg(test)]
#[path = "distinct_tests.rs"]
mod tests;
