//! The embedded API: [`Database`], [`Tree`], [`Transaction`].
//!
//! # Durability
//! Every change is first a logical redo record in the WAL (`redo.rs`), then applied to the
//! B-trees. The data file is made durable only by checkpoints, which are *consistent
//! snapshots*: the page store writes pages out of place and a checkpoint flips to a new page
//! map, so after a crash the data file opens exactly as of the last checkpoint's snapshot,
//! never a mix. Recovery replays the WAL from the checkpoint's *redo LSN*.
//!
//! A checkpoint does not stop writers: it holds the gate exclusively only while it notes the
//! redo LSN, flags the dirty pages and copies the page map (microseconds to milliseconds);
//! pages are then written while writers go on (a page changed before it is saved is copied
//! first, see `BufferPool::begin_checkpoint`).
//!
//! The redo LSN is the smallest of (a) the WAL's end and (b) a lower bound of the start of
//! every commit that has appended to the WAL but not finished applying. Every record before
//! it is fully in the snapshot; records after it may be partly in it. Replay is still exact,
//! because each record writes final values (put/delete), so replaying the log from the redo
//! LSN in order over a snapshot that already holds some of those writes ends in the same
//! state. That is also why a crash during recovery is harmless: recovery changes nothing on
//! disk until its own checkpoint.
//!
//! # Transactions
//! Writes take exclusive row locks ([`crate::lock`]) at the time of the write and keep them
//! until commit or rollback; they are buffered in the transaction and applied at commit, so the
//! trees only ever hold committed values. Reads never lock: they read a snapshot
//! ([`crate::mvcc`]). Under [`IsolationLevel::RepeatableRead`] the snapshot is taken at
//! `begin`, and a write to a row that another transaction changed after it fails with
//! [`TxnError::WriteConflict`](crate::TxnError::WriteConflict) (first updater wins: lost updates are impossible, as in snapshot
//! isolation). Under [`IsolationLevel::ReadCommitted`] every read takes a fresh snapshot and
//! writes are never refused for conflicts.

use crate::error::{OpenError, RequestError, StorageError};
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use zipdb_storage::io::{FileStorage, Storage};
use zipdb_storage::pool::{BufferPool, PoolConfig, PoolStats};
use zipdb_storage::store::{PageStore, StoreConfig};
use zipdb_storage::wal::{RecoveryOptions, RecoveryReport, Wal, WalConfig, WalError, WalStats};
use zipdb_storage::warm::{self, WarmFile};
use zipdb_storage::{Codec, Lsn, TreeId};

pub use zipdb_storage::wal::FlushPolicy;

use crate::btree::{BTree, Cursor, VerifyReport, MAX_VALUE_LEN};
use crate::catalog::{Catalog, CatalogEntry, ColdDictVersion};
use crate::error::{Error, Result};
use crate::format::TreeFormat;
use crate::lock::{LockError, LockManager, TxnId};
use crate::mvcc::{Mvcc, MvccStats, Ts, Visible};
use crate::redo::{self, CommitEncoder};
use crate::replay::{Replay, ReplayCatalog};

mod tree;
mod txn;
mod writeset;

pub use self::tree::Tree;
use self::txn::{apply_commit, lock_row};
pub use self::txn::{InsertProbe, Savepoint, Transaction, TxnScan};

/// Name of the data file inside the database directory.
pub const DATA_FILE: &str = "zipdb.data";
/// Name of the WAL file inside the database directory.
pub const WAL_FILE: &str = "zipdb.wal";
/// First LSN of a new WAL (0 means "no LSN" in the catalog).
const WAL_START: Lsn = Lsn(4096);

/// Settings of a database.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Logical page size for a new database (power of two, 4–64 KiB); an existing database
    /// keeps the page size it was created with.
    pub page_size: usize,
    /// Buffer pool budget (decoded and compressed tiers together).
    pub pool_bytes: usize,
    /// Codec of trees created without an explicit one.
    pub codec: Codec,
    /// Open the data file with O_DIRECT.
    pub direct_io: bool,
    /// When a commit returns, by default (each transaction may choose its own):
    /// `Sync` durable, `Write` in the OS (synced about once a second), `None` in memory.
    pub flush_policy: FlushPolicy,
    /// How long a write waits for a row lock before [`TxnError::LockWaitTimeout`](crate::TxnError::LockWaitTimeout).
    pub lock_wait_timeout: Duration,
    /// Size of the circular WAL file of a new database. A checkpoint starts when half is used.
    pub wal_bytes: u64,
    /// A checkpoint also starts after this long with changes (bounds recovery time).
    pub checkpoint_interval: Duration,
    /// Open a database whose WAL is damaged before its end by replaying up to the damage and
    /// dropping the rest (commits after it are lost). Off by default: damage is an error.
    pub salvage_wal: bool,
    /// Print recovery progress to stderr.
    pub recovery_progress: bool,
    /// Warm restart: save the ids of the pages in the buffer pool at [`Database::close`]
    /// (file `zipdb.warm`), and at open load the saved pages back in a background thread, so
    /// a restarted database does not have to fault its working set in one miss at a time.
    pub warm_restart: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            page_size: 16 * 1024,
            pool_bytes: 256 * 1024 * 1024,
            codec: Codec::DEFAULT,
            direct_io: false,
            flush_policy: FlushPolicy::Sync,
            lock_wait_timeout: Duration::from_secs(50),
            wal_bytes: 128 * 1024 * 1024,
            checkpoint_interval: Duration::from_secs(30),
            salvage_wal: false,
            recovery_progress: true,
            warm_restart: true,
        }
    }
}

