//! The hash join's build side past its memory (issue 20 E7): Grace partitioning to the
//! session's temporary space (`runtime::spill`), joined partition by partition.
//!
//! The build keeps its rows in memory up to `tmp_memory_table_size`, or while the statement's
//! budget (`max_session_mem_used`) keeps `SPILL_ROOM` free besides, as GROUP BY does. Past
//! that, the rows held and every later one go to [`FANOUT`] partitions by a hash of their key
//! (the [`HashPart`]s the in-memory table is keyed by, so values equal under the collation,
//! `'a' = 'A '`, land in one partition). The join step then reads its whole outer input into
//! partitions by the same hash and joins each pair of partitions in memory; a build partition
//! that still does not fit is partitioned again with another hash, at most [`MAX_DEPTH`]
//! levels deep (past that, the budget's error, 1290).
//!
//! The output is exactly the in-memory join's, order included: every joined row goes to an
//! external sort (`sort_spill::Sorter`) on (outer row number, build row number), which is the
//! order the in-memory step sends them in (each outer row's candidates in table order). So an
//! ORDER BY satisfied by the first table's scan order, or a LIMIT without ORDER BY, sees the
//! rows it saw before. A LEFT join writes one "null-extension" record per outer row after
//! its candidates, and a "matched" record before it when any candidate passed ON; at the end
//! an outer row without a "matched" record gets its NULL-extended row, if `after` holds.
//!
//! Rows whose key cannot be hashed (`hash_key` gives `Err`; in memory such a build row is tried
//! by every probe, such a probe tries every build row) are kept out of the partitions, each
//! side in its own file (`Materialized`): a probe that cannot be hashed is tried against every
//! row of each partition's table, in every partition; the build rows that cannot be hashed are
//! joined last, as a nested loop over every probe record, in chunks that fit in memory. So
//! every pair is tried once and nothing is copied (copies would multiply at each level). A
//! build row with a NULL key goes to the first partition (only a probe that cannot be hashed
//! tries it); a NULL probe key matches nothing (only its null extension is written).
//!
//! Records (docs/FORMAT.md "Join partition rows") are sort rows (`sort_spill::encode_row`) of
//! the row number, a flags value, the key's parts, then the row's values.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::exec::hash::{hash_key, HashPart};
use crate::exec::op::materialize::Materialized;
use crate::exec::op::sort_spill::{decode_row, encode_row, try_hold, Sorted, Sorter};
use crate::exec::op::{Operator, Row};
use crate::expr::{Ctx, Expr};
use crate::plan::join::KeyClass;
use crate::plan::select::{JoinMethod, JoinStep};
use crate::runtime::limits::row_bytes;
use crate::runtime::memory::Reservation;
use crate::runtime::spill::{corrupt_record, Run, RunCursor, SessionTemp, TempFile};
use crate::types::value::Value;
use crate::SqlError;

/// Partitions per level: each holds a pending buffer of up to [`PENDING`] bytes while a side
/// is written (512 KiB in all, outside the statement's budget).
pub(crate) const FANOUT: usize = 16;
/// Levels of partitioning: 16^4 = 65,536 partitions of the build before the budget's error.
/// Rows of one key cannot be split, so a key alone past the budget ends there.
pub(crate) const MAX_DEPTH: u32 = 4;
/// Bytes a partition gathers before they are written as one run of the side's file.
const PENDING: usize = 32 << 10;
/// Bytes of build rows a partition may hold in memory however small `tmp_memory_table_size`
/// is (the statement's budget still applies): splitting a smaller partition again costs more
/// files than it saves memory.
const PART_MIN: u64 = 64 << 10;
/// Records written between two looks at the statement's stop signal.
const POLL: u32 = 256;

/// A record's flags: the key could be hashed, could not, or holds a NULL.
const HASHED: u64 = 0;
const WILD: u64 = 1;
const NULL_KEY: u64 = 2;

