//! The whole buffer pool on a small scale, sized to run under Miri (`.ci/run` runs it there when
//! a nightly toolchain with Miri is installed; see issue 19): the smallest pool of 4 KiB frames
//! over the simulated disk, raw pages (codec none, so that no foreign codec code runs), and two
//! threads allocating, writing, reading and freeing pages until pages have been written back,
//! evicted and read in again. Under Miri this checks the pool's unsafe code against Rust's
//! aliasing rules and for data races, on the paths real work takes; natively it is one more
//! concurrency test.
//!
//! The compressed logs are not reached here (raw images are never cached in them); the arena
//! test `arena::tests::miri_arena_threads` covers their copies.

use std::sync::Arc;

use zipdb_storage::io::SimStorage;
use zipdb_storage::pool::{BufferPool, PoolConfig};
use zipdb_storage::store::{PageStore, StoreConfig};
use zipdb_storage::{Codec, PageId, PageType, TreeId};

const PS: usize = 4096;
/// The smallest pool the pool accepts.
const FRAMES: usize = 64;
/// Pages each thread allocates: together well over the frames, so pages must leave.
const PER_THREAD: usize = if cfg!(miri) { 48 } else { 400 };

/// A page body that says which page and version it is, cheap to write and check under Miri.
fn stamp(p: &mut [u8], id: PageId, version: u64) {
    p[16..24].copy_from_slice(&id.0.to_le_bytes());
    p[24..32].copy_from_slice(&version.to_le_bytes());
    p[32..].fill(body_byte(id, version));
}

fn body_byte(id: PageId, version: u64) -> u8 {
    (id.0.wrapping_mul(31) ^ version.wrapping_mul(7)) as u8
}

/// Checks that page `id` holds `version` intact.
fn check(p: &[u8], id: PageId, version: u64) {
    assert_eq!(p.len(), PS);
    assert_eq!(
        &p[16..24],
        &id.0.to_le_bytes(),
        "page {id} holds another page"
    );
    assert_eq!(
        &p[24..32],
        &version.to_le_bytes(),
        "page {id} lost an update"
    );
    // One slice comparison (a single memcmp for Miri) rather than a loop over 4 KiB, which
    // Miri would interpret byte by byte.
    let want = [body_byte(id, version); PS - 32];
    assert!(p[32..] == want[..], "page {id} body torn");
}

/// One thread's work: `(page, version)` of its live pages, `None` once freed.
fn work(pool: &BufferPool, t: usize) -> Vec<Option<(PageId, u64)>> {
    let mut mine: Vec<Option<(PageId, u64)>> = Vec::with_capacity(PER_THREAD);
    for i in 0..PER_THREAD {
        let mut g = pool
            .allocate(PageType::Leaf, TreeId(1 + t as u32), Codec::None)
            .unwrap();
        let id = g.id();
        stamp(&mut g, id, 0);
        drop(g);
        mine.push(Some((id, 0)));
        // Reread an older page: by now it may have been written back and evicted.
        if let Some((id, v)) = mine[i / 2] {
            check(&pool.read(id).unwrap(), id, v);
        }
        // Change an older page (a hit, or a miss that reads it back from the disk).
        if i % 3 == 2 {
            if let Some((id, v)) = mine[i / 3].as_mut() {
                let mut g = pool.write(*id).unwrap();
                check(&g, *id, *v);
                *v += 1;
                stamp(&mut g, *id, *v);
            }
        }
        // Free one now and then: its frame and id go back for reuse.
        if i % 8 == 7 {
            if let Some((id, v)) = mine[i - 4].take() {
                let g = pool.write(id).unwrap();
                check(&g, id, v);
                pool.free(g).unwrap();
            }
        }
    }
    for (id, v) in mine.iter().flatten() {
        check(&pool.read(*id).unwrap(), *id, *v);
    }
    mine
}

#[test]
fn pool_miri_smoke() {
    let store = PageStore::create(
        Box::new(SimStorage::new("sim")),
        StoreConfig { page_size: PS },
    )
    .unwrap();
    let pool = BufferPool::new(
        Arc::new(store),
        PoolConfig {
            budget_bytes: FRAMES * PS,
        },
    )
    .unwrap();
    let pages: Vec<_> = std::thread::scope(|s| {
        let pool = &pool;
        let workers: Vec<_> = (0..2).map(|t| s.spawn(move || work(pool, t))).collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .flatten()
            .collect()
    });
    let st = pool.stats();
    assert!(st.writebacks > 0, "no page was written back: {st:?}");
    assert!(st.evictions > 0, "no page was evicted: {st:?}");
    assert!(st.miss > 0, "no page was read back: {st:?}");
    pool.flush_all().unwrap();
    pool.verify().unwrap();
    for (id, v) in pages {
        check(&pool.read(id).unwrap(), id, v);
    }
    pool.verify().unwrap();
    // Joins the background writer here: had it held the last handle, it would outlive the
    // test, which Miri reports as an error.
    pool.shutdown();
}
