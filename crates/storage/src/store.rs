//! The page store: variable-size page images written out of place, a page map from page id to
//! file extent, and atomic checkpoints of that map.
//!
//! Every write of a page goes to a freshly allocated extent, sized to the compressed image
//! rounded up to the allocation unit (512 bytes) — no fixed KEY_BLOCK_SIZE, no "compression
//! failure", no hole punching. The map is made durable by [`PageStore::checkpoint`], which writes a
//! new map blob out of place and then flips one of two superblock slots. An extent that the last
//! durable checkpoint references is reused only after the *next* checkpoint is durable, so a
//! crash at any moment leaves the previous checkpoint intact. The byte layout is in
//! docs/FORMAT.md.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use crate::error::{Result, StoreError};
use crate::io::{AlignedBuf, Storage};
use crate::page::{self, crc32c, ImageHeader, PageId, TreeId, IMAGE_HEADER_LEN};

/// Allocation unit of the data file. Equal to the O_DIRECT alignment, so every extent can be
/// read and written directly.
pub const UNIT: usize = 512;
/// Bytes reserved for each of the two superblock slots at the start of the file.
pub const SUPERBLOCK_SLOT: usize = 4096;
/// First byte where extents may live.
const DATA_START_UNITS: u64 = (2 * SUPERBLOCK_SLOT / UNIT) as u64;
/// Bytes of a superblock that are written and checksummed.
const SUPERBLOCK_LEN: usize = 512;
const SUPER_MAGIC: &[u8; 8] = b"ZIPDBv01";
const META_MAGIC: &[u8; 4] = b"ZMAP";
pub const FORMAT_VERSION: u32 = 1;
/// Header of the checkpoint blob: crc, magic, seq, page count, catalog length.
const META_HEADER_LEN: usize = 32;

/// A run of allocation units in the data file, packed into a u64 so the page map is one atomic
/// word per page: offset in units (high 40 bits) and length in units (low 24 bits). 0 = none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Extent(u64);

impl Extent {
    pub const NONE: Extent = Extent(0);
    const LEN_BITS: u32 = 24;

    pub fn new(offset_units: u64, len_units: u64) -> Extent {
        assert!((DATA_START_UNITS..1 << 40).contains(&offset_units));
        assert!(len_units > 0 && len_units < 1 << Self::LEN_BITS);
        Extent((offset_units << Self::LEN_BITS) | len_units)
    }
    pub fn from_raw(raw: u64) -> Extent {
        Extent(raw)
    }
    pub fn raw(self) -> u64 {
        self.0
    }
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
    pub fn offset_units(self) -> u64 {
        self.0 >> Self::LEN_BITS
    }
    pub fn len_units(self) -> u64 {
        self.0 & ((1 << Self::LEN_BITS) - 1)
    }
    pub fn offset_bytes(self) -> u64 {
        self.offset_units() * UNIT as u64
    }
    pub fn len_bytes(self) -> usize {
        self.len_units() as usize * UNIT
    }
}

/// Entries per chunk of the page map. Small under Miri (the pool's tests of issue 19), which
/// tracks each atomic apart and would spend minutes building one chunk of 64 Ki entries.
const CHUNK: usize = if cfg!(miri) { 1 << 8 } else { 1 << 16 };
/// Chunks in the directory: 2^30 pages at most (16 TiB of 16 KiB pages); 2^16 under Miri.
const DIR: usize = if cfg!(miri) { 1 << 8 } else { 1 << 14 };

/// A lock-free growable array of atomic words indexed by page id. Readers do two loads; growth
/// (on page allocation only) installs a new chunk with a CAS.
pub(crate) struct AtomicTable<T: Default> {
    dir: Box<[AtomicPtr<[T; CHUNK]>]>,
}

impl<T: Default> AtomicTable<T> {
    pub(crate) fn new() -> Self {
        let dir = (0..DIR)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect();
        AtomicTable { dir }
    }

    pub(crate) fn get(&self, i: u64) -> Option<&T> {
        let (c, o) = ((i as usize) / CHUNK, (i as usize) % CHUNK);
        let p = self.dir.get(c)?.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: chunks are never freed before the table is dropped.
        Some(unsafe { &(*p)[o] })
    }

    /// Makes sure index `i` exists.
    pub(crate) fn ensure(&self, i: u64) -> Result<&T> {
        let c = (i as usize) / CHUNK;
        let slot = self.dir.get(c).ok_or_else(|| {
            StoreError::Config(format!("page id {i} exceeds the page map capacity"))
        })?;
        if slot.load(Ordering::Acquire).is_null() {
            let fresh: Box<[T; CHUNK]> = (0..CHUNK)
                .map(|_| T::default())
                .collect::<Vec<T>>()
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!("length is CHUNK"));
            let raw = Box::into_raw(fresh);
            if slot
                .compare_exchange(
                    std::ptr::null_mut(),
                    raw,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_err()
            {
                // SAFETY: we lost the race; `raw` was never shared.
                drop(unsafe { Box::from_raw(raw) });
            }
        }
        Ok(self.get(i).expect("chunk installed"))
    }
}

