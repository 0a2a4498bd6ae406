//! Seeded, replayable crash tests on simulated disks.
//!
//! A seed picks a database shape (page size, a small buffer pool, a small circular WAL, a codec)
//! and a single-threaded workload: transactions of puts and deletes over a few trees, single-row
//! writes, bulk inserts and deletes, values long enough for overflow chains, tree creates and
//! drops (odd-numbered trees are compact trees, the others classic), explicit checkpoints. A
//! model (one `BTreeMap` per tree) follows every acknowledged
//! step. Every commit uses [`FlushPolicy::Sync`], so a step that returned `Ok` is durable.
//!
//! A reference run counts the syncs and writes that each step issues on both disks. Each crash
//! point then reruns the workload from scratch on fresh `SimStorage` disks with one fault
//! armed (a failed sync, a torn or failed write, a failed read), stops at the first error,
//! checks that the database now refuses changes, takes the disks as a power failure leaves them
//! ([`Disks::crash`]: synced bytes kept, unsynced writes dropped, torn prefixes kept), recovers,
//! and checks that every tree equals the model after the last acknowledged step or after the
//! step in flight, that `verify` passes, and that the database takes new writes and survives
//! another crash.
//!
//! Why the harness drives checkpoints: the engine's checkpointer thread starts a checkpoint
//! when the WAL is half full, concurrently with the workload, which would make the sync sequence
//! depend on thread timing. In `Ckpt::Forced` mode the workload thread itself checkpoints just
//! before a step that would take the log past half full (the same trigger, taken
//! deterministically), so "the k-th sync" names the same operation on every run. The test
//! `crash_points_with_background_checkpoints` lets the checkpointer thread do it instead
//! (appends then also wait for log space), at the price of replays that depend on timing.
//!
//! Faults on the data file's *writes* are not deterministic either: the buffer pool's writer
//! thread writes pages back when it likes. The tests that aim at them say so.
//!
//! # The tests
//! * `crash_at_every_sync_point`: a failed sync of either file at every sync of the workload.
//! * `crash_at_torn_and_failed_writes`: a torn or failed write at every WAL write.
//! * `crash_at_data_file_write_and_read_faults` (ignored: an intermittent bug): torn or failed
//!   data-file writes and failed data-file reads, sampled.
//! * `crash_during_and_after_recovery`: power lost at every sync of recovery and again in the
//!   next recovery, torn writes during recovery, repeated crashes right after recovery.
//! * `torn_wal_tail_loses_only_the_unacknowledged_commit`, and
//!   `wal_corruption_before_the_tail_is_refused_or_salvaged` (damage found by
//!   `SimStorage::corrupt`).
//! * `crash_points_with_background_checkpoints`: as the first two, with the checkpointer thread.
//! * `crash_while_creating_the_wal` / `crash_while_creating_the_data_file`: crashes inside the
//!   `open` that creates a database.
//! * `os_flushed_data_file_with_background_checkpoints_recovers` (ignored: an intermittent
//!   bug): crash images that keep every data-file write, synced or not.
//! * Tests ignored with `BUG: ...` reproduce engine bugs; run them with `-- --ignored`.
//!
//! # Replaying a failure
//! Every assertion message starts with the test, seed and crash point, and a failing case
//! prints a replay line, e.g.
//! `ZIPDB_CRASH_SEED=3 ZIPDB_CRASH_K=45 cargo test -p zipdb-engine crash_tests::crash_at_every_sync_point`.
//!
//! Environment variables:
//! * `ZIPDB_CRASH_SEED=s`: run only seed `s`;
//! * `ZIPDB_CRASH_K=k`: run only crash point `k` (of every seed run; the crash image in
//!   `crash_during_and_after_recovery`);
//! * `ZIPDB_CRASH_SEEDS=n`: run seeds `1..=n` (the defaults are small, to keep `cargo test`
//!   around 20 seconds);
//! * `ZIPDB_CRASH_POINTS=m`: test at most `m` crash points per seed (a seeded sample when there
//!   are more); `0` means all of them.

use crate::error::StorageError;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_storage::io::{Fault, SimStorage, Storage};
use zipdb_storage::wal::{RecoveryReport, WalError};
use zipdb_storage::{Codec, Lsn};

use crate::format::TreeFormat;
use crate::tests::Disks;
use crate::{Database, Error, FlushPolicy, Options, Result};

