//! Tests of the page store: writes, checkpoints and reopen, space reuse, corruption found with its location, torn superblocks, fail-stop after a failed sync, and the allocator.

use super::*;
use crate::codec::{Codec, CodecCtx};
use crate::io::{Fault, SimStorage};
use crate::page::{LogicalHeader, PageType};

fn image(ctx: &mut CodecCtx, store: &PageStore, id: PageId, fill: u8) -> (AlignedBuf, usize) {
    let mut p = vec![fill; store.page_size()];
    LogicalHeader::init(&mut p, PageType::Leaf, Codec::Zstd(1), TreeId(1));
    let mut buf = AlignedBuf::new(store.image_len_max());
    let n = page::encode_image(ctx, &p, id, UNIT, &mut buf);
    (buf, n)
}

fn new_store(disk: &SimStorage) -> PageStore {
    PageStore::create(Box::new(disk.clone()), StoreConfig { page_size: 4096 }).unwrap()
}

#[test]
fn write_read_checkpoint_reopen() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let mut ctx = CodecCtx::new();
    let ids: Vec<_> = (0..10)
        .map(|_| store.allocate_page_id(TreeId(1)).unwrap())
        .collect();
    for (i, &id) in ids.iter().enumerate() {
        let (mut b, n) = image(&mut ctx, &store, id, i as u8);
        store.write_image(id, &mut b, n).unwrap();
    }
    store.checkpoint(b"catalog!").unwrap();
    store.verify().unwrap();
    drop(store);
    let store = PageStore::open(Box::new(disk.crash())).unwrap();
    assert_eq!(store.catalog(), b"catalog!");
    let mut buf = AlignedBuf::new(store.image_len_max());
    for &id in &ids {
        let h = store.read_image(id, &mut buf).unwrap();
        assert_eq!(h.page_id, id);
    }
    store.verify().unwrap();
    let sp = store.space();
    assert_eq!(sp.trees[0].1.pages, 10);
    assert!(sp.trees[0].1.physical_bytes < 10 * 4096 / 2);
}

#[test]
fn uncheckpointed_writes_vanish_and_old_extents_survive() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let mut ctx = CodecCtx::new();
    let id = store.allocate_page_id(TreeId(1)).unwrap();
    let (mut b, n) = image(&mut ctx, &store, id, 1);
    let first = store.write_image(id, &mut b, n).unwrap();
    store.checkpoint(&[]).unwrap();
    // Rewrite many times: the checkpointed extent must not be reused before the next checkpoint.
    for i in 0..20 {
        let (mut b, n) = image(&mut ctx, &store, id, 10 + i);
        let e = store.write_image(id, &mut b, n).unwrap();
        assert_ne!(e.offset_units(), first.offset_units());
        store.verify().unwrap();
    }
    let survivor = PageStore::open(Box::new(disk.crash())).unwrap();
    assert_eq!(survivor.extent(id), first);
    let mut buf = AlignedBuf::new(survivor.image_len_max());
    survivor.read_image(id, &mut buf).unwrap();
}

#[test]
fn space_is_reused_after_checkpoint() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let mut ctx = CodecCtx::new();
    let id = store.allocate_page_id(TreeId(1)).unwrap();
    for round in 0..50u8 {
        let (mut b, n) = image(&mut ctx, &store, id, round);
        store.write_image(id, &mut b, n).unwrap();
        store.checkpoint(&[]).unwrap();
        store.verify().unwrap();
    }
    // One page rewritten 50 times with checkpoints between: the file stays small.
    assert!(store.space().file_bytes < 64 * 1024, "{:?}", store.space());
}

