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
use crate::error::{Result, StoreError};
use crate::io::AlignedBuf;
use crate::page::{self, LogicalHeader, PageId, PageType, TreeId, IMAGE_HEADER_LEN};
use crate::store::{AtomicTable, Extent, MapSnapshot, PageStore, UNIT};
use crate::views::{Change, Lookup, PageViews, View, ViewStats};

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
const CODEC_IDS: usize = codec::TRIM_ID as usize + 1;

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
    /// Images decoded into frames (misses and compressed hits), by codec.
    pub decodes_none: u64,
    pub decodes_lz4: u64,
    pub decodes_zstd: u64,
    pub decodes_zlib: u64,
    pub decodes_trim: u64,
    /// Views kept in the room of free frames (see [`crate::views`]).
    pub views: ViewStats,
}

/// The buffer pool.
pub struct BufferPool {
    store: Arc<PageStore>,
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
    /// A view of an older version of the page, and the changes since, in order.
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
            let decoded = page::decode_image_local(&s.image, &header, dst);
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

    /// Records a ghost hit if the page left memory (or the decoded tier) recently, and moves
    /// the ghost bias of the compressed-tier target accordingly.
    ///
    /// Both windows cover the same number of bytes (a quarter of the budget). A hit on a page
    /// evicted `d` evictions ago would have been saved by `d` more images in the compressed
    /// tier (a read saved each, `d * image` bytes) or by `d` more decoded frames (read + decode
    /// saved each, `d * page` bytes); per byte, images win when `read * page / image > read +
    /// decode`, so the bias moves up or down by that difference. A compressed hit on a page
    /// demoted recently would have been saved by a larger decoded tier (a decode saved): the
    /// bias moves down. Steps are weighted by the measured costs, so the bias settles where a
    /// byte saves as much time in either tier.
    fn note_ghost(&self, slot: &Slot, kind: u64) {
        let g = slot.ghost.load(Ordering::Relaxed);
        if g == 0 || g & 1 != kind {
            return;
        }
        let tick = g >> 1;
        let window_bytes = (self.frame_count * self.page_size / 4) as u64;
        let (now, window) = if kind == GHOST_EVICTED {
            (
                self.evict_tick.load(Ordering::Relaxed),
                window_bytes / self.image_bytes_avg(),
            )
        } else {
            (
                self.demote_tick.load(Ordering::Relaxed),
                window_bytes / self.page_size as u64,
            )
        };
        if now.saturating_sub(tick) > window {
            return;
        }
        // One ghost hit counts once.
        slot.ghost.store(0, Ordering::Relaxed);
        let (read_ns, decode_ns) = self.cost_averages();
        let (read, decode) = (
            read_ns as i64,
            decode_ns as i64 + self.rewrite_cost_per_load_ns() as i64,
        );
        let total = (read + decode).max(1);
        let page = self.page_size as i64;
        let vote = if kind == GHOST_EVICTED {
            self.counters
                .ghost_hits_evicted
                .fetch_add(1, Ordering::Relaxed);
            let images_per_page = page as f64 / self.image_bytes_avg() as f64;
            let gain = (read as f64 * images_per_page) as i64 - total;
            (page * gain / total).clamp(-page, page)
        } else {
            self.counters
                .ghost_hits_demoted
                .fetch_add(1, Ordering::Relaxed);
            -(page * decode / total)
        };
        self.ghost_votes.fetch_add(vote, Ordering::Relaxed);
    }

    /// Moves the ghost bias one step (1/64 of the budget) the way the ghost hits since the last
    /// call voted, and lets it decay toward the model (1/32 per call). Called by the writer
    /// every 20 ms or so: the bias can cross the whole budget within about a second of
    /// consistent votes, and fades when the ghosts fall silent, so it can neither saturate
    /// on old evidence nor outvote the model for good.
    fn adapt_bias(&self) {
        let votes = self.ghost_votes.swap(0, Ordering::Relaxed);
        let step = (self.frame_count * self.page_size / 64) as i64;
        let max = self.log_bytes_max() as i64;
        let b = self.ghost_bias.load(Ordering::Relaxed);
        let b = b - b / 32 + step * votes.signum();
        self.ghost_bias.store(b.clamp(-max, max), Ordering::Relaxed);
        self.update_target();
    }

    /// Frames kept out of the compressed tier's reach, so hot pages (roots, inner nodes, the
    /// pages being worked on) always stay decoded.
    fn reserve_frames(&self) -> usize {
        (self.frame_count / 8).max(FRAMES_MIN)
    }

    /// The most bytes the compressed tier may take.
    fn log_bytes_max(&self) -> u64 {
        ((self.frame_count - self.reserve_frames()) * self.page_size) as u64
    }

    /// Average bytes one page's image takes in a log, from the store's totals.
    fn image_bytes_avg(&self) -> u64 {
        let (pages, phys) = self.store.totals();
        if pages == 0 {
            return (self.page_size / 2) as u64;
        }
        (phys / pages + RECORD_HEADER as u64).max(RECORD_HEADER as u64 + 64)
    }

    /// Recomputes the cost model's split. Under uniform access the expected cost per page
    /// access is linear in the compressed tier's size, so the best split is a corner: either no
    /// compressed tier (a decoded cache, misses cost read + decode), or a compressed tier as large
    /// as every image (or the budget less the reserve), with the rest decoded (hits on
    /// compressed-only pages cost a decode). Compare the two with the measured read and decode
    /// costs. Keeping images pays when a read costs more than a decode times the compression
    /// ratio; on a fast RAM disk it often does not, on a real disk it does. Skew (hot sets) is
    /// left to the ghost bias.
    fn refresh_model(&self) {
        let (pages, _) = self.store.totals();
        let page = self.page_size as f64;
        let budget = (self.frame_count * self.page_size) as f64;
        let decoded_all = pages as f64 * page;
        let reserve = (self.reserve_frames() * self.page_size) as f64;
        let target = if pages == 0 || decoded_all <= budget - reserve {
            // Everything fits decoded: images would only take room from decoded pages.
            0
        } else {
            let (read_ns, decode_ns) = self.cost_averages();
            let (read, decode) = (read_ns as f64, decode_ns as f64);
            // A page brought into a frame and then modified costs an encode when it leaves
            // again: in both corners, but more often in the one with fewer decoded pages.
            let decode = decode + self.rewrite_cost_per_load_ns();
            let n = pages as f64;
            let image = self.image_bytes_avg() as f64;
            let t = (self.all_images_bytes(pages) as f64).min(self.log_bytes_max() as f64);
            let cost_decoded_only = (1.0 - (budget / decoded_all).min(1.0)) * (read + decode);
            let held = (t / image / n).min(1.0);
            let decoded = ((budget - t) / page / n).min(held);
            let cost_with_images = (held - decoded) * decode + (1.0 - held) * (read + decode);
            if cost_with_images < cost_decoded_only {
                t as u64
            } else {
                0
            }
        };
        let all_images = self.all_images_bytes(pages);
        self.model_holds_all
            .store(target > 0 && target >= all_images, Ordering::Relaxed);
        self.model_target.store(target, Ordering::Relaxed);
        self.update_target();
    }