/// What an output record of the sort is (its third value): a joined row, the mark that an
/// outer row matched, the outer row to NULL-extend if it did not.
const ROW: u64 = 0;
const MATCHED: u64 = 1;
const NULL_EXTEND: u64 = 2;

/// A key's parts as record values: each part kind has its own value kind, so the record
/// reads back as the same parts.
fn part_value(p: HashPart) -> Value {
    match p {
        HashPart::Num(n) => Value::UInt(n),
        HashPart::Text(s) => Value::Str(s),
        HashPart::Bytes(b) => Value::Bytes(b),
        HashPart::Time(t) => Value::Int(t),
    }
}

fn value_part(v: &Value) -> Option<HashPart> {
    Some(match v {
        Value::UInt(n) => HashPart::Num(*n),
        Value::Str(s) => HashPart::Text(s.clone()),
        Value::Bytes(b) => HashPart::Bytes(b.clone()),
        Value::Int(t) => HashPart::Time(*t),
        _ => return None,
    })
}

fn uint(v: &Value) -> u64 {
    match v {
        Value::UInt(n) => *n,
        _ => u64::MAX,
    }
}

/// The record of row `id` (`row` appended after the key): number, flags, key parts.
fn record(id: u64, key: Result<Option<Vec<HashPart>>, ()>, width: usize, row: &[Value]) -> Row {
    let mut rec = Vec::with_capacity(2 + width + row.len());
    rec.push(Value::UInt(id));
    match key {
        Ok(Some(parts)) => {
            rec.push(Value::UInt(HASHED));
            rec.extend(parts.into_iter().map(part_value));
        }
        Ok(None) => {
            rec.push(Value::UInt(NULL_KEY));
            rec.resize(2 + width, Value::Null);
        }
        Err(()) => {
            rec.push(Value::UInt(WILD));
            rec.resize(2 + width, Value::Null);
        }
    }
    rec.extend_from_slice(row);
    rec
}

/// One side's partitions at one level: a file holding every partition's runs.
pub(crate) struct Parts<'a> {
    file: TempFile<'a>,
    level: u32,
    /// Key parts per record.
    width: usize,
    runs: Vec<Vec<Run>>,
    /// Per partition: records gathered, each length-prefixed, not yet written.
    pending: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    written: u32,
}

