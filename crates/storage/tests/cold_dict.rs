//! The cold layer with a per-tree zstd dictionary (`Codec::ZstdDict`, storage `dict.rs`): a
//! page leaving the pool is written with its tree's newest dictionary when the tree has one,
//! with zstd:1 when it has none, and reads back whole either way; an image naming a
//! dictionary the store's registry lacks is a corruption error, not a panic. Checked on the
//! codec ids of the images on disk and the pool's counters.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_storage::codec::{TRIM_ID, ZSTD_DICT_ID};
use zipdb_storage::dict::DictVersion;
use zipdb_storage::io::{AlignedBuf, SimStorage};
use zipdb_storage::pool::{BufferPool, PoolConfig, PoolStats};
use zipdb_storage::store::{PageStore, StoreConfig};
use zipdb_storage::{Codec, PageId, PageType, StoreError, TreeId};

const PAGE: usize = 4096;
const FRAMES: usize = 64;
const ZSTD_ID: u8 = 2;
const WITH_DICT: TreeId = TreeId(1);
const WITHOUT_DICT: TreeId = TreeId(2);

fn pool_on(store: Arc<PageStore>) -> Arc<BufferPool> {
    BufferPool::new(
        store,
        PoolConfig {
            budget_bytes: FRAMES * PAGE,
        },
    )
    .unwrap()
}

/// Page text: sentences drawn from a small set (so that a dictionary learns them), after the
/// 32 bytes that say which page and version it is.
fn fill(p: &mut [u8], id: PageId) {
    const SENTENCES: [&[u8]; 6] = [
        b"Permission is hereby granted, free of charge, to any person obtaining a copy. ",
        b"This package is distributed in the hope that it will be useful. ",
        b"See the GNU General Public License for more details. ",
        b"debian/changelog: new upstream release. ",
        b"Closes: #123456. ",
        b"THE SOFTWARE IS PROVIDED AS IS, WITHOUT WARRANTY OF ANY KIND. ",
    ];
    p[16..24].copy_from_slice(&id.0.to_le_bytes());
    let mut rng = SmallRng::seed_from_u64(id.0);
    let mut i = 32;
    while i < p.len() {
        let s = SENTENCES[rng.gen_range(0..SENTENCES.len())];
        let n = s.len().min(p.len() - i);
        p[i..i + n].copy_from_slice(&s[..n]);
        i += n;
    }
}

fn check(p: &[u8], id: PageId) {
    let mut want = vec![0u8; p.len()];
    want[..16].copy_from_slice(&p[..16]);
    fill(&mut want, id);
    assert!(p == &want[..], "page {id} is damaged");
}

fn allocate(pool: &BufferPool, tree: TreeId) -> PageId {
    let mut g = pool
        .allocate_cold(PageType::Leaf, tree, Codec::Trim, Codec::ZstdDict)
        .unwrap();
    let id = g.id();
    fill(&mut g, id);
    id
}

/// A dictionary trained on pages that `fill` makes (other ids than the test's pages).
fn dictionary() -> Vec<u8> {
    let samples: Vec<Vec<u8>> = (10_000..10_200)
        .map(|id| {
            let mut p = vec![0u8; PAGE];
            fill(&mut p, PageId(id));
            p
        })
        .collect();
    zstd::dict::from_samples(&samples, 8 * 1024).unwrap()
}

fn codec_on_disk(store: &PageStore, id: PageId) -> u8 {
    let mut buf = AlignedBuf::new(store.image_len_max());
    store.read_image(id, &mut buf).unwrap().codec_id
}

fn settled(pool: &BufferPool) -> PoolStats {
    let mut last = pool.stats();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(60));
        let s = pool.stats();
        if s.encodes == last.encodes {
            return s;
        }
        last = s;
    }
}

fn checkpoint(store: &PageStore, pool: &BufferPool) {
    pool.begin_checkpoint().unwrap();
    let mut snap = store.begin_checkpoint().unwrap();
    pool.checkpoint_pages(&mut snap).unwrap();
    store.finish_checkpoint(snap, b"").unwrap();
}

#[test]
fn leaving_pages_use_their_trees_dictionary_or_plain_zstd() {
    let disk = SimStorage::new("sim");
    let store = Arc::new(
        PageStore::create(Box::new(disk.clone()), StoreConfig { page_size: PAGE }).unwrap(),
    );
    let pool = pool_on(store.clone());
    pool.page_dicts()
        .install(WITH_DICT, DictVersion(1), &dictionary(), 3)
        .unwrap();
    // Far more pages than frames, the two trees interleaved: most leave the pool dirty.
    let pages: Vec<(TreeId, PageId)> = (0..600)
        .map(|i| {
            let tree = if i % 2 == 0 { WITH_DICT } else { WITHOUT_DICT };
            (tree, allocate(&pool, tree))
        })
        .collect();
    let s = settled(&pool);
    assert!(s.encodes_zstd_dict >= 150, "{s:?}");
    assert!(s.encodes_zstd >= 150, "{s:?}");
    let (mut dict_bytes, mut dict_pages, mut plain_bytes, mut plain_pages) = (0, 0, 0, 0);
    for &(tree, id) in &pages {
        if store.extent(id).is_none() {
            continue;
        }
        let codec = codec_on_disk(&store, id);
        let units = store.extent(id).len_units();
        match (tree, codec) {
            (WITH_DICT, ZSTD_DICT_ID) => {
                (dict_bytes, dict_pages) = (dict_bytes + units, dict_pages + 1)
            }
            (WITHOUT_DICT, ZSTD_ID) => {
                (plain_bytes, plain_pages) = (plain_bytes + units, plain_pages + 1)
            }
            // Written while staying (the writer cleaning ahead of the hand): Trim, which a
            // page without zeroes does not shrink, so raw.
            (_, TRIM_ID | 0) => {}
            other => panic!("page {id} of {tree:?} written as {other:?}"),
        }
    }
    assert!(dict_pages > 0 && plain_pages > 0);
    // The same kind of text, with and without the dictionary: the dictionary's images are
    // smaller on average.
    assert!(
        dict_bytes * plain_pages < plain_bytes * dict_pages,
        "dictionary {dict_bytes} units / {dict_pages} pages, plain {plain_bytes} / {plain_pages}"
    );
    for &(_, id) in &pages {
        check(&pool.read(id).unwrap(), id);
    }
    assert!(pool.stats().decodes_zstd_dict > 0, "{:?}", pool.stats());
    pool.verify().unwrap();

    // A store opened again without the dictionary: pages that name it fail cleanly, the
    // others read; with it installed again, all read.
    checkpoint(&store, &pool);
    drop(pool);
    let store2 = Arc::new(PageStore::open(Box::new(disk.clone())).unwrap());
    let pool2 = pool_on(store2.clone());
    let mut refused = 0;
    for &(tree, id) in &pages {
        let on_disk = codec_on_disk(&store2, id);
        match pool2.read(id) {
            Ok(p) => {
                assert_ne!(
                    on_disk, ZSTD_DICT_ID,
                    "page {id} read without its dictionary"
                );
                check(&p, id);
            }
            Err(StoreError::CorruptPage { .. }) => {
                assert_eq!((tree, on_disk), (WITH_DICT, ZSTD_DICT_ID), "page {id}");
                refused += 1;
            }
            Err(e) => panic!("page {id}: {e}"),
        }
    }
    assert!(refused > 0);
    pool2
        .page_dicts()
        .install(WITH_DICT, DictVersion(1), &dictionary(), 3)
        .unwrap();
    for &(_, id) in &pages {
        check(&pool2.read(id).unwrap(), id);
    }
}
