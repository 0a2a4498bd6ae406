//! The write-ahead log: one circular file of opaque redo records, with group commit.
//!
//! The engine encodes logical redo records; to the WAL they are byte strings. [`Wal::append`]
//! copies a record into an in-memory buffer and returns its end LSN; [`Wal::commit`] waits until
//! the log is written (or durable) up to that LSN. Committers that ask for durability at the same
//! time share one `write` + `fdatasync` (group commit): the first becomes the *leader*, takes
//! everything appended so far, writes it with at most two `write_at` calls (two when it wraps the
//! end of the area), syncs, and wakes the others. The append mutex is not held during the I/O:
//! appenders fill a second buffer meanwhile (double buffering), and the next leader takes that.
//! A leader about to sync first *gathers*: if the last sync released more committers than are
//! now waiting, it waits (at most half the recent sync time, and never more than 1 ms) until
//! they have appended their next records. Without that, committers settle into two cohorts
//! that alternate between "in the sync" and "preparing the next commit", and each sync
//! carries half of them. PostgreSQL's `commit_delay`/`commit_siblings` is the same idea; here
//! the delay adapts to the measured sync time and to how many committers are active.
//! A background thread writes and syncs about once per
//! [`WalConfig::background_sync_interval`] (for commits with [`FlushPolicy::Write`] or
//! [`FlushPolicy::None`]) and writes early when the buffer passes half full.
//!
//! Any failed write or sync puts the log in a fail-stop state: every later append or commit
//! returns [`WalError::ReadOnlyAfterIoError`] until the log is reopened, because after a failed
//! fsync the contents of the file are unknown. A failed fsync is never retried.
//!
//! # File format (version 1)
//!
//! All integers are little-endian. CRC32C is the Castagnoli CRC (as computed by the `crc32c`
//! crate, initial value 0).
//!
//! **Header block**, file offset 0, 4096 bytes, written once by [`Wal::create`] and never again:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 4  | `crc`: CRC32C of bytes 4..64 |
//! | 4  | 4  | magic `"ZWAL"` |
//! | 8  | 4  | format version, u32 = 1 |
//! | 12 | 8  | `capacity_bytes`, u64: size of the record area, a multiple of 4096 |
//! | 20 | 8  | `db_id`, u64: random id of the database the log belongs to |
//! | 28 | 8  | `max_unsynced_bytes`, u64: the unsynced window *W* (see below) |
//! | 36 | 28 | reserved, zero (checked) |
//! | 64 | 4032 | zero, not covered by the checksum, ignored |
//!
//! **Record area**, file offsets `4096 .. 4096 + capacity_bytes`. An LSN is a byte position in the
//! infinite log stream; the byte of LSN `x` lives at file offset `4096 + x % capacity_bytes`.
//! [`Wal::create`] fills the area with zeros, so the file never changes size afterwards and
//! `fdatasync` never has to update the file size. Records are contiguous in LSN order; each starts
//! on an LSN that is a multiple of 8:
//!
//! | offset in record | size | field |
//! |-----------------:|-----:|-------|
//! | 0  | 4 | `crc`: CRC32C of record bytes 4 .. 16 + payload_len (length, LSN, payload) |
//! | 4  | 4 | `payload_len`, u32 |
//! | 8  | 8 | `lsn`, u64: the LSN at which this record starts |
//! | 16 | payload_len | payload (opaque) |
//! | 16 + payload_len | 0..7 | zero padding to a multiple of 8 (not covered by the CRC) |
//!
//! A record's end LSN is `lsn + 16 + align8(payload_len)`, which is where the next record starts.
//! A record (its header included) may wrap from the end of the area to its start. The first LSN of
//! a fresh log is chosen by the caller, non-zero and a multiple of 8, so that a zero-filled header
//! never matches its position. Because the `lsn` field must equal the record's position, bytes
//! left by an earlier lap around the circle (which hold `position - k * capacity_bytes`) and the
//! zeros of a fresh area are never taken for a record.
//!
//! # Recovery and the unsynced window
//!
//! [`Wal::open`] replays from the checkpoint LSN the caller gives (`from`) through the end of the
//! lap (`from + capacity_bytes`; no live record can lie beyond it, since appends block while the
//! log is full), in 4 MiB reads. It stops at the first position whose header holds another LSN,
//! whose length cannot fit in the lap, or whose checksum fails.
//!
//! Whether that stop is a torn tail or damage to data that was already durable is decided with the
//! *unsynced window* `W` (`max_unsynced_bytes` in the header, default 8 MiB): the writer never
//! writes a byte at LSN `b` unless `b <= durable + W`, where `durable` is the LSN up to which a
//! completed fsync covers the log (it syncs first when it has to). So if a valid record ending at
//! `e` is found after the stop position `f`, then when it was written everything before `e - W`
//! had been synced. Let `q1` be the first valid record after `f`: `f` is a record boundary of the
//! same history, so the damaged record(s) lie within `f .. q1`. Hence:
//!
//! * a valid record with `e >= q1 + W` proves that all of `f .. q1` had been synced and is now
//!   damaged: [`WalError::Corrupt`] names the file, the LSN and the file offset. With
//!   [`RecoveryOptions::salvage`] the log is instead cut at `f` and the loss is reported in
//!   [`RecoveryReport::salvaged`]. (Measuring from `f` instead of `q1` would be wrong: a large
//!   record at `f` can straddle the durable point, its second half lost in the crash.)
//! * otherwise the stop is a torn tail ([`RecoveryReport::torn_tail`]): a crash while unsynced
//!   writes were in flight. The page cache may have written back a later page before an earlier
//!   one, so valid records after a hole are normal here; they were never covered by a completed
//!   sync and are discarded ([`RecoveryReport::discarded_after_tail`]).
//!
//! The forward search looks at every 8-aligned position from `f` to `r + W + 8 MiB` (bounded by
//! the lap), skipping over each valid record it finds; `r` is the end of the record at `f` as its
//! header claims when only its checksum failed, else `f + 16`. That decides every damaged region
//! up to 8 MiB long, and covers every record a crash can have abandoned: they end within `W` of
//! the durable point, which is at most `r` (a record wholly before the durable point would be
//! intact). Searching the whole lap would read up
//! to `capacity_bytes` on every open for no gain. With salvage the whole rest of the lap is
//! searched, because every valid-looking record after the cut must be erased (next paragraph).
//! A limit of the rule: damage within the last `W` bytes of the log is indistinguishable from a
//! torn tail, and is treated as one.
//!
//! Before the log accepts appends, `open` overwrites with zeros every valid-looking record it
//! found after the cut (and the header of a torn record) and syncs. Without that, a record
//! abandoned by the crash could resurface later: new appends overwrite the log from `f`, and if a
//! new record happened to end exactly where an abandoned record starts, the next recovery would
//! take the abandoned record (same lap, so its `lsn` field matches its position) for a new one.
//! Records of an earlier lap need no erasing: their `lsn` field can never match. `open` also
//! syncs the file once even when it erased nothing, so that the replayed records (which may have
//! been in the page cache only) are durable before anything is appended after them, and the
//! window rule above holds from there on.
//!
//! Settings at open: `capacity_bytes` and `max_unsynced_bytes` are properties of the file and are
//! taken from its header; [`WalConfig::capacity_bytes`] and [`WalConfig::max_unsynced_bytes`]
//! are only used by [`Wal::create`]. Changing the size of a log means replaying it, checkpointing,
//! and creating a new one. A header whose `db_id` differs from the caller's is refused.
//!
//! The log does not support O_DIRECT storage (records are not sector-aligned): it relies on the
//! page cache to merge small writes.

