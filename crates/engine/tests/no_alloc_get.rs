//! Point lookups do not allocate, in classic, compact and compact FSST trees (issue 19 step 3b: a
//! compact leaf rebuilds no key and copies the value straight into `get_with`'s reused
//! buffer): a counting global allocator counts this thread's allocations around warm gets.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use zipdb_engine::storage::io::SimStorage;
use zipdb_engine::{Codec, Database, Options, RecordCodec, TreeFormat};

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

#[test]
fn warm_point_gets_do_not_allocate() {
    let db = Database::open_storage(
        Box::new(SimStorage::new("data")),
        Box::new(SimStorage::new("wal")),
        Options {
            page_size: 16384,
            pool_bytes: 1024 * 16384,
            codec: Codec::None,
            wal_bytes: 16 << 20,
            recovery_progress: false,
            ..Options::default()
        },
    )
    .unwrap();
    let classic = db.create_tree("classic", None).unwrap();
    let compact = db
        .create_tree_with("compact", TreeFormat::compact(Codec::None))
        .unwrap();
    // Compact leaves with FSST values (issue 19 step 4): a get decodes into the same buffer.
    let fsst = db
        .create_tree_with(
            "fsst",
            TreeFormat {
                records: RecordCodec::Fsst,
                ..TreeFormat::compact(Codec::None)
            },
        )
        .unwrap();
    let key = |i: u64| i.to_be_bytes();
    let value = |i: u64| {
        let mut v = vec![b'a' + (i % 26) as u8; 184];
        // Digit groups, so the FSST tree stores most values encoded.
        for (j, b) in v.iter_mut().enumerate().skip(8) {
            *b = b'0' + ((i as usize * 7 + j * 3) % 10) as u8;
        }
        v
    };
    for i in 0..5000u64 {
        classic.insert(&key(i), &value(i)).unwrap();
        compact.insert(&key(i), &value(i)).unwrap();
        fsst.insert(&key(i), &value(i)).unwrap();
    }
    assert!(compact.verify().unwrap().depth >= 2);
    assert!(fsst.verify().unwrap().depth >= 2);
    assert!(
        fsst.verify().unwrap().leaves < compact.verify().unwrap().leaves,
        "the FSST tree stores encoded values"
    );
    for (name, t) in [
        ("classic", &classic),
        ("compact", &compact),
        ("fsst", &fsst),
    ] {
        // Warm: pages decoded, the per-thread buffer grown.
        for i in 0..5000u64 {
            t.btree().get_with(&key(i), |v| v.len()).unwrap();
        }
        let before = allocs();
        let mut sum = 0usize;
        for i in (0..5000u64).step_by(7) {
            sum += t
                .btree()
                .get_with(&key(i), |v| v[0] as usize)
                .unwrap()
                .unwrap();
        }
        let missing = t.btree().get_with(&key(99_999), |v| v.len()).unwrap();
        let n = allocs() - before;
        assert!(sum > 0 && missing.is_none());
        assert_eq!(n, 0, "{name}: {n} allocations in 715 warm gets");
    }
}
