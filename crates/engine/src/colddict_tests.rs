//! The cold layer's per-tree zstd dictionary (`btree::colddict`): an `fsst+zstd` tree trains
//! one on its first values, pages leaving the pool use it only once a checkpoint holding it
//! is durable, it survives reopen (from the catalog) and a crash before that checkpoint loses
//! it without losing a row (the tree collects again).

use std::collections::BTreeMap;

use zipdb_storage::dict::DictVersion;
use zipdb_storage::Codec;

use crate::btree::colddict::ColdDictConfig;
use crate::format::TreeFormat;
use crate::tests::{opts, Disks};
use crate::Tree;

const PAGE: usize = 4096;

/// A pool of 64 pages (the minimum): the tree below needs several times that, so most leaves leave it.
fn options() -> crate::Options {
    let mut o = opts(PAGE, Codec::None);
    o.pool_bytes = 64 * PAGE;
    // Checkpoints only where the tests take them: they decide when a dictionary is durable.
    o.wal_bytes = 256 << 20;
    o.checkpoint_interval = std::time::Duration::from_secs(3600);
    o
}

/// Train after 96 KiB of codes, into at most 16 KiB.
fn small(t: &Tree) {
    t.btree().cold_dict().set_config(ColdDictConfig {
        sample_bytes: 96 * 1024,
        dict_bytes: 16 * 1024,
        level: 3,
    });
}

/// Paragraph-like text: one of a few boilerplate sentences, then words.
fn text(i: u64) -> Vec<u8> {
    const HEAD: [&str; 4] = [
        "Permission is hereby granted, free of charge, to any person obtaining a copy of this software. ",
        "This program is distributed in the hope that it will be useful, but WITHOUT ANY WARRANTY. ",
        "On Debian systems, the complete text of the GNU General Public License can be found in /usr/share/common-licenses. ",
        "",
    ];
    const WORDS: [&str; 12] = [
        "package",
        "upstream",
        "release",
        "changelog",
        "fix",
        "build",
        "debian",
        "version",
        "closes",
        "bug",
        "new",
        "the",
    ];
    let words = crate::test_support::word_salad(i, &WORDS, 10 + (i % 30) as usize);
    format!("{}{words}", HEAD[(i % 4) as usize]).into_bytes()
}

fn key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

fn check(t: &Tree, model: &BTreeMap<u64, Vec<u8>>, ctx: &str) {
    for (id, v) in model {
        assert_eq!(
            t.get(&key(*id)).unwrap().as_ref(),
            Some(v),
            "{ctx}: row {id}"
        );
    }
    assert_eq!(t.verify().unwrap().entries, model.len() as u64, "{ctx}");
}

fn fill(t: &Tree, model: &mut BTreeMap<u64, Vec<u8>>, ids: std::ops::Range<u64>) {
    for id in ids {
        t.upsert(&key(id), &text(id)).unwrap();
        model.insert(id, text(id));
    }
}

