//! The cold layer's zstd dictionary of an `fsst+zstd` tree (issue 19, design note session 18;
//! BENCHMARKS "A per-tree zstd dictionary for the cold layer").
//!
//! A tree whose cold codec is [`Codec::ZstdDict`] trains one dictionary over the FSST codes
//! of its first values, so that its pages leaving the pool are compressed with what other
//! pages repeat (licence paragraphs, boilerplate) and not only with what one page holds.
//!
//! - **Collect.** While the tree has no dictionary, every inline value stored after the tree's
//!   first symbol table exists is encoded with the current table and appended to a sample,
//!   until it holds [`ColdDictConfig::sample_bytes`]. One relaxed load per write afterwards.
//! - **Train.** The writer that fills the sample hands it to a thread of its own (zstd's
//!   trainer, 70–250 ms), which trains on three quarters of the sample and
//!   keeps the dictionary only if it saves [`SAVING_MIN_PERCENT`] against plain zstd:1 on the
//!   last quarter (sbtest's random digits gain under 1%, real text 10–14%). A failed or
//!   rejected training leaves the tree on plain zstd:1 for this open (the next open collects
//!   again).
//! - **Durable, then used.** A trained dictionary waits in [`ColdDict::snapshot`] for the next
//!   checkpoint's catalog; only once that checkpoint is durable does [`ColdDict::checkpointed`]
//!   hand it to the pool ([`zipdb_storage::dict::PageDicts`]), so no image on disk ever names
//!   a dictionary that a crash could lose. At open a dictionary from the catalog goes to the
//!   pool at once. Training asks the checkpointer for a checkpoint
//!   ([`zipdb_storage::dict::PageDicts::note_waiting`]), so a bulk load starts using the
//!   dictionary within about 100 ms instead of at the next timed checkpoint. There is one
//!   version per tree, kept for the tree's life: no retraining yet.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use zipdb_storage::dict::{self, DictVersion, PageDicts};
use zipdb_storage::fsst::SymbolTable;
use zipdb_storage::pool::BufferPool;
use zipdb_storage::{Codec, TreeId};

use super::symtab::SymbolTables;
use crate::catalog::ColdDictVersion;
use crate::error::{Error, Result};

/// How much to collect and what to train (tests shrink the sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColdDictConfig {
    /// Bytes of FSST codes collected before training: zstd's trainer wants ~10-100x the
    /// dictionary.
    pub sample_bytes: usize,
    /// Dictionary size at most.
    pub dict_bytes: usize,
    /// zstd level pages are compressed at with it. With the dictionary level 1 gained 5% on
    /// text, level 2 15% and level 3 14%, at 1.1x, 1.75x and 2.8x zstd:1's encode time; a
    /// level-3 cold layer cut updates at fits_neither from 0.43x to 0.27x of none, since every
    /// dirty page leaving the pool pays it (BENCHMARKS, session 18).
    pub level: u8,
}

impl Default for ColdDictConfig {
    fn default() -> ColdDictConfig {
        ColdDictConfig {
            sample_bytes: 1 << 20,
            dict_bytes: 64 * 1024,
            level: 2,
        }
    }
}

/// A dictionary is kept only if it saves at least this share of plain zstd:1's bytes on the
/// quarter of the sample it was not trained on.
pub const SAVING_MIN_PERCENT: usize = 5;

/// The only version a tree trains (see the module docs).
pub const COLD_DICT_VERSION: DictVersion = DictVersion(1);

#[derive(Default)]
struct Sample {
    data: Vec<u8>,
    /// Value lengths; counted against the sample budget with the data.
    sizes: Vec<usize>,
}

impl Sample {
    /// Bytes the sample holds, its lengths included.
    fn bytes(&self) -> usize {
        self.data.len() + self.sizes.len() * std::mem::size_of::<usize>()
    }
}

/// Training threads running in this process at most; a tree that fills its sample while
/// they all run trains in the writer instead (bounded threads, not bounded waits).
const TRAINERS_MAX: usize = 2;
static TRAINERS: AtomicUsize = AtomicUsize::new(0);

/// Where a tree's cold-layer dictionary stands (`information_schema.ZIPDB_TABLE_COMPRESSION`
/// `COLD_DICTIONARY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColdDictStatus {
    /// The tree's cold codec is not zstd-dict.
    Off,
    /// Collecting its sample (or waiting for its first symbol table).
    Collecting,
    /// A thread is training on the sample.
    Training,
    /// Trained; waits for a checkpoint to save it before pages use it.
    Waiting,
    /// Pages leaving the pool are compressed with it.
    InUse,
    /// Training failed or the dictionary saved too little: zstd:1 until the next open.
    Rejected,
}

