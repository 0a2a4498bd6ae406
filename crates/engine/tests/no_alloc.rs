//! Warm reads do not allocate, in classic, compact and compact FSST trees: point gets (a
//! compact leaf rebuilds no key and copies the value straight into `get_with`'s reused
//! buffer; issue 19 step 3b) and range scans through `Cursor::next_ref` (a cursor's batch
//! arena, row records, bounds and decode buffer are reused from batch to batch and, per
//! thread, from cursor to cursor). A counting global allocator counts this thread's
//! allocations around the warm reads, so tests running beside each other do not disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ops::Bound;

use zipdb_engine::storage::io::SimStorage;
use zipdb_engine::{Codec, Database, Options, RecordCodec, Tree, TreeFormat};

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

const ROWS: u64 = 5000;

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// A database holding `ROWS` sbtest-sized rows in one tree of each format; the database is
/// returned too, since the trees borrow nothing from it but must not outlive it.
fn three_trees() -> (Database, [(&'static str, Tree); 3]) {
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
    let fsst = db
        .create_tree_with(
            "fsst",
            TreeFormat {
                records: RecordCodec::Fsst,
                ..TreeFormat::compact(Codec::None)
            },
        )
        .unwrap();
    let value = |i: u64| {
        let mut v = vec![b'a' + (i % 26) as u8; 184];
        // Digit groups, so the FSST tree stores most values encoded.
        for (j, b) in v.iter_mut().enumerate().skip(8) {
            *b = b'0' + ((i as usize * 7 + j * 3) % 10) as u8;
        }
        v
    };
    for i in 0..ROWS {
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
    (
        db,
        [("classic", classic), ("compact", compact), ("fsst", fsst)],
    )
}

#[test]
fn warm_point_gets_do_not_allocate() {
    let (_db, trees) = three_trees();
    for (name, t) in &trees {
        // Warm: pages decoded, the per-thread buffer grown.
        for i in 0..ROWS {
            t.btree().get_with(&key(i), |v| v.len()).unwrap();
        }
        let before = allocs();
        let mut sum = 0usize;
        for i in (0..ROWS).step_by(7) {
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

/// Visits up to `limit` rows from `start` (descending when `rev`); returns (rows, a checksum
/// of key and value bytes).
fn scan(t: &Tree, start: u64, limit: usize, rev: bool) -> (usize, u64) {
    let k = key(start);
    let c = if rev {
        t.range_rev((Bound::Unbounded, Bound::Included(&k[..])))
    } else {
        t.range((Bound::Included(&k[..]), Bound::Unbounded))
    };
    let mut c = c.unwrap().with_limit(limit);
    let (mut n, mut sum) = (0, 0u64);
    while let Some(r) = c.next_ref() {
        let (k, v) = r.unwrap();
        sum = sum.wrapping_add(u64::from(k[7]) + u64::from(v[v.len() - 1]) + v.len() as u64);
        n += 1;
    }
    (n, sum)
}

#[test]
fn warm_range_scans_do_not_allocate() {
    let (_db, trees) = three_trees();
    for (name, t) in &trees {
        // Warm: pages decoded, the buffers grown to a whole leaf (an unlimited scan copies
        // every row of each leaf), in both directions (each bound has its buffer).
        assert_eq!(scan(t, 0, usize::MAX, false).0, ROWS as usize);
        assert_eq!(scan(t, ROWS, usize::MAX, true).0, ROWS as usize);
        let before = allocs();
        let (mut rows, mut sum) = (0, 0u64);
        for s in 0..200u64 {
            let start = (s * 7919) % ROWS;
            let (n, x) = scan(t, start, 100, s % 4 == 3);
            rows += n;
            sum = sum.wrapping_add(x);
        }
        let n = allocs() - before;
        assert!(rows > 150 * 100 && sum > 0, "{name}: {rows} rows");
        assert_eq!(
            n, 0,
            "{name}: {n} allocations in 200 warm scans of 100 rows"
        );
    }
}
