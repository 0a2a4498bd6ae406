//! A tree's FSST symbol tables (issue 19 step 4, design §2.5).
//!
//! A tree whose records are FSST-encoded names, in each compact leaf, the one table version its
//! FSST cells use. [`SymbolTables`] maps versions to tables for that tree:
//!
//! - **Hot path.** [`SymbolTables::get`] is a slot load and a tag compare: the slots are a fixed
//!   array of [`OnceLock`]s indexed by `version % SLOTS`, so a get takes no lock and touches no
//!   reference count. A [`SymbolTable`] is both the decoder and the encoder.
//! - **Install.** [`SymbolTables::install`] fills a free slot and only then makes the version
//!   current. The caller holds the database's checkpoint gate shared while it installs and
//!   until the first record uses the version; a checkpoint captures [`SymbolTables::snapshot`]
//!   under the gate held exclusively, so the pages of a checkpoint name only versions in that
//!   checkpoint's catalog (design §4 "Recovery"). No WAL record is needed: after a crash, replay
//!   encodes with whatever versions the reopened tree has.
//! - **Page counts** per version are atomics, moved only by page allocation, free and rebuild
//!   (under the gate); `verify` recounts them.
//!
//! Slots are never emptied: a version's table lives as long as the in-memory tree. Installing
//! a version whose slot still holds an older one fails ([`SymbolTables::install`] returns
//! `None`), so one tree object holds at most [`SLOTS`] versions over its life. Retraining
//! (step 7) is where slot reuse must be added (it needs a grace period for readers still
//! holding a `&SymbolTable`); until then only first training installs a version.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use parking_lot::Mutex;

use zipdb_storage::fsst::SymbolTable;
use zipdb_storage::TreeId;

use crate::catalog::{PerMille, SymbolTableVersion, TableVersion, TABLE_VERSIONS_MAX};
use crate::error::{Error, Result};

/// Slots per tree. Twice the live-version cap, so that a tree reopened with versions
/// `v-3 ..= v` (any `v`) and then one retrain still finds every version in its own slot.
pub const SLOTS: usize = 8;
const _: () = assert!(SLOTS >= 2 * TABLE_VERSIONS_MAX);

/// Raw value bytes a table-less tree collects before its first training: the trainer's
/// sample budget (the FSST paper's 16 KB).
pub const FIRST_TRAINING_BYTES: usize = zipdb_storage::fsst::SAMPLE_BYTES;

/// One installed version.
#[derive(Debug)]
pub struct Installed {
    pub version: TableVersion,
    pub table: SymbolTable,
    pub trained_ratio: PerMille,
    /// Pages whose FSST cells use this version.
    pages: AtomicU64,
}

impl Installed {
    pub fn pages(&self) -> u64 {
        self.pages.load(Ordering::Relaxed)
    }
}

/// The symbol-table versions of one tree (empty for trees whose records are not FSST).
#[derive(Debug)]
pub struct SymbolTables {
    tree: TreeId,
    slots: [OnceLock<Installed>; SLOTS],
    /// The version new records are encoded with; 0 while the tree has none.
    current: AtomicU16,
    /// Raw values written while the tree has no table, for its first training; `None`
    /// once handed to training.
    sample: Mutex<Option<(usize, Vec<Vec<u8>>)>>,
    /// Record-codec counters (design §2.8), one stripe per group of threads.
    counters: [RecordCounters; STRIPES],
}

/// Counter stripes per tree. Every get of an FSST tree counts a decode; one shared counter
/// would make all threads reading a tree write the same cache line. A thread always uses the
/// same stripe, so its own counts stay exact and a snapshot sums the stripes.
const STRIPES: usize = 8;

/// The stripe of the calling thread, assigned round-robin at its first count.
fn stripe() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.try_with(|s| *s).unwrap_or(0)
}

/// One call in this many is timed: an `Instant::now` pair costs about as much as decoding a
/// short record (design §2.8), so timing every call would double a point get's decode cost.
/// The sampled durations are scaled by this factor, so the ns counters are estimates.
pub const TIME_ONE_IN: u64 = 64;