type Rows = BTreeMap<Vec<u8>, Vec<u8>>;
/// Committed contents of every tree, by name.
type Model = BTreeMap<String, Rows>;

/// First LSN of a new WAL (`db.rs`), and the size of the WAL file header (`wal/mod.rs`).
const WAL_START: u64 = 4096;
const WAL_HEADER: u64 = 4096;
/// A WAL record's header: crc, length, LSN.
const RECORD_HEADER: u64 = 16;

// ---------------------------------------------------------------------------------------------
// Seeds, crash points, replay.

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={v:?} is not a number"),
    }
}

/// Seeds to run: `ZIPDB_CRASH_SEED`, or `1..=ZIPDB_CRASH_SEEDS`, or `defaults`.
fn seeds(defaults: &[u64]) -> Vec<u64> {
    if let Some(s) = env_u64("ZIPDB_CRASH_SEED") {
        return vec![s];
    }
    match env_u64("ZIPDB_CRASH_SEEDS") {
        Some(n) => (1..=n).collect(),
        None => defaults.to_vec(),
    }
}

/// The crash points to test out of `0..total`: `ZIPDB_CRASH_K`, or all of them, or a seeded
/// sample of `ZIPDB_CRASH_POINTS` (default `default_max`).
fn points(seed: u64, total: u64, default_max: u64) -> Vec<u64> {
    if let Some(k) = env_u64("ZIPDB_CRASH_K") {
        assert!(
            k < total,
            "ZIPDB_CRASH_K={k}, but seed {seed} has only {total} crash points"
        );
        return vec![k];
    }
    sample(
        seed,
        total,
        env_u64("ZIPDB_CRASH_POINTS").unwrap_or(default_max),
    )
}

/// All of `0..total`, or `max` of them picked by `seed` (keeping the first and the last).
fn sample(seed: u64, total: u64, max: u64) -> Vec<u64> {
    if max == 0 || total <= max {
        return (0..total).collect();
    }
    let mut r = SmallRng::seed_from_u64(mix(seed, 0x9017));
    let mut set = BTreeSet::from([0, total - 1]);
    while (set.len() as u64) < max {
        set.insert(r.gen_range(0..total));
    }
    set.into_iter().collect()
}

/// splitmix64 of two words: per-point choices that do not depend on other points.
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(b)
        .wrapping_add(0x6a09_e667_f3bc_c909);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs one case; if it panics, prints how to replay it before passing the panic on.
fn case(test: &str, seed: u64, k: Option<u64>, f: impl FnOnce()) {
    if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
        let kv = k.map_or(String::new(), |k| format!(" ZIPDB_CRASH_K={k}"));
        eprintln!(
            "\n{test} failed for seed {seed}{}; replay with:\n  ZIPDB_CRASH_SEED={seed}{kv} \
             cargo test -p zipdb-engine crash_tests::{test}\n",
            k.map_or(String::new(), |k| format!(", crash point {k}")),
        );
        resume_unwind(p);
    }
}

/// The error and its sources, as one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(" <- ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

// ---------------------------------------------------------------------------------------------
// The workload.

/// Database settings a seed picks.
#[derive(Debug, Clone, Copy)]
struct Shape {
    page_size: usize,
    pool_pages: usize,
    wal_bytes: u64,
    codec: Codec,
    steps: usize,
}

fn shape(seed: u64) -> Shape {
    let mut r = SmallRng::seed_from_u64(mix(seed, 0x5a9e));
    Shape {
        page_size: [4096, 4096, 8192][r.gen_range(0..3)],
        // The pool's minimum is 64 frames: the data outgrows it, so pages are evicted, written
        // back and read again.
        pool_pages: r.gen_range(64..=96),
        wal_bytes: [64 << 10, 128 << 10, 256 << 10][r.gen_range(0..3)],
        codec: [Codec::None, Codec::Lz4, Codec::Zstd(1)][r.gen_range(0..3)],
        steps: r.gen_range(110..=160),
    }
}

fn options(s: &Shape) -> Options {
    Options {
        page_size: s.page_size,
        pool_bytes: s.pool_pages * s.page_size,
        codec: s.codec,
        flush_policy: FlushPolicy::Sync,
        wal_bytes: s.wal_bytes,
        // Checkpoints come from the workload or from log space, never from the clock.
        checkpoint_interval: Duration::from_secs(3600),
        recovery_progress: false,
        ..Options::default()
    }
}

