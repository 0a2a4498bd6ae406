//! Transactions: the write set, savepoints, the commit path (one redo record, or a checkpoint
//! for a commit too large for the log), and the scans that lay a transaction's own writes
//! over its snapshot.

use super::*;
use crate::error::TxnError;

mod probe;
pub use self::probe::InsertProbe;

pub(super) fn lock_row(db: &DbInner, txn: TxnId, tree: TreeId, key: &[u8]) -> Result<bool> {
    match db.locks.lock(txn, tree, key, db.options.lock_wait_timeout) {
        Ok(crate::lock::Acquired::New) => Ok(true),
        Ok(crate::lock::Acquired::AlreadyHeld) => Ok(false),
        Err(LockError::Deadlock { .. }) => Err(Error::Txn(TxnError::Deadlock)),
        Err(LockError::Timeout { waited, .. }) => {
            Err(Error::Txn(TxnError::LockWaitTimeout { waited }))
        }
    }
}

/// One tree's writes in a commit being applied: the tree, and its writes in strictly
/// increasing key order (value `None`: delete).
pub(super) type CommitOp<'a> = (Arc<TreeShared>, Vec<crate::apply::Write<'a>>);

/// Logs and applies a commit whose rows the caller has locked: before-images for running
/// snapshots, then the trees, then publication and the flush policy's wait. For a commit of
/// one write (a [`Tree`]'s own), whether it replaced or deleted an existing row.
pub(super) fn apply_commit(
    db: &DbInner,
    payload: &[u8],
    ops: &[CommitOp<'_>],
    policy: FlushPolicy,
) -> Result<bool> {
    let r = db.logged(payload, policy, || apply_ops(db, ops));
    db.mvcc.collect(64);
    // Return (and release the row locks) only once the commit is visible: the caller's next
    // transaction must see it, and so must the next holder of its locks. Waiting after the
    // flush rather than before it lets earlier commits finish applying meanwhile.
    let (ts, existed) = r?;
    db.mvcc.wait_published(ts);
    Ok(existed)
}

/// Applies a commit's writes to the trees (with before-images for running snapshots) and
/// marks it applied. Returns its timestamp and whether a single write found its row.
fn apply_ops(db: &DbInner, ops: &[CommitOp<'_>]) -> Result<(Ts, bool)> {
    let t = db.mvcc.begin_commit();
    let (ts, keep) = (t.ts, t.keep_versions);
    let mut existed = false;
    let applied = (|| {
        let _gate = db.gate.read();
        for (tree, writes) in ops {
            // A drop takes the gate exclusively, so this holds for the whole tree.
            if tree.dropped.load(Ordering::Acquire) {
                // Dropped after the write was buffered: the drop wins, as in replay.
                continue;
            }
            let bt = &tree.btree;
            tree.applies.begun.fetch_add(1, Ordering::SeqCst);
            let r = (|| {
                if keep {
                    crate::apply::record_before_images(&db.mvcc, bt, writes, ts)?;
                }
                crate::apply::apply_writes(bt, writes)
            })();
            tree.applies.ended.fetch_add(1, Ordering::SeqCst);
            existed |= r?.unwrap_or(false);
        }
        Ok(())
    })();
    // Marked applied (and so published, once every earlier commit is) before the flush
    // policy's wait, as InnoDB makes a commit visible before its log flush; also after an
    // error: the database is then fail-stopped, and later commits must not wait for this one
    // forever.
    let ts = db.mvcc.mark_applied(t);
    applied.map(|()| (ts, existed))
}

/// A commit whose redo record would take more than `1 / LARGE_COMMIT_WAL_SHARE` of the WAL
/// is made durable by a checkpoint instead of a log record ([`apply_commit_checkpointed`]).
/// Half the log starts a checkpoint, so a quarter still leaves room for the commits of other
/// sessions meanwhile; a record larger than the log could not be written at all.
const LARGE_COMMIT_WAL_SHARE: u64 = 4;

/// Commits `ops` without a redo record: the trees take the writes while no checkpoint can
/// start, and then a checkpoint makes them durable. The data file is a snapshot as of its last
/// checkpoint (pages are written out of place), so a crash before that checkpoint's superblock
/// reopens the database without any of this commit, and a crash after it with all of it: the
/// checkpoint is the commit record. A transaction's writes are therefore bounded by memory,
/// not by the WAL (InnoDB's undo log has no such bound either).
///
/// Replay must never write over these values with an older record. Records appended later
/// touch none of these keys (their rows are locked until this returns), so the one condition is
/// that every record appended before the apply is wholly in the checkpoint, i.e. that its redo
/// LSN is not below the WAL's end at the start. Changes still applying from before then are
/// waited for first, without `ckpt_lock`: one may be waiting for log space, which only a
/// checkpoint frees.
fn apply_commit_checkpointed(db: &DbInner, ops: &[CommitOp<'_>]) -> Result<()> {
    db.check_writable()?;
    let barrier = db.wal.end_lsn().0;
    loop {
        let oldest = db.in_flight.lock().first_key_value().map(|(&b, _)| b);
        match oldest {
            Some(b) if b < barrier => {
                db.check_writable()?;
                db.wake_checkpointer();
                std::thread::sleep(Duration::from_millis(1));
            }
            _ => break,
        }
    }
    let ts = {
        let _one = db.ckpt_lock.lock();
        db.check_writable()?;
        // Any change that registers from here on has a bound at or after `barrier`, so the
        // checkpoint below takes a redo LSN at or after it.
        let (ts, _) = apply_ops(db, ops).map_err(|e| db.fail_stop(e))?;
        // Already fail-stopped on error: the trees then hold a commit nothing logged, and
        // reopening returns to the last checkpoint, before it.
        db.checkpoint_locked()?;
        ts
    };
    db.large_commits.fetch_add(1, Ordering::Relaxed);
    db.mvcc.collect(64);
    db.mvcc.wait_published(ts);
    Ok(())
}

use super::writeset::WriteSet;

/// The row locks a transaction holds, keys back to back in one buffer (one allocation per
/// lock fewer than a list of owned keys: a bulk statement takes one per row).
#[derive(Default)]
struct Held {
    keys: Vec<u8>,
    /// Per lock: its tree and where its key ends in `keys`.
    ends: Vec<(TreeId, usize)>,
}

impl Held {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn push(&mut self, tree: TreeId, key: &[u8]) {
        self.keys.extend_from_slice(key);
        self.ends.push((tree, self.keys.len()));
    }

    fn get(&self, i: usize) -> (TreeId, &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1].1 };
        let (tree, end) = self.ends[i];
        (tree, &self.keys[start..end])
    }

    fn iter(&self) -> impl Iterator<Item = (TreeId, &[u8])> + '_ {
        (0..self.ends.len()).map(|i| self.get(i))
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.ends.clear();
    }
}
/// A write made while a savepoint was open: tree, key, and the write-set entry it replaced.
type UndoEntry = (TreeId, Vec<u8>, Option<Option<Vec<u8>>>);
type OverlayIter<'a> = Box<dyn Iterator<Item = (&'a [u8], &'a Option<Vec<u8>>)> + 'a>;

