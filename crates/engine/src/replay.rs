//! Redo replay while a database opens: batched, de-duplicated, sorted and applied in parallel.
//!
//! Replaying the log one operation at a time costs a full B-tree descent and a leaf search per
//! logged write, and it was CPU-bound at about 1.3–1.6 µs per record (see docs/BENCHMARKS.md).
//! Every redo operation is a blind write of a final value (`redo.rs`), which allows three
//! things without changing the result:
//!
//! * **De-duplication.** Within a run of commit records, only the last write of each
//!   `(tree, key)` matters: an earlier one is overwritten before anyone can read it.
//! * **Sorting.** Writes to different keys commute, so the surviving writes of a batch can be
//!   applied in key order, which touches each leaf once per run of neighbouring keys instead of
//!   once per write in log order (the path stays in cache).
//! * **Parallelism.** Sorted writes split into contiguous key ranges that touch disjoint leaves
//!   (except at the seams, which the B-tree's latches handle), so worker threads apply them
//!   concurrently through the ordinary concurrent B-tree.
//!
//! A batch ends when its buffer is full, at every DDL record (create and drop tree change which
//! trees exist, so the batch before them is applied first and they run alone, in log order) and
//! at the end of the log. Batches are applied in log order. InnoDB recovery does the same in
//! spirit: it parses a batch of log, hashes it by page and applies each page's records together.
//!
//! A crash during replay is harmless for the same reason as before batching: replay writes
//! nothing durable until the checkpoint that ends recovery.

use crate::error::StorageError;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zipdb_storage::{Lsn, TreeId};

use crate::btree::BTree;
use crate::error::{Error, Result};
use crate::redo::{self, Record};

/// Bytes of keys and values buffered before a batch is applied: half the buffer pool, within
/// these bounds. Each batch touches (about) every leaf its keys fall in, so when the trees do
/// not fit in the pool, every batch reads them from disk again: fewer, larger batches mean
/// fewer passes (a 1 GiB log of unique keys into a 256 MiB pool took 25 passes with 32 MiB
/// batches). The batch is extra memory, outside the pool, only while the database opens.
pub(crate) const BATCH_BYTES_MIN: usize = 32 << 20;
pub(crate) const BATCH_BYTES_MAX: usize = 1 << 30;

/// One buffered write; key and value live in [`Batch::arena`].
#[derive(Debug, Clone, Copy)]
struct Write {
    tree: TreeId,
    /// First 16 key bytes, big-endian and zero-padded: most comparisons end here.
    prefix: u128,
    key_at: u32,
    key_len: u32,
    /// `u32::MAX` for a delete.
    value_at: u32,
    value_len: u32,
}

const DELETE: u32 = u32::MAX;

impl Write {
    fn key<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.key_at as usize..(self.key_at + self.key_len) as usize]
    }

    fn value<'a>(&self, arena: &'a [u8]) -> Option<&'a [u8]> {
        (self.value_at != DELETE)
            .then(|| &arena[self.value_at as usize..(self.value_at + self.value_len) as usize])
    }
}

