//! Inserting a batch of new rows with one ordered probe of the tree instead of a locking read
//! per row ([`Transaction::probe_new_keys`], [`Transaction::insert_probed`]).
//!
//! A multi-row INSERT locks each new row and reads its newest committed version to find a
//! duplicate: a descent of the tree per row, although the rows of a bulk load are new and
//! mostly ascending. The probe instead sorts a batch's keys and walks the tree once over their
//! range (a cursor that re-seeks only across gaps), laid under this transaction's own writes,
//! without locks. Each row is then locked in the caller's order, as the per-row path locks it,
//! and written if the probe's answer still holds: unless no commit was applying writes to the
//! tree when the probe began and none has begun since (the tree's `ApplyCount`), the row is
//! read again under its lock, as the per-row path reads it.
//!
//! Why that suffices: a commit that changes a probed row holds its lock until the commit is
//! applied, so one that began before the row is locked here has begun before the count is
//! read under the lock, and one that had ended before the probe began is in what it read.
//! Commits to other rows may move them between leaves while the probe walks; a cursor still
//! sees every row no commit changes. (A snapshot would tell the same per row, but holding one
//! makes every other session's commits keep before-images, which cost a concurrent bulk load
//! more than the probe saved.)

use super::*;

/// Rows a cursor of the probe copies before it re-seeks: a step costs a key's copy, a seek a
/// descent, so a gap of more than this many existing rows
/// between two probed keys is crossed with a descent.
const STEPS_PER_SEEK: usize = 16;

/// The result of [`Transaction::probe_new_keys`]: a batch's keys, and the first of them (in
/// the caller's order) that is taken: present in the tree or in the transaction's own writes,
/// or equal to an earlier key of the batch. Keep it for one batch.
pub struct InsertProbe {
    txn: TxnId,
    tree: Tree,
    /// `applies.begun` of the tree when the probe began, if no commit was applying then.
    quiet_at: Option<u64>,
    keys: Vec<u8>,
    ends: Vec<usize>,
    first_taken: usize,
}

impl std::fmt::Debug for InsertProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InsertProbe")
            .field("tree", &self.tree.name())
            .field("keys", &self.ends.len())
            .field("first_taken", &self.first_taken())
            .finish()
    }
}

impl InsertProbe {
    /// How many keys the batch has.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The key at `i` (the caller's order).
    pub fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// Index of the first key (in the caller's order) found taken, if any. Keys before it were
    /// all free when probed; [`Transaction::insert_probed`] declines it and every key after it.
    pub fn first_taken(&self) -> Option<usize> {
        (self.first_taken < self.ends.len()).then_some(self.first_taken)
    }
}

/// Whether keys exist in a tree's newest committed state, asked in ascending order: one cursor
/// that steps over a few rows between keys and re-seeks across longer gaps.
struct Seek<'a> {
    bt: &'a BTree,
    hi: &'a [u8],
    cur: Option<Cursor<'a>>,
    /// Rows taken from `cur`, which copies at most `STEPS_PER_SEEK + 1` (the last one only
    /// peeked at).
    steps: usize,
}

impl<'a> Seek<'a> {
    fn has(&mut self, key: &[u8]) -> Result<bool> {
        loop {
            let cur = match &mut self.cur {
                Some(c) => c,
                None => {
                    self.steps = 0;
                    let c = self
                        .bt
                        .range_bounds(Bound::Included(key), Bound::Included(self.hi), false)
                        .keys_only()
                        .with_limit(STEPS_PER_SEEK + 1);
                    self.cur.insert(c)
                }
            };
            let next = match cur.peek_key() {
                Some(k) => k?,
                // No key is left in `[key, hi]`, where every later key lies too. (Not the
                // cursor's limit: it re-seeks below before taking that many rows.)
                None => return Ok(false),
            };
            match next.cmp(key) {
                std::cmp::Ordering::Equal => return Ok(true),
                std::cmp::Ordering::Greater => return Ok(false),
                std::cmp::Ordering::Less if self.steps < STEPS_PER_SEEK => {
                    if let Some(r) = cur.next_ref() {
                        r?;
                    }
                    self.steps += 1;
                }
                std::cmp::Ordering::Less => self.cur = None,
            }
        }
    }
}

