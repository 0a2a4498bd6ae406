//! The external half of [`Sort`](super::sort::Sort): sorted runs written to the session's
//! temporary space (`runtime::spill`) and merged back (issue 20 E6;
//! docs/design/issue20-sql-engine.md §4.4).
//!
//! A sort keeps rows in memory up to its buffer: `sort_buffer_size`, or less when the
//! statement's `max_session_mem_used` has no more room (a failed `Reservation::try_grow`).
//! Then it sorts the buffer, writes it as one run and lets the memory go. At the end of its
//! input the last buffer stays in memory as the newest run, and the runs are merged, at most
//! [`FAN_IN`] at a time: while there are more, consecutive groups are merged into runs of a
//! new file (and the old file deleted), so the last merge streams the rows out.
//!
//! The order is exactly the in-memory sort's: runs are cut from the input in order and each
//! is sorted stably, and the merge breaks ties by run (an earlier run first), so equal rows
//! leave in arrival order, as `sort_by` leaves them.
//!
//! `sort_buffer_size` defaults to MariaDB's 2 MiB. Measured on a shared 2-core machine
//! (session 11, release build, `SELECT a.id, b.id FROM t a, t b ORDER BY a.v DESC, b.v` over
//! 2 x 2000 rows = 4M rows, buffers interleaved, client output included): 1 GiB (no spill)
//! 8.2-8.4 s, 64 MiB 12-21 s, 8 MiB 8.4-9.3 s, 2 MiB 7.6-7.8 s, 256 KiB 6.4-6.7 s; at 20,000
//! rows 2 MiB was ~10% slower than no spill, at 200,000 rows within the noise. Small runs sort
//! in cache, and the merge reads sequentially; a buffer of tens of MiB sorts out of cache and
//! frees and refills its rows in large batches. Noisy numbers: a quiet machine should confirm.

use std::cmp::Ordering;

use crate::exec::op::Row;
use crate::expr::Ctx;
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::runtime::spill::{corrupt_record, Run, RunCursor, SessionTemp, TempFile};
use crate::types::decimal::Decimal;
use crate::types::value::Value;
use crate::SqlError;

/// Runs merged at once: each holds a block buffer (64 KiB) and a decoded row.
pub(crate) const FAN_IN: usize = 16;
/// Bytes of the statement's budget a spilling operator leaves free when it decides whether
/// to hold one more row or group: once a GROUP BY or DISTINCT table stops growing, its
/// spilled rows' sort needs a buffer of at least a row; a merge needs a row per run read, and
/// DISTINCT's second sort runs while the first one's merge still reads.
pub(crate) const SPILL_ROOM: u64 = 64 << 10;

/// The one rule of every operator that holds rows or keys in memory until it must spill
/// (GROUP BY's groups, DISTINCT's keys, a join's build table and its partitions, a
/// materialized table): charges `bytes` to `mem` and returns true when the held bytes stay
/// within `cap` and the statement's budget keeps [`SPILL_ROOM`] free besides, for the spill's
/// own buffer; otherwise charges nothing and returns false, and the caller spills.
pub(crate) fn try_hold(mem: &mut Reservation<'_>, held: u64, bytes: u64, cap: u64) -> bool {
    if held.saturating_add(bytes) > cap || !mem.try_grow(bytes.saturating_add(SPILL_ROOM)) {
        return false;
    }
    mem.shrink(SPILL_ROOM);
    true
}
/// Rows written or merged between two looks at the statement's stop signal.
const POLL: u32 = 256;

/// `a` against `b` by their first `desc.len()` values, each descending where `desc` says so.
pub(crate) fn by_keys(a: &[Value], b: &[Value], desc: &[bool]) -> Ordering {
    for ((x, y), d) in a.iter().zip(b).zip(desc) {
        let c = x.order_cmp(y);
        if c != Ordering::Equal {
            return if *d { c.reverse() } else { c };
        }
    }
    Ordering::Equal
}

