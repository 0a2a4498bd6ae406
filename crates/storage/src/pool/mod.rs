//! The buffer pool: decoded frames and compressed images under one byte budget.
//!
//! # Memory
//! The whole budget is one arena of `budget / page_size` frames, allocated at start. A frame
//! holds either one decoded page or a slice of a *compressed log*: compressed page images (the
//! exact bytes that lie on disk) packed back to back. There are [`SHARDS`] logs, each a FIFO ring
//! of frames; a page's image always goes to the log of its shard (`page_id % SHARDS`). Records
//! may straddle two frames, so nothing is lost to size classes.
//!
//! A page is in one of these states: decoded only (hot; or dirty, whose compressed copy is
//! stale), decoded + compressed, compressed only (warm), or evicted (on disk only).
//!
//! # Concurrency
//! Each page has a [`Slot`] in a lock-free page table indexed by page id. Its `state` word
//! holds the latch (shared count or exclusive) in the low byte and a version above it, bumped on
//! every exclusive release so that optimistic readers can be added without changing the layout.
//! A hit takes only the page's own latch. A miss or a compressed hit takes the page's latch and,
//! for a few hundred nanoseconds (to copy or append an image), the mutex of the page's log shard.
//! Free frames live in a lock-free queue. Eviction is CLOCK over frames by whichever thread needs
//! a frame, using try-latches only, so no thread waits for a latch while holding a shard mutex.
//!
//! # Policy
//! When a frame is needed and none is free, the pool either *demotes* a decoded page (drops
//! the frame, keeps its compressed image) or *evicts* the oldest images of a compressed log,
//! comparing the compressed tier's size with a target. The target is a cost model plus a
//! ghost bias:
//! - The model ([`BufferPool::refresh_model`]) assumes uniform access. Then the cost per access
//!   is linear in the tier split, so the best split is a corner: a plain decoded cache (misses
//!   cost read + decode), or every image kept with the rest of the budget decoded (hits on
//!   compressed-only pages cost a decode). It compares both with the measured read, decode and
//!   (for pages that get modified) encode costs. On a real disk it keeps the images; on a RAM
//!   disk, where a read is cheaper than a decode, it usually does not; when the data fits
//!   decoded the target is zero.
//! - Ghosts correct the model for skew. A miss on a page evicted recently, or a compressed hit
//!   on a page demoted recently, votes for more compressed or more decoded tier, weighted by
//!   what each would have saved per byte; every 20 ms the bias steps the way the votes went and
//!   decays toward the model. While the model keeps every image the bias may only add.
//!
//! An image is cached (after a miss or a write-back) only while the policy wants a compressed
//! tier; otherwise it would only push out a decoded page.
//!
//! Dirty pages are compressed only when written back — by the background writer, by
//! [`BufferPool::flush_all`], or by an evicting thread that finds nothing clean — never on the
//! modification path. A page whose logical header names a cold codec (issue 19 step 8) is
//! compressed with it only when written back as it leaves: by an evicting thread, or by the
//! writer's passes over unreferenced pages; checkpoints and flushes use its image codec.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use parking_lot::{Condvar, Mutex};

use crate::arena::Arena;
use crate::codec::{self, Codec};
use crate::dict::PageDicts;
use crate::error::{Result, StoreError};
use crate::io::AlignedBuf;
use crate::page::{self, LogicalHeader, PageId, PageType, TreeId, IMAGE_HEADER_LEN};
use crate::store::{AtomicTable, Extent, MapSnapshot, PageStore, UNIT};
use crate::views::{Change, Lookup, PageViews, View, ViewStats};

mod log;
mod model;
mod reclaim;
#[cfg(test)]
mod tests;
mod views;
mod warm;
mod writeback;

use self::writeback::{writer_loop, Pass};

/// Number of compressed logs. More shards, less contention on compressed hits and misses.
pub const SHARDS: usize = 8;
/// Frames that must stay available beyond the compressed logs, so latched pages always fit.
const FRAMES_MIN: usize = 4 * SHARDS;

/// Settings of a buffer pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolConfig {
    /// One budget for decoded frames and compressed images together.
    pub budget_bytes: usize,
}

// Latch encoding in the low byte of the state word.
const LATCH_MASK: u64 = 0xFF;
const LATCH_EXCLUSIVE: u64 = 0xFF;
const SHARED_MAX: u64 = 0xFE;

// Slot flags.
const DIRTY: u32 = 1;
/// Decoded frame used since the CLOCK hand last passed.
const REFERENCED: u32 = 2;
/// Compressed image used (decoded from) since it was written to its log.
const C_REFERENCED: u32 = 4;
/// Flag: the page was dirty when the checkpoint in progress started and its content as of then
/// has not been saved for it yet. Such a page stays resident; the first change to it copies it
/// first (see [`BufferPool::begin_checkpoint`]).
const CKPT: u32 = 8;
/// A thread is writing the page back. Write-backs hold only a shared latch, so without this
/// an evicting thread and the writer could both encode the same unchanged page.
const WRITING: u32 = 16;

