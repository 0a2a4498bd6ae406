//! Issue 19 step 7: the FSST symbol table follows the data. A tree trained on digit strings
//! and then filled with text retrains; leaves on older versions are rebuilt when written
//! (lazy re-encoding); `OPTIMIZE TABLE` moves every leaf onto a fresh version; versions with
//! no pages leave the catalog at the next checkpoint; and all of it survives reopen and crash.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_storage::Codec;

use crate::btree::symtab::{DriftConfig, RecordStats};
use crate::format::{RecordCodec, TreeFormat};
use crate::tests::{opts, Disks};
use crate::{Database, Tree};

const PAGE: usize = 16384;

fn db() -> (Disks, Database) {
    let disks = Disks::new();
    let db = disks.open(options()).unwrap();
    (disks, db)
}

fn options() -> crate::Options {
    let mut o = opts(PAGE, Codec::None);
    o.pool_bytes = 4096 * PAGE;
    o
}

fn fsst_format() -> TreeFormat {
    TreeFormat {
        records: RecordCodec::Fsst,
        ..TreeFormat::compact(Codec::None)
    }
}

/// The design's thresholds but a smaller window and no minimum interval, so a test drifts in
/// a few thousand rows without sleeping.
fn fast_drift(t: &Tree) {
    t.btree().symbol_tables().set_drift_config(DriftConfig {
        min_records: 1024,
        min_interval: Duration::ZERO,
        ..DriftConfig::DEFAULT
    });
}

fn digits(id: u64) -> Vec<u8> {
    crate::test_support::sbtest_c(id)
}

/// English-like text of 60 to 400 bytes.
fn text(i: u64) -> Vec<u8> {
    const WORDS: [&str; 24] = [
        "the",
        "package",
        "debian",
        "install",
        "configuration",
        "file",
        "system",
        "service",
        "default",
        "options",
        "manual",
        "network",
        "which",
        "should",
        "before",
        "running",
        "user",
        "and",
        "with",
        "this",
        "directory",
        "settings",
        "available",
        "information",
    ];
    let mut s = crate::test_support::word_salad(i, &WORDS, 8 + (i % 50) as usize);
    s.push('.');
    s.into_bytes()
}

fn key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

fn stats(t: &Tree) -> RecordStats {
    t.btree().symbol_tables().record_stats()
}

/// Running ratio of the values written since the current version was installed.
fn running(s: &RecordStats) -> f64 {
    s.drift_stored as f64 / s.drift_raw as f64
}