impl<T: Default> Drop for AtomicTable<T> {
    fn drop(&mut self) {
        for slot in self.dir.iter() {
            let p = slot.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: installed by `ensure` from Box::into_raw, dropped once here.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

/// Free space, in units: a bitmap (1 = in use or pending) with a next-fit cursor. A bitmap
/// rather than a tree of runs because it never allocates on the write-back path (it grows only
/// when the file does, geometrically). Mutated only under the store's allocator mutex, which the
/// write-back path takes once per page written (never on a cache hit or miss).
#[derive(Debug, Default)]
struct Allocator {
    used: Vec<u64>,
    /// First unit past the last allocated one.
    end_units: u64,
    /// Where the next search starts.
    cursor: u64,
    /// Units below `end_units` that are free.
    free_units: u64,
    /// No run of free units this long or longer exists below `end_units` (learnt from a
    /// search that failed; forgotten when a free makes a run that long). Without it, a file
    /// whose free space is fragmented into runs shorter than a page scanned its whole bitmap
    /// for every page written.
    no_fit_min: Option<u64>,
    /// Extents freed since the last checkpoint snapshot but referenced by a checkpoint (the
    /// durable one or the one being written): reusable after the next snapshot is durable.
    pending: Vec<Extent>,
    /// Empty vector kept for its capacity, swapped with `pending` at each checkpoint.
    pending_spare: Vec<Extent>,
    /// While a checkpoint is being written: what was pending when its snapshot was taken.
    /// The new checkpoint does not reference these, so they are freed once it is durable.
    pending_in_flight: Option<Vec<Extent>>,
    /// Extents allocated since the last checkpoint snapshot: no durable map references them,
    /// so they may be reused as soon as they are superseded.
    fresh: HashSet<u64>,
    /// Units the file holds as far as the store knows (its length at open, then the highest
    /// `end_units` reached): `[end_units, high_units)` is a free tail still holding blocks.
    high_units: u64,
    /// Extents made free since the last punch pass ([`Allocator::take_punch_runs`]).
    unpunched: Vec<Extent>,
}

impl Allocator {
    fn bit(&self, u: u64) -> bool {
        self.used
            .get((u / 64) as usize)
            .is_some_and(|w| w & (1 << (u % 64)) != 0)
    }

    fn set_bits(&mut self, off: u64, len: u64, on: bool) {
        let need = (off + len).div_ceil(64) as usize;
        if self.used.len() < need {
            // Grow geometrically so a growing file reallocates rarely.
            let target = need.max(self.used.len() * 2).max(1024);
            self.used.resize(target, 0);
        }
        for u in off..off + len {
            let (w, b) = ((u / 64) as usize, u % 64);
            debug_assert_eq!(
                self.used[w] & (1 << b) != 0,
                !on,
                "unit {u} already {}",
                if on { "used" } else { "free" }
            );
            if on {
                self.used[w] |= 1 << b;
            } else {
                self.used[w] &= !(1 << b);
            }
        }
    }

    /// Marks units as used while opening a store.
    fn mark_used(&mut self, off: u64, len: u64) {
        self.set_bits(off, len, true);
    }

    fn insert_free(&mut self, off: u64, len: u64) {
        self.set_bits(off, len, false);
        self.free_units += len;
        if let Some(min) = self.no_fit_min {
            if self.free_run_around(off, len, min) >= min {
                self.no_fit_min = None;
            }
        }
        // Free space at the end of the file shrinks the allocation end instead.
        while self.end_units > DATA_START_UNITS && !self.bit(self.end_units - 1) {
            self.end_units -= 1;
            self.free_units -= 1;
        }
        self.cursor = self.cursor.min(off);
    }

    /// Length of the free run containing the free units [off, off+len), counted up to `cap`.
    fn free_run_around(&self, off: u64, len: u64, cap: u64) -> u64 {
        let mut run = len;
        let mut u = off;
        while run < cap && u > DATA_START_UNITS && !self.bit(u - 1) {
            u -= 1;
            run += 1;
        }
        let mut u = off + len;
        while run < cap && u < self.end_units && !self.bit(u) {
            u += 1;
            run += 1;
        }
        run
    }

    /// First run of `len` free units in [from, to), a word at a time.
    fn find_run(&self, from: u64, to: u64, len: u64) -> Option<u64> {
        debug_assert!(len > 0);
        let (mut i, mut start, mut run) = (from, from, 0u64);
        while i < to {
            let b = i % 64;
            // Bit 0 of `word` is unit i; bits past the end of the word read as used.
            let word = self.used.get((i / 64) as usize).copied().unwrap_or(0) >> b;
            let word = word | (u64::MAX.checked_shl(64 - b as u32).unwrap_or(0));
            let avail = (64 - b).min(to - i);
            let free = u64::from(word.trailing_zeros()).min(avail);
            if free > 0 {
                if run == 0 {
                    start = i;
                }
                run += free;
                i += free;
                if run >= len {
                    return Some(start);
                }
                continue;
            }
            let used = u64::from((!word).trailing_zeros()).min(avail);
            run = 0;
            i += used;
        }
        None
    }

    fn allocate(&mut self, len: u64) -> Extent {
        let off = if self.free_units >= len && self.no_fit_min.is_none_or(|m| len < m) {
            let c = self.cursor.clamp(DATA_START_UNITS, self.end_units);
            let found = self
                .find_run(c, self.end_units, len)
                .or_else(|| self.find_run(DATA_START_UNITS, (c + len).min(self.end_units), len));
            if found.is_none() {
                self.no_fit_min = Some(self.no_fit_min.map_or(len, |m| m.min(len)));
            }
            found
        } else {
            None
        };
        let off = match off {
            Some(o) => {
                self.free_units -= len;
                o
            }
            None => {
                let o = self.end_units;
                self.end_units += len;
                self.high_units = self.high_units.max(self.end_units);
                o
            }
        };
        self.set_bits(off, len, true);
        self.cursor = off + len;
        self.fresh.insert(off);
        Extent::new(off, len)
    }

    /// Releases an extent no longer mapped.
    fn release(&mut self, e: Extent) {
        if e.is_none() {
            return;
        }
        if self.fresh.remove(&e.offset_units()) {
            self.insert_free(e.offset_units(), e.len_units());
            self.unpunched.push(e);
        } else {
            // Referenced by the last durable checkpoint or by the snapshot being written:
            // reusable once a checkpoint taken after this moment is durable.
            self.pending.push(e);
        }
    }
}

/// Free runs shorter than this are left to be reused, not punched: 64 KiB, four 16 KiB pages.
/// Steady writes free scattered extents of a compressed page or two, which next-fit reuses
/// soon (and a write into a hole costs the filesystem an allocation); a rebuild or a large
/// delete frees long runs that nothing may reuse for a long time. 16 KiB would give back
/// another 7% of the file after an `OPTIMIZE TABLE` (BENCHMARKS, session 19), at the price of
/// punching and refilling in steady writes, which was not measured.
const PUNCH_MIN_UNITS: u64 = 128;
/// Punched runs are cut to this alignment (filesystem blocks; a partial block would only be
/// zeroed, a write for nothing).
const PUNCH_ALIGN_UNITS: u64 = 4096 / UNIT as u64;
/// The longest run one punch covers: bounds the bitmap scan around one freed extent.
const PUNCH_RUN_MAX_UNITS: u64 = 1 << 16;

/// A run of units: offset and length.
type UnitRun = (u64, u64);

impl Allocator {
    /// Bounds `[start, end)` of the free run around the free unit `u`, at most
    /// [`PUNCH_RUN_MAX_UNITS`] each way.
    fn free_run_bounds(&self, u: u64) -> (u64, u64) {
        let mut start = u;
        while start > DATA_START_UNITS && u - start < PUNCH_RUN_MAX_UNITS && !self.bit(start - 1) {
            start -= 1;
        }
        let mut end = u;
        while end < self.end_units && end - u < PUNCH_RUN_MAX_UNITS && !self.bit(end) {
            end += 1;
        }
        (start, end)
    }

    /// The free runs of at least `min` units around the extents freed since the last pass,
    /// cut to block alignment and reserved (marked used, so no write lands in them while they
    /// are punched; [`Allocator::insert_free`] gives each back), and the free tail past
    /// `end_units` once it is that long too, which is then forgotten (the caller punches it
    /// before anyone can allocate).
    fn take_punch_runs(&mut self, min: u64) -> (Vec<UnitRun>, Option<UnitRun>) {
        let mut runs = Vec::new();
        let mut list = std::mem::take(&mut self.unpunched);
        for e in &list {
            let u = e.offset_units();
            if u >= self.end_units || self.bit(u) {
                continue; // in the tail, reused since, or inside a run reserved above
            }
            let (start, end) = self.free_run_bounds(u);
            let start = start.next_multiple_of(PUNCH_ALIGN_UNITS);
            let end = end / PUNCH_ALIGN_UNITS * PUNCH_ALIGN_UNITS;
            if end > start && end - start >= min {
                self.set_bits(start, end - start, true);
                self.free_units -= end - start;
                runs.push((start, end - start));
            }
        }
        list.clear();
        self.unpunched = list;
        let start = self.end_units.next_multiple_of(PUNCH_ALIGN_UNITS);
        let tail = (self.high_units >= start + min).then(|| {
            let t = (start, self.high_units - start);
            self.high_units = self.end_units;
            t
        });
        (runs, tail)
    }
}

/// Per-tree space accounting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeSpace {
    pub pages: u64,
    pub logical_bytes: u64,
    pub physical_bytes: u64,
}

/// Counters of the store (all cumulative since open).
#[derive(Debug, Default)]
pub struct StoreCounters {
    pub reads: AtomicU64,
    pub read_bytes: AtomicU64,
    pub read_ns: AtomicU64,
    pub writes: AtomicU64,
    pub write_bytes: AtomicU64,
    pub write_ns: AtomicU64,
    pub checksum_ns: AtomicU64,
    pub checksum_verifies: AtomicU64,
    pub syncs: AtomicU64,
    pub checkpoints: AtomicU64,
    /// Free runs given back to the filesystem after checkpoints, their bytes, and punches
    /// that failed (none are tried again once the filesystem says it has no holes).
    pub punches: AtomicU64,
    pub punched_bytes: AtomicU64,
    pub punch_failures: AtomicU64,
}

/// A snapshot of the store's space usage.
#[derive(Debug, Clone, Default)]
pub struct SpaceStats {
    pub file_bytes: u64,
    pub free_bytes: u64,
    /// Bytes that become free once the next checkpoint is durable.
    pub pending_free_bytes: u64,
    pub trees: Vec<(TreeId, TreeSpace)>,
}

/// Settings fixed when a store is created.
#[derive(Debug, Clone, Copy)]
pub struct StoreConfig {
    pub page_size: usize,
}

impl StoreConfig {
    pub fn validate(&self) -> Result<()> {
        let p = self.page_size;
        if !(4096..=65536).contains(&p) || !p.is_power_of_two() {
            return Err(StoreError::Config(format!(
                "page size {p} must be a power of two from 4 KiB to 64 KiB"
            )));
        }
        Ok(())
    }
}

/// The page store of one data file.
pub struct PageStore {
    storage: Box<dyn Storage>,
    page_size: usize,
    map: AtomicTable<AtomicU64>,
    trees: AtomicTable<AtomicU32>,
    next_page_id: AtomicU64,
    free_ids: Mutex<Vec<PageId>>,
    alloc: Mutex<Allocator>,
    space: Mutex<HashMap<TreeId, TreeSpace>>,
    /// Totals of `space` over all trees, readable without its mutex (the pool's policy reads
    /// them often).
    pages_total: AtomicU64,
    physical_bytes_total: AtomicU64,
    /// Serialises checkpoints; also owns the superblock state.
    ckpt: Mutex<CheckpointState>,
    failed: AtomicBool,
    failure: Mutex<Option<String>>,
    /// Set once the filesystem refuses holes (EOPNOTSUPP): free space is then only reused.
    punch_off: AtomicBool,
    pub counters: StoreCounters,
}

#[derive(Debug)]
struct CheckpointState {
    seq: u64,
    meta: Extent,
    catalog: Vec<u8>,
    /// Between `begin_checkpoint` and `finish_checkpoint`.
    in_progress: bool,
}

/// The page map as of [`PageStore::begin_checkpoint`], plus the extents written for the
/// checkpoint since; [`PageStore::finish_checkpoint`] makes it durable.
#[derive(Debug)]
pub struct MapSnapshot {
    /// Raw extents indexed by page id (index 0 unused).
    entries: Vec<u64>,
    trees: Vec<u32>,
}

impl MapSnapshot {
    /// Points page `id` at `ext` (an image of the page as of the snapshot, written since).
    pub fn set(&mut self, id: PageId, ext: Extent) {
        let i = id.0 as usize;
        assert!(
            i > 0 && i < self.entries.len(),
            "page {id} is not in the checkpoint snapshot"
        );
        self.entries[i] = ext.raw();
    }

    /// Whether the snapshot has page `id`.
    pub fn contains(&self, id: PageId) -> bool {
        let i = id.0 as usize;
        i > 0 && i < self.entries.len()
    }
}

impl std::fmt::Debug for PageStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageStore")
            .field("file", &self.storage.name())
            .field("page_size", &self.page_size)
            .finish()
    }
}