fn key_prefix(key: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = key.len().min(16);
    b[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(b)
}

#[derive(Default)]
struct Batch {
    arena: Vec<u8>,
    writes: Vec<Write>,
}

impl Batch {
    fn push(&mut self, tree: TreeId, key: &[u8], value: Option<&[u8]>) {
        let key_at = self.arena.len() as u32;
        self.arena.extend_from_slice(key);
        let (value_at, value_len) = match value {
            Some(v) => {
                let at = self.arena.len() as u32;
                self.arena.extend_from_slice(v);
                (at, v.len() as u32)
            }
            None => (DELETE, 0),
        };
        self.writes.push(Write {
            tree,
            prefix: key_prefix(key),
            key_at,
            key_len: key.len() as u32,
            value_at,
            value_len,
        });
    }

    /// Whether adding `bytes` more would overflow the arena's budget or its u32 offsets.
    fn would_overflow(&self, bytes: usize, limit: usize) -> bool {
        // A record's payload is below 4 GiB (its length is a u32), so an empty arena always
        // takes one and the u32 offsets cannot overflow.
        !self.writes.is_empty()
            && (self.arena.len() + bytes > limit || self.arena.len() + bytes > u32::MAX as usize)
    }

    /// Sorts by (tree, key, log order) and keeps the last write of each key. Returns the
    /// number of writes dropped as overwritten.
    fn sort_dedup(&mut self) -> u64 {
        let arena = &self.arena;
        // Among equal keys, log order is arena order (`key_at`).
        self.writes.sort_unstable_by(|a, b| {
            a.tree
                .0
                .cmp(&b.tree.0)
                .then(a.prefix.cmp(&b.prefix))
                .then_with(|| a.key(arena).cmp(b.key(arena)))
                .then(a.key_at.cmp(&b.key_at))
        });
        let before = self.writes.len();
        // Keep the last of each run of equal keys.
        let mut out = 0usize;
        for i in 0..self.writes.len() {
            let w = self.writes[i];
            let last_of_run = match self.writes.get(i + 1) {
                Some(n) => n.tree != w.tree || n.prefix != w.prefix || n.key(arena) != w.key(arena),
                None => true,
            };
            if last_of_run {
                self.writes[out] = w;
                out += 1;
            }
        }
        self.writes.truncate(out);
        (before - out) as u64
    }

    fn clear(&mut self) {
        self.arena.clear();
        self.writes.clear();
    }
}

/// What replay needs to know about the trees: resolves a tree id to its B-tree and handles the
/// DDL records. Implemented by the catalog in `db.rs`.
pub(crate) trait ReplayCatalog {
    type Tree: AsRef<BTree> + Send + Sync;
    fn tree(&self, id: TreeId) -> Option<Arc<Self::Tree>>;
    fn create_tree(
        &mut self,
        id: TreeId,
        format: crate::format::TreeFormat,
        name: &str,
    ) -> Result<()>;
    fn drop_tree(&mut self, id: TreeId) -> Result<()>;
}

/// Counters of one replay.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReplayStats {
    /// Writes decoded from commit records.
    pub writes: u64,
    /// Writes not applied because a later write in the same batch replaced them.
    pub overwritten: u64,
    /// Writes to trees dropped later in the log.
    pub skipped: u64,
    pub batches: u64,
    /// Time spent sorting batches, and sorting plus applying them.
    pub sort: Duration,
    pub apply: Duration,
    /// Time spent applying batches after the log was read to its end (the last batch), which
    /// the WAL's own recovery timer does not see.
    pub tail_apply: Duration,
}

/// Replays redo records into the trees; see the module docs.
pub(crate) struct Replay<'a, C: ReplayCatalog> {
    cat: &'a mut C,
    batch: Batch,
    batch_bytes: usize,
    threads: usize,
    pub stats: ReplayStats,
    /// The first error, kept with its type (the WAL only carries a message back).
    pub error: Option<Error>,
}

impl<'a, C: ReplayCatalog> Replay<'a, C> {
    /// `pool_bytes`: the buffer pool's budget, which sizes the batches.
    pub fn new(cat: &'a mut C, pool_bytes: usize) -> Replay<'a, C> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        Replay {
            cat,
            batch: Batch::default(),
            // The engine's own tests replay small logs: tiny batches make them cross many
            // batch boundaries (and DDL barriers) in every crash and model test.
            batch_bytes: if cfg!(test) {
                16 << 10
            } else {
                (pool_bytes / 2).clamp(BATCH_BYTES_MIN, BATCH_BYTES_MAX)
            },
            threads,
            stats: ReplayStats::default(),
            error: None,
        }
    }

    /// The WAL's per-record callback.
    pub fn record(&mut self, lsn: Lsn, payload: &[u8]) -> std::result::Result<(), String> {
        match self.record_inner(lsn, payload) {
            Ok(()) => Ok(()),
            Err(e) => {
                let msg = e.to_string();
                self.error = Some(e);
                Err(msg)
            }
        }
    }

    fn record_inner(&mut self, lsn: Lsn, payload: &[u8]) -> Result<()> {
        let rec = redo::decode(payload)
            .map_err(|detail| Error::Storage(StorageError::CorruptRedo { lsn: lsn.0, detail }))?;
        match rec {
            Record::Commit(ops) => {
                if self.batch.would_overflow(payload.len(), self.batch_bytes) {
                    self.apply_batch()?;
                }
                for op in ops {
                    self.batch.push(op.tree, op.key, op.value);
                    self.stats.writes += 1;
                }
            }
            Record::CreateTree { id, format, name } => {
                self.apply_batch()?;
                self.cat.create_tree(id, format, name)?;
            }
            Record::DropTree { id } => {
                self.apply_batch()?;
                self.cat.drop_tree(id)?;
            }
        }
        Ok(())
    }