/// Isolation level of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// Snapshot isolation: reads see the database as of `begin`; writing a row that another
    /// transaction changed since fails ([`TxnError::WriteConflict`](crate::TxnError::WriteConflict)). Write skew is possible.
    #[default]
    RepeatableRead,
    /// Each read sees the latest committed state; writes never conflict.
    ReadCommitted,
}

struct TreeShared {
    name: String,
    btree: BTree,
    dropped: AtomicBool,
    applies: ApplyCount,
}

/// Commits that began and ended applying writes to a tree (the only way a published tree
/// changes): a reader that saw the counts equal before reading, and `begun` unchanged after,
/// read it while no commit changed it (txn/probe.rs).
#[derive(Default)]
struct ApplyCount {
    begun: AtomicU64,
    ended: AtomicU64,
}

struct CatalogState {
    next_tree_id: u32,
    trees: BTreeMap<String, Arc<TreeShared>>,
}

impl CatalogState {
    fn by_id(&self, id: TreeId) -> Option<&Arc<TreeShared>> {
        self.trees.values().find(|t| t.btree.tree_id() == id)
    }
}

struct DbInner {
    store: Arc<PageStore>,
    pool: Arc<BufferPool>,
    wal: Arc<Wal>,
    wal_id: u64,
    /// Checkpoint gate: every change to the trees holds it shared; a checkpoint holds it
    /// exclusively for the moment it takes its snapshot; drop_tree and verify hold it too.
    gate: RwLock<()>,
    catalog: Mutex<CatalogState>,
    /// Changes that have appended (or are appending) to the WAL but not finished applying,
    /// by a lower bound of their record's LSN (see the module docs).
    in_flight: Mutex<BTreeMap<u64, usize>>,
    /// Serialises checkpoints.
    ckpt_lock: Mutex<()>,
    /// Serialises create_tree and drop_tree from their WAL append to their effect, so that the
    /// log orders them as they happened (two creates of one name: the first logged wins).
    ddl: Mutex<()>,
    locks: LockManager,
    mvcc: Mvcc,
    next_txn: AtomicU64,
    options: Options,
    /// Set when a write to the WAL or the data file failed, or a logged change could not be
    /// applied: the database refuses changes until reopened (fail-stop).
    failed: AtomicBool,
    failure: Mutex<Option<String>>,
    /// Wakes the checkpointer thread; true asks it to stop. Shared with the thread, which
    /// waits on it without holding the database.
    ckpt_wake: Arc<(Mutex<bool>, Condvar)>,
    changes_since_ckpt: AtomicU64,
    /// Commits made durable by a checkpoint instead of a log record.
    large_commits: AtomicU64,
    /// What recovery found; None for a new database.
    recovery: Option<RecoveryReport>,
    /// Where the warm-restart list lives; None when the database has no place for one
    /// (opened on bare storage without one).
    warm: Option<WarmFile>,
}

impl Drop for DbInner {
    fn drop(&mut self) {
        // Stops the background threads; nothing is checkpointed (see `Database::close`), but
        // what the WAL has buffered is written and synced.
        let _ = self.wal.shutdown();
        self.pool.shutdown();
    }
}

/// An open database. Cheap to clone (all clones share the database).
///
/// When the last `Database` handle is dropped (or closed), the checkpointer thread is stopped
/// and joined, so no checkpoint of this instance runs afterwards; the files may then be opened
/// again at once. [`Tree`] and [`Transaction`] handles that outlive it still work, without
/// background checkpoints.
#[derive(Clone)]
pub struct Database {
    inner: Arc<DbInner>,
    _handles: Arc<HandleGuard>,
}

/// Shared by the `Database` clones: stops the checkpointer when the last one goes.
struct HandleGuard {
    wake: Arc<(Mutex<bool>, Condvar)>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl HandleGuard {
    fn stop(&self) {
        {
            let (m, cv) = &*self.wake;
            *m.lock() = true;
            cv.notify_all();
        }
        if let Some(h) = self.thread.lock().take() {
            // The thread's failures land in the fail-stop state; a panic has nothing to clean.
            let _ = h.join();
        }
    }
}

impl Drop for HandleGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("file", &self.inner.store.file_name())
            .field("page_size", &self.inner.store.page_size())
            .finish()
    }
}

/// Counters of the store (cumulative since open).
#[derive(Debug, Clone, Copy, Default)]
pub struct StoreStats {
    pub reads: u64,
    pub read_bytes: u64,
    pub read_ns: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub write_ns: u64,
    pub checksum_ns: u64,
    pub checksum_verifies: u64,
    pub syncs: u64,
    pub checkpoints: u64,
    /// Free runs given back to the filesystem (`Zipdb_store_punches`, `_punched_bytes`,
    /// `_punch_failures`).
    pub punches: u64,
    pub punched_bytes: u64,
    pub punch_failures: u64,
}

/// Space used by one tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeStats {
    pub name: String,
    pub id: TreeId,
    /// The image codec (`format.image`), kept for existing callers.
    pub codec: Codec,
    pub format: TreeFormat,
    pub pages: u64,
    /// Pages × page size.
    pub logical_bytes: u64,
    /// Bytes of the pages' on-disk images (as last written back).
    pub physical_bytes: u64,
    /// Record-codec counters of a tree whose records are FSST-encoded (`None` otherwise).
    pub records: Option<crate::btree::symtab::RecordStats>,
    /// The cold layer's dictionary: where it stands and its bytes.
    pub cold_dict: (crate::btree::colddict::ColdDictStatus, u64),
}

