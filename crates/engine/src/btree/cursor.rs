//! Range cursors that hold no latch between calls.
//!
//! Each batch is one leaf: the cursor descends from the root with shared latches (crabbing),
//! copies the qualifying entries of the leaf (overflow values included) into its buffer,
//! remembers the leaf's fence key (the parent separator that bounds the leaf on the side the
//! cursor moves to), releases the leaf and hands the entries out. The next batch re-descends,
//! seeking just past the last key returned, or straight to the fence when the leaf was
//! exhausted. Entries written concurrently may or may not be seen; none is returned twice and
//! the order is always strict.

use std::collections::VecDeque;
use std::ops::Bound;

use zipdb_storage::pool::PageReadGuard;
use zipdb_storage::PageId;

use super::compact::StoredValue;
use super::BTree;
use crate::error::Result;

/// An FSST value buffered still encoded: the leaf it came from (for error context), the
/// symbol-table version of that leaf and the decoded length. Decoding waits for `next()`,
/// so a scan that stops early (LIMIT, a range of 100 rows in a leaf of 150) decodes only the
/// rows it returns. A tree's versions are never removed while it is open (one version per
/// tree, slots never reused: btree/symtab.rs); retiring versions (issue 19 step 7) must keep
/// this true for versions a cursor may still hold.
type Pending = Option<(PageId, u16, usize)>;

/// A forward or reverse cursor; an `Iterator` of `(key, value)` pairs.
pub struct Cursor<'t> {
    tree: &'t BTree,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    reverse: bool,
    buf: VecDeque<(Vec<u8>, Vec<u8>, Pending)>,
    done: bool,
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .field("reverse", &self.reverse)
            .finish()
    }
}

fn above_lo(lo: &Bound<Vec<u8>>, k: &[u8]) -> bool {
    match lo {
        Bound::Included(b) => k >= b.as_slice(),
        Bound::Excluded(b) => k > b.as_slice(),
        Bound::Unbounded => true,
    }
}

fn below_hi(hi: &Bound<Vec<u8>>, k: &[u8]) -> bool {
    match hi {
        Bound::Included(b) => k <= b.as_slice(),
        Bound::Excluded(b) => k < b.as_slice(),
        Bound::Unbounded => true,
    }
}

