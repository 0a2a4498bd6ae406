//! Compact trees (issue 19 step 3b) at the tree level: page counts against classic trees,
//! shapes with long shared prefixes and empty values, root split and collapse, and `verify`
//! catching leaves whose fences disagree with their parent. The model proptests are
//! `tests::model_{4k,16k}_compact` and `tests::apply_sorted_4k_compact`.

use crate::error::StorageError;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use zipdb_storage::{Codec, PageId};

use crate::btree::compact::{build_compact_leaf, CompactLeaf, Fences};
use crate::btree::node::Node;
use crate::format::TreeFormat;
use crate::tests::{opts, Disks};
use crate::{Database, Error, Tree};

const PAGE: usize = 16384;

fn db(page: usize) -> (Disks, Database) {
    crate::tests::db_4k_pages(page)
}

/// The storage bench's sbtest row: 8-byte big-endian id, 184-byte value.
fn sbtest_row(id: u64) -> (Vec<u8>, Vec<u8>) {
    let v: Vec<u8> = (0..184)
        .map(|i| b'0' + ((id as usize + i) % 10) as u8)
        .collect();
    (id.to_be_bytes().to_vec(), v)
}

/// A SQL (k, id) secondary-index entry: an 18-byte key (10-byte k encoding, 8-byte id) with
/// an empty value; k repeats, so neighbouring keys share long prefixes.
fn index_key(k: u32, id: u64) -> Vec<u8> {
    let mut key = vec![0x80, 0, 0, 0, 0, 0];
    key.extend_from_slice(&k.to_be_bytes());
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// Loads `rows` (in the given order) into a classic and a compact tree; returns the leaf
/// counts (classic, compact) after checking both trees hold the same entries.
fn leaves_for(rows: &[(Vec<u8>, Vec<u8>)]) -> (u64, u64) {
    let (_d, db) = db(PAGE);
    let classic = db.create_tree("classic", None).unwrap();
    let compact = db
        .create_tree_with("compact", TreeFormat::compact(Codec::None))
        .unwrap();
    for (k, v) in rows {
        assert!(classic.insert(k, v).unwrap());
        assert!(compact.insert(k, v).unwrap());
    }
    let (rc, rx) = (classic.verify().unwrap(), compact.verify().unwrap());
    assert_eq!(rc.entries, rows.len() as u64);
    assert_eq!(
        (rx.entries, rx.key_bytes, rx.value_bytes),
        (rc.entries, rc.key_bytes, rc.value_bytes)
    );
    assert!(rx.depth >= 2, "the compact tree split: {rx:?}");
    (rc.leaves, rx.leaves)
}

fn shuffled<T>(mut v: Vec<T>, seed: u64) -> Vec<T> {
    v.shuffle(&mut SmallRng::seed_from_u64(seed));
    v
}

/// Raw values: compact leaves save only the key and cell-header bytes. Measured with 16 KiB
/// pages, 10k rows, leaves classic → compact: sbtest rows 136 → 129 ascending (0.949),
/// 180 → 170 shuffled (0.944), as expected from 194 against 205 bytes a row (values are 184
/// of them); (k, id) index entries 32 → 16 shuffled (0.50, the design's estimate) and
/// 21 → 11 ascending (0.52). Ascending needs the top-up of `c_top_up_left`: the rightmost
/// leaf has an unbounded upper fence, so it strips no prefix and fills at about 23 bytes an
/// entry; the left part of its split keeps those entries at about 14 bytes each, and without
/// the top-up (21 → 15, 0.71) it stayed about 60% full. The bounds leave a little room for
/// split-policy changes.
#[test]
fn compact_leaves_take_fewer_pages_than_classic() {
    let sbtest: Vec<_> = (1..=10_000u64).map(sbtest_row).collect();
    let index: Vec<_> = (1..=10_000u64)
        .map(|id| (index_key((id * 7919 % 1000) as u32, id), Vec::new()))
        .collect();
    let mut index_sorted = index.clone();
    index_sorted.sort();
    for (name, rows, max_ratio) in [
        ("sbtest ascending", sbtest.clone(), 0.96),
        ("sbtest shuffled", shuffled(sbtest, 1), 0.96),
        ("index ascending", index_sorted, 0.6),
        ("index shuffled", shuffled(index, 2), 0.55),
    ] {
        let (c, x) = leaves_for(&rows);
        let ratio = x as f64 / c as f64;
        println!("{name}: classic {c} leaves, compact {x} leaves, ratio {ratio:.3}");
        assert!(
            ratio <= max_ratio,
            "{name}: {x}/{c} = {ratio:.3} > {max_ratio}"
        );
    }
}

fn all(t: &Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
    t.range(..).unwrap().map(|r| r.unwrap()).collect()
}

/// Keys sharing 0..300-byte prefixes, empty and overflow values, every key deleted again:
/// splits with long fences, merges, redistribution, and the collapse back to a root leaf,
/// checking `verify` (fences against separators) along the way.
#[test]
fn long_prefixes_empty_values_and_collapse_4k() {
    let (_d, db) = db(4096);
    let t = db
        .create_tree_with("t", TreeFormat::compact(Codec::None))
        .unwrap();
    let key = |i: u32| {
        let mut k = vec![b'p'; [0, 5, 120, 300][(i % 4) as usize]];
        k.extend_from_slice(format!("{:06}", i / 4).as_bytes());
        k
    };
    let val = |i: u32| match i % 7 {
        0 => vec![0xAB; 5000],
        1 | 2 => Vec::new(),
        _ => vec![i as u8; (i % 90) as usize],
    };
    let mut model = std::collections::BTreeMap::new();
    for i in shuffled((0..4000u32).collect(), 3) {
        t.upsert(&key(i), &val(i)).unwrap();
        model.insert(key(i), val(i));
    }
    let r = t.verify().unwrap();
    assert!(r.depth >= 3, "{r:?}");
    assert_eq!(all(&t), model.clone().into_iter().collect::<Vec<_>>());
    let rev: Vec<_> = t.range_rev(..).unwrap().map(|r| r.unwrap().0).collect();
    assert!(rev.iter().rev().eq(model.keys()));
    for (n, i) in shuffled((0..4000u32).collect(), 4).into_iter().enumerate() {
        assert!(t.delete(&key(i)).unwrap());
        model.remove(&key(i));
        if n % 500 == 0 {
            t.verify().unwrap();
            assert_eq!(t.get(&key(i)).unwrap(), None);
        }
    }
    let r = t.verify().unwrap();
    assert_eq!(
        (r.depth, r.entries, r.leaves, r.overflow_pages),
        (1, 0, 1, 0)
    );
    // The root is a compact leaf again, with unbounded fences.
    let g = t.btree().pool().read(t.btree().root()).unwrap();
    let root = CompactLeaf::parse(t.btree().root(), &g).unwrap();
    assert_eq!(root.fences(), Fences::UNBOUNDED);
}

/// A leaf whose fences disagree with the separators above it is reported by `verify`, naming
/// the leaf.
#[test]
fn verify_catches_fences_that_differ_from_the_parent() {
    let (_d, db) = db(4096);
    let t = db
        .create_tree_with("t", TreeFormat::compact(Codec::None))
        .unwrap();
    for id in 1..=2000u64 {
        let (k, v) = sbtest_row(id);
        t.insert(&k, &v).unwrap();
    }
    t.verify().unwrap();
    let bt = t.btree();
    let mut id = bt.root();
    // Leftmost leaf: its lower fence is unbounded, its upper one a separator.
    loop {
        let g = bt.pool().read(id).unwrap();
        match Node::parse(id, &g) {
            Ok(n) if !n.is_leaf() => id = n.child(0).unwrap(),
            _ => break,
        }
    }
    let leaf: PageId = id;
    {
        let mut g = bt.pool().write(leaf).unwrap();
        let (entries, link, upper) = {
            let l = CompactLeaf::parse(leaf, &g).unwrap();
            (
                l.collect_entries().unwrap(),
                l.link(),
                l.upper_fence().unwrap().to_vec(),
            )
        };
        // Still a valid leaf on its own: a wider upper fence holds the same keys.
        let mut wider = upper.clone();
        wider.push(0xFF);
        let f = Fences {
            lower: None,
            upper: Some(&wider),
        };
        build_compact_leaf(leaf, &mut g, f, 0, link, &entries).unwrap();
        CompactLeaf::parse(leaf, &g).unwrap().verify().unwrap();
    }
    match t.verify() {
        Err(Error::Storage(StorageError::Corrupt { page, detail })) => {
            assert_eq!(page, leaf);
            assert!(detail.contains("parent's separators"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

/// Compact leaves with FSST values (issue 19 step 4) through the database: reopen keeps the
/// tree's symbol-table version and decodes every row; a crash after training and before the
/// next checkpoint replays into a tree whose catalog has no table (values come back raw).
mod fsst {
    use super::*;
    use crate::btree::symtab::FIRST_TRAINING_BYTES;
    use crate::catalog::TableVersion;
    use crate::format::RecordCodec;
    use std::ops::Bound;

    fn fsst_format() -> TreeFormat {
        TreeFormat {
            records: RecordCodec::Fsst,
            ..TreeFormat::compact(Codec::None)
        }
    }

    use crate::test_support::sbtest_c as c_value;

    fn check_all(t: &Tree, n: u64, ctx: &str) {
        for id in 0..n {
            assert_eq!(
                t.get(&id.to_be_bytes()).unwrap(),
                Some(c_value(id)),
                "{ctx}: row {id}"
            );
        }
        assert_eq!(t.verify().unwrap().entries, n, "{ctx}");
    }

    #[test]
    fn reopen_keeps_versions_and_decodes() {
        let (disks, db) = db(PAGE);
        let t = db.create_tree_with("f", fsst_format()).unwrap();
        let n = 3_000u64;
        for id in 0..n {
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
        }
        let cur = t.btree().symbol_tables().current().unwrap();
        assert_eq!(cur.version, TableVersion(1));
        let table = cur.table.clone();
        assert!(n * 119 > FIRST_TRAINING_BYTES as u64);
        check_all(&t, n, "before close");
        db.close().unwrap();
        let db = disks.open(opts(PAGE, Codec::None)).unwrap();
        let t = db.open_tree("f").unwrap();
        let cur = t.btree().symbol_tables().current().unwrap();
        assert_eq!((cur.version, &cur.table), (TableVersion(1), &table));
        check_all(&t, n, "after reopen");
        // Writes after the reopen keep encoding with the loaded version.
        for id in n..n + 500 {
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
        }
        check_all(&t, n + 500, "after more writes");
    }

    /// Inserts and deletes of one row check whether it exists without decoding it (records
    /// decoded stays put) and with the same answers a get gives; `BTree::contains` agrees
    /// with `get` on compact and classic trees, for inline and overflow values.
    #[test]
    fn existence_checks_decode_nothing() {
        let (_disks, db) = db(PAGE);
        let t = db.create_tree_with("f", fsst_format()).unwrap();
        let classic = db.create_tree("c", Some(Codec::None)).unwrap();
        let n = 3_000u64;
        for id in 0..n {
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
        }
        assert!(!t.btree().symbol_tables().is_empty());
        let decoded = || {
            let s = db.stats();
            let f = s.trees.into_iter().find(|x| x.name == "f").unwrap();
            f.records.unwrap().records_decoded
        };
        let d0 = decoded();
        for id in (0..n).step_by(7) {
            let k = id.to_be_bytes();
            assert!(!t.insert(&k, b"other").unwrap(), "row {id} exists");
            assert!(t.delete(&k).unwrap());
            assert!(!t.delete(&k).unwrap());
            assert!(t.insert(&k, &c_value(id)).unwrap());
        }
        assert_eq!(decoded(), d0, "existence checks decoded rows");
        check_all(&t, n, "after the deletes and re-inserts");
        let big = vec![0x5Au8; 3 * PAGE];
        for tree in [&t, &classic] {
            let bt = tree.btree();
            for id in [n, n + 2] {
                tree.upsert(&id.to_be_bytes(), &big).unwrap();
            }
            for id in [0, 1, n - 1, n, n + 1, n + 2, u64::MAX] {
                let k = id.to_be_bytes();
                assert_eq!(
                    bt.contains(&k).unwrap(),
                    bt.get(&k).unwrap().is_some(),
                    "{id}"
                );
            }
            assert!(
                !bt.contains(&vec![1u8; 5 * PAGE]).unwrap(),
                "a key over the limit"
            );
        }
    }

    /// The record-codec counters (design §2.8) move by exactly the records written after
    /// training, decoded by gets, and returned by a scan.
    #[test]
    fn record_counters_count_writes_gets_and_scans() {
        let (_disks, db) = db(PAGE);
        let t = db.create_tree_with("f", fsst_format()).unwrap();
        let classic = db.create_tree("c", Some(Codec::None)).unwrap();
        classic.insert(b"k", b"v").unwrap();
        let stats = |name: &str| {
            let s = db.stats();
            let tree = s.trees.into_iter().find(|x| x.name == name).unwrap();
            tree.records
        };
        assert_eq!(
            stats("c"),
            None,
            "a tree without a record codec has no record stats"
        );
        let s0 = stats("f").unwrap();
        assert_eq!(
            (s0.version, s0.records_encoded, s0.records_decoded),
            (0, 0, 0)
        );
        let n = 3_000u64;
        let mut after_training = Vec::new();
        for id in 0..n {
            let trained = !t.btree().symbol_tables().is_empty();
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
            if trained {
                after_training.push(id);
            }
        }
        assert!(!after_training.is_empty() && after_training.len() < n as usize);
        let s1 = stats("f").unwrap();
        let cur = t.btree().symbol_tables().current().unwrap();
        assert_eq!(s1.version, cur.version.0);
        assert_eq!(s1.versions, 1);
        assert_eq!(s1.trained_ratio_per_mille, cur.trained_ratio.0);
        // Digit groups always encode shorter with a table trained on digit groups.
        assert_eq!(s1.records_encoded, after_training.len() as u64);
        assert_eq!(s1.records_raw, 0);
        let raw_bytes: u64 = after_training
            .iter()
            .map(|&i| c_value(i).len() as u64)
            .sum();
        assert_eq!(s1.bytes_in, raw_bytes);
        assert!(s1.bytes_out > 0 && s1.bytes_out < s1.bytes_in / 2, "{s1:?}");
        assert!(s1.encode_ns > 0, "the first encode is timed: {s1:?}");
        // Inserts decode nothing (no existing value is read back).
        assert_eq!(s1.records_decoded, 0);

        // Bytes the table cannot shorten are stored raw and counted as such.
        let mut x = 0x1234_5678_9abc_def1u64;
        let noise: Vec<u8> = (0..120)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(t.insert(&n.to_be_bytes(), &noise).unwrap());
        let s2 = stats("f").unwrap();
        assert_eq!(
            (s2.records_encoded, s2.records_raw),
            (s1.records_encoded, 1)
        );
        assert_eq!((s2.bytes_in, s2.bytes_out), (s1.bytes_in, s1.bytes_out));

        // One decode per get of an encoded row; none for a raw row or a missing key.
        let gets = &after_training[..500];
        for &id in gets {
            assert_eq!(t.get(&id.to_be_bytes()).unwrap(), Some(c_value(id)));
        }
        assert_eq!(t.get(&n.to_be_bytes()).unwrap(), Some(noise));
        assert_eq!(t.get(&(n + 1).to_be_bytes()).unwrap(), None);
        let s3 = stats("f").unwrap();
        assert_eq!(s3.records_decoded, gets.len() as u64);
        assert!(s3.decode_ns > 0, "the first decode is timed: {s3:?}");

        // Without leaf views, a scan decodes each row it returns, once.
        let (lo, hi) = (after_training[100], after_training[400]);
        let (lo_key, hi_key) = (lo.to_be_bytes(), hi.to_be_bytes());
        let range: (Bound<&[u8]>, Bound<&[u8]>) =
            (Bound::Included(&lo_key[..]), Bound::Excluded(&hi_key[..]));
        let scan = || {
            let mut c = t.range(range).unwrap();
            let mut rows = 0u64;
            while let Some(r) = c.next_ref() {
                r.unwrap();
                rows += 1;
            }
            rows
        };
        let pool = t.btree().pool();
        pool.set_views(false);
        let rows = scan();
        assert_eq!(rows, hi - lo);
        let s4 = stats("f").unwrap();
        assert_eq!(s4.records_decoded - s3.records_decoded, rows);
        assert_eq!(
            s4.records_encoded, s2.records_encoded,
            "reads encode nothing"
        );

        // With them (the pool has room), the first scan still decodes row by row (a first
        // visit leaves a tombstone: storage views.rs), the second decodes whole leaves and
        // keeps them, and the third decodes nothing. Point reads decode their row (leafview.rs).
        pool.set_views(true);
        assert_eq!(scan(), rows);
        let s4b = stats("f").unwrap();
        assert_eq!(s4b.records_decoded - s4.records_decoded, rows);
        assert_eq!(scan(), rows);
        let s5 = stats("f").unwrap();
        assert!(s5.records_decoded - s4b.records_decoded >= rows, "{s5:?}");
        assert!(pool.stats().views.count > 0, "{:?}", pool.stats().views);
        assert_eq!(scan(), rows);
        assert_eq!(stats("f").unwrap().records_decoded, s5.records_decoded);
        // A write describes its change to the leaf's view: the next scan applies it (no
        // decode) and returns the new value.
        let id = after_training[200];
        let new = c_value(id + 7_777);
        t.upsert(&id.to_be_bytes(), &new).unwrap();
        let stored = pool.stats().views.stored;
        let mut c = t.range(range).unwrap();
        let mut seen = None;
        while let Some(r) = c.next_ref() {
            let (k, v) = r.unwrap();
            if k == id.to_be_bytes() {
                seen = Some(v.to_vec());
            }
        }
        drop(c);
        assert_eq!(seen, Some(new));
        assert_eq!(stats("f").unwrap().records_decoded, s5.records_decoded);
        assert!(
            pool.stats().views.stored > stored,
            "the applied view is kept"
        );
        pool.verify().unwrap();
    }

    #[test]
    fn crash_after_training_before_checkpoint_replays() {
        let (disks, db) = db(PAGE);
        let t = db.create_tree_with("f", fsst_format()).unwrap();
        db.checkpoint().unwrap();
        let n = 3_000u64;
        for id in 0..n {
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
        }
        assert!(!t.btree().symbol_tables().is_empty(), "trained");
        let crashed = disks.crash();
        drop(t);
        drop(db);
        let db = crashed.open(opts(PAGE, Codec::None)).unwrap();
        let t = db.open_tree("f").unwrap();
        // The checkpoint's catalog had no table, so no page names one; replay wrote the rows
        // raw (its ordinary-path writes may train the tree again on the way).
        check_all(&t, n, "after replay");
        // Further writes train the tree again and mix with the raw rows.
        for id in n..n + 500 {
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
        }
        assert!(!t.btree().symbol_tables().is_empty(), "trained again");
        assert_eq!(
            t.btree().symbol_tables().current().unwrap().version,
            TableVersion(1)
        );
        check_all(&t, n + 500, "after more writes");
        db.checkpoint().unwrap();
        db.close().unwrap();
        let db = crashed.open(opts(PAGE, Codec::None)).unwrap();
        check_all(&db.open_tree("f").unwrap(), n + 500, "after a clean reopen");
    }

    /// Rows written after a checkpoint that saved version 1 are replayed encoded with it:
    /// the replayed tree is as dense as the one before the crash.
    #[test]
    fn replay_encodes_with_the_checkpointed_version() {
        let (disks, db) = db(PAGE);
        let t = db.create_tree_with("f", fsst_format()).unwrap();
        let n = 3_000u64;
        for id in 0..n {
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
        }
        db.checkpoint().unwrap();
        for id in n..3 * n {
            assert!(t.insert(&id.to_be_bytes(), &c_value(id)).unwrap());
        }
        let before = t.verify().unwrap().leaves;
        let crashed = disks.crash();
        drop(t);
        drop(db);
        let db = crashed.open(opts(PAGE, Codec::None)).unwrap();
        let t = db.open_tree("f").unwrap();
        assert_eq!(
            t.btree().symbol_tables().current().unwrap().version,
            TableVersion(1)
        );
        check_all(&t, 3 * n, "after replay");
        let after = t.verify().unwrap().leaves;
        // Raw rows would need about twice the leaves for the replayed two thirds.
        assert!(
            after * 10 <= before * 12,
            "leaves before the crash {before}, after replay {after}"
        );
    }
}