/// One step of a workload; each is acknowledged (or fails) as a whole.
#[derive(Debug, Clone)]
enum Step {
    /// A transaction: `(tree, key, Some(value) | None for delete)`.
    Txn(Vec<(String, Vec<u8>, Option<Vec<u8>>)>),
    /// A single-row write through `Tree::upsert` / `Tree::delete`.
    Auto(String, Vec<u8>, Option<Vec<u8>>),
    Create(String, Option<Codec>),
    Drop(String),
    Checkpoint,
}

impl Step {
    /// An upper bound of the WAL bytes the step appends.
    fn log_estimate(&self) -> u64 {
        let op = |k: &[u8], v: &Option<Vec<u8>>| {
            11 + k.len() as u64 + v.as_ref().map_or(0, |v| v.len() as u64)
        };
        match self {
            Step::Txn(ops) => 32 + ops.iter().map(|(_, k, v)| op(k, v)).sum::<u64>(),
            Step::Auto(_, k, v) => 32 + op(k, v),
            Step::Create(n, _) => 40 + n.len() as u64,
            Step::Drop(_) => 32,
            Step::Checkpoint => 0,
        }
    }
}

fn key(n: u32) -> Vec<u8> {
    // Every fifth key is long, so keys do not all pack alike.
    let prefix = if n.is_multiple_of(5) {
        "long-prefix-".repeat(8)
    } else {
        String::new()
    };
    format!("{prefix}k{n:06}").into_bytes()
}

/// A value with a random tag (so a stale version is always detected) and a compressible body;
/// sometimes longer than a quarter page, which puts it in an overflow chain.
fn value(r: &mut SmallRng, page_size: usize) -> Vec<u8> {
    let len = match r.gen_range(0..100) {
        0..=54 => r.gen_range(1..64),
        55..=84 => r.gen_range(64..700),
        _ => r.gen_range(page_size / 4 + 1..page_size * 5 / 2),
    };
    let tag: u64 = r.gen();
    let base: u8 = r.gen();
    let mut v: Vec<u8> = (0..len).map(|i| base.wrapping_add((i / 5) as u8)).collect();
    for (i, b) in tag.to_le_bytes().iter().enumerate().take(len) {
        v[i] = *b;
    }
    // Half random: pages compress, but not so well that everything stays in the pool.
    for b in v.iter_mut().skip(8).step_by(2) {
        *b = r.gen();
    }
    v
}

