//! Locking behaviour: deadlocks, lock wait timeouts, rollback.

use super::*;
use crate::error::TxnError;

// ---------------------------------------------------------------------------------------------
// Locking behaviour.

fn deadlock(iso: IsolationLevel) {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    let mut t1 = db.begin_with(iso);
    let mut t2 = db.begin_with(iso);
    write(&mut t1, t, 1, 11).unwrap();
    write(&mut t2, t, 2, 22).unwrap();
    let r1 = while_blocked(
        db,
        || write(&mut t1, t, 2, 21), // T1 waits for T2
        || {
            // T2 waiting for T1 would close the cycle: T2 is the victim, at once.
            let r = write(&mut t2, t, 1, 12);
            assert!(matches!(r, Err(Error::Txn(TxnError::Deadlock))), "{r:?}");
            let s = db.stats().locks;
            assert_eq!((s.deadlocks, s.current_waiters), (1, 1));
            // The victim keeps its locks until it rolls back; T1 still waits.
            std::thread::yield_now();
            assert_eq!(waiters(db), 1);
            t2.rollback();
        },
    );
    r1.unwrap();
    t1.commit().unwrap();
    assert_eq!(committed(t), [(1, 11), (2, 21)]);
    let s = db.stats().locks;
    assert_eq!((s.deadlocks, s.current_locks, s.current_waiters), (1, 0, 0));
}

#[test]
fn rr_deadlock_one_victim_other_proceeds() {
    deadlock(RR);
}

#[test]
fn rc_deadlock_one_victim_other_proceeds() {
    deadlock(RC);
}

#[test]
fn deadlock_cycle_of_three() {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    // Read committed, so that each waiter can write after the one before it commits (under
    // repeatable read it would get WriteConflict instead).
    let mut t1 = db.begin_with(RC);
    let mut t2 = db.begin_with(RC);
    let mut t3 = db.begin_with(RC);
    write(&mut t1, t, 1, 1).unwrap();
    write(&mut t2, t, 2, 2).unwrap();
    write(&mut t3, t, 3, 3).unwrap();
    std::thread::scope(|s| {
        let h1 = s.spawn(|| write(&mut t1, t, 2, 1)); // T1 -> T2
        wait_until("T1 to wait", || waiters(db) == 1);
        let h2 = s.spawn(move || {
            let r = write(&mut t2, t, 3, 2); // T2 -> T3
            (t2, r)
        });
        wait_until("T2 to wait", || waiters(db) == 2);
        let r = write(&mut t3, t, 1, 3); // T3 -> T1 closes the cycle
        assert!(matches!(r, Err(Error::Txn(TxnError::Deadlock))), "{r:?}");
        assert!(!h1.is_finished() && !h2.is_finished());
        t3.rollback();
        let (t2, r2) = h2.join().unwrap();
        r2.unwrap();
        assert!(!h1.is_finished(), "T1 still waits for T2");
        t2.commit().unwrap();
        h1.join().unwrap().unwrap();
    });
    t1.commit().unwrap();
    assert_eq!(committed(t), [(1, 1), (2, 1), (3, 2)]);
}