impl<'t> Cursor<'t> {
    pub(super) fn new(
        tree: &'t BTree,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        reverse: bool,
    ) -> Cursor<'t> {
        let empty = match (&lo, &hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b) | Bound::Included(b)) => {
                a >= b
            }
            _ => false,
        };
        Cursor {
            tree,
            lo,
            hi,
            reverse,
            buf: VecDeque::new(),
            done: empty,
        }
    }

    /// Descends to the leaf holding the first key of the scan position; returns it with the
    /// fence on the scan side (`None`: the leaf is the last one in that direction).
    fn descend(&self) -> Result<(PageReadGuard<'t>, Option<Vec<u8>>)> {
        let t = self.tree;
        let mut g = t.pool.read(t.root)?;
        let mut expect = None;
        let mut fence: Option<Vec<u8>> = None;
        loop {
            let Some(n) = t.inner(g.id(), &g, expect)? else {
                return Ok((g, fence));
            };
            let idx = if !self.reverse {
                match &self.lo {
                    Bound::Unbounded => 0,
                    Bound::Included(k) | Bound::Excluded(k) => n.child_index(k)?,
                }
            } else {
                match &self.hi {
                    Bound::Unbounded => n.count(),
                    Bound::Included(k) => n.child_index(k)?,
                    Bound::Excluded(k) => n.child_index_below(k)?,
                }
            };
            if !self.reverse {
                if idx < n.count() {
                    fence = Some(n.key(idx)?.to_vec());
                }
            } else if idx > 0 {
                fence = Some(n.key(idx - 1)?.to_vec());
            }
            let child = n.child(idx)?;
            expect = Some(n.level() - 1);
            g = t.pool.read(child)?;
        }
    }

    /// Loads the next non-empty batch (or sets `done`).
    fn fill(&mut self) -> Result<()> {
        while self.buf.is_empty() && !self.done {
            let (g, fence) = self.descend()?;
            let out_of_range = if self.tree.is_compact() {
                self.take_compact(g.id(), &g)?
            } else {
                self.take_classic(g.id(), &g)?
            };
            drop(g);
            if out_of_range {
                self.done = true;
            } else {
                match fence {
                    None => self.done = true,
                    Some(f) => {
                        // The leaf is exhausted: continue at its fence.
                        if self.reverse {
                            if !above_lo(&self.lo, &f) {
                                // Every key left is below the fence, hence below `lo`.
                                self.done = true;
                            } else {
                                self.hi = Bound::Excluded(f);
                            }
                        } else if !below_hi(&self.hi, &f) {
                            self.done = true;
                        } else {
                            self.lo = Bound::Included(f);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Position range `[start, end)` of the entries of a leaf with `count` entries that lie
    /// inside the cursor's bound on the side it starts from (`search` finds a key).
    fn start_range(
        &self,
        count: usize,
        search: impl Fn(&[u8]) -> Result<std::result::Result<usize, usize>>,
    ) -> Result<(usize, usize)> {
        Ok(if !self.reverse {
            let start = match &self.lo {
                Bound::Unbounded => 0,
                Bound::Included(k) => search(k)?.unwrap_or_else(|i| i),
                Bound::Excluded(k) => match search(k)? {
                    Ok(i) => i + 1,
                    Err(i) => i,
                },
            };
            (start, count)
        } else {
            let end = match &self.hi {
                Bound::Unbounded => count,
                Bound::Included(k) => match search(k)? {
                    Ok(i) => i + 1,
                    Err(i) => i,
                },
                Bound::Excluded(k) => search(k)?.unwrap_or_else(|i| i),
            };
            (0, end)
        })
    }

    /// Whether `k`, next in scan order, is past the far bound of the scan.
    fn past_end(&self, k: &[u8]) -> bool {
        if self.reverse {
            !above_lo(&self.lo, k)
        } else {
            !below_hi(&self.hi, k)
        }
    }

    /// Copies the qualifying entries of classic leaf `p` into the buffer; `true` when the scan
    /// ran past its far bound.
    fn take_classic(&mut self, id: PageId, p: &[u8]) -> Result<bool> {
        let t = self.tree;
        let n = t.node(id, p, Some(0))?;
        let (start, end) = self.start_range(n.count(), |k| n.search(k))?;
        let take = |i: usize, this: &mut Self| -> Result<bool> {
            let k = n.key(i)?;
            if this.past_end(k) {
                return Ok(false);
            }
            let mut v = Vec::new();
            t.read_value(&n, i, &mut v)?;
            this.buf.push_back((k.to_vec(), v, None));
            Ok(true)
        };
        if !self.reverse {
            for i in start..end {
                if !take(i, self)? {
                    return Ok(true);
                }
            }
        } else {
            for i in (start..end).rev() {
                if !take(i, self)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// [`Self::take_classic`] for a compact leaf: keys are rebuilt from prefix, head and rest.
    fn take_compact(&mut self, id: PageId, p: &[u8]) -> Result<bool> {
        let t = self.tree;
        let l = t.cleaf(id, p)?;
        let (start, end) = self.start_range(l.count(), |k| l.search(k))?;
        let take = |i: usize, this: &mut Self| -> Result<bool> {
            let k = l.key(i)?;
            if this.past_end(&k) {
                return Ok(false);
            }
            let mut v = Vec::new();
            let pending = match l.value(i)? {
                StoredValue::Fsst { bytes, len } => {
                    v.extend_from_slice(bytes);
                    Some((id, l.symtab_version(), len))
                }
                stored => {
                    t.read_stored(id, l.symtab_version(), stored, &mut v)?;
                    None
                }
            };
            this.buf.push_back((k, v, pending));
            Ok(true)
        };
        if !self.reverse {
            for i in start..end {
                if !take(i, self)? {
                    return Ok(true);
                }
            }
        } else {
            for i in (start..end).rev() {
                if !take(i, self)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

impl Iterator for Cursor<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            if let Err(e) = self.fill() {
                self.done = true;
                self.buf.clear();
                return Some(Err(e));
            }
        }
        let (k, v, pending) = self.buf.pop_front()?;
        let Some((leaf, version, len)) = pending else {
            return Some(Ok((k, v)));
        };
        match self.tree.decode_exact(leaf, version, &v, len) {
            Ok(out) => Some(Ok((k, out))),
            Err(e) => {
                self.done = true;
                self.buf.clear();
                Some(Err(e))
            }
        }
    }
}