    /// The target is the model's plus the ghost bias, except that when the model holds every
    /// image the bias may only add: there, shrinking the compressed tier turns certain
    /// compressed hits into misses, while the ghosts of the few pages it evicts are too few to
    /// say so (the evicted side of the comparison has no population to measure).
    /// Average encode cost per page load: the measured encode ns times the share of loads
    /// that were written back (0 for a read-only workload).
    fn rewrite_cost_per_load_ns(&self) -> f64 {
        let c = &self.counters;
        let encodes = c.encodes.load(Ordering::Relaxed);
        let loads = c.decodes.load(Ordering::Relaxed);
        if encodes == 0 || loads == 0 || self.fixed_read_ns.load(Ordering::Relaxed) != 0 {
            return 0.0;
        }
        let encode_ns = c.encode_ns.load(Ordering::Relaxed) as f64 / encodes as f64;
        let share = (c.writebacks.load(Ordering::Relaxed) as f64 / loads as f64).min(1.0);
        encode_ns * share
    }

    /// Log bytes that hold every page's image: the images with their record headers, plus
    /// one frame per shard for what a log cannot fill (its partly written head frame).
    /// Without it the log would turn over and drop images it should keep.
    fn all_images_bytes(&self, pages: u64) -> u64 {
        pages * self.image_bytes_avg() + (SHARDS * self.page_size) as u64
    }

    fn update_target(&self) {
        let model = self.model_target.load(Ordering::Relaxed) as i64;
        let mut bias = self.ghost_bias.load(Ordering::Relaxed);
        if self.model_holds_all.load(Ordering::Relaxed) {
            bias = bias.max(0);
        }
        let t = (model + bias).clamp(0, self.log_bytes_max() as i64) as u64;
        self.target_log_bytes.store(t, Ordering::Relaxed);
    }

    /// Whether an image of codec `codec_id` read from disk or just written should be cached.
    ///
    /// Never raw (codec none) or Trim images: they are the page itself, or the page minus its
    /// zeros, so a log copy would cost nearly a frame to save only a read, and decoding it
    /// gains nothing over keeping the page decoded. (Admitting Trim images of half-full pages
    /// is a later option, to be measured first: issue 19 design §2.6.)
    ///
    /// Other images only while the policy wants a compressed tier and it is not over its
    /// target. Otherwise caching it would push out a decoded page for a copy the policy does
    /// not want; even free frames are better left to decoded pages (kept together in the arena,
    /// fewer TLB misses).
    fn admit_image(&self, codec_id: u8) -> bool {
        if codec_id == Codec::None.id() || codec_id == codec::TRIM_ID {
            return false;
        }
        let target = self.target_log_bytes.load(Ordering::Relaxed);
        // At the target an image is still taken: the log then reclaims its oldest frame,
        // dropping the images nobody used (and the stale ones write-backs left behind).
        target > 0
            && self.log_bytes.load(Ordering::Relaxed) < target + (SHARDS * self.page_size) as u64
    }

    /// Dirty pages above which the writer cleans regardless of eviction: 90% of the frames
    /// not in compressed logs (as InnoDB's `innodb_max_dirty_pages_pct`). Below it, pages are
    /// written only when evicting threads are about to need them clean, or at a checkpoint.
    fn dirty_high(&self) -> usize {
        // Log frames beyond the target are reclaimed before any decoded page is touched, so
        // they count as room for decoded pages.
        let target_frames = self.target_log_bytes.load(Ordering::Relaxed) as usize / self.page_size;
        let log = self.log_frames.load(Ordering::Relaxed).min(target_frames);
        (self.frame_count - log) * 9 / 10
    }

    /// Average ns of one storage read (incl. checksum) and of one decode, measured so far.
    fn cost_averages(&self) -> (u64, u64) {
        let fixed = (
            self.fixed_read_ns.load(Ordering::Relaxed),
            self.fixed_decode_ns.load(Ordering::Relaxed),
        );
        if fixed.0 != 0 && fixed.1 != 0 {
            return fixed;
        }
        let c = &self.store.counters;
        let reads = c.reads.load(Ordering::Relaxed).max(1);
        let read_ns =
            (c.read_ns.load(Ordering::Relaxed) + c.checksum_ns.load(Ordering::Relaxed)) / reads;
        let decodes = self.counters.decodes.load(Ordering::Relaxed).max(1);
        let decode_ns = self.counters.decode_ns.load(Ordering::Relaxed) / decodes;
        // Before anything was measured, assume a read costs ten decodes.
        if c.reads.load(Ordering::Relaxed) == 0
            || self.counters.decodes.load(Ordering::Relaxed) == 0
        {
            return (100_000, 10_000);
        }
        (read_ns.max(1), decode_ns.max(1))
    }

    /// Takes a free frame for page `id`, making one free if needed.
    fn take_frame(&self, id: PageId) -> Result<usize> {
        let f = self.take_free_or_reclaim(true)?;
        // Writing the frame without other latches is sound only because its last owner gave
        // it up: a frame still owned by a page or a log here would be shared.
        let prev = self.owners[f].swap(id.0, Ordering::AcqRel);
        assert_eq!(prev, OWNER_FREE, "frame {f} taken while owned by {prev:#x}");
        Ok(f)
    }

