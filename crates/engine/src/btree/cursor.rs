//! Range cursors that hold no latch between calls.
//!
//! Each batch is one leaf: the cursor descends from the root with shared latches (crabbing),
//! copies the qualifying entries of the leaf (overflow values included) into its buffer,
//! remembers the leaf's fence key (the parent separator that bounds the leaf on the side the
//! cursor moves to), releases the leaf and hands the entries out. The next batch re-descends,
//! seeking just past the last key returned, or straight to the fence when the leaf was
//! exhausted. Entries written concurrently may or may not be seen; none is returned twice and
//! the order is always strict.
//!
//! A batch is one byte arena plus one small record per row, both reused from batch to batch
//! and, through a per-thread spare set, from cursor to cursor: a warm scan through
//! [`Cursor::next_ref`] does not allocate. [`Cursor::with_limit`] caps what a batch copies, so
//! a scan of 100 rows from a leaf of 150 copies 100.

use std::cell::RefCell;
use std::ops::Bound;

use zipdb_storage::pool::PageReadGuard;
use zipdb_storage::PageId;

use super::compact::StoredValue;
use super::leafview::LeafView;
use super::BTree;
use crate::error::Result;

/// One buffered row: key at `start..start + klen`, stored value at `start + klen..end` of the
/// arena. An FSST value stays encoded (`fsst`: symbol-table version, decoded length) until
/// the row is handed out, so a scan that stops early decodes only the rows it returns. A
/// tree's versions are never removed while it is open (one version per tree, slots never
/// reused: btree/symtab.rs); retiring versions (issue 19 step 7) must keep this true for
/// versions a cursor may still hold.
#[derive(Clone, Copy)]
struct Row {
    start: usize,
    klen: usize,
    end: usize,
    fsst: Option<(u16, usize)>,
}

/// The buffers a cursor owns; recycled through [`SPARE`] when it drops.
#[derive(Default)]
struct Buffers {
    arena: Vec<u8>,
    rows: Vec<Row>,
    /// The decoded value of the row last returned.
    value: Vec<u8>,
    lo: Vec<u8>,
    hi: Vec<u8>,
    fence: Vec<u8>,
}

impl Buffers {
    /// Spares above this are dropped rather than kept per thread: a scan over huge overflow
    /// values should not pin their memory.
    const KEEP: usize = 1 << 20;

    fn take() -> Buffers {
        SPARE
            .try_with(|s| s.borrow_mut().take())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn recycle(mut self) {
        if self.arena.capacity() + self.value.capacity() > Self::KEEP {
            return;
        }
        self.arena.clear();
        self.rows.clear();
        let _ = SPARE.try_with(|s| *s.borrow_mut() = Some(self));
    }
}

thread_local! {
    static SPARE: RefCell<Option<Buffers>> = const { RefCell::new(None) };
}

/// A forward or reverse cursor; an `Iterator` of owned `(key, value)` pairs, or, without an
/// allocation per row, [`Cursor::next_ref`].
pub struct Cursor<'t> {
    tree: &'t BTree,
    lo: Bound<()>,
    hi: Bound<()>,
    reverse: bool,
    b: Buffers,
    /// Next row of `b.rows` to hand out.
    pos: usize,
    /// The leaf of the buffered rows (error context of a late FSST decode).
    leaf: PageId,
    /// Rows still wanted (`usize::MAX`: all).
    left: usize,
    done: bool,
    /// [`Cursor::keys_only`].
    keys_only: bool,
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("lo", &self.lo_bound())
            .field("hi", &self.hi_bound())
            .field("reverse", &self.reverse)
            .field("left", &self.left)
            .finish()
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        std::mem::take(&mut self.b).recycle();
    }
}