/// A snapshot of the database's counters and space.
#[derive(Debug, Clone)]
pub struct Stats {
    pub page_size: usize,
    pub pool: PoolStats,
    pub store: StoreStats,
    pub wal: WalStats,
    pub mvcc: MvccStats,
    pub locks: crate::lock::LockStats,
    pub file_bytes: u64,
    pub free_bytes: u64,
    pub pending_free_bytes: u64,
    /// Commits too large for one WAL record, made durable by a checkpoint each.
    pub large_commits: u64,
    pub trees: Vec<TreeStats>,
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > crate::catalog::NAME_LEN_MAX {
        return Err(Error::Request(RequestError::InvalidName(name.to_string())));
    }
    Ok(())
}

impl Database {
    /// Opens the database in directory `dir` (files `zipdb.data` and `zipdb.wal`), creating
    /// it if missing. An existing database is recovered: its last checkpoint plus the WAL.
    pub fn open(dir: &Path, options: Options) -> Result<Database> {
        std::fs::create_dir_all(dir).map_err(|source| {
            Error::Open(OpenError::Dir {
                path: dir.display().to_string(),
                source,
            })
        })?;
        let data_path = dir.join(DATA_FILE);
        let wal_path = dir.join(WAL_FILE);
        let data_exists = data_path.exists();
        if data_exists && !wal_path.exists() {
            // Opening without the WAL would silently drop every commit since the last
            // checkpoint; a database from before the WAL existed has redo LSN 0 and gets a
            // new WAL below, so only refuse when the catalog says a WAL belongs to it.
            let probe =
                FileStorage::open(&data_path, false).map_err(zipdb_storage::StoreError::from)?;
            if !creation_unfinished(&probe)? {
                let store = PageStore::open(Box::new(probe))?;
                if Catalog::decode(&store.catalog())?.redo_lsn != 0 && !options.salvage_wal {
                    return Err(Error::Open(OpenError::WalMissing(
                        wal_path.display().to_string(),
                    )));
                }
            }
        }
        let data = FileStorage::open(&data_path, options.direct_io)
            .map_err(zipdb_storage::StoreError::from)?;
        let wal = FileStorage::open(&wal_path, false).map_err(zipdb_storage::StoreError::from)?;
        let db = Database::open_inner(
            Box::new(data),
            Box::new(wal),
            Some(WarmFile::in_dir(dir)),
            options,
        )?;
        if !data_exists {
            // The new files' directory entries must be durable too, or a crash could lose the
            // files themselves.
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|source| {
                    Error::Open(OpenError::Dir {
                        path: dir.display().to_string(),
                        source,
                    })
                })?;
        }
        Ok(db)
    }

    /// The page size of the database in `dir`, or None if there is none yet. Reads only the
    /// data file's superblock, so a caller can check its settings before a possibly long
    /// open (which keeps the file's page size whatever [`Options::page_size`] says).
    pub fn data_page_size(dir: &Path) -> Result<Option<usize>> {
        let data_path = dir.join(DATA_FILE);
        if !data_path.exists() {
            return Ok(None);
        }
        let probe =
            FileStorage::open(&data_path, false).map_err(zipdb_storage::StoreError::from)?;
        if creation_unfinished(&probe)? {
            return Ok(None);
        }
        Ok(Some(PageStore::probe_page_size(&probe)?))
    }

    /// Opens a database on `data` and `wal` storage: creates it if `data` is empty, else
    /// recovers it (the page size then comes from the file). Without a place for the
    /// warm-restart list (see [`Database::open_storage_with_warm`]).
    pub fn open_storage(
        data: Box<dyn Storage>,
        wal: Box<dyn Storage>,
        options: Options,
    ) -> Result<Database> {
        Database::open_inner(data, wal, None, options)
    }

    /// As [`Database::open_storage`], with the warm-restart list kept on `warm` (overwritten in
    /// place; a torn write fails its checksum and the list is then ignored).
    pub fn open_storage_with_warm(
        data: Box<dyn Storage>,
        wal: Box<dyn Storage>,
        warm: Box<dyn Storage>,
        options: Options,
    ) -> Result<Database> {
        Database::open_inner(data, wal, Some(WarmFile::Storage(warm)), options)
    }

    fn open_inner(
        data: Box<dyn Storage>,
        wal: Box<dyn Storage>,
        warm: Option<WarmFile>,
        options: Options,
    ) -> Result<Database> {
        if options.pool_bytes == 0 {
            return Err(Error::config("pool_bytes must be positive"));
        }
        let mut fresh = data.is_empty().map_err(zipdb_storage::StoreError::from)?;
        if !fresh && creation_unfinished(&*data)? {
            // A crash interrupted the creation of this database (see `creation_unfinished`):
            // nothing in it was ever acknowledged, so start over.
            data.set_len(0).map_err(zipdb_storage::StoreError::from)?;
            wal.set_len(0).map_err(zipdb_storage::StoreError::from)?;
            fresh = true;
        }
        let store = if fresh {
            PageStore::create(
                data,
                StoreConfig {
                    page_size: options.page_size,
                },
            )?
        } else {
            PageStore::open(data)?
        };
        let store = Arc::new(store);
        let catalog = Catalog::decode(&store.catalog())?;
        let pool = BufferPool::new(
            store.clone(),
            PoolConfig {
                budget_bytes: options.pool_bytes,
            },
        )?;
        // The engine's own tests run on a simulated disk whose reads cost nothing; tell the
        // pool's policy to price reads like a real disk, so that small pools keep a compressed
        // tier and the tests exercise demotion, compressed hits and image caching.
        #[cfg(test)]
        pool.fix_costs_for_testing(100_000, 10_000);
        let mut trees = BTreeMap::new();
        for e in catalog.entries {
            if !store.page_exists(e.root) {
                return Err(Error::corrupt_catalog(format!(
                    "tree {:?}: root page {} does not exist",
                    e.name, e.root
                )));
            }
            // Refused before any page is read: a later build's compact leaves would otherwise
            // surface as "bad node header" errors deep inside the first lookup.
            e.format.check_supported(&e.name)?;
            let mut btree = BTree::open(pool.clone(), e.id, e.root, e.format);
            btree.load_tables(&e.tables)?;
            if let Some(d) = &e.cold_dict {
                btree.cold_dict().load(d, &pool)?;
            }
            trees.insert(
                e.name.clone(),
                Arc::new(TreeShared {
                    name: e.name,
                    btree,
                    dropped: AtomicBool::new(false),
                    applies: ApplyCount::default(),
                }),
            );
        }
        let wal_config = WalConfig {
            capacity_bytes: options.wal_bytes,
            ..WalConfig::default()
        };
        let mut cat_state = CatalogState {
            next_tree_id: catalog.next_tree_id,
            trees,
        };
        let wal_empty = wal.is_empty().map_err(zipdb_storage::StoreError::from)?;
        let (wal, wal_id, report, replayed) = if catalog.redo_lsn == 0
            || (wal_empty && options.salvage_wal)
        {
            // A new database (or one from before the WAL): start a new log.
            if !wal_empty {
                wal.set_len(0).map_err(zipdb_storage::StoreError::from)?;
            }
            let wal_id = new_wal_id();
            let w = Wal::create(wal, wal_config, wal_id, WAL_START)?;
            (w, wal_id, None, false)
        } else {
            let mut trees = ReplayTrees {
                pool: &pool,
                cat: &mut cat_state,
            };
            let mut ctx = Replay::new(&mut trees, options.pool_bytes);
            let ropts = RecoveryOptions {
                salvage: options.salvage_wal,
                progress_interval: options.recovery_progress.then_some(Duration::from_secs(1)),
            };
            let opened = Wal::open(
                wal,
                wal_config,
                catalog.wal_id,
                Lsn(catalog.redo_lsn),
                &ropts,
                &mut |lsn, _end, payload| ctx.record(lsn, payload).map_err(Into::into),
            );
            if let Some(e) = ctx.error.take() {
                return Err(e);
            }
            let (w, mut report) = opened?;
            ctx.finish()?;
            // The WAL timed reading and batching; the last batch is applied after it.
            report.elapsed += ctx.stats.tail_apply;
            if options.recovery_progress && report.records > 0 {
                let s = ctx.stats;
                let secs = report.elapsed.as_secs_f64().max(1e-9);
                eprintln!(
                        "zipdb recovery: replayed {:.1} MiB, {} records in {:.2} s ({:.0} MB/s): \
                         {} writes, {} applied, {} overwritten later in their batch, {} to dropped trees; \
                         {} batches (sort {:.2} s, sort+apply {:.2} s){}",
                        report.bytes as f64 / (1 << 20) as f64,
                        report.records,
                        secs,
                        report.bytes as f64 / 1e6 / secs,
                        s.writes,
                        s.writes - s.overwritten - s.skipped,
                        s.overwritten,
                        s.skipped,
                        s.batches,
                        s.sort.as_secs_f64(),
                        s.apply.as_secs_f64(),
                        if report.torn_tail { "; a torn tail was discarded" } else { "" },
                    );
            }
            let replayed = report.records > 0;
            (w, catalog.wal_id, Some(report), replayed)
        };
        let inner = Arc::new(DbInner {
            store,
            pool,
            wal: Arc::new(wal),
            wal_id,
            gate: RwLock::new(()),
            catalog: Mutex::new(cat_state),
            in_flight: Mutex::new(BTreeMap::new()),
            ckpt_lock: Mutex::new(()),
            large_commits: AtomicU64::new(0),
            ddl: Mutex::new(()),
            locks: LockManager::new(),
            mvcc: Mvcc::new(),
            next_txn: AtomicU64::new(1),
            options,
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            ckpt_wake: Arc::new((Mutex::new(false), Condvar::new())),
            changes_since_ckpt: AtomicU64::new(0),
            recovery: report,
            warm,
        });
        let db = Database {
            _handles: Arc::new(HandleGuard {
                wake: inner.ckpt_wake.clone(),
                thread: Mutex::new(None),
            }),
            inner,
        };
        if fresh || catalog.redo_lsn == 0 || replayed {
            // Record the WAL in the catalog; after recovery, start the next crash from here.
            db.checkpoint()?;
        }
        let weak = Arc::downgrade(&db.inner);
        let wake = db.inner.ckpt_wake.clone();
        let handle = std::thread::Builder::new()
            .name("zipdb-checkpointer".into())
            .spawn(move || checkpointer_loop(weak, wake))
            .map_err(|e| Error::config(format!("cannot start the checkpointer: {e}")))?;
        *db._handles.thread.lock() = Some(handle);
        db.start_warm_load();
        Ok(db)
    }

    /// After recovery: starts loading the pages of the warm-restart list, if there is a
    /// usable one. A missing list is normal (first start, or after a crash); a damaged one is
    /// ignored with a message, since it is only a hint.
    fn start_warm_load(&self) {
        let pool = &self.inner.pool;
        let Some(file) = self
            .inner
            .warm
            .as_ref()
            .filter(|_| self.inner.options.warm_restart)
        else {
            pool.skip_warm_load();
            return;
        };
        let ids = file.load().and_then(|bytes| match bytes {
            Some(b) => warm::decode(&file.name(), self.page_size(), &b),
            None => Ok(Vec::new()),
        });
        let started = match ids {
            Ok(ids) => pool.start_warm_load(ids).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = started {
            pool.skip_warm_load();
            eprintln!("zipdb: warm restart skipped, the database starts cold: {e}");
        }
    }

    /// Saves the warm-restart list now (also done by [`Database::close`]); returns the
    /// number of pages listed, or None if this database has no place for a list or warm
    /// restart is off.
    pub fn save_warm_list(&self) -> Result<Option<usize>> {
        let Some(file) = self
            .inner
            .warm
            .as_ref()
            .filter(|_| self.inner.options.warm_restart)
        else {
            return Ok(None);
        };
        let ids = self.inner.pool.resident_pages();
        file.save(&warm::encode(self.page_size(), &ids))?;
        Ok(Some(ids.len()))
    }

    /// The options the database was opened with (the page size is the file's).
    pub fn options(&self) -> Options {
        Options {
            page_size: self.page_size(),
            ..self.inner.options
        }
    }

    /// What recovery did when this database was opened (None if it was created).
    pub fn recovery_report(&self) -> Option<&RecoveryReport> {
        self.inner.recovery.as_ref()
    }

    pub fn page_size(&self) -> usize {
        self.inner.store.page_size()
    }

    /// The buffer pool (for benchmarks and diagnostics).
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.inner.pool
    }

    /// Creates a classic tree whose pages use `codec`, by default [`Options::codec`].
    pub fn create_tree(&self, name: &str, codec: Option<Codec>) -> Result<Tree> {
        let codec = codec.unwrap_or(self.inner.options.codec);
        self.create_tree_with(name, TreeFormat::classic(codec))
    }

    /// Creates a tree of `format`. Fails with [`RequestError::InvalidTreeFormat`] for parts that do
    /// not go together, and with [`OpenError::UnsupportedTreeFormat`] for anything but a classic
    /// tree until compact leaves exist.
    pub fn create_tree_with(&self, name: &str, format: TreeFormat) -> Result<Tree> {
        check_name(name)?;
        format.validate()?;
        format.check_supported(name)?;
        self.inner.check_writable()?;
        let _ddl = self.inner.ddl.lock();
        // Tree ids are handed out under the catalog mutex, but the WAL append must not happen
        // under it (it may wait for log space, which needs a checkpoint, which needs the
        // catalog); so reserve the id first and log it.
        let id = {
            let mut cat = self.inner.catalog.lock();
            if cat.trees.contains_key(name) {
                return Err(Error::Request(RequestError::TreeExists(name.to_string())));
            }
            let id = cat.next_tree_id;
            cat.next_tree_id = id
                .checked_add(1)
                .ok_or_else(|| Error::config("tree ids exhausted"))?;
            TreeId(id)
        };
        let payload = redo::encode_create_tree(id, format, name);
        let shared = self.inner.logged(&payload, FlushPolicy::Sync, || {
            let _gate = self.inner.gate.read();
            let mut cat = self.inner.catalog.lock();
            debug_assert!(!cat.trees.contains_key(name), "DDL is serialised");
            let btree = BTree::create(self.inner.pool.clone(), id, format)?;
            let shared = Arc::new(TreeShared {
                name: name.to_string(),
                btree,
                dropped: AtomicBool::new(false),
                applies: ApplyCount::default(),
            });
            cat.trees.insert(name.to_string(), shared.clone());
            Ok(shared)
        })?;
        Ok(Tree {
            db: self.inner.clone(),
            t: shared,
        })
    }

    /// Appends a raw redo record and waits for it to be durable, changing nothing else: lets
    /// tests write records this build no longer writes (kind 2) or cannot apply.
    #[cfg(test)]
    pub(crate) fn log_raw_for_test(&self, payload: &[u8]) -> Result<()> {
        self.inner.logged(payload, FlushPolicy::Sync, || Ok(()))
    }

    /// A handle to an existing tree.
    pub fn open_tree(&self, name: &str) -> Result<Tree> {
        let cat = self.inner.catalog.lock();
        let t = cat
            .trees
            .get(name)
            .ok_or_else(|| Error::Request(RequestError::NoSuchTree(name.to_string())))?;
        Ok(Tree {
            db: self.inner.clone(),
            t: t.clone(),
        })
    }

    /// Removes a tree and frees all its pages. Waits for in-flight writes; afterwards every
    /// handle of the tree returns [`RequestError::NoSuchTree`]. Readers must not race with a drop.
    pub fn drop_tree(&self, name: &str) -> Result<()> {
        self.inner.check_writable()?;
        let _ddl = self.inner.ddl.lock();
        let id = {
            let cat = self.inner.catalog.lock();
            cat.trees
                .get(name)
                .ok_or_else(|| Error::Request(RequestError::NoSuchTree(name.to_string())))?
                .btree
                .tree_id()
        };
        let payload = redo::encode_drop_tree(id);
        self.inner.logged(&payload, FlushPolicy::Sync, || {
            let _gate = self.inner.gate.write();
            let t = {
                let mut cat = self.inner.catalog.lock();
                match cat.trees.get(name) {
                    Some(t) if t.btree.tree_id() == id => {}
                    _ => return Ok(()),
                }
                cat.trees.remove(name).expect("checked above")
            };
            t.dropped.store(true, Ordering::Release);
            self.inner.mvcc.drop_tree(id);
            // Freeing reads the tree's pages, which may need its dictionary; a checkpoint
            // installs dictionaries only for trees still in the catalog (checked under its
            // lock), so none comes back for this tree after this.
            t.btree.free_all()?;
            self.inner.pool.page_dicts().remove_tree(id);
            Ok(())
        })?;
        Ok(())
    }

    /// Names of all trees, sorted.
    pub fn tree_names(&self) -> Vec<String> {
        self.inner.catalog.lock().trees.keys().cloned().collect()
    }

    /// Starts a transaction at the default isolation level (repeatable read) and flush policy.
    pub fn begin(&self) -> Transaction {
        self.begin_with(IsolationLevel::default())
    }

    /// Starts a transaction at `isolation`.
    pub fn begin_with(&self, isolation: IsolationLevel) -> Transaction {
        Transaction::new(self.inner.clone(), isolation)
    }

    /// Makes the current state durable in the data file and lets the WAL reuse its space.
    /// Writers keep going meanwhile (see the module docs). Every commit that returned before
    /// the call is in the checkpoint.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint()
    }

    /// Checkpoints and stops the background threads. Dropping a `Database` without `close`
    /// is a crash as far as the data file is concerned: the next open replays the WAL.
    pub fn close(self) -> Result<()> {
        self._handles.stop();
        let mut r = self.checkpoint();
        // Extents the checkpoint's own write-backs replaced stay pending until a checkpoint
        // after it: a second one (nothing dirty: a map and two syncs) frees them now, so the
        // file a clean shutdown leaves holds no long free runs (after `OPTIMIZE TABLE`, a
        // third of it), and punches them (`PageStore`, FORMAT.md "Free space").
        if r.is_ok() && self.inner.store.space().pending_free_bytes >= 64 * 1024 {
            r = self.checkpoint();
        }
        // After the checkpoint, so the list sees the pool as the next start will find the
        // data. Failing to save it costs only the next start's warm-up, not the close.
        if let Err(e) = self.save_warm_list() {
            eprintln!("zipdb: cannot save the warm-restart list (the next start is cold): {e}");
        }
        let w = self.inner.wal.shutdown();
        r?;
        Ok(w?)
    }

    /// Counters and space, per tree with names.
    pub fn stats(&self) -> Stats {
        let space = self.inner.store.space();
        let c = &self.inner.store.counters;
        let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let store = StoreStats {
            reads: ld(&c.reads),
            read_bytes: ld(&c.read_bytes),
            read_ns: ld(&c.read_ns),
            writes: ld(&c.writes),
            write_bytes: ld(&c.write_bytes),
            write_ns: ld(&c.write_ns),
            checksum_ns: ld(&c.checksum_ns),
            checksum_verifies: ld(&c.checksum_verifies),
            syncs: ld(&c.syncs),
            checkpoints: ld(&c.checkpoints),
            punches: ld(&c.punches),
            punched_bytes: ld(&c.punched_bytes),
            punch_failures: ld(&c.punch_failures),
        };
        let trees = {
            let cat = self.inner.catalog.lock();
            cat.trees
                .values()
                .map(|t| {
                    let id = t.btree.tree_id();
                    let s = space
                        .trees
                        .iter()
                        .find(|(tid, _)| *tid == id)
                        .map(|(_, s)| *s)
                        .unwrap_or_default();
                    TreeStats {
                        name: t.name.clone(),
                        id,
                        codec: t.btree.codec(),
                        format: t.btree.format(),
                        pages: s.pages,
                        logical_bytes: s.logical_bytes,
                        physical_bytes: s.physical_bytes,
                        records: (t.btree.format().records == crate::format::RecordCodec::Fsst)
                            .then(|| t.btree.symbol_tables().record_stats()),
                        cold_dict: t.btree.cold_dict().status(),
                    }
                })
                .collect()
        };
        Stats {
            page_size: self.page_size(),
            pool: self.inner.pool.stats(),
            store,
            wal: self.inner.wal.stats(),
            mvcc: self.inner.mvcc.stats(),
            locks: self.inner.locks.stats(),
            file_bytes: space.file_bytes,
            free_bytes: space.free_bytes,
            pending_free_bytes: space.pending_free_bytes,
            large_commits: self.inner.large_commits.load(Ordering::Relaxed),
            trees,
        }
    }

    /// Verifies every tree and the page store; waits for in-flight writes and blocks new ones
    /// meanwhile. Returns each tree's report.
    pub fn verify(&self) -> Result<Vec<(String, VerifyReport)>> {
        let _gate = self.inner.gate.write();
        let trees: Vec<_> = self.inner.catalog.lock().trees.values().cloned().collect();
        let mut out = Vec::with_capacity(trees.len());
        for t in trees {
            let r = t.btree.verify()?;
            out.push((t.name.clone(), r));
        }
        self.inner
            .store
            .verify()
            .map_err(|e| Error::Storage(StorageError::StoreVerify(e)))?;
        Ok(out)
    }
}