/// The parsed superblock.
#[derive(Debug, Clone, Copy)]
struct Superblock {
    seq: u64,
    page_size: u32,
    meta: Extent,
    end_units: u64,
}

fn encode_superblock(sb: &Superblock, out: &mut [u8]) {
    out[..SUPERBLOCK_LEN].fill(0);
    out[4..12].copy_from_slice(SUPER_MAGIC);
    out[12..16].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[16..20].copy_from_slice(&sb.page_size.to_le_bytes());
    out[20..24].copy_from_slice(&(UNIT as u32).to_le_bytes());
    out[24..32].copy_from_slice(&sb.seq.to_le_bytes());
    out[32..40].copy_from_slice(&sb.meta.raw().to_le_bytes());
    out[40..48].copy_from_slice(&sb.end_units.to_le_bytes());
    let crc = crc32c(&out[4..SUPERBLOCK_LEN]);
    out[0..4].copy_from_slice(&crc.to_le_bytes());
}

fn le_u32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn le_u64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

fn decode_superblock(b: &[u8]) -> std::result::Result<Superblock, String> {
    if &b[4..12] != SUPER_MAGIC {
        return Err("bad magic".into());
    }
    let crc = crc32c(&b[4..SUPERBLOCK_LEN]);
    if crc != le_u32(b, 0) {
        return Err(format!(
            "checksum mismatch: stored {:#010x}, computed {crc:#010x}",
            le_u32(b, 0)
        ));
    }
    let version = le_u32(b, 12);
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        ));
    }
    if le_u32(b, 20) as usize != UNIT {
        return Err(format!("allocation unit {} unsupported", le_u32(b, 20)));
    }
    Ok(Superblock {
        seq: le_u64(b, 24),
        page_size: le_u32(b, 16),
        meta: Extent::from_raw(le_u64(b, 32)),
        end_units: le_u64(b, 40),
    })
}

