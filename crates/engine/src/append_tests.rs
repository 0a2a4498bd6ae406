//! Appends a leaf at a time at a compact tree's right edge (btree/append.rs), through
//! `BTree::apply_sorted` and `Tree::load_unpublished`: contents against a `BTreeMap` model
//! and `verify` after every batch, page counts against the ordinary path, and the cases that
//! must fall back to it (a root leaf, separators above every key, keys below the tree's
//! largest, values too long to store inline, short batches).

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::format::TreeFormat;
use crate::tests::Disks;
use crate::{Database, Tree};

fn db(page: usize) -> (Disks, Database) {
    crate::tests::db_4k_pages(page)
}

fn index_tree(db: &Database, name: &str) -> Tree {
    db.create_tree_with(name, TreeFormat::FSST_INDEX).unwrap()
}

fn fsst_tree(db: &Database, name: &str) -> Tree {
    db.create_tree_with(name, TreeFormat::FSST).unwrap()
}

/// An sbtest-like value: digit groups, so that the FSST trainer finds symbols.
fn row_value(id: u64) -> Vec<u8> {
    (0..120u64)
        .map(|i| match i % 12 {
            11 => b'-',
            _ => b'0' + ((id * 31 + i * 7) % 10) as u8,
        })
        .collect()
}

/// A bulk insert's shape on an FSST primary tree: ascending 8-byte ids with row values, in
/// commits of 1,000; the tree trains on the way and later leaves are built on its version.
#[test]
fn fsst_primary_appends_match_model() {
    let (_d, db) = db(16384);
    let t = fsst_tree(&db, "p");
    let mut model = BTreeMap::new();
    for b in 0..40u64 {
        let batch: BTreeMap<Vec<u8>, Option<Vec<u8>>> = (b * 1_000..(b + 1) * 1_000)
            .map(|id| (id.to_be_bytes().to_vec(), Some(row_value(id))))
            .collect();
        let run: Vec<(&[u8], Option<&[u8]>)> = batch
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        t.btree().apply_sorted_live(&run).unwrap();
        for (k, v) in batch {
            model.insert(k, v.unwrap());
        }
        if b % 10 == 9 {
            check(&t, &model);
        }
    }
    check(&t, &model);
    // Trained on the way, and the leaves built after that hold FSST values.
    let s = t.btree().symbol_tables().record_stats();
    assert!(s.version > 0, "never trained: {s:?}");
    assert!(s.records_encoded > 20_000, "{s:?}");
}

/// An index entry's key: a shared-prefix part that repeats (`k`), then a unique id, so
/// neighbouring keys share prefixes of `prefix` + a few bytes.
fn ikey(prefix: usize, k: u32, id: u64) -> Vec<u8> {
    let mut key = vec![b'p'; prefix];
    key.extend_from_slice(&k.to_be_bytes());
    key.extend_from_slice(&id.to_be_bytes());
    key
}

fn all(t: &Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
    t.range(..).unwrap().map(|r| r.unwrap()).collect()
}

fn apply(t: &Tree, batch: &BTreeMap<Vec<u8>, Option<Vec<u8>>>) {
    let run: Vec<(&[u8], Option<&[u8]>)> = batch
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_deref()))
        .collect();
    t.btree().apply_sorted(&run).unwrap();
}

fn check(t: &Tree, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let r = t.verify().unwrap();
    assert_eq!(r.entries as usize, model.len());
    assert!(
        all(t).into_iter().eq(model.clone()),
        "tree differs from the model"
    );
}

/// One batch of ascending index entries above `from`: `len` keys, ids from `from`,
/// `k = id / dup` (runs of equal k), values empty or short.
fn append_batch(
    prefix: usize,
    from: u64,
    len: u64,
    dup: u64,
    with_values: bool,
) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
    (from..from + len)
        .map(|id| {
            let v = match with_values {
                true => vec![id as u8; (id % 40) as usize],
                false => Vec::new(),
            };
            (ikey(prefix, (id / dup) as u32, id), Some(v))
        })
        .collect()
}

/// A CREATE INDEX's shape: 60k sorted keys in batches of 10k into an empty tree. The leaves
/// come out at least as full as the ordinary path leaves them (fewer or as many pages).
#[test]
fn load_in_batches_matches_model_and_packs_leaves() {
    let (_d, db) = db(16384);
    let fast = index_tree(&db, "fast");
    let slow = index_tree(&db, "slow");
    let mut model = BTreeMap::new();
    for b in 0..6u64 {
        let batch = append_batch(6, b * 10_000, 10_000, 7, false);
        let entries: Vec<(&[u8], &[u8])> = batch
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref().unwrap()))
            .collect();
        fast.load_unpublished(&entries).unwrap();
        // The ordinary path: batches too short to try an append.
        for chunk in entries.chunks(32) {
            let run: Vec<(&[u8], Option<&[u8]>)> =
                chunk.iter().map(|&(k, v)| (k, Some(v))).collect();
            slow.btree().apply_sorted(&run).unwrap();
        }
        for (k, v) in batch {
            model.insert(k, v.unwrap());
        }
        check(&fast, &model);
        check(&slow, &model);
    }
    let (f, s) = (fast.verify().unwrap(), slow.verify().unwrap());
    println!("leaves: appended {}, ordinary {}", f.leaves, s.leaves);
    assert!(f.depth >= 2, "{f:?}");
    assert!(f.leaves <= s.leaves, "appended {f:?} ordinary {s:?}");
}

