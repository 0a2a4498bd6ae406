//! The optional cold layer (issue 19 step 8): a page whose logical header names a cold codec is
//! written with it only when it leaves the pool, with its image codec (Trim) when it stays
//! (checkpoints, flushes), and an unchanged page is never encoded again. Checked on the codec
//! ids of the images actually written (the image header on disk, the pool's counters) and
//! against a `BTreeMap` model under tiny pools.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zipdb_storage::codec::TRIM_ID;
use zipdb_storage::io::{AlignedBuf, SimStorage};
use zipdb_storage::pool::{BufferPool, PoolConfig, PoolStats};
use zipdb_storage::store::{PageStore, StoreConfig};
use zipdb_storage::{Codec, PageId, PageType, TreeId};

const ZSTD_ID: u8 = 2;
const COLD: Codec = Codec::Zstd(1);

fn open(disk: &SimStorage, page_size: usize, frames: usize) -> (Arc<PageStore>, Arc<BufferPool>) {
    let store =
        Arc::new(PageStore::create(Box::new(disk.clone()), StoreConfig { page_size }).unwrap());
    let pool = BufferPool::new(
        store.clone(),
        PoolConfig {
            budget_bytes: frames * page_size,
        },
    )
    .unwrap();
    (store, pool)
}

/// A page shaped like a compact leaf of English-ish text: words, a zeroed gap (its length
/// depends on id and version, so Trim always saves a unit), then a short tail; bytes 16..32
/// say which page and version it is.
fn fill(p: &mut [u8], id: PageId, version: u64) {
    const WORDS: [&[u8]; 8] = [
        b"the ",
        b"package ",
        b"debian ",
        b"copyright ",
        b"license ",
        b"of ",
        b"and ",
        b"file ",
    ];
    p[16..24].copy_from_slice(&id.0.to_le_bytes());
    p[24..32].copy_from_slice(&version.to_le_bytes());
    let mut rng = SmallRng::seed_from_u64(id.0 ^ version.rotate_left(32));
    let gap_start = p.len() / 4 + rng.gen_range(0..p.len() / 4);
    let gap_end = p.len() - 64;
    let mut i = 32;
    while i < gap_start {
        let w = WORDS[rng.gen_range(0..WORDS.len())];
        let n = w.len().min(gap_start - i);
        p[i..i + n].copy_from_slice(&w[..n]);
        i += n;
    }
    p[gap_start..gap_end].fill(0);
    p[gap_end..].fill(b'#');
}

/// The version page `id` holds, after checking that its bytes are the ones `fill` wrote.
fn check(p: &[u8], id: PageId) -> u64 {
    assert_eq!(
        &p[16..24],
        &id.0.to_le_bytes(),
        "page {id} holds another page"
    );
    let version = u64::from_le_bytes(p[24..32].try_into().unwrap());
    let mut want = vec![0u8; p.len()];
    want[..16].copy_from_slice(&p[..16]);
    fill(&mut want, id, version);
    assert!(p == &want[..], "page {id} version {version} is damaged");
    version
}

fn allocate(pool: &BufferPool, version: u64) -> PageId {
    let mut g = pool
        .allocate_cold(PageType::Leaf, TreeId(1), Codec::Trim, COLD)
        .unwrap();
    let id = g.id();
    fill(&mut g, id, version);
    id
}

/// The codec id in the header of page `id`'s image in the store's live map.
fn codec_on_disk(store: &PageStore, id: PageId) -> u8 {
    let mut buf = AlignedBuf::new(store.image_len_max());
    store.read_image(id, &mut buf).unwrap().codec_id
}

fn checkpoint(store: &PageStore, pool: &BufferPool) {
    pool.begin_checkpoint().unwrap();
    let mut snap = store.begin_checkpoint().unwrap();
    pool.checkpoint_pages(&mut snap).unwrap();
    store.finish_checkpoint(snap, b"").unwrap();
}

fn cold_encodes(s: &PoolStats) -> u64 {
    s.encodes_zstd
}