/// The workload of a seed. Every step is valid when all steps before it succeeded.
fn workload(seed: u64, s: &Shape) -> Vec<Step> {
    const KEYS: u32 = 4000;
    let mut r = SmallRng::seed_from_u64(seed);
    // What the generator knows: live trees and their keys.
    let mut trees: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let mut dropped: Vec<String> = Vec::new();
    let mut next_tree = 1u32;
    // Keep a step well below half the log, so that one checkpoint before it always makes room;
    // some steps are still longer than the unsynced window (a quarter), which makes the log
    // sync in the middle of a record.
    let budget = s.wal_bytes * 3 / 8;
    let mut steps = vec![Step::Create("t0".into(), None)];
    trees.insert("t0".into(), BTreeSet::new());
    while steps.len() < s.steps {
        let names: Vec<String> = trees.keys().cloned().collect();
        let pick = |r: &mut SmallRng| names[r.gen_range(0..names.len())].clone();
        let roll = r.gen_range(0..100);
        let step = match roll {
            0..=39 => {
                let n = r.gen_range(1..=6);
                let mut ops = Vec::new();
                let mut size = 0;
                for _ in 0..n {
                    let t = pick(&mut r);
                    let live = &trees[&t];
                    let del = r.gen_range(0..4) == 0;
                    let k = if del && !live.is_empty() && r.gen_range(0..5) > 0 {
                        *live
                            .iter()
                            .nth(r.gen_range(0..live.len()))
                            .expect("in range")
                    } else {
                        r.gen_range(0..KEYS)
                    };
                    let v = (!del).then(|| value(&mut r, s.page_size));
                    size += 11 + key(k).len() as u64 + v.as_ref().map_or(0, |v| v.len() as u64);
                    if size > budget {
                        break;
                    }
                    ops.push((t, k, v));
                }
                if ops.is_empty() {
                    continue;
                }
                for (t, k, v) in &ops {
                    let live = trees.get_mut(t).expect("live tree");
                    if v.is_some() {
                        live.insert(*k);
                    } else {
                        live.remove(k);
                    }
                }
                Step::Txn(ops.into_iter().map(|(t, k, v)| (t, key(k), v)).collect())
            }
            40..=59 => {
                let t = pick(&mut r);
                let live = trees.get_mut(&t).expect("live tree");
                if r.gen_range(0..3) == 0 && !live.is_empty() {
                    let k = *live
                        .iter()
                        .nth(r.gen_range(0..live.len()))
                        .expect("in range");
                    live.remove(&k);
                    Step::Auto(t, key(k), None)
                } else {
                    let k = r.gen_range(0..KEYS);
                    live.insert(k);
                    Step::Auto(t, key(k), Some(value(&mut r, s.page_size)))
                }
            }
            60..=76 => {
                // A run of consecutive keys: splits, deeper trees. One in eight is larger
                // than a quarter of the log, so it commits through a checkpoint instead of a
                // log record (`apply_commit_checkpointed`), and crashes land inside it.
                let t = pick(&mut r);
                let start = r.gen_range(0..KEYS);
                let large = r.gen_range(0..8) == 0;
                let (n, cap) = if large {
                    (r.gen_range(150..400), s.wal_bytes)
                } else {
                    (r.gen_range(20..200), budget)
                };
                let mut ops = Vec::new();
                let mut size = 0;
                for k in start..(start + n).min(KEYS) {
                    let len = r.gen_range(20..300);
                    let mut v: Vec<u8> = (0..len).map(|_| r.gen_range(b'0'..=b'9')).collect();
                    v[..8].copy_from_slice(&r.gen::<u64>().to_le_bytes());
                    size += 11 + key(k).len() as u64 + len as u64;
                    if size > cap {
                        break;
                    }
                    trees.get_mut(&t).expect("live tree").insert(k);
                    ops.push((t.clone(), key(k), Some(v)));
                }
                Step::Txn(ops)
            }
            77..=83 => {
                // Deletes a run of live keys: merges, freed overflow chains.
                let t = pick(&mut r);
                let live = trees.get_mut(&t).expect("live tree");
                if live.is_empty() {
                    continue;
                }
                let from = r.gen_range(0..KEYS);
                let victims: Vec<u32> = live
                    .range(from..)
                    .take(r.gen_range(5..40))
                    .copied()
                    .collect();
                if victims.is_empty() {
                    continue;
                }
                for k in &victims {
                    live.remove(k);
                }
                Step::Txn(
                    victims
                        .into_iter()
                        .map(|k| (t.clone(), key(k), None))
                        .collect(),
                )
            }
            84..=88 => Step::Checkpoint,
            89..=94 => {
                if trees.len() >= 4 {
                    continue;
                }
                // Sometimes reuse a dropped tree's name: replay must tell the two apart.
                let name = if !dropped.is_empty() && r.gen_range(0..3) == 0 {
                    dropped.remove(r.gen_range(0..dropped.len()))
                } else {
                    next_tree += 1;
                    format!("t{}", next_tree - 1)
                };
                let codec = [None, Some(Codec::None), Some(Codec::Zstd(3))][r.gen_range(0..3)];
                trees.insert(name.clone(), BTreeSet::new());
                Step::Create(name, codec)
            }
            _ => {
                // Rarely drop a big tree: the data should outgrow the pool.
                if trees.len() <= 1 || r.gen_range(0..3) > 0 {
                    continue;
                }
                let t = pick(&mut r);
                trees.remove(&t);
                dropped.push(t.clone());
                Step::Drop(t)
            }
        };
        steps.push(step);
    }
    steps
}

/// The model after `step` succeeded.
fn apply(m: &mut Model, step: &Step) {
    let mut put = |t: &str, k: &[u8], v: &Option<Vec<u8>>| {
        let rows = m.get_mut(t).expect("the model has the tree");
        match v {
            Some(v) => {
                rows.insert(k.to_vec(), v.clone());
            }
            None => {
                rows.remove(k);
            }
        }
    };
    match step {
        Step::Txn(ops) => {
            for (t, k, v) in ops {
                put(t, k, v);
            }
        }
        Step::Auto(t, k, v) => put(t, k, v),
        Step::Create(t, _) => {
            m.insert(t.clone(), Rows::new());
        }
        Step::Drop(t) => {
            m.remove(t);
        }
        Step::Checkpoint => {}
    }
}