#[test]
fn corruption_is_reported_with_location() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let mut ctx = CodecCtx::new();
    let id = store.allocate_page_id(TreeId(1)).unwrap();
    let (mut b, n) = image(&mut ctx, &store, id, 3);
    let e = store.write_image(id, &mut b, n).unwrap();
    disk.corrupt(e.offset_bytes() + 50, 0x40);
    let mut buf = AlignedBuf::new(store.image_len_max());
    match store.read_image(id, &mut buf) {
        Err(StoreError::CorruptPage {
            page_id,
            offset,
            what,
            ..
        }) => {
            assert_eq!(page_id, id);
            assert_eq!(offset, e.offset_bytes());
            assert!(matches!(what, page::Corruption::Checksum { .. }));
            let msg = StoreError::CorruptPage {
                file: "sim".into(),
                page_id,
                offset,
                what,
            }
            .to_string();
            assert!(msg.contains("page 1") && msg.contains("sim"), "{msg}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn torn_superblock_keeps_previous_checkpoint() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let mut ctx = CodecCtx::new();
    let id = store.allocate_page_id(TreeId(1)).unwrap();
    let (mut b, n) = image(&mut ctx, &store, id, 1);
    store.write_image(id, &mut b, n).unwrap();
    store.checkpoint(b"one").unwrap();
    let (mut b, n) = image(&mut ctx, &store, id, 2);
    store.write_image(id, &mut b, n).unwrap();
    // Next checkpoint writes: blob, then superblock. Tear the superblock.
    disk.fault_write_after(1, Fault::Tear(30));
    assert!(store.checkpoint(b"two").is_err());
    // Fail-stop: no more writes.
    assert!(matches!(
        store.write_image(id, &mut b, n),
        Err(StoreError::ReadOnlyAfterIoError(_))
    ));
    let survivor = PageStore::open(Box::new(disk.crash())).unwrap();
    assert_eq!(survivor.catalog(), b"one");
    let mut buf = AlignedBuf::new(survivor.image_len_max());
    survivor.read_image(id, &mut buf).unwrap();
    survivor.verify().unwrap();
}

/// A superblock slot that cannot be read fails the open. Taking the other slot instead (as
/// for a torn one) would open an older checkpoint, and lose the commits after it once the log
/// has been reused.
#[test]
fn unreadable_superblock_fails_the_open() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    store.checkpoint(b"one").unwrap();
    store.checkpoint(b"two").unwrap();
    drop(store);
    for slot_read in 0..2 {
        let d = disk.crash();
        d.fail_read_after(slot_read, Fault::Fail);
        assert!(
            PageStore::open(Box::new(d.clone())).is_err(),
            "read {slot_read} failed, yet the store opened"
        );
        // Readable again, it opens the newest checkpoint.
        let again = PageStore::open(Box::new(d.crash())).unwrap();
        assert_eq!(again.catalog(), b"two");
    }
}

#[test]
fn failed_sync_fail_stops() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    disk.fail_sync_after(0);
    assert!(store.checkpoint(&[]).is_err());
    assert!(store.is_failed());
    assert!(store.checkpoint(&[]).is_err());
}

#[test]
fn freed_pages_release_space_and_ids() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let mut ctx = CodecCtx::new();
    let a = store.allocate_page_id(TreeId(1)).unwrap();
    let (mut b, n) = image(&mut ctx, &store, a, 1);
    store.write_image(a, &mut b, n).unwrap();
    store.checkpoint(&[]).unwrap();
    store.free_page(a).unwrap();
    assert!(store.space().pending_free_bytes > 0);
    store.checkpoint(&[]).unwrap();
    assert_eq!(store.space().pending_free_bytes, 0);
    let again = store.allocate_page_id(TreeId(1)).unwrap();
    assert_eq!(again, a);
    store.verify().unwrap();
    let reopened = PageStore::open(Box::new(disk.crash())).unwrap();
    reopened.verify().unwrap();
}

/// A page of random bytes, stored raw: 9 units per 4 KiB page.
fn raw_image(store: &PageStore, id: PageId, seed: u64) -> (AlignedBuf, usize) {
    let mut p = vec![0u8; store.page_size()];
    let mut x = seed | 1;
    for b in p.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    LogicalHeader::init(&mut p, PageType::Leaf, Codec::None, TreeId(1));
    let mut buf = AlignedBuf::new(store.image_len_max());
    let n = page::encode_image(&mut CodecCtx::new(), &p, id, UNIT, &mut buf);
    (buf, n)
}

/// Writes `n` raw pages and checkpoints; returns their ids.
fn write_raw_pages(store: &PageStore, n: u64) -> Vec<PageId> {
    let ids: Vec<_> = (0..n)
        .map(|_| store.allocate_page_id(TreeId(1)).unwrap())
        .collect();
    for &id in &ids {
        let (mut b, len) = raw_image(store, id, id.0);
        store.write_image(id, &mut b, len).unwrap();
    }
    store.checkpoint(&[]).unwrap();
    ids
}