mod format;
mod recovery;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::io::{IoError, Storage};
use crate::page::Lsn;

pub use format::{record_size, FORMAT_VERSION, HEADER_SIZE, RECORD_HEADER_SIZE};

/// Smallest record area accepted by [`Wal::create`].
pub const MIN_CAPACITY: u64 = 16 << 10;
/// Largest unsynced window: the forward search at open reads about this much beyond the tail.
pub const MAX_UNSYNCED_LIMIT: u64 = 64 << 20;
/// Chunk size for zero-filling the area at create and erasing records at open.
const ZERO_CHUNK: usize = 1 << 20;
/// Padding source for records (at most 7 bytes are needed).
const PAD: [u8; 8] = [0; 8];

/// What [`Wal::commit`] waits for; the three settings of `innodb_flush_log_at_trx_commit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// Return once the record is durable (fsynced). `= 1`.
    Sync,
    /// Return once the record has been written to the OS; it survives a crash of the process but
    /// not of the machine. The background thread syncs it within about one interval. `= 2`.
    Write,
    /// Return at once; the background thread writes and syncs within about one interval. `= 0`.
    None,
}

/// Settings of a log.
#[derive(Debug, Clone)]
pub struct WalConfig {
    /// Size of the circular record area (create only; open takes it from the file header).
    /// A multiple of 4096, at least [`MIN_CAPACITY`].
    pub capacity_bytes: u64,
    /// Size of each of the two in-memory append buffers. A record larger than this is still
    /// accepted: it gets a buffer of its own size.
    pub buffer_bytes: usize,
    /// The unsynced window `W` (see the module docs; create only, open takes it from the header).
    /// Clamped to a quarter of the capacity; a multiple of 8 in `4096..=MAX_UNSYNCED_LIMIT`.
    pub max_unsynced_bytes: u64,
    /// How often the background thread writes and syncs what commits left unsynced.
    pub background_sync_interval: Duration,
}

impl Default for WalConfig {
    fn default() -> WalConfig {
        WalConfig {
            capacity_bytes: 256 << 20,
            buffer_bytes: 4 << 20,
            max_unsynced_bytes: 8 << 20,
            background_sync_interval: Duration::from_secs(1),
        }
    }
}

impl WalConfig {
    fn check_runtime(&self) -> Result<(), WalError> {
        if !(4096..=1 << 30).contains(&self.buffer_bytes) {
            return Err(WalError::Config(format!(
                "buffer_bytes {} is outside 4096..=1 GiB",
                self.buffer_bytes
            )));
        }
        if self.background_sync_interval.is_zero() {
            return Err(WalError::Config(
                "background_sync_interval must not be zero".to_string(),
            ));
        }
        Ok(())
    }

    /// The window to record in a new file's header, after validating the create settings.
    fn check_create(&self) -> Result<u64, WalError> {
        self.check_runtime()?;
        let cap = self.capacity_bytes;
        if cap < MIN_CAPACITY || !cap.is_multiple_of(4096) {
            return Err(WalError::Config(format!(
                "capacity_bytes {cap} must be a multiple of 4096 and at least {MIN_CAPACITY}"
            )));
        }
        let w = self.max_unsynced_bytes;
        if !(4096..=MAX_UNSYNCED_LIMIT).contains(&w) || !w.is_multiple_of(8) {
            return Err(WalError::Config(format!(
                "max_unsynced_bytes {w} must be a multiple of 8 in 4096..={MAX_UNSYNCED_LIMIT}"
            )));
        }
        // A window near the capacity would leave no room after a tail for the evidence that
        // tells corruption from a torn tail.
        Ok(w.min(cap / 4) / 8 * 8)
    }
}