/// The catalog as replay sees it: a tree id resolves to its tree, and the DDL records change
/// which trees exist.
struct ReplayTrees<'a> {
    pool: &'a Arc<BufferPool>,
    cat: &'a mut CatalogState,
}

impl AsRef<BTree> for TreeShared {
    fn as_ref(&self) -> &BTree {
        &self.btree
    }
}

impl ReplayCatalog for ReplayTrees<'_> {
    type Tree = TreeShared;

    fn tree(&self, id: TreeId) -> Option<Arc<TreeShared>> {
        self.cat.by_id(id).cloned()
    }

    fn create_tree(&mut self, id: TreeId, format: TreeFormat, name: &str) -> Result<()> {
        self.cat.next_tree_id = self.cat.next_tree_id.max(id.0.saturating_add(1));
        if self.cat.by_id(id).is_none() && !self.cat.trees.contains_key(name) {
            format.check_supported(name)?;
            let btree = BTree::create(self.pool.clone(), id, format)?;
            self.cat.trees.insert(
                name.to_string(),
                Arc::new(TreeShared {
                    name: name.to_string(),
                    btree,
                    dropped: AtomicBool::new(false),
                    applies: ApplyCount::default(),
                }),
            );
        }
        Ok(())
    }

    fn drop_tree(&mut self, id: TreeId) -> Result<()> {
        // A drop replays as a no-op on a tree that is already gone.
        let name = self.cat.by_id(id).map(|t| t.name.clone());
        if let Some(name) = name {
            if let Some(t) = self.cat.trees.remove(&name) {
                t.btree.free_all()?;
                self.pool.page_dicts().remove_tree(id);
            }
        }
        Ok(())
    }
}