impl ColdDictStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ColdDictStatus::Off => "off",
            ColdDictStatus::Collecting => "collecting",
            ColdDictStatus::Training => "training",
            ColdDictStatus::Waiting => "waiting",
            ColdDictStatus::InUse => "in use",
            ColdDictStatus::Rejected => "rejected",
        }
    }
}

/// What the training thread writes back.
#[derive(Default)]
struct Trained {
    dict: Mutex<Option<ColdDictVersion>>,
    /// Set from the full sample until the training thread is done with it.
    training: AtomicBool,
    trainings_failed: AtomicU64,
    /// Dictionaries trained and dropped because they saved too little.
    not_worth: AtomicU64,
}

/// A tree's cold-layer dictionary: its sample while collecting, then the dictionary.
pub struct ColdDict {
    tree: TreeId,
    /// The tree's cold codec is zstd-dict.
    enabled: bool,
    /// Set while the tree has no dictionary and its sample is not full.
    collecting: AtomicBool,
    config: Mutex<ColdDictConfig>,
    sample: Mutex<Sample>,
    trained: Arc<Trained>,
    /// The pool has it (a checkpoint holding it is durable, or it came from the catalog).
    in_pool: AtomicBool,
}

impl std::fmt::Debug for ColdDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColdDict")
            .field("tree", &self.tree)
            .field("collecting", &self.collecting.load(Ordering::Relaxed))
            .field("in_pool", &self.in_pool.load(Ordering::Relaxed))
            .finish()
    }
}

impl ColdDict {
    /// A tree with cold codec `cold`: it collects only if that is [`Codec::ZstdDict`].
    pub fn new(tree: TreeId, cold: Codec) -> ColdDict {
        ColdDict {
            tree,
            enabled: cold == Codec::ZstdDict,
            collecting: AtomicBool::new(cold == Codec::ZstdDict),
            config: Mutex::new(ColdDictConfig::default()),
            sample: Mutex::new(Sample::default()),
            trained: Arc::new(Trained::default()),
            in_pool: AtomicBool::new(false),
        }
    }

    /// Replaces the sample and dictionary sizes (tests shrink them).
    pub fn set_config(&self, config: ColdDictConfig) {
        *self.config.lock() = config;
    }

