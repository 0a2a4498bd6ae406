//! The embedded API: [`Database`], [`Tree`], [`Transaction`].

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use zipdb_storage::io::{FileStorage, Storage};
use zipdb_storage::pool::{BufferPool, PoolConfig, PoolStats};
use zipdb_storage::store::{PageStore, StoreConfig};
use zipdb_storage::{Codec, TreeId};

use crate::btree::{BTree, Cursor, VerifyReport, MAX_VALUE_LEN};
use crate::catalog::{Catalog, CatalogEntry};
use crate::error::{Error, Result};

/// Name of the data file inside the database directory.
pub const DATA_FILE: &str = "zipdb.data";

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
}

impl Default for Options {
    fn default() -> Options {
        Options {
            page_size: 16 * 1024,
            pool_bytes: 256 * 1024 * 1024,
            codec: Codec::DEFAULT,
            direct_io: false,
        }
    }
}

struct TreeShared {
    name: String,
    btree: BTree,
    dropped: AtomicBool,
}

struct CatalogState {
    next_tree_id: u32,
    trees: BTreeMap<String, Arc<TreeShared>>,
}

struct DbInner {
    store: Arc<PageStore>,
    pool: Arc<BufferPool>,
    /// Checkpoint gate: every modifying operation holds it shared; checkpoint, drop_tree and
    /// verify hold it exclusively, so they see no half-done change.
    gate: RwLock<()>,
    catalog: Mutex<CatalogState>,
    default_codec: Codec,
}

impl Drop for DbInner {
    fn drop(&mut self) {
        // Stops the pool's background writer; nothing is flushed (see `Database::close`).
        self.pool.shutdown();
    }
}

/// An open database. Cheap to clone (all clones share the database).
#[derive(Clone)]
pub struct Database {
    inner: Arc<DbInner>,
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
}

/// Space used by one tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeStats {
    pub name: String,
    pub id: TreeId,
    pub codec: Codec,
    pub pages: u64,
    /// Pages × page size.
    pub logical_bytes: u64,
    /// Bytes of the pages' on-disk images (as last written back).
    pub physical_bytes: u64,
}

/// A snapshot of the database's counters and space.
#[derive(Debug, Clone)]
pub struct Stats {
    pub page_size: usize,
    pub pool: PoolStats,
    pub store: StoreStats,
    pub file_bytes: u64,
    pub free_bytes: u64,
    pub pending_free_bytes: u64,
    pub trees: Vec<TreeStats>,
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > crate::catalog::NAME_LEN_MAX {
        return Err(Error::InvalidName(name.to_string()));
    }
    Ok(())
}