/// A row as one spill record (docs/FORMAT.md, "Spill runs": sort rows): per value a tag byte
/// and its payload, exact (doubles by their bits, decimals with their scale), so that a row
/// read back compares and prints as it did.
pub(crate) fn encode_row(out: &mut Vec<u8>, row: &[Value]) {
    out.clear();
    for v in row {
        match v {
            Value::Null => out.push(0),
            Value::Int(i) => {
                out.push(1);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Value::UInt(u) => {
                out.push(2);
                out.extend_from_slice(&u.to_le_bytes());
            }
            Value::Double(d) => {
                out.push(3);
                out.extend_from_slice(&d.to_bits().to_le_bytes());
            }
            Value::Decimal(d) => {
                out.push(4);
                out.extend_from_slice(&d.mant.to_le_bytes());
                out.push(d.scale);
            }
            Value::Str(s) => {
                out.push(5);
                put_bytes(out, s.as_bytes());
            }
            Value::Bytes(b) => {
                out.push(6);
                put_bytes(out, b);
            }
            Value::Date(p) => {
                out.push(7);
                out.extend_from_slice(&p.to_le_bytes());
            }
            Value::DateTime(p) => {
                out.push(8);
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // A string past 4 GiB cannot be a record (a block holds at most 64 MiB): the writer
    // refuses the record whatever the length says.
    let len = u32::try_from(b.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(b);
}

/// Reads back what [`encode_row`] wrote into `out` (cleared first); an error says what is
/// wrong with the record.
pub(crate) fn decode_row(mut b: &[u8], out: &mut Row) -> Result<(), &'static str> {
    fn take<'b>(b: &mut &'b [u8], n: usize) -> Result<&'b [u8], &'static str> {
        if b.len() < n {
            return Err("a value is cut off");
        }
        let (head, rest) = b.split_at(n);
        *b = rest;
        Ok(head)
    }
    fn n8(b: &mut &[u8]) -> Result<[u8; 8], &'static str> {
        Ok(take(b, 8)?.try_into().expect("8 bytes"))
    }
    fn bytes<'b>(b: &mut &'b [u8]) -> Result<&'b [u8], &'static str> {
        let len = u32::from_le_bytes(take(b, 4)?.try_into().expect("4 bytes"));
        take(b, len as usize)
    }
    out.clear();
    while let Some((&tag, rest)) = b.split_first() {
        b = rest;
        out.push(match tag {
            0 => Value::Null,
            1 => Value::Int(i64::from_le_bytes(n8(&mut b)?)),
            2 => Value::UInt(u64::from_le_bytes(n8(&mut b)?)),
            3 => Value::Double(f64::from_bits(u64::from_le_bytes(n8(&mut b)?))),
            4 => {
                let mant = i128::from_le_bytes(take(&mut b, 16)?.try_into().expect("16 bytes"));
                let scale = take(&mut b, 1)?[0];
                Value::Decimal(Decimal { mant, scale })
            }
            5 => Value::Str(
                String::from_utf8(bytes(&mut b)?.to_vec()).map_err(|_| "a string is not UTF-8")?,
            ),
            6 => Value::Bytes(bytes(&mut b)?.to_vec()),
            7 => Value::Date(i64::from_le_bytes(n8(&mut b)?)),
            8 => Value::DateTime(i64::from_le_bytes(n8(&mut b)?)),
            _ => return Err("an unknown value tag"),
        });
    }
    Ok(())
}

/// Rows sorted on their keys at `keys_at..` (each descending where `desc` says), stably:
/// held up to a buffer, then written as sorted runs and merged at the end. Used by
/// [`Sort`](super::sort::Sort), and by GROUP BY and DISTINCT for what does not fit their tables.
pub(crate) struct Sorter<'a> {
    rows: Vec<Row>,
    /// Bytes of `rows`, charged to the caller's reservation.
    held: u64,
    /// Bytes held before a run is written.
    buffer: u64,
    keys_at: usize,
    desc: Vec<bool>,
    /// `None`: outside a session every row stays in memory (past the statement's budget,
    /// its error).
    spill: Option<Spill<'a>>,
}

/// A [`Sorter`]'s rows in order.
pub(crate) enum Sorted<'a> {
    Memory(std::vec::IntoIter<Row>),
    Merging(Merging<'a>),
}