/// The pool's stats once its background writer has stopped writing (it may still be cleaning
/// ahead of the CLOCK hand when the test's own work ends).
fn settled(pool: &BufferPool) -> PoolStats {
    let mut last = pool.stats();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(60));
        let s = pool.stats();
        let by_codec = s.encodes_none + s.encodes_trim + s.encodes_zstd;
        if s.encodes == last.encodes && by_codec == s.encodes {
            return s;
        }
        last = s;
    }
}

#[test]
fn checkpoint_writes_trim_and_eviction_writes_the_cold_codec() {
    let disk = SimStorage::new("sim");
    let (store, pool) = open(&disk, 4096, 64);
    let kept: Vec<PageId> = (0..20).map(|_| allocate(&pool, 1)).collect();
    checkpoint(&store, &pool);
    let s = pool.stats();
    assert_eq!(
        (s.encodes, s.encodes_trim, cold_encodes(&s)),
        (20, 20, 0),
        "{s:?}"
    );
    for &id in &kept {
        assert_eq!(codec_on_disk(&store, id), TRIM_ID, "checkpointed page {id}");
    }
    // Far more pages than frames: most leave the pool dirty, written by evicting threads or by
    // the writer ahead of the CLOCK hand.
    let rest: Vec<PageId> = (0..400).map(|_| allocate(&pool, 1)).collect();
    let s = settled(&pool);
    assert!(s.evictions + s.demotions >= 300, "{s:?}");
    assert!(
        cold_encodes(&s) >= 200,
        "most leaving pages use the cold codec: {s:?}"
    );
    // Every page was changed once, so each image on disk is its only write: the zstd images
    // on disk are exactly the cold encodes, and the checkpointed pages (clean when they left)
    // were not written again.
    let on_disk: Vec<u8> = rest
        .iter()
        .filter(|&&id| !store.extent(id).is_none())
        .map(|&id| codec_on_disk(&store, id))
        .collect();
    let zstd = on_disk.iter().filter(|&&c| c == ZSTD_ID).count() as u64;
    assert_eq!(zstd, cold_encodes(&s), "{s:?}");
    assert!(on_disk.iter().all(|&c| c == ZSTD_ID || c == TRIM_ID));
    for &id in &kept {
        assert_eq!(
            codec_on_disk(&store, id),
            TRIM_ID,
            "page {id} was rewritten"
        );
    }
    assert_eq!(s.encodes, s.encodes_trim + s.encodes_zstd, "{s:?}");
    // A flush writes what is still dirty with Trim.
    pool.flush_all().unwrap();
    let f = settled(&pool);
    assert_eq!(cold_encodes(&f), cold_encodes(&s));
    assert!(f.encodes_trim > s.encodes_trim, "{f:?}");
    for &id in kept.iter().chain(&rest) {
        assert_eq!(check(&pool.read(id).unwrap(), id), 1);
    }
    pool.verify().unwrap();
}

#[test]
fn an_unchanged_page_is_not_encoded_again_when_it_leaves_again() {
    let disk = SimStorage::new("sim");
    let (_store, pool) = open(&disk, 4096, 64);
    // Reads cheap against decodes: the pool keeps few images, so pages leave memory entirely.
    pool.fix_costs_for_testing(1_000, 100_000);
    let ids: Vec<PageId> = (0..300).map(|_| allocate(&pool, 7)).collect();
    pool.flush_all().unwrap();
    let before = settled(&pool);
    assert!(cold_encodes(&before) > 0, "{before:?}");
    let mut rng = SmallRng::seed_from_u64(3);
    for _ in 0..3000 {
        let id = ids[rng.gen_range(0..ids.len())];
        assert_eq!(check(&pool.read(id).unwrap(), id), 7);
    }
    let after = settled(&pool);
    assert!(
        after.miss > before.miss + 1000 && after.evictions > before.evictions + 1000,
        "{after:?}"
    );
    assert!(after.decodes_zstd > before.decodes_zstd, "{after:?}");
    assert_eq!(
        after.encodes, before.encodes,
        "clean pages were encoded again"
    );
    assert_eq!(after.writebacks, before.writebacks, "{after:?}");
}