/// A transaction. Its writes lock their rows at once (waiting for other transactions, with
/// deadlock detection and a timeout) and are buffered until `commit`; its reads see its own
/// writes laid over a snapshot (see the module docs for the isolation levels). `rollback`, or
/// dropping the transaction, discards the writes and releases the locks.
///
/// After an error from a write (deadlock, lock wait timeout, write conflict) the transaction
/// should be rolled back, as MySQL clients do; its earlier writes are still buffered.
pub struct Transaction {
    db: Arc<DbInner>,
    id: TxnId,
    isolation: IsolationLevel,
    /// Repeatable read: the snapshot taken at begin.
    snapshot: Option<Ts>,
    /// Read committed: a snapshot held for one statement
    /// ([`Transaction::hold_statement_snapshot`]).
    statement: Option<Ts>,
    /// Repeatable read: whether writing a row changed since the snapshot fails.
    write_conflicts: bool,
    flush: FlushPolicy,
    writes: BTreeMap<TreeId, (Tree, WriteSet)>,
    locked: Held,
    /// Index in `locked` of the row the last successful `lock` newly locked (and checked for
    /// write conflicts): a second lock of it (`get_for_update`, then `put` of the same row, as
    /// every INSERT does) needs neither the lock manager nor the check again.
    last_locked: Option<usize>,
    /// While a savepoint is open: each write's key and the write-set entry it replaced.
    undo: Vec<UndoEntry>,
    savepoints_open: usize,
    /// About how much memory `writes` and `undo` hold ([`Transaction::pending_bytes`]).
    pending_bytes: u64,
}