/// Options of [`Wal::open`].
#[derive(Debug, Clone)]
pub struct RecoveryOptions {
    /// Open a log with damage before its tail: cut it at the damage (the records after it are
    /// lost and erased) and report it instead of failing with [`WalError::Corrupt`].
    pub salvage: bool,
    /// Print a progress line (bytes replayed, MB/s, LSN) to stderr about this often during
    /// replay; `None` for silence.
    pub progress_interval: Option<Duration>,
}

impl Default for RecoveryOptions {
    fn default() -> RecoveryOptions {
        RecoveryOptions {
            salvage: false,
            progress_interval: Some(Duration::from_secs(1)),
        }
    }
}

/// Damage that [`RecoveryOptions::salvage`] cut the log at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Salvaged {
    /// LSN of the first damaged record: the new end of the log.
    pub lsn: Lsn,
    /// Its file offset.
    pub offset: u64,
    /// What was wrong with it.
    pub detail: String,
    /// Valid records found after it, now lost.
    pub records_lost: u64,
    /// Log bytes from the damage to the end of the last of them.
    pub bytes_lost: u64,
}

/// What [`Wal::open`] found.
#[derive(Debug, Clone)]
pub struct RecoveryReport {
    /// Capacity of the record area, from the file header.
    pub capacity_bytes: u64,
    /// Where replay started (the `from` argument).
    pub start_lsn: Lsn,
    /// End of the last valid record: appends continue here.
    pub end_lsn: Lsn,
    /// Records replayed.
    pub records: u64,
    /// Log bytes replayed (`end_lsn - start_lsn`).
    pub bytes: u64,
    /// Payload bytes replayed.
    pub payload_bytes: u64,
    /// The log ended in a partly written record or with valid records after a hole in the unsynced
    /// window: the remains of writes that a crash interrupted. They were discarded.
    pub torn_tail: bool,
    /// Valid records found after the torn tail (within the unsynced window) and discarded.
    pub discarded_after_tail: u64,
    /// Set when salvage cut the log at damage before its tail.
    pub salvaged: Option<Salvaged>,
    pub elapsed: Duration,
}

/// Error a replay callback returns; the engine may downcast it back to its own type.
pub type ReplayError = Box<dyn std::error::Error + Send + Sync>;

/// The replay callback of [`Wal::open`]: `(start LSN, end LSN, payload)` of each record, in order.
pub type OnRecord<'a> = dyn FnMut(Lsn, Lsn, &[u8]) -> Result<(), ReplayError> + 'a;

/// Errors of the write-ahead log.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error(transparent)]
    Io(#[from] IoError),
    /// An earlier write or sync failed; the log refuses appends and commits until it is reopened.
    #[error("the WAL refuses writes after an earlier I/O error: {0}")]
    ReadOnlyAfterIoError(String),
    /// Damage before the tail of the log, in data that had been synced.
    #[error("corrupt WAL {file} at LSN {} (file offset {offset}): {detail}", lsn.0)]
    Corrupt {
        file: String,
        lsn: Lsn,
        offset: u64,
        detail: String,
    },
    /// The file is not a WAL of this format, or is truncated.
    #[error("{file} is not a usable WAL: {detail}")]
    BadHeader { file: String, detail: String },
    /// The log belongs to another database.
    #[error("WAL {file} belongs to database {found:#018x}, not {expected:#018x}")]
    WrongDatabase {
        file: String,
        expected: u64,
        found: u64,
    },
    #[error("invalid WAL configuration: {0}")]
    Config(String),
    #[error(
        "a WAL record payload of {len} bytes exceeds the largest this log holds ({max} bytes)"
    )]
    RecordTooLarge { len: u64, max: u64 },
    /// The replay callback failed on a record.
    #[error("replaying the WAL record at LSN {} failed: {source}", lsn.0)]
    Replay {
        lsn: Lsn,
        #[source]
        source: ReplayError,
    },
    /// [`Wal::shutdown`] was called.
    #[error("the WAL has been shut down")]
    Closed,
    #[error("cannot start the WAL background thread: {0}")]
    Spawn(#[source] std::io::Error),
}

/// Counters since the log was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Records appended.
    pub appends: u64,
    /// Payload bytes appended.
    pub payload_bytes: u64,
    /// Log bytes appended (headers, payloads and padding).
    pub log_bytes: u64,
    /// `write_at` calls and the bytes they wrote.
    pub writes: u64,
    pub written_bytes: u64,
    /// Syncs (fdatasync) of the log and the total time spent in them.
    pub syncs: u64,
    pub sync_ns_total: u64,
    /// Flushes (one leader taking the buffer; up to two writes and a sync).
    pub flushes: u64,
    /// Most records one flush wrote.
    pub max_flush_records: u64,
    /// Commits by policy.
    pub sync_commits: u64,
    pub write_commits: u64,
    pub none_commits: u64,
    /// Appends that had to wait for [`Wal::checkpointed`] to free space.
    pub space_waits: u64,
    /// Times an appender found the buffer full while a flush was in progress and waited.
    pub buffer_full_waits: u64,
    /// Times a sync leader waited for more committers (module docs), and the total wait.
    pub gathers: u64,
    pub gather_ns_total: u64,
}

impl WalStats {
    /// Average number of `Sync` commits per sync: the group-commit batching factor.
    pub fn commits_per_sync(&self) -> f64 {
        self.sync_commits as f64 / self.syncs.max(1) as f64
    }
}