fn bound<'a>(b: &Bound<()>, key: &'a [u8]) -> Bound<&'a [u8]> {
    match b {
        Bound::Included(()) => Bound::Included(key),
        Bound::Excluded(()) => Bound::Excluded(key),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Copies `b` into the reused `buf`; returns its shape.
fn keep(b: Bound<&[u8]>, buf: &mut Vec<u8>) -> Bound<()> {
    buf.clear();
    match b {
        Bound::Included(k) => {
            buf.extend_from_slice(k);
            Bound::Included(())
        }
        Bound::Excluded(k) => {
            buf.extend_from_slice(k);
            Bound::Excluded(())
        }
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn above_lo(lo: Bound<&[u8]>, k: &[u8]) -> bool {
    match lo {
        Bound::Included(b) => k >= b,
        Bound::Excluded(b) => k > b,
        Bound::Unbounded => true,
    }
}

fn below_hi(hi: Bound<&[u8]>, k: &[u8]) -> bool {
    match hi {
        Bound::Included(b) => k <= b,
        Bound::Excluded(b) => k < b,
        Bound::Unbounded => true,
    }
}

impl<'t> Cursor<'t> {
    pub(super) fn new(
        tree: &'t BTree,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
    ) -> Cursor<'t> {
        let empty = match (lo, hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b) | Bound::Included(b)) => {
                a >= b
            }
            _ => false,
        };
        let mut b = Buffers::take();
        let lo = keep(lo, &mut b.lo);
        let hi = keep(hi, &mut b.hi);
        Cursor {
            tree,
            lo,
            hi,
            reverse,
            b,
            pos: 0,
            leaf: PageId::NONE,
            left: usize::MAX,
            done: empty,
            keys_only: false,
        }
    }

    /// Stops the cursor after `n` more rows (counted from this call, also mid-scan). Besides
    /// saving the caller a count, it bounds the work: a batch copies no more rows than are
    /// still wanted.
    pub fn with_limit(mut self, n: usize) -> Self {
        self.left = n;
        self
    }

    /// Hands out keys with empty values: no value is copied or decoded, and no leaf view
    /// (btree/leafview.rs) is used or built, as for a probe of which keys exist (a view built
    /// for it would decode a whole leaf, and its visits would sway which leaves get one).
    pub fn keys_only(mut self) -> Self {
        self.keys_only = true;
        self
    }

    fn lo_bound(&self) -> Bound<&[u8]> {
        bound(&self.lo, &self.b.lo)
    }

    fn hi_bound(&self) -> Bound<&[u8]> {
        bound(&self.hi, &self.b.hi)
    }

    /// The key [`Self::next_ref`] returns next, without moving past it (its leaf is read if
    /// the rows buffered are used up, as `next_ref` would read it).
    pub fn peek_key(&mut self) -> Option<Result<&[u8]>> {
        if let Err(e) = self.buffered()? {
            return Some(Err(e));
        }
        let r = self.b.rows[self.pos];
        Some(Ok(&self.b.arena[r.start..r.start + r.klen]))
    }

    /// Makes `b.rows[pos]` the next row, reading the next leaf when the buffered rows are used
    /// up: `None` at the end (or once the limit is reached), the error of a failed read.
    fn buffered(&mut self) -> Option<Result<()>> {
        // A limit set after the first row may be below the rows already buffered.
        if self.left == 0 {
            return None;
        }
        if self.pos == self.b.rows.len() {
            if let Err(e) = self.fill() {
                self.fail();
                return Some(Err(e));
            }
            if self.pos == self.b.rows.len() {
                return None;
            }
        }
        Some(Ok(()))
    }

    /// The next row, borrowed from the cursor until the next call: no allocation once the
    /// cursor's buffers have grown to a leaf's worth of rows (they are reused from cursor to
    /// cursor on a thread). No latch is held when it returns.
    pub fn next_ref(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        if let Err(e) = self.buffered()? {
            return Some(Err(e));
        }
        let r = self.b.rows[self.pos];
        self.pos += 1;
        self.left = self.left.saturating_sub(1);
        let stored = r.start + r.klen..r.end;
        if let Some((version, len)) = r.fsst {
            // `decode` leaves slack past the value, which keeps the kernel on its
            // 8-codes-at-a-time path to the end; the reused buffer makes that room free.
            self.b.value.clear();
            let v = StoredValue::Fsst {
                bytes: &self.b.arena[stored.clone()],
                len,
            };
            if let Err(e) = self
                .tree
                .read_stored(self.leaf, version, v, &mut self.b.value)
            {
                self.fail();
                return Some(Err(e));
            }
        }
        let key = &self.b.arena[r.start..r.start + r.klen];
        let value = match r.fsst {
            Some(_) => &self.b.value[..],
            None => &self.b.arena[stored],
        };
        Some(Ok((key, value)))
    }

    fn fail(&mut self) {
        self.done = true;
        self.b.rows.clear();
        self.pos = 0;
    }

    /// Descends to the leaf holding the first key of the scan position; returns it, with the
    /// fence on the scan side in `b.fence` (`false`: the leaf is the last one that way).
    fn descend(&mut self) -> Result<(PageReadGuard<'t>, bool)> {
        let t = self.tree;
        let mut g = t.pool.read(t.root)?;
        let mut expect = None;
        let mut fenced = false;
        loop {
            let Some(n) = t.inner(g.id(), &g, expect)? else {
                return Ok((g, fenced));
            };
            let idx = if !self.reverse {
                match self.lo_bound() {
                    Bound::Unbounded => 0,
                    Bound::Included(k) | Bound::Excluded(k) => n.child_index(k)?,
                }
            } else {
                match self.hi_bound() {
                    Bound::Unbounded => n.count(),
                    Bound::Included(k) => n.child_index(k)?,
                    Bound::Excluded(k) => n.child_index_below(k)?,
                }
            };
            let f = if !self.reverse {
                (idx < n.count()).then_some(idx)
            } else {
                idx.checked_sub(1)
            };
            if let Some(f) = f {
                self.b.fence.clear();
                self.b.fence.extend_from_slice(n.key(f)?);
                fenced = true;
            }
            let child = n.child(idx)?;
            expect = Some(n.level() - 1);
            g = t.pool.read(child)?;
        }
    }

    /// Loads the next non-empty batch (or sets `done`).
    fn fill(&mut self) -> Result<()> {
        self.b.rows.clear();
        self.b.arena.clear();
        self.pos = 0;
        if self.left == 0 {
            self.done = true;
        }
        while self.b.rows.is_empty() && !self.done {
            let (g, fenced) = self.descend()?;
            self.leaf = g.id();
            let finished = if self.tree.is_compact() {
                self.take_compact(&g)?
            } else {
                self.take_classic(g.id(), &g)?
            };
            drop(g);
            if finished || !fenced {
                self.done = true;
                continue;
            }
            // The leaf is exhausted: continue at its fence.
            if self.reverse {
                if !above_lo(self.lo_bound(), &self.b.fence) {
                    // Every key left is below the fence, hence below `lo`.
                    self.done = true;
                } else {
                    std::mem::swap(&mut self.b.hi, &mut self.b.fence);
                    self.hi = Bound::Excluded(());
                }
            } else if !below_hi(self.hi_bound(), &self.b.fence) {
                self.done = true;
            } else {
                std::mem::swap(&mut self.b.lo, &mut self.b.fence);
                self.lo = Bound::Included(());
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
            let start = match self.lo_bound() {
                Bound::Unbounded => 0,
                Bound::Included(k) => search(k)?.unwrap_or_else(|i| i),
                Bound::Excluded(k) => match search(k)? {
                    Ok(i) => i + 1,
                    Err(i) => i,
                },
            };
            (start, count)
        } else {
            let end = match self.hi_bound() {
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
            !above_lo(self.lo_bound(), k)
        } else {
            !below_hi(self.hi_bound(), k)
        }
    }

    /// Leaf positions `start..end` in scan order, at most the rows still wanted.
    fn order(&self, start: usize, end: usize) -> impl Iterator<Item = usize> {
        let (reverse, n) = (self.reverse, (end - start).min(self.left));
        (0..n).map(move |j| if reverse { end - 1 - j } else { start + j })
    }

    /// Copies the qualifying entries of classic leaf `p` into the buffer; `true` when the scan
    /// is complete with them.
    fn take_classic(&mut self, id: PageId, p: &[u8]) -> Result<bool> {
        let t = self.tree;
        let n = t.node(id, p, Some(0))?;
        let (start, end) = self.start_range(n.count(), |k| n.search(k))?;
        self.b.rows.reserve(end - start);
        for i in self.order(start, end) {
            let k = n.key(i)?;
            if self.past_end(k) {
                return Ok(true);
            }
            let at = self.b.arena.len();
            self.b.arena.extend_from_slice(k);
            if !self.keys_only {
                t.read_value(&n, i, &mut self.b.arena)?;
            }
            self.b.rows.push(Row {
                start: at,
                klen: k.len(),
                end: self.b.arena.len(),
                fsst: None,
            });
        }
        // Holding every row still wanted ends the scan too.
        Ok(self.b.rows.len() >= self.left)
    }

    /// [`Self::take_classic`] for a compact leaf: keys are rebuilt from prefix, head and rest
    /// straight into the arena, FSST values copied encoded (decoded as they are handed out);
    /// or, where the leaf has a decoded view (btree/leafview.rs), both copied from it.
    fn take_compact(&mut self, g: &PageReadGuard<'_>) -> Result<bool> {
        let t = self.tree;
        let id = g.id();
        let l = t.cleaf(id, g)?;
        if self.keys_only {
            return self.take_compact_keys(&l);
        }
        if let Some(v) = t.leaf_view(g, &l)? {
            return self.take_view(&v);
        }
        let version = l.symtab_version();
        let (start, end) = self.start_range(l.count(), |k| l.search(k))?;
        self.b.rows.reserve(end - start);
        for i in self.order(start, end) {
            let at = self.b.arena.len();
            let v = l.entry_into(i, &mut self.b.arena)?;
            let klen = self.b.arena.len() - at;
            if self.past_end(&self.b.arena[at..]) {
                self.b.arena.truncate(at);
                return Ok(true);
            }
            let fsst = match v {
                StoredValue::Fsst { bytes, len } => {
                    self.b.arena.extend_from_slice(bytes);
                    Some((version, len))
                }
                stored => {
                    t.read_stored(id, version, stored, &mut self.b.arena)?;
                    None
                }
            };
            self.b.rows.push(Row {
                start: at,
                klen,
                end: self.b.arena.len(),
                fsst,
            });
        }
        // Holding every row still wanted ends the scan too.
        Ok(self.b.rows.len() >= self.left)
    }
}

impl Cursor<'_> {
    /// [`Self::take_compact`] of keys alone ([`Cursor::keys_only`]).
    fn take_compact_keys(&mut self, l: &super::compact::CompactLeaf<'_>) -> Result<bool> {
        let (start, end) = self.start_range(l.count(), |k| l.search(k))?;
        self.b.rows.reserve(end - start);
        for i in self.order(start, end) {
            let at = self.b.arena.len();
            // The value is checked as a key-and-value copy would check it, not read.
            l.entry_into(i, &mut self.b.arena)?;
            if self.past_end(&self.b.arena[at..]) {
                self.b.arena.truncate(at);
                return Ok(true);
            }
            let end = self.b.arena.len();
            self.b.rows.push(Row {
                start: at,
                klen: end - at,
                end,
                fsst: None,
            });
        }
        Ok(self.b.rows.len() >= self.left)
    }

    /// [`Self::take_compact`] from a decoded view.
    fn take_view(&mut self, v: &LeafView) -> Result<bool> {
        let (start, end) = self.start_range(v.count(), |k| Ok(v.search(k)))?;
        self.b.rows.reserve(end - start);
        for i in self.order(start, end) {
            if self.past_end(v.key(i)) {
                return Ok(true);
            }
            let (entry, klen) = v.entry(i);
            let at = self.b.arena.len();
            self.b.arena.extend_from_slice(entry);
            self.b.rows.push(Row {
                start: at,
                klen,
                end: self.b.arena.len(),
                fsst: None,
            });
        }
        Ok(self.b.rows.len() >= self.left)
    }
}

impl Iterator for Cursor<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref()
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
    }
}
