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

use std::cmp::Ordering;
use std::sync::Arc;

use zipdb_storage::fsst::{max_decoded_len, MAX_SYMBOL_LEN};
use zipdb_storage::pool::{PageReadGuard, ViewLookup};
use zipdb_storage::views::Change;

use super::compact::{CompactLeaf, StoredValue};
use super::BTree;
use crate::error::Result;

/// Every entry of one compact leaf, decoded.
pub(super) struct LeafView {
    /// The entries back to back, in key order: each key, then its value.
    data: Vec<u8>,
    /// Per entry, where it lies in `data` and its key head. A value ends where the next
    /// entry starts (the last one at the end of `data`).
    rows: Vec<Row>,
    /// Bytes every key of the view starts with (the common prefix of its first and last key).
    prefix_len: usize,
}

/// One entry of a [`LeafView`]: key at `start..start + klen` of the view's data, then the
/// value.
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    start: u32,
    klen: u32,
    /// The 4 key bytes after the view's common prefix, zero-padded, read big-endian: ordered
    /// as the keys are (a tie needs the keys compared). `search` compares these rather than
    /// keys: each key compared was a cache miss into the 30–60 KB of `data`, and the
    /// searches of range starts and change applies took a fifth of an fsst write_mix run.
    head: u32,
}

/// The head of a key suffix (see [`Row::head`]).
#[inline]
fn head_of(suffix: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = suffix.len().min(4);
    b[..n].copy_from_slice(&suffix[..n]);
    u32::from_be_bytes(b)
}