/// Mutable state behind the append mutex.
struct State {
    /// Records appended but not yet taken by a flush: LSNs `active_start .. end`.
    active: Vec<u8>,
    active_start: u64,
    /// The other buffer, home whenever no flush is running (a flush owns it meanwhile).
    spare: Option<Vec<u8>>,
    /// A leader is doing I/O; only one at a time, so writes stay in LSN order.
    flushing: bool,
    /// Set by the first failed write or sync; the reason.
    failed: Option<String>,
    /// Set by shutdown: appends are refused.
    closed: bool,
    /// Tells the background thread to exit.
    bg_stop: bool,
    /// `Sync` commits whose records are in `active` (not yet taken by a flush).
    sync_in_active: u64,
    /// Sync committers believed active: the ones the last sync released plus the ones that
    /// were already waiting for the next. A leader gathers until this many are waiting.
    gather_target: u64,
    /// A leader is gathering (not yet flushing): others wait as if it were flushing.
    gathering: bool,
    /// Moving average of the sync time, for the gathering limit.
    sync_ns_avg: u64,
    /// Committers parked until the log reaches their target (see [`Waiter`]).
    waiters: Vec<Waiter>,
    /// Spare vector for the slots `wake_waiters` wakes (kept for its capacity).
    wake_buf: Vec<Arc<WaitSlot>>,
    /// The buffer passed half full: the background thread should write it.
    bg_kick: bool,
    stats: WalStats,
}

/// What one flush did, folded into the stats under the mutex.
#[derive(Default)]
struct FlushOutcome {
    durable: u64,
    writes: u64,
    bytes: u64,
    syncs: u64,
    sync_ns: u64,
    records: u64,
}

/// A committing thread parked until the log is written (or durable) up to `target`.
///
/// Committers do not wait on a condition variable: waking one makes it re-take the state
/// mutex, so after a group sync the woken committers would leave one at a time, each through
/// a context switch, and the last of sixteen would return ~100 µs after the sync on this VM.
/// The leader instead wakes exactly the committers its flush satisfied, and they return
/// without touching the mutex (plus one that is not satisfied, to lead the next flush).
struct Waiter {
    target: u64,
    sync: bool,
    slot: Arc<WaitSlot>,
}

/// One per thread, reused for each wait.
struct WaitSlot {
    woken: AtomicBool,
    thread: std::thread::Thread,
}

impl WaitSlot {
    fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

thread_local! {
    static WAIT_SLOT: Arc<WaitSlot> = Arc::new(WaitSlot {
        woken: AtomicBool::new(false),
        thread: std::thread::current(),
    });
}

/// What a committer does next (see [`Shared::commit_step`]).
enum Step {
    Done,
    /// Parked as a follower; wait on the slot, then check again.
    Wait(Arc<WaitSlot>),
}

struct Shared {
    storage: Box<dyn Storage>,
    capacity: u64,
    max_unsynced: u64,
    buffer_bytes: usize,
    interval: Duration,
    state: Mutex<State>,
    /// A flush finished or failed.
    flushed: Condvar,
    /// A `Sync` committer arrived while a leader gathers.
    arrived: Condvar,
    /// `checkpointed` advanced, or the log failed or closed.
    space: Condvar,
    wake_bg: Condvar,
    // The LSNs are changed only with the mutex held, and are atomics so that readers such as the
    // buffer pool (checking the WAL rule before writing a page) need no lock.
    end: AtomicU64,
    written: AtomicU64,
    durable: AtomicU64,
    checkpointed: AtomicU64,
}

/// The write-ahead log. `Send + Sync`: share it with an `Arc` among committing threads.
pub struct Wal {
    shared: Arc<Shared>,
    background: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sh = &self.shared;
        f.debug_struct("Wal")
            .field("file", &sh.storage.name())
            .field("capacity", &sh.capacity)
            .field("end", &sh.end.load(Ordering::Relaxed))
            .field("durable", &sh.durable.load(Ordering::Relaxed))
            .field("checkpointed", &sh.checkpointed.load(Ordering::Relaxed))
            .finish()
    }
}

fn check_lsn_arg(what: &str, lsn: Lsn) -> Result<(), WalError> {
    if lsn.0 == 0 || !lsn.0.is_multiple_of(format::RECORD_ALIGN) {
        return Err(WalError::Config(format!(
            "{what} LSN {} must be non-zero and a multiple of 8",
            lsn.0
        )));
    }
    Ok(())
}

fn refuse_direct(storage: &dyn Storage) -> Result<(), WalError> {
    if storage.is_direct() {
        return Err(WalError::Config(format!(
            "{}: the WAL needs buffered (non-O_DIRECT) storage",
            storage.name()
        )));
    }
    Ok(())
}

/// Writes `len` zero bytes from LSN `lsn` (wrapping around the area), in 1 MiB writes.
fn write_zeros(storage: &dyn Storage, capacity: u64, lsn: u64, len: u64) -> Result<(), IoError> {
    assert!(len <= capacity, "zeroing at most one lap");
    let zeros = vec![0u8; ZERO_CHUNK];
    let mut done = 0u64;
    while done < len {
        let off = (lsn + done) % capacity;
        let n = (len - done).min(ZERO_CHUNK as u64).min(capacity - off);
        storage.write_at(&zeros[..n as usize], HEADER_SIZE + off)?;
        done += n;
    }
    Ok(())
}

