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
//! - **Drift** (step 7, design §2.5): the encoder counts raw and stored bytes of the values
//!   written since the current version was installed; once [`DriftConfig::min_records`] were
//!   written, the running ratio is worse than the trained one by [`DriftConfig::worse_per_mille`]
//!   and the last install is [`DriftConfig::min_interval`] old, the tree collects a ring of
//!   recently written values ([`DriftConfig::ring_bytes`]) and trains the next version
//!   ([`SymbolTables::note_written`], called by `put` after its latches are released).
//! - **Retirement.** A version that is not current and whose page count is 0 is dropped from
//!   the catalog by the next checkpoint's [`SymbolTables::snapshot`] (under the gate held
//!   exclusively, so no page changes version meanwhile). Only *exact* counts retire a version:
//!   those of versions installed by this open (kept from 0 by allocate, free and rebuild), or
//!   recounted by `verify`, or proven 0 by `OPTIMIZE TABLE` (every leaf rewritten onto a newer
//!   version). Counts loaded from a catalog are not trusted (earlier builds saved stale ones).
//!
//! Slots are never emptied or reused within one open: a retired version's table stays in its
//! slot, so a cursor holding codes of it (copied from a leaf before the leaf was rebuilt)
//! still decodes them. Installing a version whose slot is taken fails
//! ([`SymbolTables::install`] returns `None`; the retrain is counted as skipped), so one tree
//! object holds at most [`SLOTS`] versions over its life, loaded ones included; a reopen
//! starts with the live ones only. At [`TABLE_VERSIONS_MAX`] live versions retraining waits
//! (counted) until a version retires.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use zipdb_storage::fsst::SymbolTable;
use zipdb_storage::TreeId;

use crate::catalog::{PerMille, SymbolTableVersion, TableVersion, TABLE_VERSIONS_MAX};
use crate::error::{Error, Result};

/// Slots per tree. Twice the live-version cap, so that a tree reopened with versions
/// `v-3 ..= v` (any `v`) and then one retrain still finds every version in its own slot.
pub const SLOTS: usize = 8;
const _: () = assert!(SLOTS >= 2 * TABLE_VERSIONS_MAX);

/// Sample bytes a tree's symbol tables are trained on, first and after drift: four times the
/// FSST paper's 16 KB. On real text (debian_docs) the table-level size falls 3.6% against
/// 16 KB, and 128 or 256 KB gain under 1% more (BENCHMARKS, session 19); training takes about
/// 8 ms instead of 2, once per table version.
pub const TRAINING_BYTES: usize = 64 * 1024;

/// Raw value bytes a table-less tree collects before its first training.
pub const FIRST_TRAINING_BYTES: usize = TRAINING_BYTES;

/// One installed version.
#[derive(Debug)]
pub struct Installed {
    pub version: TableVersion,
    pub table: SymbolTable,
    pub trained_ratio: PerMille,
    /// Pages whose FSST cells use this version.
    pages: AtomicU64,
    /// `pages` is exact (module docs "Retirement").
    exact: AtomicBool,
    /// Dropped from the catalog; its table stays for readers (module docs).
    retired: AtomicBool,
}

impl Installed {
    fn new(version: TableVersion, table: SymbolTable, ratio: PerMille, pages: u64) -> Installed {
        Installed {
            version,
            table,
            trained_ratio: ratio,
            pages: AtomicU64::new(pages),
            exact: AtomicBool::new(false),
            retired: AtomicBool::new(false),
        }
    }

    pub fn pages(&self) -> u64 {
        self.pages.load(Ordering::Relaxed)
    }

    /// Whether the page count is exact (module docs "Retirement").
    pub fn exact(&self) -> bool {
        self.exact.load(Ordering::Relaxed)
    }

    pub fn retired(&self) -> bool {
        self.retired.load(Ordering::Relaxed)
    }
}