impl<'a> Sorter<'a> {
    pub(crate) fn new(
        temp: Option<&'a SessionTemp>,
        buffer: u64,
        keys_at: usize,
        desc: &[bool],
    ) -> Sorter<'a> {
        Sorter {
            rows: Vec::new(),
            held: 0,
            buffer,
            keys_at,
            desc: desc.to_vec(),
            spill: temp.map(Spill::new),
        }
    }

    /// Adds a row, charged to `mem` until it leaves [`Sorted::next`].
    pub(crate) fn push(
        &mut self,
        row: Row,
        mem: &mut Reservation<'_>,
        cx: &Ctx,
    ) -> Result<(), SqlError> {
        let bytes = row_bytes(&row);
        // The buffer is full, or the statement's budget is (less `SPILL_ROOM`, kept for the
        // merge's rows and for another sort of the same operator): write what is held as a
        // run and go on with an empty buffer. Without temporary space, or for a single row
        // past the budget, the budget's error stands.
        let full = self.held.saturating_add(bytes) > self.buffer || !self.try_room(bytes, mem);
        if full {
            if let (Some(sp), false) = (self.spill.as_mut(), self.rows.is_empty()) {
                let (v, desc) = (self.keys_at, &self.desc);
                self.rows.sort_by(|a, b| by_keys(&a[v..], &b[v..], desc));
                sp.write_run(&self.rows, cx)?;
                self.rows.clear();
                mem.shrink(self.held);
                self.held = 0;
            }
            mem.grow(bytes)?;
        }
        self.held += bytes;
        self.rows.push(row);
        Ok(())
    }

    /// Charges `bytes` if the budget has `SPILL_ROOM` left besides (only `bytes` without
    /// temporary space, where nothing else would use the room).
    fn try_room(&self, bytes: u64, mem: &mut Reservation<'_>) -> bool {
        if self.spill.is_none() {
            return mem.try_grow(bytes);
        }
        try_hold(mem, 0, bytes, u64::MAX)
    }

    /// Every row pushed, in order.
    pub(crate) fn finish(
        mut self,
        mem: &mut Reservation<'_>,
        cx: &Ctx,
    ) -> Result<Sorted<'a>, SqlError> {
        let (v, desc) = (self.keys_at, &self.desc);
        self.rows.sort_by(|a, b| by_keys(&a[v..], &b[v..], desc));
        match self.spill {
            Some(sp) if sp.spilled() => Ok(Sorted::Merging(sp.merge(
                self.rows,
                self.keys_at,
                &self.desc,
                mem,
                cx,
            )?)),
            _ => Ok(Sorted::Memory(self.rows.into_iter())),
        }
    }
}

impl Sorted<'_> {
    /// The next row in order, still charged to `mem` (`row_bytes` of it: the caller gives it
    /// back), or `None`.
    pub(crate) fn next(
        &mut self,
        mem: &mut Reservation<'_>,
        cx: &Ctx,
    ) -> Result<Option<Row>, SqlError> {
        match self {
            Sorted::Memory(rows) => Ok(rows.next()),
            Sorted::Merging(m) => m.next(mem, cx),
        }
    }
}

/// The runs one sort has written: its file (made at the first run) and where each run lies,
/// oldest first.
pub(crate) struct Spill<'a> {
    temp: &'a SessionTemp,
    file: Option<TempFile<'a>>,
    runs: Vec<Run>,
    /// One encoded row, reused.
    scratch: Vec<u8>,
    /// Rows written, for the polls of the stop signal.
    written: u32,
}

impl<'a> Spill<'a> {
    pub(crate) fn new(temp: &'a SessionTemp) -> Spill<'a> {
        Spill {
            temp,
            file: None,
            runs: Vec::new(),
            scratch: Vec::new(),
            written: 0,
        }
    }

    /// Whether any run has been written.
    pub(crate) fn spilled(&self) -> bool {
        !self.runs.is_empty()
    }

    /// Writes `rows` (sorted) as the next run.
    pub(crate) fn write_run(&mut self, rows: &[Row], cx: &Ctx) -> Result<(), SqlError> {
        if self.file.is_none() {
            self.file = Some(self.temp.create()?);
        }
        let file = self.file.as_mut().expect("made above");
        let mut w = file.run_writer();
        for r in rows {
            self.written = self.written.wrapping_add(1);
            if self.written.is_multiple_of(POLL) {
                cx.check_killed()?;
            }
            encode_row(&mut self.scratch, r);
            w.push(&self.scratch)?;
        }
        self.runs.push(w.finish()?);
        Ok(())
    }

    /// Merges the runs, `tail` (sorted, charged to `mem`) the newest of them, down to at
    /// most [`FAN_IN`] sources, and returns the merge that gives the rows in order.
    pub(crate) fn merge(
        mut self,
        tail: Vec<Row>,
        keys_at: usize,
        desc: &[bool],
        mem: &mut Reservation<'_>,
        cx: &Ctx,
    ) -> Result<Merging<'a>, SqlError> {
        while self.runs.len() + 1 > FAN_IN {
            let src = self.file.take().expect("runs have a file");
            let mut dst = self.temp.create()?;
            let mut runs = Vec::new();
            for group in self.runs.chunks(FAN_IN) {
                let sources = group.iter().map(|r| Source::Run(RunCursor::new(*r)));
                let mut m = Merger::new(sources.collect(), keys_at, desc);
                let mut w = dst.run_writer();
                while let Some(row) = m.next(Some(&src), mem, cx)? {
                    encode_row(&mut self.scratch, &row);
                    mem.shrink(row_bytes(&row));
                    w.push(&self.scratch)?;
                }
                runs.push(w.finish()?);
            }
            // The old file goes (and its space with it) once its runs are merged.
            drop(src);
            self.file = Some(dst);
            self.runs = runs;
        }
        let mut sources: Vec<Source> = self
            .runs
            .iter()
            .map(|r| Source::Run(RunCursor::new(*r)))
            .collect();
        sources.push(Source::Mem(tail.into_iter()));
        Ok(Merging {
            file: self.file,
            merger: Merger::new(sources, keys_at, desc),
        })
    }
}