impl Wal {
    /// Creates a log in `storage`, which must be empty: zero-fills the record area, writes the
    /// header and syncs. `start` (non-zero, a multiple of 8) is the LSN of the first record.
    ///
    /// For a new file the caller must also sync the directory that holds it.
    pub fn create(
        storage: Box<dyn Storage>,
        config: WalConfig,
        db_id: u64,
        start: Lsn,
    ) -> Result<Wal, WalError> {
        let max_unsynced = config.check_create()?;
        check_lsn_arg("start", start)?;
        refuse_direct(&*storage)?;
        if !storage.is_empty()? {
            return Err(WalError::Config(format!(
                "{}: a new WAL needs an empty file",
                storage.name()
            )));
        }
        let capacity = config.capacity_bytes;
        // The area is made durable before the header exists: a crash in between leaves a file
        // that open refuses (no header) rather than a header in front of a partly allocated area.
        write_zeros(&*storage, capacity, 0, capacity)?;
        storage.sync()?;
        let header = format::FileHeader {
            capacity,
            db_id,
            max_unsynced,
        };
        storage.write_at(&header.encode(), 0)?;
        storage.sync()?;
        Wal::start(storage, &config, capacity, max_unsynced, start.0, start.0)
    }

    /// Opens an existing log and replays it: calls `on_record(start, end, payload)` for each valid
    /// record from `from` (the checkpoint LSN, a record boundary) in order, then positions the
    /// log to append after the last one. See the module docs for how the end is found.
    pub fn open(
        storage: Box<dyn Storage>,
        config: WalConfig,
        db_id: u64,
        from: Lsn,
        options: &RecoveryOptions,
        on_record: &mut OnRecord<'_>,
    ) -> Result<(Wal, RecoveryReport), WalError> {
        config.check_runtime()?;
        check_lsn_arg("checkpoint", from)?;
        refuse_direct(&*storage)?;
        let file = storage.name().to_string();
        let bad = |detail: String| WalError::BadHeader {
            file: file.clone(),
            detail,
        };
        let len = storage.len()?;
        if len < HEADER_SIZE {
            return Err(bad(format!(
                "file is {len} bytes, shorter than the {HEADER_SIZE}-byte header"
            )));
        }
        let mut hb = [0u8; 64];
        storage.read_at(&mut hb, 0)?;
        let header = format::FileHeader::decode(&hb).map_err(bad)?;
        if header.db_id != db_id {
            return Err(WalError::WrongDatabase {
                file,
                expected: db_id,
                found: header.db_id,
            });
        }
        let capacity = header.capacity;
        if capacity < MIN_CAPACITY || !capacity.is_multiple_of(4096) {
            return Err(bad(format!("impossible capacity {capacity} in header")));
        }
        let w = header.max_unsynced;
        if !(4096..=MAX_UNSYNCED_LIMIT).contains(&w) || w > capacity / 4 || !w.is_multiple_of(8) {
            return Err(bad(format!("impossible unsynced window {w} in header")));
        }
        if len < HEADER_SIZE + capacity {
            return Err(bad(format!(
                "file is {len} bytes, shorter than its {capacity}-byte record area needs"
            )));
        }

        let started = Instant::now();
        let scan = recovery::scan(&*storage, capacity, w, from.0, options, on_record)?;
        if scan.zero_to > scan.end {
            write_zeros(&*storage, capacity, scan.end, scan.zero_to - scan.end)?;
        }
        // Also when nothing was erased: the replayed records may be in the page cache only, and
        // new records must not become durable without the ones before them.
        storage.sync()?;
        let report = RecoveryReport {
            capacity_bytes: capacity,
            start_lsn: from,
            end_lsn: Lsn(scan.end),
            records: scan.records,
            bytes: scan.end - from.0,
            payload_bytes: scan.payload_bytes,
            torn_tail: scan.torn_tail,
            discarded_after_tail: scan.discarded_after_tail,
            salvaged: scan.salvaged,
            elapsed: started.elapsed(),
        };
        let wal = Wal::start(storage, &config, capacity, w, scan.end, from.0)?;
        Ok((wal, report))
    }

    fn start(
        storage: Box<dyn Storage>,
        config: &WalConfig,
        capacity: u64,
        max_unsynced: u64,
        end: u64,
        checkpointed: u64,
    ) -> Result<Wal, WalError> {
        let shared = Arc::new(Shared {
            storage,
            capacity,
            max_unsynced,
            buffer_bytes: config.buffer_bytes,
            interval: config.background_sync_interval,
            state: Mutex::new(State {
                active: Vec::with_capacity(config.buffer_bytes),
                active_start: end,
                spare: Some(Vec::with_capacity(config.buffer_bytes)),
                flushing: false,
                failed: None,
                closed: false,
                bg_stop: false,
                bg_kick: false,
                sync_in_active: 0,
                gather_target: 0,
                gathering: false,
                sync_ns_avg: 0,
                waiters: Vec::new(),
                wake_buf: Vec::new(),
                stats: WalStats::default(),
            }),
            flushed: Condvar::new(),
            arrived: Condvar::new(),
            space: Condvar::new(),
            wake_bg: Condvar::new(),
            end: AtomicU64::new(end),
            written: AtomicU64::new(end),
            durable: AtomicU64::new(end),
            checkpointed: AtomicU64::new(checkpointed),
        });
        let bg = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("zipdb-wal".to_string())
            .spawn(move || bg.background())
            .map_err(WalError::Spawn)?;
        Ok(Wal {
            shared,
            background: Mutex::new(Some(handle)),
        })
    }