#[test]
fn lock_wait_timeout_leaves_the_holder_unaffected() {
    let timeout = Duration::from_millis(150);
    let f = fixture(timeout);
    let (db, t) = (&f.db, &f.t);
    t.upsert(b"1", b"10").unwrap();
    let mut t1 = db.begin();
    let mut t2 = db.begin();
    write(&mut t1, t, 1, 11).unwrap();
    write(&mut t2, t, 2, 22).unwrap();
    let start = Instant::now();
    let r = write(&mut t2, t, 1, 12);
    match r {
        Err(Error::Txn(TxnError::LockWaitTimeout { waited })) => {
            assert!(waited >= timeout, "{waited:?}")
        }
        r => panic!("expected a lock wait timeout, got {r:?}"),
    }
    assert!(start.elapsed() >= timeout);
    let s = db.stats().locks;
    assert_eq!((s.timeouts, s.current_waiters, s.current_locks), (1, 0, 2));
    // A single-row write times out the same way.
    assert!(matches!(
        t.upsert(b"1", b"99"),
        Err(Error::Txn(TxnError::LockWaitTimeout { .. }))
    ));
    // The holder keeps its lock and its writes and commits normally.
    write(&mut t1, t, 1, 13).unwrap();
    assert_eq!(read(&t1, t, 1), Some(13));
    t1.commit().unwrap();
    // Only the statement failed: the timed-out transaction keeps its other writes.
    assert_eq!(read(&t2, t, 2), Some(22));
    t2.commit().unwrap();
    assert_eq!(committed(t), [(1, 13), (2, 22)]);
    assert_eq!(db.stats().locks.current_locks, 0);
}

/// Rollback (`finish` = `rollback` or drop) discards writes and frees the locks: with a zero
/// lock timeout, any other transaction can take the rows without waiting.
fn discard(finish: impl FnOnce(Transaction)) {
    let f = fixture(Duration::ZERO);
    let (db, t) = (&f.db, &f.t);
    t.upsert(b"1", b"10").unwrap();
    t.upsert(b"2", b"20").unwrap();
    let mut t1 = db.begin();
    write(&mut t1, t, 1, 11).unwrap();
    t1.delete(t, b"2").unwrap();
    write(&mut t1, t, 3, 30).unwrap();
    t1.get_for_update(t, b"4").unwrap();
    assert_eq!(all(&t1, t), [(1, 11), (3, 30)]);
    assert_eq!(db.stats().locks.current_locks, 4);
    // With a zero timeout, a locked row cannot be taken.
    let mut probe = db.begin();
    assert!(matches!(
        write(&mut probe, t, 1, 0),
        Err(Error::Txn(TxnError::LockWaitTimeout { .. }))
    ));
    probe.rollback();
    finish(t1);
    assert_eq!(db.stats().locks.current_locks, 0);
    assert_eq!(committed(t), [(1, 10), (2, 20)]);
    let mut t2 = db.begin();
    for id in 1..=4 {
        write(&mut t2, t, id, i64::from(id)).unwrap();
    }
    t2.commit().unwrap();
    assert_eq!(committed(t), [(1, 1), (2, 2), (3, 3), (4, 4)]);
    assert_eq!(db.stats().mvcc.snapshots, 0);
}

#[test]
fn rollback_discards_writes_and_releases_locks() {
    discard(Transaction::rollback);
}

#[test]
fn dropping_a_transaction_rolls_it_back() {
    discard(drop);
}

/// A waiter is woken when the holder is dropped.
#[test]
fn dropping_a_transaction_wakes_its_waiters() {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    let mut t1 = db.begin();
    let mut t2 = db.begin();
    write(&mut t1, t, 1, 11).unwrap();
    while_blocked(db, || write(&mut t2, t, 1, 12), || drop(t1)).unwrap();
    t2.commit().unwrap();
    assert_eq!(committed(t), [(1, 12), (2, 20)]);
}

#[test]
fn rr_reads_own_writes() {
    own_writes(RR);
}

#[test]
fn rc_reads_own_writes() {
    own_writes(RC);
}