impl<'a> Parts<'a> {
    fn new(temp: &'a SessionTemp, level: u32, width: usize) -> Result<Parts<'a>, SqlError> {
        Ok(Parts {
            file: temp.create()?,
            level,
            width,
            runs: vec![Vec::new(); FANOUT],
            pending: vec![Vec::new(); FANOUT],
            scratch: Vec::new(),
            written: 0,
        })
    }

    /// The partition of a hashed record's key at this level.
    fn part_of(&self, rec: &[Value]) -> usize {
        let mut h = std::hash::DefaultHasher::new();
        self.level.hash(&mut h);
        let mut key = Vec::new();
        encode_row(&mut key, &rec[2..2 + self.width]);
        key.hash(&mut h);
        (h.finish() % FANOUT as u64) as usize
    }

    /// Writes `rec` where its flags say: a hashed key to its partition, a NULL key to the
    /// first (a key that cannot be hashed is kept out of the partitions).
    fn put(&mut self, rec: Row, cx: &Ctx) -> Result<(), SqlError> {
        match uint(&rec[1]) {
            HASHED => {
                let p = self.part_of(&rec);
                self.put_in(p, &rec, cx)
            }
            NULL_KEY => self.put_in(0, &rec, cx),
            _ => Err(SqlError::internal("an unhashable join key in a partition")),
        }
    }

    fn put_in(&mut self, p: usize, rec: &[Value], cx: &Ctx) -> Result<(), SqlError> {
        self.written = self.written.wrapping_add(1);
        if self.written.is_multiple_of(POLL) {
            cx.check_killed()?;
        }
        encode_row(&mut self.scratch, rec);
        let buf = &mut self.pending[p];
        buf.extend_from_slice(&(self.scratch.len() as u32).to_le_bytes());
        buf.extend_from_slice(&self.scratch);
        if buf.len() >= PENDING {
            self.flush(p)?;
        }
        Ok(())
    }

    fn flush(&mut self, p: usize) -> Result<(), SqlError> {
        let buf = std::mem::take(&mut self.pending[p]);
        if buf.is_empty() {
            return Ok(());
        }
        let mut w = self.file.run_writer();
        let mut at = 0;
        while at < buf.len() {
            let len = u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
            w.push(&buf[at + 4..at + 4 + len])?;
            at += 4 + len;
        }
        let run = w.finish()?;
        self.runs[p].push(run);
        // The buffer's capacity is kept for the partition's next records.
        self.pending[p] = buf;
        self.pending[p].clear();
        Ok(())
    }

    /// Writes what every partition gathered; the buffers are let go.
    fn finish(&mut self) -> Result<(), SqlError> {
        for p in 0..FANOUT {
            self.flush(p)?;
            self.pending[p] = Vec::new();
        }
        Ok(())
    }

    fn reader(&self, p: usize) -> PartReader {
        PartReader {
            runs: self.runs[p].clone(),
            next: 0,
            cur: None,
        }
    }

    fn is_empty(&self, p: usize) -> bool {
        self.runs[p].is_empty()
    }
}

/// Reads one partition's records back, run after run.
struct PartReader {
    runs: Vec<Run>,
    next: usize,
    cur: Option<RunCursor>,
}

impl PartReader {
    fn next(&mut self, file: &TempFile<'_>, out: &mut Row) -> Result<bool, SqlError> {
        loop {
            if let Some(c) = &mut self.cur {
                if let Some(rec) = c.next_record(file)? {
                    decode_row(rec, out).map_err(|e| corrupt_record(file, e))?;
                    if out.len() < 2 {
                        return Err(corrupt_record(file, "a join record without its header"));
                    }
                    return Ok(true);
                }
            }
            let Some(run) = self.runs.get(self.next) else {
                return Ok(false);
            };
            self.next += 1;
            self.cur = Some(RunCursor::new(*run));
        }
    }
}

/// A hash step's build side as it is read: rows in memory until they do not fit, then
/// partitions.
pub(crate) struct Collect<'a> {
    rows: Vec<Row>,
    mem: Reservation<'a>,
    /// Bytes of `rows`, against `table`.
    held: u64,
    table: u64,
    temp: Option<&'a SessionTemp>,
    parts: Option<Parts<'a>>,
    /// Once partitioned: the build rows whose key cannot be hashed, and (for the join) the
    /// probe rows whose key cannot be hashed.
    wild: Materialized<'a>,
    wild_probe: Materialized<'a>,
    /// Rows kept so far (the next row's number).
    n: u64,
}

/// What a hash step's build gave: its rows in memory, or its partitions.
pub(crate) enum Collected<'a> {
    Memory(Vec<Row>, Reservation<'a>),
    Spilled(Box<Spilled<'a>>),
}

/// A build side in partitions, with the reservation that the join charges from then on.
pub(crate) struct Spilled<'a> {
    parts: Parts<'a>,
    wild: Materialized<'a>,
    wild_probe: Materialized<'a>,
    mem: Reservation<'a>,
    temp: &'a SessionTemp,
    table: u64,
}