/// Memory of one write-set or undo entry beyond its key and value bytes: the entry in the
/// write set's run or map node (56 bytes, short keys inside it), the value's allocation (16
/// bytes of allocator header), a long key's allocation, an undo entry's key, and rounding.
/// A 1M-row INSERT … SELECT of sysbench rows raised the server's RSS by about 1 KB per row in
/// all (write set, index entries, the selected rows; measured with the earlier map of owned
/// keys).
const ENTRY_OVERHEAD: u64 = 96;

fn entry_bytes(key: &[u8], value: Option<&Option<Vec<u8>>>) -> u64 {
    ENTRY_OVERHEAD + key.len() as u64 + value.and_then(|v| v.as_ref()).map_or(0, |v| v.len() as u64)
}

/// A point in a transaction's writes to roll back to (a SQL statement's start, so that a
/// failed statement undoes only its own writes). Locks taken since are kept, as InnoDB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Savepoint(usize);

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.id)
            .field("isolation", &self.isolation)
            .field("trees", &self.writes.len())
            .field("locks", &self.locked.len())
            .finish()
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A snapshot taken for one read, or the transaction's own.
struct ReadView<'a> {
    db: &'a DbInner,
    ts: Ts,
    owned: bool,
}

impl Drop for ReadView<'_> {
    fn drop(&mut self) {
        if self.owned {
            self.db.mvcc.end_snapshot(self.ts);
        }
    }
}

impl Transaction {
    pub(super) fn new(db: Arc<DbInner>, isolation: IsolationLevel) -> Transaction {
        let snapshot = match isolation {
            IsolationLevel::RepeatableRead => Some(db.mvcc.begin_snapshot()),
            IsolationLevel::ReadCommitted => None,
        };
        Transaction {
            id: TxnId(db.next_txn.fetch_add(1, Ordering::Relaxed)),
            isolation,
            snapshot,
            statement: None,
            write_conflicts: true,
            flush: db.options.flush_policy,
            writes: BTreeMap::new(),
            locked: Held::default(),
            last_locked: None,
            undo: Vec::new(),
            savepoints_open: 0,
            pending_bytes: 0,
            db,
        }
    }

    pub fn id(&self) -> TxnId {
        self.id
    }

    pub fn isolation(&self) -> IsolationLevel {
        self.isolation
    }

    /// Under repeatable read, chooses what writing (or locking) a row that another
    /// transaction changed after this one's snapshot does: fail with
    /// [`TxnError::WriteConflict`] (`true`, the default: first updater wins, so no update is
    /// lost), or lock the row and go on, as InnoDB does (`false`). With `false` the write
    /// acts on the newest committed version: [`Transaction::get_for_update`] returns it, and
    /// a caller that computes the new value from what it returns loses no update, while one
    /// that computes it from a snapshot read can. Plain reads keep reading the snapshot
    /// either way. MariaDB calls this `innodb_snapshot_isolation` (OFF by default in 10.11).
    pub fn set_write_conflicts(&mut self, on: bool) {
        self.write_conflicts = on;
        // A row locked without the check must get it at its next lock.
        self.last_locked = None;
    }

    /// When `commit` returns (see [`Options::flush_policy`]).
    pub fn set_flush_policy(&mut self, policy: FlushPolicy) {
        self.flush = policy;
    }

    fn finish(&mut self) {
        if !self.locked.is_empty() {
            self.db.locks.release_each(self.id, self.locked.iter());
            self.locked.clear();
        }
        self.last_locked = None;
        if let Some(s) = self.snapshot.take() {
            self.db.mvcc.end_snapshot(s);
        }
        self.release_statement_snapshot();
        self.writes.clear();
        self.undo.clear();
        self.savepoints_open = 0;
        self.pending_bytes = 0;
    }

