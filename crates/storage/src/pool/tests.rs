//! Buffer pool tests.

use super::*;
use crate::io::SimStorage;
use crate::store::StoreConfig;
use rand::{Rng, SeedableRng};

const PS: usize = 4096;

fn pool(frames: usize) -> Arc<BufferPool> {
    let disk = SimStorage::new("sim");
    let store = Arc::new(PageStore::create(Box::new(disk), StoreConfig { page_size: PS }).unwrap());
    BufferPool::new(
        store,
        PoolConfig {
            budget_bytes: frames * PS,
        },
    )
    .unwrap()
}

/// Fills a page body with digits derived from (id, version): compressible like sbtest rows.
fn fill(p: &mut [u8], id: PageId, version: u64) {
    p[16..24].copy_from_slice(&id.0.to_le_bytes());
    p[24..32].copy_from_slice(&version.to_le_bytes());
    let mut x = id.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ version;
    for b in p[32..].iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = b'0' + (x % 10) as u8;
    }
}

/// Allocates `n` leaves of tree 1 with `codec`, each filled at `version`.
fn allocate_filled(pool: &BufferPool, n: usize, codec: Codec, version: u64) -> Vec<PageId> {
    (0..n)
        .map(|_| {
            let mut g = pool.allocate(PageType::Leaf, TreeId(1), codec).unwrap();
            let id = g.id();
            fill(&mut g, id, version);
            id
        })
        .collect()
}

/// Fills a page as a compact leaf would look: digits, then a zeroed gap whose length
/// depends on (id, version), then a 64-byte "slot directory" of digits at the end. One
/// version in 8 has a 16-byte gap, too short for Trim to save a unit: written raw.
fn fill_gapped(p: &mut [u8], id: PageId, version: u64) {
    fill(p, id, version);
    let gap = if (id.0 + version).is_multiple_of(8) {
        16
    } else {
        64 + (id.0.wrapping_mul(37) ^ version.wrapping_mul(101)) as usize % (p.len() / 2)
    };
    let end = p.len() - 64;
    p[end - gap..end].fill(0);
}

/// Checks a page filled by [`fill`] or, for Trim pages, by [`fill_gapped`]; returns its
/// version.
fn check(p: &[u8], id: PageId) -> u64 {
    let version = u64::from_le_bytes(p[24..32].try_into().unwrap());
    let mut want = vec![0u8; p.len()];
    want[..16].copy_from_slice(&p[..16]);
    if LogicalHeader::codec(p) == Codec::Trim {
        fill_gapped(&mut want, id, version);
    } else {
        fill(&mut want, id, version);
    }
    assert!(p == &want[..], "page {id} content wrong");
    version
}

/// Refills a page checked by [`check`] at `version`, in its own style.
fn refill(p: &mut [u8], id: PageId, version: u64) {
    if LogicalHeader::codec(p) == Codec::Trim {
        fill_gapped(p, id, version);
    } else {
        fill(p, id, version);
    }
}

fn versions_after_crash(disk: &SimStorage, ids: &[PageId]) -> Vec<Option<u64>> {
    let store = Arc::new(PageStore::open(Box::new(disk.crash())).unwrap());
    store.verify().unwrap();
    let pool = BufferPool::new(
        store,
        PoolConfig {
            budget_bytes: 64 * PS,
        },
    )
    .unwrap();
    ids.iter()
        .map(|&id| match pool.read(id) {
            Ok(g) => Some(check(&g, id)),
            Err(StoreError::NoSuchPage(_)) => None,
            Err(e) => panic!("page {id}: {e}"),
        })
        .collect()
}