/// One stripe of a tree's record-codec counters, since the tree was opened (in memory only,
/// never saved).
///
/// Relaxed atomics, no lock: a decode adds one to `decoded` (and, one call in
/// [`TIME_ONE_IN`], a scaled duration). Aligned to its own cache lines so that these writes
/// do not evict the read-mostly slots and `current` that every get reads.
#[derive(Debug, Default)]
#[repr(align(128))]
struct RecordCounters {
    /// Values handed to the encoder (the tree had a table): stored FSST or raw.
    encodes: AtomicU64,
    /// Of those, values whose codes were shorter (stored FSST).
    encoded: AtomicU64,
    /// Raw bytes of the encoded values, and their codes' bytes: the running ratio of newly
    /// written records (the drift signal of step 7, against the trained ratio).
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    encode_ns: AtomicU64,
    decoded: AtomicU64,
    decode_ns: AtomicU64,
}

/// Starts a call counted by `n`: its start time when this call is one of the timed ones.
#[inline]
fn sample_start(n: &AtomicU64) -> Option<Instant> {
    n.fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(TIME_ONE_IN)
        .then(Instant::now)
}

#[inline]
fn sample_end(start: Option<Instant>, ns: &AtomicU64) {
    if let Some(t0) = start {
        let d = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        ns.fetch_add(d.saturating_mul(TIME_ONE_IN), Ordering::Relaxed);
    }
}

/// A snapshot of one FSST tree's record codec, for `TreeStats`. Counters run since the tree
/// was opened (server start) and are never saved. Every decode counts, `verify`'s included;
/// every value encoded counts once per write attempt (an insert that finds its key still
/// encoded it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordStats {
    /// The version new records are encoded with; 0 before the first training.
    pub version: u16,
    /// Installed versions.
    pub versions: u32,
    /// The current version's ratio on its training sample, in thousandths (0 without one).
    pub trained_ratio_per_mille: u16,
    /// Values written stored FSST.
    pub records_encoded: u64,
    /// Values written raw although the tree had a table (codes not shorter).
    pub records_raw: u64,
    /// Raw and encoded bytes of the values stored FSST: `bytes_out / bytes_in` is the
    /// running ratio of newly written records.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub records_decoded: u64,
    /// Estimated from one call in [`TIME_ONE_IN`], scaled.
    pub decode_ns: u64,
    /// Estimated from one call in [`TIME_ONE_IN`], scaled (includes raw outcomes).
    pub encode_ns: u64,
}

fn slot_of(v: TableVersion) -> usize {
    usize::from(v.0) % SLOTS
}

impl SymbolTables {
    pub fn new(tree: TreeId) -> SymbolTables {
        SymbolTables {
            tree,
            slots: std::array::from_fn(|_| OnceLock::new()),
            current: AtomicU16::new(0),
            sample: Mutex::new(Some((0, Vec::new()))),
            counters: Default::default(),
        }
    }

    /// Encodes `v` with `t` into `buf` (cleared first), counting it; returns the codes'
    /// length. Shorter codes are what the caller stores, so they count as encoded.
    #[inline]
    pub(crate) fn encode_counted(&self, t: &SymbolTable, v: &[u8], buf: &mut Vec<u8>) -> usize {
        let c = &self.counters[stripe()];
        let start = sample_start(&c.encodes);
        buf.clear();
        let n = t.encode(v, buf);
        sample_end(start, &c.encode_ns);
        if n < v.len() {
            c.encoded.fetch_add(1, Ordering::Relaxed);
            c.bytes_in.fetch_add(v.len() as u64, Ordering::Relaxed);
            c.bytes_out.fetch_add(n as u64, Ordering::Relaxed);
        }
        n
    }

    /// Decodes `codes` with `t`, appending to `out`, counting it.
    #[inline]
    pub(crate) fn decode_counted(
        &self,
        t: &SymbolTable,
        codes: &[u8],
        out: &mut Vec<u8>,
    ) -> std::result::Result<usize, zipdb_storage::fsst::DecodeError> {
        let c = &self.counters[stripe()];
        let start = sample_start(&c.decoded);
        let r = t.decode(codes, out);
        sample_end(start, &c.decode_ns);
        r
    }

    /// The counters and the current version now.
    pub fn record_stats(&self) -> RecordStats {
        let sum = |f: fn(&RecordCounters) -> &AtomicU64| -> u64 {
            self.counters
                .iter()
                .map(|c| f(c).load(Ordering::Relaxed))
                .fold(0, u64::wrapping_add)
        };
        let cur = self.current();
        let encoded = sum(|c| &c.encoded);
        RecordStats {
            version: cur.map_or(0, |s| s.version.0),
            versions: self.slots.iter().filter(|s| s.get().is_some()).count() as u32,
            trained_ratio_per_mille: cur.map_or(0, |s| s.trained_ratio.0),
            records_encoded: encoded,
            // Loaded apart, so a put between the loads may show as raw for one snapshot.
            records_raw: sum(|c| &c.encodes).saturating_sub(encoded),
            bytes_in: sum(|c| &c.bytes_in),
            bytes_out: sum(|c| &c.bytes_out),
            records_decoded: sum(|c| &c.decoded),
            decode_ns: sum(|c| &c.decode_ns),
            encode_ns: sum(|c| &c.encode_ns),
        }
    }