impl Database {
    /// Opens the database in directory `dir` (file `dir/zipdb.data`), creating both if missing.
    pub fn open(dir: &Path, options: Options) -> Result<Database> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Dir {
            path: dir.display().to_string(),
            source,
        })?;
        let storage = FileStorage::open(&dir.join(DATA_FILE), options.direct_io)
            .map_err(zipdb_storage::StoreError::from)?;
        Database::open_storage(Box::new(storage), options)
    }

    /// Opens a database on `storage`: creates it if the storage is empty, else opens it at its
    /// last checkpoint (the page size then comes from the file).
    pub fn open_storage(storage: Box<dyn Storage>, options: Options) -> Result<Database> {
        if options.pool_bytes == 0 {
            return Err(Error::Config("pool_bytes must be positive".into()));
        }
        let store = if storage
            .is_empty()
            .map_err(zipdb_storage::StoreError::from)?
        {
            PageStore::create(
                storage,
                StoreConfig {
                    page_size: options.page_size,
                },
            )?
        } else {
            PageStore::open(storage)?
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
                return Err(Error::CorruptCatalog(format!(
                    "tree {:?}: root page {} does not exist",
                    e.name, e.root
                )));
            }
            let btree = BTree::open(pool.clone(), e.id, e.root, e.codec);
            trees.insert(
                e.name.clone(),
                Arc::new(TreeShared {
                    name: e.name,
                    btree,
                    dropped: AtomicBool::new(false),
                }),
            );
        }
        Ok(Database {
            inner: Arc::new(DbInner {
                store,
                pool,
                gate: RwLock::new(()),
                catalog: Mutex::new(CatalogState {
                    next_tree_id: catalog.next_tree_id,
                    trees,
                }),
                default_codec: options.codec,
            }),
        })
    }

    pub fn page_size(&self) -> usize {
        self.inner.store.page_size()
    }

    /// The buffer pool (for benchmarks and diagnostics).
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.inner.pool
    }

    /// Creates a tree; `codec` defaults to [`Options::codec`]. Durable at the next checkpoint.
    pub fn create_tree(&self, name: &str, codec: Option<Codec>) -> Result<Tree> {
        check_name(name)?;
        let _gate = self.inner.gate.read();
        let mut cat = self.inner.catalog.lock();
        if cat.trees.contains_key(name) {
            return Err(Error::TreeExists(name.to_string()));
        }
        let id = cat.next_tree_id;
        let next = id
            .checked_add(1)
            .ok_or_else(|| Error::Config("tree ids exhausted".into()))?;
        let btree = BTree::create(
            self.inner.pool.clone(),
            TreeId(id),
            codec.unwrap_or(self.inner.default_codec),
        )?;
        cat.next_tree_id = next;
        let shared = Arc::new(TreeShared {
            name: name.to_string(),
            btree,
            dropped: AtomicBool::new(false),
        });
        cat.trees.insert(name.to_string(), shared.clone());
        Ok(Tree {
            db: self.inner.clone(),
            t: shared,
        })
    }

    /// A handle to an existing tree.
    pub fn open_tree(&self, name: &str) -> Result<Tree> {
        let cat = self.inner.catalog.lock();
        let t = cat
            .trees
            .get(name)
            .ok_or_else(|| Error::NoSuchTree(name.to_string()))?;
        Ok(Tree {
            db: self.inner.clone(),
            t: t.clone(),
        })
    }

    /// Removes a tree and frees all its pages. Waits for in-flight writes; afterwards every
    /// handle of the tree returns [`Error::NoSuchTree`]. Readers must not race with a drop.
    pub fn drop_tree(&self, name: &str) -> Result<()> {
        let _gate = self.inner.gate.write();
        let t = {
            let mut cat = self.inner.catalog.lock();
            cat.trees
                .remove(name)
                .ok_or_else(|| Error::NoSuchTree(name.to_string()))?
        };
        t.dropped.store(true, Ordering::Release);
        t.btree.free_all()
    }

    /// Names of all trees, sorted.
    pub fn tree_names(&self) -> Vec<String> {
        self.inner.catalog.lock().trees.keys().cloned().collect()
    }

    /// Starts a transaction (see [`Transaction`] for what it does and does not guarantee).
    pub fn begin(&self) -> Transaction {
        Transaction {
            db: self.inner.clone(),
            writes: BTreeMap::new(),
        }
    }

    /// Writes back every dirty page and makes the current state durable, with the catalog.
    /// Holds the checkpoint gate exclusively, so the state is consistent: every write that
    /// returned before the call is in it, none that started after.
    pub fn checkpoint(&self) -> Result<()> {
        let _gate = self.inner.gate.write();
        self.inner.pool.flush_all()?;
        let bytes = self.catalog().encode();
        self.inner.store.checkpoint(&bytes)?;
        Ok(())
    }

    fn catalog(&self) -> Catalog {
        let cat = self.inner.catalog.lock();
        Catalog {
            next_tree_id: cat.next_tree_id,
            entries: cat
                .trees
                .values()
                .map(|t| CatalogEntry {
                    name: t.name.clone(),
                    id: t.btree.tree_id(),
                    root: t.btree.root(),
                    codec: t.btree.codec(),
                })
                .collect(),
        }
    }

    /// Flushes and checkpoints. Dropping a `Database` without `close` (or `checkpoint`) loses
    /// everything since the last checkpoint: there is no WAL yet.
    pub fn close(self) -> Result<()> {
        self.checkpoint()
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
                        pages: s.pages,
                        logical_bytes: s.logical_bytes,
                        physical_bytes: s.physical_bytes,
                    }
                })
                .collect()
        };
        Stats {
            page_size: self.page_size(),
            pool: self.inner.pool.stats(),
            store,
            file_bytes: space.file_bytes,
            free_bytes: space.free_bytes,
            pending_free_bytes: space.pending_free_bytes,
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
        self.inner.store.verify().map_err(Error::StoreVerify)?;
        Ok(out)
    }
}