/// A checkpoint saves the pages as they were when it began, while another thread keeps
/// changing, freeing and allocating pages, and evictions write pages back meanwhile.
#[test]
fn fuzzy_checkpoint_saves_the_snapshot_while_writers_change_pages() {
    for seed in 0..4u64 {
        let disk = SimStorage::new("sim");
        let store = Arc::new(
            PageStore::create(Box::new(disk.clone()), StoreConfig { page_size: PS }).unwrap(),
        );
        let pool = BufferPool::new(
            store.clone(),
            PoolConfig {
                budget_bytes: 64 * PS,
            },
        )
        .unwrap();
        pool.fix_costs_for_testing(100_000, 10_000);
        let ids = allocate_filled(&pool, 150, Codec::Zstd(1), 1);
        pool.flush_all().unwrap();
        store.checkpoint(&[]).unwrap();
        for &id in &ids[..100] {
            let mut g = pool.write(id).unwrap();
            fill(&mut g, id, 2);
        }
        // The quiet moment the engine's gate provides.
        let flagged = pool.begin_checkpoint().unwrap();
        let mut snap = store.begin_checkpoint().unwrap();
        assert!(flagged > 0, "some changed pages are still dirty");
        // Change a few flagged pages before the checkpoint writes them: they must be
        // copied (the concurrent writer below may or may not get to others first).
        let mut changed_early = 0;
        for &id in &ids[..100] {
            let flagged_now = pool
                .slots
                .get(id.0)
                .is_some_and(|sl| sl.flags.load(Ordering::Acquire) & CKPT != 0);
            if flagged_now && changed_early < 5 {
                let mut g = pool.write(id).unwrap();
                fill(&mut g, id, 3);
                changed_early += 1;
            }
        }
        assert!(changed_early > 0);
        let stop = AtomicBool::new(false);
        let freed: Vec<PageId> = std::thread::scope(|sc| {
            let writer = sc.spawn(|| {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                let mut freed = Vec::new();
                let mut round = 0;
                while !stop.load(Ordering::Relaxed) || round < 2 {
                    for _ in 0..200 {
                        let id = ids[rng.gen_range(0..ids.len())];
                        if freed.contains(&id) {
                            continue;
                        }
                        let mut g = pool.write(id).unwrap();
                        if round == 0 && freed.len() < 10 && rng.gen_bool(0.1) {
                            pool.free(g).unwrap();
                            freed.push(id);
                        } else {
                            fill(&mut g, id, 3);
                        }
                    }
                    allocate_filled(&pool, 2, Codec::Zstd(1), 9);
                    round += 1;
                }
                freed
            });
            pool.checkpoint_pages(&mut snap).unwrap();
            stop.store(true, Ordering::Relaxed);
            writer.join().unwrap()
        });
        store.finish_checkpoint(snap, b"ck").unwrap();
        store.verify().unwrap();
        pool.verify().unwrap();
        // On disk: the state when the checkpoint began, freed pages included.
        let want: Vec<Option<u64>> = (0..150)
            .map(|i| Some(if i < 100 { 2 } else { 1 }))
            .collect();
        assert_eq!(versions_after_crash(&disk, &ids), want, "seed {seed}");
        // In memory: the latest state; a second checkpoint makes it durable.
        pool.flush_all().unwrap();
        store.checkpoint(b"ck2").unwrap();
        let got = versions_after_crash(&disk, &ids);
        for (i, &id) in ids.iter().enumerate() {
            if freed.contains(&id) {
                // Freed, and maybe handed out again to a new page (version 9).
                assert!(
                    matches!(got[i], None | Some(9)),
                    "freed page {id}: {:?}",
                    got[i]
                );
            } else {
                assert!(matches!(got[i], Some(1..=3)), "page {id}: {:?}", got[i]);
                let g = pool.read(id).unwrap();
                assert_eq!(Some(check(&g, id)), got[i], "page {id}");
            }
        }
        let st = pool.stats();
        assert!(st.ckpt_writes > 0);
        assert!(st.ckpt_copies >= changed_early, "{st:?}");
    }
}

#[test]
fn pages_survive_demotion_and_eviction() {
    let pool = pool(80);
    pool.fix_costs_for_testing(100_000, 10_000);
    let ids = allocate_filled(&pool, 400, Codec::Zstd(1), 1);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    for _ in 0..5000 {
        let id = ids[rng.gen_range(0..ids.len())];
        if rng.gen_bool(0.2) {
            let mut g = pool.write(id).unwrap();
            let v = check(&g, id);
            fill(&mut g, id, v + 1);
        } else {
            check(&pool.read(id).unwrap(), id);
        }
    }
    pool.verify().unwrap();
    let s = pool.stats();
    eprintln!("{s:#?}");
    assert!(
        s.hit_compressed > 0 && s.miss > 0 && s.demotions > 0 && s.evictions > 0,
        "{s:?}"
    );
    // Checksums are verified only on reads from storage, never on in-memory decodes.
    let verifies = pool
        .store()
        .counters
        .checksum_verifies
        .load(Ordering::Relaxed);
    assert_eq!(verifies, s.miss, "{s:?}");
    assert!(s.decodes > verifies, "{s:?}");
    pool.flush_all().unwrap();
    assert_eq!(pool.stats().dirty_pages, 0);
    pool.verify().unwrap();
}