    /// Pops a free frame or frees one. `may_write` lets it write back a dirty victim when
    /// nothing clean is found; callers already inside a write-back pass `false` and get up to a
    /// few attempts only.
    fn take_free_or_reclaim(&self, may_write: bool) -> Result<usize> {
        let mut attempts = 0usize;
        let attempts_max = if may_write { 64 } else { 2 };
        loop {
            if let Some(f) = self.free.pop() {
                if self.views.bytes() > 0 {
                    self.views.shrink(self.view_room());
                }
                return Ok(f as usize);
            }
            let over_target = self.log_bytes.load(Ordering::Relaxed)
                > self.target_log_bytes.load(Ordering::Relaxed);
            let from_log = over_target || attempts % 4 == 3;
            let got = if from_log {
                self.reclaim_log_frame()
                    .or_else(|| self.clock_victim(may_write))
            } else {
                self.clock_victim(may_write)
                    .or_else(|| self.reclaim_log_frame())
            };
            if let Some(f) = got {
                return Ok(f);
            }
            attempts += 1;
            if attempts >= attempts_max {
                return Err(StoreError::PoolExhausted(format!(
                    "no frame could be freed among {} (all latched or dirty)",
                    self.frame_count
                )));
            }
            std::thread::yield_now();
        }
    }

    /// Runs the CLOCK hand over frames for up to two sweeps and frees the first clean,
    /// unreferenced decoded page it meets. Dirty unreferenced pages are skipped (the writer is
    /// asked to clean ahead of the hand); with `write_dirty`, once the hand has gone an eighth
    /// of the arena past the first such page without finding a clean one, that page is written
    /// back here and taken.
    fn clock_victim(&self, write_dirty: bool) -> Option<usize> {
        let patience = (self.frame_count / 8).max(8);
        let mut candidate: Option<(usize, usize)> = None;
        for step in 0..2 * self.frame_count {
            if let Some((f, since)) = candidate {
                if write_dirty && step - since >= patience {
                    if let Some(f) = self.write_back_and_take(f) {
                        return Some(f);
                    }
                    candidate = None;
                }
            }
            let f = self.hand.fetch_add(1, Ordering::Relaxed) % self.frame_count;
            let owner = self.owners[f].load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            let flags = slot.flags.load(Ordering::Relaxed);
            if flags & REFERENCED != 0 {
                slot.flags.fetch_and(!REFERENCED, Ordering::Relaxed);
                continue;
            }
            if flags & DIRTY != 0 {
                self.counters.dirty_skips.fetch_add(1, Ordering::Relaxed);
                if candidate.is_none() {
                    candidate = Some((f, step));
                }
                if !self.writer_demand.swap(true, Ordering::Relaxed) {
                    self.wake_writer();
                }
                continue;
            }
            if let Some(f) = self.take_clean(f, owner, slot) {
                return Some(f);
            }
        }
        match candidate {
            Some((f, _)) if write_dirty => self.write_back_and_take(f),
            _ => None,
        }
    }

    /// Writes back the dirty page in frame `f` (if it still is there and dirty) and takes
    /// the frame if the page is then clean and unlatched.
    fn write_back_and_take(&self, f: usize) -> Option<usize> {
        let owner = self.owners[f].load(Ordering::Acquire);
        if owner == OWNER_FREE || owner == OWNER_LOG {
            return None;
        }
        let slot = self.slots.get(owner)?;
        if !slot.try_lock_shared() {
            return None;
        }
        let r = if slot.frame() == Some(f) && slot.is_dirty() {
            self.write_back_locked(PageId(owner), slot, f, true)
        } else {
            Ok(())
        };
        slot.unlock_shared();
        r.ok()?;
        self.take_clean(f, owner, slot)
    }

    /// Drops the clean page `owner` from frame `f` (demotion if its image stays in a log,
    /// eviction if not) and returns the frame; `None` if the page is latched, dirty or moved.
    fn take_clean(&self, f: usize, owner: u64, slot: &Slot) -> Option<usize> {
        if !slot.try_lock_exclusive() {
            return None;
        }
        if slot.frame() != Some(f)
            || slot.flags.load(Ordering::Acquire) & (DIRTY | CKPT) != 0
            || self.owners[f].load(Ordering::Acquire) != owner
        {
            slot.unlock_exclusive();
            return None;
        }
        slot.frame.store(0, Ordering::Release);
        let kind = if slot.cpos.load(Ordering::Acquire) != 0 {
            // Just left the decoded tier while hot: its image gets a second chance.
            slot.flags.fetch_or(C_REFERENCED, Ordering::Relaxed);
            self.counters.demotions.fetch_add(1, Ordering::Relaxed);
            GHOST_DEMOTED
        } else {
            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
            GHOST_EVICTED
        };
        self.set_ghost(slot, kind);
        slot.unlock_exclusive();
        self.owners[f].store(OWNER_FREE, Ordering::Release);
        Some(f)
    }

    fn set_ghost(&self, slot: &Slot, kind: u64) {
        let tick = if kind == GHOST_EVICTED {
            self.evict_tick.fetch_add(1, Ordering::Relaxed)
        } else {
            self.demote_tick.fetch_add(1, Ordering::Relaxed)
        };
        slot.ghost.store((tick << 1) | kind, Ordering::Relaxed);
    }