    /// The set saved in a catalog entry (oldest first; the last one is current).
    pub fn from_catalog(tree: TreeId, versions: &[SymbolTableVersion]) -> Result<SymbolTables> {
        let set = SymbolTables::new(tree);
        let bad = |detail: String| Error::CorruptCatalog(format!("tree {tree:?}: {detail}"));
        if versions.len() > TABLE_VERSIONS_MAX {
            return Err(bad(format!(
                "{} symbol-table versions (at most {TABLE_VERSIONS_MAX})",
                versions.len()
            )));
        }
        let mut last = 0u16;
        for v in versions {
            // Oldest first, so the last one is the newest; the catalog decoder checks
            // uniqueness, the order is checked here because `current` relies on it.
            if v.version.0 <= last {
                return Err(bad(format!(
                    "symbol-table version {} follows {last}: versions must ascend",
                    v.version.0
                )));
            }
            last = v.version.0;
            let installed = Installed {
                version: v.version,
                table: v.table.clone(),
                trained_ratio: v.trained_ratio,
                pages: AtomicU64::new(v.pages),
            };
            if set.slots[slot_of(v.version)].set(installed).is_err() {
                return Err(bad(format!(
                    "symbol-table versions {} apart share a slot",
                    SLOTS
                )));
            }
        }
        set.current.store(last, Ordering::Release);
        Ok(set)
    }

    pub fn tree(&self) -> TreeId {
        self.tree
    }

    /// The table of `version`, if installed. No lock, no reference count.
    #[inline]
    pub fn get(&self, version: TableVersion) -> Option<&Installed> {
        self.slots[slot_of(version)]
            .get()
            .filter(|s| s.version == version && version.0 != 0)
    }

    /// The version new records are encoded with, if any.
    #[inline]
    pub fn current(&self) -> Option<&Installed> {
        let v = self.current.load(Ordering::Acquire);
        if v == 0 {
            return None;
        }
        let s = self.get(TableVersion(v));
        debug_assert!(s.is_some(), "current version {v} is not installed");
        s
    }

    /// Installs `table` as the next version and makes it current. The caller holds the
    /// checkpoint gate shared (module docs). Returns `None` when the next version's slot is
    /// still taken or versions are exhausted; the tree then keeps encoding with the current one.
    pub fn install(&self, table: SymbolTable, trained_ratio: PerMille) -> Option<TableVersion> {
        let cur = self.current.load(Ordering::Acquire);
        let next = TableVersion(cur.checked_add(1)?);
        let installed = Installed {
            version: next,
            table,
            trained_ratio,
            pages: AtomicU64::new(0),
        };
        self.slots[slot_of(next)].set(installed).ok()?;
        // Two installers racing would both see `cur`; the slot's `set` lets only one win, and
        // the winner moves `current` exactly once.
        let moved = self
            .current
            .compare_exchange(cur, next.0, Ordering::AcqRel, Ordering::Acquire);
        assert!(
            moved.is_ok(),
            "symbol-table version {} installed twice",
            next.0
        );
        Some(next)
    }

