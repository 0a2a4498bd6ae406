//! Transaction tests: the Hermitage anomaly suite at both isolation levels, locking behaviour
//! (deadlocks, lock wait timeouts, rollback), long-running snapshots, version collection, and a
//! randomized concurrent bank test.
//!
//! # Isolation levels against the Hermitage anomalies
//!
//! The anomaly tests follow the scenarios of Martin Kleppmann's Hermitage project
//! (<https://github.com/ept/hermitage>), rewritten for this engine's API: a tree `test` holds
//! rows `1 => 10` and `2 => 20`; `UPDATE … WHERE id = k` is a row write ([`Transaction::put`], or
//! [`Transaction::get_for_update`] then `put` where it matters whether the row still exists); a
//! predicate read (`SELECT … WHERE value % 3 = 0`) is a transaction scan filtered in the test; a
//! predicate write (`DELETE … WHERE value = 20`) is such a scan followed by a write of each
//! matching row. Writes lock their rows at once and keep the locks until commit or rollback;
//! they are buffered, so no other transaction ever sees them before commit. Reads never lock.
//!
//! One difference from PostgreSQL and InnoDB: a repeatable-read snapshot is taken when the
//! transaction begins (`Database::begin_with`), not at its first read
//! (`rr_snapshot_is_taken_at_begin`).
//!
//! | Anomaly | RepeatableRead (snapshot isolation, first updater wins) | ReadCommitted |
//! |---|---|---|
//! | G0 write cycles | prevented: the second writer blocks on the row lock, then gets `WriteConflict` when the first commits | prevented: the second writer blocks; all its writes land after the first's commit |
//! | G1a aborted reads | prevented: writes are buffered until commit | prevented |
//! | G1b intermediate reads | prevented | prevented: only a transaction's final committed value is ever seen |
//! | G1c circular information flow | prevented | prevented |
//! | OTV observed transaction vanishes | prevented: the second writer gets `WriteConflict`; readers see the first commit whole | prevented: a reader sees the first commit whole, then the second one whole |
//! | PMP predicate-many-preceders (read) | prevented: a repeated predicate read sees the same rows | **allowed**: a repeated predicate read sees a row inserted and committed meanwhile |
//! | PMP, write predicate | prevented: the delete of a matching row blocks, then gets `WriteConflict` | **allowed**: the predicate is not re-evaluated after the row lock is granted, so the delete removes a row that no longer matches (PostgreSQL re-checks and deletes nothing); re-reading with `get_for_update` after locking gives PostgreSQL's behaviour |
//! | P4 lost update | prevented: the second writer blocks, then gets `WriteConflict` | **allowed** with plain reads (both increments commit, one is lost); prevented when the read is `get_for_update` |
//! | G-single read skew | prevented | **allowed**: a later read sees a commit that an earlier read did not |
//! | G-single, predicate read | prevented | **allowed** |
//! | G-single, write predicate (1: the other transaction has committed) | prevented: immediate `WriteConflict` | the delete sees the newest values and deletes nothing (the read skew of the earlier read remains) |
//! | G-single, write predicate (2: the other transaction waits on our delete) | prevented: the waiter gets `WriteConflict` | the waiter's `get_for_update` finds the row deleted and writes nothing |
//! | G2-item write skew | **allowed**, as in PostgreSQL's and InnoDB's REPEATABLE READ (documented snapshot-isolation behaviour); prevented when the reads are `get_for_update` | **allowed** |
//! | G2 anti-dependency cycles (predicate) | **allowed** (both inserts commit) | **allowed** |
//! | G2 with two anti-dependency edges (Fekete et al.) | **allowed** | **allowed** |
//!
//! `WriteConflict` is returned by the write (or `get_for_update`) that finds the row changed by
//! a transaction that committed after the snapshot: at once if that commit is done, or after
//! waiting for the row lock if the other transaction still holds it. If the other transaction
//! rolls back instead, the waiting write succeeds. Repeating the refused write fails again: the
//! transaction can only roll back (or commit its other writes). Under read committed, writes
//! never fail for conflicts; a blocked write proceeds when the lock is released; each read (a
//! `get`, or a whole scan) sees one committed state.
//!
//! `Transaction::set_write_conflicts(false)` turns first-updater-wins off under repeatable
//! read (InnoDB's behaviour, which the SQL layer uses by default as MariaDB 10.11 does): a write
//! to a row changed since the snapshot locks it and succeeds, and `get_for_update` returns the
//! newest version (`rr_without_write_conflicts_writes_act_on_the_newest_version`).
//!
//! The tests of each row are named `rr_<anomaly>_…` and `rc_<anomaly>_…` (for example
//! `rr_g0_write_cycle_prevented`, `rc_p4_lost_update_allowed`).