impl<'a> Collect<'a> {
    pub(crate) fn new(cx: &Ctx<'a>) -> Collect<'a> {
        let temp = cx.killed.and_then(|i| i.temp());
        Collect {
            rows: Vec::new(),
            mem: Reservation::new(cx.killed),
            held: 0,
            table: crate::exec::op::materialize::join_table(temp),
            temp,
            parts: None,
            wild: Materialized::new(cx),
            wild_probe: Materialized::new(cx),
            n: 0,
        }
    }

    /// A build record to its partition, or with the rows whose key cannot be hashed.
    fn route(
        parts: &mut Parts<'a>,
        wild: &mut Materialized<'a>,
        rec: Row,
        cx: &Ctx,
    ) -> Result<(), SqlError> {
        match uint(&rec[1]) {
            WILD => wild.push(rec),
            _ => parts.put(rec, cx),
        }
    }

    /// Keeps one build row (it passed the build filter).
    pub(crate) fn push(
        &mut self,
        r: Row,
        keys: &[Expr],
        classes: &[KeyClass],
        cx: &Ctx,
    ) -> Result<(), SqlError> {
        let id = self.n;
        self.n += 1;
        if let Some(parts) = &mut self.parts {
            let key = hash_key(keys, classes, &r, cx)?;
            return Self::route(parts, &mut self.wild, record(id, key, keys.len(), &r), cx);
        }
        let bytes = row_bytes(&r);
        let Some(temp) = self.temp else {
            self.mem.grow(bytes)?;
            self.held += bytes;
            self.rows.push(r);
            return Ok(());
        };
        if try_hold(&mut self.mem, self.held, bytes, self.table) {
            self.held += bytes;
            self.rows.push(r);
            return Ok(());
        }
        // Past the table or the budget: everything goes to partitions from here on.
        let mut parts = Parts::new(temp, 0, keys.len())?;
        for (i, held) in std::mem::take(&mut self.rows).into_iter().enumerate() {
            let key = hash_key(keys, classes, &held, cx)?;
            let rec = record(i as u64, key, keys.len(), &held);
            Self::route(&mut parts, &mut self.wild, rec, cx)?;
        }
        self.mem.shrink(self.held);
        self.held = 0;
        let key = hash_key(keys, classes, &r, cx)?;
        Self::route(
            &mut parts,
            &mut self.wild,
            record(id, key, keys.len(), &r),
            cx,
        )?;
        self.parts = Some(parts);
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<Collected<'a>, SqlError> {
        match (self.parts, self.temp) {
            (Some(mut parts), Some(temp)) => {
                parts.finish()?;
                let mut wild = self.wild;
                wild.finish()?;
                Ok(Collected::Spilled(Box::new(Spilled {
                    parts,
                    wild,
                    wild_probe: self.wild_probe,
                    mem: self.mem,
                    temp,
                    table: self.table,
                })))
            }
            _ => Ok(Collected::Memory(self.rows, self.mem)),
        }
    }
}

/// A hash step whose build side is in partitions: reads its whole input, joins partition by
/// partition into a sort on the in-memory order, then sends the sorted rows.
pub(crate) struct Grace<'a> {
    child: Box<dyn Operator + 'a>,
    step: &'a JoinStep,
    build: Option<Box<Spilled<'a>>>,
    /// Taken out of `build` when the join runs (charged for the sort and the partitions).
    mem: Reservation<'a>,
    out: Option<Sorted<'a>>,
    /// The outer row number of the last "matched" record read.
    matched: Option<u64>,
    sent: u32,
}