/// The newest valid superblock of the store on `storage`.
fn read_superblock(storage: &dyn Storage) -> Result<Superblock> {
    let file = storage.name().to_string();
    let mut buf = AlignedBuf::new(SUPERBLOCK_LEN);
    let mut best: Option<Superblock> = None;
    let mut why = Vec::new();
    for slot in 0..2u64 {
        match storage.read_at(&mut buf, slot * SUPERBLOCK_SLOT as u64) {
            Ok(()) => match decode_superblock(&buf) {
                Ok(sb) => {
                    if best.is_none_or(|b| sb.seq > b.seq) {
                        best = Some(sb);
                    }
                }
                Err(e) => why.push(format!("slot {slot}: {e}")),
            },
            // A slot that cannot be read is not a torn slot: it may be the newer one, and
            // opening the older checkpoint instead would silently lose the commits between
            // them once the log has been reused. Fail the open; a retry may read it.
            Err(e) => return Err(e.into()),
        }
    }
    let Some(sb) = best else {
        return Err(StoreError::CorruptMeta {
            file,
            detail: format!("no valid superblock ({})", why.join("; ")),
        });
    };
    Ok(sb)
}

impl PageStore {
    /// Creates a new, empty store on `storage` (which must be empty) and checkpoints it.
    pub fn create(storage: Box<dyn Storage>, config: StoreConfig) -> Result<PageStore> {
        config.validate()?;
        if !storage.is_empty()? {
            return Err(StoreError::Incompatible {
                file: storage.name().to_string(),
                detail: "refusing to create a store over a non-empty file".into(),
            });
        }
        let store = PageStore::empty(storage, config.page_size, 0, Extent::NONE, Vec::new());
        {
            let mut a = store.alloc.lock();
            a.end_units = DATA_START_UNITS;
            a.high_units = DATA_START_UNITS;
        }
        store.checkpoint(&[])?;
        Ok(store)
    }

    fn empty(
        storage: Box<dyn Storage>,
        page_size: usize,
        seq: u64,
        meta: Extent,
        catalog: Vec<u8>,
    ) -> PageStore {
        PageStore {
            storage,
            page_size,
            map: AtomicTable::new(),
            trees: AtomicTable::new(),
            next_page_id: AtomicU64::new(1),
            free_ids: Mutex::new(Vec::new()),
            alloc: Mutex::new(Allocator::default()),
            space: Mutex::new(HashMap::new()),
            pages_total: AtomicU64::new(0),
            physical_bytes_total: AtomicU64::new(0),
            ckpt: Mutex::new(CheckpointState {
                seq,
                meta,
                catalog,
                in_progress: false,
            }),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            punch_off: AtomicBool::new(false),
            counters: StoreCounters::default(),
        }
    }

    /// The page size of the store on `storage`, from its newest valid superblock, without
    /// reading the page map (to check settings before a possibly long open).
    pub fn probe_page_size(storage: &dyn Storage) -> Result<usize> {
        Ok(read_superblock(storage)?.page_size as usize)
    }