/// Runs uniform reads over 400 compressible pages in a pool of 300 frames (the images fit,
/// the decoded pages do not) with the policy seeing the given costs; returns the stats of
/// the second half of the reads.
fn uniform_reads_with_costs(read_ns: u64, decode_ns: u64) -> (PoolStats, PoolStats) {
    let pool = pool(300);
    pool.fix_costs_for_testing(read_ns, decode_ns);
    let ids = allocate_filled(&pool, 400, Codec::Zstd(1), 1);
    pool.flush_all().unwrap();
    // Refresh the model now that the store knows the pages and their image sizes (the
    // writer would do it within 20 ms; the test should not depend on that timing).
    pool.fix_costs_for_testing(read_ns, decode_ns);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut read = |n: usize| {
        for _ in 0..n {
            let id = ids[rng.gen_range(0..ids.len())];
            check(&pool.read(id).unwrap(), id);
        }
    };
    read(4000);
    let before = pool.stats();
    read(4000);
    let after = pool.stats();
    pool.verify().unwrap();
    (before, after)
}

#[test]
fn slow_reads_keep_every_image_when_images_fit() {
    let (before, after) = uniform_reads_with_costs(100_000, 10_000);
    assert_eq!(after.miss, before.miss, "no misses once warm: {after:?}");
    assert!(
        after.hit_compressed - before.hit_compressed > 1000,
        "compressed hits serve what is not decoded: {after:?}"
    );
    assert!(after.compressed_target_bytes > 0, "{after:?}");
}

#[test]
fn fast_reads_keep_no_images() {
    let (before, after) = uniform_reads_with_costs(1_000, 10_000);
    // A decode costs more than a read saves: the pool acts as a decoded cache.
    assert_eq!(after.compressed_target_bytes, 0, "{after:?}");
    assert!(after.compressed_frames <= SHARDS as u64, "{after:?}");
    assert!(
        after.hit_compressed - before.hit_compressed < 100,
        "{before:?} {after:?}"
    );
    assert!(after.miss > before.miss, "{after:?}");
}