impl<'a> Grace<'a> {
    pub(crate) fn new(
        child: Box<dyn Operator + 'a>,
        step: &'a JoinStep,
        mut build: Box<Spilled<'a>>,
    ) -> Grace<'a> {
        let mem = std::mem::replace(&mut build.mem, Reservation::new(None));
        Grace {
            child,
            step,
            build: Some(build),
            mem,
            out: None,
            matched: None,
            sent: 0,
        }
    }

    fn keys(&self) -> Result<(&'a [Expr], &'a [KeyClass]), SqlError> {
        match &self.step.method {
            JoinMethod::Hash {
                probe_keys,
                classes,
                ..
            } => Ok((probe_keys, classes)),
            _ => Err(SqlError::internal(
                "a partitioned join step that is not hash",
            )),
        }
    }

    fn run(&mut self, cx: &Ctx) -> Result<Sorted<'a>, SqlError> {
        let mut build = self.build.take().expect("run once");
        let (probe_keys, classes) = self.keys()?;
        let width = probe_keys.len();
        let temp = build.temp;
        let mut sorter = Sorter::new(Some(temp), temp.sort_buffer(), 0, &[false; 3]);
        let mut probe = Parts::new(temp, 0, width)?;
        let mut outer = Vec::new();
        let mut seq = 0u64;
        while self.child.next(cx, &mut outer)? {
            if self.step.left {
                let mut mark = Vec::with_capacity(3 + outer.len());
                mark.extend([
                    Value::UInt(seq),
                    Value::UInt(u64::MAX),
                    Value::UInt(NULL_EXTEND),
                ]);
                mark.extend_from_slice(&outer);
                sorter.push(mark, &mut self.mem, cx)?;
            }
            match hash_key(probe_keys, classes, &outer, cx)? {
                Ok(None) => {}
                key @ Ok(Some(_)) => probe.put(record(seq, key, width, &outer), cx)?,
                Err(()) => build.wild_probe.push(record(seq, Err(()), width, &outer))?,
            }
            seq += 1;
        }
        probe.finish()?;
        build.wild_probe.finish()?;
        let mut j = PartJoin {
            step: self.step,
            temp,
            table: build.table,
            wild_probe: &build.wild_probe,
            mem: &mut self.mem,
            sorter: &mut sorter,
        };
        for p in 0..FANOUT {
            j.join(&build.parts, &probe, p, cx)?;
        }
        if !build.wild.is_empty() {
            j.wild_rows(&build.wild, &probe, cx)?;
        }
        drop(probe);
        drop(build);
        sorter.finish(&mut self.mem, cx)
    }
}

/// Joins pairs of partitions into the output sort.
struct PartJoin<'s, 'a, 'm> {
    step: &'a JoinStep,
    temp: &'a SessionTemp,
    table: u64,
    /// The probe rows whose key cannot be hashed: tried against every partition's rows.
    wild_probe: &'s Materialized<'a>,
    mem: &'s mut Reservation<'m>,
    sorter: &'s mut Sorter<'a>,
}

/// One build partition in memory.
#[derive(Default)]
struct Table {
    rows: Vec<Row>,
    ids: Vec<u64>,
    buckets: HashMap<Vec<HashPart>, Vec<usize>>,
    held: u64,
}

/// A probe record's key parts (`None`: the record is corrupt).
fn key_of(rec: &[Value], w: usize) -> Option<Vec<HashPart>> {
    rec.get(2..2 + w)?.iter().map(value_part).collect()
}