/// The batches that append are taken here whole, and the others not at all: the ordinary
/// path's page counts above would not tell the two apart.
#[test]
fn appends_are_taken_and_other_batches_are_not() {
    let (_d, db) = db(4096);
    let t = index_tree(&db, "t");
    let run = |b: &BTreeMap<Vec<u8>, Option<Vec<u8>>>| -> usize {
        let run: Vec<(&[u8], Option<&[u8]>)> = b
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        t.btree().c_append_sorted(&run, true).unwrap()
    };
    // A root leaf takes its writes one at a time until it splits, and then a leaf at a time.
    let first = append_batch(0, 0, 3_000, 4, false);
    assert_eq!(run(&first), 3_000);
    assert!(t.verify().unwrap().depth >= 2);
    let second = append_batch(0, 3_000, 3_000, 4, true);
    assert_eq!(run(&second), 3_000);
    // Below the top: nothing.
    let below = append_batch(0, 10, 100, 4, false);
    assert_eq!(run(&below), 0);
    // A delete stops it where it is.
    let mut mixed = append_batch(0, 6_000, 100, 4, false);
    let k = mixed.keys().nth(40).unwrap().clone();
    mixed.insert(k, None);
    assert_eq!(run(&mixed), 40);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for (k, v) in first
        .into_iter()
        .chain(second)
        .chain(mixed.into_iter().take(40))
    {
        model.insert(k, v.unwrap());
    }
    check(&t, &model);
}

/// Separators above every key (the top of the tree deleted): the right edge's leaf is then
/// not where the next keys go, and the ordinary path takes them.
#[test]
fn appends_after_deleting_the_top_fall_back() {
    let (_d, db) = db(4096);
    let t = index_tree(&db, "t");
    let mut model = BTreeMap::new();
    let first = append_batch(0, 0, 5_000, 3, true);
    apply(&t, &first);
    for (k, v) in first {
        model.insert(k, v.unwrap());
    }
    check(&t, &model);
    // Delete the upper half, then append keys between the remaining top and the old one.
    let dels: BTreeMap<_, _> = model
        .keys()
        .skip(2_500)
        .map(|k| (k.clone(), None))
        .collect();
    apply(&t, &dels);
    for k in dels.keys() {
        model.remove(k);
    }
    check(&t, &model);
    let again = append_batch(0, 2_500, 4_000, 5, true);
    apply(&t, &again);
    for (k, v) in again {
        model.insert(k, v.unwrap());
    }
    check(&t, &model);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, max_shrink_iters: 100, ..ProptestConfig::default() })]

    /// Batches that append (of every length around the threshold and past a leaf), batches
    /// that do not (keys below the top, deletes, values too long to store inline), prefixes
    /// from none to long, 4 KiB and 16 KiB pages.
    #[test]
    fn appends_and_other_batches_against_model(
        page in prop_oneof![Just(4096usize), Just(16384usize)],
        fsst in any::<bool>(),
        prefix in prop_oneof![Just(0usize), Just(5), Just(40), Just(200)],
        steps in proptest::collection::vec((0u8..4, 1u64..1500, 1u64..20), 1..10),
    ) {
        let (_d, db) = db(page);
        let t = match fsst {
            true => fsst_tree(&db, "t"),
            false => index_tree(&db, "t"),
        };
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut next = 0u64;
        for (kind, len, dup) in steps {
            let batch: BTreeMap<Vec<u8>, Option<Vec<u8>>> = match kind {
                // Appends above the top.
                0 | 1 => {
                    let b = append_batch(prefix, next, len, 5, kind == 1);
                    next += len;
                    b
                }
                // Rewrites and deletes below the top.
                2 => (0..len.min(next))
                    .step_by(dup as usize)
                    .map(|id| {
                        let v = (id % 3 != 0).then(|| vec![7u8; (id % 11) as usize]);
                        (ikey(prefix, (id / 5) as u32, id), v)
                    })
                    .collect(),
                // Appends with a value too long to be inline in the middle.
                _ => {
                    let mut b = append_batch(prefix, next, len, 5, false);
                    next += len;
                    if let Some((_, v)) = b.iter_mut().nth((len / 2) as usize) {
                        *v = Some(vec![9u8; 6000]);
                    }
                    b
                }
            };
            let run: Vec<(&[u8], Option<&[u8]>)> =
                batch.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
            t.btree().apply_sorted_live(&run).unwrap();
            for (k, v) in batch {
                match v {
                    Some(v) => { model.insert(k, v); }
                    None => { model.remove(&k); }
                }
            }
            let r = t.verify().unwrap();
            prop_assert_eq!(r.entries as usize, model.len());
            prop_assert!(all(&t).into_iter().eq(model.clone()));
        }
    }
}