/// Buffers of dropped views, for the next build or apply. A view is 30–60 KB; allocating and
/// freeing one per rebuild had glibc consolidating its heap under the SQL server's small
/// allocations (malloc, consolidate and unlink went from 7.4% to 12% of server CPU in
/// oltp_read_write at 128 MB, more than the decodes saved).
static SPARE: parking_lot::Mutex<Vec<Buffers>> = parking_lot::Mutex::new(Vec::new());
/// A view's bytes and rows.
type Buffers = (Vec<u8>, Vec<Row>);

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
    /// The view of `data` and `rows` (key heads not yet set), entries in key order.
    fn new(data: Vec<u8>, mut rows: Vec<Row>) -> LeafView {
        let mut v = LeafView {
            data,
            rows: Vec::new(),
            prefix_len: 0,
        };
        if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
            let key = |r: &Row| &v.data[r.start as usize..(r.start + r.klen) as usize];
            let (a, b) = (key(first), key(last));
            v.prefix_len = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            for r in &mut rows {
                r.head = head_of(&key(r)[v.prefix_len..]);
            }
        }
        v.rows = rows;
        v
    }

    pub(super) fn count(&self) -> usize {
        self.rows.len()
    }

    /// Where entry `i` ends in `data`.
    #[inline]
    fn end(&self, i: usize) -> usize {
        self.rows
            .get(i + 1)
            .map_or(self.data.len(), |r| r.start as usize)
    }

    pub(super) fn key(&self, i: usize) -> &[u8] {
        let r = self.rows[i];
        &self.data[r.start as usize..(r.start + r.klen) as usize]
    }

    /// Key and value of entry `i` as one slice (the key first, `klen` bytes).
    pub(super) fn entry(&self, i: usize) -> (&[u8], usize) {
        let r = self.rows[i];
        (&self.data[r.start as usize..self.end(i)], r.klen as usize)
    }

    /// Where `key` is (`Ok`) or would go (`Err`), as `binary_search` answers.
    pub(super) fn search(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        let count = self.rows.len();
        let plen = self.prefix_len;
        if plen > 0 {
            // Every key starts with the first key's `plen` bytes.
            let prefix = &self.key(0)[..plen];
            let n = plen.min(key.len());
            match key[..n].cmp(&prefix[..n]) {
                Ordering::Less => return Err(0),
                Ordering::Greater => return Err(count),
                Ordering::Equal if key.len() < plen => return Err(0),
                Ordering::Equal => {}
            }
        }
        let h = head_of(&key[plen..]);
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let ord = match self.rows[mid].head.cmp(&h) {
                Ordering::Equal => self.key(mid)[plen..].cmp(&key[plen..]),
                o => o,
            };
            match ord {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
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
        let copy = |data: &mut Vec<u8>, rows: &mut Vec<Row>, from: usize, to: usize| {
            if from >= to {
                return;
            }
            let (lo, hi) = (self.rows[from].start, self.end(to - 1));
            let at = data.len() as u32;
            data.extend_from_slice(&self.data[lo as usize..hi]);
            rows.extend(self.rows[from..to].iter().map(|r| Row {
                start: r.start - lo + at,
                ..*r
            }));
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
                rows.push(Row {
                    start: start as u32,
                    klen: c.key.len() as u32,
                    head: 0,
                });
            }
            next = if replaced { pos + 1 } else { pos };
        }
        copy(&mut data, &mut rows, next, self.rows.len());
        // The heads again: an insert below the first key or above the last one may shorten
        // the common prefix.
        LeafView::new(data, rows)
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
                let r = self.rows[i];
                self.end(i) - (r.start + r.klen) as usize == v.len()
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
            let (r, end) = (self.rows[at], self.end(at));
            self.data[(r.start + r.klen) as usize..end].copy_from_slice(v);
        }
        true
    }

    fn bytes(&self) -> usize {
        self.data.capacity() + self.rows.capacity() * std::mem::size_of::<Row>()
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
            rows.push(Row {
                start: start as u32,
                klen: klen as u32,
                head: 0,
            });
        }
        let view = Arc::new(LeafView::new(data, rows));
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
            r.push(Row {
                start: s,
                klen: k.len() as u32,
                head: 0,
            });
        }
        LeafView::new(data, r)
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

    /// Search by key heads agrees with a binary search of the keys, for keys sharing long
    /// prefixes, keys that are prefixes of others, zero bytes (the heads' padding) and probes
    /// outside the common prefix; also after applies that change the first or last key.
    #[test]
    fn search_by_heads_matches_a_key_search() {
        let alphabet: [&[u8]; 4] = [b"", b"\0", b"a", b"\xff"];
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for p in [&b"pre"[..], b"pre\0", b"prefix"] {
            for a in alphabet {
                for b in alphabet {
                    for c in [&b""[..], b"\0\0\0\0\0", b"zzzz1", b"zzzz2"] {
                        keys.push([p, a, b, c].concat());
                    }
                }
            }
        }
        keys.sort();
        keys.dedup();
        let mut probes = keys.clone();
        for k in &keys {
            probes.push([k.as_slice(), b"\0"].concat());
            probes.push(k[..k.len() - 1].to_vec());
        }
        probes.extend([b"".to_vec(), b"p".to_vec(), b"q".to_vec(), b"pre".to_vec()]);
        let check = |keys: &[Vec<u8>]| {
            let rows: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &b"v"[..])).collect();
            let v = view(&rows);
            for p in &probes {
                assert_eq!(
                    v.search(p),
                    keys.binary_search(p),
                    "probe {p:?} in {} keys",
                    keys.len()
                );
            }
        };
        check(&keys);
        // Only the keys with the longer shared prefix, one key, none.
        let long: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| k.starts_with(b"prefix"))
            .cloned()
            .collect();
        check(&long);
        check(&long[..1]);
        check(&[]);
        // An apply that adds a key below every other one recomputes the prefix and heads.
        let rows: Vec<(&[u8], &[u8])> = long.iter().map(|k| (&k[..], &b"v"[..])).collect();
        let applied = view(&rows).apply(&[change(b"a", Some(b"w")), change(&long[1], None)]);
        let mut expect: Vec<Vec<u8>> = long.clone();
        expect.remove(1);
        expect.insert(0, b"a".to_vec());
        for p in probes.iter().chain(&long) {
            assert_eq!(applied.search(p), expect.binary_search(p), "probe {p:?}");
        }
        assert_eq!(applied.entry(0), (&b"aw"[..], 1));
        assert_eq!(
            applied.entry(expect.len() - 1).0,
            [&expect[expect.len() - 1][..], b"v"].concat()
        );
    }
}