impl PartJoin<'_, '_, '_> {
    /// Partition `p` of `build` against partition `p` of `probe` (same level), and against
    /// the probe rows whose key cannot be hashed.
    fn join(&mut self, build: &Parts, probe: &Parts, p: usize, cx: &Ctx) -> Result<(), SqlError> {
        // No build rows: no candidates (a LEFT row's null extension is already written).
        if build.is_empty(p) || (probe.is_empty(p) && self.wild_probe.is_empty()) {
            return Ok(());
        }
        let t = match self.load(build, p, cx)? {
            Some(t) => t,
            None => return self.split(build, probe, p, cx),
        };
        let r = self.probe(&t, probe, p, cx);
        self.mem.shrink(t.held);
        r
    }

    /// The partition's rows in a table, or `None` when they do not fit (and a deeper level
    /// may split them).
    fn load(&mut self, build: &Parts, p: usize, cx: &Ctx) -> Result<Option<Table>, SqlError> {
        let mut t = Table::default();
        let mut rd = build.reader(p);
        let mut rec = Vec::new();
        let w = build.width;
        while rd.next(&build.file, &mut rec)? {
            let bytes = row_bytes(&rec[2 + w..]);
            if build.level + 1 < MAX_DEPTH {
                if !try_hold(self.mem, t.held, bytes, self.table.max(PART_MIN)) {
                    self.mem.shrink(t.held);
                    return Ok(None);
                }
            } else if let Err(e) = self.mem.grow(bytes) {
                self.mem.shrink(t.held);
                return Err(e);
            }
            t.held += bytes;
            cx.check_killed()?;
            if uint(&rec[1]) == HASHED {
                let key =
                    key_of(&rec, w).ok_or_else(|| corrupt_record(&build.file, "a join key"))?;
                t.buckets.entry(key).or_default().push(t.rows.len());
            }
            t.ids.push(uint(&rec[0]));
            t.rows.push(rec.split_off(2 + w));
        }
        Ok(Some(t))
    }

    /// Partitions both sides of partition `p` again, one level deeper, and joins those.
    fn split(&mut self, build: &Parts, probe: &Parts, p: usize, cx: &Ctx) -> Result<(), SqlError> {
        let level = build.level + 1;
        let mut sides = Vec::with_capacity(2);
        for side in [build, probe] {
            let mut sub = Parts::new(self.temp, level, side.width)?;
            let mut rd = side.reader(p);
            let mut rec = Vec::new();
            while rd.next(&side.file, &mut rec)? {
                sub.put(std::mem::take(&mut rec), cx)?;
            }
            sub.finish()?;
            sides.push(sub);
        }
        for q in 0..FANOUT {
            self.join(&sides[0], &sides[1], q, cx)?;
        }
        Ok(())
    }

    /// Outer row `seq` (`outer`) against build row `id` (`cand`): the joined row to the sort if
    /// it passes ON and `after`; `matched` once it passes ON.
    fn pair(
        &mut self,
        seq: u64,
        outer: &[Value],
        id: u64,
        cand: &[Value],
        matched: &mut bool,
        cx: &Ctx,
    ) -> Result<(), SqlError> {
        let mut out = Vec::with_capacity(3 + outer.len() + cand.len());
        out.extend([Value::UInt(seq), Value::UInt(id), Value::UInt(ROW)]);
        out.extend_from_slice(outer);
        out.extend_from_slice(cand);
        cx.check_killed()?;
        if !passes(&self.step.on, &out[3..], cx)? {
            return Ok(());
        }
        *matched = true;
        if passes(&self.step.after, &out[3..], cx)? {
            self.sorter.push(out, self.mem, cx)?;
        }
        Ok(())
    }

    /// A LEFT join's mark that outer row `seq` matched (no NULL-extended row for it).
    fn mark(&mut self, seq: u64, matched: bool, cx: &Ctx) -> Result<(), SqlError> {
        if self.step.left && matched {
            let mark = vec![
                Value::UInt(seq),
                Value::UInt(u64::MAX),
                Value::UInt(MATCHED),
            ];
            self.sorter.push(mark, self.mem, cx)?;
        }
        Ok(())
    }

    /// The hashed probe records of partition `p` against their key's rows of `t`, then every
    /// probe record that could not be hashed against all of `t`.
    fn probe(&mut self, t: &Table, probe: &Parts, p: usize, cx: &Ctx) -> Result<(), SqlError> {
        let mut rd = probe.reader(p);
        let mut rec = Vec::new();
        let w = probe.width;
        while rd.next(&probe.file, &mut rec)? {
            let seq = uint(&rec[0]);
            let key = key_of(&rec, w).ok_or_else(|| corrupt_record(&probe.file, "a join key"))?;
            let Some(hits) = t.buckets.get(&key) else {
                continue;
            };
            let mut matched = false;
            for &at in hits {
                self.pair(seq, &rec[2 + w..], t.ids[at], &t.rows[at], &mut matched, cx)?;
            }
            self.mark(seq, matched, cx)?;
        }
        let wild = self.wild_probe;
        let mut rd = wild.reader();
        while wild.next(&mut rd, &mut rec)? {
            let seq = uint(&rec[0]);
            let mut matched = false;
            for (cand, id) in t.rows.iter().zip(&t.ids) {
                self.pair(seq, &rec[2 + w..], *id, cand, &mut matched, cx)?;
            }
            self.mark(seq, matched, cx)?;
        }
        Ok(())
    }

    /// The build rows whose key could not be hashed, against every probe record (hashed or
    /// not), a chunk of them in memory at a time.
    fn wild_rows(
        &mut self,
        wild: &Materialized<'_>,
        probe: &Parts,
        cx: &Ctx,
    ) -> Result<(), SqlError> {
        let w = probe.width;
        let mut rd = wild.reader();
        let mut carry: Option<Row> = None;
        let mut rec = Vec::new();
        loop {
            let mut chunk: Vec<Row> = Vec::new();
            let mut held = 0u64;
            loop {
                let r = match carry.take() {
                    Some(r) => r,
                    None if wild.next(&mut rd, &mut rec)? => std::mem::take(&mut rec),
                    None => break,
                };
                let bytes = row_bytes(&r);
                if !try_hold(self.mem, held, bytes, self.table.max(PART_MIN)) {
                    // A chunk takes at least one row, past the budget or not.
                    if !chunk.is_empty() {
                        carry = Some(r);
                        break;
                    }
                    self.mem.grow(bytes)?;
                }
                held += bytes;
                chunk.push(r);
            }
            if chunk.is_empty() {
                return Ok(());
            }
            for p in 0..FANOUT {
                let mut prd = probe.reader(p);
                while prd.next(&probe.file, &mut rec)? {
                    self.against(&chunk, &rec, w, cx)?;
                }
            }
            let wp = self.wild_probe;
            let mut prd = wp.reader();
            while wp.next(&mut prd, &mut rec)? {
                self.against(&chunk, &rec, w, cx)?;
            }
            self.mem.shrink(held);
        }
    }

    /// One probe record against each build record of `chunk`.
    fn against(
        &mut self,
        chunk: &[Row],
        rec: &[Value],
        w: usize,
        cx: &Ctx,
    ) -> Result<(), SqlError> {
        let seq = uint(&rec[0]);
        let mut matched = false;
        for b in chunk {
            self.pair(
                seq,
                &rec[2 + w..],
                uint(&b[0]),
                &b[2 + w..],
                &mut matched,
                cx,
            )?;
        }
        self.mark(seq, matched, cx)
    }
}