/// A handle to one tree. Cheap to clone. Writes hold the database's checkpoint gate shared.
#[derive(Clone)]
pub struct Tree {
    db: Arc<DbInner>,
    t: Arc<TreeShared>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("name", &self.t.name)
            .field("btree", &self.t.btree)
            .finish()
    }
}

impl Tree {
    pub fn name(&self) -> &str {
        &self.t.name
    }
    pub fn id(&self) -> TreeId {
        self.t.btree.tree_id()
    }
    pub fn codec(&self) -> Codec {
        self.t.btree.codec()
    }
    pub fn max_key_len(&self) -> usize {
        self.t.btree.max_key_len()
    }
    /// The underlying B+tree (no gate, no dropped check).
    pub fn btree(&self) -> &BTree {
        &self.t.btree
    }

    fn alive(&self) -> Result<&BTree> {
        if self.t.dropped.load(Ordering::Acquire) {
            return Err(Error::NoSuchTree(self.t.name.clone()));
        }
        Ok(&self.t.btree)
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.alive()?.get(key)
    }

    /// See [`BTree::get_with`]: no allocation; `f` runs after the latches are released.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.alive()?.get_with(key, f)
    }

    /// Inserts; `false` if the key exists.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let _gate = self.db.gate.read();
        self.alive()?.insert(key, value)
    }

    /// Inserts or replaces; `true` if a value was replaced.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let _gate = self.db.gate.read();
        self.alive()?.upsert(key, value)
    }

    /// Deletes; `true` if the key existed.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        let _gate = self.db.gate.read();
        self.alive()?.delete(key)
    }

    /// Forward cursor over `range` (`..`, or a `(Bound<&[u8]>, Bound<&[u8]>)` pair).
    pub fn range<R: RangeBounds<[u8]>>(&self, range: R) -> Result<Cursor<'_>> {
        Ok(self.alive()?.range(range))
    }

    /// Reverse cursor over `range`.
    pub fn range_rev<R: RangeBounds<[u8]>>(&self, range: R) -> Result<Cursor<'_>> {
        Ok(self.alive()?.range_rev(range))
    }

    /// Checks the tree's structure (see [`BTree::verify`]); blocks writers meanwhile.
    pub fn verify(&self) -> Result<VerifyReport> {
        let _gate = self.db.gate.write();
        self.alive()?.verify()
    }
}

type WriteSet = BTreeMap<Vec<u8>, Option<Vec<u8>>>;
type OverlayIter<'a> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)> + 'a>;

/// A transaction: buffers its writes (per tree, in key order); its reads see its own writes
/// laid over the trees; `commit` applies them, `rollback` (or dropping it) discards them.
///
/// **No isolation yet** (it comes with the WAL/MVCC issue): reads see other transactions'
/// committed writes as soon as they are applied, concurrent commits interleave per key, and
/// nothing prevents lost updates. A commit holds the checkpoint gate, so a checkpoint never
/// contains half a commit; but without a WAL a crash loses everything since the last
/// checkpoint, and an error in the middle of `commit` leaves the writes before it applied.
pub struct Transaction {
    db: Arc<DbInner>,
    writes: BTreeMap<TreeId, (Tree, WriteSet)>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("trees", &self.writes.len())
            .finish()
    }
}

impl Transaction {
    fn set(&mut self, tree: &Tree) -> &mut WriteSet {
        &mut self
            .writes
            .entry(tree.id())
            .or_insert_with(|| (tree.clone(), BTreeMap::new()))
            .1
    }

    fn overlay(&self, tree: &Tree) -> Option<&WriteSet> {
        self.writes
            .get(&tree.id())
            .filter(|(t, _)| Arc::ptr_eq(&t.t, &tree.t))
            .map(|(_, w)| w)
    }