    /// Opens an existing store at its last durable checkpoint.
    pub fn open(storage: Box<dyn Storage>) -> Result<PageStore> {
        let file = storage.name().to_string();
        let sb = read_superblock(&*storage)?;
        let page_size = sb.page_size as usize;
        StoreConfig { page_size }.validate()?;
        // Read and verify the map blob.
        let mut blob = AlignedBuf::new(sb.meta.len_bytes());
        storage.read_at(&mut blob, sb.meta.offset_bytes())?;
        let meta_err = |detail: String| StoreError::CorruptMeta {
            file: file.clone(),
            detail: format!(
                "checkpoint {} map at offset {}: {detail}",
                sb.seq,
                sb.meta.offset_bytes()
            ),
        };
        if blob.len() < META_HEADER_LEN || &blob[4..8] != META_MAGIC {
            return Err(meta_err("bad magic".into()));
        }
        let n_pages = le_u64(&blob, 16);
        let cat_len = le_u32(&blob, 24) as usize;
        let body = (n_pages as usize)
            .checked_mul(12)
            .and_then(|b| b.checked_add(META_HEADER_LEN + cat_len))
            .filter(|&l| l <= blob.len())
            .ok_or_else(|| {
                meta_err(format!(
                    "lengths do not fit: {n_pages} pages, catalog {cat_len}"
                ))
            })?;
        let crc = crc32c(&blob[4..body]);
        if crc != le_u32(&blob, 0) {
            return Err(meta_err(format!(
                "checksum mismatch: stored {:#010x}, computed {crc:#010x}",
                le_u32(&blob, 0)
            )));
        }
        if le_u64(&blob, 8) != sb.seq {
            return Err(meta_err("sequence does not match the superblock".into()));
        }
        let ents = &blob[META_HEADER_LEN..META_HEADER_LEN + n_pages as usize * 12];
        let catalog = blob[META_HEADER_LEN + n_pages as usize * 12..body].to_vec();
        let store = PageStore::empty(storage, page_size, sb.seq, sb.meta, catalog);
        let mut used: Vec<(u64, u64)> = vec![(sb.meta.offset_units(), sb.meta.len_units())];
        {
            let mut space = store.space.lock();
            let mut free_ids = store.free_ids.lock();
            for i in 1..n_pages {
                let e = Extent::from_raw(le_u64(ents, i as usize * 12));
                let tree = TreeId(le_u32(ents, i as usize * 12 + 8));
                store.map.ensure(i)?.store(e.raw(), Ordering::Relaxed);
                store.trees.ensure(i)?.store(tree.0, Ordering::Relaxed);
                if e.is_none() {
                    free_ids.push(PageId(i));
                    continue;
                }
                if e.offset_units() < DATA_START_UNITS
                    || e.offset_units() + e.len_units() > sb.end_units
                {
                    return Err(meta_err(format!("page {i} maps outside the file: {e:?}")));
                }
                used.push((e.offset_units(), e.len_units()));
                let t = space.entry(tree).or_default();
                t.pages += 1;
                t.logical_bytes += page_size as u64;
                t.physical_bytes += e.len_bytes() as u64;
                store.pages_total.fetch_add(1, Ordering::Relaxed);
                store
                    .physical_bytes_total
                    .fetch_add(e.len_bytes() as u64, Ordering::Relaxed);
            }
            // Lowest ids are handed out first.
            free_ids.reverse();
        }
        store.next_page_id.store(n_pages.max(1), Ordering::Relaxed);
        // Free space is every unit no extent uses.
        used.sort_unstable();
        let mut a = store.alloc.lock();
        let mut cursor = DATA_START_UNITS;
        for &(off, len) in &used {
            if off < cursor {
                return Err(meta_err(format!("extents overlap at unit {off}")));
            }
            cursor = off + len;
        }
        a.end_units = cursor;
        // Free runs the last process left unpunched (freed by its last checkpoint, or the
        // store was not closed) are punched by the first checkpoint of this one.
        let mut gap_start = DATA_START_UNITS;
        for &(off, len) in &used {
            if off >= gap_start + PUNCH_MIN_UNITS {
                a.unpunched.push(Extent::new(gap_start, 1));
            }
            gap_start = off + len;
        }
        let used_units: u64 = used.iter().map(|&(_, l)| l).sum();
        for (off, len) in used {
            a.mark_used(off, len);
        }
        a.free_units = cursor - DATA_START_UNITS - used_units;
        a.cursor = DATA_START_UNITS;
        // A tail past the last extent (left by an earlier process) is punched by the first
        // checkpoint; free runs inside the file were punched when they were freed.
        a.high_units = store.storage.len()?.div_ceil(UNIT as u64).max(cursor);
        drop(a);
        Ok(store)
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn file_name(&self) -> &str {
        self.storage.name()
    }

    pub fn is_direct(&self) -> bool {
        self.storage.is_direct()
    }

    /// The catalog blob saved by the last checkpoint (opaque to the store).
    pub fn catalog(&self) -> Vec<u8> {
        self.ckpt.lock().catalog.clone()
    }

    /// Largest image this store writes: header + a raw page, rounded to the unit.
    pub fn image_len_max(&self) -> usize {
        (IMAGE_HEADER_LEN + self.page_size).div_ceil(UNIT) * UNIT
    }

    /// Hands out a page id (lowest freed id first). The page has no extent until written.
    pub fn allocate_page_id(&self, tree: TreeId) -> Result<PageId> {
        let id = match self.free_ids.lock().pop() {
            Some(id) => id,
            None => PageId(self.next_page_id.fetch_add(1, Ordering::Relaxed)),
        };
        self.map.ensure(id.0)?.store(0, Ordering::Release);
        self.trees.ensure(id.0)?.store(tree.0, Ordering::Relaxed);
        let mut space = self.space.lock();
        let t = space.entry(tree).or_default();
        t.pages += 1;
        t.logical_bytes += self.page_size as u64;
        self.pages_total.fetch_add(1, Ordering::Relaxed);
        Ok(id)
    }

    /// Frees a page id and its extent (the extent once it is safe, see module docs).
    pub fn free_page(&self, id: PageId) -> Result<()> {
        let slot = self.map.get(id.0).ok_or(StoreError::NoSuchPage(id))?;
        let tree = TreeId(
            self.trees
                .get(id.0)
                .map_or(0, |t| t.load(Ordering::Relaxed)),
        );
        {
            let mut a = self.alloc.lock();
            let old = Extent::from_raw(slot.swap(0, Ordering::AcqRel));
            a.release(old);
            let mut space = self.space.lock();
            let t = space.entry(tree).or_default();
            t.pages = t.pages.saturating_sub(1);
            t.logical_bytes = t.logical_bytes.saturating_sub(self.page_size as u64);
            t.physical_bytes = t.physical_bytes.saturating_sub(old.len_bytes() as u64);
            self.pages_total.fetch_sub(1, Ordering::Relaxed);
            self.physical_bytes_total
                .fetch_sub(old.len_bytes() as u64, Ordering::Relaxed);
        }
        let mut free_ids = self.free_ids.lock();
        // A second free of one id would hand it out twice. Debug builds (every test) check;
        // the scan is linear in the free list, too slow for release builds.
        debug_assert!(!free_ids.contains(&id), "page {id:?} freed twice");
        free_ids.push(id);
        Ok(())
    }

    /// The extent currently holding page `id` (NONE if it was never written).
    pub fn extent(&self, id: PageId) -> Extent {
        self.map.get(id.0).map_or(Extent::NONE, |e| {
            Extent::from_raw(e.load(Ordering::Acquire))
        })
    }

    /// One past the highest page id handed out so far (ids start at 1).
    pub fn page_id_end(&self) -> u64 {
        self.next_page_id.load(Ordering::Acquire)
    }

    /// Whether `id` is an allocated page id.
    pub fn page_exists(&self, id: PageId) -> bool {
        id.0 != 0
            && id.0 < self.next_page_id.load(Ordering::Acquire)
            && self.map.get(id.0).is_some()
    }

    fn check_writable(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            let why = self.failure.lock().clone().unwrap_or_default();
            return Err(StoreError::ReadOnlyAfterIoError(why));
        }
        Ok(())
    }