    /// Appends a record and returns its end LSN (pass it to [`Wal::commit`]). Copies the payload
    /// into the in-memory buffer; blocks while the log has no room (until [`Wal::checkpointed`]
    /// frees some). Does I/O only when the buffer is full.
    pub fn append(&self, payload: &[u8]) -> Result<Lsn, WalError> {
        let sh = &*self.shared;
        let len = payload.len() as u64;
        let size = record_size(len);
        if len > u64::from(u32::MAX) || size > sh.capacity {
            return Err(WalError::RecordTooLarge {
                len,
                max: (sh.capacity - RECORD_HEADER_SIZE).min(u64::from(u32::MAX)),
            });
        }
        let mut st = sh.state.lock();
        let mut waited = false;
        loop {
            sh.usable(&st)?;
            if st.closed {
                return Err(WalError::Closed);
            }
            let end = sh.end.load(Ordering::Relaxed);
            if end + size - sh.checkpointed.load(Ordering::Relaxed) > sh.capacity {
                if !waited {
                    st.stats.space_waits += 1;
                    waited = true;
                }
                sh.space.wait(&mut st);
                continue;
            }
            // An empty buffer takes any record (growing if needed), so a record larger than the
            // buffer cannot wait forever.
            if !st.active.is_empty() && st.active.len() as u64 + size > sh.buffer_bytes as u64 {
                if st.flushing {
                    st.stats.buffer_full_waits += 1;
                    sh.flushed.wait(&mut st);
                } else {
                    sh.lead_flush(&mut st, false)?;
                }
                continue;
            }
            break;
        }
        let lsn = sh.end.load(Ordering::Relaxed);
        assert_eq!(st.active_start + st.active.len() as u64, lsn);
        let before = st.active.len();
        // The checksum is left zero here and computed by the flush leader, outside this mutex.
        st.active
            .extend_from_slice(&format::record_header(len as u32, lsn));
        st.active.extend_from_slice(payload);
        st.active
            .extend_from_slice(&PAD[..(size - RECORD_HEADER_SIZE - len) as usize]);
        let new_end = lsn + size;
        sh.end.store(new_end, Ordering::Release);
        st.stats.appends += 1;
        st.stats.payload_bytes += len;
        st.stats.log_bytes += size;
        let half = sh.buffer_bytes / 2;
        if before < half && st.active.len() >= half && !st.bg_kick {
            st.bg_kick = true;
            sh.wake_bg.notify_one();
        }
        Ok(Lsn(new_end))
    }

    /// Waits until the log up to `end` (an LSN returned by [`Wal::append`]) is as safe as
    /// `policy` asks; concurrent `Sync` committers share syncs. Panics if `end` is beyond
    /// [`Wal::end_lsn`] (a caller bug: that LSN was never handed out).
    pub fn commit(&self, end: Lsn, policy: FlushPolicy) -> Result<(), WalError> {
        let sh = &*self.shared;
        let sync = match policy {
            FlushPolicy::None => {
                let mut st = sh.state.lock();
                st.stats.none_commits += 1;
                return sh.usable(&st);
            }
            FlushPolicy::Write => false,
            FlushPolicy::Sync => true,
        };
        let mut st = sh.state.lock();
        if sync {
            st.stats.sync_commits += 1;
            if end.0 > st.active_start {
                st.sync_in_active += 1;
                if st.gathering && st.sync_in_active >= st.gather_target {
                    sh.arrived.notify_one();
                }
            }
        } else {
            st.stats.write_commits += 1;
        }
        let mut gathered = !sync;
        loop {
            match sh.commit_step(&mut st, end.0, sync, &mut gathered)? {
                Step::Done => return Ok(()),
                Step::Wait(slot) => {
                    drop(st);
                    while !slot.woken.load(Ordering::Acquire) {
                        std::thread::park();
                    }
                    if sh.reached(end.0, sync) {
                        return Ok(());
                    }
                    st = sh.state.lock();
                }
            }
        }
    }

    /// Makes the log durable up to `end` (before a checkpoint that covers it commits).
    pub fn sync_to(&self, end: Lsn) -> Result<(), WalError> {
        let sh = &*self.shared;
        let mut st = sh.state.lock();
        sh.flush_locked(&mut st, end.0, true)
    }

    /// Declares that replay will never need the log before `lsn` (a record boundary, at most the
    /// durable LSN): its space may be reused. Wakes appenders waiting for room.
    pub fn checkpointed(&self, lsn: Lsn) {
        let sh = &*self.shared;
        let _st = sh.state.lock();
        let durable = sh.durable.load(Ordering::Relaxed);
        assert!(
            lsn.0 <= durable && lsn.0.is_multiple_of(format::RECORD_ALIGN),
            "checkpoint LSN {} must be a record boundary at most the durable LSN {durable}",
            lsn.0
        );
        if lsn.0 > sh.checkpointed.load(Ordering::Relaxed) {
            sh.checkpointed.store(lsn.0, Ordering::Release);
            sh.space.notify_all();
        }
    }

    /// End of the last appended record: the LSN the next record starts at.
    pub fn end_lsn(&self) -> Lsn {
        Lsn(self.shared.end.load(Ordering::Acquire))
    }

