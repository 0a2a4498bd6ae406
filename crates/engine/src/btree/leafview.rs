//! Decoded views of compact leaves (issue 19: in-memory scans at the speed of uncompressed
//! pages).
//!
//! A compact leaf keeps its values FSST-encoded in the buffer pool, so every row a scan hands
//! out costs a decode (about 100 ns for a sysbench row). When the pool has memory to spare,
//! a scan that reaches a leaf decodes all of it once into a [`LeafView`] (keys rebuilt, values
//! decoded, packed back to back) and keeps it as a page view (`zipdb_storage::views`): until
//! the leaf changes, later scans copy from the view as they would from an
//! uncompressed leaf. Memory-tight pools keep no views, so the compressed format costs its
//! compressed size there. Leaves with overflow values get no view (the chain is other pages).

use std::sync::Arc;

use zipdb_storage::fsst::{max_decoded_len, MAX_SYMBOL_LEN};
use zipdb_storage::pool::{PageReadGuard, ViewLookup};
use zipdb_storage::views::Change;

use super::compact::{CompactLeaf, StoredValue};
use super::BTree;
use crate::error::Result;

/// Every entry of one compact leaf, decoded.
pub(super) struct LeafView {
    data: Vec<u8>,
    /// Per entry: key at `start..start + klen`, value at `start + klen..end` of `data`.
    rows: Vec<(u32, u32, u32)>,
}

/// Buffers of dropped views, for the next build or apply. A view is 30–60 KB; allocating and
/// freeing one per rebuild had glibc consolidating its heap under the SQL server's small
/// allocations (malloc, consolidate and unlink went from 7.4% to 12% of server CPU in
/// oltp_read_write at 128 MB, more than the decodes saved).
static SPARE: parking_lot::Mutex<Vec<Buffers>> = parking_lot::const_mutex(Vec::new());
/// A view's bytes and rows.
type Buffers = (Vec<u8>, Vec<(u32, u32, u32)>);

/// Spare buffers kept (at most about 4 MB).
const SPARE_MAX: usize = 64;

/// Empty buffers with room for `bytes` bytes and `rows` rows, reused when one is spare.
///
/// A view is charged its buffers' capacity, so capacity is kept close to what it needs: a
/// spare buffer more than an eighth too large is shrunk first. Left loose, a view built into a
/// buffer sized for a larger one was charged 34.7 KB for its 29 KB of rows, and 10% of an
/// sbtest table's leaves found no room where all of them fit (`zipdb-bench storage --quick`,
/// fits_decoded).
fn spare(bytes: usize, rows: usize) -> Buffers {
    let (mut d, mut r) = SPARE.lock().pop().unwrap_or_default();
    fit(&mut d, bytes);
    fit(&mut r, rows);
    (d, r)
}

/// Makes the empty `v`'s capacity at least `n` and at most `n + n / 8` (and a few elements).
fn fit<T>(v: &mut Vec<T>, n: usize) {
    debug_assert!(v.is_empty());
    if v.capacity() > n + n / 8 + 16 {
        v.shrink_to(n);
    }
    v.reserve_exact(n);
}

impl Drop for LeafView {
    fn drop(&mut self) {
        let mut d = std::mem::take(&mut self.data);
        let mut r = std::mem::take(&mut self.rows);
        d.clear();
        r.clear();
        let mut s = SPARE.lock();
        if s.len() < SPARE_MAX && d.capacity() <= 1 << 20 {
            s.push((d, r));
        }
    }
}

impl LeafView {
    pub(super) fn count(&self) -> usize {
        self.rows.len()
    }

    pub(super) fn key(&self, i: usize) -> &[u8] {
        let (s, k, _) = self.rows[i];
        &self.data[s as usize..(s + k) as usize]
    }

    /// Key and value of entry `i` as one slice (the key first, `klen` bytes).
    pub(super) fn entry(&self, i: usize) -> (&[u8], usize) {
        let (s, k, e) = self.rows[i];
        (&self.data[s as usize..e as usize], k as usize)
    }

    pub(super) fn search(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        self.rows
            .binary_search_by(|&(s, k, _)| self.data[s as usize..(s + k) as usize].cmp(key))
    }

