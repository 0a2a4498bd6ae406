//! Commits applied a leaf at a time (`apply.rs`) against a model of row-by-row application:
//! the same tree contents, the same before-images for a snapshot that began earlier, the same
//! state after a crash and replay; FSST trees loaded only by such commits still train; and
//! `Tree::load_unpublished`.

use std::collections::BTreeMap;

use proptest::prelude::*;
use zipdb_storage::Codec;

use crate::format::{RecordCodec, TreeFormat};
use crate::tests::{opts, Disks};
use crate::{Database, IsolationLevel, Transaction, Tree};

const PAGE: usize = 4096;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Classic,
    Compact,
    Fsst,
}

fn format(kind: Kind) -> TreeFormat {
    match kind {
        Kind::Classic => TreeFormat::classic(Codec::None),
        Kind::Compact => TreeFormat::compact(Codec::None),
        Kind::Fsst => TreeFormat {
            records: RecordCodec::Fsst,
            ..TreeFormat::compact(Codec::None)
        },
    }
}

fn key(id: u32) -> Vec<u8> {
    format!("k{id:07}").into_bytes()
}

/// Mostly short values; a length over a page makes an overflow chain (the ordinary path).
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| b'a' + (seed as usize + i) as u8 % 26)
        .collect()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents(tx: &Transaction, t: &Tree) -> Model {
    tx.scan(t, ..).unwrap().map(|r| r.unwrap()).collect()
}

fn commit_ops(db: &Database, t: &Tree, ops: &[(u32, Option<(usize, u8)>)], m: &mut Model) {
    let mut tx = db.begin();
    for &(id, v) in ops {
        match v {
            Some((len, seed)) => {
                tx.put(t, &key(id), &value(len, seed)).unwrap();
                m.insert(key(id), value(len, seed));
            }
            None => {
                tx.delete(t, &key(id)).unwrap();
                m.remove(&key(id));
            }
        }
    }
    tx.commit().unwrap();
}

fn check(db: &Database, t: &Tree, m: &Model, ctx: &str) {
    let tx = db.begin();
    assert_eq!(&contents(&tx, t), m, "{ctx}: scan");
    for (k, v) in m {
        assert_eq!(t.get(k).unwrap().as_ref(), Some(v), "{ctx}: get");
    }
    assert_eq!(t.verify().unwrap().entries, m.len() as u64, "{ctx}: verify");
}

fn op() -> impl Strategy<Value = (u32, Option<(usize, u8)>)> {
    (
        0u32..3000,
        prop_oneof![
            6 => (0usize..200, any::<u8>()).prop_map(Some),
            1 => (PAGE..PAGE + 100, any::<u8>()).prop_map(Some),
            3 => Just(None),
        ],
    )
}

fn run(kind: Kind, first: &[(u32, Option<(usize, u8)>)], second: &[(u32, Option<(usize, u8)>)]) {
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::None)).unwrap();
    let t = db.create_tree_with("t", format(kind)).unwrap();
    let mut m = Model::new();
    commit_ops(&db, &t, first, &mut m);
    check(&db, &t, &m, "first commit");
    // A snapshot from before the second commit must keep reading the first state, through
    // the before-images the second commit recorded.
    let reader = db.begin_with(IsolationLevel::RepeatableRead);
    let before = m.clone();
    commit_ops(&db, &t, second, &mut m);
    check(&db, &t, &m, "second commit");
    assert_eq!(contents(&reader, &t), before, "snapshot scan");
    for &(id, _) in second {
        assert_eq!(
            reader.get(&t, &key(id)).unwrap(),
            before.get(&key(id)).cloned()
        );
    }
    drop(reader);
    // The same state after a power failure: both commits replay from the WAL.
    let crashed = disks.crash();
    drop(t);
    drop(db);
    let db = crashed.open(opts(PAGE, Codec::None)).unwrap();
    let t = db.open_tree("t").unwrap();
    check(&db, &t, &m, "after crash");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn batched_commits_match_the_model_classic(
        a in proptest::collection::vec(op(), 0..600),
        b in proptest::collection::vec(op(), 1..300),
    ) {
        run(Kind::Classic, &a, &b);
    }

    #[test]
    fn batched_commits_match_the_model_compact(
        a in proptest::collection::vec(op(), 0..600),
        b in proptest::collection::vec(op(), 1..300),
    ) {
        run(Kind::Compact, &a, &b);
    }

    #[test]
    fn batched_commits_match_the_model_fsst(
        a in proptest::collection::vec(op(), 0..600),
        b in proptest::collection::vec(op(), 1..300),
    ) {
        run(Kind::Fsst, &a, &b);
    }
}

/// Ascending new keys, as a bulk INSERT writes them, and a commit touching two rows far
/// apart in a big tree (the before-image cursor gives up on the gap and looks them up).
#[test]
fn appends_and_far_apart_writes_keep_snapshots_exact() {
    for kind in [Kind::Classic, Kind::Compact, Kind::Fsst] {
        let fill: Vec<_> = (0..5000).map(|id| (id, Some((40, id as u8)))).collect();
        let far = [
            (3, Some((10, 1))),
            (4, None),
            (2500, None),
            (4990, Some((50, 2))),
            (9999, Some((5, 3))),
        ];
        run(kind, &fill, &far);
        let more: Vec<_> = (5000..9000).map(|id| (id, Some((40, id as u8)))).collect();
        run(kind, &fill, &more);
    }
}

/// A tree loaded only by multi-row commits is trained as one loaded row by row.
#[test]
fn batched_commits_train_fsst_trees() {
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::None)).unwrap();
    let t = db.create_tree_with("f", format(Kind::Fsst)).unwrap();
    let mut m = Model::new();
    for chunk in 0..30u32 {
        let ops: Vec<_> = (chunk * 100..chunk * 100 + 100)
            .map(|id| (id, Some((120, id as u8))))
            .collect();
        commit_ops(&db, &t, &ops, &mut m);
    }
    assert!(
        !t.btree().symbol_tables().is_empty(),
        "360 KB of values went in without training the tree"
    );
    check(&db, &t, &m, "trained");
}

#[test]
fn load_unpublished_writes_sorted_entries_durably() {
    for kind in [Kind::Classic, Kind::Compact, Kind::Fsst] {
        let disks = Disks::new();
        let db = disks.open(opts(PAGE, Codec::None)).unwrap();
        let t = db.create_tree_with("ix", format(kind)).unwrap();
        let keys: Vec<Vec<u8>> = (0..20_000).map(key).collect();
        for chunk in keys.chunks(7_000) {
            let entries: Vec<(&[u8], &[u8])> =
                chunk.iter().map(|k| (k.as_slice(), &b""[..])).collect();
            t.load_unpublished(&entries).unwrap();
        }
        let m: Model = keys.iter().map(|k| (k.clone(), Vec::new())).collect();
        check(&db, &t, &m, "loaded");
        let crashed = disks.crash();
        drop(t);
        drop(db);
        let db = crashed.open(opts(PAGE, Codec::None)).unwrap();
        let t = db.open_tree("ix").unwrap();
        check(&db, &t, &m, "after crash");
    }
}

#[test]
#[should_panic(expected = "not strictly increasing")]
fn load_unpublished_refuses_unsorted_keys() {
    let disks = Disks::new();
    let db = disks.open(opts(PAGE, Codec::None)).unwrap();
    let t = db.create_tree("ix", None).unwrap();
    let _ = t.load_unpublished(&[(b"b", b""), (b"a", b"")]);
}