/// Whether `data` holds a database whose creation never finished. Creating a database
/// checkpoints twice: the page store's own first checkpoint (sequence 1, superblock slot 1) and
/// then the engine's, which records the WAL (sequence 2, slot 0). Slot 0 is written by every
/// even checkpoint and never cleared, so an all-zero slot 0 means `open_storage` never
/// returned for this database: no commit can have been acknowledged.
fn creation_unfinished(data: &dyn Storage) -> Result<bool> {
    const SLOT: usize = 512;
    let len = data.len().map_err(zipdb_storage::StoreError::from)?;
    if len < SLOT as u64 {
        return Ok(true);
    }
    let mut buf = zipdb_storage::io::AlignedBuf::new(SLOT);
    data.read_at(&mut buf, 0)
        .map_err(zipdb_storage::StoreError::from)?;
    Ok(buf.iter().all(|&b| b == 0))
}

fn new_wal_id() -> u64 {
    // Not secret, only distinct: time and address-space randomness are enough.
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let local = 0u8;
    let addr = &local as *const u8 as u64;
    (t ^ addr.rotate_left(32) ^ u64::from(std::process::id())).max(1)
}

impl DbInner {
    fn check_writable(&self) -> Result<()> {
        if self.store.is_failed() && !self.failed.load(Ordering::Acquire) {
            // A background page write failed: the data file can no longer checkpoint.
            self.fail_stop(Error::Storage(StorageError::ReadOnlyAfterIoError(
                "a page write to the data file failed".into(),
            )));
        }
        if self.failed.load(Ordering::Acquire) {
            let why = self.failure.lock().clone().unwrap_or_default();
            return Err(Error::Storage(StorageError::ReadOnlyAfterIoError(why)));
        }
        Ok(())
    }

