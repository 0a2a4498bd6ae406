//! Multi-row INSERT … VALUES in chunks: the rows of a chunk are built and encoded first, then
//! checked for duplicate primary keys with one ordered probe of the table
//! ([`zipdb_engine::Transaction::probe_new_keys`]) instead of a locking read (a descent) per
//! row, and written in statement order, each row locked as the per-row path locks it.
//!
//! What the statement does stays that of the per-row path ([`InsertPlan::store`]), error for
//! error: a row the probe finds taken, and every row after it in its chunk, goes through that
//! path, which reports the duplicate (1062, naming the first colliding row in statement order)
//! or finds the row gone after all; an error building a row is raised once the rows before it
//! are written; warnings are raised in row order. The one state the building of later rows
//! touches early is the table's AUTO_INCREMENT counter: on a failure it is set back to what
//! the per-row path would have left, unless another session moved it meanwhile.
//!
//! Only statements whose effects this keeps qualify ([`InsertPlan::batches`]): plain INSERT (IGNORE,
//! REPLACE and ON DUPLICATE KEY UPDATE resolve duplicates row by row), of two rows or more,
//! into a table without UNIQUE secondary indexes (their checks read and lock other trees), with
//! VALUES that are literals, parameters or DEFAULT (nothing to evaluate that could read the
//! table or have effects of its own).

use std::sync::atomic::Ordering;

use zipdb_engine::Transaction;

use crate::error::SqlError;
use crate::exec::dml::{encode_row, eng, DmlCount, Source};
use crate::expr::{Ctx, Expr};
use crate::plan::dml::{InsertMode, InsertPlan};
use crate::types::value::Value;

/// Rows a chunk holds at most: enough to make the probe's one descent cheap per row, few
/// enough that a failing row is found soon and the held rows stay small. (Tests: 4, so that
/// their statements span chunks.)
const CHUNK_ROWS: usize = if cfg!(test) { 4 } else { 1000 };
/// Encoded bytes (keys and rows) a chunk holds at most, so that wide rows keep its memory
/// bounded too (the built values take a small multiple of this).
const CHUNK_BYTES: usize = 1 << 20;

#[cfg(test)]
thread_local! {
    /// Tests compare the batch path with the per-row path by turning it off.
    pub(crate) static ROW_PATH_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Rows the batch path wrote without the per-row path (tests check that it ran).
    pub(crate) static BATCHED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A built row waiting in a chunk.
struct Pending {
    rowno: u64,
    pk: Vec<u8>,
    row: Vec<Value>,
    value: Vec<u8>,
    /// The AUTO_INCREMENT counter once this row was built.
    counter: u64,
}

/// A failure while a chunk is written, and the chunk's row it happened at.
type Failed = (usize, SqlError);

impl InsertPlan {
    /// Whether this statement takes the batch path (see the module docs).
    pub(super) fn batches(&self) -> bool {
        #[cfg(test)]
        if ROW_PATH_ONLY.with(|c| c.get()) {
            return false;
        }
        self.select.is_none()
            && self.mode == InsertMode::Insert
            && self.on_dup.is_empty()
            && self.rows.len() > 1
            && !self.table.def.indexes.iter().any(|i| i.unique)
            && self.rows.iter().flatten().all(|e| match e {
                Expr::Const(_) | Expr::Param(_) => true,
                e if e.is_column_default() => true,
                _ => false,
            })
    }

    /// Inserts the VALUES rows chunk by chunk; returns how many rows it stored.
    pub(super) fn insert_batched(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        n: &mut DmlCount,
    ) -> Result<u64, SqlError> {
        let t = &*self.table;
        let mut chunk: Vec<Pending> = Vec::new();
        let mut bytes = 0usize;
        let mut copied = 0u64;
        for (ri, exprs) in self.rows.iter().enumerate() {
            let rowno = ri as u64 + 1;
            let built = self.build(ctx, rowno, Source::Exprs(exprs), n);
            let counter = t.next_id.load(Ordering::Relaxed);
            let (pk, row) = match built {
                Ok(b) => b,
                Err(e) => {
                    // The rows before it are written first, and may fail first.
                    self.write_chunk(txn, ctx, &mut chunk, counter, n)?;
                    return Err(e);
                }
            };
            let value = encode_row(t, &row);
            bytes += pk.len() + value.len();
            chunk.push(Pending {
                rowno,
                pk,
                row,
                value,
                counter,
            });
            if chunk.len() == CHUNK_ROWS || bytes >= CHUNK_BYTES {
                copied += self.write_chunk(txn, ctx, &mut chunk, counter, n)?;
                bytes = 0;
            }
        }
        let counter = t.next_id.load(Ordering::Relaxed);
        copied += self.write_chunk(txn, ctx, &mut chunk, counter, n)?;
        Ok(copied)
    }

    /// Writes and empties `chunk`. `counter`: the AUTO_INCREMENT counter after the last row
    /// built; on a failure it goes back to its value after the failing row.
    fn write_chunk(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        chunk: &mut Vec<Pending>,
        counter: u64,
        n: &mut DmlCount,
    ) -> Result<u64, SqlError> {
        let r = self.write_rows(txn, ctx, chunk, n);
        let r = r.map_err(|(i, e)| {
            let at = chunk[i].counter;
            if at != counter {
                // Unless another session took a value since (then the gap stays, as
                // AUTO_INCREMENT gaps may).
                let _ = self.table.next_id.compare_exchange(
                    counter,
                    at,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            e
        });
        chunk.clear();
        r
    }

    fn write_rows(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        chunk: &mut [Pending],
        n: &mut DmlCount,
    ) -> Result<u64, Failed> {
        let t = &*self.table;
        if chunk.is_empty() {
            return Ok(0);
        }
        let keys: Vec<&[u8]> = chunk.iter().map(|p| p.pk.as_slice()).collect();
        let mut probe = txn
            .probe_new_keys(&t.primary, &keys)
            .map_err(|e| (0, eng(e)))?;
        let mut copied = 0u64;
        for (i, p) in chunk.iter_mut().enumerate() {
            let fail = |e: SqlError| (i, e);
            let new = txn
                .insert_probed(&mut probe, i, std::mem::take(&mut p.value))
                .map_err(|e| fail(eng(e)))?;
            if new {
                // Index entries end with the row's key, locked just now.
                for x in 0..t.indexes.len() {
                    txn.put_covered(
                        &t.indexes[x],
                        &t.index_key(x, &p.row, &p.pk),
                        b"",
                        (&t.primary, &p.pk),
                    )
                    .map_err(|e| fail(eng(e)))?;
                }
                n.affected += 1;
                copied += 1;
                #[cfg(test)]
                BATCHED.with(|c| c.set(c.get() + 1));
            } else {
                // Taken (or after a taken row): the per-row path finds out what it meets.
                let (pk, row) = (std::mem::take(&mut p.pk), std::mem::take(&mut p.row));
                copied += self
                    .insert_one(txn, t, pk, row, p.rowno, ctx, n)
                    .map_err(fail)?;
            }
            ctx.check_pending(txn.pending_bytes()).map_err(fail)?;
        }
        Ok(copied)
    }
}
