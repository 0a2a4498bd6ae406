//! Proves that the buffer pool's hit, miss, decode and write-back paths do not allocate: a
//! counting global allocator counts this thread's allocations around each path. Once with zstd
//! pages (compressed tier in use), once with Trim pages (no compressed tier, no codec context).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use zipdb_storage::io::FileStorage;
use zipdb_storage::pool::{BufferPool, PoolConfig};
use zipdb_storage::store::{PageStore, StoreConfig};
use zipdb_storage::{Codec, PageId, PageType, TreeId};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

const PS: usize = 4096;

fn fill(p: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for b in p[16..].iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = b'0' + (x % 10) as u8;
    }
}

/// Counts allocations made by `f` on this thread.
fn count(f: impl FnOnce()) -> u64 {
    let before = allocs();
    f();
    allocs() - before
}

/// A pool over a real file (the simulated disk itself allocates to remember unsynced writes)
/// with a small budget (128 frames) and 400 pages of `codec` written by `fill`, warmed up so
/// that thread-local codec contexts and scratch buffers exist and the store's free-space
/// structures have reached their steady size. Every access pattern of the tests then forces
/// demotions, compressed hits (where the codec allows them), misses and write-backs.
fn warm_pool(
    name: &str,
    codec: Codec,
    fill: fn(&mut [u8], u64),
) -> (
    std::path::PathBuf,
    Arc<PageStore>,
    Arc<BufferPool>,
    Vec<PageId>,
) {
    let dir = std::env::temp_dir().join(format!("zipdb-noalloc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data");
    let _ = std::fs::remove_file(&path);
    let disk = FileStorage::open(&path, false).unwrap();
    let store = Arc::new(PageStore::create(Box::new(disk), StoreConfig { page_size: PS }).unwrap());
    let pool = BufferPool::new(
        store.clone(),
        PoolConfig {
            budget_bytes: 128 * PS,
        },
    )
    .unwrap();
    // Costs of a slow disk, so that the policy keeps a compressed tier on any test machine.
    pool.fix_costs_for_testing(100_000, 10_000);
    let ids: Vec<PageId> = (0..400)
        .map(|i| {
            let mut g = pool.allocate(PageType::Leaf, TreeId(1), codec).unwrap();
            fill(&mut g, i);
            g.id()
        })
        .collect();
    pool.flush_all().unwrap();
    store.checkpoint(&[]).unwrap();
    for round in 0..3 {
        for &id in &ids {
            drop(pool.read(id).unwrap());
        }
        for &id in ids.iter().step_by(3) {
            let mut g = pool.write(id).unwrap();
            fill(&mut g, id.0 + round);
        }
        pool.flush_all().unwrap();
        store.checkpoint(&[]).unwrap();
    }
    (dir, store, pool, ids)
}

#[test]
fn hot_paths_do_not_allocate() {
    let (dir, store, pool, ids) = warm_pool("zstd", Codec::Zstd(1), fill);
    let s0 = pool.stats();

    // Hit: a page just read is decoded.
    let hot = ids[7];
    drop(pool.read(hot).unwrap());
    assert_eq!(
        count(|| drop(pool.read(hot).unwrap())),
        0,
        "decoded hit allocated"
    );

    // Sweep the pages: misses (storage read + verify + decode), compressed hits (decode) and
    // the evictions and demotions they cause.
    let n = count(|| {
        for &id in &ids {
            drop(pool.read(id).unwrap());
        }
        // A working set larger than the decoded tier whose images fit the compressed tier.
        for _ in 0..5 {
            for &id in &ids[..45] {
                drop(pool.read(id).unwrap());
            }
        }
    });
    let s1 = pool.stats();
    assert!(s1.miss > s0.miss, "no miss happened: {s1:?}");
    assert!(
        s1.hit_compressed > s0.hit_compressed,
        "no compressed hit happened: {s1:?}"
    );
    assert_eq!(n, 0, "miss/decode/eviction path allocated {n} times");

    // Write-back: dirty pages, then a flush (compress + out-of-place write + cache the image).
    for &id in ids.iter().take(40) {
        let mut g = pool.write(id).unwrap();
        fill(&mut g, id.0 + 99);
    }
    let n = count(|| pool.flush_all().unwrap());
    assert!(pool.stats().writebacks > s1.writebacks);
    assert_eq!(n, 0, "write-back path allocated {n} times");
    drop(pool);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A page as a compact leaf keeps it: digits, a zeroed gap, digits at the end.
fn fill_gapped(p: &mut [u8], seed: u64) {
    fill(p, seed);
    let gap = 512 + (seed as usize * 97) % (PS / 2);
    p[PS - 64 - gap..PS - 64].fill(0);
}

#[test]
fn trim_paths_do_not_allocate() {
    let (dir, store, pool, ids) = warm_pool("trim", Codec::Trim, fill_gapped);
    let s0 = pool.stats();
    let hot = ids[7];
    drop(pool.read(hot).unwrap());
    assert_eq!(
        count(|| drop(pool.read(hot).unwrap())),
        0,
        "decoded hit allocated"
    );
    // Misses: storage read, verify, Trim decode, and the evictions they cause.
    let n = count(|| {
        for &id in &ids {
            drop(pool.read(id).unwrap());
        }
    });
    let s1 = pool.stats();
    assert!(s1.decodes_trim > s0.decodes_trim, "no Trim decode: {s1:?}");
    assert_eq!(n, 0, "Trim miss/decode/eviction path allocated {n} times");
    // Write-back: Trim encode, out-of-place write, no log admission.
    for &id in ids.iter().take(40) {
        let mut g = pool.write(id).unwrap();
        fill_gapped(&mut g, id.0 + 99);
    }
    let n = count(|| pool.flush_all().unwrap());
    let s2 = pool.stats();
    assert!(s2.encodes_trim >= s1.encodes_trim + 40, "{s2:?}");
    assert_eq!(n, 0, "Trim write-back path allocated {n} times");
    assert_eq!(s2.compressed_frames, 0, "a Trim image was cached: {s2:?}");
    drop(pool);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}