    /// Applies what is still buffered; call once the log has been read to its end.
    pub fn finish(&mut self) -> Result<()> {
        let t = Instant::now();
        self.apply_batch()?;
        self.stats.tail_apply = t.elapsed();
        Ok(())
    }

    fn apply_batch(&mut self) -> Result<()> {
        if self.batch.writes.is_empty() {
            return Ok(());
        }
        self.stats.batches += 1;
        let t0 = Instant::now();
        self.stats.overwritten += self.batch.sort_dedup();
        self.stats.sort += t0.elapsed();
        // Resolve each tree once per batch; writes are grouped by tree after the sort.
        let mut trees: HashMap<TreeId, Option<Arc<C::Tree>>> = HashMap::new();
        for w in &self.batch.writes {
            trees.entry(w.tree).or_insert_with(|| self.cat.tree(w.tree));
        }
        let arena = &self.batch.arena[..];
        let writes = &self.batch.writes[..];
        let skipped: u64 = writes
            .iter()
            .filter(|w| trees.get(&w.tree).is_some_and(|t| t.is_none()))
            .count() as u64;
        self.stats.skipped += skipped;
        // Small batches are not worth a thread.
        let threads = if writes.len() < 4096 { 1 } else { self.threads };
        let chunk = writes.len().div_ceil(threads);
        let apply = |part: &[Write]| -> Result<()> {
            let mut run: Vec<(&[u8], Option<&[u8]>)> = Vec::new();
            // Writes are sorted by tree first: apply each tree's run of keys in one call.
            for group in part.chunk_by(|a, b| a.tree == b.tree) {
                // A tree missing here was dropped later in the log.
                let Some(Some(t)) = trees.get(&group[0].tree) else {
                    continue;
                };
                let t: &BTree = (**t).as_ref();
                run.clear();
                run.extend(group.iter().map(|w| (w.key(arena), w.value(arena))));
                t.apply_sorted(&run)?;
            }
            Ok(())
        };
        let result = if threads == 1 {
            apply(writes)
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = writes
                    .chunks(chunk)
                    .map(|part| s.spawn(move || apply(part)))
                    .collect();
                let mut first = Ok(());
                for h in handles {
                    let r = h
                        .join()
                        .unwrap_or_else(|_| Err(Error::config("a replay thread panicked")));
                    if first.is_ok() {
                        first = r;
                    }
                }
                first
            })
        };
        self.batch.clear();
        self.stats.apply += t0.elapsed();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_dedup_keeps_the_last_write_of_each_key_in_key_order() {
        let mut b = Batch::default();
        let t1 = TreeId(1);
        let t2 = TreeId(2);
        b.push(t2, b"a", Some(b"x"));
        b.push(t1, b"longer-than-eight-b", Some(b"1"));
        b.push(t1, b"longer-than-eight-a", Some(b"2"));
        b.push(t1, b"longer-than-eight-b", None);
        b.push(t2, b"a", Some(b"y"));
        b.push(t1, b"", Some(b"empty"));
        b.push(t1, b"longer-than-eight-a", Some(b"3"));
        let dropped = b.sort_dedup();
        assert_eq!(dropped, 3);
        let got: Vec<_> = b
            .writes
            .iter()
            .map(|w| {
                (
                    w.tree.0,
                    w.key(&b.arena).to_vec(),
                    w.value(&b.arena).map(<[u8]>::to_vec),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, b"".to_vec(), Some(b"empty".to_vec())),
                (1, b"longer-than-eight-a".to_vec(), Some(b"3".to_vec())),
                (1, b"longer-than-eight-b".to_vec(), None),
                (2, b"a".to_vec(), Some(b"y".to_vec())),
            ]
        );
    }

    #[test]
    fn prefix_order_agrees_with_byte_order() {
        // A key that is a prefix of another sorts first, also when both are under 8 bytes and
        // the longer one continues with zero bytes.
        let keys: [&[u8]; 6] = [
            b"",
            b"\0",
            b"\0\0",
            b"a",
            b"a\0\0\0\0\0\0\0\0",
            b"a\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        ];
        for w in keys.windows(2) {
            assert!(key_prefix(w[0]) <= key_prefix(w[1]));
            assert!(w[0] < w[1]);
        }
    }
}