    fn fail_stop(&self, e: StoreError) -> StoreError {
        self.failed.store(true, Ordering::Release);
        let mut f = self.failure.lock();
        if f.is_none() {
            *f = Some(e.to_string());
        }
        e
    }

    /// True once a write-path I/O error has made the store refuse writes.
    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Writes the image `buf[..image_len]` of page `id` to a new extent and points the map at it.
    /// `buf` must be at least `image_len` rounded up to [`UNIT`] long (and aligned for O_DIRECT);
    /// the padding is zeroed here.
    pub fn write_image(&self, id: PageId, buf: &mut [u8], image_len: usize) -> Result<Extent> {
        self.write_image_inner(id, buf, image_len, false)
    }

    /// As [`Self::write_image`], for an image that also goes into the checkpoint in progress
    /// ([`MapSnapshot::set`]): the extent is kept until a later checkpoint is durable even if
    /// the page is rewritten before this one finishes.
    pub fn write_image_pinned(
        &self,
        id: PageId,
        buf: &mut [u8],
        image_len: usize,
    ) -> Result<Extent> {
        self.write_image_inner(id, buf, image_len, true)
    }

    /// Writes an image of page `id` for the checkpoint in progress only: the live map keeps
    /// pointing where it did (the page has changed since the snapshot). The extent is released
    /// right away as pending, so it lives until the checkpoint after this one is durable.
    pub fn write_image_detached(
        &self,
        id: PageId,
        buf: &mut [u8],
        image_len: usize,
    ) -> Result<Extent> {
        let ext = self.write_extent(buf, image_len)?;
        let mut a = self.alloc.lock();
        a.fresh.remove(&ext.offset_units());
        a.pending.push(ext);
        debug_assert!(
            self.map.get(id.0).is_some(),
            "detached image of unknown page {id}"
        );
        Ok(ext)
    }

    fn write_extent(&self, buf: &mut [u8], image_len: usize) -> Result<Extent> {
        self.check_writable()?;
        let units = image_len.div_ceil(UNIT) as u64;
        let padded = units as usize * UNIT;
        buf[image_len..padded].fill(0);
        let ext = self.alloc.lock().allocate(units);
        let t0 = Instant::now();
        if let Err(e) = self.storage.write_at(&buf[..padded], ext.offset_bytes()) {
            return Err(self.fail_stop(e.into()));
        }
        self.counters
            .write_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.counters.writes.fetch_add(1, Ordering::Relaxed);
        self.counters
            .write_bytes
            .fetch_add(padded as u64, Ordering::Relaxed);
        Ok(ext)
    }

    fn write_image_inner(
        &self,
        id: PageId,
        buf: &mut [u8],
        image_len: usize,
        pin: bool,
    ) -> Result<Extent> {
        let slot = self.map.get(id.0).ok_or(StoreError::NoSuchPage(id))?;
        let ext = self.write_extent(buf, image_len)?;
        let tree = TreeId(
            self.trees
                .get(id.0)
                .map_or(0, |t| t.load(Ordering::Relaxed)),
        );
        let mut a = self.alloc.lock();
        if pin {
            a.fresh.remove(&ext.offset_units());
        }
        let old = Extent::from_raw(slot.swap(ext.raw(), Ordering::AcqRel));
        a.release(old);
        let mut space = self.space.lock();
        let t = space.entry(tree).or_default();
        t.physical_bytes = t.physical_bytes + ext.len_bytes() as u64 - old.len_bytes() as u64;
        drop(space);
        drop(a);
        self.physical_bytes_total
            .fetch_add(ext.len_bytes() as u64, Ordering::Relaxed);
        self.physical_bytes_total
            .fetch_sub(old.len_bytes() as u64, Ordering::Relaxed);
        Ok(ext)
    }

