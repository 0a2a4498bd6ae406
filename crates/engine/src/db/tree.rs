//! [`Tree`]: a handle to one tree, with single-row writes that are transactions of their own.

use super::*;
use crate::error::RequestError;

/// A handle to one tree. Cheap to clone.
///
/// Its reads ([`Tree::get`], [`Tree::range`]) read the trees directly, without a snapshot:
/// they see a commit's writes as soon as they are applied, which is a few microseconds before
/// the commit is published to snapshots and, unless its flush policy is already satisfied,
/// before it is durable (as a dirty read of a committing InnoDB transaction would be). Use a
/// [`Transaction`] for consistent reads. Its writes are single-row transactions that lock the
/// row, log and apply it, and return as the database's flush policy says.
#[derive(Clone)]
pub struct Tree {
    pub(super) db: Arc<DbInner>,
    pub(super) t: Arc<TreeShared>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("name", &self.t.name)
            .field("btree", &self.t.btree)
            .finish()
    }
}

/// How a single-row write of [`Tree`] treats an existing row.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum AutoPut {
    Insert,
    Upsert,
    Delete,
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
    pub fn format(&self) -> TreeFormat {
        self.t.btree.format()
    }
    pub fn max_key_len(&self) -> usize {
        self.t.btree.max_key_len()
    }
    /// The underlying B+tree (no gate, no dropped check, no WAL: for diagnostics).
    pub fn btree(&self) -> &BTree {
        &self.t.btree
    }

    pub(super) fn alive(&self) -> Result<&BTree> {
        if self.t.dropped.load(Ordering::Acquire) {
            return Err(Error::Request(RequestError::NoSuchTree(
                self.t.name.clone(),
            )));
        }
        Ok(&self.t.btree)
    }

    pub(super) fn check_sizes(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if key.len() > self.max_key_len() {
            return Err(Error::Request(RequestError::KeyTooLarge {
                len: key.len(),
                max: self.max_key_len(),
            }));
        }
        if value.len() > MAX_VALUE_LEN {
            return Err(Error::Request(RequestError::ValueTooLarge {
                len: value.len(),
                max: MAX_VALUE_LEN,
            }));
        }
        Ok(())
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
        self.auto(key, Some(value), AutoPut::Insert)
    }

    /// Inserts or replaces; `true` if a value was replaced.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.auto(key, Some(value), AutoPut::Upsert)
    }

    /// Deletes; `true` if the key existed.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        if key.len() > self.max_key_len() {
            return Ok(false);
        }
        self.auto(key, None, AutoPut::Delete)
    }

    /// A one-row transaction.
    pub(super) fn auto(&self, key: &[u8], value: Option<&[u8]>, mode: AutoPut) -> Result<bool> {
        let bt = self.alive()?;
        if let Some(v) = value {
            self.check_sizes(key, v)?;
        }
        let db = &self.db;
        db.check_writable()?;
        let txn = TxnId(db.next_txn.fetch_add(1, Ordering::Relaxed));
        lock_row(db, txn, self.id(), key)?;
        let r = (|| {
            // An upsert writes either way and learns from the tree whether it replaced a row;
            // insert and delete look first, so that a no-op is not logged.
            let existed = match mode {
                AutoPut::Upsert => None,
                AutoPut::Insert | AutoPut::Delete => Some(bt.contains(key)?),
            };
            let write = match (mode, existed) {
                (AutoPut::Insert, Some(e)) => !e,
                (AutoPut::Delete, Some(e)) => e,
                _ => true,
            };
            let mut replaced = false;
            if write {
                let mut enc = CommitEncoder::new();
                enc.op(self.id(), key, value);
                let payload = enc.finish();
                let ops = [(self.t.clone(), vec![(key, value)])];
                replaced = apply_commit(db, &payload, &ops, db.options.flush_policy)?;
            }
            Ok(match (mode, existed) {
                (AutoPut::Insert, Some(e)) => !e,
                (_, Some(e)) => e,
                (_, None) => replaced,
            })
        })();
        db.locks.release_all(txn, &[(self.id(), key.to_vec())]);
        r
    }

    /// Writes `entries` (upserts, keys strictly increasing: panics otherwise) into a tree that
    /// no transaction can reach yet, such as a secondary index being built before the SQL
    /// catalog publishes it: no row locks and no before-images, one redo record (replayed as
    /// any commit's), applied a leaf at a time. Any other writer of the tree meanwhile, or a
    /// snapshot read of it that relies on before-images, is the caller's error. Callers bound
    /// the slice (it becomes one WAL record).
    pub fn load_unpublished(&self, entries: &[(&[u8], &[u8])]) -> Result<()> {
        let bt = self.alive()?;
        assert!(
            entries.windows(2).all(|w| w[0].0 < w[1].0),
            "load_unpublished: keys not strictly increasing"
        );
        let mut enc = CommitEncoder::new();
        let mut writes = Vec::with_capacity(entries.len());
        for &(k, v) in entries {
            self.check_sizes(k, v)?;
            enc.op(self.id(), k, Some(v));
            writes.push((k, Some(v)));
        }
        if enc.is_empty() {
            return Ok(());
        }
        let payload = enc.finish();
        let db = &self.db;
        db.logged(&payload, db.options.flush_policy, || {
            let _gate = db.gate.read();
            if self.t.dropped.load(Ordering::Acquire) {
                return Ok(());
            }
            bt.apply_sorted_live(&writes)
        })
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

    /// `OPTIMIZE TABLE` for an FSST tree (see [`BTree::optimize`]): writers keep going; the
    /// gate is held shared around the install and each leaf, not for the whole walk, so
    /// checkpoints interleave. Nothing is logged (rebuilds keep every leaf's values).
    pub fn optimize(&self) -> Result<crate::btree::OptimizeReport> {
        self.db.check_writable()?;
        self.alive()?.optimize(|| self.db.gate.read())
    }
}