    fn view(&self) -> ReadView<'_> {
        match self.snapshot.or(self.statement) {
            Some(ts) => ReadView {
                db: &self.db,
                ts,
                owned: false,
            },
            None => ReadView {
                db: &self.db,
                ts: self.db.mvcc.begin_snapshot(),
                owned: true,
            },
        }
    }

    fn set(&mut self, tree: &Tree) -> &mut WriteSet {
        &mut self
            .writes
            .entry(tree.id())
            .or_insert_with(|| (tree.clone(), WriteSet::new()))
            .1
    }

    fn overlay(&self, tree: &Tree) -> Option<&WriteSet> {
        self.writes
            .get(&tree.id())
            .filter(|(t, _)| Arc::ptr_eq(&t.t, &tree.t))
            .map(|(_, w)| w)
    }

    /// The value of `key` as this transaction sees it.
    pub fn get(&self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(w) = self.overlay(tree).and_then(|w| w.get(key)) {
            return Ok(w.clone());
        }
        let bt = tree.alive()?;
        let view = self.view();
        let v = bt.get(key)?;
        Ok(match self.db.mvcc.visible(bt.tree_id(), key, view.ts) {
            Visible::Tree => v,
            Visible::Old(old) => old,
        })
    }

    /// Locks `key` as a write would, then reads its newest committed value (a *locking read*,
    /// `SELECT … FOR UPDATE`). Under repeatable read, fails with [`TxnError::WriteConflict`] if
    /// the row changed after the snapshot.
    pub fn get_for_update(&mut self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.lock(tree, key)?;
        if let Some(w) = self.overlay(tree).and_then(|w| w.get(key)) {
            return Ok(w.clone());
        }
        tree.alive()?.get(key)
    }

    /// Locks `key` as a write would, and says whether what this transaction's snapshot shows
    /// of it is still its newest committed state, so that a caller that found the row with a
    /// scan of this transaction need not read it again (an UPDATE or DELETE over a million
    /// rows otherwise descends and decodes each one twice). `false` under read committed (no
    /// snapshot), when a commit after the snapshot changed the row, or when this transaction
    /// has written it (the scan may have seen an earlier write): then read it with
    /// [`Transaction::get_for_update`]. Under repeatable read with write conflicts on, a
    /// changed row fails here with [`TxnError::WriteConflict`], as its `get_for_update` would.
    pub fn lock_unchanged(&mut self, tree: &Tree, key: &[u8]) -> Result<bool> {
        self.lock(tree, key)?;
        if self.overlay(tree).is_some_and(|w| w.get(key).is_some()) {
            return Ok(false);
        }
        // The row is locked, so no commit of it is in flight, and the running snapshot keeps
        // the before-images `changed_since` reads.
        Ok(self
            .snapshot
            .or(self.statement)
            .is_some_and(|s| !self.db.mvcc.changed_since(tree.id(), key, s)))
    }

    /// Under read committed, makes every read until [`Transaction::release_statement_snapshot`]
    /// see one snapshot, taken now (a statement's consistent read, as InnoDB's read view per
    /// statement), so that [`Transaction::lock_unchanged`] can tell whether a row the
    /// statement read is still current. Repeatable read has its snapshot already: no-op.
    /// While held, commits keep before-images for it, as for any reader.
    pub fn hold_statement_snapshot(&mut self) {
        if self.snapshot.is_some() {
            return;
        }
        self.release_statement_snapshot();
        self.statement = Some(self.db.mvcc.begin_snapshot());
    }

    /// Ends the snapshot [`Transaction::hold_statement_snapshot`] took (no-op without one).
    pub fn release_statement_snapshot(&mut self) {
        if let Some(s) = self.statement.take() {
            self.db.mvcc.end_snapshot(s);
        }
    }

    fn lock(&mut self, tree: &Tree, key: &[u8]) -> Result<()> {
        tree.alive()?;
        self.db.check_writable()?;
        // Held and checked since: no other commit can have changed the row meanwhile.
        if let Some((t, k)) = self.last_locked.map(|i| self.locked.get(i)) {
            if t == tree.id() && k == key {
                return Ok(());
            }
        }
        self.last_locked = None;
        let new = lock_row(&self.db, self.id, tree.id(), key)?;
        if new {
            self.locked.push(tree.id(), key);
        }
        // Checked also when the lock was already held: a write retried after a conflict must
        // fail again, or the retry would commit a lost update.
        if let Some(s) = self.snapshot.filter(|_| self.write_conflicts) {
            if self.db.mvcc.changed_since(tree.id(), key, s) {
                return Err(Error::Txn(TxnError::WriteConflict {
                    tree: tree.name().to_string(),
                }));
            }
        }
        if new {
            self.last_locked = Some(self.locked.len() - 1);
        }
        Ok(())
    }

    pub fn put(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<()> {
        tree.check_sizes(key, value)?;
        self.lock(tree, key)?;
        self.record(tree, key, Some(value.to_vec()));
        Ok(())
    }

    /// Writes `key` without locking it, because a lock this transaction holds already
    /// covers it: `cover` (a tree and a key) names that lock. For a secondary index entry
    /// that ends with its row's primary key: every writer of the entry writes the row too,
    /// so it must hold the row's lock first, and the row's write-conflict check covers the
    /// entry's (one commit changes both). This halves the lock work of a row with one index
    /// (the lock table's map and the list of held locks were a quarter of a bulk INSERT).
    /// Panics in debug builds if `cover` is not locked by this transaction.
    pub fn put_covered(
        &mut self,
        tree: &Tree,
        key: &[u8],
        value: &[u8],
        cover: (&Tree, &[u8]),
    ) -> Result<()> {
        tree.check_sizes(key, value)?;
        self.check_covered(tree, cover)?;
        self.record(tree, key, Some(value.to_vec()));
        Ok(())
    }

    /// [`Transaction::delete`] of a key covered by a lock held (see
    /// [`Transaction::put_covered`]).
    pub fn delete_covered(&mut self, tree: &Tree, key: &[u8], cover: (&Tree, &[u8])) -> Result<()> {
        if key.len() > tree.max_key_len() {
            return Ok(());
        }
        self.check_covered(tree, cover)?;
        self.record(tree, key, None);
        Ok(())
    }

    fn check_covered(&self, tree: &Tree, cover: (&Tree, &[u8])) -> Result<()> {
        tree.alive()?;
        self.db.check_writable()?;
        debug_assert_eq!(
            self.db.locks.holder(cover.0.id(), cover.1),
            Some(self.id),
            "a covered write's covering row is not locked by its transaction"
        );
        Ok(())
    }

    fn record(&mut self, tree: &Tree, key: &[u8], value: Option<Vec<u8>>) {
        let added = entry_bytes(key, Some(&value));
        let prev = self.set(tree).insert(key, value);
        self.pending_bytes += added;
        if self.savepoints_open > 0 {
            // The replaced entry moves to the undo log (its bytes stay held).
            self.pending_bytes += key.len() as u64 + ENTRY_OVERHEAD;
            self.undo.push((tree.id(), key.to_vec(), prev));
        } else if let Some(old) = prev {
            self.pending_bytes -= entry_bytes(key, Some(&old));
        }
    }

    /// About how many bytes of memory this transaction's buffered writes hold (and the undo
    /// entries of its open savepoints). Writes stay in memory until commit, so a caller that
    /// bounds a session's memory counts these.
    pub fn pending_bytes(&self) -> u64 {
        self.pending_bytes
    }

    /// Opens a savepoint: [`Transaction::rollback_to`] undoes the writes made after it.
    pub fn savepoint(&mut self) -> Savepoint {
        self.savepoints_open += 1;
        Savepoint(self.undo.len())
    }

    /// Undoes the writes made since `sp` and closes it (and any opened after it).
    pub fn rollback_to(&mut self, sp: Savepoint) {
        assert!(self.savepoints_open > 0, "no savepoint is open");
        assert!(sp.0 <= self.undo.len(), "savepoint already closed");
        while self.undo.len() > sp.0 {
            let (tree, key, prev) = self.undo.pop().expect("checked length");
            let set = &mut self
                .writes
                .get_mut(&tree)
                .expect("an undone write has its tree's write set")
                .1;
            // The undo entry goes, and the write it undoes gives way to what it replaced.
            let mut freed = key.len() as u64 + ENTRY_OVERHEAD;
            let undone = match prev {
                Some(v) => set.insert(&key, v),
                None => set.remove(&key),
            };
            freed += entry_bytes(&key, undone.as_ref());
            self.pending_bytes = self.pending_bytes.saturating_sub(freed);
        }
        self.savepoints_open -= 1;
        if self.savepoints_open == 0 {
            self.close_undo();
        }
    }

    /// Drops the undo log once no savepoint is open, with what its entries held: the entries
    /// they would restore were replaced in the write set.
    fn close_undo(&mut self) {
        for (_, key, prev) in self.undo.drain(..) {
            let held = key.len() as u64
                + ENTRY_OVERHEAD
                + prev.as_ref().map_or(0, |p| entry_bytes(&key, Some(p)));
            self.pending_bytes = self.pending_bytes.saturating_sub(held);
        }
    }

    /// Keeps the writes made since `sp` and closes it.
    pub fn release(&mut self, sp: Savepoint) {
        assert!(self.savepoints_open > 0, "no savepoint is open");
        debug_assert!(sp.0 <= self.undo.len());
        self.savepoints_open -= 1;
        if self.savepoints_open == 0 {
            self.close_undo();
        }
    }

    /// This transaction's own pending write of `key`: `Some(None)` a delete, `None` no write.
    pub fn written(&self, tree: &Tree, key: &[u8]) -> Option<Option<&[u8]>> {
        self.overlay(tree)
            .and_then(|w| w.get(key))
            .map(|v| v.as_deref())
    }

    /// This transaction's own pending writes in `[lo, hi)` of `tree` (`None`: a delete).
    pub fn written_range<'a>(
        &'a self,
        tree: &Tree,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Vec<(&'a [u8], Option<&'a [u8]>)> {
        match self.overlay(tree) {
            Some(w) if valid_range(lo, hi) => {
                w.range(lo, hi).map(|(k, v)| (k, v.as_deref())).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Whether this transaction has buffered any write.
    pub fn has_writes(&self) -> bool {
        self.writes.values().any(|(_, w)| !w.is_empty())
    }

    pub fn delete(&mut self, tree: &Tree, key: &[u8]) -> Result<()> {
        if key.len() > tree.max_key_len() {
            return Ok(());
        }
        self.lock(tree, key)?;
        self.record(tree, key, None);
        Ok(())
    }

    /// Forward scan of `range` with this transaction's writes laid over its snapshot.
    pub fn scan<'a, R: RangeBounds<[u8]>>(
        &'a self,
        tree: &'a Tree,
        range: R,
    ) -> Result<TxnScan<'a>> {
        self.scan_dir(tree, range.start_bound(), range.end_bound(), false)
    }

    /// Reverse scan of `range` with this transaction's writes laid over its snapshot.
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
        let bt = tree.alive()?;
        let cursor = bt.range_bounds(lo, hi, reverse);
        let empty = !valid_range(lo, hi);
        let overlay: OverlayIter<'a> = match self.overlay(tree) {
            Some(w) if !empty => {
                if reverse {
                    Box::new(w.range(lo, hi).rev())
                } else {
                    Box::new(w.range(lo, hi))
                }
            }
            _ => Box::new(std::iter::empty()),
        };
        let view = self.view();
        let snap = SnapshotScan {
            mvcc: &self.db.mvcc,
            tree: bt.tree_id(),
            cursor,
            lo: own(lo),
            hi: own(hi),
            reverse,
            last: None,
            ts: view.ts,
            _view: view,
            empty,
            versions: None,
            looked_at: None,
        };
        Ok(TxnScan {
            snap,
            ahead: Ahead::Nothing,
            ahead_key: Vec::new(),
            ahead_value: Vec::new(),
            overlay: overlay.peekable(),
            reverse,
        })
    }

    /// Logs and applies the buffered writes, then returns as the flush policy says. On an
    /// I/O error the database fail-stops and the outcome of this commit is unknown until
    /// restart (it is durable only if its WAL record reached the disk).
    pub fn commit(mut self) -> Result<()> {
        let r = self.commit_inner();
        self.finish();
        r
    }

    fn commit_inner(&mut self) -> Result<()> {
        if self.log_bytes() > self.db.wal.capacity() / LARGE_COMMIT_WAL_SHARE {
            return self.commit_large();
        }
        let mut enc = CommitEncoder::new();
        let mut ops = Vec::with_capacity(self.writes.len());
        for (tree, writes) in self.writes.values() {
            tree.alive()?;
            if writes.is_empty() {
                continue;
            }
            let mut w = Vec::with_capacity(writes.len());
            for (k, v) in writes.iter() {
                enc.op(tree.id(), k, v.as_deref());
                w.push((k, v.as_deref()));
            }
            ops.push((tree.t.clone(), w));
        }
        if enc.is_empty() {
            return Ok(());
        }
        // Every read and conflict check of this transaction is behind it (its rows are
        // locked), so its snapshot ends here: alone, it would make the commit record
        // before-images for a reader that is itself.
        if let Some(s) = self.snapshot.take() {
            self.db.mvcc.end_snapshot(s);
        }
        if let Some(s) = self.statement.take() {
            self.db.mvcc.end_snapshot(s);
        }
        let payload = enc.finish();
        apply_commit(&self.db, &payload, &ops, self.flush).map(drop)
    }

    /// The size of this transaction's commit record, from its write sets (the same sum as
    /// `CommitEncoder` writes: a header, then per write the tree, op, lengths, key, value).
    fn log_bytes(&self) -> u64 {
        let mut n = 5u64;
        for (_, writes) in self.writes.values() {
            for (k, v) in writes.iter() {
                n += 4 + 1 + 2 + k.len() as u64 + v.as_ref().map_or(0, |v| 4 + v.len() as u64);
            }
        }
        n
    }

    /// Commits a transaction too large for one WAL record ([`apply_commit_checkpointed`]).
    fn commit_large(&mut self) -> Result<()> {
        let mut ops = Vec::with_capacity(self.writes.len());
        for (tree, writes) in self.writes.values() {
            tree.alive()?;
            if writes.is_empty() {
                continue;
            }
            let w = writes.iter().map(|(k, v)| (k, v.as_deref())).collect();
            ops.push((tree.t.clone(), w));
        }
        if let Some(s) = self.snapshot.take() {
            self.db.mvcc.end_snapshot(s);
        }
        if let Some(s) = self.statement.take() {
            self.db.mvcc.end_snapshot(s);
        }
        apply_commit_checkpointed(&self.db, &ops)
    }

    /// Discards the buffered writes and releases the locks.
    pub fn rollback(mut self) {
        self.finish();
    }
}