/// Trim pages next to zstd pages under pressure: reads after eviction return identical
/// bytes, Trim write-backs and decodes are counted, and no Trim image ever enters a
/// compressed log (the zstd pages show that the logs were in use meanwhile).
#[test]
fn trim_pages_survive_eviction_and_stay_out_of_the_logs() {
    let pool = pool(80);
    pool.fix_costs_for_testing(100_000, 10_000);
    let zstd = allocate_filled(&pool, 150, Codec::Zstd(1), 1);
    let trim: Vec<PageId> = (0..250)
        .map(|_| {
            let mut g = pool
                .allocate(PageType::Leaf, TreeId(2), Codec::Trim)
                .unwrap();
            let id = g.id();
            fill_gapped(&mut g, id, 1);
            id
        })
        .collect();
    let not_logged = |ids: &[PageId]| {
        for &id in ids {
            let cpos = pool.slots.get(id.0).unwrap().cpos.load(Ordering::Acquire);
            assert_eq!(cpos, 0, "Trim page {id} has an image in a compressed log");
        }
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(19);
    for i in 0..6000 {
        let ids = if rng.gen_bool(0.5) { &zstd } else { &trim };
        let id = ids[rng.gen_range(0..ids.len())];
        if rng.gen_bool(0.2) {
            let mut g = pool.write(id).unwrap();
            let v = check(&g, id);
            refill(&mut g, id, v + 1);
        } else {
            check(&pool.read(id).unwrap(), id);
        }
        if i % 500 == 0 {
            not_logged(&trim);
        }
    }
    pool.verify().unwrap();
    not_logged(&trim);
    let s = pool.stats();
    eprintln!("{s:#?}");
    assert!(
        s.evictions > 0 && s.miss > 0 && s.hit_compressed > 0,
        "{s:?}"
    );
    assert!(s.encodes_trim > 0 && s.decodes_trim > 0, "{s:?}");
    // Gaps too short to save a unit: those pages went out raw, and came back raw.
    assert!(s.encodes_none > 0 && s.decodes_none > 0, "{s:?}");
    assert_eq!(
        s.encodes_lz4 + s.encodes_zlib + s.decodes_lz4 + s.decodes_zlib,
        0
    );
    assert_eq!(
        s.encodes,
        s.encodes_none + s.encodes_zstd + s.encodes_trim,
        "{s:?}"
    );
    assert_eq!(
        s.decodes,
        s.decodes_none + s.decodes_zstd + s.decodes_trim,
        "{s:?}"
    );
    pool.flush_all().unwrap();
    not_logged(&trim);
    // Every page, read back after the pool let most of them go, is what was written.
    for &id in zstd.iter().chain(&trim) {
        check(&pool.read(id).unwrap(), id);
    }
    pool.verify().unwrap();
}

/// Trim pages alone: nothing is ever cached compressed, so the pool keeps no logs at all
/// and every page that leaves memory is evicted (never demoted).
#[test]
fn trim_only_pool_keeps_no_compressed_tier() {
    let pool = pool(64);
    pool.fix_costs_for_testing(100_000, 10_000);
    let ids: Vec<PageId> = (0..300)
        .map(|_| {
            let mut g = pool
                .allocate(PageType::Leaf, TreeId(2), Codec::Trim)
                .unwrap();
            let id = g.id();
            fill_gapped(&mut g, id, 0);
            id
        })
        .collect();
    for round in 1..4 {
        for &id in &ids {
            let mut g = pool.write(id).unwrap();
            let v = check(&g, id);
            assert_eq!(v, round - 1);
            refill(&mut g, id, round);
        }
    }
    pool.flush_all().unwrap();
    for &id in &ids {
        assert_eq!(check(&pool.read(id).unwrap(), id), 3);
    }
    pool.verify().unwrap();
    let s = pool.stats();
    assert!(s.evictions > 0 && s.miss > 0 && s.encodes_trim > 0, "{s:?}");
    assert_eq!((s.hit_compressed, s.demotions), (0, 0), "{s:?}");
    assert_eq!((s.compressed_frames, s.compressed_bytes), (0, 0), "{s:?}");
}

#[test]
fn hot_pages_are_compressed_once_not_per_change() {
    // 40 pages in 100 frames: no eviction pressure and under the dirty limit, so the
    // writer must leave them alone however often they change. The same for Trim pages,
    // whose write-back is cheap but still must not run per change.
    for codec in [Codec::Zstd(1), Codec::Trim] {
        let pool = pool(100);
        let ids: Vec<PageId> = (0..40)
            .map(|_| {
                let mut g = pool.allocate(PageType::Leaf, TreeId(1), codec).unwrap();
                let id = g.id();
                refill(&mut g, id, 0);
                id
            })
            .collect();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for i in 0..2000u64 {
            let id = ids[rng.gen_range(0..ids.len())];
            let mut g = pool.write(id).unwrap();
            refill(&mut g, id, i + 1);
        }
        // Give the background writer several of its 20 ms rounds.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(pool.stats().encodes, 0, "{codec}: {:?}", pool.stats());
        pool.flush_all().unwrap();
        let s = pool.stats();
        assert_eq!((s.encodes, s.dirty_pages), (40, 0), "{codec}: {s:?}");
        let by_codec = match codec {
            Codec::Trim => s.encodes_trim + s.encodes_none,
            _ => s.encodes_zstd,
        };
        assert_eq!(by_codec, 40, "{codec}: {s:?}");
        for &id in &ids {
            check(&pool.read(id).unwrap(), id);
        }
    }
}

#[test]
fn uncompressed_pages_are_evicted_not_demoted() {
    let pool = pool(64);
    let ids = allocate_filled(&pool, 200, Codec::None, 7);
    for &id in &ids {
        check(&pool.read(id).unwrap(), id);
    }
    let s = pool.stats();
    assert_eq!(s.compressed_frames, 0, "{s:?}");
    assert_eq!(s.hit_compressed, 0);
    assert!(s.miss > 0);
    pool.verify().unwrap();
}

#[test]
fn concurrent_readers_and_writers() {
    let pool = pool(96);
    let ids = allocate_filled(&pool, 300, Codec::Lz4, 0);
    let writes = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (pool, ids, writes) = (&pool, &ids, &writes);
            s.spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(t);
                for _ in 0..3000 {
                    let id = ids[rng.gen_range(0..ids.len())];
                    if rng.gen_bool(0.3) {
                        let mut g = pool.write(id).unwrap();
                        let v = check(&g, id);
                        fill(&mut g, id, v + 1);
                        writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        check(&pool.read(id).unwrap(), id);
                    }
                }
            });
        }
    });
    let total: u64 = ids
        .iter()
        .map(|&id| check(&pool.read(id).unwrap(), id))
        .sum();
    assert_eq!(total, writes.load(Ordering::Relaxed), "lost updates");
    pool.verify().unwrap();
}