/// When a tree retrains (design §2.5 "Drift"). [`DriftConfig::DEFAULT`] holds the design's
/// thresholds; tests lower them with [`SymbolTables::set_drift_config`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriftConfig {
    /// Values written since the current version was installed before drift is judged.
    pub min_records: u64,
    /// Retrain when the running ratio exceeds the trained one times this, in thousandths.
    pub worse_per_mille: u64,
    /// Least time between two installs.
    pub min_interval: Duration,
    /// Raw bytes of recent values the next version is trained on.
    pub ring_bytes: usize,
}

impl DriftConfig {
    pub const DEFAULT: DriftConfig = DriftConfig {
        min_records: 4096,
        worse_per_mille: 1150,
        min_interval: Duration::from_secs(10),
        ring_bytes: TRAINING_BYTES,
    };
}

/// Drift is judged once per this many values a stripe encodes, so `put` reads one flag, not
/// every stripe's counters.
const DRIFT_CHECK_EVERY: u64 = 64;

/// Retraining state of a tree, under one mutex taken only while drift is suspected.
#[derive(Debug)]
struct Retrain {
    config: DriftConfig,
    /// When the current version was installed (monotonic).
    installed_at: Option<Instant>,
    /// Recent raw values while drift is suspected, and their bytes.
    ring: Vec<Vec<u8>>,
    ring_bytes: usize,
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
    retrain: Mutex<Retrain>,
    /// Set when a drift check found the running ratio degraded: `put` then feeds the ring.
    drifting: AtomicBool,
    retrains: AtomicU64,
    retrains_skipped: AtomicU64,
    /// Leaves rebuilt onto the current version by a write (lazy re-encoding).
    leaves_reencoded: AtomicU64,
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
    /// Since the current version was installed: values encoded, their raw bytes and the
    /// bytes stored (codes when shorter, else raw). Reset by an install.
    drift_records: AtomicU64,
    drift_raw: AtomicU64,
    drift_stored: AtomicU64,
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
    /// Versions in the catalog (installed, not retired).
    pub live_versions: u32,
    /// Versions trained because of drift (or OPTIMIZE TABLE), since open.
    pub retrains: u64,
    /// Drift retrains not done: live-version cap or no free slot.
    pub retrains_skipped: u64,
    /// Leaves rebuilt onto the current version by a write.
    pub leaves_reencoded: u64,
    /// Since the current version was installed: raw and stored bytes of written values
    /// (stored: codes when shorter, else raw), the drift signal.
    pub drift_raw: u64,
    pub drift_stored: u64,
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
            retrain: Mutex::new(Retrain {
                config: DriftConfig::DEFAULT,
                installed_at: None,
                ring: Vec::new(),
                ring_bytes: 0,
            }),
            drifting: AtomicBool::new(false),
            retrains: AtomicU64::new(0),
            retrains_skipped: AtomicU64::new(0),
            leaves_reencoded: AtomicU64::new(0),
        }
    }

    /// Replaces the drift thresholds (tests lower them; the defaults are the design's).
    pub fn set_drift_config(&self, config: DriftConfig) {
        self.retrain.lock().config = config;
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
        c.drift_raw.fetch_add(v.len() as u64, Ordering::Relaxed);
        c.drift_stored
            .fetch_add(n.min(v.len()) as u64, Ordering::Relaxed);
        let seen = c.drift_records.fetch_add(1, Ordering::Relaxed) + 1;
        if seen.is_multiple_of(DRIFT_CHECK_EVERY) && !self.drifting.load(Ordering::Relaxed) {
            self.check_drift();
        }
        n
    }

    /// The drift counters summed over the stripes: (records, raw, stored).
    fn drift_totals(&self) -> (u64, u64, u64) {
        self.counters.iter().fold((0, 0, 0), |(r, a, b), c| {
            (
                r + c.drift_records.load(Ordering::Relaxed),
                a + c.drift_raw.load(Ordering::Relaxed),
                b + c.drift_stored.load(Ordering::Relaxed),
            )
        })
    }

    fn reset_drift(&self) {
        for c in &self.counters {
            c.drift_records.store(0, Ordering::Relaxed);
            c.drift_raw.store(0, Ordering::Relaxed);
            c.drift_stored.store(0, Ordering::Relaxed);
        }
    }

    /// Sets `drifting` when the values written since the current install compress worse than
    /// its sample did (design §2.5 "Drift"); at the live-version cap, counts a skipped retrain
    /// and starts a new window instead.
    #[cold]
    fn check_drift(&self) {
        let Some(cur) = self.current() else {
            return;
        };
        let (records, raw, stored) = self.drift_totals();
        let r = self.retrain.lock();
        let cfg = r.config;
        if records < cfg.min_records || raw == 0 {
            return;
        }
        let limit = u64::from(cur.trained_ratio.0) * cfg.worse_per_mille;
        if stored * 1_000_000 <= limit * raw {
            return;
        }
        if r.installed_at
            .is_some_and(|t| t.elapsed() < cfg.min_interval)
        {
            return;
        }
        drop(r);
        if self.live_versions() >= TABLE_VERSIONS_MAX {
            self.retrains_skipped.fetch_add(1, Ordering::Relaxed);
            self.reset_drift();
            return;
        }
        self.drifting.store(true, Ordering::Relaxed);
    }

    /// Drift retraining (design §2.5): while drift is suspected, keeps `value` (an inline value
    /// just written) in the ring, and once the ring holds [`DriftConfig::ring_bytes`], trains
    /// the next version on it and installs it. The caller holds no latch and holds the
    /// checkpoint gate shared, as for the first training. One branch when no drift is suspected.
    #[inline]
    pub fn note_written(&self, value: &[u8]) {
        if self.drifting.load(Ordering::Relaxed) {
            self.feed_ring(value);
        }
    }

    #[cold]
    fn feed_ring(&self, value: &[u8]) {
        let samples = {
            let mut r = self.retrain.lock();
            if !self.drifting.load(Ordering::Relaxed) {
                return;
            }
            r.ring_bytes += value.len();
            r.ring.push(value.to_vec());
            if r.ring_bytes < r.config.ring_bytes {
                return;
            }
            r.ring_bytes = 0;
            // Cleared under the lock: exactly one thread trains on this ring.
            self.drifting.store(false, Ordering::Relaxed);
            std::mem::take(&mut r.ring)
        };
        let (table, ratio) = train(&samples);
        if self.install_counted(table, ratio).is_some() {
            self.retrains.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// [`SymbolTables::install`] within the live-version cap; a refusal counts as a skipped
    /// retrain.
    pub fn install_counted(&self, table: SymbolTable, ratio: PerMille) -> Option<TableVersion> {
        let v = (self.live_versions() < TABLE_VERSIONS_MAX)
            .then(|| self.install(table, ratio))
            .flatten();
        if v.is_none() {
            self.retrains_skipped.fetch_add(1, Ordering::Relaxed);
            self.reset_drift();
        }
        v
    }

    /// Versions installed and not retired.
    pub fn live_versions(&self) -> usize {
        self.slots
            .iter()
            .filter_map(OnceLock::get)
            .filter(|s| !s.retired())
            .count()
    }

    /// A version was trained outside drift (`OPTIMIZE TABLE`).
    pub(crate) fn count_retrain(&self) {
        self.retrains.fetch_add(1, Ordering::Relaxed);
    }

    /// A write rebuilt a leaf onto the current version.
    pub(crate) fn count_leaf_reencoded(&self) {
        self.leaves_reencoded.fetch_add(1, Ordering::Relaxed);
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
        let (_, drift_raw, drift_stored) = self.drift_totals();
        RecordStats {
            live_versions: self.live_versions() as u32,
            retrains: self.retrains.load(Ordering::Relaxed),
            retrains_skipped: self.retrains_skipped.load(Ordering::Relaxed),
            leaves_reencoded: self.leaves_reencoded.load(Ordering::Relaxed),
            drift_raw,
            drift_stored,
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
        let bad = |detail: String| Error::corrupt_catalog(format!("tree {tree:?}: {detail}"));
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
            let installed = Installed::new(v.version, v.table.clone(), v.trained_ratio, v.pages);
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
        let installed = Installed::new(next, table, trained_ratio, 0);
        // Counted from 0 by this open: exact.
        installed.exact.store(true, Ordering::Relaxed);
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
        self.reset_drift();
        // A new version (drift or OPTIMIZE) restarts the judgement: a ring being collected
        // for the old one would train on values the new one has not been measured on yet.
        let mut r = self.retrain.lock();
        r.installed_at = Some(Instant::now());
        r.ring.clear();
        r.ring_bytes = 0;
        self.drifting.store(false, Ordering::Relaxed);
        Some(next)
    }

    /// A leaf moved from version `from` to `to` (0: none): rebuilt, or took its first FSST
    /// cell. Called under the leaf's exclusive latch and the checkpoint gate shared.
    pub fn retag(&self, from: u16, to: u16) {
        if from != to {
            self.page_removed(TableVersion(from));
            self.page_added(TableVersion(to));
        }
    }

    /// Every leaf of the tree was rewritten onto `version` or a newer one (`OPTIMIZE TABLE`)
    /// while no write could move a leaf back: older versions have no pages, exactly.
    pub fn older_than_have_no_pages(&self, version: TableVersion) {
        for s in self.slots.iter().filter_map(OnceLock::get) {
            if s.version < version {
                s.pages.store(0, Ordering::Relaxed);
                s.exact.store(true, Ordering::Relaxed);
            }
        }
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

    /// Overwrites the page counts with a recount made with no writer running (`verify`);
    /// versions absent from `counts` get 0. The counts are exact afterwards. Fails, after
    /// storing the recount, when a count kept exact differs from it or a retired version
    /// still has pages: the upkeep lost track.
    pub fn set_page_counts(
        &self,
        counts: &[(TableVersion, u64)],
    ) -> std::result::Result<(), String> {
        let mut wrong = Vec::new();
        for s in self.slots.iter().filter_map(OnceLock::get) {
            let n = counts
                .iter()
                .find(|(v, _)| *v == s.version)
                .map_or(0, |&(_, n)| n);
            if (s.exact() && s.pages() != n) || (s.retired() && n != 0) {
                wrong.push(format!(
                    "version {} counted {} pages, has {n}{}",
                    s.version.0,
                    s.pages(),
                    if s.retired() { " (retired)" } else { "" }
                ));
            }
            s.pages.store(n, Ordering::Relaxed);
            s.exact.store(true, Ordering::Relaxed);
        }
        match wrong.is_empty() {
            true => Ok(()),
            false => Err(wrong.join("; ")),
        }
    }

    /// The live versions, oldest first, as a catalog entry lists them. Retires first (module
    /// docs): a version that is not current and has exactly 0 pages is left out, now and
    /// later. The checkpoint calls this under the gate held exclusively, so no page changes
    /// version meanwhile.
    pub fn snapshot(&self) -> Vec<SymbolTableVersion> {
        let cur = self.current.load(Ordering::Acquire);
        for s in self.slots.iter().filter_map(OnceLock::get) {
            if s.version.0 != cur && s.exact() && s.pages() == 0 {
                s.retired.store(true, Ordering::Relaxed);
            }
        }
        let mut out: Vec<SymbolTableVersion> = self
            .slots
            .iter()
            .filter_map(OnceLock::get)
            .filter(|s| !s.retired())
            .map(|s| SymbolTableVersion {
                version: s.version,
                table: s.table.clone(),
                trained_ratio: s.trained_ratio,
                pages: s.pages(),
            })
            .collect();
        out.sort_by_key(|s| s.version);
        // Installs go through `install_counted` (the live cap) but for the first training,
        // so the list fits the catalog's cap; dropping a version here would lose pages.
        debug_assert!(
            out.len() <= TABLE_VERSIONS_MAX,
            "{} live versions",
            out.len()
        );
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
        // Only this thread took the sample; an `OPTIMIZE TABLE` racing it may have installed a
        // version meanwhile, and then this one simply becomes the next.
        let _ = self.install(table, ratio);
    }

    pub fn is_empty(&self) -> bool {
        self.current.load(Ordering::Acquire) == 0
    }
}

/// Trains a table on `samples` and measures it on them: the ratio is encoded/raw in
/// thousandths (drift, step 7, compares against it).
pub fn train<S: AsRef<[u8]>>(samples: &[S]) -> (SymbolTable, PerMille) {
    train_with(samples, TRAINING_BYTES)
}

/// [`train`] with a sample budget of `budget` bytes.
pub fn train_with<S: AsRef<[u8]>>(samples: &[S], budget: usize) -> (SymbolTable, PerMille) {
    let table = SymbolTable::train_with(samples, budget);
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
    fn live_cap_and_slots_are_not_reused() {
        let set = SymbolTables::new(TreeId(1));
        let (t, r) = trained();
        for v in 1..=TABLE_VERSIONS_MAX as u16 {
            assert_eq!(set.install_counted(t.clone(), r), Some(TableVersion(v)));
        }
        assert_eq!(set.install_counted(t.clone(), r), None, "live cap");
        assert_eq!(set.record_stats().retrains_skipped, 1);
        // Versions 1..3 have (exactly) no pages and are not current: the checkpoint's
        // snapshot retires them, which frees room under the cap but not their slots.
        let cur = TableVersion(TABLE_VERSIONS_MAX as u16);
        set.page_added(cur);
        let snap = set.snapshot();
        assert_eq!(snap.len(), 1);
        assert_eq!(snap[0].version, cur);
        assert_eq!(set.live_versions(), 1);
        assert!(
            set.get(TableVersion(1)).is_some(),
            "retired tables stay readable"
        );
        for v in TABLE_VERSIONS_MAX as u16 + 1..=SLOTS as u16 {
            assert_eq!(set.install_counted(t.clone(), r), Some(TableVersion(v)));
            set.retag(v - 1, v);
            assert_eq!(set.snapshot().len(), 1);
        }
        assert_eq!(
            set.install_counted(t.clone(), r),
            None,
            "slot of version 1 is still held"
        );
        assert_eq!(set.record_stats().retrains_skipped, 2);
        assert_eq!(set.current().unwrap().version, TableVersion(SLOTS as u16));
    }

    #[test]
    fn loaded_counts_are_not_trusted_until_recounted() {
        let (t, r) = trained();
        let v = |n, pages| SymbolTableVersion {
            version: TableVersion(n),
            table: t.clone(),
            trained_ratio: r,
            pages,
        };
        let set = SymbolTables::from_catalog(TreeId(1), &[v(3, 0), v(4, 2)]).unwrap();
        assert_eq!(set.live_versions(), 2);
        assert_eq!(set.snapshot().len(), 2, "a loaded 0 may be stale: kept");
        let err = set
            .set_page_counts(&[(TableVersion(4), 3)])
            .map(|()| "agreed");
        assert_eq!(err, Ok("agreed"), "loaded counts are not checked");
        assert_eq!(set.snapshot().len(), 1, "recounted 0: retired");
        set.page_added(TableVersion(4));
        let err = set.set_page_counts(&[(TableVersion(4), 3), (TableVersion(3), 1)]);
        let msg = err.unwrap_err();
        assert!(msg.contains("version 4 counted 4 pages, has 3"), "{msg}");
        assert!(msg.contains("(retired)"), "{msg}");
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
        assert!(
            set.set_page_counts(&[(v, 5)]).is_err(),
            "kept 0, recounted 5"
        );
        assert_eq!(set.get(v).unwrap().pages(), 5);
        assert!(set.set_page_counts(&[(v, 5)]).is_ok());
        assert!(set.set_page_counts(&[]).is_err());
        assert_eq!(set.get(v).unwrap().pages(), 0);
    }

    #[test]
    fn catalog_round_trip_keeps_versions_and_decodes() {
        let set = SymbolTables::new(TreeId(3));
        let (t, r) = trained();
        let v1 = set.install(t.clone(), r).unwrap();
        let v2 = set.install(t, r).unwrap();
        set.page_added(v2);
        // A version without pages would retire at this snapshot; give version 1 one.
        set.page_added(v1);
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
                cold_dict: None,
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
        assert_eq!(again.get(v1).unwrap().pages(), 1);
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

#[cfg(test)]
#[path = "symtab_tree_tests.rs"]
mod tree_tests;