fn own(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The tree's entries as a snapshot sees them: newer values replaced by before-images, and
/// rows deleted since the snapshot put back.
struct SnapshotScan<'a> {
    mvcc: &'a Mvcc,
    tree: TreeId,
    cursor: Cursor<'a>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    reverse: bool,
    /// Last key returned (or skipped).
    last: Option<Vec<u8>>,
    ts: Ts,
    _view: ReadView<'a>,
    empty: bool,
    /// The tree's before-images once it has any, held so that rows do not each look them up
    /// (a lock, a hash and a reference count; 7% of a full scan's time).
    versions: Option<Arc<crate::mvcc::TreeVersions>>,
    /// `Mvcc::trees_added` when `versions` was last looked up and found absent: while it has
    /// not moved, no tree has gained before-images, so the lookup is not repeated (it was 6%
    /// of a GROUP BY over a freshly loaded table).
    looked_at: Option<u64>,
}

/// Looks a scanned tree's before-images up if they may have appeared since the last look
/// (`SnapshotScan::looked_at`). Not a method: the scan's cursor is borrowed when it runs.
fn refresh_versions(
    mvcc: &Mvcc,
    tree: TreeId,
    versions: &mut Option<Arc<crate::mvcc::TreeVersions>>,
    looked_at: &mut Option<u64>,
) {
    if versions.is_some() {
        return;
    }
    let added = mvcc.trees_added();
    if *looked_at == Some(added) {
        return;
    }
    *versions = mvcc.tree_versions(tree);
    *looked_at = Some(added);
}