impl Transaction {
    /// Probes which of `keys` (new rows of `tree`, in the order the caller will write them;
    /// the caller bounds their number) are taken: present in the newest committed state of
    /// `tree` or in this transaction's writes, or equal to an earlier key of the batch. One
    /// ordered pass over the tree for the batch's key range, not a descent per key; takes no
    /// lock. Write the rows with [`Transaction::insert_probed`].
    pub fn probe_new_keys(&self, tree: &Tree, keys: &[&[u8]]) -> Result<InsertProbe> {
        let bt = tree.alive()?;
        // Before the tree is read: `begun`, then `ended` (a commit that begins in between
        // shows in `begun` later).
        let applies = &tree.t.applies;
        let begun = applies.begun.load(Ordering::SeqCst);
        let quiet_at = (applies.ended.load(Ordering::SeqCst) == begun).then_some(begun);
        let mut probe = InsertProbe {
            txn: self.id,
            tree: tree.clone(),
            quiet_at,
            keys: Vec::with_capacity(keys.iter().map(|k| k.len()).sum()),
            ends: Vec::with_capacity(keys.len()),
            first_taken: keys.len(),
        };
        for k in keys {
            probe.keys.extend_from_slice(k);
            probe.ends.push(probe.keys.len());
        }
        let mut order: Vec<usize> = (0..keys.len()).collect();
        // Stable: of equal keys the earliest comes first, and each later one is taken.
        order.sort_by(|&a, &b| keys[a].cmp(keys[b]));
        let mut first = keys.len();
        for w in order.windows(2) {
            if keys[w[0]] == keys[w[1]] {
                first = first.min(w[1]);
            }
        }
        let Some(&hi) = order.last().map(|&i| &keys[i]) else {
            return Ok(probe);
        };
        let own = self.overlay(tree);
        let mut seek = Seek {
            bt,
            hi,
            cur: None,
            steps: 0,
        };
        for &i in &order {
            // Only keys before the first taken one matter to the caller.
            if i >= first {
                continue;
            }
            let taken = match own.and_then(|w| w.get(keys[i])) {
                // Written (or deleted) by this transaction: that is what it sees.
                Some(v) => v.is_some(),
                None => seek.has(keys[i])?,
            };
            if taken {
                first = i;
            }
        }
        probe.first_taken = first;
        Ok(probe)
    }

    /// Writes the new row `value` (taken, not copied) at the probe's key `i`, doing what `get_for_update` of the
    /// key followed by `put` does when the row does not exist: locks the row as that would
    /// (waiting, deadlock and write-conflict errors alike) and buffers the write. Returns
    /// `false`, writing nothing, when the row exists after all, and for the probe's first
    /// taken key and every key after it: write those the per-row way, which finds what they
    /// collide with. Call it for the keys in the probe's order, so that rows lock in that
    /// order as they would one at a time.
    pub fn insert_probed(
        &mut self,
        probe: &mut InsertProbe,
        i: usize,
        value: Vec<u8>,
    ) -> Result<bool> {
        assert_eq!(probe.txn, self.id, "a probe of another transaction");
        if i >= probe.first_taken {
            return Ok(false);
        }
        let (tree, key) = (&probe.tree, probe.key(i));
        self.lock(tree, key)?;
        // The probe read the tree without the lock: unless no commit can have changed it
        // since, the row is read again under the lock.
        let unchanged = probe.quiet_at == Some(tree.t.applies.begun.load(Ordering::SeqCst));
        let taken = match self.overlay(tree).and_then(|w| w.get(key)) {
            Some(v) => v.is_some(),
            None if !unchanged => tree.alive()?.contains(key)?,
            None => false,
        };
        if taken {
            probe.first_taken = i;
            return Ok(false);
        }
        tree.check_sizes(key, &value)?;
        self.record(tree, key, Some(value));
        Ok(true)
    }
}