    /// This view with `changes` applied in order: what the leaf holds after its writers made
    /// them. Rows between changed keys are copied in blocks (their bytes are contiguous), so
    /// this costs about one copy of the leaf, where deriving it anew decodes every value.
    fn apply(&self, changes: &[Change]) -> LeafView {
        // Sorted by key, the last change to a key winning (a stable sort keeps their order).
        let mut last: Vec<&Change> = changes.iter().collect();
        last.sort_by(|a, b| a.key.cmp(&b.key));
        let mut dedup: Vec<&Change> = Vec::with_capacity(last.len());
        for c in last {
            match dedup.last_mut() {
                Some(prev) if prev.key == c.key => *prev = c,
                _ => dedup.push(c),
            }
        }
        let added: usize = dedup
            .iter()
            .map(|c| c.key.len() + c.value.as_ref().map_or(0, |v| v.len()))
            .sum();
        let inserted = dedup.iter().filter(|c| c.value.is_some()).count();
        let (mut data, mut rows) = spare(self.data.len() + added, self.rows.len() + inserted);
        // Old rows `from..to`, shifted to where they land in `data`.
        let copy = |data: &mut Vec<u8>, rows: &mut Vec<(u32, u32, u32)>, from: usize, to: usize| {
            if from >= to {
                return;
            }
            let (lo, hi) = (self.rows[from].0, self.rows[to - 1].2);
            let at = data.len() as u32;
            data.extend_from_slice(&self.data[lo as usize..hi as usize]);
            rows.extend(
                self.rows[from..to]
                    .iter()
                    .map(|&(s, k, e)| (s - lo + at, k, e - lo + at)),
            );
        };
        let mut next = 0;
        for c in dedup {
            let (pos, replaced) = match self.search(&c.key) {
                Ok(i) => (i, true),
                Err(i) => (i, false),
            };
            copy(&mut data, &mut rows, next, pos);
            if let Some(v) = &c.value {
                let start = data.len();
                data.extend_from_slice(&c.key);
                data.extend_from_slice(v);
                rows.push((start as u32, c.key.len() as u32, data.len() as u32));
            }
            next = if replaced { pos + 1 } else { pos };
        }
        copy(&mut data, &mut rows, next, self.rows.len());
        LeafView { data, rows }
    }

    /// Applies `changes` where the rows lie when every one rewrites a row of the view with a
    /// value of the same length (an update that keeps the row's size, as most sysbench writes
    /// do); otherwise changes nothing and returns false (the caller copies with
    /// [`Self::apply`]). In order, so the last change to a key wins.
    fn apply_in_place(&mut self, changes: &[Change]) -> bool {
        // Only the last change to a key counts (a delete and an insert of one key is a
        // rewrite); at most `CHANGES_MAX` changes, so the quadratic scan is short.
        let last = |i: usize| !changes[i + 1..].iter().any(|c| c.key == changes[i].key);
        let same_place = |c: &Change| match (&c.value, self.search(&c.key)) {
            (Some(v), Ok(i)) => {
                let (s, k, e) = self.rows[i];
                (e - s - k) as usize == v.len()
            }
            _ => false,
        };
        if !(0..changes.len()).all(|i| !last(i) || same_place(&changes[i])) {
            return false;
        }
        for (i, c) in changes.iter().enumerate() {
            if !last(i) {
                continue;
            }
            let (Some(v), Ok(at)) = (&c.value, self.search(&c.key)) else {
                unreachable!("checked above");
            };
            let (s, k, e) = self.rows[at];
            self.data[(s + k) as usize..e as usize].copy_from_slice(v);
        }
        true
    }

    fn bytes(&self) -> usize {
        self.data.capacity() + self.rows.capacity() * std::mem::size_of::<(u32, u32, u32)>()
    }
}

impl BTree {
    /// Debug builds (every test) check each applied view against the leaf itself.
    #[cfg(debug_assertions)]
    fn check_applied(
        &self,
        id: zipdb_storage::PageId,
        l: &CompactLeaf<'_>,
        view: &LeafView,
    ) -> Result<()> {
        assert_eq!(
            view.count(),
            l.count(),
            "leaf {id:?}: applied view's row count"
        );
        let mut buf = Vec::new();
        for i in 0..l.count() {
            buf.clear();
            let v = l.entry_into(i, &mut buf)?;
            let klen = buf.len();
            // Decoded without the record counters, which tests compare.
            match v {
                StoredValue::Raw(b) => buf.extend_from_slice(b),
                StoredValue::Fsst { bytes, .. } => {
                    let t = self.fsst_table(id, l.symtab_version())?;
                    t.decode(bytes, &mut buf).expect("a kept leaf decodes");
                }
                StoredValue::Overflow { .. } => panic!("leaf {id:?}: a view of an overflow row"),
            }
            let (entry, vklen) = view.entry(i);
            assert!(
                vklen == klen && entry == &buf[..],
                "leaf {id:?}: applied view differs from the leaf at row {i}"
            );
        }
        Ok(())
    }