    /// Everything before this LSN survives a power failure.
    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.shared.durable.load(Ordering::Acquire))
    }

    /// Everything before this LSN has been written to the OS.
    pub fn written_lsn(&self) -> Lsn {
        Lsn(self.shared.written.load(Ordering::Acquire))
    }

    /// The LSN passed to the last [`Wal::checkpointed`] (or `from` at open).
    pub fn checkpoint_lsn(&self) -> Lsn {
        Lsn(self.shared.checkpointed.load(Ordering::Acquire))
    }

    /// Size of the record area.
    pub fn capacity(&self) -> u64 {
        self.shared.capacity
    }

    /// Log bytes that replay may still need: `end - checkpointed`.
    pub fn used_bytes(&self) -> u64 {
        let sh = &*self.shared;
        let _st = sh.state.lock();
        sh.end.load(Ordering::Relaxed) - sh.checkpointed.load(Ordering::Relaxed)
    }

    /// More than half of the area is in use: time for a checkpoint, before appends block.
    pub fn needs_checkpoint(&self) -> bool {
        // Called after every commit: read the two LSNs without the mutex (an estimate is
        // enough; `checkpointed` never passes `end`).
        let sh = &*self.shared;
        let end = sh.end.load(Ordering::Acquire);
        let checkpointed = sh.checkpointed.load(Ordering::Acquire);
        end.saturating_sub(checkpointed) > sh.capacity / 2
    }

    pub fn stats(&self) -> WalStats {
        self.shared.state.lock().stats.clone()
    }

    /// Puts the log in the fail-stop state for a reason outside it (the database above failed
    /// to write its data file): appends and commits are refused from now on, and appenders
    /// waiting for space (which would wait for a checkpoint that cannot happen) are woken
    /// with the error. The first reason is kept.
    pub fn fail_stop(&self, reason: &str) {
        let sh = &*self.shared;
        let mut st = sh.state.lock();
        if st.failed.is_none() {
            st.failed = Some(reason.to_string());
        }
        sh.space.notify_all();
        sh.flushed.notify_all();
        sh.wake_waiters(&mut st);
    }

    /// Refuses further appends, writes and syncs what was appended, and stops the background
    /// thread. Returns the error of that final flush, if any. Calling it again does nothing.
    /// Dropping the log calls it.
    pub fn shutdown(&self) -> Result<(), WalError> {
        let sh = &*self.shared;
        let result = {
            let mut st = sh.state.lock();
            if st.closed {
                return Ok(());
            }
            st.closed = true;
            // Appenders waiting for room would otherwise wait for a checkpoint that never comes.
            sh.space.notify_all();
            let end = sh.end.load(Ordering::Relaxed);
            let r = sh.flush_locked(&mut st, end, true);
            st.bg_stop = true;
            sh.wake_bg.notify_all();
            r
        };
        if let Some(handle) = self.background.lock().take() {
            if handle.join().is_err() {
                // Nothing to clean up: the thread only flushes, and its failures land in the
                // fail-stop state. Say so rather than hide it.
                eprintln!(
                    "zipdb wal {}: the background thread panicked",
                    sh.storage.name()
                );
            }
        }
        result
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        // The error of the final flush has nowhere to go; callers that care call shutdown().
        let _ = self.shutdown();
    }
}

impl Shared {
    fn usable(&self, st: &State) -> Result<(), WalError> {
        match &st.failed {
            Some(reason) => Err(WalError::ReadOnlyAfterIoError(reason.clone())),
            None => Ok(()),
        }
    }

    /// Returns once the log is written (`sync == false`) or durable up to `target`, leading
    /// flushes as needed. Called and returns with the mutex held.
    fn flush_locked(
        &self,
        st: &mut MutexGuard<'_, State>,
        target: u64,
        sync: bool,
    ) -> Result<(), WalError> {
        let end = self.end.load(Ordering::Relaxed);
        assert!(
            target <= end,
            "flush to LSN {target}, beyond the end of the log {end}"
        );
        loop {
            self.usable(st)?;
            if self.reached(target, sync) {
                self.wake_waiters(st);
                return Ok(());
            }
            if st.flushing || st.gathering {
                // Follower: the leader wakes us; our record may be in its batch or the next one.
                self.flushed.wait(st);
                continue;
            }
            self.lead_flush(st, sync)?;
        }
    }

    fn reached(&self, target: u64, sync: bool) -> bool {
        let reached = if sync { &self.durable } else { &self.written };
        reached.load(Ordering::Acquire) >= target
    }

    /// One round of a commit's wait: done, lead a flush (gathering first if `sync`), or park
    /// as a follower. Called with the mutex held.
    fn commit_step(
        &self,
        st: &mut MutexGuard<'_, State>,
        target: u64,
        sync: bool,
        gathered: &mut bool,
    ) -> Result<Step, WalError> {
        loop {
            self.usable(st)?;
            if self.reached(target, sync) {
                self.wake_waiters(st);
                return Ok(Step::Done);
            }
            if st.flushing || st.gathering {
                let slot = WAIT_SLOT.with(Arc::clone);
                slot.woken.store(false, Ordering::Relaxed);
                st.waiters.push(Waiter {
                    target,
                    sync,
                    slot: Arc::clone(&slot),
                });
                return Ok(Step::Wait(slot));
            }
            if !*gathered {
                *gathered = true;
                if st.gather_target > 1 && st.sync_in_active < st.gather_target {
                    self.gather(st);
                    // Someone may have flushed meanwhile (a full buffer, the background thread).
                    continue;
                }
            }
            self.lead_flush(st, sync)?;
        }
    }

    /// Wakes the parked committers whose target the log has reached and, when no flush is
    /// running or being gathered, one that is still waiting, to lead the next flush. After a
    /// failure, wakes them all (they find the error). The wake-ups (a system call each) are
    /// made with the mutex released, so that the woken can append their next records at once.
    fn wake_waiters(&self, st: &mut MutexGuard<'_, State>) {
        if st.waiters.is_empty() {
            return;
        }
        let failed = st.failed.is_some() || st.closed;
        let written = self.written.load(Ordering::Acquire);
        let durable = self.durable.load(Ordering::Acquire);
        let mut leader_woken = st.flushing || st.gathering;
        let mut wake = std::mem::take(&mut st.wake_buf);
        st.waiters.retain(|w| {
            let done = w.target <= if w.sync { durable } else { written };
            if done || failed || !leader_woken {
                leader_woken |= !done;
                wake.push(Arc::clone(&w.slot));
                false
            } else {
                true
            }
        });
        if wake.is_empty() {
            st.wake_buf = wake;
            return;
        }
        MutexGuard::unlocked(st, || {
            for slot in wake.drain(..) {
                slot.wake();
            }
        });
        st.wake_buf = wake;
    }