#[test]
fn free_releases_everything() {
    let pool = pool(64);
    let mut g = pool
        .allocate(PageType::Leaf, TreeId(1), Codec::Zstd(1))
        .unwrap();
    let id = g.id();
    fill(&mut g, id, 1);
    drop(g);
    pool.flush_all().unwrap();
    let g = pool.write(id).unwrap();
    pool.free(g).unwrap();
    assert!(pool.read(id).is_err());
    assert_eq!(pool.stats().dirty_pages, 0);
    pool.verify().unwrap();
}

#[test]
fn tiny_budget_is_a_clear_error() {
    let disk = SimStorage::new("sim");
    let store = Arc::new(PageStore::create(Box::new(disk), StoreConfig { page_size: PS }).unwrap());
    let e = BufferPool::new(
        store,
        PoolConfig {
            budget_bytes: 10 * PS,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("below the minimum"), "{e}");
}

fn wait_warm(pool: &BufferPool) -> PoolStats {
    let t0 = Instant::now();
    loop {
        let s = pool.stats();
        if s.warm_load_done == 1 {
            return s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "warm load hangs: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Pool of `frames` over a reopened copy of `disk` (what a restart sees).
fn reopen(disk: &SimStorage, frames: usize) -> Arc<BufferPool> {
    let store = Arc::new(PageStore::open(Box::new(disk.crash())).unwrap());
    BufferPool::new(
        store,
        PoolConfig {
            budget_bytes: frames * PS,
        },
    )
    .unwrap()
}

/// The pages listed at "shutdown" are back in the pool after a restart before anyone reads
/// them: reading them then hits without I/O. Pages that no longer exist or fail their
/// checksum are skipped and counted.
#[test]
fn warm_load_restores_the_listed_pages() {
    let disk = SimStorage::new("sim");
    let store =
        Arc::new(PageStore::create(Box::new(disk.clone()), StoreConfig { page_size: PS }).unwrap());
    let pool = BufferPool::new(
        store.clone(),
        PoolConfig {
            budget_bytes: 256 * PS,
        },
    )
    .unwrap();
    let ids = allocate_filled(&pool, 100, Codec::Zstd(1), 1);
    pool.flush_all().unwrap();
    store.checkpoint(&[]).unwrap();
    let listed = pool.resident_pages();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, ids);
    // Damage one listed page on disk.
    let damaged = ids[10];
    disk.corrupt(store.extent(damaged).offset_bytes() + 100, 0x55);
    pool.shutdown();
    drop(pool);

    let pool = reopen(&disk, 256);
    let mut list = listed.clone();
    list.push(PageId(1 << 20)); // never existed
    pool.start_warm_load(list).unwrap();
    let s = wait_warm(&pool);
    assert_eq!(
        (
            s.warm_pages_listed,
            s.warm_pages_loaded,
            s.warm_pages_skipped
        ),
        (101, 99, 2),
        "{s:?}"
    );
    for &id in &ids {
        if id != damaged {
            check(&pool.read(id).unwrap(), id);
        }
    }
    let after = pool.stats();
    assert_eq!(after.miss, s.miss, "every listed page was resident");
    assert_eq!(after.hit_decoded - s.hit_decoded, 99);
    assert!(pool.read(damaged).is_err());
    pool.verify().unwrap();
}

/// The loader fills only free frames beyond the reserve: it never evicts, so a list longer
/// than the pool cannot push out what the workload already uses.
#[test]
fn warm_load_stops_when_the_pool_is_full() {
    let disk = SimStorage::new("sim");
    let store =
        Arc::new(PageStore::create(Box::new(disk.clone()), StoreConfig { page_size: PS }).unwrap());
    let pool = BufferPool::new(
        store.clone(),
        PoolConfig {
            budget_bytes: 512 * PS,
        },
    )
    .unwrap();
    let ids = allocate_filled(&pool, 400, Codec::None, 1);
    pool.flush_all().unwrap();
    store.checkpoint(&[]).unwrap();
    drop(pool);
    let pool = reopen(&disk, 128);
    pool.start_warm_load(ids).unwrap();
    let s = wait_warm(&pool);
    assert!(s.warm_pages_loaded > 0, "{s:?}");
    assert!(s.warm_pages_loaded < 128, "{s:?}");
    assert_eq!((s.evictions, s.demotions), (0, 0), "{s:?}");
    assert!(s.free_frames as usize >= pool.reserve_frames(), "{s:?}");
    pool.verify().unwrap();
}