// Ghost kinds (low bit of `Slot::ghost`).
const GHOST_DEMOTED: u64 = 0;
const GHOST_EVICTED: u64 = 1;

// Frame owners.
const OWNER_FREE: u64 = u64::MAX;
const OWNER_LOG: u64 = u64::MAX - 1;

/// Log record header: page id (u64 LE), image length (u32 LE), reserved (u32).
const RECORD_HEADER: usize = 16;

/// Per-page state in the page table.
#[derive(Default)]
struct Slot {
    /// Latch (low byte) and version (the rest).
    state: AtomicU64,
    /// Decoded frame index + 1; 0 when not decoded. Changed only under the exclusive latch.
    frame: AtomicU32,
    flags: AtomicU32,
    /// Log position + 1 of the page's compressed image; 0 when none. Changed only under the
    /// mutex of the page's shard.
    cpos: AtomicU64,
    /// (tick << 1 | kind) of the page's last demotion or eviction.
    ghost: AtomicU64,
}

impl Slot {
    fn try_lock_shared(&self) -> bool {
        let v = self.state.load(Ordering::Relaxed);
        (v & LATCH_MASK) < SHARED_MAX
            && self
                .state
                .compare_exchange_weak(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    fn lock_shared(&self) {
        let mut spins = 0u32;
        while !self.try_lock_shared() {
            backoff(&mut spins);
        }
    }

    fn unlock_shared(&self) {
        let prev = self.state.fetch_sub(1, Ordering::Release);
        debug_assert!(
            matches!(prev & LATCH_MASK, 1..=SHARED_MAX),
            "unlock_shared of {prev:#x}"
        );
    }

    fn try_lock_exclusive(&self) -> bool {
        let v = self.state.load(Ordering::Relaxed);
        (v & LATCH_MASK) == 0
            && self
                .state
                .compare_exchange_weak(v, v | LATCH_EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    fn lock_exclusive(&self) {
        let mut spins = 0u32;
        while !self.try_lock_exclusive() {
            backoff(&mut spins);
        }
    }

    /// Releases the exclusive latch and bumps the version (0xFF + 1 carries into it).
    fn unlock_exclusive(&self) {
        let prev = self.state.fetch_add(1, Ordering::Release);
        debug_assert_eq!(prev & LATCH_MASK, LATCH_EXCLUSIVE);
    }

    /// Exclusive to one shared holder, bumping the version.
    fn downgrade(&self) {
        let prev = self.state.fetch_add(2, Ordering::Release);
        debug_assert_eq!(prev & LATCH_MASK, LATCH_EXCLUSIVE);
    }

    fn frame(&self) -> Option<usize> {
        match self.frame.load(Ordering::Acquire) {
            0 => None,
            f => Some(f as usize - 1),
        }
    }

    fn is_dirty(&self) -> bool {
        self.flags.load(Ordering::Acquire) & DIRTY != 0
    }
}

fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// One compressed log: a FIFO ring of frames holding records back to back.
struct Log {
    /// Frames of the log, oldest first; the frame of sequence `q` is `frames[q - tail_seq]`.
    frames: VecDeque<u32>,
    tail_seq: u64,
    /// Where the next record goes (absolute log position).
    head_pos: u64,
}

/// A counter on its own cache line.
#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU64);

const STRIPES: usize = 16;

/// A counter striped over cache lines by thread, so that threads hitting in the pool at once
/// never write the same line (a shared hit counter would cost a cache-line transfer per hit).
#[derive(Default)]
struct StripedCounter([Padded; STRIPES]);

thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

impl StripedCounter {
    #[inline]
    fn add(&self, n: u64) {
        let i = STRIPE.with(|s| *s);
        self.0[i].0.fetch_add(n, Ordering::Relaxed);
    }
    fn sum(&self) -> u64 {
        self.0.iter().map(|p| p.0.load(Ordering::Relaxed)).sum()
    }
}

/// Cumulative counters (see [`PoolStats`]).
#[derive(Default)]
struct Counters {
    hit_decoded: StripedCounter,
    hit_compressed: AtomicU64,
    miss: AtomicU64,
    decodes: AtomicU64,
    decode_ns: AtomicU64,
    encodes: AtomicU64,
    encode_ns: AtomicU64,
    writebacks: AtomicU64,
    demotions: AtomicU64,
    evictions: AtomicU64,
    compressed_evictions: AtomicU64,
    relocations: AtomicU64,
    ghost_hits_evicted: AtomicU64,
    ghost_hits_demoted: AtomicU64,
    dirty_skips: AtomicU64,
    ckpt_writes: AtomicU64,
    ckpt_copies: AtomicU64,
    warm_listed: AtomicU64,
    warm_loaded: AtomicU64,
    warm_skipped: AtomicU64,
    warm_done: AtomicU64,
    /// Images encoded (by the codec the image ended up with, so a page stored raw because its
    /// codec did not save a unit counts under none) and images decoded, by codec id.
    encoded_by_codec: [AtomicU64; CODEC_IDS],
    decoded_by_codec: [AtomicU64; CODEC_IDS],
}

/// Image codec ids counted per codec: 0 none ..= 4 trim.
const CODEC_IDS: usize = codec::ZSTD_DICT_ID as usize + 1;

impl Counters {
    /// Counts one image of codec `id` in `by` (ids past the table cannot come from a decoded or
    /// encoded image; they are ignored rather than trusted as an index).
    fn count_codec(by: &[AtomicU64; CODEC_IDS], id: u8) {
        if let Some(c) = by.get(id as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A snapshot of the pool's counters and tier sizes.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct PoolStats {
    pub budget_bytes: u64,
    pub frames: u64,
    pub page_size: u64,
    /// Hits on a decoded page: no decode, no I/O.
    pub hit_decoded: u64,
    /// Hits on a compressed image: one decode, no I/O.
    pub hit_compressed: u64,
    /// Reads from storage (verify + decode).
    pub miss: u64,
    pub decodes: u64,
    pub decode_ns: u64,
    pub encodes: u64,
    pub encode_ns: u64,
    pub writebacks: u64,
    /// Decoded frames dropped while the compressed image stayed.
    pub demotions: u64,
    /// Pages dropped from memory entirely.
    pub evictions: u64,
    /// Compressed images dropped from a log.
    pub compressed_evictions: u64,
    /// Compressed images copied forward in a log (second chance).
    pub relocations: u64,
    pub ghost_hits_evicted: u64,
    pub ghost_hits_demoted: u64,
    /// Times the CLOCK hand passed a dirty page.
    pub dirty_skips: u64,
    /// Pages written for checkpoints, and of those, pages copied first because a writer
    /// changed them while the checkpoint ran.
    pub ckpt_writes: u64,
    pub ckpt_copies: u64,
    /// Current split: frames holding decoded pages, frames holding compressed logs, free.
    pub decoded_frames: u64,
    pub compressed_frames: u64,
    pub free_frames: u64,
    pub dirty_pages: u64,
    /// Where the policy wants the compressed tier, in bytes.
    pub compressed_target_bytes: u64,
    /// Bytes of compressed images currently in the logs (live or not yet reclaimed).
    pub compressed_bytes: u64,
    /// Measured averages that drive the policy.
    pub read_ns_avg: u64,
    pub decode_ns_avg: u64,
    /// Warm restart (see [`BufferPool::start_warm_load`]): pages in the list read at start,
    /// pages loaded from it, pages skipped (no longer existing, unreadable or failing their
    /// checksum; pages already resident count in neither), and 1 once the loader has finished
    /// or stopped (pool full, shutdown), or when there was nothing to load. Numbers, not a
    /// bool, because SHOW STATUS turns these fields into counters.
    pub warm_pages_listed: u64,
    pub warm_pages_loaded: u64,
    pub warm_pages_skipped: u64,
    pub warm_load_done: u64,
    /// Images encoded for write-back, by the codec each image ended up with (a page whose
    /// codec did not save an allocation unit is stored raw and counts under none).
    pub encodes_none: u64,
    pub encodes_lz4: u64,
    pub encodes_zstd: u64,
    pub encodes_zlib: u64,
    pub encodes_trim: u64,
    pub encodes_zstd_dict: u64,
    /// Images decoded into frames (misses and compressed hits), by codec.
    pub decodes_none: u64,
    pub decodes_lz4: u64,
    pub decodes_zstd: u64,
    pub decodes_zlib: u64,
    pub decodes_trim: u64,
    pub decodes_zstd_dict: u64,
    /// Views kept in the room of free frames (see [`crate::views`]).
    pub views: ViewStats,
}

/// The buffer pool.
pub struct BufferPool {
    store: Arc<PageStore>,
    /// The trees' cold-layer dictionaries: whoever trains one installs it here (and makes it
    /// durable) before a page can name it.
    dicts: Arc<PageDicts>,
    page_size: usize,
    frame_count: usize,
    arena: Arena,
    slots: AtomicTable<Slot>,
    owners: Box<[AtomicU64]>,
    /// Offset of the first record that starts in a log frame.
    first_record: Box<[AtomicU32]>,
    free: ArrayQueue<u32>,
    hand: AtomicUsize,
    logs: Box<[Mutex<Log>]>,
    log_rr: AtomicUsize,
    log_frames: AtomicUsize,
    log_bytes: AtomicU64,
    /// Where the compressed tier should be: `model_target + ghost_bias`, clamped.
    target_log_bytes: AtomicU64,
    /// The split the cost model picks for uniform access (see [`BufferPool::refresh_model`]).
    model_target: AtomicU64,
    /// What ghost hits have learned on top of the model (skew, working sets).
    ghost_bias: AtomicI64,
    /// Ghost hits since the last [`BufferPool::adapt_bias`], weighted by cost: positive asks
    /// for more compressed tier.
    ghost_votes: AtomicI64,
    /// Whether the model's target holds every page's image.
    model_holds_all: AtomicBool,
    /// Costs that replace the measured ones when non-zero (tests of the policy).
    fixed_read_ns: AtomicU64,
    fixed_decode_ns: AtomicU64,
    /// Set when an evicting thread passed dirty pages: the writer cleans ahead of the hand.
    writer_demand: AtomicBool,
    evict_tick: AtomicU64,
    demote_tick: AtomicU64,
    dirty_count: AtomicUsize,
    counters: Counters,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    writer_wake: (Mutex<bool>, Condvar),
    /// Held by the background writer for each pass, and by [`BufferPool::verify`], so that
    /// verify never sees a frame in flight between two logs or between the free queue and a
    /// page (a write-back caches its image, which may reclaim a frame from another shard).
    writer_busy: Mutex<()>,
    shutdown: AtomicBool,
    /// First background write-back error: the store has fail-stopped; surfaced on flush.
    writer_error: Mutex<Option<String>>,
    /// The checkpoint in progress, if any (see [`BufferPool::begin_checkpoint`]).
    ckpt: Mutex<Option<PoolCheckpoint>>,
    /// Pages still flagged [`CKPT`] or being written for the checkpoint.
    ckpt_pending: AtomicUsize,
    /// The warm-restart loader, if one was started.
    warm_loader: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Views of unchanged pages, in the room of free frames (see [`crate::views`]).
    views: PageViews,
    /// Whether views are kept at all ([`BufferPool::set_views`]).
    views_on: AtomicBool,
}

/// What the pool has saved for the checkpoint in progress.
#[derive(Default)]
struct PoolCheckpoint {
    /// Images written as of the snapshot.
    extents: Vec<(PageId, Extent)>,
    /// Pages copied before a change, still to be written.
    copies: Vec<(PageId, Box<[u8]>)>,
    /// A write for the checkpoint failed (the store has fail-stopped).
    failed: Option<String>,
}

struct Scratch {
    image: AlignedBuf,
}

thread_local! {
    /// For images read on a miss or copied out of a log.
    static READ_SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
    /// For images encoded by a write-back (which an evicting reader may run while it holds
    /// its read scratch).
    static WRITE_SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// Largest image of the largest page size (64 KiB), rounded to the store unit.
const IMAGE_LEN_MAX: usize = (IMAGE_HEADER_LEN + 65536).div_ceil(UNIT) * UNIT;

fn with_scratch<R>(
    which: &'static std::thread::LocalKey<RefCell<Option<Scratch>>>,
    f: impl FnOnce(&mut Scratch) -> R,
) -> R {
    which.with(|s| {
        let mut s = s.borrow_mut();
        f(s.get_or_insert_with(|| Scratch {
            image: AlignedBuf::new(IMAGE_LEN_MAX),
        }))
    })
}

/// What [`BufferPool::view`] found for a page.
pub enum ViewLookup<T> {
    Hit(Arc<T>),
    /// A view of an older version of the page, and the changes since, in order. The view is
    /// no longer kept: the caller applies the changes and puts the result back
    /// ([`BufferPool::put_view`]), in place when its reference is the only one.
    Changed(Arc<T>, Vec<Change>),
    /// None kept; building one is advised.
    Build,
    /// None kept, and none advised.
    Skip,
}

/// A shared latch on a decoded page.
pub struct PageReadGuard<'a> {
    pool: &'a BufferPool,
    slot: &'a Slot,
    id: PageId,
    frame: usize,
}

/// An exclusive latch on a decoded page; mutable access marks it dirty.
pub struct PageWriteGuard<'a> {
    pool: &'a BufferPool,
    slot: &'a Slot,
    id: PageId,
    frame: usize,
}

impl PageReadGuard<'_> {
    pub fn id(&self) -> PageId {
        self.id
    }

    /// The page's latch version: bumped by every exclusive release, so it names these bytes
    /// for as long as any shared latch is held (what [`crate::views`] keys views by).
    pub fn version(&self) -> u64 {
        self.slot.state.load(Ordering::Acquire) >> 8
    }
}

impl PageWriteGuard<'_> {
    pub fn id(&self) -> PageId {
        self.id
    }
}

impl std::ops::Deref for PageReadGuard<'_> {
    type Target = [u8];
    // Inlined into callers in other crates: every byte a B-tree reads goes through here.
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the guard holds a shared latch on the page whose slot points at this frame;
        // writing the frame takes the exclusive latch, and the frame cannot be taken from the
        // page (`take_clean` needs the exclusive latch too) while the guard lives.
        unsafe { self.pool.arena.frame(self.frame) }
    }
}

impl std::ops::Deref for PageWriteGuard<'_> {
    type Target = [u8];
    // Inlined into callers in other crates: every byte a B-tree reads goes through here.
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the guard holds the page's exclusive latch, so nobody else writes the frame;
        // the returned borrow of `self` keeps `deref_mut` from running meanwhile.
        unsafe { self.pool.arena.frame(self.frame) }
    }
}