    pub fn get(&self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(w) = self.overlay(tree).and_then(|w| w.get(key)) {
            return Ok(w.clone());
        }
        tree.get(key)
    }

    pub fn put(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<()> {
        tree.alive()?;
        if key.len() > tree.max_key_len() {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: tree.max_key_len(),
            });
        }
        if value.len() > MAX_VALUE_LEN {
            return Err(Error::ValueTooLarge {
                len: value.len(),
                max: MAX_VALUE_LEN,
            });
        }
        self.set(tree).insert(key.to_vec(), Some(value.to_vec()));
        Ok(())
    }

    pub fn delete(&mut self, tree: &Tree, key: &[u8]) -> Result<()> {
        tree.alive()?;
        if key.len() <= tree.max_key_len() {
            self.set(tree).insert(key.to_vec(), None);
        }
        Ok(())
    }

    /// Forward scan of `range` with this transaction's writes laid over the tree.
    pub fn scan<'a, R: RangeBounds<[u8]>>(
        &'a self,
        tree: &'a Tree,
        range: R,
    ) -> Result<TxnScan<'a>> {
        self.scan_dir(tree, range.start_bound(), range.end_bound(), false)
    }

    /// Reverse scan of `range` with this transaction's writes laid over the tree.
    pub fn scan_rev<'a, R: RangeBounds<[u8]>>(
        &'a self,
        tree: &'a Tree,
        range: R,
    ) -> Result<TxnScan<'a>> {
        self.scan_dir(tree, range.start_bound(), range.end_bound(), true)
    }

    fn scan_dir<'a>(
        &'a self,
        tree: &'a Tree,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<TxnScan<'a>> {
        let cursor = tree.alive()?.range_bounds(lo, hi, reverse);
        let overlay: OverlayIter<'a> = match self.overlay(tree) {
            None => Box::new(std::iter::empty()),
            Some(w) => {
                let empty = match (lo, hi) {
                    (Bound::Included(a), Bound::Included(b)) => a > b,
                    (
                        Bound::Included(a) | Bound::Excluded(a),
                        Bound::Excluded(b) | Bound::Included(b),
                    ) => a >= b,
                    _ => false,
                };
                if empty {
                    Box::new(std::iter::empty())
                } else if reverse {
                    Box::new(w.range::<[u8], _>((lo, hi)).rev())
                } else {
                    Box::new(w.range::<[u8], _>((lo, hi)))
                }
            }
        };
        Ok(TxnScan {
            cursor: cursor.peekable(),
            overlay: overlay.peekable(),
            reverse,
        })
    }

    /// Applies the buffered writes (upserts and deletes), tree by tree in key order.
    pub fn commit(self) -> Result<()> {
        let _gate = self.db.gate.read();
        for (tree, writes) in self.writes.values() {
            let bt = tree.alive()?;
            for (k, v) in writes {
                match v {
                    Some(v) => {
                        bt.upsert(k, v)?;
                    }
                    None => {
                        bt.delete(k)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Discards the buffered writes.
    pub fn rollback(self) {}
}

/// A transaction's scan: the tree's entries merged with the transaction's own writes.
pub struct TxnScan<'a> {
    cursor: std::iter::Peekable<Cursor<'a>>,
    overlay: std::iter::Peekable<OverlayIter<'a>>,
    reverse: bool,
}

impl Iterator for TxnScan<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let from_tree = match (self.cursor.peek(), self.overlay.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => true,
                (Some(Ok(_)), None) => true,
                (None, Some(_)) => false,
                (Some(Ok((tk, _))), Some((ok, _))) => {
                    let ord = tk.as_slice().cmp(ok.as_slice());
                    if ord == std::cmp::Ordering::Equal {
                        // The transaction's write shadows the tree's entry.
                        self.cursor.next();
                        false
                    } else {
                        (ord == std::cmp::Ordering::Less) != self.reverse
                    }
                }
            };
            if from_tree {
                return self.cursor.next();
            }
            let (k, v) = self.overlay.next()?;
            if let Some(v) = v {
                return Some(Ok((k.clone(), v.clone())));
            }
        }
    }
}