fn own_writes(iso: IsolationLevel) {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    for id in 3..=8 {
        t.upsert(&key(id), (id * 10).to_string().as_bytes())
            .unwrap();
    }
    let mut tx = db.begin_with(iso);
    write(&mut tx, t, 1, 11).unwrap();
    tx.delete(t, b"2").unwrap();
    write(&mut tx, t, 5, 55).unwrap();
    tx.delete(t, b"8").unwrap();
    tx.delete(t, b"9").unwrap(); // an absent row
    write(&mut tx, t, 9, 99).unwrap();
    write(&mut tx, t, 0, 0).unwrap();
    write(&mut tx, t, 0, 1).unwrap(); // overwritten by itself
    assert_eq!(read(&tx, t, 1), Some(11));
    assert_eq!(read(&tx, t, 2), None);
    assert_eq!(read(&tx, t, 8), None);
    assert_eq!(read(&tx, t, 9), Some(99));
    assert_eq!(read(&tx, t, 0), Some(1));
    assert_eq!(read(&tx, t, 3), Some(30));
    assert_eq!(
        tx.get_for_update(t, b"5").unwrap().as_deref(),
        Some(&b"55"[..])
    );
    assert_eq!(tx.get_for_update(t, b"2").unwrap(), None);
    let expect = [
        (0, 1),
        (1, 11),
        (3, 30),
        (4, 40),
        (5, 55),
        (6, 60),
        (7, 70),
        (9, 99),
    ];
    assert_eq!(all(&tx, t), expect);
    // Bounded ranges in both directions, with the own writes at and inside the bounds.
    let range = |lo: Bound<&[u8]>, hi: Bound<&[u8]>, rev: bool| -> Vec<u32> {
        let it = if rev {
            tx.scan_rev(t, (lo, hi)).unwrap()
        } else {
            tx.scan(t, (lo, hi)).unwrap()
        };
        it.map(|e| row(&e.unwrap().0, b"0").0).collect()
    };
    use Bound::{Excluded as Ex, Included as In, Unbounded as Un};
    assert_eq!(range(In(b"1"), Ex(b"5"), false), [1, 3, 4]);
    assert_eq!(range(In(b"1"), Ex(b"5"), true), [4, 3, 1]);
    assert_eq!(range(Ex(b"1"), In(b"5"), false), [3, 4, 5]);
    assert_eq!(range(Ex(b"1"), In(b"5"), true), [5, 4, 3]);
    assert_eq!(range(In(b"2"), In(b"2"), false), Vec::<u32>::new());
    assert_eq!(range(In(b"8"), Un, false), [9]);
    assert_eq!(range(Un, Ex(b"1"), true), [0]);
    assert_eq!(range(In(b"5"), Ex(b"5"), false), Vec::<u32>::new());
    assert_eq!(range(Ex(b"5"), Ex(b"5"), true), Vec::<u32>::new());
    // Nobody else sees any of it before commit.
    assert_eq!(
        committed(t),
        [
            (1, 10),
            (2, 20),
            (3, 30),
            (4, 40),
            (5, 50),
            (6, 60),
            (7, 70),
            (8, 80)
        ]
    );
    tx.commit().unwrap();
    assert_eq!(committed(t), expect);
}

fn get_for_update_locks(iso: IsolationLevel) {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    let mut t1 = db.begin_with(iso);
    let mut t2 = db.begin_with(iso);
    assert_eq!(
        t1.get_for_update(t, b"1").unwrap().as_deref(),
        Some(&b"10"[..])
    );
    // A missing row is locked too: nobody can insert it meanwhile.
    assert_eq!(t1.get_for_update(t, b"7").unwrap(), None);
    assert_eq!(db.stats().locks.current_locks, 2);
    // Plain reads do not wait for it.
    assert_eq!(read(&t2, t, 1), Some(10));
    let r = while_blocked(db, || t.upsert(b"7", b"70"), || t1.commit().unwrap());
    assert!(!r.unwrap(), "the row did not exist");
    // T1 committed no change of row 1, so T2 may write it even under repeatable read.
    let mut t3 = db.begin_with(iso);
    t3.get_for_update(t, b"1").unwrap();
    while_blocked(db, || write(&mut t2, t, 1, 12), || t3.rollback()).unwrap();
    t2.commit().unwrap();
    assert_eq!(committed(t), [(1, 12), (2, 20), (7, 70)]);
}

#[test]
fn rr_get_for_update_locks_the_row() {
    get_for_update_locks(RR);
}