impl std::ops::DerefMut for PageWriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        if self.slot.flags.load(Ordering::Relaxed) & CKPT != 0 {
            self.pool.ckpt_preserve(self.id, self.slot, self.frame);
        }
        self.pool.mark_dirty(self.slot);
        // SAFETY: the guard holds the page's exclusive latch, so no other thread reads or
        // writes the frame (readers, write-backs and the CLOCK hand all latch the page first),
        // and the `&mut self` borrow excludes this guard's own `deref` meanwhile.
        unsafe { self.pool.arena.frame_mut(self.frame) }
    }
}

impl Drop for PageReadGuard<'_> {
    fn drop(&mut self) {
        self.slot.unlock_shared();
    }
}

impl Drop for PageWriteGuard<'_> {
    fn drop(&mut self) {
        self.slot.unlock_exclusive();
    }
}

impl BufferPool {
    /// Creates a pool over `store` and starts its background writer.
    pub fn new(store: Arc<PageStore>, config: PoolConfig) -> Result<Arc<BufferPool>> {
        let page_size = store.page_size();
        let frame_count = config.budget_bytes / page_size;
        if frame_count < 2 * FRAMES_MIN {
            return Err(StoreError::Config(format!(
                "buffer pool budget {} bytes is below the minimum of {} bytes ({} pages of {page_size})",
                config.budget_bytes,
                2 * FRAMES_MIN * page_size,
                2 * FRAMES_MIN
            )));
        }
        let free = ArrayQueue::new(frame_count);
        for f in 0..frame_count {
            let _ = free.push(f as u32);
        }
        let logs = (0..SHARDS)
            .map(|_| {
                Mutex::new(Log {
                    frames: VecDeque::with_capacity(frame_count),
                    tail_seq: 0,
                    head_pos: 0,
                })
            })
            .collect();
        let pool = Arc::new(BufferPool {
            store,
            dicts: Arc::new(PageDicts::new()),
            page_size,
            frame_count,
            arena: Arena::new(frame_count, page_size),
            slots: AtomicTable::new(),
            owners: (0..frame_count)
                .map(|_| AtomicU64::new(OWNER_FREE))
                .collect(),
            first_record: (0..frame_count).map(|_| AtomicU32::new(0)).collect(),
            free,
            hand: AtomicUsize::new(0),
            logs,
            log_rr: AtomicUsize::new(0),
            log_frames: AtomicUsize::new(0),
            log_bytes: AtomicU64::new(0),
            target_log_bytes: AtomicU64::new(0),
            model_target: AtomicU64::new(0),
            ghost_bias: AtomicI64::new(0),
            ghost_votes: AtomicI64::new(0),
            model_holds_all: AtomicBool::new(false),
            fixed_read_ns: AtomicU64::new(0),
            fixed_decode_ns: AtomicU64::new(0),
            writer_demand: AtomicBool::new(false),
            evict_tick: AtomicU64::new(0),
            demote_tick: AtomicU64::new(0),
            dirty_count: AtomicUsize::new(0),
            counters: Counters::default(),
            writer: Mutex::new(None),
            writer_wake: (Mutex::new(false), Condvar::new()),
            writer_busy: Mutex::new(()),
            shutdown: AtomicBool::new(false),
            writer_error: Mutex::new(None),
            ckpt: Mutex::new(None),
            ckpt_pending: AtomicUsize::new(0),
            warm_loader: Mutex::new(None),
            views: PageViews::default(),
            views_on: AtomicBool::new(true),
        });
        pool.refresh_model();
        let weak = Arc::downgrade(&pool);
        let handle = std::thread::Builder::new()
            .name("zipdb-writer".into())
            .spawn(move || writer_loop(weak))
            .map_err(|e| StoreError::Config(format!("cannot start the background writer: {e}")))?;
        *pool.writer.lock() = Some(handle);
        Ok(pool)
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn store(&self) -> &Arc<PageStore> {
        &self.store
    }

    /// The trees' cold-layer dictionaries ([`crate::dict`]).
    pub fn page_dicts(&self) -> &Arc<PageDicts> {
        &self.dicts
    }

    fn slot(&self, id: PageId) -> Result<&Slot> {
        if !self.store.page_exists(id) {
            return Err(StoreError::NoSuchPage(id));
        }
        self.slots.ensure(id.0)
    }

    fn shard(id: PageId) -> usize {
        (id.0 as usize) % SHARDS
    }

    fn mark_dirty(&self, slot: &Slot) {
        if slot.flags.load(Ordering::Relaxed) & DIRTY == 0 {
            let prev = slot.flags.fetch_or(DIRTY, Ordering::AcqRel);
            if prev & DIRTY == 0 {
                let d = self.dirty_count.fetch_add(1, Ordering::Relaxed) + 1;
                if d > self.dirty_high() {
                    self.wake_writer();
                }
            }
        }
    }

    fn wake_writer(&self) {
        let (m, cv) = &self.writer_wake;
        let mut w = m.lock();
        if !*w {
            *w = true;
            cv.notify_one();
        }
    }

    /// Latches page `id` shared, loading it if needed.
    pub fn read(&self, id: PageId) -> Result<PageReadGuard<'_>> {
        let slot = self.slot(id)?;
        slot.lock_shared();
        if let Some(frame) = slot.frame() {
            self.counters.hit_decoded.add(1);
            if slot.flags.load(Ordering::Relaxed) & REFERENCED == 0 {
                slot.flags.fetch_or(REFERENCED, Ordering::Relaxed);
            }
            return Ok(PageReadGuard {
                pool: self,
                slot,
                id,
                frame,
            });
        }
        // Not decoded: load under the exclusive latch (rechecking, since another thread may
        // have loaded it meanwhile), then downgrade.
        slot.unlock_shared();
        slot.lock_exclusive();
        match self.load_locked(id, slot) {
            Ok(frame) => {
                slot.downgrade();
                Ok(PageReadGuard {
                    pool: self,
                    slot,
                    id,
                    frame,
                })
            }
            Err(e) => {
                slot.unlock_exclusive();
                Err(e)
            }
        }
    }