    /// A page now uses `version`'s table (allocated or rebuilt on it).
    pub fn page_added(&self, version: TableVersion) {
        if let Some(s) = self.get(version) {
            s.pages.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A page no longer uses `version`'s table (freed or rebuilt on another).
    pub fn page_removed(&self, version: TableVersion) {
        if let Some(s) = self.get(version) {
            // Saturating: counts from an older catalog may be off until `verify` recounts.
            let _ = s
                .pages
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        }
    }

    /// Overwrites the page counts with a recount (`verify`); versions absent from `counts`
    /// get 0.
    pub fn set_page_counts(&self, counts: &[(TableVersion, u64)]) {
        for s in self.slots.iter().filter_map(OnceLock::get) {
            let n = counts
                .iter()
                .find(|(v, _)| *v == s.version)
                .map_or(0, |&(_, n)| n);
            s.pages.store(n, Ordering::Relaxed);
        }
    }

    /// The live versions, oldest first, as a catalog entry lists them.
    pub fn snapshot(&self) -> Vec<SymbolTableVersion> {
        let mut out: Vec<SymbolTableVersion> = self
            .slots
            .iter()
            .filter_map(OnceLock::get)
            .map(|s| SymbolTableVersion {
                version: s.version,
                table: s.table.clone(),
                trained_ratio: s.trained_ratio,
                pages: s.pages(),
            })
            .collect();
        out.sort_by_key(|s| s.version);
        // Retirement (step 7) drops versions with no pages; until then a tree installs at most
        // one version per training and keeps it, so the list stays within the catalog's cap.
        let keep = out.len().saturating_sub(TABLE_VERSIONS_MAX);
        out.drain(..keep);
        out
    }

    /// First training (design §2.5): keeps `value` while the tree has no table, and once
    /// [`FIRST_TRAINING_BYTES`] are kept, trains on them and installs version 1. The caller
    /// holds no latch (training takes about a millisecond) and holds the checkpoint gate
    /// shared (module docs). Earlier records stay raw until their leaf is rebuilt.
    ///
    /// Why a byte count rather than the first leaf split: the values are at hand in `put`
    /// without reading a latched leaf, the sample size is the trainer's own budget whatever
    /// the page size, and a tree of long overflow values (never sampled) is never trained.
    pub fn note_raw_for_training(&self, value: &[u8]) {
        let samples = {
            let mut g = self.sample.lock();
            let Some((bytes, vals)) = g.as_mut() else {
                return;
            };
            *bytes += value.len();
            vals.push(value.to_vec());
            if *bytes < FIRST_TRAINING_BYTES {
                return;
            }
            g.take().map(|(_, v)| v).unwrap_or_default()
        };
        if !self.is_empty() {
            return;
        }
        let (table, ratio) = train(&samples);
        let v = self.install(table, ratio);
        // Only this thread took the sample, and nothing else installs in this build.
        assert_eq!(
            v,
            Some(TableVersion(1)),
            "tree {:?}: first training",
            self.tree
        );
    }

    pub fn is_empty(&self) -> bool {
        self.current.load(Ordering::Acquire) == 0
    }
}

/// Trains a table on `samples` and measures it on them: the ratio is encoded/raw in
/// thousandths (drift, step 7, compares against it).
pub fn train<S: AsRef<[u8]>>(samples: &[S]) -> (SymbolTable, PerMille) {
    let table = SymbolTable::train(samples);
    let (mut raw, mut enc) = (0usize, 0usize);
    let mut buf = Vec::new();
    for s in samples {
        let s = s.as_ref();
        buf.clear();
        raw += s.len();
        // A value is stored FSST only when shorter, so the stored size is the minimum.
        enc += table.encode(s, &mut buf).min(s.len());
    }
    // An empty sample stores everything raw: ratio 1.
    let ratio = enc
        .saturating_mul(1000)
        .checked_div(raw)
        .map_or(1000, |r| r.min(usize::from(u16::MAX)) as u16);
    (table, PerMille(ratio))
}

#[cfg(test)]
mod tests_support {
    use super::*;

    pub(super) fn sbtest_value(i: u64) -> Vec<u8> {
        let mut s = String::new();
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for g in 0..10 {
            if g > 0 {
                s.push('-');
            }
            for _ in 0..11 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(char::from(b'0' + (x % 10) as u8));
            }
        }
        s.into_bytes()
    }

    pub(super) fn trained() -> (SymbolTable, PerMille) {
        let samples: Vec<Vec<u8>> = (0..200).map(sbtest_value).collect();
        train(&samples)
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::{sbtest_value, trained};
    use super::*;
    use crate::catalog::{Catalog, CatalogEntry, CATALOG_VERSION};
    use crate::format::{RecordCodec, TreeFormat};
    use zipdb_storage::PageId;

    #[test]
    fn install_get_and_current() {
        let set = SymbolTables::new(TreeId(7));
        assert!(set.is_empty());
        assert!(set.current().is_none());
        assert!(set.get(TableVersion(0)).is_none());
        let (t, ratio) = trained();
        assert!(
            ratio.0 < 600,
            "digit groups should train below 0.6, got {}",
            ratio.0
        );
        let v1 = set.install(t.clone(), ratio).unwrap();
        assert_eq!(v1, TableVersion(1));
        assert_eq!(set.current().unwrap().version, v1);
        assert_eq!(set.get(v1).unwrap().table, t);
        // A version in the same slot but not installed is refused by the tag.
        assert!(set.get(TableVersion(1 + SLOTS as u16)).is_none());
        let v2 = set.install(t.clone(), ratio).unwrap();
        assert_eq!(v2, TableVersion(2));
        assert_eq!(set.current().unwrap().version, v2);
        assert!(set.get(v1).is_some(), "older versions stay readable");
    }

    #[test]
    fn slots_are_not_reused_yet() {
        let set = SymbolTables::new(TreeId(1));
        let (t, r) = trained();
        for v in 1..=SLOTS as u16 {
            assert_eq!(set.install(t.clone(), r), Some(TableVersion(v)));
        }
        assert_eq!(
            set.install(t.clone(), r),
            None,
            "slot of version 1 is still held"
        );
        assert_eq!(set.current().unwrap().version, TableVersion(SLOTS as u16));
        // The catalog keeps the newest four.
        let snap = set.snapshot();
        assert_eq!(snap.len(), TABLE_VERSIONS_MAX);
        assert_eq!(snap.last().unwrap().version, TableVersion(SLOTS as u16));
    }

    #[test]
    fn page_counts_move_and_recount() {
        let set = SymbolTables::new(TreeId(1));
        let (t, r) = trained();
        let v = set.install(t, r).unwrap();
        set.page_added(v);
        set.page_added(v);
        set.page_removed(v);
        assert_eq!(set.get(v).unwrap().pages(), 1);
        set.page_removed(v);
        set.page_removed(v);
        assert_eq!(set.get(v).unwrap().pages(), 0, "never below zero");
        set.set_page_counts(&[(v, 5)]);
        assert_eq!(set.get(v).unwrap().pages(), 5);
        set.set_page_counts(&[]);
        assert_eq!(set.get(v).unwrap().pages(), 0);
    }

    #[test]
    fn catalog_round_trip_keeps_versions_and_decodes() {
        let set = SymbolTables::new(TreeId(3));
        let (t, r) = trained();
        let v1 = set.install(t.clone(), r).unwrap();
        let v2 = set.install(t, r).unwrap();
        set.page_added(v2);
        let value = sbtest_value(12345);
        let mut enc = Vec::new();
        set.current().unwrap().table.encode(&value, &mut enc);

        let format = TreeFormat {
            records: RecordCodec::Fsst,
            ..TreeFormat::compact(zipdb_storage::Codec::None)
        };
        let cat = Catalog {
            next_tree_id: 4,
            redo_lsn: 0,
            wal_id: 1,
            entries: vec![CatalogEntry {
                name: "t".into(),
                id: TreeId(3),
                root: PageId(2),
                format,
                tables: set.snapshot(),
            }],
        };
        let bytes = cat.encode();
        assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), CATALOG_VERSION);
        let back = Catalog::decode(&bytes).unwrap();
        let again = SymbolTables::from_catalog(TreeId(3), &back.entries[0].tables).unwrap();
        assert_eq!(again.current().unwrap().version, v2);
        assert_eq!(again.get(v2).unwrap().pages(), 1);
        assert_eq!(again.get(v1).unwrap().pages(), 0);
        let mut dec = Vec::new();
        again.get(v2).unwrap().table.decode(&enc, &mut dec).unwrap();
        assert_eq!(dec, value);
        // The next install continues after the loaded versions.
        let (t, r) = trained();
        assert_eq!(again.install(t, r), Some(TableVersion(3)));
    }

    #[test]
    fn from_catalog_refuses_descending_versions() {
        let (t, r) = trained();
        let v = |n| SymbolTableVersion {
            version: TableVersion(n),
            table: t.clone(),
            trained_ratio: r,
            pages: 0,
        };
        let err = SymbolTables::from_catalog(TreeId(1), &[v(2), v(1)]).unwrap_err();
        assert!(err.to_string().contains("must ascend"), "{err}");
        assert!(SymbolTables::from_catalog(TreeId(1), &[])
            .unwrap()
            .is_empty());
    }
}

/// The read side in a tree: a root leaf built by hand with FSST cells (the write path is the
/// next piece of step 4) is read by `get`, cursors and `verify`, and the checks refuse a
/// leaf whose version the tree lacks and a value that decodes to another length.
#[cfg(test)]
mod tree_tests {
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
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let bt = tree_with(page, 64, FSST);
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
            matches!(e, Error::Corrupt { .. }) && e.to_string().contains("does not have"),
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
}