#[test]
fn rc_get_for_update_locks_the_row() {
    get_for_update_locks(RC);
}

/// Under read committed, `get_for_update` returns the newest committed value; under
/// repeatable read it refuses a row changed after the snapshot.
#[test]
fn get_for_update_reads_the_newest_committed_value() {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    let mut rc = db.begin_with(RC);
    let mut rr = db.begin_with(RR);
    t.upsert(b"1", b"11").unwrap();
    assert_eq!(
        rc.get_for_update(t, b"1").unwrap().as_deref(),
        Some(&b"11"[..])
    );
    assert_eq!(read(&rr, t, 1), Some(10));
    assert_eq!(
        rr.get_for_update(t, b"2").unwrap().as_deref(),
        Some(&b"20"[..])
    );
    rc.commit().unwrap();
    assert!(is_write_conflict(&rr.get_for_update(t, b"1")));
}

#[test]
fn single_row_upsert_waits_for_a_transaction_lock() {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    let mut t1 = db.begin();
    write(&mut t1, t, 1, 11).unwrap();
    let replaced = while_blocked(db, || t.upsert(b"1", b"99"), || t1.commit().unwrap());
    assert!(replaced.unwrap());
    assert_eq!(committed(t), [(1, 99), (2, 20)]);
    // Also when the transaction rolls back; and insert/delete wait the same way.
    let mut t2 = db.begin();
    t2.delete(t, b"2").unwrap();
    let inserted = while_blocked(db, || t.insert(b"2", b"x"), || t2.rollback());
    assert!(!inserted.unwrap(), "the row is still there");
    let mut t3 = db.begin();
    write(&mut t3, t, 2, 21).unwrap();
    let deleted = while_blocked(db, || t.delete(b"2"), || t3.commit().unwrap());
    assert!(deleted.unwrap());
    assert_eq!(committed(t), [(1, 99)]);
    // A single-row write counts as a commit for first-updater-wins.
    let mut t4 = db.begin_with(RR);
    t.upsert(b"1", b"100").unwrap();
    assert!(is_write_conflict(&write(&mut t4, t, 1, 5)));
}

/// A transaction begun after `commit` returned always sees the commit, whatever the flush
/// policy, while other commits are in flight.
#[test]
fn commit_is_visible_to_transactions_begun_after_it_returns() {
    let f = hermitage();
    let (db, t) = (&f.db, &f.t);
    t.upsert(b"c", b"0").unwrap();
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let policies = [FlushPolicy::Sync, FlushPolicy::Write, FlushPolicy::None];
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            for i in 1..=2000u64 {
                let mut tx = db.begin_with(if i % 2 == 0 { RR } else { RC });
                tx.set_flush_policy(policies[i as usize % 3]);
                tx.put(t, b"c", i.to_string().as_bytes()).unwrap();
                tx.commit().unwrap();
                done.store(i, Ordering::Release);
            }
        });
        let noise = s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let mut tx = db.begin();
                tx.set_flush_policy(policies[i as usize % 3]);
                tx.put(t, &key(100 + (i % 50) as u32), b"1").unwrap();
                tx.commit().unwrap();
            }
        });
        let mut checks = 0;
        while !writer.is_finished() || checks == 0 {
            let n = done.load(Ordering::Acquire) as i64;
            let rr = db.begin_with(RR);
            let rc = db.begin_with(RC);
            for (what, v) in [
                ("rr", num(&rr.get(t, b"c").unwrap().unwrap())),
                ("rc", num(&rc.get(t, b"c").unwrap().unwrap())),
                ("tree", num(&t.get(b"c").unwrap().unwrap())),
            ] {
                assert!(v >= n, "{what} read {v} after commit {n} returned");
            }
            checks += 1;
        }
        writer.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        noise.join().unwrap();
    });
    assert_eq!(t.get(b"c").unwrap().unwrap(), b"2000");
}