    /// Puts the database in the fail-stop state (first reason wins) and returns the error.
    fn fail_stop(&self, e: Error) -> Error {
        let why = {
            let mut f = self.failure.lock();
            if f.is_none() {
                *f = Some(e.to_string());
            }
            f.clone().unwrap_or_default()
        };
        self.failed.store(true, Ordering::Release);
        // Commits waiting for WAL space would wait for a checkpoint that cannot happen now.
        self.wal.fail_stop(&why);
        e
    }

    /// Appends `payload` to the WAL, runs `apply`, then waits as `policy` says. The change
    /// counts as in flight (for the redo LSN of a concurrent checkpoint) from before its
    /// append until `apply` is done. An error after the append fail-stops the database: the
    /// log would then say something the trees do not.
    fn logged<R>(
        &self,
        payload: &[u8],
        policy: FlushPolicy,
        apply: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        self.check_writable()?;
        let bound = {
            let mut f = self.in_flight.lock();
            let b = self.wal.end_lsn().0;
            *f.entry(b).or_insert(0) += 1;
            b
        };
        let done = |me: &DbInner| {
            let mut f = me.in_flight.lock();
            match f.get_mut(&bound) {
                Some(n) if *n > 1 => *n -= 1,
                _ => {
                    f.remove(&bound);
                }
            }
        };
        let end = match self.wal.append(payload) {
            Ok(end) => end,
            // Refused before anything was written: this change fails alone, and the
            // database goes on (a fail-stop here let one oversized transaction make the
            // whole database refuse changes until restart).
            Err(WalError::RecordTooLarge { len, max }) => {
                done(self);
                return Err(Error::Request(RequestError::ChangeTooLarge {
                    bytes: len,
                    max,
                }));
            }
            Err(e) => {
                done(self);
                return Err(self.fail_stop(e.into()));
            }
        };
        let r = apply();
        done(self);
        let r = match r {
            Ok(r) => r,
            Err(e) => return Err(self.fail_stop(e)),
        };
        self.changes_since_ckpt.fetch_add(1, Ordering::Relaxed);
        if self.wal.needs_checkpoint() {
            self.wake_checkpointer();
        }
        if let Err(e) = self.wal.commit(end, policy) {
            return Err(self.fail_stop(e.into()));
        }
        Ok(r)
    }