/// A rebuild or a large delete frees long runs; once the newest durable checkpoint does not
/// reference them (when they become reusable) they are punched (read back as zeros), the live pages still read, the space is reused,
/// and a crash right after the punches loses nothing.
#[test]
fn long_free_runs_are_punched_once_no_checkpoint_references_them() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let ids = write_raw_pages(&store, 64);
    let end_before = store.space().file_bytes;
    // Free all but every 16th page: runs of 15 pages (67 KiB) between the survivors.
    let (gone, kept): (Vec<_>, Vec<_>) = ids.iter().partition(|id| id.0 % 16 != 0);
    let gone_extents: Vec<Extent> = gone.iter().map(|&&id| store.extent(id)).collect();
    for &&id in &gone {
        store.free_page(id).unwrap();
    }
    // The durable checkpoint still references them: nothing is punched before the next one,
    // which no longer does (they become reusable at the same moment).
    assert_eq!(disk.punch_counts().0, 0, "pending extents were punched");
    store.checkpoint(&[]).unwrap();
    let (punches, bytes) = disk.punch_counts();
    assert!(punches >= 3, "{punches} punches");
    let freed: u64 = gone_extents.iter().map(|e| e.len_bytes() as u64).sum();
    assert!(
        bytes * 10 >= freed * 8 && bytes <= freed,
        "{bytes} of {freed} freed bytes punched"
    );
    assert_eq!(store.counters.punched_bytes.load(Ordering::Relaxed), bytes);
    store.verify().unwrap();
    // A punched unit reads as zeros; every survivor still reads.
    let mut probe = AlignedBuf::new(UNIT);
    let e = gone_extents[3];
    disk.read_at(&mut probe, e.offset_bytes() + UNIT as u64)
        .unwrap();
    assert!(probe.iter().all(|&b| b == 0), "a punched unit holds data");
    let mut buf = AlignedBuf::new(store.image_len_max());
    for &&id in &kept {
        assert_eq!(store.read_image(id, &mut buf).unwrap().page_id, id);
    }
    // Punched runs are free space: new pages fill them instead of growing the file.
    write_raw_pages(&store, 40);
    assert!(store.space().file_bytes <= end_before);
    store.verify().unwrap();
    // A crash now (the punches' zeros not all synced) keeps every page of the last checkpoint.
    let survivor = PageStore::open(Box::new(disk.crash())).unwrap();
    survivor.verify().unwrap();
    for &&id in &kept {
        assert_eq!(survivor.read_image(id, &mut buf).unwrap().page_id, id);
    }
}

/// Short runs (scattered rewrites of single pages) are left for reuse, not punched; the free
/// tail of a shrinking file is punched.
#[test]
fn short_runs_stay_and_the_free_tail_is_punched() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let ids = write_raw_pages(&store, 32);
    for &id in ids.iter().step_by(2) {
        store.free_page(id).unwrap();
    }
    store.checkpoint(&[]).unwrap();
    store.checkpoint(&[]).unwrap();
    assert_eq!(disk.punch_counts().0, 0, "single free pages were punched");
    // Freeing the last 16 pages leaves a free tail of 16 x 4.5 KiB, past the 64 KiB minimum.
    for &id in ids[16..].iter().skip(1).step_by(2) {
        store.free_page(id).unwrap(); // the others were freed above
    }
    store.checkpoint(&[]).unwrap();
    store.checkpoint(&[]).unwrap();
    assert!(disk.punch_counts().1 > 0, "the free tail was not punched");
    store.verify().unwrap();
}

/// A filesystem without holes: punches fail, are counted, stop being tried, and change
/// nothing else.
#[test]
fn failed_punches_are_harmless() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let ids = write_raw_pages(&store, 32);
    disk.fail_punches(true);
    for &id in &ids[..31] {
        store.free_page(id).unwrap();
    }
    store.checkpoint(&[]).unwrap();
    store.checkpoint(&[]).unwrap();
    assert!(store.counters.punch_failures.load(Ordering::Relaxed) > 0);
    assert!(!store.is_failed());
    store.verify().unwrap();
    let end = store.space().file_bytes;
    write_raw_pages(&store, 20);
    assert!(
        store.space().file_bytes <= end,
        "freed space was not reused"
    );
    let mut buf = AlignedBuf::new(store.image_len_max());
    assert_eq!(
        store.read_image(ids[31], &mut buf).unwrap().page_id,
        ids[31]
    );
}