    /// Reads page `id`'s image into `buf` (at least [`Self::image_len_max`] bytes; aligned for
    /// O_DIRECT) and verifies it. Returns its header. This is the only place a checksum is
    /// verified: images already in memory are trusted.
    pub fn read_image(&self, id: PageId, buf: &mut [u8]) -> Result<ImageHeader> {
        let ext = self.extent(id);
        if ext.is_none() {
            return Err(StoreError::NoSuchPage(id));
        }
        let len = ext.len_bytes();
        if len > buf.len() {
            return Err(self.corrupt(
                id,
                ext,
                page::Corruption::BadLength {
                    logical: self.page_size as u32,
                    physical: len as u32,
                    available: buf.len(),
                },
            ));
        }
        let t0 = Instant::now();
        self.storage.read_at(&mut buf[..len], ext.offset_bytes())?;
        let t1 = Instant::now();
        self.counters
            .read_ns
            .fetch_add((t1 - t0).as_nanos() as u64, Ordering::Relaxed);
        self.counters.reads.fetch_add(1, Ordering::Relaxed);
        self.counters
            .read_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
        let h = page::parse_header(&buf[..len], self.page_size)
            .map_err(|w| self.corrupt(id, ext, w))?;
        page::verify_checksum(buf, &h).map_err(|w| self.corrupt(id, ext, w))?;
        self.counters
            .checksum_ns
            .fetch_add(t1.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.counters
            .checksum_verifies
            .fetch_add(1, Ordering::Relaxed);
        if h.page_id != id {
            return Err(self.corrupt(
                id,
                ext,
                page::Corruption::WrongPage {
                    expected: id,
                    found: h.page_id,
                },
            ));
        }
        Ok(h)
    }

    fn corrupt(&self, id: PageId, ext: Extent, what: page::Corruption) -> StoreError {
        StoreError::CorruptPage {
            file: self.storage.name().to_string(),
            page_id: id,
            offset: ext.offset_bytes(),
            what,
        }
    }

    /// Makes every page written so far, and the page map, durable together with `catalog`.
    /// Callers must have written back every page that belongs to the state being checkpointed
    /// and must not write pages of that state concurrently (see [`Self::begin_checkpoint`] for
    /// the form that lets writers go on). On any I/O error the store fail-stops; the previous
    /// checkpoint stays intact on disk.
    pub fn checkpoint(&self, catalog: &[u8]) -> Result<()> {
        let snap = self.begin_checkpoint()?;
        self.finish_checkpoint(snap, catalog)
    }

    /// Starts a checkpoint: copies the page map as it is now. The copy is what the checkpoint
    /// will make durable, with the extents of pages written for it ([`MapSnapshot::set`]) laid
    /// over it, so writers may keep changing the live map meanwhile. From here until
    /// [`Self::finish_checkpoint`], no extent the copy references is reused: extents released
    /// from now on stay pending until a later checkpoint is durable.
    ///
    /// Only one checkpoint may be in progress.
    pub fn begin_checkpoint(&self) -> Result<MapSnapshot> {
        self.check_writable()?;
        let mut ck = self.ckpt.lock();
        if ck.in_progress {
            return Err(StoreError::Config(
                "a checkpoint is already in progress".into(),
            ));
        }
        let mut a = self.alloc.lock();
        let n_pages = self.next_page_id.load(Ordering::Acquire).max(1);
        let mut entries = vec![0u64; n_pages as usize];
        let mut trees = vec![0u32; n_pages as usize];
        for i in 1..n_pages {
            entries[i as usize] = self.map.get(i).map_or(0, |e| e.load(Ordering::Acquire));
            trees[i as usize] = self.trees.get(i).map_or(0, |t| t.load(Ordering::Relaxed));
        }
        // Everything live now is referenced by the snapshot: none of it is "fresh" any more.
        a.fresh.clear();
        debug_assert!(a.pending_in_flight.is_none());
        let spare = std::mem::take(&mut a.pending_spare);
        a.pending_in_flight = Some(std::mem::replace(&mut a.pending, spare));
        ck.in_progress = true;
        Ok(MapSnapshot { entries, trees })
    }

    /// Writes the snapshot's map blob with `catalog` and flips the superblock. Every extent in
    /// the snapshot must have been written; this syncs the file first.
    pub fn finish_checkpoint(&self, snap: MapSnapshot, catalog: &[u8]) -> Result<()> {
        let mut ck = self.ckpt.lock();
        assert!(ck.in_progress, "finish_checkpoint without begin_checkpoint");
        let result = self.finish_locked(&mut ck, &snap, catalog);
        ck.in_progress = false;
        let mut a = self.alloc.lock();
        let mut in_flight = a.pending_in_flight.take().unwrap_or_default();
        match result {
            Ok(meta) => {
                // The new checkpoint is durable: what only the old one referenced is free now.
                for e in in_flight.drain(..) {
                    a.insert_free(e.offset_units(), e.len_units());
                    a.unpunched.push(e);
                }
                a.pending_spare = in_flight;
                if !ck.meta.is_none() {
                    a.insert_free(ck.meta.offset_units(), ck.meta.len_units());
                    a.unpunched.push(ck.meta);
                }
                drop(a);
                self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
                ck.seq += 1;
                ck.meta = meta;
                ck.catalog = catalog.to_vec();
                drop(ck);
                self.punch_free_runs();
                Ok(())
            }
            Err(e) => {
                // The old checkpoint may still be the durable one: keep everything it references.
                a.pending.append(&mut in_flight);
                Err(e)
            }
        }
    }

    /// Gives long free runs back to the filesystem (docs/FORMAT.md "Free space"), so that a
    /// rebuild (`OPTIMIZE TABLE`) or a large delete shrinks the file's allocated size instead of
    /// leaving free space only for reuse. Runs only after a checkpoint is durable: every unit
    /// it punches is referenced by no durable checkpoint (neither the new one nor, as
    /// `pending` keeps them until now, the one before), so a crash at any point loses nothing.
    fn punch_free_runs(&self) {
        if self.punch_off.load(Ordering::Relaxed) {
            self.alloc.lock().unpunched.clear();
            return;
        }
        let runs = {
            let mut a = self.alloc.lock();
            let (runs, tail) = a.take_punch_runs(PUNCH_MIN_UNITS);
            // Under the allocator's lock: a write extending the file lands past the tail's
            // start only after this returns.
            if let Some((off, len)) = tail {
                self.punch(off, len);
            }
            runs
        };
        for &(off, len) in &runs {
            self.punch(off, len);
        }
        if !runs.is_empty() {
            let mut a = self.alloc.lock();
            for (off, len) in runs {
                a.insert_free(off, len);
            }
        }
    }

    fn punch(&self, off_units: u64, len_units: u64) {
        if self.punch_off.load(Ordering::Relaxed) {
            return;
        }
        let (off, len) = (off_units * UNIT as u64, len_units * UNIT as u64);
        match self.storage.punch_hole(off, len) {
            Ok(()) => {
                self.counters.punches.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .punched_bytes
                    .fetch_add(len, Ordering::Relaxed);
            }
            Err(e) => {
                self.counters.punch_failures.fetch_add(1, Ordering::Relaxed);
                let unsupported = matches!(
                    e.source.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
                );
                if unsupported {
                    self.punch_off.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    fn finish_locked(
        &self,
        ck: &mut CheckpointState,
        snap: &MapSnapshot,
        catalog: &[u8],
    ) -> Result<Extent> {
        self.check_writable()?;
        if let Err(e) = self.storage.sync() {
            return Err(self.fail_stop(e.into()));
        }
        self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        let n_pages = snap.entries.len() as u64;
        let body = META_HEADER_LEN + n_pages as usize * 12 + catalog.len();
        let units = body.div_ceil(UNIT) as u64;
        let mut blob = AlignedBuf::new(units as usize * UNIT);
        for i in 1..n_pages as usize {
            let o = META_HEADER_LEN + i * 12;
            blob[o..o + 8].copy_from_slice(&snap.entries[i].to_le_bytes());
            blob[o + 8..o + 12].copy_from_slice(&snap.trees[i].to_le_bytes());
        }
        let (meta, end_units) = {
            let mut a = self.alloc.lock();
            let meta = a.allocate(units);
            // Referenced by the checkpoint being written: never released as "fresh".
            a.fresh.remove(&meta.offset_units());
            (meta, a.end_units)
        };
        let seq = ck.seq + 1;
        blob[4..8].copy_from_slice(META_MAGIC);
        blob[8..16].copy_from_slice(&seq.to_le_bytes());
        blob[16..24].copy_from_slice(&n_pages.to_le_bytes());
        blob[24..28].copy_from_slice(&(catalog.len() as u32).to_le_bytes());
        let cat_at = META_HEADER_LEN + n_pages as usize * 12;
        blob[cat_at..cat_at + catalog.len()].copy_from_slice(catalog);
        let crc = crc32c(&blob[4..body]);
        blob[0..4].copy_from_slice(&crc.to_le_bytes());
        let sb = Superblock {
            seq,
            page_size: self.page_size as u32,
            meta,
            end_units,
        };
        let mut sbuf = AlignedBuf::new(SUPERBLOCK_LEN);
        encode_superblock(&sb, &mut sbuf);
        let slot_off = (seq % 2) * SUPERBLOCK_SLOT as u64;
        let result = self
            .storage
            .write_at(&blob, meta.offset_bytes())
            .and_then(|()| self.storage.sync())
            .and_then(|()| self.storage.write_at(&sbuf, slot_off))
            .and_then(|()| self.storage.sync());
        if let Err(e) = result {
            // The blob's extent stays allocated (leaked until reopen): harmless, and the store
            // is fail-stopped anyway.
            return Err(self.fail_stop(e.into()));
        }
        self.counters.syncs.fetch_add(2, Ordering::Relaxed);
        Ok(meta)
    }

    /// Live pages and the bytes of their images on disk, over all trees (lock-free).
    pub fn totals(&self) -> (u64, u64) {
        (
            self.pages_total.load(Ordering::Relaxed),
            self.physical_bytes_total.load(Ordering::Relaxed),
        )
    }

    /// Space usage, overall and per tree.
    pub fn space(&self) -> SpaceStats {
        let a = self.alloc.lock();
        let pending: u64 = a
            .pending
            .iter()
            .chain(a.pending_in_flight.iter().flatten())
            .map(|e| e.len_bytes() as u64)
            .sum();
        let mut trees: Vec<_> = self.space.lock().iter().map(|(k, v)| (*k, *v)).collect();
        trees.sort_by_key(|(k, _)| *k);
        SpaceStats {
            file_bytes: a.end_units * UNIT as u64,
            free_bytes: a.free_units * UNIT as u64,
            pending_free_bytes: pending,
            trees,
        }
    }

    /// Checks the allocator against the map: no extent used twice, none both used and free.
    pub fn verify(&self) -> std::result::Result<(), String> {
        // Before the allocator's lock: a checkpoint takes the two the other way round.
        let meta = self.ckpt.lock().meta;
        let a = self.alloc.lock();
        let mut runs: Vec<(u64, u64, &'static str)> = Vec::new();
        let n = self.next_page_id.load(Ordering::Acquire);
        for i in 1..n {
            let e = self.extent(PageId(i));
            if !e.is_none() {
                runs.push((e.offset_units(), e.len_units(), "page"));
            }
        }
        for e in a.pending.iter().chain(a.pending_in_flight.iter().flatten()) {
            runs.push((e.offset_units(), e.len_units(), "pending"));
        }
        runs.sort_unstable();
        for w in runs.windows(2) {
            if w[0].0 + w[0].1 > w[1].0 {
                return Err(format!(
                    "{} run at unit {} overlaps {} run at unit {}",
                    w[0].2, w[0].0, w[1].2, w[1].0
                ));
            }
        }
        if let Some(last) = runs.last() {
            if last.0 + last.1 > a.end_units {
                return Err(format!(
                    "run at unit {} passes the allocation end {}",
                    last.0, a.end_units
                ));
            }
        }
        // Every used or pending run is marked in the bitmap, and the free count matches.
        let mut marked = 0u64;
        for &(o, l, what) in &runs {
            if (o..o + l).any(|u| !a.bit(u)) {
                return Err(format!("{what} run at unit {o} is not marked used"));
            }
            marked += l;
        }
        let meta_units = if meta.is_none() { 0 } else { meta.len_units() };
        let bits: u64 = (DATA_START_UNITS..a.end_units)
            .filter(|&u| a.bit(u))
            .count() as u64;
        if bits < marked + meta_units.min(bits) - meta_units.min(bits) {
            return Err(format!("{bits} units marked, {marked} in use"));
        }
        if a.end_units - DATA_START_UNITS - bits != a.free_units {
            return Err(format!(
                "free count {} but {} unmarked units",
                a.free_units,
                a.end_units - DATA_START_UNITS - bits
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