/// Odd-numbered trees (`t1`, `t3`, ...) are compact trees (issue 19 step 3b), so every crash
/// and fault scenario also covers compact leaves: their splits, merges and fences after
/// replay and after reloading written-back pages. `t0` and the even ones stay classic.
fn compact_tree(name: &str) -> bool {
    name.strip_prefix('t')
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n % 2 == 1)
}

/// Of the compact trees, `t1`, `t5`, `t9`, ... store FSST values (issue 19 step 4): they train
/// after 16 KB of values, so crashes land before and after training and before and after the
/// checkpoint that saves the table.
fn fsst_tree(name: &str) -> bool {
    name.strip_prefix('t')
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n % 4 == 1)
}

/// The workloads do create compact trees, and write into them (else the crash tests above
/// would cover classic trees only).
#[test]
fn workloads_cover_compact_trees() {
    let covered = (0..20u64)
        .filter(|&seed| {
            let steps = workload(seed, &shape(seed));
            let writes = |t: &str| compact_tree(t);
            steps
                .iter()
                .any(|s| matches!(s, Step::Create(t, _) if compact_tree(t)))
                && steps.iter().any(|s| match s {
                    Step::Auto(t, ..) => writes(t),
                    Step::Txn(ops) => ops.iter().any(|(t, ..)| writes(t)),
                    _ => false,
                })
        })
        .count();
    assert!(
        covered >= 10,
        "{covered} of 20 seeds write into a compact tree"
    );
}

/// Some workloads commit transactions larger than a quarter of the log (made durable by a
/// checkpoint, not a log record), so crash points fall inside those commits too.
#[test]
fn workloads_include_large_commits() {
    let with_large = (0..20u64)
        .filter(|&seed| {
            let s = shape(seed);
            workload(seed, &s)
                .iter()
                .any(|st| matches!(st, Step::Txn(_)) && st.log_estimate() > s.wal_bytes / 3)
        })
        .count();
    assert!(
        with_large >= 5,
        "{with_large} of 20 seeds commit a large transaction"
    );
}

/// Some workloads write enough inline values into an FSST tree to train it (the crash
/// points then fall before and after training).
#[test]
fn workloads_train_fsst_trees() {
    let trained = (0..20u64)
        .filter(|&seed| {
            let s = shape(seed);
            let mut bytes = std::collections::HashMap::<String, usize>::new();
            let steps = workload(seed, &s);
            let mut note = |t: &str, v: &Option<Vec<u8>>| {
                if let Some(v) = v.as_ref().filter(|v| v.len() <= s.page_size / 4) {
                    *bytes.entry(t.to_string()).or_default() += v.len();
                }
            };
            for st in &steps {
                match st {
                    Step::Auto(t, _, v) if fsst_tree(t) => note(t, v),
                    Step::Txn(ops) => ops
                        .iter()
                        .filter(|(t, ..)| fsst_tree(t))
                        .for_each(|(t, _, v)| note(t, v)),
                    _ => {}
                }
            }
            bytes
                .values()
                .any(|&b| b >= crate::btree::symtab::FIRST_TRAINING_BYTES)
        })
        .count();
    assert!(trained >= 5, "{trained} of 20 seeds train an FSST tree");
}

fn exec(db: &Database, step: &Step) -> Result<()> {
    match step {
        Step::Txn(ops) => {
            let mut tx = db.begin();
            for (t, k, v) in ops {
                let tree = db.open_tree(t)?;
                match v {
                    Some(v) => tx.put(&tree, k, v)?,
                    None => tx.delete(&tree, k)?,
                }
            }
            tx.commit()
        }
        Step::Auto(t, k, v) => {
            let tree = db.open_tree(t)?;
            match v {
                Some(v) => tree.upsert(k, v).map(drop),
                None => tree.delete(k).map(drop),
            }
        }
        Step::Create(t, codec) if compact_tree(t) => {
            let mut f = TreeFormat::compact(codec.unwrap_or(Codec::None));
            if fsst_tree(t) {
                f.records = crate::format::RecordCodec::Fsst;
            }
            // `t5`, `t13`, ...: the zstd cold layer (issue 19 step 8) on top.
            if fsst_tree(t) && t[1..].parse::<u32>().is_ok_and(|n| n % 8 == 5) {
                f = TreeFormat::FSST_ZSTD;
            }
            db.create_tree_with(t, f).map(drop)
        }
        Step::Create(t, codec) => db.create_tree(t, *codec).map(drop),
        Step::Drop(t) => db.drop_tree(t),
        Step::Checkpoint => db.checkpoint(),
    }
}