    /// Latches page `id` exclusively, loading it if needed.
    pub fn write(&self, id: PageId) -> Result<PageWriteGuard<'_>> {
        let slot = self.slot(id)?;
        slot.lock_exclusive();
        let frame = match slot.frame() {
            Some(f) => {
                self.counters.hit_decoded.add(1);
                if slot.flags.load(Ordering::Relaxed) & REFERENCED == 0 {
                    slot.flags.fetch_or(REFERENCED, Ordering::Relaxed);
                }
                f
            }
            None => match self.load_locked(id, slot) {
                Ok(f) => f,
                Err(e) => {
                    slot.unlock_exclusive();
                    return Err(e);
                }
            },
        };
        Ok(PageWriteGuard {
            pool: self,
            slot,
            id,
            frame,
        })
    }

    /// Allocates a new page of `tree`, zeroed, with its logical header set, latched exclusively.
    pub fn allocate(&self, ty: PageType, tree: TreeId, codec: Codec) -> Result<PageWriteGuard<'_>> {
        self.allocate_cold(ty, tree, codec, Codec::None)
    }

    /// [`Self::allocate`] for a tree with a cold layer: the page is written with `cold` when
    /// it is written back because it leaves the pool, with `image` otherwise
    /// ([`LogicalHeader::init_cold`]).
    pub fn allocate_cold(
        &self,
        ty: PageType,
        tree: TreeId,
        image: Codec,
        cold: Codec,
    ) -> Result<PageWriteGuard<'_>> {
        let id = self.store.allocate_page_id(tree)?;
        let slot = self.slots.ensure(id.0)?;
        slot.lock_exclusive();
        debug_assert!(slot.frame().is_none(), "page {id} allocated while resident");
        let frame = match self.take_frame(id) {
            Ok(f) => f,
            Err(e) => {
                slot.unlock_exclusive();
                let _ = self.store.free_page(id);
                return Err(e);
            }
        };
        // SAFETY: the frame was just taken (off the free queue, or from a page or a log that
        // gave it up under its latch or shard mutex), and no slot points at it until ours does
        // below, under the exclusive latch that we hold: no other thread can reach it.
        let data = unsafe { self.arena.frame_mut(frame) };
        data.fill(0);
        LogicalHeader::init_cold(data, ty, image, cold, tree);
        slot.flags.store(REFERENCED, Ordering::Relaxed);
        slot.ghost.store(0, Ordering::Relaxed);
        slot.frame.store(frame as u32 + 1, Ordering::Release);
        self.mark_dirty(slot);
        Ok(PageWriteGuard {
            pool: self,
            slot,
            id,
            frame,
        })
    }

    /// Frees a page the caller holds exclusively: its frame, compressed image and disk extent.
    pub fn free(&self, g: PageWriteGuard<'_>) -> Result<()> {
        let (slot, id, frame) = (g.slot, g.id, g.frame);
        std::mem::forget(g);
        if slot.flags.load(Ordering::Relaxed) & CKPT != 0 {
            // The checkpoint's snapshot still has this page.
            self.ckpt_preserve(id, slot, frame);
        }
        {
            let _log = self.logs[Self::shard(id)].lock();
            slot.cpos.store(0, Ordering::Release);
        }
        if slot.flags.swap(0, Ordering::AcqRel) & DIRTY != 0 {
            self.dirty_count.fetch_sub(1, Ordering::Relaxed);
        }
        slot.frame.store(0, Ordering::Release);
        self.release_frame(frame);
        let r = self.store.free_page(id);
        slot.unlock_exclusive();
        r
    }

    fn release_frame(&self, frame: usize) {
        self.owners[frame].store(OWNER_FREE, Ordering::Release);
        if self.free.push(frame as u32).is_err() {
            unreachable!("free queue holds every frame");
        }
    }

    /// Brings page `id` (latched exclusively, not decoded) into a frame.
    fn load_locked(&self, id: PageId, slot: &Slot) -> Result<usize> {
        if let Some(f) = slot.frame() {
            return Ok(f);
        }
        with_scratch(&READ_SCRATCH, |s| {
            let shard = Self::shard(id);
            // Compressed tier first: copy the image out under the shard mutex, decode outside.
            let from_log = {
                let log = self.logs[shard].lock();
                match slot.cpos.load(Ordering::Acquire) {
                    0 => None,
                    c => {
                        let pos = c - 1;
                        let mut hdr = [0u8; RECORD_HEADER];
                        self.log_read(&log, pos, &mut hdr);
                        let len = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]) as usize;
                        self.log_read(&log, pos + RECORD_HEADER as u64, &mut s.image[..len]);
                        slot.flags.fetch_or(C_REFERENCED, Ordering::Relaxed);
                        Some(len)
                    }
                }
            };
            let header = match from_log {
                Some(len) => {
                    self.counters.hit_compressed.fetch_add(1, Ordering::Relaxed);
                    self.note_ghost(slot, GHOST_DEMOTED);
                    page::parse_header(&s.image[..len], self.page_size)
                        .map_err(|what| self.corrupt(id, what))?
                }
                None => {
                    self.counters.miss.fetch_add(1, Ordering::Relaxed);
                    self.note_ghost(slot, GHOST_EVICTED);
                    self.store.read_image(id, &mut s.image)?
                }
            };
            let frame = self.take_frame(id)?;
            let t0 = Instant::now();
            // SAFETY: the frame was just taken, and no slot points at it until ours does
            // below, under the exclusive latch that we hold: no other thread can reach it.
            let dst = unsafe { self.arena.frame_mut(frame) };
            let decoded = page::decode_image_local_with(&s.image, &header, dst, Some(&self.dicts));
            if let Err(what) = decoded {
                self.release_frame(frame);
                return Err(self.corrupt(id, what));
            }
            self.counters
                .decode_ns
                .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.counters.decodes.fetch_add(1, Ordering::Relaxed);
            Counters::count_codec(&self.counters.decoded_by_codec, header.codec_id);
            slot.flags.fetch_or(REFERENCED, Ordering::Relaxed);
            slot.frame.store(frame as u32 + 1, Ordering::Release);
            if from_log.is_none() && self.admit_image(header.codec_id) {
                self.log_append(id, slot, &s.image[..header.image_len()]);
            }
            Ok(frame)
        })
    }

    fn corrupt(&self, id: PageId, what: page::Corruption) -> StoreError {
        StoreError::CorruptPage {
            file: self.store.file_name().to_string(),
            page_id: id,
            offset: self.store.extent(id).offset_bytes(),
            what,
        }
    }

    /// Writes back every dirty page (before a checkpoint). Callers must keep writers out.
    pub fn flush_all(&self) -> Result<()> {
        if let Some(e) = self.writer_error.lock().clone() {
            return Err(StoreError::ReadOnlyAfterIoError(e));
        }
        self.write_back_pass(Pass::All, 0)?;
        Ok(())
    }

    pub fn stats(&self) -> PoolStats {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let log_frames = self.log_frames.load(Ordering::Relaxed) as u64;
        let free = self.free.len() as u64;
        let (read_ns_avg, decode_ns_avg) = self.cost_averages();
        PoolStats {
            budget_bytes: (self.frame_count * self.page_size) as u64,
            frames: self.frame_count as u64,
            page_size: self.page_size as u64,
            hit_decoded: c.hit_decoded.sum(),
            hit_compressed: l(&c.hit_compressed),
            miss: l(&c.miss),
            decodes: l(&c.decodes),
            decode_ns: l(&c.decode_ns),
            encodes: l(&c.encodes),
            encode_ns: l(&c.encode_ns),
            writebacks: l(&c.writebacks),
            demotions: l(&c.demotions),
            evictions: l(&c.evictions),
            compressed_evictions: l(&c.compressed_evictions),
            relocations: l(&c.relocations),
            ghost_hits_evicted: l(&c.ghost_hits_evicted),
            ghost_hits_demoted: l(&c.ghost_hits_demoted),
            dirty_skips: l(&c.dirty_skips),
            ckpt_writes: l(&c.ckpt_writes),
            ckpt_copies: l(&c.ckpt_copies),
            decoded_frames: (self.frame_count as u64).saturating_sub(log_frames + free),
            compressed_frames: log_frames,
            free_frames: free,
            dirty_pages: self.dirty_count.load(Ordering::Relaxed) as u64,
            compressed_target_bytes: self.target_log_bytes.load(Ordering::Relaxed),
            compressed_bytes: log_frames * self.page_size as u64,
            read_ns_avg,
            decode_ns_avg,
            warm_pages_listed: l(&c.warm_listed),
            warm_pages_loaded: l(&c.warm_loaded),
            warm_pages_skipped: l(&c.warm_skipped),
            warm_load_done: l(&c.warm_done),
            encodes_none: l(&c.encoded_by_codec[0]),
            encodes_lz4: l(&c.encoded_by_codec[1]),
            encodes_zstd: l(&c.encoded_by_codec[2]),
            encodes_zlib: l(&c.encoded_by_codec[3]),
            encodes_trim: l(&c.encoded_by_codec[4]),
            encodes_zstd_dict: l(&c.encoded_by_codec[5]),
            decodes_none: l(&c.decoded_by_codec[0]),
            decodes_lz4: l(&c.decoded_by_codec[1]),
            decodes_zstd: l(&c.decoded_by_codec[2]),
            decodes_zlib: l(&c.decoded_by_codec[3]),
            decodes_trim: l(&c.decoded_by_codec[4]),
            decodes_zstd_dict: l(&c.decoded_by_codec[5]),
            views: self.views.stats(),
        }
    }

    /// Checks the pool's invariants: every frame is owned by exactly one of free list, a log,
    /// or a resident page whose slot points back at it; log positions are within their logs.
    /// Call it with no page latched and no other thread using the pool; it pauses the
    /// background writer itself (whose write-backs move frames between logs).
    pub fn verify(&self) -> std::result::Result<(), String> {
        let _writer = self.writer_busy.lock();
        let mut seen = vec![0u8; self.frame_count];
        let mut free_n = 0;
        for (f, owner) in self.owners.iter().enumerate() {
            match owner.load(Ordering::Acquire) {
                OWNER_FREE => free_n += 1,
                OWNER_LOG => {}
                pid => {
                    let slot = self
                        .slots
                        .get(pid)
                        .ok_or(format!("frame {f} owned by unknown page {pid}"))?;
                    if slot.frame() != Some(f) {
                        return Err(format!(
                            "frame {f} owned by page {pid}, whose slot says {:?}",
                            slot.frame()
                        ));
                    }
                    seen[f] += 1;
                }
            }
        }
        for (s, log) in self.logs.iter().enumerate() {
            let log = log.lock();
            let fs = self.page_size as u64;
            if log.head_pos < log.tail_seq * fs
                || (!log.frames.is_empty()
                    && log.head_pos > (log.tail_seq + log.frames.len() as u64) * fs)
            {
                return Err(format!("log {s}: head {} outside its frames", log.head_pos));
            }
            for &f in &log.frames {
                if self.owners[f as usize].load(Ordering::Acquire) != OWNER_LOG {
                    return Err(format!("log {s} frame {f} not owned by a log"));
                }
                seen[f as usize] += 1;
            }
        }
        if let Some(f) = seen.iter().position(|&n| n > 1) {
            return Err(format!("frame {f} used twice"));
        }
        if free_n != self.free.len() {
            return Err(format!(
                "{free_n} frames marked free, free queue holds {}",
                self.free.len()
            ));
        }
        self.views.verify()?;
        if self.views.bytes() > self.view_room() {
            return Err(format!(
                "views hold {} bytes, room is {}",
                self.views.bytes(),
                self.view_room()
            ));
        }
        Ok(())
    }

    /// Makes the policy use these costs instead of measured ones (a slow or a fast disk,
    /// whatever the test machine is).
    #[cfg(any(test, feature = "testing"))]
    pub fn fix_costs_for_testing(&self, read_ns: u64, decode_ns: u64) {
        self.fixed_read_ns.store(read_ns, Ordering::Relaxed);
        self.fixed_decode_ns.store(decode_ns, Ordering::Relaxed);
        self.refresh_model();
    }

    /// Stops the background writer and the warm-restart loader (does not flush).
    pub fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
        self.wake_writer();
        for h in [self.writer.lock().take(), self.warm_loader.lock().take()]
            .into_iter()
            .flatten()
        {
            // The last handle of the pool may be dropped by one of its own threads.
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("frames", &self.frame_count)
            .field("page_size", &self.page_size)
            .finish()
    }
}
