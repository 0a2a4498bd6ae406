//! Engine tests: model-based property tests, concurrency stress, corruption, API behaviour.

use crate::error::{RequestError, StorageError};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_storage::io::SimStorage;
use zipdb_storage::Codec;

use crate::format::TreeFormat;
use crate::{Database, Error, Options, Tree};

pub(crate) fn opts(page_size: usize, codec: Codec) -> Options {
    Options {
        page_size,
        pool_bytes: 256 * page_size,
        codec,
        wal_bytes: 4 << 20,
        recovery_progress: false,
        ..Options::default()
    }
}

/// A database on simulated disks with `page`-byte pages and a pool of 4,096 pages.
pub(crate) fn db_4k_pages(page: usize) -> (Disks, Database) {
    let disks = Disks::new();
    let mut o = opts(page, Codec::None);
    o.pool_bytes = 4096 * page;
    let db = disks.open(o).unwrap();
    (disks, db)
}

/// The data file and the WAL of one database, on simulated disks.
#[derive(Clone)]
pub(crate) struct Disks {
    pub data: SimStorage,
    pub wal: SimStorage,
}

impl Disks {
    pub fn new() -> Disks {
        Disks {
            data: SimStorage::new("data"),
            wal: SimStorage::new("wal"),
        }
    }

    /// What survives a power failure now: synced writes only (the WAL is frozen first; see
    /// the note in `crash_recovers_every_commit_from_the_wal`).
    pub fn crash(&self) -> Disks {
        let wal = self.wal.crash();
        Disks {
            data: self.data.crash(),
            wal,
        }
    }

    pub fn open(&self, o: Options) -> crate::Result<Database> {
        Database::open_storage(Box::new(self.data.clone()), Box::new(self.wal.clone()), o)
    }
}

fn sim_db(page_size: usize, codec: Codec) -> (Disks, Database) {
    let disk = Disks::new();
    let db = disk.open(opts(page_size, codec)).unwrap();
    (disk, db)
}

pub(crate) fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

fn collect(it: impl Iterator<Item = crate::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| r.unwrap()).collect()
}

pub(crate) fn model_range(
    m: &BTreeMap<Vec<u8>, Vec<u8>>,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    rev: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let empty = match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b) | Bound::Included(b)) => {
            a >= b
        }
        _ => false,
    };
    if empty {
        return Vec::new();
    }
    let it = m
        .range::<[u8], _>((lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()));
    if rev {
        it.rev().collect()
    } else {
        it.collect()
    }
}

/// Keys inserted in ascending order (a sysbench prepare, an AUTO_INCREMENT load) fill their
/// leaves to about 15/16 instead of half: the split of the last leaf keeps the left page full.
/// Random order still splits balanced.
#[test]
fn ascending_inserts_fill_leaves() {
    let (_disk, db) = sim_db(4096, Codec::None);
    let asc = db.create_tree("asc", None).unwrap();
    let rnd = db.create_tree("rnd", None).unwrap();
    let n = 20_000u32;
    for i in 0..n {
        let k = format!("key{i:08}");
        assert!(asc.insert(k.as_bytes(), &value(40, i as u8)).unwrap());
        let k = format!("key{:08}", (i * 7919) % n);
        assert!(rnd.insert(k.as_bytes(), &value(40, i as u8)).unwrap());
    }
    let a = asc.verify().unwrap();
    let r = rnd.verify().unwrap();
    assert_eq!((a.entries, r.entries), (n as u64, n as u64));
    let payload = a.key_bytes + a.value_bytes;
    // Bytes of keys and values per leaf, against the page size.
    let fill = |leaves: u64| payload as f64 / (leaves as f64 * 4096.0);
    assert!(
        fill(a.leaves) > 0.7,
        "ascending: {a:?}, fill {:.2}",
        fill(a.leaves)
    );
    assert!(
        fill(r.leaves) < 0.65,
        "random: {r:?}, fill {:.2}",
        fill(r.leaves)
    );
    assert!(a.leaves * 10 < r.leaves * 8, "ascending {a:?} random {r:?}");
}

#[test]
fn basic_ops_splits_merges_and_collapse() {
    let (_disk, db) = sim_db(4096, Codec::None);
    let t = db.create_tree("t", None).unwrap();
    let n = 5000u32;
    for i in 0..n {
        let k = format!("key{:08}", (i * 7919) % n);
        assert!(t.insert(k.as_bytes(), &value(20, i as u8)).unwrap());
    }
    assert!(!t.insert(b"key00000001", b"x").unwrap());
    let r = t.verify().unwrap();
    assert_eq!(r.entries, n as u64);
    assert!(r.depth >= 2, "{r:?}");
    for i in 0..n {
        let k = format!("key{i:08}");
        assert!(t.get(k.as_bytes()).unwrap().is_some());
    }
    let all = collect(t.range(..).unwrap());
    assert_eq!(all.len(), n as usize);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    let rev = collect(t.range_rev(..).unwrap());
    assert_eq!(rev.len(), n as usize);
    assert!(rev.windows(2).all(|w| w[0].0 > w[1].0));
    for i in 0..n {
        let k = format!("key{i:08}");
        assert!(t.delete(k.as_bytes()).unwrap());
        if i % 1000 == 0 {
            t.verify().unwrap();
        }
    }
    let r = t.verify().unwrap();
    assert_eq!(r.entries, 0);
    assert_eq!(r.depth, 1);
    assert_eq!(r.leaves, 1);
    // Everything but the root leaf was freed.
    let s = db.stats();
    assert_eq!(s.trees[0].pages, 1);
    db.verify().unwrap();
}