// ---------------------------------------------------------------------------------------------
// Running a workload with a fault armed.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ckpt {
    /// The workload thread checkpoints before a step that would fill half the log.
    Forced,
    /// The engine's checkpointer thread does (nondeterministic timing).
    Background,
}

/// I/O counts since the fault was armed (just after the database was created).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Mark {
    wal_syncs: u64,
    wal_writes: u64,
    data_syncs: u64,
    /// Not deterministic (the pool's writer thread), unlike the fields above.
    data_writes: u64,
    data_reads: u64,
    /// WAL bytes appended since the database was created.
    log_bytes: u64,
}

impl Mark {
    fn deterministic(&self) -> (u64, u64, u64, u64) {
        (
            self.wal_syncs,
            self.wal_writes,
            self.data_syncs,
            self.log_bytes,
        )
    }
}

fn counts(d: &Disks, log_bytes: u64) -> Mark {
    let (_, ww, ws) = d.wal.op_counts();
    let (dr, dw, ds) = d.data.op_counts();
    Mark {
        wal_syncs: ws,
        wal_writes: ww,
        data_syncs: ds,
        data_writes: dw,
        data_reads: dr,
        log_bytes,
    }
}

fn since(now: Mark, base: Mark) -> Mark {
    Mark {
        wal_syncs: now.wal_syncs - base.wal_syncs,
        wal_writes: now.wal_writes - base.wal_writes,
        data_syncs: now.data_syncs - base.data_syncs,
        data_writes: now.data_writes - base.data_writes,
        data_reads: now.data_reads - base.data_reads,
        log_bytes: now.log_bytes,
    }
}

struct Run {
    db: Database,
    /// Absolute I/O counts when the fault was armed.
    base: Mark,
    /// Steps acknowledged (they form a prefix).
    acked: usize,
    /// The first failed step and its error; the run stops there.
    failed: Option<(usize, Error)>,
    /// The model after the acknowledged steps.
    model: Model,
    /// Counts after arming (`marks[0]`) and after each executed step.
    marks: Vec<Mark>,
}

/// Creates a database on `disks`, arms the fault, then runs `steps` until one fails.
fn run(disks: &Disks, s: &Shape, steps: &[Step], mode: Ckpt, arm: impl FnOnce(&Disks)) -> Run {
    let db = disks
        .open(options(s))
        .unwrap_or_else(|e| panic!("creating the database failed: {}", chain(&e)));
    let base = counts(disks, 0);
    arm(disks);
    let mut model = Model::new();
    let mut marks = vec![Mark::default()];
    let mut ckpt_at = 0u64;
    let mut failed = None;
    let mut acked = 0;
    for (i, step) in steps.iter().enumerate() {
        let r = (|| {
            if mode == Ckpt::Forced {
                // The checkpointer thread would start at half full; get there first.
                let used = db.stats().wal.log_bytes - ckpt_at;
                if used + step.log_estimate() > s.wal_bytes / 2 - 512 {
                    db.checkpoint()?;
                    ckpt_at = db.stats().wal.log_bytes;
                }
            }
            exec(&db, step)
        })();
        let log = db.stats().wal.log_bytes;
        marks.push(since(counts(disks, log), base));
        match r {
            Ok(()) => {
                if matches!(step, Step::Checkpoint) {
                    ckpt_at = log;
                }
                apply(&mut model, step);
                acked += 1;
            }
            Err(e) => {
                failed = Some((i, e));
                break;
            }
        }
    }
    Run {
        db,
        base,
        acked,
        failed,
        model,
        marks,
    }
}