    fn checkpoint(&self) -> Result<()> {
        self.check_writable()?;
        let _one = self.ckpt_lock.lock();
        self.checkpoint_locked()
    }

    /// [`DbInner::checkpoint`] for a caller that holds `ckpt_lock`.
    fn checkpoint_locked(&self) -> Result<()> {
        self.check_writable()?;
        let (mut snap, catalog, redo, dicts) = {
            let _gate = self.gate.write();
            let end = self.wal.end_lsn().0;
            let redo = self
                .in_flight
                .lock()
                .first_key_value()
                .map_or(end, |(&b, _)| b.min(end));
            // Either fails only after an earlier write error; the database is then stopped.
            // The pool flags its dirty pages first and the store copies its map second: a page
            // that a background write-back cleans in between is then in the copy (see
            // `BufferPool::begin_checkpoint`).
            self.pool
                .begin_checkpoint()
                .map_err(|e| self.fail_stop(e.into()))?;
            let snap = self
                .store
                .begin_checkpoint()
                .map_err(|e| self.fail_stop(e.into()))?;
            let cat = self.catalog.lock();
            let catalog = Catalog {
                next_tree_id: cat.next_tree_id,
                redo_lsn: redo,
                wal_id: self.wal_id,
                entries: cat
                    .trees
                    .values()
                    .map(|t| CatalogEntry {
                        name: t.name.clone(),
                        id: t.btree.tree_id(),
                        root: t.btree.root(),
                        format: t.btree.format(),
                        // Under the gate: a version is installed under `gate.read()` before
                        // any page uses it, so these pages name only versions listed here.
                        tables: t.btree.symbol_tables().snapshot(),
                        cold_dict: t.btree.cold_dict().snapshot(),
                    })
                    .collect(),
            };
            // The trees whose dictionaries this checkpoint saves: the pool may use them
            // once it is durable.
            let dicts: Vec<(Arc<TreeShared>, ColdDictVersion)> = cat
                .trees
                .values()
                .zip(&catalog.entries)
                .filter_map(|(t, e)| Some((t.clone(), e.cold_dict.clone()?)))
                .collect();
            (snap, catalog, redo, dicts)
        };
        // Encoded after the gate: writers wait for the snapshot, not for copying and
        // checksumming its symbol tables and dictionaries.
        let catalog = catalog.encode();
        self.changes_since_ckpt.store(0, Ordering::Relaxed);
        let r = (|| -> Result<()> {
            self.pool.checkpoint_pages(&mut snap)?;
            // The snapshot holds every record before `redo`; make them durable first, so
            // that the durable log is always a prefix of what the data file reflects.
            self.wal.sync_to(Lsn(redo))?;
            self.store.finish_checkpoint(snap, &catalog)?;
            Ok(())
        })();
        if let Err(e) = r {
            return Err(self.fail_stop(e));
        }
        self.wal.checkpointed(Lsn(redo));
        if !dicts.is_empty() {
            // Under the catalog lock, skipping trees dropped since the snapshot (`drop_tree`
            // takes a tree out of the catalog under it before forgetting its dictionaries).
            let cat = self.catalog.lock();
            for (t, d) in &dicts {
                if cat
                    .trees
                    .get(&t.name)
                    .is_some_and(|now| Arc::ptr_eq(now, t))
                {
                    t.btree.cold_dict().checkpointed(d, &self.pool);
                }
            }
        }
        Ok(())
    }