    /// The view of leaf `l` (latched by `g`): the one kept, or a new one when the pool
    /// advises it (room to keep it, and the leaf not rewritten between visits); otherwise the
    /// caller decodes the rows it needs one by one. `None` for leaves without FSST values or with overflow
    /// values, and when there is no room.
    pub(super) fn leaf_view(
        &self,
        g: &PageReadGuard<'_>,
        l: &CompactLeaf<'_>,
    ) -> Result<Option<Arc<LeafView>>> {
        if l.symtab_version() == 0 {
            return Ok(None);
        }
        // A decoded leaf is about twice the page: FSST halves sysbench rows and real text.
        match self.pool.view::<LeafView>(g, 2 * g.len()) {
            ViewLookup::Hit(v) => {
                debug_assert_eq!(v.count(), l.count());
                return Ok(Some(v));
            }
            ViewLookup::Changed(mut old, changes) => {
                let in_place = Arc::get_mut(&mut old).is_some_and(|v| v.apply_in_place(&changes));
                let view = if in_place {
                    old
                } else {
                    Arc::new(old.apply(&changes))
                };
                #[cfg(debug_assertions)]
                self.check_applied(g.id(), l, &view)?;
                let bytes = view.bytes();
                self.pool.put_view(g, view.clone(), bytes);
                return Ok(Some(view));
            }
            ViewLookup::Skip => return Ok(None),
            ViewLookup::Build => {}
        }
        let id = g.id();
        let version = l.symtab_version();
        // The view's exact size, plus what the last decodes reserve past it (the decoder
        // reserves the most its codes could decode to, and a buffer short of that would grow
        // to twice the view).
        let (mut bytes, mut room) = (0, 0);
        for i in 0..l.count() {
            let key = l.key_len(i)?;
            let (len, scratch) = match l.value(i)? {
                StoredValue::Fsst { bytes: codes, len } => (
                    len,
                    max_decoded_len(codes.len()).saturating_add(MAX_SYMBOL_LEN),
                ),
                v => (v.logical_len(), 0),
            };
            room = room.max(bytes + key + scratch);
            bytes += key + len;
        }
        let (mut data, mut rows) = spare(bytes.max(room), l.count());
        for i in 0..l.count() {
            let start = data.len();
            let v = l.entry_into(i, &mut data)?;
            let klen = data.len() - start;
            if matches!(v, StoredValue::Overflow { .. }) {
                return Ok(None);
            }
            self.read_stored(id, version, v, &mut data)?;
            rows.push((start as u32, klen as u32, data.len() as u32));
        }
        let view = Arc::new(LeafView { data, rows });
        let bytes = view.bytes();
        // Not kept when another thread took the room meanwhile; this scan uses it anyway.
        self.pool.put_view(g, view.clone(), bytes);
        Ok(Some(view))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(rows: &[(&[u8], &[u8])]) -> LeafView {
        let (mut data, mut r) = (Vec::new(), Vec::new());
        for (k, v) in rows {
            let s = data.len() as u32;
            data.extend_from_slice(k);
            data.extend_from_slice(v);
            r.push((s, k.len() as u32, data.len() as u32));
        }
        LeafView { data, rows: r }
    }

    fn change(k: &[u8], v: Option<&[u8]>) -> Change {
        Change {
            key: k.into(),
            value: v.map(Into::into),
        }
    }

    fn rows(v: &LeafView) -> Vec<Vec<u8>> {
        (0..v.count()).map(|i| v.entry(i).0.to_vec()).collect()
    }

    #[test]
    fn in_place_only_when_every_last_change_keeps_the_row_size() {
        let base = [(&b"a"[..], &b"111"[..]), (b"b", b"222"), (b"c", b"333")];
        // Rewrites of equal length, a delete then an insert of one key, the last change
        // winning: in place, and the same rows the copying apply gives.
        let ch = [
            change(b"b", Some(b"xxx")),
            change(b"c", None),
            change(b"c", Some(b"yyy")),
            change(b"b", Some(b"zzz")),
        ];
        let mut v = view(&base);
        let copied = v.apply(&ch);
        assert!(v.apply_in_place(&ch));
        assert_eq!(rows(&v), rows(&copied));
        assert_eq!(rows(&v)[1], b"bzzz");
        // Anything that moves rows is refused, and leaves the view as it was.
        for ch in [
            vec![change(b"a", Some(b"1111"))],
            vec![change(b"b", None)],
            vec![change(b"bb", Some(b"444"))],
            vec![change(b"a", Some(b"999")), change(b"c", Some(b"33"))],
        ] {
            let mut v = view(&base);
            assert!(!v.apply_in_place(&ch), "{ch:?}");
            assert_eq!(rows(&v), rows(&view(&base)));
        }
    }
}