/// After an I/O error the database refuses every change until it is reopened.
fn assert_refuses_writes(db: &Database, ctx: &str) {
    let ro = |what: &str, r: Result<()>| match r {
        Err(Error::Storage(StorageError::ReadOnlyAfterIoError(_))) => {}
        other => panic!(
            "{ctx}: after the I/O error, {what} returned {other:?}, expected ReadOnlyAfterIoError"
        ),
    };
    ro("create_tree", db.create_tree("refused", None).map(drop));
    ro("checkpoint", db.checkpoint());
    if let Some(name) = db.tree_names().first() {
        let t = db.open_tree(name).expect("listed tree opens");
        ro("Tree::upsert", t.upsert(b"refused", b"x").map(drop));
        ro("Tree::delete", t.delete(b"refused").map(drop));
        let mut tx = db.begin();
        ro("Transaction::put", tx.put(&t, b"refused", b"x"));
        ro("Transaction::delete", tx.delete(&t, b"refused"));
        ro("drop_tree", db.drop_tree(name));
    }
}

fn read_state(db: &Database) -> Result<Model> {
    let mut m = Model::new();
    for name in db.tree_names() {
        let t = db.open_tree(&name)?;
        let rows = t.range(..)?.collect::<Result<Rows>>()?;
        m.insert(name, rows);
    }
    Ok(m)
}

/// A short description of how two states differ.
fn diff(got: &Model, want: &Model) -> String {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = got.keys().chain(want.keys()).collect();
    for n in names {
        match (got.get(n), want.get(n)) {
            (Some(_), None) => out.push(format!("extra tree {n:?}")),
            (None, Some(_)) => out.push(format!("missing tree {n:?}")),
            (Some(g), Some(w)) => {
                let keys: BTreeSet<&Vec<u8>> = g.keys().chain(w.keys()).collect();
                let bad: Vec<String> = keys
                    .into_iter()
                    .filter(|k| g.get(*k) != w.get(*k))
                    .map(|k| {
                        let show = |v: Option<&Vec<u8>>| {
                            v.map_or("absent".to_string(), |v| format!("{} bytes", v.len()))
                        };
                        format!(
                            "{}: got {}, want {}",
                            String::from_utf8_lossy(k),
                            show(g.get(k)),
                            show(w.get(k))
                        )
                    })
                    .collect();
                if !bad.is_empty() {
                    out.push(format!(
                        "tree {n:?}: {} rows differ, e.g. [{}]",
                        bad.len(),
                        bad.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
                    ));
                }
            }
            (None, None) => {}
        }
    }
    out.join("; ")
}

/// Checks a recovered database: its state is `before` or `after` (the step in flight), its
/// structure verifies. Returns whether the step in flight survived.
fn check_state(db: &Database, before: &Model, after: Option<&Model>, ctx: &str) -> bool {
    let got = read_state(db)
        .unwrap_or_else(|e| panic!("{ctx}: reading the recovered state: {}", chain(&e)));
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {}", chain(&e)));
    if &got == before {
        return false;
    }
    if after == Some(&got) {
        return true;
    }
    panic!(
        "{ctx}: the recovered state is neither the last acknowledged one ({}) nor the one \
         after the step in flight ({})",
        diff(&got, before),
        after.map_or("no step was in flight".to_string(), |a| diff(&got, a)),
    );
}

/// Writes to a recovered database (a new tree, a transaction over an old one), closes it,
/// crashes and reopens: everything must be there.
fn check_writes_after_recovery(
    db: Database,
    disks: &Disks,
    o: Options,
    mut want: Model,
    ctx: &str,
) {
    let fail = |what: &str, e: Error| -> ! {
        panic!("{ctx}: after recovery, {what} failed: {}", chain(&e))
    };
    let name = "after-crash";
    let t = match db.open_tree(name) {
        Ok(t) => t,
        Err(_) => db
            .create_tree(name, None)
            .unwrap_or_else(|e| fail("create_tree", e)),
    };
    let rows = want.entry(name.to_string()).or_default();
    let mut r = SmallRng::seed_from_u64(7);
    for i in 0..6u32 {
        let k = format!("new{i:03}").into_bytes();
        let v = value(&mut r, if i == 0 { 4 * o.page_size } else { 64 });
        t.upsert(&k, &v).unwrap_or_else(|e| fail("upsert", e));
        rows.insert(k, v);
    }
    if let Some((other, orows)) = want.iter_mut().find(|(n, _)| n.as_str() != name) {
        let ot = db.open_tree(other).unwrap_or_else(|e| fail("open_tree", e));
        let mut tx = db.begin();
        let v = value(&mut r, o.page_size);
        tx.put(&ot, b"after-crash-row", &v)
            .unwrap_or_else(|e| fail("put", e));
        if let Some(k) = orows.keys().next().cloned() {
            tx.delete(&ot, &k).unwrap_or_else(|e| fail("delete", e));
            orows.remove(&k);
        }
        tx.commit().unwrap_or_else(|e| fail("commit", e));
        orows.insert(b"after-crash-row".to_vec(), v);
    }
    drop(t);
    db.close().unwrap_or_else(|e| fail("close", e));
    let again = disks.crash();
    let db = again.open(o).unwrap_or_else(|e| {
        panic!(
            "{ctx}: reopening after the post-recovery writes: {}",
            chain(&e)
        )
    });
    let got = read_state(&db).unwrap_or_else(|e| fail("reading", e));
    assert!(
        got == want,
        "{ctx}: after post-recovery writes and a clean reopen: {}",
        diff(&got, &want)
    );
    db.verify().unwrap_or_else(|e| fail("verify", e));
}