#[test]
fn overflow_values_are_stored_replaced_and_freed() {
    let (_disk, db) = sim_db(4096, Codec::Zstd(1));
    let t = db.create_tree("big", None).unwrap();
    let big = value(50_000, 3);
    t.insert(b"a", &big).unwrap();
    t.insert(b"b", &value(1500, 4)).unwrap(); // > page/4: overflow
    t.insert(b"c", &value(900, 5)).unwrap(); // inline
    assert_eq!(t.get(b"a").unwrap().unwrap(), big);
    let r = t.verify().unwrap();
    assert_eq!(r.overflow_pages, 50_000usize.div_ceil(4096 - 32) as u64 + 1);
    let pages_before = db.stats().trees[0].pages;
    assert!(t.upsert(b"a", b"small").unwrap());
    assert_eq!(t.get(b"a").unwrap().unwrap(), b"small");
    assert!(db.stats().trees[0].pages < pages_before);
    // insert of an existing key with an overflow value leaves nothing behind
    assert!(!t.insert(b"c", &big).unwrap());
    assert_eq!(t.verify().unwrap().overflow_pages, 1);
    assert!(t.delete(b"b").unwrap());
    assert_eq!(t.verify().unwrap().overflow_pages, 0);
    assert_eq!(db.stats().trees[0].pages, 1);
    let got = t.get_with(b"c", |v| v.len()).unwrap();
    assert_eq!(got, Some(900));
    assert_eq!(t.get_with(b"zz", |v| v.len()).unwrap(), None);
}

#[test]
fn key_limits_are_typed_errors() {
    let (_disk, db) = sim_db(4096, Codec::None);
    let t = db.create_tree("t", None).unwrap();
    let max = t.max_key_len();
    assert!(max >= 400);
    let ok = vec![b'k'; max];
    t.insert(&ok, b"v").unwrap();
    let long = vec![b'k'; max + 1];
    assert!(matches!(
        t.insert(&long, b"v"),
        Err(Error::Request(RequestError::KeyTooLarge { .. }))
    ));
    assert!(matches!(
        t.upsert(&long, b"v"),
        Err(Error::Request(RequestError::KeyTooLarge { .. }))
    ));
    assert_eq!(t.get(&long).unwrap(), None);
    assert!(!t.delete(&long).unwrap());
    let mut tx = db.begin();
    assert!(matches!(
        tx.put(&t, &long, b"v"),
        Err(Error::Request(RequestError::KeyTooLarge { .. }))
    ));
    // Empty keys and values are fine.
    t.insert(b"", b"").unwrap();
    assert_eq!(t.get(b"").unwrap(), Some(Vec::new()));
    // Many max-length keys force deep trees with long separators.
    for i in 0..300u32 {
        let mut k = vec![b'x'; max - 4];
        k.extend_from_slice(&i.to_be_bytes());
        t.insert(&k, &value(100, 1)).unwrap();
    }
    let r = t.verify().unwrap();
    assert!(r.depth >= 3, "{r:?}");
    for i in 0..300u32 {
        let mut k = vec![b'x'; max - 4];
        k.extend_from_slice(&i.to_be_bytes());
        assert!(t.delete(&k).unwrap());
    }
    t.verify().unwrap();
}