impl Operator for Grace<'_> {
    fn next(&mut self, cx: &Ctx, out: &mut Row) -> Result<bool, SqlError> {
        if self.out.is_none() {
            let sorted = self.run(cx)?;
            self.out = Some(sorted);
        }
        let off = self.step.offset;
        loop {
            let sorted = self.out.as_mut().expect("run");
            let Some(mut r) = sorted.next(&mut self.mem, cx)? else {
                return Ok(false);
            };
            self.mem.shrink(row_bytes(&r));
            self.sent = self.sent.wrapping_add(1);
            if self.sent.is_multiple_of(POLL) {
                cx.check_killed()?;
            }
            let seq = uint(&r[0]);
            match uint(&r[2]) {
                ROW => {
                    out.clear();
                    out.extend(r.drain(3..));
                    return Ok(true);
                }
                MATCHED => self.matched = Some(seq),
                _ if self.matched == Some(seq) => {}
                _ => {
                    out.clear();
                    out.extend(r.drain(3..));
                    out.resize(off + self.step.table.types.len(), Value::Null);
                    if passes(&self.step.after, out, cx)? {
                        return Ok(true);
                    }
                }
            }
        }
    }
}

/// Whether an optional condition holds for `row` (none: it does).
pub(crate) fn passes(e: &Option<Expr>, row: &[Value], ctx: &Ctx) -> Result<bool, SqlError> {
    match e {
        Some(e) => e.test(row, ctx),
        None => Ok(true),
    }
}