/// What a crash left and what recovery made of it.
struct Recovered {
    /// The disks the recovered database runs on.
    live: Disks,
    db: Database,
    /// The state recovery produced.
    state: Model,
    /// Recovery replayed the record of the step in flight.
    replayed: bool,
    report: RecoveryReport,
}

/// Crashes the disks of a run (taking the image while the database is alive, or after dropping
/// it), recovers, and checks that the log ends exactly before or after the record of the step
/// in flight and that the state is the model's as of that point.
fn crash_and_recover(
    run: Run,
    disks: &Disks,
    o: Options,
    steps: &[Step],
    drop_first: bool,
    ctx: &str,
) -> Recovered {
    let ctx = &format!("{ctx} [{} steps acknowledged]", run.acked);
    // The run's database opened once, on a new log: a byte's LSN is WAL_START plus the bytes
    // appended before it.
    let lsn_before = WAL_START + run.marks[run.acked].log_bytes;
    let lsn_after = WAL_START + run.marks.last().expect("marks").log_bytes;
    let before = run.model.clone();
    let mut after = before.clone();
    let in_flight = run.failed.as_ref().and_then(|(i, _)| steps.get(*i));
    if let Some(step) = in_flight {
        apply(&mut after, step);
    }
    // A transaction that appended nothing was a large commit, whose record is its checkpoint:
    // an I/O error may fail it after the superblock reached the disk, so the data file, not
    // the log, says whether it happened. Either way it happened wholly or not at all.
    let large = lsn_before == lsn_after && matches!(in_flight, Some(Step::Txn(_)));
    let image = if drop_first {
        // The process drops its handles first (the WAL shuts down when the last one goes),
        // then the power fails.
        drop(run);
        disks.crash()
    } else {
        let image = disks.crash();
        drop(run);
        image
    };
    let recovering = image.crash();
    let db = recovering
        .open(o)
        .unwrap_or_else(|e| panic!("{ctx}: recovery failed: {}", chain(&e)));
    let report = db
        .recovery_report()
        .cloned()
        .unwrap_or_else(|| panic!("{ctx}: the reopened database reports no recovery"));
    let end = report.end_lsn.0;
    assert!(
        end == lsn_before || end == lsn_after,
        "{ctx}: the recovered log ends at LSN {end}, but the last acknowledged record ends at \
         {lsn_before} and the one in flight at {lsn_after}: {report:?}"
    );
    let replayed = end == lsn_after && lsn_after != lsn_before;
    let got = read_state(&db)
        .unwrap_or_else(|e| panic!("{ctx}: reading the recovered state: {}", chain(&e)));
    let state = if replayed || (large && got == after) {
        after
    } else {
        before
    };
    assert!(
        got == state,
        "{ctx}: the log ends {} the step in flight, but the state differs from the model's: {}",
        if replayed { "after" } else { "before" },
        diff(&got, &state)
    );
    db.verify()
        .unwrap_or_else(|e| panic!("{ctx}: verify after recovery: {}", chain(&e)));
    Recovered {
        live: recovering,
        db,
        state,
        replayed,
        report,
    }
}

fn injected(e: &Error) -> bool {
    chain(e).contains("injected")
}

mod faults;
mod other;
mod wal;