    /// Waits until `gather_target` sync committers have records in the buffer, for at most
    /// half the average sync time (capped at 1 ms).
    fn gather(&self, st: &mut MutexGuard<'_, State>) {
        let limit = Duration::from_nanos((st.sync_ns_avg / 2).min(1_000_000));
        if limit.is_zero() {
            return;
        }
        let t = Instant::now();
        let deadline = t + limit;
        st.gathering = true;
        while st.sync_in_active < st.gather_target
            && st.failed.is_none()
            && !st.closed
            && !st.flushing
        {
            if self.arrived.wait_until(st, deadline).timed_out() {
                break;
            }
        }
        st.gathering = false;
        st.stats.gathers += 1;
        st.stats.gather_ns_total += t.elapsed().as_nanos() as u64;
        // Followers that arrived meanwhile wait on `flushed`; let them re-check.
        self.flushed.notify_all();
    }

    /// Takes everything appended so far and writes it (and syncs, if `sync`), with the mutex
    /// released during the I/O. The caller checked that no flush is running and the log has not
    /// failed.
    fn lead_flush(&self, st: &mut MutexGuard<'_, State>, sync: bool) -> Result<(), WalError> {
        assert!(!st.flushing && st.failed.is_none());
        let start = st.active_start;
        let end = self.end.load(Ordering::Relaxed);
        assert_eq!(start, self.written.load(Ordering::Relaxed));
        let fresh = st
            .spare
            .take()
            .expect("the spare buffer is home whenever no flush runs");
        let mut batch = std::mem::replace(&mut st.active, fresh);
        st.active_start = end;
        st.flushing = true;
        let taken = std::mem::take(&mut st.sync_in_active);
        let durable0 = self.durable.load(Ordering::Relaxed);
        let result =
            MutexGuard::unlocked(st, || self.write_batch(&mut batch, start, durable0, sync));
        st.flushing = false;
        batch.clear();
        // A record larger than the buffer grew this one; do not keep the memory.
        if batch.capacity() > 2 * self.buffer_bytes {
            batch.shrink_to(self.buffer_bytes);
        }
        st.spare = Some(batch);
        self.flushed.notify_all();
        let result = match result {
            Ok(out) => {
                self.written.store(end, Ordering::Release);
                if out.durable > durable0 {
                    self.durable.store(out.durable, Ordering::Release);
                }
                let s = &mut st.stats;
                s.writes += out.writes;
                s.written_bytes += out.bytes;
                s.syncs += out.syncs;
                s.sync_ns_total += out.sync_ns;
                s.flushes += 1;
                s.max_flush_records = s.max_flush_records.max(out.records);
                if let Some(ns) = out.sync_ns.checked_div(out.syncs) {
                    st.sync_ns_avg = if st.sync_ns_avg == 0 {
                        ns
                    } else {
                        (st.sync_ns_avg * 7 + ns) / 8
                    };
                }
                if sync {
                    st.gather_target = taken + st.sync_in_active;
                }
                Ok(())
            }
            Err(e) => {
                st.failed = Some(e.to_string());
                self.space.notify_all();
                Err(WalError::Io(e))
            }
        };
        self.wake_waiters(st);
        result
    }

    /// The I/O of a flush: seals the records of `batch` (LSNs from `start`), writes them, and
    /// syncs if asked. Keeps every write within the unsynced window (module docs), syncing
    /// before a write that would leave it; with a batch no larger than the window (the usual
    /// case) that is at most two writes, split only at the wrap.
    fn write_batch(
        &self,
        batch: &mut [u8],
        start: u64,
        durable0: u64,
        sync: bool,
    ) -> Result<FlushOutcome, IoError> {
        let mut out = FlushOutcome {
            durable: durable0,
            records: format::seal_records(batch, start),
            ..FlushOutcome::default()
        };
        let total = batch.len() as u64;
        let mut pos = 0u64;
        while pos < total {
            let cur = start + pos;
            let remaining = total - pos;
            assert!(out.durable <= cur);
            if cur + remaining > out.durable + self.max_unsynced && cur > out.durable {
                self.timed_sync(&mut out)?;
                out.durable = cur;
            }
            let off = cur % self.capacity;
            let n = remaining
                .min(out.durable + self.max_unsynced - cur)
                .min(self.capacity - off);
            assert!(n > 0);
            self.storage
                .write_at(&batch[pos as usize..(pos + n) as usize], HEADER_SIZE + off)?;
            out.writes += 1;
            out.bytes += n;
            pos += n;
        }
        if sync && out.durable < start + total {
            self.timed_sync(&mut out)?;
            out.durable = start + total;
        }
        Ok(out)
    }

    fn timed_sync(&self, out: &mut FlushOutcome) -> Result<(), IoError> {
        let t = Instant::now();
        self.storage.sync()?;
        out.syncs += 1;
        out.sync_ns += t.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// The background thread: writes when the buffer passes half full, writes and syncs about
    /// once per interval, exits on shutdown.
    fn background(&self) {
        let mut st = self.state.lock();
        let mut next_sync = Instant::now() + self.interval;
        loop {
            if st.bg_stop {
                return;
            }
            if st.failed.is_some() {
                // Nothing to do until shutdown; a timed wait here would spin.
                self.wake_bg.wait(&mut st);
                continue;
            }
            let end = self.end.load(Ordering::Relaxed);
            if st.bg_kick {
                st.bg_kick = false;
                // An error is kept in the fail-stop state and reported by the next commit.
                let _ = self.flush_locked(&mut st, end, false);
                continue;
            }
            if Instant::now() >= next_sync {
                let _ = self.flush_locked(&mut st, end, true);
                next_sync = Instant::now() + self.interval;
                continue;
            }
            self.wake_bg.wait_until(&mut st, next_sync);
        }
    }
}