/// `k` and `v` into the reused buffers `ko` and `vo`.
fn put_row(ko: &mut Vec<u8>, vo: &mut Vec<u8>, k: &[u8], v: &[u8]) {
    ko.clear();
    ko.extend_from_slice(k);
    vo.clear();
    vo.extend_from_slice(v);
}

impl SnapshotScan<'_> {
    /// The next row into `ko` and `vo` (their buffers reused: no allocation per row once they
    /// have grown, where handing out owned rows cost two allocations and two frees per row).
    fn next_into(&mut self, ko: &mut Vec<u8>, vo: &mut Vec<u8>) -> Option<Result<()>> {
        if self.empty {
            return None;
        }
        loop {
            // The tree's next key (read first: see the ordering rule in mvcc.rs).
            let next_tree: Option<&[u8]> = match self.cursor.peek_key() {
                None => None,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(k)) => Some(k),
            };
            // A row the snapshot sees that is no longer in the tree, before that key?
            refresh_versions(
                self.mvcc,
                self.tree,
                &mut self.versions,
                &mut self.looked_at,
            );
            if let Some(tv) = self.versions.as_deref().filter(|tv| !tv.is_empty()) {
                let after: Bound<&[u8]> = match &self.last {
                    Some(k) => Bound::Excluded(k),
                    None => as_ref(if self.reverse { &self.hi } else { &self.lo }),
                };
                let until: Bound<&[u8]> = match next_tree {
                    Some(k) => Bound::Excluded(k),
                    None => as_ref(if self.reverse { &self.lo } else { &self.hi }),
                };
                let (lo, hi) = if self.reverse {
                    (until, after)
                } else {
                    (after, until)
                };
                if valid_range(lo, hi) {
                    if let Some((k, v)) = tv.next_old(lo, hi, self.reverse, self.ts) {
                        set_last(&mut self.last, &k);
                        match v {
                            Some(v) => {
                                put_row(ko, vo, &k, &v);
                                return Some(Ok(()));
                            }
                            None => continue,
                        }
                    }
                }
            }
            let (k, v) = match self.cursor.next_ref()? {
                Ok(kv) => kv,
                Err(e) => return Some(Err(e)),
            };
            set_last(&mut self.last, k);
            refresh_versions(
                self.mvcc,
                self.tree,
                &mut self.versions,
                &mut self.looked_at,
            );
            let seen = match self.versions.as_deref() {
                Some(tv) => tv.visible(k, self.ts),
                None => Visible::Tree,
            };
            match seen {
                Visible::Tree => put_row(ko, vo, k, v),
                Visible::Old(Some(old)) => put_row(ko, vo, k, &old),
                Visible::Old(None) => continue,
            }
            return Some(Ok(()));
        }
    }
}