    /// Frees the oldest frame of the log with the most frames (at least two, so the head frame
    /// is never the one reclaimed). Images in it are dropped, or copied to the head if they were
    /// used since written and the head has room.
    fn reclaim_log_frame(&self) -> Option<usize> {
        let start = self.log_rr.fetch_add(1, Ordering::Relaxed);
        let mut best: Option<(usize, usize)> = None;
        for i in 0..SHARDS {
            let s = (start + i) % SHARDS;
            let n = self.logs[s].lock().frames.len();
            if n >= 2 && best.is_none_or(|(_, bn)| n > bn) {
                best = Some((s, n));
            }
        }
        let (shard, _) = best?;
        let mut log = self.logs[shard].lock();
        if log.frames.len() < 2 {
            return None;
        }
        let fs = self.page_size as u64;
        let tail_frame = log.frames[0] as usize;
        let start_pos = log.tail_seq * fs;
        let end_pos = start_pos + fs;
        let mut pos = start_pos + self.first_record[tail_frame].load(Ordering::Relaxed) as u64;
        let under_target =
            self.log_bytes.load(Ordering::Relaxed) <= self.target_log_bytes.load(Ordering::Relaxed);
        // Room for copies: the unused part of the head frame.
        let head_end = (log.tail_seq + log.frames.len() as u64) * fs;
        while pos < end_pos && pos < log.head_pos {
            let mut hdr = [0u8; RECORD_HEADER];
            self.log_read(&log, pos, &mut hdr);
            let pid = u64::from_le_bytes(hdr[0..8].try_into().unwrap_or([0; 8]));
            let len = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]) as u64;
            let rec = record_len(len as usize) as u64;
            if let Some(slot) = self.slots.get(pid) {
                if slot.cpos.load(Ordering::Acquire) == pos + 1 {
                    let flags = slot.flags.load(Ordering::Relaxed);
                    let decoded = slot.frame.load(Ordering::Relaxed) != 0;
                    // Second chance: a compressed-only image used since it was written, or the
                    // copy of a decoded page while the tier is under its target.
                    let keep = flags & DIRTY == 0
                        && log.head_pos + rec <= head_end
                        && if decoded {
                            under_target
                        } else {
                            flags & C_REFERENCED != 0
                        };
                    if keep {
                        let dst = log.head_pos;
                        self.log_copy(&log, pos, dst, rec as usize);
                        self.note_record_span(&log, dst, rec);
                        log.head_pos += rec;
                        slot.cpos.store(dst + 1, Ordering::Release);
                        slot.flags.fetch_and(!C_REFERENCED, Ordering::Relaxed);
                        self.counters.relocations.fetch_add(1, Ordering::Relaxed);
                    } else {
                        slot.cpos.store(0, Ordering::Release);
                        self.counters
                            .compressed_evictions
                            .fetch_add(1, Ordering::Relaxed);
                        if slot.frame.load(Ordering::Relaxed) == 0 {
                            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
                            self.set_ghost(slot, GHOST_EVICTED);
                        }
                    }
                }
            }
            pos += rec;
        }
        // The next frame's first record starts where the last record of this one ended.
        if log.frames.len() >= 2 {
            let next = log.frames[1] as usize;
            if pos > end_pos {
                self.first_record[next].store((pos - end_pos) as u32, Ordering::Relaxed);
            }
        }
        log.frames.pop_front();
        log.tail_seq += 1;
        if log.head_pos < log.tail_seq * fs {
            log.head_pos = log.tail_seq * fs;
        }
        self.log_frames.fetch_sub(1, Ordering::Relaxed);
        self.log_bytes.fetch_sub(fs, Ordering::Relaxed);
        drop(log);
        self.owners[tail_frame].store(OWNER_FREE, Ordering::Release);
        Some(tail_frame)
    }

    /// The frame and offset of log position `pos`, which must lie in the log's frames.
    fn log_locate(&self, log: &Log, pos: u64) -> (usize, usize) {
        let fs = self.page_size as u64;
        let seq = pos / fs;
        assert!(
            seq >= log.tail_seq && seq - log.tail_seq < log.frames.len() as u64,
            "log position {pos} outside the log's frames"
        );
        (
            log.frames[(seq - log.tail_seq) as usize] as usize,
            (pos % fs) as usize,
        )
    }

    /// Copies `out.len()` bytes from log position `pos` (possibly spanning frames). `log` is
    /// the guard of the shard mutex, which makes the log's frames ours.
    fn log_read(&self, log: &Log, mut pos: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let (frame, off) = self.log_locate(log, pos);
            let n = (self.page_size - off).min(out.len() - done);
            // SAFETY: the frame belongs to this log and we hold its shard mutex, so nobody
            // else touches it; `out` is caller memory, never the arena.
            unsafe { self.arena.read(frame, off, &mut out[done..done + n]) };
            done += n;
            pos += n as u64;
        }
    }

    /// Copies `data` to log position `pos` (possibly spanning frames), under the shard mutex.
    fn log_write(&self, log: &Log, mut pos: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let (frame, off) = self.log_locate(log, pos);
            let n = (self.page_size - off).min(data.len() - done);
            // SAFETY: the frame belongs to this log and we hold its shard mutex, so nobody
            // else reads or writes it; `data` is caller memory (a scratch image or a record
            // header), never the arena.
            unsafe { self.arena.write(frame, off, &data[done..done + n]) };
            done += n;
            pos += n as u64;
        }
    }

    /// A record was written at log position `pos`, `rec` bytes long: every frame it reaches
    /// into past its first starts its own first record where this one ends (a whole frame
    /// covered by it holds no record start). Reclaiming a tail frame walks its records from
    /// there, so this must be exact: a wrong start skips records whose pages would then keep
    /// pointing into a frame that is gone.
    fn note_record_span(&self, log: &Log, pos: u64, rec: u64) {
        let fs = self.page_size as u64;
        let end = pos + rec;
        let mut b = (pos / fs + 1) * fs;
        while b < end {
            let idx = (b / fs - log.tail_seq) as usize;
            debug_assert!(idx < log.frames.len(), "record past the log's frames");
            if let Some(&f) = log.frames.get(idx) {
                self.first_record[f as usize].store((end - b).min(fs) as u32, Ordering::Relaxed);
            }
            b += fs;
        }
    }

    /// Copies a record of `len` bytes forward from log position `from` to `to` (the head),
    /// frame to frame, under the shard mutex.
    fn log_copy(&self, log: &Log, from: u64, to: u64, len: usize) {
        // Relocation moves a record to the head, past its own end: the two ranges are disjoint
        // positions of one log, so disjoint bytes of the arena.
        assert!(
            from + len as u64 <= to,
            "log copy {from}+{len} -> {to} overlaps"
        );
        let mut done = 0;
        while done < len {
            let (sf, so) = self.log_locate(log, from + done as u64);
            let (df, doff) = self.log_locate(log, to + done as u64);
            let n = (len - done)
                .min(self.page_size - so)
                .min(self.page_size - doff);
            // SAFETY: both frames belong to this log and we hold its shard mutex; the ranges
            // are disjoint (asserted above).
            unsafe { self.arena.copy(sf, so, df, doff, n) };
            done += n;
        }
    }

    /// Appends `image` for page `id` to its shard's log and points the slot at it. Best effort:
    /// if no frame can be had the image is simply not cached.
    fn log_append(&self, id: PageId, slot: &Slot, image: &[u8]) {
        let shard = Self::shard(id);
        let rec = record_len(image.len()) as u64;
        let fs = self.page_size as u64;
        let mut spare: Option<usize> = None;
        loop {
            let mut log = self.logs[shard].lock();
            let cap_end = (log.tail_seq + log.frames.len() as u64) * fs;
            if log.head_pos + rec > cap_end {
                let Some(f) = spare.take() else {
                    drop(log);
                    match self.take_free_or_reclaim(false) {
                        Ok(f) => {
                            spare = Some(f);
                            continue;
                        }
                        Err(_) => {
                            // Not cached. Any older image in the log is stale now (this may be
                            // a write-back): forget it, or a later demotion would serve it.
                            let _log = self.logs[shard].lock();
                            slot.cpos.store(0, Ordering::Release);
                            return;
                        }
                    }
                };
                if log.frames.is_empty() {
                    log.head_pos = log.tail_seq * fs;
                }
                // No record reaches into the new frame yet; the record that will is written
                // later (the shard mutex is let go in between, and another thread's record
                // may come first), and `note_record_span` sets this then.
                self.first_record[f].store(0, Ordering::Relaxed);
                let prev = self.owners[f].swap(OWNER_LOG, Ordering::AcqRel);
                assert_eq!(
                    prev, OWNER_FREE,
                    "frame {f} joins a log while owned by {prev:#x}"
                );
                log.frames.push_back(f as u32);
                self.log_frames.fetch_add(1, Ordering::Relaxed);
                self.log_bytes.fetch_add(fs, Ordering::Relaxed);
                continue;
            }
            let pos = log.head_pos;
            let mut hdr = [0u8; RECORD_HEADER];
            hdr[0..8].copy_from_slice(&id.0.to_le_bytes());
            hdr[8..12].copy_from_slice(&(image.len() as u32).to_le_bytes());
            self.log_write(&log, pos, &hdr);
            self.log_write(&log, pos + RECORD_HEADER as u64, image);
            self.note_record_span(&log, pos, rec);
            log.head_pos += rec;
            slot.cpos.store(pos + 1, Ordering::Release);
            slot.flags.fetch_and(!C_REFERENCED, Ordering::Relaxed);
            drop(log);
            if let Some(f) = spare {
                self.release_frame(f);
            }
            return;
        }
    }

    /// Compresses page `id` into its on-disk image in `out` (with its cold codec if it is
    /// `leaving` the pool), counting the work; returns the image length.
    fn encode(&self, data: &[u8], id: PageId, out: &mut [u8], leaving: bool) -> usize {
        let t0 = Instant::now();
        let n = page::encode_image_local_for(data, id, UNIT, out, leaving);
        self.counters
            .encode_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.counters.encodes.fetch_add(1, Ordering::Relaxed);
        // Byte 7 of the image: the codec it was encoded with (none when compressing did not pay).
        Counters::count_codec(&self.counters.encoded_by_codec, out[7]);
        n
    }

    /// Writes back page `id` (latched at least shared, resident in `frame`, dirty): compress,
    /// write out of place, then cache the new image in the compressed tier. `leaving`: the
    /// page is written because it is about to leave the pool (a CLOCK victim, or an
    /// unreferenced page the writer cleans ahead of the hand), so its cold codec applies, if it
    /// has one. Pages that stay (checkpoints, flushes, referenced pages) keep their cheap image
    /// codec. A clean page is never written, and write-backs of one page never overlap (the
    /// [`WRITING`] flag), so an unchanged page is not encoded twice.
    fn write_back_locked(
        &self,
        id: PageId,
        slot: &Slot,
        frame: usize,
        leaving: bool,
    ) -> Result<()> {
        let mut spins = 0u32;
        while slot.flags.fetch_or(WRITING, Ordering::AcqRel) & WRITING != 0 {
            backoff(&mut spins);
        }
        // The write-back we waited for may have saved this very content (nothing changed it:
        // we hold a latch); write only what is still owed, to the live map or the checkpoint.
        let r = if slot.flags.load(Ordering::Acquire) & (DIRTY | CKPT) == 0 {
            Ok(())
        } else {
            self.write_back_claimed(id, slot, frame, leaving)
        };
        slot.flags.fetch_and(!WRITING, Ordering::AcqRel);
        r
    }

    /// [`Self::write_back_locked`] once this thread holds the page's [`WRITING`] flag.
    fn write_back_claimed(
        &self,
        id: PageId,
        slot: &Slot,
        frame: usize,
        leaving: bool,
    ) -> Result<()> {
        // A page flagged for the checkpoint is unchanged since its snapshot (a change would
        // have copied it and cleared the flag under the exclusive latch, which our latch
        // excludes): this image serves the checkpoint too. Claimed before writing, so that of
        // two threads writing the page back, exactly one records it.
        let for_ckpt = slot.flags.fetch_and(!CKPT, Ordering::AcqRel) & CKPT != 0;
        with_scratch(&WRITE_SCRATCH, |s| {
            // SAFETY: the caller holds a latch on the page resident in `frame` (shared or
            // exclusive), so no writer changes the frame and nobody takes it meanwhile.
            let data = unsafe { self.arena.frame(frame) };
            let n = self.encode(data, id, &mut s.image, leaving);
            if for_ckpt {
                let r = self.store.write_image_pinned(id, &mut s.image, n);
                self.ckpt_record(id, r.as_ref().ok().copied(), r.as_ref().err());
                r?;
            } else {
                self.store.write_image(id, &mut s.image, n)?;
            }
            self.counters.writebacks.fetch_add(1, Ordering::Relaxed);
            if slot.flags.fetch_and(!DIRTY, Ordering::AcqRel) & DIRTY != 0 {
                self.dirty_count.fetch_sub(1, Ordering::Relaxed);
            }
            if self.admit_image(s.image[7]) {
                self.log_append(id, slot, &s.image[..n]);
            } else {
                let _log = self.logs[Self::shard(id)].lock();
                slot.cpos.store(0, Ordering::Release);
            }
            Ok(())
        })
    }

    /// Writes back dirty pages, visiting frames from `start` round the arena.
    /// - `Pass::All`: every dirty page, waiting for latches (before a checkpoint).
    /// - `Pass::DownTo(n)`: pages the CLOCK hand would take soonest (not referenced) first,
    ///   then any, until at most `n` remain dirty; latched pages are skipped.
    /// - `Pass::Cold(n)`: up to `n` unreferenced dirty pages, so that evicting threads ahead
    ///   of the writer find clean victims.
    fn write_back_pass(&self, pass: Pass, start: usize) -> Result<usize> {
        let mut written = 0;
        let all = matches!(pass, Pass::All);
        let rounds = if matches!(pass, Pass::DownTo(_)) {
            2
        } else {
            1
        };
        for round in 0..rounds {
            let cold_only = !all && round == 0;
            // Unreferenced pages are the ones the CLOCK hand takes next: written as leaving,
            // or a page cleaned ahead of the hand would leave the pool with its cheap image and
            // never be written again (clean pages are not rewritten). Referenced pages stay.
            let leaving = cold_only;
            for i in 0..self.frame_count {
                match pass {
                    Pass::DownTo(n) if self.dirty_count.load(Ordering::Relaxed) <= n => {
                        return Ok(written)
                    }
                    Pass::Cold(n) if written >= n => return Ok(written),
                    _ => {}
                }
                let f = (start + i) % self.frame_count;
                let owner = self.owners[f].load(Ordering::Acquire);
                if owner == OWNER_FREE || owner == OWNER_LOG {
                    continue;
                }
                let Some(slot) = self.slots.get(owner) else {
                    continue;
                };
                if !slot.is_dirty()
                    || (cold_only && slot.flags.load(Ordering::Relaxed) & REFERENCED != 0)
                {
                    continue;
                }
                if all {
                    slot.lock_shared();
                } else if !slot.try_lock_shared() {
                    continue;
                }
                let r = if slot.frame() == Some(f)
                    && slot.is_dirty()
                    && self.owners[f].load(Ordering::Acquire) == owner
                {
                    written += 1;
                    self.write_back_locked(PageId(owner), slot, f, leaving)
                } else {
                    Ok(())
                };
                slot.unlock_shared();
                r?;
            }
        }
        Ok(written)
    }

    /// Starts a checkpoint: flags every dirty page so that its content as of now is saved
    /// for it — written by [`Self::checkpoint_pages`] or by any write-back before that, or
    /// copied by the first change to it (the copy is written later). Pages clean now are in
    /// the store's snapshot already. The caller must keep page changes out during this call
    /// (the engine holds its checkpoint gate) and must take the store's snapshot
    /// ([`PageStore::begin_checkpoint`]) in the same quiet moment, *after* this call: pages
    /// that a concurrent write-back cleans meanwhile are not flagged, and the snapshot must
    /// then see the map entry that write-back installed. Returns the pages flagged.
    pub fn begin_checkpoint(&self) -> Result<usize> {
        if let Some(e) = self.writer_error.lock().clone() {
            return Err(StoreError::ReadOnlyAfterIoError(e));
        }
        let mut ck = self.ckpt.lock();
        assert!(ck.is_none(), "a pool checkpoint is already in progress");
        *ck = Some(PoolCheckpoint::default());
        let mut flagged = 0;
        for f in 0..self.frame_count {
            let owner = self.owners[f].load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            if slot.frame() != Some(f) {
                continue;
            }
            // Flag only while the page is still dirty, in one atomic step: a write-back that
            // is finishing concurrently (it holds only a shared latch; the gate does not stop
            // it) has then either cleared DIRTY first — and already pointed the live map at
            // its image, which the store's snapshot (taken after this) will hold — or finds
            // the flag and the page is written again for the checkpoint. Between a plain
            // check and a set, an evicting thread could drop the page with the flag on.
            let mut cur = slot.flags.load(Ordering::Acquire);
            while cur & DIRTY != 0 {
                match slot.flags.compare_exchange_weak(
                    cur,
                    cur | CKPT,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(prev) => {
                        debug_assert_eq!(prev & CKPT, 0, "page {owner} flagged twice");
                        flagged += 1;
                        break;
                    }
                    Err(now) => cur = now,
                }
            }
        }
        self.ckpt_pending.fetch_add(flagged, Ordering::AcqRel);
        Ok(flagged)
    }

    /// Saves every page flagged by [`Self::begin_checkpoint`] and points `snap` at the
    /// images. Writers may run meanwhile. Returns the pages written.
    pub fn checkpoint_pages(&self, snap: &mut MapSnapshot) -> Result<usize> {
        let r = self.checkpoint_pages_inner(snap);
        // Whatever happened, the checkpoint is over for the pool; flags left behind (after an
        // error) are cleared so pages can be evicted again.
        if r.is_err() {
            for f in 0..self.frame_count {
                let owner = self.owners[f].load(Ordering::Acquire);
                if owner != OWNER_FREE && owner != OWNER_LOG {
                    if let Some(slot) = self.slots.get(owner) {
                        if slot.flags.fetch_and(!CKPT, Ordering::AcqRel) & CKPT != 0 {
                            self.ckpt_pending.fetch_sub(1, Ordering::AcqRel);
                        }
                    }
                }
            }
        }
        *self.ckpt.lock() = None;
        r
    }

    fn checkpoint_pages_inner(&self, snap: &mut MapSnapshot) -> Result<usize> {
        let mut written = 0;
        // 1. Flagged pages still unchanged: write them from their frames.
        for f in 0..self.frame_count {
            let owner = self.owners[f].load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            if slot.flags.load(Ordering::Acquire) & CKPT == 0 {
                continue;
            }
            slot.lock_shared();
            let r = if slot.frame() == Some(f) && slot.flags.load(Ordering::Acquire) & CKPT != 0 {
                written += 1;
                self.write_back_locked(PageId(owner), slot, f, false)
            } else {
                Ok(())
            };
            slot.unlock_shared();
            r?;
        }
        // 2. Wait for write-backs by other threads that claimed a flag to record their image.
        let mut spins = 0u32;
        while self.ckpt_pending.load(Ordering::Acquire) != 0 {
            backoff(&mut spins);
        }
        // 3. Pages changed since the snapshot: write their copies, outside the live map.
        let (extents, copies) = {
            let mut ck = self.ckpt.lock();
            let ck = ck.as_mut().expect("checkpoint in progress");
            if let Some(e) = ck.failed.take() {
                return Err(StoreError::ReadOnlyAfterIoError(e));
            }
            (
                std::mem::take(&mut ck.extents),
                std::mem::take(&mut ck.copies),
            )
        };
        for (id, ext) in extents {
            snap.set(id, ext);
        }
        with_scratch(&WRITE_SCRATCH, |s| -> Result<()> {
            for (id, data) in &copies {
                let n = self.encode(data, *id, &mut s.image, false);
                let ext = self.store.write_image_detached(*id, &mut s.image, n)?;
                self.counters.ckpt_writes.fetch_add(1, Ordering::Relaxed);
                snap.set(*id, ext);
            }
            Ok(())
        })?;
        Ok(written + copies.len())
    }

    /// Under the page's exclusive latch, before its first change since the checkpoint began:
    /// keeps a copy of its content for the checkpoint.
    fn ckpt_preserve(&self, id: PageId, slot: &Slot, frame: usize) {
        if slot.flags.fetch_and(!CKPT, Ordering::AcqRel) & CKPT == 0 {
            return;
        }
        // SAFETY: the caller holds the exclusive latch of the page resident in `frame` and
        // has not yet handed out a mutable slice of it.
        let data: Box<[u8]> = unsafe { self.arena.frame(frame) }.into();
        self.counters.ckpt_copies.fetch_add(1, Ordering::Relaxed);
        if let Some(ck) = self.ckpt.lock().as_mut() {
            ck.copies.push((id, data));
        }
        let prev = self.ckpt_pending.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(prev > 0);
    }

    /// A write-back that claimed a page's [`CKPT`] flag finished.
    fn ckpt_record(&self, id: PageId, ext: Option<Extent>, err: Option<&StoreError>) {
        if let Some(ck) = self.ckpt.lock().as_mut() {
            match ext {
                Some(e) => ck.extents.push((id, e)),
                None => {
                    let why = err.map_or_else(|| "write failed".to_string(), |e| e.to_string());
                    ck.failed.get_or_insert(why);
                }
            }
        }
        self.counters.ckpt_writes.fetch_add(1, Ordering::Relaxed);
        let prev = self.ckpt_pending.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(prev > 0);
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
            decodes_none: l(&c.decoded_by_codec[0]),
            decodes_lz4: l(&c.decoded_by_codec[1]),
            decodes_zstd: l(&c.decoded_by_codec[2]),
            decodes_zlib: l(&c.decoded_by_codec[3]),
            decodes_trim: l(&c.decoded_by_codec[4]),
            views: self.views.stats(),
        }
    }

    /// Bytes views may hold now: the free frames less a reserve of an eighth of the arena
    /// (and [`FRAMES_MIN`] frames), so that views are gone well before the pool has to evict.
    fn view_room(&self) -> usize {
        if !self.views_on.load(Ordering::Relaxed) {
            return 0;
        }
        let reserve = FRAMES_MIN + self.frame_count / 8;
        self.free.len().saturating_sub(reserve) * self.page_size
    }

    /// Turns views on (the default) or off (dropping those kept): benchmarks compare both,
    /// and tests count decodes without them.
    pub fn set_views(&self, on: bool) {
        self.views_on.store(on, Ordering::Relaxed);
        if !on {
            self.views.shrink(0);
        }
    }

    /// The view kept for the page `g` latches (of type `T`), as it is now or with the changes
    /// since; otherwise whether building one of about `bytes` bytes is advised: there is room
    /// for it, and the page has not been changing between visits (see [`crate::views`]).
    pub fn view<T: std::any::Any + Send + Sync>(
        &self,
        g: &PageReadGuard<'_>,
        bytes: usize,
    ) -> ViewLookup<T> {
        if !self.views_on.load(Ordering::Relaxed) {
            return ViewLookup::Skip;
        }
        let room = self.view_room();
        if self.views.bytes() == 0 && room < bytes {
            return ViewLookup::Skip;
        }
        let typed = |v: View| v.downcast::<T>().ok();
        match self.views.get(g.id, g.version()) {
            Lookup::Hit(v) => typed(v).map_or(ViewLookup::Skip, ViewLookup::Hit),
            Lookup::Changed(v, ch) => {
                typed(v).map_or(ViewLookup::Skip, |v| ViewLookup::Changed(v, ch))
            }
            Lookup::Miss { build } if build && self.views.fits(bytes, room) => ViewLookup::Build,
            Lookup::Miss { .. } => ViewLookup::Skip,
        }
    }

    /// Tells the page's view, if one is kept, that the holder of `g` set `key` to `value`
    /// (`None`: removed it); see [`crate::views::PageViews::note_change`].
    pub fn note_view_change(&self, g: &PageWriteGuard<'_>, key: &[u8], value: Option<&[u8]>) {
        if self.views.bytes() > 0 {
            let version = g.slot.state.load(Ordering::Acquire) >> 8;
            self.views.note_change(g.id, version, key, value);
        }
    }

    /// Keeps `view`, about `bytes` bytes derived from the page `g` latches, while the page is
    /// unchanged and the pool does not need the memory. Returns whether it was kept.
    pub fn put_view(&self, g: &PageReadGuard<'_>, view: View, bytes: usize) -> bool {
        self.views
            .put(g.id, g.version(), view, bytes, self.view_room())
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

    /// The pages in the pool, hottest first, for the warm-restart list: decoded inner nodes
    /// (every lookup passes through them), then decoded pages used since the CLOCK hand last
    /// passed, then the other decoded pages, then pages held only as compressed images (used
    /// ones first). Dirty pages are listed like clean ones: what matters at the next start is
    /// that they were in use. Call it when the pool is quiet (at shutdown); under load the
    /// list is still valid, only approximate.
    pub fn resident_pages(&self) -> Vec<PageId> {
        let mut classes: [Vec<PageId>; 5] = Default::default();
        for (f, owner) in self.owners.iter().enumerate() {
            let owner = owner.load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            let class = if slot.try_lock_shared() {
                let class = if slot.frame() != Some(f) {
                    None
                } else {
                    // SAFETY: we hold a shared latch on the page, and its slot points at `f`
                    // (checked under the latch), so no writer changes the frame meanwhile.
                    let page = unsafe { self.arena.frame(f) };
                    Some(if page[0] == PageType::Inner as u8 {
                        0
                    } else if slot.flags.load(Ordering::Relaxed) & REFERENCED != 0 {
                        1
                    } else {
                        2
                    })
                };
                slot.unlock_shared();
                class
            } else {
                // Latched exclusively right now: in use.
                Some(1)
            };
            if let Some(c) = class {
                classes[c].push(PageId(owner));
            }
        }
        // Compressed-only pages are found through the page table: their images lie in the
        // logs, but a log may still hold stale records of a page.
        for id in 1..self.store.page_id_end() {
            let Some(slot) = self.slots.get(id) else {
                continue;
            };
            if slot.cpos.load(Ordering::Acquire) == 0 || slot.frame().is_some() {
                continue;
            }
            let c = if slot.flags.load(Ordering::Relaxed) & C_REFERENCED != 0 {
                3
            } else {
                4
            };
            classes[c].push(PageId(id));
        }
        classes.concat()
    }

    /// Starts a background thread that loads `ids` (a warm-restart list, hottest first) into
    /// the pool. It stops at the end of the list, when loading more would evict something
    /// (only free frames beyond the reserve kept for hot pages are used), or at shutdown.
    /// Pages that no longer exist or cannot be read or verified are skipped and counted.
    /// Progress is in [`PoolStats`]' `warm_*` fields.
    pub fn start_warm_load(self: &Arc<Self>, ids: Vec<PageId>) -> Result<()> {
        let c = &self.counters;
        c.warm_listed.store(ids.len() as u64, Ordering::Relaxed);
        if ids.is_empty() {
            c.warm_done.store(1, Ordering::Release);
            return Ok(());
        }
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("zipdb-warm".into())
            .spawn(move || warm_loop(weak, ids));
        match spawned {
            Ok(h) => {
                *self.warm_loader.lock() = Some(h);
                Ok(())
            }
            Err(e) => {
                c.warm_done.store(1, Ordering::Release);
                Err(StoreError::Config(format!(
                    "cannot start the warm-restart loader: {e}"
                )))
            }
        }
    }

    /// Marks that no warm-restart load will run (disabled, or no usable list).
    pub fn skip_warm_load(&self) {
        self.counters.warm_done.store(1, Ordering::Release);
    }

    /// Whether the pool has room for a warm-restart page without evicting anything.
    fn warm_has_room(&self) -> bool {
        self.free.len() > self.reserve_frames()
    }

    /// Loads page `id` for the warm-restart list unless it is resident or busy.
    fn warm_one(&self, id: PageId) -> WarmOutcome {
        if !self.store.page_exists(id) {
            return WarmOutcome::Skipped;
        }
        let Ok(slot) = self.slots.ensure(id.0) else {
            return WarmOutcome::Skipped;
        };
        // A page latched by someone is being used: it needs no help.
        if slot.frame().is_some() || !slot.try_lock_exclusive() {
            return WarmOutcome::Resident;
        }
        if slot.frame().is_some() {
            slot.unlock_exclusive();
            return WarmOutcome::Resident;
        }
        let r = self.load_locked(id, slot);
        if r.is_ok() {
            // Not used yet: let CLOCK take it first if the workload does not want it.
            slot.flags.fetch_and(!REFERENCED, Ordering::Relaxed);
        }
        slot.unlock_exclusive();
        match r {
            Ok(_) => WarmOutcome::Loaded,
            Err(_) => WarmOutcome::Skipped,
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

#[derive(Debug, Clone, Copy)]
enum Pass {
    All,
    DownTo(usize),
    Cold(usize),
}

/// What the warm-restart loader did with one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WarmOutcome {
    Loaded,
    Resident,
    Skipped,
}

/// Pages the warm-restart loader reads per batch, in disk order within the batch: the list
/// is hottest first, but images lie out of place, so sorting a batch by offset turns scattered
/// reads into mostly forward ones while the hottest pages still come first.
const WARM_BATCH: usize = 256;

fn warm_loop(pool: std::sync::Weak<BufferPool>, ids: Vec<PageId>) {
    for chunk in ids.chunks(WARM_BATCH) {
        let Some(p) = pool.upgrade() else { return };
        let mut batch: Vec<(u64, PageId)> = chunk
            .iter()
            .map(|&id| (p.store.extent(id).offset_bytes(), id))
            .collect();
        batch.sort_unstable();
        for (_, id) in batch {
            if p.shutdown.load(Ordering::Acquire) || !p.warm_has_room() {
                p.counters.warm_done.store(1, Ordering::Release);
                return;
            }
            match p.warm_one(id) {
                WarmOutcome::Loaded => p.counters.warm_loaded.fetch_add(1, Ordering::Relaxed),
                WarmOutcome::Skipped => p.counters.warm_skipped.fetch_add(1, Ordering::Relaxed),
                WarmOutcome::Resident => 0,
            };
        }
    }
    if let Some(p) = pool.upgrade() {
        p.counters.warm_done.store(1, Ordering::Release);
    }
}

fn record_len(image_len: usize) -> usize {
    (RECORD_HEADER + image_len).div_ceil(8) * 8
}

/// The background writer. It compresses pages off the request path when evicting threads
/// are about to meet dirty pages (it cleans just ahead of the CLOCK hand) or when more than
/// 90% of the decoded frames are dirty. Otherwise dirty pages stay dirty: a hot page rewritten
/// many times is compressed once, at eviction or checkpoint, not once per change. It also
/// refreshes the cost model of the tier split as read and decode costs are measured.
fn writer_loop(pool: std::sync::Weak<BufferPool>) {
    loop {
        let Some(p) = pool.upgrade() else { return };
        if p.shutdown.load(Ordering::Acquire) {
            return;
        }
        {
            let (m, cv) = &p.writer_wake;
            let mut w = m.lock();
            if !*w {
                cv.wait_for(&mut w, Duration::from_millis(20));
            }
            *w = false;
        }
        if p.shutdown.load(Ordering::Acquire) {
            return;
        }
        let _busy = p.writer_busy.lock();
        p.refresh_model();
        p.adapt_bias();
        if p.writer_error.lock().is_some() {
            continue;
        }
        let high = p.dirty_high();
        let hand = p.hand.load(Ordering::Relaxed) % p.frame_count;
        let r = if p.dirty_count.load(Ordering::Relaxed) > high {
            p.write_back_pass(Pass::DownTo(high * 8 / 9), hand)
        } else if p.writer_demand.swap(false, Ordering::Relaxed) {
            p.write_back_pass(Pass::Cold((p.frame_count / 64).max(8)), hand)
        } else {
            Ok(0)
        };
        if let Err(e) = r {
            *p.writer_error.lock() = Some(e.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SimStorage;
    use crate::store::StoreConfig;
    use rand::{Rng, SeedableRng};

    const PS: usize = 4096;

    fn pool(frames: usize) -> Arc<BufferPool> {
        let disk = SimStorage::new("sim");
        let store =
            Arc::new(PageStore::create(Box::new(disk), StoreConfig { page_size: PS }).unwrap());
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
        let store =
            Arc::new(PageStore::create(Box::new(disk), StoreConfig { page_size: PS }).unwrap());
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
        let store = Arc::new(
            PageStore::create(Box::new(disk.clone()), StoreConfig { page_size: PS }).unwrap(),
        );
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
        let store = Arc::new(
            PageStore::create(Box::new(disk.clone()), StoreConfig { page_size: PS }).unwrap(),
        );
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
}
