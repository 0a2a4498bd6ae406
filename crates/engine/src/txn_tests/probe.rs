//! Batch inserts through [`Transaction::probe_new_keys`] and [`Transaction::insert_probed`]:
//! the same rows, the same first collision and the same locks as `get_for_update` + `put` per
//! row.

use super::*;

fn k4(n: u32) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

/// Writes `keys` (values: the key's index) the batch way; returns how many were written
/// before the first declined one.
fn batch(tx: &mut Transaction, t: &Tree, keys: &[Vec<u8>]) -> Result<usize> {
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let mut p = tx.probe_new_keys(t, &refs)?;
    assert_eq!(p.len(), keys.len());
    for i in 0..keys.len() {
        assert_eq!(p.key(i), keys[i].as_slice());
        if !tx.insert_probed(&mut p, i, i.to_string().into_bytes())? {
            assert_eq!(p.first_taken(), Some(i));
            // Every later key is declined too.
            for j in i..keys.len() {
                assert!(!tx.insert_probed(&mut p, j, b"x".to_vec())?);
            }
            return Ok(i);
        }
    }
    assert_eq!(p.first_taken(), None);
    Ok(keys.len())
}

/// The same, one row at a time as INSERT did: `get_for_update`, then `put` if absent.
fn per_row(tx: &mut Transaction, t: &Tree, keys: &[Vec<u8>]) -> Result<usize> {
    for (i, k) in keys.iter().enumerate() {
        if tx.get_for_update(t, k)?.is_some() {
            return Ok(i);
        }
        tx.put(t, k, i.to_string().as_bytes())?;
    }
    Ok(keys.len())
}

fn contents(tx: &Transaction, t: &Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
    tx.scan(t, ..).unwrap().map(|e| e.unwrap()).collect()
}

struct Fixture2<'a> {
    db: &'a Database,
    t: Tree,
}

/// Random tables, own writes and batches (ascending runs, random keys, duplicates, keys
/// between long runs of existing rows so that the probe's cursor re-seeks): the batch path
/// stops at the same row and leaves the same rows as the per-row path.
#[test]
fn probed_batches_match_per_row_inserts() {
    let mut rng = SmallRng::seed_from_u64(20);
    for round in 0..60 {
        let fs = [fixture(WAIT), fixture(WAIT)];
        let space = [40u32, 400, 4000][round % 3];
        let existing: Vec<u32> = (0..rng.gen_range(0..space))
            .map(|_| rng.gen_range(0..space))
            .collect();
        let own: Vec<(u32, bool)> = (0..rng.gen_range(0..20))
            .map(|_| (rng.gen_range(0..space), rng.gen_bool(0.5)))
            .collect();
        let keys: Vec<Vec<u8>> = match rng.gen_range(0..3) {
            0 => {
                let start = rng.gen_range(0..space);
                (start..start + rng.gen_range(1..300)).map(k4).collect()
            }
            1 => (0..rng.gen_range(1..300))
                .map(|_| k4(rng.gen_range(0..space * 2)))
                .collect(),
            _ => (0..rng.gen_range(1..50))
                .map(|_| k4(rng.gen_range(space..space + 60)))
                .collect(),
        };
        let mut results = Vec::new();
        for (n, f) in fs.iter().enumerate() {
            // Classic leaves, or compact ones with FSST values (keys-only cursors there).
            let t = match round % 2 {
                0 => f.t.clone(),
                _ => {
                    f.db.create_tree_with(
                        "fsst",
                        crate::format::TreeFormat {
                            records: crate::format::RecordCodec::Fsst,
                            ..crate::format::TreeFormat::compact(Codec::None)
                        },
                    )
                    .unwrap()
                }
            };
            let f = Fixture2 { db: &f.db, t };
            for &e in &existing {
                f.t.upsert(&k4(e), b"old-value-with-some-digits-0123456789")
                    .unwrap();
            }
            let mut tx = f.db.begin_with(RC);
            for &(k, put) in &own {
                if put {
                    tx.put(&f.t, &k4(k), b"own").unwrap();
                } else {
                    tx.delete(&f.t, &k4(k)).unwrap();
                }
            }
            let wrote = if n == 0 {
                batch(&mut tx, &f.t, &keys).unwrap()
            } else {
                per_row(&mut tx, &f.t, &keys).unwrap()
            };
            results.push((wrote, contents(&tx, &f.t)));
            tx.commit().unwrap();
        }
        assert_eq!(results[0].0, results[1].0, "round {round}: first collision");
        assert!(results[0].1 == results[1].1, "round {round}: rows differ");
    }
}

#[test]
fn an_empty_probe_takes_nothing() {
    let f = fixture(WAIT);
    let tx = f.db.begin_with(RR);
    let p = tx.probe_new_keys(&f.t, &[]).unwrap();
    assert!(p.is_empty());
    assert_eq!(p.first_taken(), None);
}