/// On a real file the punched runs stop counting as allocated blocks.
#[test]
fn punched_runs_leave_a_real_file() {
    use std::os::unix::fs::MetadataExt;
    let path = std::env::temp_dir().join(format!("zipdb-punch-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let file = crate::io::FileStorage::open(&path, false).unwrap();
    let store = PageStore::create(Box::new(file), StoreConfig { page_size: 4096 }).unwrap();
    let ids = write_raw_pages(&store, 256);
    let before = std::fs::metadata(&path).unwrap().blocks() * 512;
    for &id in &ids[..255] {
        store.free_page(id).unwrap();
    }
    store.checkpoint(&[]).unwrap();
    store.checkpoint(&[]).unwrap();
    let after = std::fs::metadata(&path).unwrap().blocks() * 512;
    let punched = store.counters.punched_bytes.load(Ordering::Relaxed);
    let failures = store.counters.punch_failures.load(Ordering::Relaxed);
    drop(store);
    let _ = std::fs::remove_file(&path);
    if failures > 0 && punched == 0 {
        eprintln!("skipped: {} has no holes", std::env::temp_dir().display());
        return;
    }
    assert!(punched >= 200 * 4096, "{punched} bytes punched");
    assert!(
        after + 200 * 4096 <= before,
        "allocated {before} -> {after} bytes after punching {punched}"
    );
}

/// The allocator's search as it was first written, one bit at a time: the reference for
/// the word-at-a-time version.
fn find_run_naive(a: &Allocator, from: u64, to: u64, len: u64) -> Option<u64> {
    let (mut start, mut run) = (from, 0u64);
    for i in from..to {
        if a.bit(i) {
            run = 0;
            start = i + 1;
        } else {
            run += 1;
            if run >= len {
                return Some(start);
            }
        }
    }
    None
}

proptest::proptest! {
    #[test]
    fn find_run_matches_a_bit_by_bit_search(
        words in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::prelude::Just(0u64),
                proptest::prelude::Just(u64::MAX),
                proptest::prelude::any::<u64>(),
            ],
            1..6,
        ),
        from in 0u64..400,
        span in 0u64..400,
        len in 1u64..80,
    ) {
        let a = Allocator { used: words, ..Allocator::default() };
        let to = from + span;
        proptest::prop_assert_eq!(a.find_run(from, to, len), find_run_naive(&a, from, to, len));
    }
}

/// Random allocations and frees: every allocation that grows the file must be one that no
/// free run could hold (the remembered "nothing this long fits" must never go stale), and
/// the free count must match the bitmap.
#[test]
fn allocator_appends_only_when_nothing_fits() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut a = Allocator {
        end_units: DATA_START_UNITS,
        cursor: DATA_START_UNITS,
        ..Allocator::default()
    };
    let mut live: Vec<Extent> = Vec::new();
    for step in 0..20_000 {
        if live.is_empty() || rng.gen_bool(0.55) {
            let len = rng.gen_range(1..=32u64);
            let end = a.end_units;
            let fits = find_run_naive(&a, DATA_START_UNITS, end, len);
            let e = a.allocate(len);
            if e.offset_units() == end {
                assert_eq!(
                    fits, None,
                    "step {step}: appended {len} units though a run fits"
                );
            }
            live.push(e);
        } else {
            let e = live.swap_remove(rng.gen_range(0..live.len()));
            a.fresh.remove(&e.offset_units());
            a.insert_free(e.offset_units(), e.len_units());
        }
        let free = (DATA_START_UNITS..a.end_units)
            .filter(|&u| !a.bit(u))
            .count() as u64;
        assert_eq!(free, a.free_units, "step {step}");
    }
}

/// Freeing one page id twice would hand it to two later allocations: debug builds refuse.
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "freed twice")]
fn a_page_freed_twice_is_caught() {
    let disk = SimStorage::new("sim");
    let store = new_store(&disk);
    let ids = write_raw_pages(&store, 2);
    store.free_page(ids[0]).unwrap();
    let _ = store.free_page(ids[0]);
}