    /// The dictionary from the tree's catalog entry: durable already, so the pool gets it
    /// now. Called once, before the tree is shared.
    pub fn load(&self, d: &ColdDictVersion, pool: &BufferPool) -> Result<()> {
        pool.page_dicts()
            .install(self.tree, d.version, &d.bytes, i32::from(d.level))
            .map_err(|e| {
                Error::corrupt_catalog(format!("tree {:?}: cold-layer dictionary: {e}", self.tree))
            })?;
        *self.trained.dict.lock() = Some(d.clone());
        self.collecting.store(false, Ordering::Relaxed);
        self.in_pool.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Offers a value just stored in a tree with symbol tables `tables`. One load unless the
    /// tree is collecting.
    #[inline]
    pub fn note(&self, tables: &SymbolTables, v: &[u8], pool: &Arc<BufferPool>) {
        if self.collecting.load(Ordering::Relaxed) {
            if let Some(t) = tables.current() {
                self.collect(&t.table, v, pool);
            }
        }
    }

    #[cold]
    fn collect(&self, table: &SymbolTable, v: &[u8], pool: &Arc<BufferPool>) {
        let config = *self.config.lock();
        let taken = {
            let mut s = self.sample.lock();
            if !self.collecting.load(Ordering::Relaxed) {
                return;
            }
            let before = s.data.len();
            table.encode(v, &mut s.data);
            if s.data.len() - before >= v.len() {
                // Stored raw, so the page holds the raw bytes.
                s.data.truncate(before);
                s.data.extend_from_slice(v);
            }
            let n = s.data.len() - before;
            s.sizes.push(n);
            if s.bytes() < config.sample_bytes {
                return;
            }
            // Both under the lock: exactly one thread trains on this sample, and `status`
            // never sees it neither collecting nor training.
            self.trained.training.store(true, Ordering::Release);
            self.collecting.store(false, Ordering::Relaxed);
            std::mem::take(&mut *s)
        };
        // Trained on a thread of its own (70–250 ms of CPU): the writer that filled the
        // sample goes on, and a load on fewer threads than cores does not wait for it.
        let job = TrainJob {
            sample: taken,
            config,
            trained: self.trained.clone(),
            dicts: pool.page_dicts().clone(),
            page_size: pool.page_size(),
        };
        // The job holds the registry, not the pool: a Database dropped meanwhile frees its
        // frames at once.
        if TRAINERS.fetch_add(1, Ordering::AcqRel) >= TRAINERS_MAX {
            TRAINERS.fetch_sub(1, Ordering::AcqRel);
            job.run();
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("zipdb-dict-train".into())
            .spawn(move || {
                job.run();
                TRAINERS.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            // No thread to be had: nothing is lost but this open's dictionary.
            TRAINERS.fetch_sub(1, Ordering::AcqRel);
            self.trained
                .trainings_failed
                .fetch_add(1, Ordering::Relaxed);
            self.trained.training.store(false, Ordering::Release);
        }
    }

    /// Whether a training thread is still at work on the sample (tests wait on it).
    pub fn training(&self) -> bool {
        self.trained.training.load(Ordering::Acquire)
    }

    /// What a checkpoint saves in the tree's catalog entry.
    pub fn snapshot(&self) -> Option<ColdDictVersion> {
        self.trained.dict.lock().clone()
    }

    /// After a checkpoint whose catalog held `saved` is durable: the pool may now write
    /// pages that name it.
    pub fn checkpointed(&self, saved: &ColdDictVersion, pool: &BufferPool) {
        if self.in_pool.swap(true, Ordering::AcqRel) {
            return;
        }
        let r = pool.page_dicts().install(
            self.tree,
            saved.version,
            &saved.bytes,
            i32::from(saved.level),
        );
        // A version the pool already has is the only refusal possible here (the catalog
        // decoder bounds level and length), and harmless.
        debug_assert!(r.is_ok(), "tree {:?}: {r:?}", self.tree);
    }

    /// Where the dictionary stands, and its size in bytes (0 while there is none).
    pub fn status(&self) -> (ColdDictStatus, u64) {
        let t = &self.trained;
        let bytes = t.dict.lock().as_ref().map_or(0, |d| d.bytes.len() as u64);
        let status = if !self.enabled {
            ColdDictStatus::Off
        } else if self.in_pool.load(Ordering::Relaxed) {
            ColdDictStatus::InUse
        } else if bytes > 0 {
            ColdDictStatus::Waiting
        } else if self.training() {
            ColdDictStatus::Training
        } else if self.collecting.load(Ordering::Relaxed) {
            ColdDictStatus::Collecting
        } else {
            ColdDictStatus::Rejected
        };
        (status, bytes)
    }

    /// The dictionary's state, for statistics: (trained, in the pool, trainings that failed
    /// or were not worth keeping).
    pub fn state(&self) -> (bool, bool, u64) {
        let t = &self.trained;
        (
            t.dict.lock().is_some(),
            self.in_pool.load(Ordering::Relaxed),
            t.trainings_failed.load(Ordering::Relaxed) + t.not_worth.load(Ordering::Relaxed),
        )
    }
}

/// One training, on its own thread.
struct TrainJob {
    sample: Sample,
    config: ColdDictConfig,
    trained: Arc<Trained>,
    dicts: Arc<PageDicts>,
    page_size: usize,
}

impl TrainJob {
    fn run(self) {
        let t = &self.trained;
        match self.train() {
            Ok(Some(d)) => {
                *t.dict.lock() = Some(d);
                // Asks for a checkpoint: until one is durable the pool cannot use it.
                self.dicts.note_waiting();
            }
            Ok(None) => {
                t.not_worth.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                t.trainings_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        t.training.store(false, Ordering::Release);
    }

    /// Trains on the first three quarters of the sample (whole values) and judges on the
    /// rest: the dictionary must save [`SAVING_MIN_PERCENT`] of what plain zstd:1 stores
    /// there, else its level-3 encode costs CPU for nothing (random digits gain under 1%).
    fn train(&self) -> std::result::Result<Option<ColdDictVersion>, String> {
        let s = &self.sample;
        let n_train = s.sizes.len() * 3 / 4;
        let cut: usize = s.sizes[..n_train].iter().sum();
        let bytes = dict::train(&s.data[..cut], &s.sizes[..n_train], self.config.dict_bytes)?;
        let (plain, with) = dict::compare(
            &s.data[cut..],
            self.page_size,
            &bytes,
            i32::from(self.config.level),
        );
        if with * 100 > plain * (100 - SAVING_MIN_PERCENT) {
            return Ok(None);
        }
        Ok(Some(ColdDictVersion {
            version: COLD_DICT_VERSION,
            level: self.config.level,
            bytes: bytes.into(),
        }))
    }
}