/// Keeps `k` as the last key, in the buffer of the previous one: no allocation per row.
fn set_last(last: &mut Option<Vec<u8>>, k: &[u8]) {
    match last {
        Some(l) => {
            l.clear();
            l.extend_from_slice(k);
        }
        None => *last = Some(k.to_vec()),
    }
}

fn valid_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b) | Bound::Included(b)) => a < b,
        _ => true,
    }
}

/// A transaction's scan: its snapshot of the tree merged with the transaction's own writes.
pub struct TxnScan<'a> {
    snap: SnapshotScan<'a>,
    /// The snapshot's next row, read ahead to be merged with the transaction's writes.
    ahead: Ahead,
    ahead_key: Vec<u8>,
    ahead_value: Vec<u8>,
    overlay: std::iter::Peekable<OverlayIter<'a>>,
    reverse: bool,
}

/// What [`TxnScan`] holds of the snapshot's rows beyond those it returned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ahead {
    Nothing,
    /// A row, in `ahead_key` and `ahead_value`.
    Row,
    /// The snapshot has no more rows.
    Done,
}

impl TxnScan<'_> {
    /// The next row into `k` and `v`, whose buffers are reused: a scan that goes through this
    /// allocates nothing per row. The rows are those the `Iterator` gives.
    pub fn next_into(&mut self, k: &mut Vec<u8>, v: &mut Vec<u8>) -> Option<Result<()>> {
        loop {
            if self.ahead == Ahead::Nothing {
                if self.overlay.peek().is_none() {
                    // No write of this transaction left in the range: the snapshot's rows as
                    // they come (every scan of a transaction that has not written the tree).
                    return self.snap.next_into(k, v);
                }
                self.ahead = match self
                    .snap
                    .next_into(&mut self.ahead_key, &mut self.ahead_value)
                {
                    None => Ahead::Done,
                    Some(Ok(())) => Ahead::Row,
                    Some(Err(e)) => return Some(Err(e)),
                };
            }
            let from_tree = match (self.ahead, self.overlay.peek()) {
                (Ahead::Row, None) => true,
                (_, None) => return None,
                (Ahead::Row, Some((ok, _))) => {
                    let ord = self.ahead_key.as_slice().cmp(ok);
                    if ord == std::cmp::Ordering::Equal {
                        // The transaction's write shadows the tree's entry.
                        self.ahead = Ahead::Nothing;
                        false
                    } else {
                        (ord == std::cmp::Ordering::Less) != self.reverse
                    }
                }
                (_, Some(_)) => false,
            };
            if from_tree {
                std::mem::swap(k, &mut self.ahead_key);
                std::mem::swap(v, &mut self.ahead_value);
                self.ahead = Ahead::Nothing;
                return Some(Ok(()));
            }
            let (ok, ov) = self.overlay.next()?;
            if let Some(ov) = ov {
                put_row(k, v, ok, ov);
                return Some(Ok(()));
            }
        }
    }
}

impl Iterator for TxnScan<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        Some(self.next_into(&mut k, &mut v)?.map(|()| (k, v)))
    }
}
