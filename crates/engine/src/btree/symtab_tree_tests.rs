//! The read side in a tree: a root leaf built by hand with FSST cells (the write path is the
//! next piece of step 4) is read by `get`, cursors and `verify`, and the checks refuse a
//! leaf whose version the tree lacks and a value that decodes to another length.

use crate::error::StorageError;
use std::sync::Arc;

use zipdb_storage::io::SimStorage;
use zipdb_storage::pool::{BufferPool, PoolConfig};
use zipdb_storage::store::{PageStore, StoreConfig};
use zipdb_storage::{Codec, PageId, TreeId};

use super::tests_support::{sbtest_value, trained};
use crate::btree::compact::{build_compact_leaf, Entry, Fences, StoredValue};
use crate::btree::BTree;
use crate::format::{RecordCodec, TreeFormat};
use crate::Error;

fn tree_with(page: usize, pool_pages: usize, format: TreeFormat) -> BTree {
    let store = Arc::new(
        PageStore::create(
            Box::new(SimStorage::new("symtab")),
            StoreConfig { page_size: page },
        )
        .unwrap(),
    );
    let pool = BufferPool::new(
        store,
        PoolConfig {
            budget_bytes: pool_pages * page,
        },
    )
    .unwrap();
    BTree::create(pool, TreeId(1), format).unwrap()
}

const FSST: TreeFormat = TreeFormat {
    records: RecordCodec::Fsst,
    ..TreeFormat::compact(Codec::None)
};

fn fsst_tree() -> BTree {
    tree_with(16384, 64, FSST)
}

/// A 184-byte value shaped like the storage bench's sbtest row: sysbench's `c` (ten
/// 11-digit groups joined by '-'), a space, `pad` (five groups), then 6 digits of `k` (184 bytes).
fn sbtest184(i: u64) -> Vec<u8> {
    let mut v = sbtest_value(i);
    v.push(b' ');
    v.extend_from_slice(&sbtest_value(i ^ 0x5555)[..58]);
    v.extend(format!("{:06}", i % 1_000_000).bytes());
    assert_eq!(v.len(), 184);
    v
}

/// Text values of a few hundred bytes.
fn text(i: u64) -> Vec<u8> {
    const WORDS: [&str; 12] = [
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
    ];
    let n = 5 + (i % 60) as usize;
    let mut s = String::new();
    let mut x = i.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(WORDS[(x % 12) as usize]);
        s.push(' ');
    }
    s.into_bytes()
}

/// Random inserts, updates and deletes of sbtest-shaped and text values (plus the odd
/// overflow value) against a `BTreeMap`, with a pool far smaller than the tree, so leaves
/// are evicted and re-read; the tree trains after its first 16 KB of values.
fn model_fsst(page: usize, ops: u64, seed: u64) {
    model_fsst_as(FSST, page, ops, seed);
}