use crate::error::TxnError;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_storage::io::{IoError, SimStorage, Storage};
use zipdb_storage::Codec;

use crate::tests::{model_range, opts, Disks};
use crate::{Database, Error, FlushPolicy, IsolationLevel, Result, Transaction, Tree};

const RR: IsolationLevel = IsolationLevel::RepeatableRead;
const RC: IsolationLevel = IsolationLevel::ReadCommitted;
/// Lock timeout of tests whose waits are always ended by the test itself: long enough never
/// to fire, short enough that a hang fails the test quickly.
const WAIT: Duration = Duration::from_secs(3);

struct Fixture {
    _disks: Disks,
    db: Database,
    t: Tree,
}

fn fixture(lock_wait_timeout: Duration) -> Fixture {
    let disks = Disks::new();
    let db = disks
        .open(crate::Options {
            lock_wait_timeout,
            ..opts(4096, Codec::None)
        })
        .unwrap();
    let t = db.create_tree("test", None).unwrap();
    Fixture {
        _disks: disks,
        db,
        t,
    }
}

/// Hermitage's table: `1 => 10`, `2 => 20`.
fn hermitage() -> Fixture {
    let f = fixture(WAIT);
    f.t.upsert(b"1", b"10").unwrap();
    f.t.upsert(b"2", b"20").unwrap();
    f
}

fn key(id: u32) -> Vec<u8> {
    id.to_string().into_bytes()
}

fn num(v: &[u8]) -> i64 {
    std::str::from_utf8(v).unwrap().parse().unwrap()
}

fn row(k: &[u8], v: &[u8]) -> (u32, i64) {
    (std::str::from_utf8(k).unwrap().parse().unwrap(), num(v))
}

/// `SELECT value FROM test WHERE id = k`.
fn read(tx: &Transaction, t: &Tree, id: u32) -> Option<i64> {
    tx.get(t, &key(id)).unwrap().map(|v| num(&v))
}

/// `UPDATE test SET value = v WHERE id = k` as a blind write (locks the row).
fn write(tx: &mut Transaction, t: &Tree, id: u32, v: i64) -> Result<()> {
    tx.put(t, &key(id), v.to_string().as_bytes())
}

/// `UPDATE test SET value = v WHERE id = k` that first locks the row and reads its newest
/// committed value, writing only if the row still exists; returns whether it wrote.
fn update(tx: &mut Transaction, t: &Tree, id: u32, v: i64) -> Result<bool> {
    if tx.get_for_update(t, &key(id))?.is_none() {
        return Ok(false);
    }
    write(tx, t, id, v)?;
    Ok(true)
}

/// `SELECT * FROM test WHERE pred(value)`: a forward scan, checked against a reverse one.
fn select(tx: &Transaction, t: &Tree, pred: impl Fn(i64) -> bool) -> Vec<(u32, i64)> {
    let fwd: Vec<(u32, i64)> = tx
        .scan(t, ..)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|(k, v)| row(&k, &v))
        .filter(|r| pred(r.1))
        .collect();
    let mut rev: Vec<(u32, i64)> = tx
        .scan_rev(t, ..)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|(k, v)| row(&k, &v))
        .filter(|r| pred(r.1))
        .collect();
    rev.reverse();
    assert_eq!(fwd, rev, "forward and reverse scans disagree");
    fwd
}

fn all(tx: &Transaction, t: &Tree) -> Vec<(u32, i64)> {
    select(tx, t, |_| true)
}

/// The committed contents, read outside any transaction.
fn committed(t: &Tree) -> Vec<(u32, i64)> {
    t.range(..)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|(k, v)| row(&k, &v))
        .collect()
}

fn is_write_conflict<T: std::fmt::Debug>(r: &Result<T>) -> bool {
    matches!(r, Err(Error::Txn(TxnError::WriteConflict { .. })))
}

/// Polls `cond` until it holds; panics after a generous bound instead of hanging.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn waiters(db: &Database) -> u64 {
    db.stats().locks.current_waiters
}

/// Runs `blocked` on another thread, checks that it blocks on a row lock, runs `unblock` here
/// (which must release that lock), and returns what `blocked` returned.
fn while_blocked<R: Send>(
    db: &Database,
    blocked: impl FnOnce() -> R + Send,
    unblock: impl FnOnce(),
) -> R {
    let before = waiters(db);
    std::thread::scope(|s| {
        let h = s.spawn(blocked);
        wait_until("the operation to wait for a row lock", || {
            h.is_finished() || waiters(db) > before
        });
        assert!(!h.is_finished(), "the operation did not block");
        unblock();
        h.join().unwrap()
    })
}

mod hermitage;
mod locking;
mod probe;
mod versions;