#[derive(Debug, Clone)]
enum Op {
    Allocate,
    Read(usize),
    Write(usize),
    Free(usize),
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Allocate),
        6 => any::<usize>().prop_map(Op::Read),
        4 => any::<usize>().prop_map(Op::Write),
        1 => any::<usize>().prop_map(Op::Free),
        1 => Just(Op::Checkpoint),
    ]
}

/// Runs `ops` on a pool of `frames` frames against a `BTreeMap` of page versions; then checks
/// every page in memory, and on a crash copy of the disk the state of the last checkpoint.
fn run_model(page_size: usize, frames: usize, ops: &[Op]) {
    let disk = SimStorage::new("sim");
    let (store, pool) = open(&disk, page_size, frames);
    let mut model: BTreeMap<PageId, u64> = BTreeMap::new();
    let mut durable: BTreeMap<PageId, u64> = BTreeMap::new();
    let pick = |model: &BTreeMap<PageId, u64>, i: usize| {
        (!model.is_empty()).then(|| *model.keys().nth(i % model.len()).unwrap())
    };
    for (next_version, op) in (1u64..).zip(ops) {
        match *op {
            Op::Allocate => {
                let id = allocate(&pool, next_version);
                model.insert(id, next_version);
            }
            Op::Read(i) => {
                if let Some(id) = pick(&model, i) {
                    assert_eq!(check(&pool.read(id).unwrap(), id), model[&id]);
                }
            }
            Op::Write(i) => {
                if let Some(id) = pick(&model, i) {
                    let mut g = pool.write(id).unwrap();
                    assert_eq!(check(&g, id), model[&id]);
                    fill(&mut g, id, next_version);
                    model.insert(id, next_version);
                }
            }
            Op::Free(i) => {
                if let Some(id) = pick(&model, i) {
                    pool.free(pool.write(id).unwrap()).unwrap();
                    model.remove(&id);
                }
            }
            Op::Checkpoint => {
                checkpoint(&store, &pool);
                durable = model.clone();
            }
        }
    }
    for (&id, &v) in &model {
        assert_eq!(check(&pool.read(id).unwrap(), id), v);
    }
    pool.verify().unwrap();
    let s = settled(&pool);
    assert_eq!(
        s.encodes,
        s.encodes_trim + s.encodes_zstd + s.encodes_none,
        "{s:?}"
    );
    // Reopen the last checkpoint from a crash copy: every page decodes whatever codec its image
    // names.
    let store2 = Arc::new(PageStore::open(Box::new(disk.crash())).unwrap());
    let pool2 = BufferPool::new(
        store2,
        PoolConfig {
            budget_bytes: 64 * page_size,
        },
    )
    .unwrap();
    for (&id, &v) in &durable {
        assert_eq!(
            check(&pool2.read(id).unwrap(), id),
            v,
            "page {id} after a crash"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn cold_pages_match_a_model_under_tiny_pools(
        ops in prop::collection::vec(op(), 200..600),
        big in any::<bool>(),
    ) {
        let page_size = if big { 16384 } else { 4096 };
        run_model(page_size, 64, &ops);
    }
}

/// The model run once at a size that surely evicts: more allocations than frames.
#[test]
fn cold_pages_match_a_model_with_heavy_eviction() {
    let mut rng = SmallRng::seed_from_u64(11);
    let ops: Vec<Op> = (0..3000)
        .map(|i| match rng.gen_range(0..20) {
            _ if i < 200 => Op::Allocate,
            0..=2 => Op::Allocate,
            3..=10 => Op::Read(rng.gen()),
            11..=17 => Op::Write(rng.gen()),
            18 => Op::Free(rng.gen()),
            _ => Op::Checkpoint,
        })
        .collect();
    run_model(4096, 64, &ops);
}