fn check(t: &Tree, model: &BTreeMap<u64, Vec<u8>>, ctx: &str) {
    for (id, v) in model {
        assert_eq!(
            t.get(&key(*id)).unwrap().as_ref(),
            Some(v),
            "{ctx}: row {id}"
        );
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = t
        .range::<std::ops::RangeFull>(..)
        .unwrap()
        .collect::<crate::Result<_>>()
        .unwrap();
    assert!(
        all.iter()
            .map(|(k, v)| (k.clone(), v))
            .eq(model.iter().map(|(id, v)| (key(*id).to_vec(), v))),
        "{ctx}: scan"
    );
    // `verify` also checks each exact per-version page count against its recount.
    assert_eq!(t.verify().unwrap().entries, model.len() as u64, "{ctx}");
}

#[test]
fn digits_then_text_retrains_to_a_fresh_trees_ratio() {
    let (_d, db) = db();
    let t = db.create_tree_with("t", fsst_format()).unwrap();
    let fresh = db.create_tree_with("fresh", fsst_format()).unwrap();
    fast_drift(&t);
    fast_drift(&fresh);
    for id in 0..3_000 {
        assert!(t.insert(&key(id), &digits(id)).unwrap());
    }
    let s = stats(&t);
    assert_eq!(
        (s.version, s.retrains),
        (1, 0),
        "trained once, on digits: {s:?}"
    );
    for i in 0..8_000 {
        assert!(t.insert(&key(100_000 + i), &text(i)).unwrap());
        assert!(fresh.insert(&key(i), &text(i)).unwrap());
    }
    let s = stats(&t);
    assert!(
        s.retrains >= 1 && s.version >= 2,
        "text after digits retrains: {s:?}"
    );
    assert_eq!(stats(&fresh).retrains, 0, "{:?}", stats(&fresh));
    for i in 8_000..12_000 {
        assert!(t.insert(&key(100_000 + i), &text(i)).unwrap());
        assert!(fresh.insert(&key(i), &text(i)).unwrap());
    }
    let (s, f) = (stats(&t), stats(&fresh));
    let (rt, rf) = (running(&s), running(&f));
    eprintln!("running ratio after retrain {rt:.3}, fresh tree {rf:.3}; {s:?}");
    assert!(rf < 0.8, "text compresses: {f:?}");
    assert!(rt <= rf * 1.10, "retrained {rt:.3} against fresh {rf:.3}");
    t.verify().unwrap();
    fresh.verify().unwrap();
    for i in (0..12_000).step_by(97) {
        assert_eq!(t.get(&key(100_000 + i)).unwrap(), Some(text(i)));
    }
}

/// Random text writes over a tree loaded with digits, against a `BTreeMap`, across a retrain,
/// lazy re-encodes, a reopen with two versions in the catalog, `OPTIMIZE`, retirement and a
/// second reopen.
#[test]
fn model_across_retrain_lazy_reencode_optimize_and_reopen() {
    let (disks, db) = db();
    let t = db.create_tree_with("t", fsst_format()).unwrap();
    fast_drift(&t);
    let mut model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(7);
    for id in 0..4_000 {
        t.insert(&key(id), &digits(id)).unwrap();
        model.insert(id, digits(id));
    }
    let mut n = 0u64;
    // Text inserts until the retrain; digit rows stay on version 1.
    while stats(&t).retrains == 0 {
        n += 1;
        assert!(n < 20_000, "no retrain: {:?}", stats(&t));
        t.insert(&key(10_000 + n), &text(n)).unwrap();
        model.insert(10_000 + n, text(n));
    }
    db.checkpoint().unwrap();
    let snap = t.btree().symbol_tables().snapshot();
    assert_eq!(snap.len(), 2, "version 1 still has pages: {snap:?}");
    assert!(snap[0].pages > 0);
    check(&t, &model, "after the retrain");
    drop(t);
    db.close().unwrap();

    let db = disks.open(options()).unwrap();
    let t = db.open_tree("t").unwrap();
    fast_drift(&t);
    assert_eq!(
        t.btree().symbol_tables().live_versions(),
        2,
        "both reloaded"
    );
    check(&t, &model, "after reopen");
    for i in 0..6_000u64 {
        let id = rng.gen_range(0..4_000 + n);
        let id = if id >= 4_000 { 10_000 + id - 4_000 } else { id };
        match rng.gen_range(0..10) {
            0 => {
                assert_eq!(t.delete(&key(id)).unwrap(), model.remove(&id).is_some());
            }
            _ => {
                let v = text(i * 31 + 5);
                t.upsert(&key(id), &v).unwrap();
                model.insert(id, v);
            }
        }
    }
    let s = stats(&t);
    assert!(s.leaves_reencoded > 0, "writes rebuilt old leaves: {s:?}");
    check(&t, &model, "after lazy re-encodes");

    let rep = t.optimize().unwrap();
    assert!(rep.trained && rep.leaves > 0, "{rep:?}");
    assert_eq!(rep.leaves_skipped, 0, "{rep:?}");
    let newest = t.btree().symbol_tables().current().unwrap();
    assert_eq!(Some(newest.version.0), rep.version);
    let leaves = t.verify().unwrap().leaves;
    assert_eq!(newest.pages(), leaves, "every leaf on the newest version");
    db.checkpoint().unwrap();
    let snap = t.btree().symbol_tables().snapshot();
    assert_eq!(snap.len(), 1, "older versions retired: {snap:?}");
    assert_eq!(snap[0].version, newest.version);
    assert_eq!(t.btree().symbol_tables().live_versions(), 1);
    check(&t, &model, "after OPTIMIZE");
    drop(t);
    db.close().unwrap();

    let db = disks.open(options()).unwrap();
    let t = db.open_tree("t").unwrap();
    assert_eq!(t.btree().symbol_tables().live_versions(), 1);
    check(&t, &model, "after the second reopen");
}

/// A crash after a retrain and lazy re-encodes, before any checkpoint saw the new version:
/// the checkpoint's pages name only version 1, replay encodes with it, and the tree retrains
/// again on later writes.
#[test]
fn crash_after_retrain_before_checkpoint() {
    let (disks, db) = db();
    let t = db.create_tree_with("t", fsst_format()).unwrap();
    fast_drift(&t);
    let mut model = BTreeMap::new();
    for id in 0..4_000 {
        t.insert(&key(id), &digits(id)).unwrap();
        model.insert(id, digits(id));
    }
    db.checkpoint().unwrap();
    for i in 0..6_000u64 {
        // Text over the digit rows too, so leaves on version 1 are rebuilt.
        let id = if i % 3 == 0 { i % 4_000 } else { 10_000 + i };
        t.upsert(&key(id), &text(i)).unwrap();
        model.insert(id, text(i));
    }
    let s = stats(&t);
    assert!(s.retrains >= 1 && s.leaves_reencoded > 0, "{s:?}");
    let crashed = disks.crash();
    drop(t);
    drop(db);
    let db = crashed.open(options()).unwrap();
    let t = db.open_tree("t").unwrap();
    assert_eq!(t.btree().symbol_tables().live_versions(), 1);
    check(&t, &model, "after replay");
    fast_drift(&t);
    for i in 6_000..12_000u64 {
        t.upsert(&key(10_000 + i), &text(i)).unwrap();
        model.insert(10_000 + i, text(i));
    }
    assert!(stats(&t).retrains >= 1, "{:?}", stats(&t));
    check(&t, &model, "after more writes");
    db.checkpoint().unwrap();
    drop(t);
    db.close().unwrap();
    let db = crashed.open(options()).unwrap();
    check(&db.open_tree("t").unwrap(), &model, "after a clean reopen");
}

/// `OPTIMIZE` and checkpoints while two writers rewrite their own key ranges (text over
/// digits, so the tree retrains and rebuilds leaves meanwhile): every row survives, `verify`
/// finds the page counts kept exact, and after a complete walk and a checkpoint only versions
/// at least as new as OPTIMIZE's remain.
#[test]
fn optimize_with_concurrent_writers_and_checkpoints() {
    let (disks, db) = db();
    let t = db.create_tree_with("t", fsst_format()).unwrap();
    fast_drift(&t);
    for id in 0..6_000 {
        t.insert(&key(id), &digits(id)).unwrap();
    }
    let models: Vec<BTreeMap<u64, Vec<u8>>> = std::thread::scope(|sc| {
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let t = t.clone();
                sc.spawn(move || {
                    let mut model: BTreeMap<u64, Vec<u8>> = (w * 3_000..(w + 1) * 3_000)
                        .map(|id| (id, digits(id)))
                        .collect();
                    let mut rng = SmallRng::seed_from_u64(w);
                    for i in 0..6_000u64 {
                        let id = w * 3_000 + rng.gen_range(0..3_000);
                        if i % 11 == 0 {
                            t.delete(&key(id)).unwrap();
                            model.remove(&id);
                        } else {
                            let v = text(i * 2 + w);
                            t.upsert(&key(id), &v).unwrap();
                            model.insert(id, v);
                        }
                    }
                    model
                })
            })
            .collect();
        for _ in 0..3 {
            let rep = t.optimize().unwrap();
            assert!(rep.version.is_some(), "{rep:?}");
            db.checkpoint().unwrap();
        }
        writers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let model: BTreeMap<u64, Vec<u8>> = models.into_iter().flatten().collect();
    check(&t, &model, "after concurrent OPTIMIZE");
    let rep = t.optimize().unwrap();
    assert_eq!(rep.leaves_skipped, 0, "{rep:?}");
    db.checkpoint().unwrap();
    let snap = t.btree().symbol_tables().snapshot();
    assert_eq!(snap.len(), 1, "{snap:?}");
    check(&t, &model, "after the last OPTIMIZE");
    drop(t);
    db.close().unwrap();
    let db = disks.open(options()).unwrap();
    check(&db.open_tree("t").unwrap(), &model, "after reopen");
}