#[test]
fn corrupt_node_is_an_error_naming_the_page() {
    let (_disk, db) = sim_db(4096, Codec::None);
    let t = db.create_tree("t", None).unwrap();
    for i in 0..2000u32 {
        t.insert(format!("{i:06}").as_bytes(), b"value").unwrap();
    }
    let root = t.btree().root();
    let child = {
        let g = db.pool().read(root).unwrap();
        let n = crate::btree::node::Node::parse(root, &g).unwrap();
        n.child(1).unwrap()
    };
    {
        let mut g = db.pool().write(child).unwrap();
        let len = g.len();
        for (i, b) in g[20..len].iter_mut().enumerate() {
            *b = (i * 31 % 256) as u8;
        }
    }
    let mut saw_error = false;
    for i in 0..2000u32 {
        match t.get(format!("{i:06}").as_bytes()) {
            Ok(_) => {}
            Err(Error::Storage(StorageError::Corrupt { page, .. })) => {
                assert_eq!(page, child);
                saw_error = true;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(saw_error);
    assert!(matches!(
        t.verify(),
        Err(Error::Storage(StorageError::Corrupt { .. }))
    ));
    let r: Vec<_> = t.range(..).unwrap().collect();
    assert!(r.iter().any(|e| e.is_err()));
    let _ = t.insert(b"001000x", b"v"); // no panic
    let _ = t.delete(b"001001"); // no panic
}

#[test]
fn catalog_checkpoint_reopen_and_drop() {
    let (disk, db) = sim_db(8192, Codec::Lz4);
    let a = db.create_tree("a", None).unwrap();
    let b = db.create_tree("b", Some(Codec::None)).unwrap();
    assert!(matches!(
        db.create_tree("a", None),
        Err(Error::Request(RequestError::TreeExists(_)))
    ));
    assert!(matches!(
        db.create_tree("", None),
        Err(Error::Request(RequestError::InvalidName(_)))
    ));
    for i in 0..1000u32 {
        a.insert(&i.to_be_bytes(), &value(30, 1)).unwrap();
        b.insert(&i.to_be_bytes(), &value(3000, 2)).unwrap();
    }
    db.close().unwrap();
    let disk = disk.crash();
    let db = disk.open(opts(8192, Codec::Lz4)).unwrap();
    assert_eq!(db.page_size(), 8192);
    assert_eq!(db.tree_names(), vec!["a".to_string(), "b".to_string()]);
    let a = db.open_tree("a").unwrap();
    let b = db.open_tree("b").unwrap();
    assert_eq!(a.codec(), Codec::Lz4);
    assert_eq!(b.codec(), Codec::None);
    assert_eq!(b.get(&7u32.to_be_bytes()).unwrap().unwrap(), value(3000, 2));
    assert_eq!(a.range(..).unwrap().count(), 1000);
    let s = db.stats();
    assert_eq!(s.trees.len(), 2);
    assert!(s.trees.iter().all(|t| t.pages > 1 && t.physical_bytes > 0));
    let lz = s.trees.iter().find(|t| t.name == "a").unwrap();
    assert!(lz.physical_bytes < lz.logical_bytes, "{lz:?}");
    let b_pages = s.trees.iter().find(|t| t.name == "b").unwrap().pages;
    assert!(b_pages > 100);
    db.drop_tree("b").unwrap();
    assert!(matches!(
        b.get(b"x"),
        Err(Error::Request(RequestError::NoSuchTree(_)))
    ));
    assert!(matches!(
        db.open_tree("b"),
        Err(Error::Request(RequestError::NoSuchTree(_)))
    ));
    let s = db.stats();
    assert_eq!(s.trees.len(), 1);
    db.verify().unwrap();
    // The new tree gets a fresh id; pages of the dropped tree are reused.
    let c = db.create_tree("c", None).unwrap();
    assert!(c.id() > a.id());
    c.insert(b"k", b"v").unwrap();
    db.checkpoint().unwrap();
    drop(db);
    let db = disk.crash().open(opts(16384, Codec::DEFAULT)).unwrap();
    assert_eq!(db.tree_names(), vec!["a".to_string(), "c".to_string()]);
    assert_eq!(db.open_tree("c").unwrap().get(b"k").unwrap().unwrap(), b"v");
    db.verify().unwrap();
}

#[test]
fn transactions_overlay_commit_rollback() {
    let (_disk, db) = sim_db(4096, Codec::None);
    let t = db.create_tree("t", None).unwrap();
    let u = db.create_tree("u", None).unwrap();
    for i in 0..10u8 {
        t.insert(&[i], &[i]).unwrap();
    }
    let mut tx = db.begin();
    tx.put(&t, &[3], b"new").unwrap();
    tx.delete(&t, &[4]).unwrap();
    tx.put(&t, &[20], b"x").unwrap();
    tx.put(&u, b"u", b"1").unwrap();
    assert_eq!(tx.get(&t, &[3]).unwrap().unwrap(), b"new");
    assert_eq!(tx.get(&t, &[4]).unwrap(), None);
    assert_eq!(tx.get(&t, &[5]).unwrap().unwrap(), vec![5]);
    assert_eq!(t.get(&[3]).unwrap().unwrap(), vec![3]);
    let keys: Vec<Vec<u8>> = collect(tx.scan(&t, ..).unwrap())
        .into_iter()
        .map(|e| e.0)
        .collect();
    let expect: Vec<Vec<u8>> = [0u8, 1, 2, 3, 5, 6, 7, 8, 9, 20]
        .iter()
        .map(|&k| vec![k])
        .collect();
    assert_eq!(keys, expect);
    let rev: Vec<Vec<u8>> = collect(tx.scan_rev(&t, ..).unwrap())
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(rev, expect.iter().rev().cloned().collect::<Vec<_>>());
    let some = collect(
        tx.scan(
            &t,
            (Bound::Included(&[3u8][..]), Bound::Excluded(&[6u8][..])),
        )
        .unwrap(),
    );
    assert_eq!(some, vec![(vec![3], b"new".to_vec()), (vec![5], vec![5])]);
    tx.commit().unwrap();
    assert_eq!(t.get(&[3]).unwrap().unwrap(), b"new");
    assert_eq!(t.get(&[4]).unwrap(), None);
    assert_eq!(u.get(b"u").unwrap().unwrap(), b"1");
    let mut tx = db.begin();
    tx.put(&t, &[7], b"gone").unwrap();
    tx.rollback();
    assert_eq!(t.get(&[7]).unwrap().unwrap(), vec![7]);
}

#[test]
fn crash_recovers_every_commit_from_the_wal() {
    let (disk, db) = sim_db(4096, Codec::Zstd(1));
    let t = db.create_tree("t", None).unwrap();
    for i in 0..300u32 {
        t.insert(&i.to_be_bytes(), b"one").unwrap();
    }
    db.checkpoint().unwrap();
    for i in 300..600u32 {
        t.insert(&i.to_be_bytes(), b"two").unwrap();
    }
    for i in 0..100u32 {
        t.delete(&i.to_be_bytes()).unwrap();
    }
    db.pool().flush_all().unwrap(); // pages written back, but no checkpoint
    let db2 = disk.crash().open(opts(16384, Codec::DEFAULT)).unwrap();
    let report = db2.recovery_report().expect("recovered");
    assert!(report.records >= 400, "{report:?}");
    let t2 = db2.open_tree("t").unwrap();
    let all = collect(t2.range(..).unwrap());
    assert_eq!(all.len(), 500);
    assert_eq!(all[0].0, 100u32.to_be_bytes());
    assert_eq!(all[499].0, 599u32.to_be_bytes());
    assert_eq!(all[499].1, b"two");
    db2.verify().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Model-based property test.

#[derive(Debug, Clone)]
enum Op {
    Insert(u16, u8, u32),
    Upsert(u16, u8, u32),
    Delete(u16, u8),
    Get(u16, u8),
    Range(Option<(u16, bool)>, Option<(u16, bool)>, bool),
    /// Inserts `count` consecutive keys (deepens the tree).
    Bulk(u16, u16, u8),
    /// Deletes every model key in [start, start + count) (forces merges).
    BulkDelete(u16, u16),
    Checkpoint,
    /// Checkpoint, then reopen over the surviving disk.
    Reopen,
    /// Reopen without a checkpoint: back to the last checkpoint's contents.
    Crash,
}

const PREFIXES: [usize; 4] = [0, 12, 150, 400];

fn key(n: u16, class: u8) -> Vec<u8> {
    let mut k = vec![b'p'; PREFIXES[class as usize % 4]];
    k.extend_from_slice(format!("{n:05}").as_bytes());
    k
}

fn bound_key(n: u16) -> Vec<u8> {
    key(n, 0)
}

/// Value sizes: mostly small, some medium, some overflow (large or > page/4).
fn value_len(sel: u32) -> usize {
    match sel % 16 {
        0..=9 => (sel as usize / 16) % 40,
        10..=13 => 100 + (sel as usize / 16) % 900,
        14 => 1100 + (sel as usize / 16) % 3000,
        _ => 5000 + (sel as usize / 16) % 30_000,
    }
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let k = 0u16..3000;
    let c = 0u8..4;
    prop_oneof![
        30 => (k.clone(), c.clone(), any::<u32>()).prop_map(|(k, c, v)| Op::Insert(k, c, v)),
        15 => (k.clone(), c.clone(), any::<u32>()).prop_map(|(k, c, v)| Op::Upsert(k, c, v)),
        20 => (k.clone(), c.clone()).prop_map(|(k, c)| Op::Delete(k, c)),
        10 => (k.clone(), c).prop_map(|(k, c)| Op::Get(k, c)),
        8 => (
            proptest::option::of((k.clone(), any::<bool>())),
            proptest::option::of((k.clone(), any::<bool>())),
            any::<bool>()
        )
            .prop_map(|(lo, hi, rev)| Op::Range(lo, hi, rev)),
        3 => (k.clone(), 1u16..400, 0u8..4).prop_map(|(s, n, c)| Op::Bulk(s, n, c)),
        3 => (k, 1u16..1500).prop_map(|(s, n)| Op::BulkDelete(s, n)),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

/// The tree under test: classic with the database's codec, or compact (raw values) with it.
fn create_model_tree(db: &Database, codec: Codec, compact: bool) -> Tree {
    if compact {
        let t = db
            .create_tree_with("m", TreeFormat::compact(codec))
            .unwrap();
        assert!(t.btree().format().nodes == crate::format::NodeFormat::Compact);
        t
    } else {
        db.create_tree("m", None).unwrap()
    }
}

fn run_model(page_size: usize, codec: Codec, ops: &[Op]) -> Result<(), TestCaseError> {
    run_model_with(page_size, codec, false, ops)
}

fn run_model_with(
    page_size: usize,
    codec: Codec,
    compact: bool,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let (mut disk, mut db) = sim_db(page_size, codec);
    let mut t = create_model_tree(&db, codec, compact);
    db.checkpoint().unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(k, c, v) => {
                let (k, v) = (key(*k, *c), value(value_len(*v), *v as u8));
                let fresh = !model.contains_key(&k);
                prop_assert_eq!(t.insert(&k, &v).unwrap(), fresh);
                model.entry(k).or_insert(v);
            }
            Op::Upsert(k, c, v) => {
                let (k, v) = (key(*k, *c), value(value_len(*v), *v as u8));
                prop_assert_eq!(t.upsert(&k, &v).unwrap(), model.insert(k, v).is_some());
            }
            Op::Delete(k, c) => {
                let k = key(*k, *c);
                prop_assert_eq!(t.delete(&k).unwrap(), model.remove(&k).is_some());
            }
            Op::Get(k, c) => {
                let k = key(*k, *c);
                let got = t.get(&k).unwrap();
                prop_assert_eq!(got.as_ref(), model.get(&k));
            }
            Op::Range(lo, hi, rev) => {
                let lo_k = lo.map(|(n, inc)| (bound_key(n), inc));
                let hi_k = hi.map(|(n, inc)| (bound_key(n), inc));
                let b = |x: &Option<(Vec<u8>, bool)>| -> Bound<Vec<u8>> {
                    match x {
                        None => Bound::Unbounded,
                        Some((k, true)) => Bound::Included(k.clone()),
                        Some((k, false)) => Bound::Excluded(k.clone()),
                    }
                };
                let (lb, hb) = (b(&lo_k), b(&hi_k));
                let (lr, hr) = (
                    lb.as_ref().map(|v| v.as_slice()),
                    hb.as_ref().map(|v| v.as_slice()),
                );
                let got = if *rev {
                    collect(t.range_rev((lr, hr)).unwrap())
                } else {
                    collect(t.range((lr, hr)).unwrap())
                };
                prop_assert_eq!(got, model_range(&model, lr, hr, *rev));
            }
            Op::Bulk(s, n, c) => {
                for i in *s..s.saturating_add(*n).min(3000) {
                    let (k, v) = (key(i, *c), value((i % 50) as usize, i as u8));
                    t.upsert(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            Op::BulkDelete(s, n) => {
                let lo = bound_key(*s);
                let hi = bound_key(s.saturating_add(*n));
                let victims: Vec<Vec<u8>> = model
                    .keys()
                    .filter(|k| **k >= lo && **k < hi)
                    .cloned()
                    .collect();
                for k in victims {
                    prop_assert!(t.delete(&k).unwrap());
                    model.remove(&k);
                }
            }
            Op::Checkpoint => {
                db.checkpoint().unwrap();
            }
            Op::Reopen | Op::Crash => {
                // Every write was a synced commit: a crash loses none of them.
                if matches!(op, Op::Reopen) {
                    db.checkpoint().unwrap();
                }
                let survivor = disk.crash();
                drop(t);
                drop(db);
                disk = survivor;
                db = disk.open(opts(page_size, codec)).unwrap();
                t = db.open_tree("m").unwrap();
            }
        }
    }
    let r = t.verify().unwrap();
    prop_assert_eq!(r.entries as usize, model.len());
    assert_matches_model(&db, &t, &model)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, max_shrink_iters: 300, ..ProptestConfig::default() })]

    #[test]
    fn model_4k_none(ops in proptest::collection::vec(op_strategy(), 1..400)) {
        run_model(4096, Codec::None, &ops)?;
    }

    #[test]
    fn model_4k_zstd(ops in proptest::collection::vec(op_strategy(), 1..400)) {
        run_model(4096, Codec::Zstd(1), &ops)?;
    }

    #[test]
    fn model_16k_none(ops in proptest::collection::vec(op_strategy(), 1..400)) {
        run_model(16384, Codec::None, &ops)?;
    }

    #[test]
    fn model_16k_zstd(ops in proptest::collection::vec(op_strategy(), 1..400)) {
        run_model(16384, Codec::Zstd(1), &ops)?;
    }

    #[test]
    fn model_4k_compact(ops in proptest::collection::vec(op_strategy(), 1..400)) {
        run_model_with(4096, Codec::None, true, &ops)?;
    }

    #[test]
    fn model_16k_compact(ops in proptest::collection::vec(op_strategy(), 1..400)) {
        run_model_with(16384, Codec::Zstd(1), true, &ops)?;
    }
}

/// The tree holds exactly the model's entries, in order, and the database verifies.
fn assert_matches_model(
    db: &Database,
    t: &Tree,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
) -> Result<(), TestCaseError> {
    let all = collect(t.range(..).unwrap());
    prop_assert_eq!(all.len(), model.len());
    prop_assert!(all
        .iter()
        .zip(model.iter())
        .all(|(a, b)| a.0 == *b.0 && a.1 == *b.1));
    db.verify().unwrap();
    Ok(())
}

/// `BTree::apply_sorted` (recovery's batched writes) against the model: batches of sorted,
/// distinct-key upserts and deletes of every size class, including overflow values and values
/// that change size, over a tree that grows and shrinks enough to split and merge.
fn run_apply_sorted(
    page_size: usize,
    codec: Codec,
    compact: bool,
    batches: &[Vec<(u16, u8, Option<u32>)>],
) -> Result<(), TestCaseError> {
    let (_disk, db) = sim_db(page_size, codec);
    let t = create_model_tree(&db, codec, compact);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for batch in batches {
        // Last write of a key wins, as in a de-duplicated replay batch.
        let mut writes: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        for (k, c, v) in batch {
            writes.insert(key(*k, *c), v.map(|v| value(value_len(v), v as u8)));
        }
        let run: Vec<(&[u8], Option<&[u8]>)> = writes
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        t.btree().apply_sorted(&run).unwrap();
        for (k, v) in writes {
            match v {
                Some(v) => {
                    model.insert(k, v);
                }
                None => {
                    model.remove(&k);
                }
            }
        }
        let r = t.verify().unwrap();
        prop_assert_eq!(r.entries as usize, model.len());
    }
    assert_matches_model(&db, &t, &model)
}

fn apply_batch_strategy() -> impl Strategy<Value = Vec<(u16, u8, Option<u32>)>> {
    // Deletes are a third of the writes, so that later batches empty leaves again.
    let write = (
        0u16..2000,
        0u8..4,
        prop_oneof![2 => any::<u32>().prop_map(Some), 1 => Just(None)],
    );
    proptest::collection::vec(write, 1..600)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn apply_sorted_4k_none(batches in proptest::collection::vec(apply_batch_strategy(), 1..8)) {
        run_apply_sorted(4096, Codec::None, false, &batches)?;
    }

    #[test]
    fn apply_sorted_4k_compact(batches in proptest::collection::vec(apply_batch_strategy(), 1..8)) {
        run_apply_sorted(4096, Codec::None, true, &batches)?;
    }

    #[test]
    fn apply_sorted_16k_zstd(batches in proptest::collection::vec(apply_batch_strategy(), 1..8)) {
        run_apply_sorted(16384, Codec::Zstd(1), false, &batches)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Concurrency.

#[test]
fn concurrent_stress_with_checkpoints() {
    stress(4096, 4);
}

/// The same with a 96-frame pool, so misses, demotions, compressed hits and evictions happen
/// under the latches (it once caught a lost update under concurrent eviction, see
/// `pool_lost_update_repro`).
#[test]
fn concurrent_stress_small_pool() {
    stress(96, 4);
}

/// The same on a compact tree: its leaf splits, merges and fences under the same latching.
#[test]
fn concurrent_stress_small_pool_compact() {
    stress_with(96, 4, true);
}

fn stress(pool_pages: usize, default_threads: u32) {
    stress_with(pool_pages, default_threads, false)
}

fn stress_with(pool_pages: usize, default_threads: u32, compact: bool) {
    let pool_pages = std::env::var("STRESS_POOL_PAGES").map_or(pool_pages, |v| v.parse().unwrap());
    let db = Disks::new()
        .open(Options {
            pool_bytes: pool_pages * 4096,
            ..opts(4096, Codec::Zstd(1))
        })
        .unwrap();
    let t = match compact {
        true => db.create_tree_with("s", TreeFormat::compact(Codec::Zstd(1))),
        false => db.create_tree("s", None),
    }
    .unwrap();
    let threads: u32 =
        std::env::var("STRESS_THREADS").map_or(default_threads, |v| v.parse().unwrap());
    const OPS: u32 = 30_000;
    const PER: u32 = 3000;
    let shared_key = |i: u32| format!("shared{:05}", i % 2000).into_bytes();
    let own_key = |th: u32, i: u32| format!("own{th}-{:05}", i % PER).into_bytes();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ckpt = {
        let db = db.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.checkpoint().unwrap();
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            n
        })
    };
    let handles: Vec<_> = (0..threads)
        .map(|th| {
            let t: Tree = t.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(th as u64 + 1);
                let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
                for _ in 0..OPS {
                    let i: u32 = rng.gen_range(0..PER);
                    let vlen = if rng.gen_ratio(1, 50) {
                        3000
                    } else {
                        rng.gen_range(0..60)
                    };
                    let v = value(vlen, i as u8);
                    match rng.gen_range(0..100) {
                        0..=29 => {
                            let k = own_key(th, i);
                            let fresh = !model.contains_key(&k);
                            assert_eq!(t.insert(&k, &v).unwrap(), fresh);
                            model.entry(k).or_insert(v);
                        }
                        30..=44 => {
                            let k = own_key(th, i);
                            assert_eq!(t.upsert(&k, &v).unwrap(), model.insert(k, v).is_some());
                        }
                        45..=69 => {
                            let k = own_key(th, i);
                            assert_eq!(t.delete(&k).unwrap(), model.remove(&k).is_some());
                        }
                        70..=79 => {
                            let k = own_key(th, i);
                            assert_eq!(t.get(&k).unwrap().as_ref(), model.get(&k));
                        }
                        80..=89 => {
                            let k = shared_key(i);
                            match rng.gen_range(0..3) {
                                0 => {
                                    t.upsert(&k, &v).unwrap();
                                }
                                1 => {
                                    t.delete(&k).unwrap();
                                }
                                _ => {
                                    t.get(&k).unwrap();
                                }
                            }
                        }
                        _ => {
                            // A bounded scan over this thread's keys must match the model
                            // exactly; a scan over shared keys must be strictly ordered.
                            let lo = own_key(th, i);
                            let hi = own_key(th, i + 200);
                            let rev = rng.gen_bool(0.5);
                            let b = (
                                Bound::Included(lo.as_slice()),
                                Bound::Excluded(hi.as_slice()),
                            );
                            let got: Vec<_> = if rev {
                                collect(t.range_rev(b).unwrap().take(50))
                            } else {
                                collect(t.range(b).unwrap().take(50))
                            };
                            let want: Vec<_> = model_range(&model, b.0, b.1, rev)
                                .into_iter()
                                .take(50)
                                .collect();
                            assert_eq!(got, want);
                            let s = format!("shared{:05}", i % 2000).into_bytes();
                            let keys: Vec<_> = collect(
                                t.range((Bound::Included(s.as_slice()), Bound::Unbounded))
                                    .unwrap()
                                    .take(30),
                            );
                            assert!(keys.windows(2).all(|w| w[0].0 < w[1].0));
                        }
                    }
                }
                model
            })
        })
        .collect();
    let models: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(ckpt.join().unwrap() > 0);
    let r = db.verify().unwrap();
    assert_eq!(r.len(), 1);
    if pool_pages < 1000 {
        let s = db.stats().pool;
        assert!(
            s.hit_compressed > 0 && s.demotions > 0 && s.miss > 0,
            "the small pool must exercise both tiers: {s:?}"
        );
    }
    for (th, model) in models.iter().enumerate() {
        let lo = format!("own{th}-").into_bytes();
        let hi = format!("own{th}.").into_bytes();
        let got = collect(
            t.range((
                Bound::Included(lo.as_slice()),
                Bound::Excluded(hi.as_slice()),
            ))
            .unwrap(),
        );
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "thread {th} contents differ");
    }
}

#[test]
fn concurrent_inserts_then_deletes_same_region() {
    inserts_then_deletes_same_region(false);
}

#[test]
fn concurrent_inserts_then_deletes_same_region_compact() {
    inserts_then_deletes_same_region(true);
}

fn inserts_then_deletes_same_region(compact: bool) {
    // All threads hammer the same few leaves: splits, merges and root changes under contention.
    let (_disk, db) = sim_db(4096, Codec::None);
    let t = create_model_tree(&db, Codec::None, compact);
    let handles: Vec<_> = (0..4u32)
        .map(|th| {
            let t = t.clone();
            std::thread::spawn(move || {
                for round in 0..3u32 {
                    for i in 0..1500u32 {
                        let k = format!("{i:05}-{th}");
                        assert!(t.insert(k.as_bytes(), &value(40, round as u8)).unwrap());
                    }
                    for i in 0..1500u32 {
                        let k = format!("{i:05}-{th}");
                        assert!(t.delete(k.as_bytes()).unwrap());
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let r = t.verify().unwrap();
    assert_eq!(r.entries, 0);
    assert_eq!(r.depth, 1);
}

/// Timing of point lookups on a 3-level in-memory tree. Run with
/// `cargo test -p zipdb-engine --release bench_point_get -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_point_get() {
    for codec in [Codec::None, Codec::Zstd(1)] {
        let db = Disks::new()
            .open(Options {
                pool_bytes: 512 << 20,
                ..opts(16384, codec)
            })
            .unwrap();
        let t = db.create_tree("b", None).unwrap();
        let n = 400_000u64;
        let mut rng = SmallRng::seed_from_u64(7);
        let v = value(100, 1);
        let start = std::time::Instant::now();
        for i in 0..n {
            let k = (i * 7919 % n).to_be_bytes();
            t.upsert(&k, &v).unwrap();
        }
        let load = start.elapsed();
        let r = t.verify().unwrap();
        let lookups = 2_000_000u64;
        let keys: Vec<[u8; 8]> = (0..lookups)
            .map(|_| rng.gen_range(0..n).to_be_bytes())
            .collect();
        let start = std::time::Instant::now();
        let mut found = 0usize;
        for k in &keys {
            found += t.get_with(k, |v| v.len()).unwrap().unwrap_or(0);
        }
        let el = start.elapsed();
        assert_eq!(found, lookups as usize * 100);
        // The same lookups over 1000 hot keys (the touched lines stay in the CPU caches).
        let hot: Vec<[u8; 8]> = keys.iter().take(1000).copied().collect();
        let start = std::time::Instant::now();
        for _ in 0..(lookups / 1000) {
            for k in &hot {
                found += t.get_with(k, |v| v.len()).unwrap().unwrap_or(0);
            }
        }
        let hot_el = start.elapsed();
        assert!(found > lookups as usize * 100);
        let start = std::time::Instant::now();
        let mut scanned = 0usize;
        for e in t.range(..).unwrap() {
            scanned += e.unwrap().1.len();
        }
        let scan = start.elapsed();
        assert_eq!(scanned, n as usize * 100);
        println!(
            "{codec}: depth {} leaves {}: load {:.0} ns/upsert, get_with {:.0} ns/lookup (random), {:.0} ns (hot keys), full scan {:.0} ns/entry",
            r.depth,
            r.leaves,
            load.as_nanos() as f64 / n as f64,
            el.as_nanos() as f64 / lookups as f64,
            hot_el.as_nanos() as f64 / lookups as f64,
            scan.as_nanos() as f64 / n as f64,
        );
    }
}

/// Buffer-pool-only reproducer of the lost update seen by `concurrent_stress_small_pool`:
/// each thread counts in its own pages under exclusive latches with a 96-frame pool; with 4+
/// threads a page reads back an older count. Not a B-tree problem; for the pool owner.
#[test]
fn pool_lost_update_repro() {
    use zipdb_storage::pool::{BufferPool, PoolConfig};
    use zipdb_storage::store::{PageStore, StoreConfig};
    use zipdb_storage::{PageType, TreeId};
    let store = Arc::new(
        PageStore::create(
            Box::new(SimStorage::new("p")),
            StoreConfig { page_size: 4096 },
        )
        .unwrap(),
    );
    let pool = BufferPool::new(
        store,
        PoolConfig {
            budget_bytes: std::env::var("STRESS_POOL_PAGES").map_or(96, |v| v.parse().unwrap())
                * 4096,
        },
    )
    .unwrap();
    let threads: u64 = std::env::var("STRESS_THREADS").map_or(4, |v| v.parse().unwrap());
    let per = 100u64;
    let mut ids = Vec::new();
    for _ in 0..threads * per {
        let g = pool
            .allocate(PageType::Leaf, TreeId(1), Codec::Zstd(1))
            .unwrap();
        ids.push(g.id());
    }
    let ids = Arc::new(ids);
    let hs: Vec<_> = (0..threads)
        .map(|th| {
            let pool = pool.clone();
            let ids = ids.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(th);
                let mut counts = vec![0u64; per as usize];
                for _ in 0..20_000 {
                    let j = rng.gen_range(0..per) as usize;
                    let id = ids[(th * per) as usize + j];
                    if rng.gen_bool(0.5) {
                        let mut g = pool.write(id).unwrap();
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&g[100..108]);
                        let v = u64::from_le_bytes(b);
                        assert_eq!(v, counts[j], "page {id:?} lost an update");
                        g[100..108].copy_from_slice(&(v + 1).to_le_bytes());
                        for x in g[200..1200].iter_mut() {
                            *x = rng.gen();
                        }
                        counts[j] += 1;
                    } else {
                        let g = pool.read(id).unwrap();
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&g[100..108]);
                        assert_eq!(u64::from_le_bytes(b), counts[j], "page {id:?} read stale");
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

/// Opens a database on `disks` with its warm-restart list on `warm`.
fn open_warm(disks: &Disks, warm: &SimStorage, o: Options) -> Database {
    Database::open_storage_with_warm(
        Box::new(disks.data.clone()),
        Box::new(disks.wal.clone()),
        Box::new(warm.clone()),
        o,
    )
    .unwrap()
}

fn wait_warm_done(db: &Database) -> zipdb_storage::pool::PoolStats {
    let t0 = std::time::Instant::now();
    loop {
        let s = db.stats().pool;
        if s.warm_load_done == 1 {
            return s;
        }
        assert!(t0.elapsed().as_secs() < 30, "warm load hangs: {s:?}");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Builds a database larger than its pool, reads a hot range until shutdown, and returns
/// the disks and the hot keys.
fn warm_fixture(warm: &SimStorage) -> (Disks, Vec<Vec<u8>>) {
    let disks = Disks::new();
    let db = open_warm(&disks, warm, opts(4096, Codec::Zstd(1)));
    let t = db.create_tree("t", None).unwrap();
    for i in 0..6000u32 {
        t.insert(&i.to_be_bytes(), &value(300, i as u8)).unwrap();
    }
    db.checkpoint().unwrap();
    let hot: Vec<Vec<u8>> = (0..600u32).map(|i| i.to_be_bytes().to_vec()).collect();
    for _ in 0..3 {
        for k in &hot {
            assert!(t.get(k).unwrap().is_some());
        }
    }
    let s = db.stats();
    assert!(
        s.trees[0].pages > 256,
        "the data must not fit the pool: {:?}",
        s.trees
    );
    db.close().unwrap();
    (disks, hot)
}

/// Misses taken by reading `keys` once.
fn misses_reading(db: &Database, keys: &[Vec<u8>]) -> u64 {
    let t = db.open_tree("t").unwrap();
    let before = db.stats().pool.miss;
    for k in keys {
        assert!(t.get(k).unwrap().is_some());
    }
    db.stats().pool.miss - before
}

/// After a clean shutdown and restart, the pages in use at shutdown are back in the pool
/// before the first read: the hot range reads without misses. Without the list it does not.
#[test]
fn warm_restart_reloads_the_pages_in_use_at_shutdown() {
    let warm = SimStorage::new("warm");
    let (disks, hot) = warm_fixture(&warm);

    let db = open_warm(&disks, &warm, opts(4096, Codec::Zstd(1)));
    let s = wait_warm_done(&db);
    assert!(s.warm_pages_listed > 0, "{s:?}");
    assert!(s.warm_pages_loaded > 100, "{s:?}");
    assert_eq!(s.warm_pages_skipped, 0, "{s:?}");
    let warm_misses = misses_reading(&db, &hot);
    db.close().unwrap();

    let cold = Options {
        warm_restart: false,
        ..opts(4096, Codec::Zstd(1))
    };
    let db = open_warm(&disks, &warm, cold);
    let s = db.stats().pool;
    assert_eq!((s.warm_load_done, s.warm_pages_loaded), (1, 0), "{s:?}");
    let cold_misses = misses_reading(&db, &hot);
    db.close().unwrap();
    eprintln!("hot range after restart: {warm_misses} misses warm, {cold_misses} cold");
    assert!(cold_misses >= 40, "{cold_misses}");
    assert!(
        warm_misses * 10 <= cold_misses,
        "{warm_misses} vs {cold_misses}"
    );
}

/// A damaged list is ignored: the database opens, cold, with all its data.
#[test]
fn warm_restart_ignores_a_corrupt_list() {
    let warm = SimStorage::new("warm");
    let (disks, hot) = warm_fixture(&warm);
    warm.corrupt(30, 0xFF);
    let db = open_warm(&disks, &warm, opts(4096, Codec::Zstd(1)));
    let s = db.stats().pool;
    assert_eq!(
        (s.warm_load_done, s.warm_pages_listed, s.warm_pages_loaded),
        (1, 0, 0),
        "{s:?}"
    );
    assert!(misses_reading(&db, &hot) > 0);
    assert_eq!(db.open_tree("t").unwrap().range(..).unwrap().count(), 6000);
    db.close().unwrap();
    // The close wrote a fresh, valid list.
    let db = open_warm(&disks, &warm, opts(4096, Codec::Zstd(1)));
    assert!(wait_warm_done(&db).warm_pages_loaded > 0);
    db.close().unwrap();
}

/// First point reads after a restart, with and without the warm-restart list, on a real file
/// read with O_DIRECT (so the OS page cache does not hide the misses). Run with
/// `ZIPDB_BENCH_DIR=/path/on/disk cargo test -p zipdb-engine --release bench_warm_restart --
/// --ignored --nocapture`.
#[test]
#[ignore]
fn bench_warm_restart() {
    let dir = std::path::PathBuf::from(
        std::env::var("ZIPDB_BENCH_DIR").unwrap_or_else(|_| "target/zipdb-warm-bench".into()),
    )
    .join(format!("warm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let n = 400_000u64;
    let o = |warm_restart| Options {
        pool_bytes: 256 << 20,
        direct_io: true,
        warm_restart,
        recovery_progress: false,
        ..Options::default()
    };
    {
        let db = Database::open(&dir, o(true)).unwrap();
        let t = db.create_tree("b", None).unwrap();
        let v = value(200, 1);
        for i in 0..n {
            t.upsert(&(i * 7919 % n).to_be_bytes(), &v).unwrap();
        }
        db.close().unwrap();
    }
    let mut rng = SmallRng::seed_from_u64(11);
    let keys: Vec<[u8; 8]> = (0..1000)
        .map(|_| rng.gen_range(0..n).to_be_bytes())
        .collect();
    let first_reads = |db: &Database| {
        let t = db.open_tree("b").unwrap();
        let miss0 = db.stats().pool.miss;
        let start = std::time::Instant::now();
        for k in &keys {
            assert!(t.get_with(k, |v| v.len()).unwrap().is_some());
        }
        (start.elapsed(), db.stats().pool.miss - miss0)
    };
    for (name, warm, wait) in [
        ("cold (warm_restart off)", false, false),
        ("warm, reads start at once", true, false),
        ("warm, after the loader finished", true, true),
    ] {
        let t0 = std::time::Instant::now();
        let db = Database::open(&dir, o(warm)).unwrap();
        let opened = t0.elapsed();
        let loaded = if wait {
            let s = wait_warm_done(&db);
            format!(
                "; loader: {} pages in {:.0} ms",
                s.warm_pages_loaded,
                t0.elapsed().as_secs_f64() * 1e3
            )
        } else {
            String::new()
        };
        let (el, misses) = first_reads(&db);
        println!(
            "{name}: open {:.0} ms{loaded}; first 1000 random point reads {:.1} ms ({:.1} us/read), {misses} pool misses",
            opened.as_secs_f64() * 1e3,
            el.as_secs_f64() * 1e3,
            el.as_secs_f64() * 1e6 / 1000.0,
        );
        // Keep the list as the first close left it: every run starts from the same list.
        if warm {
            drop(db);
        } else {
            db.close().unwrap();
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