    fn wake_checkpointer(&self) {
        let (m, cv) = &*self.ckpt_wake;
        let _g = m.lock();
        cv.notify_one();
    }
}

/// Checkpoints when the WAL is half full, or after `checkpoint_interval` with changes.
///
/// It holds the database (a strong reference) only while it looks and checkpoints, never while
/// it sleeps, so that dropping the last handle drops the database promptly.
fn checkpointer_loop(db: Weak<DbInner>, wake: Arc<(Mutex<bool>, Condvar)>) {
    let mut last = Instant::now();
    loop {
        {
            let (m, cv) = &*wake;
            let mut stop = m.lock();
            if *stop {
                return;
            }
            cv.wait_for(&mut stop, Duration::from_millis(100));
            if *stop {
                return;
            }
        }
        let Some(d) = db.upgrade() else { return };
        if d.failed.load(Ordering::Acquire) {
            continue;
        }
        let due = d.changes_since_ckpt.load(Ordering::Relaxed) > 0
            && last.elapsed() >= d.options.checkpoint_interval;
        // A tree's new cold-layer dictionary is used only once a checkpoint saved it. Taken
        // first, so that a request is cleared only by the checkpoint that follows it.
        let dict_wanted = d.pool.page_dicts().take_checkpoint_request();
        if dict_wanted || d.wal.needs_checkpoint() || due {
            // An error has fail-stopped the database; writers see it.
            let _ = d.checkpoint();
            last = Instant::now();
        }
    }
}