fn model_fsst_as(format: TreeFormat, page: usize, ops: u64, seed: u64) -> BTree {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    let bt = tree_with(page, 64, format);
    let mut model = std::collections::BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    for n in 0..ops {
        let id: u64 = rng.gen_range(0..ops / 2);
        let key = id.to_be_bytes().to_vec();
        match rng.gen_range(0..10) {
            0..=5 => {
                let v = sbtest184(n);
                assert_eq!(bt.upsert(&key, &v).unwrap(), model.insert(key, v).is_some());
            }
            6 => {
                let v = if n % 50 == 0 {
                    text(n).repeat(40)
                } else {
                    text(n)
                };
                assert_eq!(bt.upsert(&key, &v).unwrap(), model.insert(key, v).is_some());
            }
            7 | 8 => {
                assert_eq!(bt.delete(&key).unwrap(), model.remove(&key).is_some());
            }
            _ => {
                assert_eq!(bt.get(&key).unwrap().as_ref(), model.get(&key));
            }
        }
    }
    assert!(!bt.symbol_tables().is_empty(), "the tree trained");
    let rep = bt.verify().unwrap();
    // `verify` recounted the leaves on version 1.
    let pages = bt.symbol_tables().current().unwrap().pages();
    assert!(
        pages > 0 && pages <= rep.leaves,
        "{pages} of {} leaves",
        rep.leaves
    );
    assert_eq!(rep.entries, model.len() as u64);
    for (k, v) in &model {
        assert_eq!(bt.get(k).unwrap().as_ref(), Some(v));
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = bt
        .range::<std::ops::RangeFull>(..)
        .collect::<crate::Result<_>>()
        .unwrap();
    assert!(all.iter().map(|(k, v)| (k, v)).eq(model.iter()));
    // Bounded scans in both directions that stop early: values are decoded lazily, in
    // `next()`, so rows left in the cursor's buffer are never decoded.
    use std::ops::Bound;
    for lo in [0u64, 7, ops / 5, ops / 3] {
        let lo = lo.to_be_bytes().to_vec();
        let fwd: Vec<_> = bt
            .range_bounds(Bound::Included(&lo), Bound::Unbounded, false)
            .take(100)
            .collect::<crate::Result<_>>()
            .unwrap();
        assert!(fwd
            .iter()
            .map(|(k, v)| (k, v))
            .eq(model.range(lo.clone()..).take(100)));
        let rev: Vec<_> = bt
            .range_bounds(Bound::Unbounded, Bound::Excluded(&lo), true)
            .take(30)
            .collect::<crate::Result<_>>()
            .unwrap();
        assert!(rev
            .iter()
            .map(|(k, v)| (k, v))
            .eq(model.range(..lo.clone()).rev().take(30)));
    }
    bt
}

/// The model with the zstd cold layer (issue 19 step 8): leaves leave the 64-page pool as
/// zstd images and come back from them, and nothing is lost.
#[test]
fn model_16k_fsst_cold() {
    let bt = model_fsst_as(TreeFormat::FSST_ZSTD, 16384, 40_000, 3);
    let s = bt.pool.stats();
    assert!(s.encodes_zstd > 0 && s.decodes_zstd > 0, "{s:?}");
    assert_eq!(s.encodes_lz4 + s.encodes_zlib, 0, "{s:?}");
}

#[test]
fn model_4k_fsst_cold() {
    let bt = model_fsst_as(TreeFormat::FSST_ZSTD, 4096, 8_000, 4);
    let s = bt.pool.stats();
    assert!(s.encodes_zstd > 0 && s.decodes_zstd > 0, "{s:?}");
}

#[test]
fn model_16k_fsst() {
    model_fsst(16384, 20_000, 1);
}

#[test]
fn model_4k_fsst() {
    model_fsst(4096, 12_000, 2);
}

/// 10k sbtest-shaped rows (8-byte key, 184-byte value) in key order: an FSST tree needs
/// at most 0.6x the leaves of a classic one.
#[test]
fn fsst_leaves_against_classic() {
    let classic = tree_with(16384, 64, TreeFormat::classic(Codec::None));
    let fsst = fsst_tree();
    for i in 0..10_000u64 {
        let (k, v) = (i.to_be_bytes(), sbtest184(i));
        assert!(classic.insert(&k, &v).unwrap());
        assert!(fsst.insert(&k, &v).unwrap());
    }
    let (c, f) = (classic.verify().unwrap(), fsst.verify().unwrap());
    assert_eq!((c.entries, c.value_bytes), (f.entries, f.value_bytes));
    let ratio = f.leaves as f64 / c.leaves as f64;
    eprintln!(
        "leaves: classic {} fsst {} ratio {ratio:.3}",
        c.leaves, f.leaves
    );
    assert!(
        ratio <= 0.6,
        "fsst {} / classic {} leaves",
        f.leaves,
        c.leaves
    );
}

/// Rewrites the root leaf with rows `0..n`: even ids FSST-encoded, odd ones raw.
fn fill(bt: &BTree, version: u16, n: u64, lie_about_len: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let table = &bt.symbol_tables().current().unwrap().table;
    let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| (i.to_be_bytes().to_vec(), sbtest_value(i)))
        .collect();
    let codes: Vec<Vec<u8>> = rows
        .iter()
        .map(|(_, v)| {
            let mut c = Vec::new();
            table.encode(v, &mut c);
            c
        })
        .collect();
    let entries: Vec<Entry> = rows
        .iter()
        .zip(&codes)
        .enumerate()
        .map(|(i, ((k, v), c))| {
            if i % 2 == 0 {
                let len = v.len() + usize::from(lie_about_len);
                Entry::new(k, StoredValue::Fsst { bytes: c, len })
            } else {
                Entry::new(k, StoredValue::Raw(v))
            }
        })
        .collect();
    let root = bt.root();
    let mut g = bt.pool().write(root).unwrap();
    build_compact_leaf(
        root,
        &mut g,
        Fences::UNBOUNDED,
        version,
        PageId::NONE,
        &entries,
    )
    .unwrap();
    rows
}