/// A row another transaction inserted and has not committed is free to the probe; writing it
/// waits for that transaction's lock, then finds the row if it committed (read committed),
/// or conflicts (repeatable read with write conflicts), or takes it if it rolled back.
#[test]
fn a_probed_insert_waits_for_the_lock_of_a_concurrent_insert() {
    for (iso, commit) in [(RC, true), (RR, true), (RC, false), (RR, false)] {
        let f = fixture(WAIT);
        let (db, t) = (&f.db, &f.t);
        let mut other = db.begin_with(RC);
        other.put(t, &k4(5), b"theirs").unwrap();
        let mut tx = db.begin_with(iso);
        let keys = [k4(4), k4(5), k4(6)];
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let mut p = tx.probe_new_keys(t, &refs).unwrap();
        assert_eq!(p.first_taken(), None);
        assert!(tx.insert_probed(&mut p, 0, b"mine".to_vec()).unwrap());
        let r = while_blocked(
            db,
            || tx.insert_probed(&mut p, 1, b"mine".to_vec()),
            || match commit {
                true => other.commit().unwrap(),
                false => std::mem::replace(&mut other, db.begin_with(RC)).rollback(),
            },
        );
        match (iso, commit) {
            (RC, true) => {
                assert!(!r.unwrap(), "the committed row is found");
                assert_eq!(p.first_taken(), Some(1));
                assert!(tx.get_for_update(t, &k4(5)).unwrap().is_some());
            }
            (_, true) => assert!(is_write_conflict(&r), "{r:?}"),
            (_, false) => {
                assert!(r.unwrap(), "the rolled-back row is free");
                assert!(tx.insert_probed(&mut p, 2, b"mine".to_vec()).unwrap());
            }
        }
        drop(p);
        if !(iso == RR && commit) {
            tx.commit().unwrap();
        }
    }
}

/// A row committed by another transaction after the probe and before the write is found
/// under the lock (the probe's answer is stale for it).
#[test]
fn a_commit_between_probe_and_write_is_seen() {
    let f = fixture(WAIT);
    let mut tx = f.db.begin_with(RC);
    let keys = [k4(1), k4(2), k4(3)];
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let mut p = tx.probe_new_keys(&f.t, &refs).unwrap();
    assert_eq!(p.first_taken(), None);
    // The probe holds no snapshot (that would make other commits keep before-images).
    assert_eq!(f.db.stats().mvcc.snapshots, 0);
    assert!(f.t.insert(&k4(2), b"theirs").unwrap());
    assert!(tx.insert_probed(&mut p, 0, b"mine".to_vec()).unwrap());
    assert!(!tx.insert_probed(&mut p, 1, b"mine".to_vec()).unwrap());
    assert!(
        !tx.insert_probed(&mut p, 2, b"mine".to_vec()).unwrap(),
        "after the first taken"
    );
    drop(p);
    tx.commit().unwrap();
    let rows: Vec<(Vec<u8>, Vec<u8>)> = f.t.range(..).unwrap().map(|e| e.unwrap()).collect();
    assert_eq!(
        rows,
        [(k4(1), b"mine".to_vec()), (k4(2), b"theirs".to_vec())]
    );
}

/// The batch's locks are row locks like `put`'s: another writer of a batch row waits until
/// this transaction ends, and times out meanwhile.
#[test]
fn probed_rows_are_locked_until_the_transaction_ends() {
    let f = fixture(Duration::from_millis(50));
    let mut tx = f.db.begin_with(RC);
    let keys: Vec<Vec<u8>> = (10..20).map(k4).collect();
    assert_eq!(batch(&mut tx, &f.t, &keys).unwrap(), 10);
    let mut other = f.db.begin_with(RC);
    let r = other.put(&f.t, &k4(15), b"theirs");
    assert!(
        matches!(r, Err(Error::Txn(crate::TxnError::LockWaitTimeout { .. }))),
        "{r:?}"
    );
    // And the batch itself waits for a lock held elsewhere.
    other.put(&f.t, &k4(30), b"theirs").unwrap();
    let refs: Vec<&[u8]> = vec![&[0, 0, 0, 29], &[0, 0, 0, 30]];
    let mut p = tx.probe_new_keys(&f.t, &refs).unwrap();
    assert!(tx.insert_probed(&mut p, 0, b"mine".to_vec()).unwrap());
    let r = tx.insert_probed(&mut p, 1, b"mine".to_vec());
    assert!(
        matches!(r, Err(Error::Txn(crate::TxnError::LockWaitTimeout { .. }))),
        "{r:?}"
    );
    drop(p);
    tx.rollback();
    other.put(&f.t, &k4(15), b"theirs").unwrap();
    other.commit().unwrap();
}

/// Rolling back to a savepoint taken before the batch removes its rows (and only them).
#[test]
fn rollback_to_savepoint_removes_the_batch() {
    let f = fixture(WAIT);
    let mut tx = f.db.begin_with(RR);
    tx.put(&f.t, &k4(1), b"before").unwrap();
    let sp = tx.savepoint();
    let keys: Vec<Vec<u8>> = (2..200).map(k4).collect();
    assert_eq!(batch(&mut tx, &f.t, &keys).unwrap(), keys.len());
    assert_eq!(contents(&tx, &f.t).len(), 199);
    tx.rollback_to(sp);
    assert_eq!(contents(&tx, &f.t), [(k4(1), b"before".to_vec())]);
    tx.commit().unwrap();
    assert_eq!(f.t.range(..).unwrap().count(), 1);
}

/// A key too long for the tree fails as `put` fails, after the lock.
#[test]
fn oversized_keys_fail_as_put_does() {
    let f = fixture(WAIT);
    let mut tx = f.db.begin_with(RC);
    let long = vec![7u8; f.t.max_key_len() + 1];
    let refs: Vec<&[u8]> = vec![&long];
    let mut p = tx.probe_new_keys(&f.t, &refs).unwrap();
    let r = tx.insert_probed(&mut p, 0, b"v".to_vec());
    assert!(
        matches!(
            r,
            Err(Error::Request(crate::RequestError::KeyTooLarge { .. }))
        ),
        "{r:?}"
    );
}