/// The last merge: its sources and the file their runs are in.
pub(crate) struct Merging<'a> {
    file: Option<TempFile<'a>>,
    merger: Merger,
}

impl Merging<'_> {
    /// The next row in order (charged to `mem`: the caller gives it back), or `None`.
    pub(crate) fn next(
        &mut self,
        mem: &mut Reservation<'_>,
        cx: &Ctx,
    ) -> Result<Option<Row>, SqlError> {
        self.merger.next(self.file.as_ref(), mem, cx)
    }
}

/// Where a merge reads: a run on disk or the rows still in memory.
enum Source {
    Run(RunCursor),
    Mem(std::vec::IntoIter<Row>),
}

/// A k-way merge: each source's first row (its head) and a binary min-heap of the sources
/// that have one, ordered by head and then by source (the older run first).
struct Merger {
    sources: Vec<Source>,
    heads: Vec<Option<Row>>,
    heap: Vec<usize>,
    keys_at: usize,
    desc: Vec<bool>,
    started: bool,
    polled: u32,
}

impl Merger {
    fn new(sources: Vec<Source>, keys_at: usize, desc: &[bool]) -> Merger {
        let n = sources.len();
        Merger {
            sources,
            heads: (0..n).map(|_| None).collect(),
            heap: Vec::with_capacity(n),
            keys_at,
            desc: desc.to_vec(),
            started: false,
            polled: 0,
        }
    }

    /// Source `i`'s next row into its head (charged to `mem` when it comes from disk: rows
    /// in memory were charged when they were read).
    fn refill(
        &mut self,
        i: usize,
        file: Option<&TempFile<'_>>,
        mem: &mut Reservation<'_>,
    ) -> Result<bool, SqlError> {
        let row = match &mut self.sources[i] {
            Source::Mem(rows) => rows.next(),
            Source::Run(cursor) => {
                let file = file.expect("a run source has a file");
                match cursor.next_record(file)? {
                    None => None,
                    Some(rec) => {
                        let mut row = Vec::new();
                        decode_row(rec, &mut row).map_err(|what| corrupt_record(file, what))?;
                        mem.grow(row_bytes(&row))?;
                        Some(row)
                    }
                }
            }
        };
        let some = row.is_some();
        self.heads[i] = row;
        Ok(some)
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (
            self.heads[a].as_deref().expect("a head"),
            self.heads[b].as_deref().expect("a head"),
        );
        by_keys(&x[self.keys_at..], &y[self.keys_at..], &self.desc)
            .then(a.cmp(&b))
            .is_lt()
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (l, r) = (2 * at + 1, 2 * at + 2);
            let mut min = at;
            if l < self.heap.len() && self.less(self.heap[l], self.heap[min]) {
                min = l;
            }
            if r < self.heap.len() && self.less(self.heap[r], self.heap[min]) {
                min = r;
            }
            if min == at {
                return;
            }
            self.heap.swap(at, min);
            at = min;
        }
    }

    fn next(
        &mut self,
        file: Option<&TempFile<'_>>,
        mem: &mut Reservation<'_>,
        cx: &Ctx,
    ) -> Result<Option<Row>, SqlError> {
        self.polled += 1;
        if self.polled.is_multiple_of(POLL) {
            cx.check_killed()?;
        }
        if !self.started {
            self.started = true;
            for i in 0..self.sources.len() {
                if self.refill(i, file, mem)? {
                    self.heap.push(i);
                }
            }
            for at in (0..self.heap.len() / 2).rev() {
                self.sift_down(at);
            }
        }
        let Some(&top) = self.heap.first() else {
            return Ok(None);
        };
        let row = self.heads[top]
            .take()
            .expect("a source in the heap has a head");
        if !self.refill(top, file, mem)? {
            let last = self.heap.pop().expect("not empty");
            if self.heap.is_empty() {
                return Ok(Some(row));
            }
            self.heap[0] = last;
        }
        self.sift_down(0);
        Ok(Some(row))
    }
}

#[cfg(test)]
#[path = "sort_spill_tests.rs"]
mod tests;