#[test]
fn fsst_cells_read_by_get_cursor_and_verify() {
    let bt = fsst_tree();
    let (t, r) = trained();
    let v = bt.symbol_tables().install(t, r).unwrap();
    let rows = fill(&bt, v.0, 40, false);
    // The leaf was built by hand, past the page-count upkeep `verify` checks.
    bt.symbol_tables().page_added(v);
    for (k, want) in &rows {
        assert_eq!(bt.get(k).unwrap().as_ref(), Some(want));
        assert_eq!(bt.get_with(k, |b| b.len()).unwrap(), Some(want.len()));
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = bt
        .range::<std::ops::RangeFull>(..)
        .collect::<crate::Result<_>>()
        .unwrap();
    assert_eq!(scanned, rows);
    let rep = bt.verify().unwrap();
    assert_eq!(rep.entries, 40);
    assert_eq!(
        rep.value_bytes,
        rows.iter().map(|(_, v)| v.len() as u64).sum::<u64>()
    );
}

#[test]
fn fsst_leaf_with_unknown_version_or_wrong_length_is_corrupt() {
    let bt = fsst_tree();
    let (t, r) = trained();
    let v = bt.symbol_tables().install(t, r).unwrap();
    fill(&bt, v.0 + 1, 4, false);
    let e = bt.get(&0u64.to_be_bytes()).unwrap_err();
    assert!(
        matches!(e, Error::Storage(StorageError::Corrupt { .. }))
            && e.to_string().contains("does not have"),
        "{e}"
    );
    fill(&bt, v.0, 4, true);
    let e = bt.get(&0u64.to_be_bytes()).unwrap_err();
    assert!(e.to_string().contains("its cell says"), "{e}");
    assert!(bt.verify().is_err());
    // Version 0 with FSST cells: the node parser refuses them.
    fill(&bt, 0, 4, false);
    let e = bt.get(&0u64.to_be_bytes()).unwrap_err();
    assert!(e.to_string().contains("without a symbol table"), "{e}");
}

/// Leaf views (btree/leafview.rs) under a pool with room for them: writes, point reads and
/// bounded scans in both directions interleave at random, and every read matches a
/// `BTreeMap`. A view that outlived a change to its leaf would return the old value.
#[test]
fn model_fsst_with_leaf_views() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::ops::Bound;
    let bt = tree_with(4096, 4096, FSST);
    let mut model = std::collections::BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(9);
    let ops = 12_000u64;
    for n in 0..ops {
        let key = rng.gen_range(0..ops / 3).to_be_bytes().to_vec();
        match rng.gen_range(0..10) {
            0..=3 => {
                let v = if n % 7 == 0 { text(n) } else { sbtest184(n) };
                assert_eq!(bt.upsert(&key, &v).unwrap(), model.insert(key, v).is_some());
            }
            4 => {
                assert_eq!(bt.delete(&key).unwrap(), model.remove(&key).is_some());
            }
            5 | 6 => {
                assert_eq!(bt.get(&key).unwrap().as_ref(), model.get(&key));
            }
            _ => {
                let take = rng.gen_range(1..150);
                let reverse = rng.gen_bool(0.3);
                let got: Vec<_> = if reverse {
                    bt.range_bounds(Bound::Unbounded, Bound::Included(&key), true)
                        .take(take)
                        .collect::<crate::Result<_>>()
                        .unwrap()
                } else {
                    bt.range_bounds(Bound::Excluded(&key), Bound::Unbounded, false)
                        .take(take)
                        .collect::<crate::Result<_>>()
                        .unwrap()
                };
                let want: Vec<_> = if reverse {
                    model.range(..=key).rev().take(take).collect()
                } else {
                    model
                        .range((Bound::Excluded(key), Bound::Unbounded))
                        .take(take)
                        .collect()
                };
                assert!(
                    got.iter().map(|(k, v)| (k, v)).eq(want.into_iter()),
                    "op {n}"
                );
            }
        }
    }
    let s = bt.pool.stats().views;
    // Views were hit, and writes' changes applied to them (each checked against its leaf in
    // debug builds: btree/leafview.rs).
    assert!(s.hits > 1000 && s.stored > 0 && s.count > 0, "{s:?}");
    assert!(s.changed > 100, "{s:?}");
    bt.verify().unwrap();
    bt.pool.verify().unwrap();
}

/// Leaf views under threads: each thread writes and scans its own interleaved keys (ids
/// ≡ t mod 4, so every leaf is shared by all threads and its view is changed by several
/// writers), and every scan of its keys must match its own model.
#[test]
fn leaf_views_under_concurrent_writers() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::ops::Bound;
    let bt = Arc::new(tree_with(4096, 4096, FSST));
    let threads = 4u64;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let bt = Arc::clone(&bt);
            std::thread::spawn(move || {
                let mut model = std::collections::BTreeMap::new();
                let mut rng = SmallRng::seed_from_u64(100 + t);
                for n in 0..4_000u64 {
                    let id = rng.gen_range(0..1_000u64) * threads + t;
                    let key = id.to_be_bytes().to_vec();
                    match rng.gen_range(0..6) {
                        0 | 1 => {
                            let v = sbtest184(n * threads + t);
                            bt.upsert(&key, &v).unwrap();
                            model.insert(key, v);
                        }
                        2 => {
                            bt.delete(&key).unwrap();
                            model.remove(&key);
                        }
                        _ => {
                            let got: Vec<_> = bt
                                .range_bounds(Bound::Included(&key), Bound::Unbounded, false)
                                .take(120)
                                .collect::<crate::Result<Vec<_>>>()
                                .unwrap()
                                .into_iter()
                                .filter(|(k, _)| {
                                    u64::from_be_bytes(k[..8].try_into().unwrap()) % threads == t
                                })
                                .collect();
                            // The model's keys in the span the scan covered.
                            let last = got.last().map(|(k, _)| k.clone());
                            let want: Vec<_> = match &last {
                                Some(last) => model
                                    .range(key.clone()..=last.clone())
                                    .map(|(k, v)| (k.clone(), v.clone()))
                                    .collect(),
                                None => Vec::new(),
                            };
                            assert_eq!(got, want, "thread {t} op {n}");
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = bt.pool.stats().views;
    assert!(s.hits > 0 && s.changed > 0, "{s:?}");
    bt.verify().unwrap();
    bt.pool.verify().unwrap();
}