/// Waits (at most 10 s) for the training thread, if one runs.
fn settle(t: &Tree) {
    for _ in 0..1000 {
        if !t.btree().cold_dict().training() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("training did not end: {:?}", t.btree().cold_dict());
}

/// Waits (at most 10 s) for the checkpointer to make the tree's trained dictionary durable.
fn wait_in_pool(t: &Tree) {
    for _ in 0..1000 {
        if t.btree().cold_dict().state().1 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!(
        "no checkpoint took the dictionary: {:?}",
        t.btree().cold_dict()
    );
}

#[test]
fn a_trained_dictionary_is_checkpointed_used_and_reloaded() {
    let disks = Disks::new();
    let db = disks.open(options()).unwrap();
    let t = db.create_tree_with("t", TreeFormat::FSST_ZSTD).unwrap();
    assert_eq!(t.btree().format().cold, Codec::ZstdDict);
    small(&t);
    let mut model = BTreeMap::new();
    assert_eq!(t.btree().cold_dict().status().0.as_str(), "collecting");
    fill(&t, &mut model, 0..3_000);
    settle(&t);
    let (status, bytes) = t.btree().cold_dict().status();
    assert!(
        matches!(status.as_str(), "waiting" | "in use") && bytes > 1024,
        "{status:?} {bytes}"
    );
    assert!(
        t.btree().cold_dict().state().0,
        "{:?}",
        t.btree().cold_dict()
    );
    // Training asked for a checkpoint (the timed one is an hour away here); the pool has the
    // dictionary once that checkpoint is durable.
    wait_in_pool(&t);
    assert_eq!(t.btree().cold_dict().status().0.as_str(), "in use");
    assert!(!db.pool().page_dicts().any_waiting());
    let id = t.btree().tree_id();
    assert_eq!(db.pool().page_dicts().versions(id), vec![DictVersion(1)]);
    fill(&t, &mut model, 3_000..30_000);
    // Rewrite everything so that leaves leave the pool again.
    for id in 0..30_000u64 {
        let v = text(id + 7);
        t.upsert(&key(id), &v).unwrap();
        model.insert(id, v);
    }
    check(&t, &model, "after rewriting");
    let s = db.pool().stats();
    assert!(s.encodes_zstd_dict > 0 && s.decodes_zstd_dict > 0, "{s:?}");
    db.checkpoint().unwrap();
    drop(t);
    db.close().unwrap();

    // Reopened: the dictionary comes from the catalog, before any page is read.
    let db = disks.open(options()).unwrap();
    let t = db.open_tree("t").unwrap();
    assert_eq!(t.btree().cold_dict().state(), (true, true, 0));
    assert_eq!(db.pool().page_dicts().versions(id), vec![DictVersion(1)]);
    check(&t, &model, "after reopen");
    assert!(
        db.pool().stats().decodes_zstd_dict > 0,
        "{:?}",
        db.pool().stats()
    );
    // Dropping the tree forgets its dictionary.
    drop(t);
    db.drop_tree("t").unwrap();
    assert!(db.pool().page_dicts().versions(id).is_empty());
}

/// Crashes at points before, during and after training (the checkpointer runs on its own):
/// whatever the last durable catalog holds, every committed row reads back, so no durable
/// page names a dictionary that the crash lost; a tree that lost its dictionary trains again.
#[test]
fn crashes_around_training_lose_no_rows() {
    let mut reopened_with = Vec::new();
    for crash_at in [200u64, 900, 1_500, 3_000, 12_000] {
        let disks = Disks::new();
        let db = disks.open(options()).unwrap();
        let t = db.create_tree_with("t", TreeFormat::FSST_ZSTD).unwrap();
        small(&t);
        let mut model = BTreeMap::new();
        fill(&t, &mut model, 0..crash_at);
        if crash_at == 12_000 {
            // The last point: after the dictionary's checkpoint for sure.
            settle(&t);
            wait_in_pool(&t);
        }
        let crashed = disks.crash();
        drop(t);
        drop(db);
        let db = crashed.open(options()).unwrap();
        let t = db.open_tree("t").unwrap();
        let ctx = format!("crash after {crash_at} rows");
        let (trained, in_pool, _) = t.btree().cold_dict().state();
        assert_eq!(
            trained, in_pool,
            "{ctx}: a loaded dictionary is in the pool"
        );
        reopened_with.push(trained);
        check(&t, &model, &ctx);
        small(&t);
        fill(&t, &mut model, 100_000..104_000);
        settle(&t);
        assert!(t.btree().cold_dict().state().0, "{ctx}: trained (again)");
        db.checkpoint().unwrap();
        assert!(t.btree().cold_dict().state().1, "{ctx}");
        fill(&t, &mut model, 104_000..124_000);
        check(&t, &model, &format!("{ctx}, then more rows"));
    }
    // The first crash comes before training, the last long after the checkpoint it asked for.
    assert_eq!(reopened_with.first(), Some(&false), "{reopened_with:?}");
    assert_eq!(reopened_with.last(), Some(&true), "{reopened_with:?}");
}

#[test]
fn trees_made_before_dictionaries_keep_plain_zstd() {
    let disks = Disks::new();
    let db = disks.open(options()).unwrap();
    let old = TreeFormat {
        cold: TreeFormat::COLD_ZSTD,
        ..TreeFormat::FSST
    };
    let t = db.create_tree_with("t", old).unwrap();
    small(&t);
    let mut model = BTreeMap::new();
    fill(&t, &mut model, 0..30_000);
    db.checkpoint().unwrap();
    assert_eq!(t.btree().cold_dict().state(), (false, false, 0));
    assert_eq!(t.btree().cold_dict().status().0.as_str(), "off");
    let s = db.pool().stats();
    assert!(s.encodes_zstd > 0 && s.encodes_zstd_dict == 0, "{s:?}");
    check(&t, &model, "old format");
}

/// sbtest's random digits: a dictionary saves under 5% against plain zstd:1 on the held-out
/// quarter of the sample, so the tree does not keep one (and does not pay level 3 for nothing).
#[test]
fn random_digits_keep_no_dictionary() {
    let disks = Disks::new();
    let db = disks.open(options()).unwrap();
    let t = db.create_tree_with("t", TreeFormat::FSST_ZSTD).unwrap();
    small(&t);
    let mut model = BTreeMap::new();
    for id in 0..3_000u64 {
        let v = crate::test_support::sbtest_c(id);
        t.upsert(&key(id), &v).unwrap();
        model.insert(id, v);
    }
    settle(&t);
    let (trained, in_pool, rejected) = t.btree().cold_dict().state();
    assert_eq!((trained, in_pool, rejected), (false, false, 1));
    assert_eq!(t.btree().cold_dict().status().0.as_str(), "rejected");
    assert!(!db.pool().page_dicts().any_waiting());
    check(&t, &model, "digits");
}
