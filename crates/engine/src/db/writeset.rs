//! A transaction's buffered writes to one tree, in key order.
//!
//! Large statements write their rows in key order: `INSERT … SELECT`, `LOAD DATA`, a dump's
//! extended INSERTs, and `UPDATE`/`DELETE` scanning the primary key. An ordered map pays a
//! descent (about 20 key compares at a million entries) for each of them, which was 40 % of
//! a 1M-row INSERT … SELECT with the compares. So keys that arrive above every key seen
//! so far are appended to a sorted vector (one compare), and only the others go to a map.
//! The two hold disjoint keys; reads merge them.

use std::cmp::Ordering;
use std::collections::btree_map;
use std::collections::BTreeMap;
use std::ops::Bound;

use crate::inline_key::InlineKey as Key;

/// `None`: a delete.
pub(super) type Value = Option<Vec<u8>>;

#[derive(Default)]
pub(super) struct WriteSet {
    /// Strictly ascending keys, none of them in `map`.
    run: Vec<(Key, Value)>,
    map: BTreeMap<Key, Value>,
}

impl WriteSet {
    pub(super) fn new() -> WriteSet {
        WriteSet::default()
    }

    pub(super) fn len(&self) -> usize {
        self.run.len() + self.map.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.run.is_empty() && self.map.is_empty()
    }

    fn run_find(&self, key: &[u8]) -> Result<usize, usize> {
        // Above the run's last key (an append, or a probe for one): no search.
        match self.run.last() {
            Some((last, _)) if last.as_slice() < key => Err(self.run.len()),
            _ => self.run.binary_search_by(|(k, _)| k.as_slice().cmp(key)),
        }
    }

    pub(super) fn get(&self, key: &[u8]) -> Option<&Value> {
        match self.run_find(key) {
            Ok(i) => Some(&self.run[i].1),
            Err(_) => self.map.get(key),
        }
    }

    /// Sets `key`, returning the value it replaced. (The key is borrowed: short keys are kept
    /// inline, so an owned one would be an allocation per write for nothing.)
    pub(super) fn insert(&mut self, key: &[u8], value: Value) -> Option<Value> {
        match self.run_find(key) {
            Ok(i) => Some(std::mem::replace(&mut self.run[i].1, value)),
            Err(i) if i == self.run.len() => {
                if let Some(slot) = self.map.get_mut(key) {
                    return Some(std::mem::replace(slot, value));
                }
                self.run.push((Key::new(key), value));
                None
            }
            Err(_) => self.map.insert(Key::new(key), value),
        }
    }

    /// Removes `key`, returning its value. Savepoint rollbacks remove in the reverse order of
    /// the writes, so a key of the run is then its last one (no shift).
    pub(super) fn remove(&mut self, key: &[u8]) -> Option<Value> {
        match self.run_find(key) {
            Ok(i) if i + 1 == self.run.len() => self.run.pop().map(|(_, v)| v),
            Ok(i) => Some(self.run.remove(i).1),
            Err(_) => self.map.remove(key),
        }
    }

    /// The entries in `[lo, hi)`-style bounds, in key order (reversible).
    pub(super) fn range<'a>(&'a self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Range<'a> {
        let start = match lo {
            Bound::Included(k) => self.run.partition_point(|(x, _)| x.as_slice() < k),
            Bound::Excluded(k) => self.run.partition_point(|(x, _)| x.as_slice() <= k),
            Bound::Unbounded => 0,
        };
        let end = match hi {
            Bound::Included(k) => self.run.partition_point(|(x, _)| x.as_slice() <= k),
            Bound::Excluded(k) => self.run.partition_point(|(x, _)| x.as_slice() < k),
            Bound::Unbounded => self.run.len(),
        };
        let run = &self.run[start..end.max(start)];
        Range {
            run: run.iter(),
            map: self.map.range::<[u8], _>((lo, hi)),
            run_front: None,
            map_front: None,
            run_back: None,
            map_back: None,
        }
    }

    pub(super) fn iter(&self) -> Range<'_> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }
}

type Entry<'a> = (&'a [u8], &'a Value);

/// A merge of the run's and the map's entries in a range. Each side is sorted and the two
/// hold no key in common, so the merge is a plain two-way merge from either end.
pub(super) struct Range<'a> {
    run: std::slice::Iter<'a, (Key, Value)>,
    map: btree_map::Range<'a, Key, Value>,
    run_front: Option<Entry<'a>>,
    map_front: Option<Entry<'a>>,
    run_back: Option<Entry<'a>>,
    map_back: Option<Entry<'a>>,
}

fn pick<'a>(
    a: &mut Option<Entry<'a>>,
    b: &mut Option<Entry<'a>>,
    want: Ordering,
) -> Option<Entry<'a>> {
    match (&*a, &*b) {
        (None, None) => None,
        (Some(_), None) => a.take(),
        (None, Some(_)) => b.take(),
        (Some(x), Some(y)) => {
            debug_assert_ne!(x.0, y.0, "the run and the map share a key");
            if x.0.cmp(y.0) == want {
                a.take()
            } else {
                b.take()
            }
        }
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        if self.run_front.is_none() {
            self.run_front = self
                .run
                .next()
                .map(|(k, v)| (k.as_slice(), v))
                .or_else(|| self.run_back.take());
        }
        if self.map_front.is_none() {
            self.map_front = self
                .map
                .next()
                .map(|(k, v)| (k.as_slice(), v))
                .or_else(|| self.map_back.take());
        }
        pick(&mut self.run_front, &mut self.map_front, Ordering::Less)
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.run_back.is_none() {
            self.run_back = self
                .run
                .next_back()
                .map(|(k, v)| (k.as_slice(), v))
                .or_else(|| self.run_front.take());
        }
        if self.map_back.is_none() {
            self.map_back = self
                .map
                .next_back()
                .map(|(k, v)| (k.as_slice(), v))
                .or_else(|| self.map_front.take());
        }
        pick(&mut self.run_back, &mut self.map_back, Ordering::Greater)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, Option<u8>),
        Remove(Vec<u8>),
    }

    /// Short keys over few bytes (so keys collide), sometimes padded past the inline size
    /// (so heap keys are compared with inline ones).
    fn key() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::collection::vec(0u8..4, 0..4),
            prop::bool::weighted(0.2),
        )
            .prop_map(|(mut k, long)| {
                if long {
                    k.resize(crate::inline_key::INLINE + 3, 1);
                }
                k
            })
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (key(), prop::option::of(any::<u8>())).prop_map(|(k, v)| Op::Insert(k, v)),
            1 => key().prop_map(Op::Remove),
        ]
    }

    fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        prop_oneof![
            Just(Bound::Unbounded),
            key().prop_map(Bound::Included),
            key().prop_map(Bound::Excluded),
        ]
    }

    fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
        match b {
            Bound::Included(k) => Bound::Included(k),
            Bound::Excluded(k) => Bound::Excluded(k),
            Bound::Unbounded => Bound::Unbounded,
        }
    }

    /// Whether `BTreeMap::range` accepts these bounds (it panics on an empty or inverted
    /// range); the transaction checks the same before it asks.
    fn valid(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
        match (lo, hi) {
            (Bound::Included(a), Bound::Included(b)) => a <= b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b)) => a < b,
            _ => true,
        }
    }

    fn check(
        ws: &WriteSet,
        model: &BTreeMap<Vec<u8>, Value>,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
    ) {
        assert_eq!(ws.len(), model.len());
        for w in ws.run.windows(2) {
            assert!(w[0].0 < w[1].0, "run not strictly ascending");
        }
        for (k, _) in &ws.run {
            assert!(
                !ws.map.contains_key(k.as_slice()),
                "key in both the run and the map"
            );
        }
        let all: Vec<_> = ws.iter().collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.as_slice(), v)).collect();
        assert_eq!(all, want);
        let (lo, hi) = (as_ref(lo), as_ref(hi));
        if valid(lo, hi) {
            let want: Vec<_> = model
                .range::<[u8], _>((lo, hi))
                .map(|(k, v)| (k.as_slice(), v))
                .collect();
            let got: Vec<_> = ws.range(lo, hi).collect();
            assert_eq!(got, want);
            let got: Vec<_> = ws.range(lo, hi).rev().collect();
            let rev: Vec<_> = want.iter().rev().copied().collect();
            assert_eq!(got, rev);
            // Both ends at once meet in the middle without losing or repeating an entry.
            let mut it = ws.range(lo, hi);
            let mut mixed = Vec::new();
            let mut back = Vec::new();
            let mut flip = false;
            loop {
                let e = if flip { it.next_back() } else { it.next() };
                match e {
                    Some(e) if flip => back.push(e),
                    Some(e) => mixed.push(e),
                    None => break,
                }
                flip = !flip;
            }
            mixed.extend(back.into_iter().rev());
            assert_eq!(mixed, want);
        }
    }

    proptest! {
        #[test]
        fn matches_an_ordered_map(ops in prop::collection::vec(op(), 0..60), lo in bound(), hi in bound()) {
            let mut ws = WriteSet::new();
            let mut model: BTreeMap<Vec<u8>, Value> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        let v = v.map(|b| vec![b]);
                        prop_assert_eq!(ws.insert(&k, v.clone()), model.insert(k.clone(), v));
                    }
                    Op::Remove(k) => prop_assert_eq!(ws.remove(&k), model.remove(&k)),
                }
                for k in model.keys() {
                    prop_assert_eq!(ws.get(k), model.get(k));
                }
                prop_assert_eq!(ws.get(b"\x09"), None);
            }
            check(&ws, &model, &lo, &hi);
        }
    }

    #[test]
    fn ascending_keys_stay_in_the_run() {
        let mut ws = WriteSet::new();
        for i in 0u32..1000 {
            assert_eq!(ws.insert(&i.to_be_bytes(), Some(vec![1])), None);
        }
        assert_eq!(ws.run.len(), 1000);
        assert!(ws.map.is_empty());
        // A rewrite of a key in the run replaces it there; a key below goes to the map.
        assert_eq!(ws.insert(&5u32.to_be_bytes(), None), Some(Some(vec![1])));
        assert_eq!(ws.insert(&[0], Some(vec![2])), None);
        assert_eq!(ws.map.len(), 1);
        // Undone in reverse order, the run's keys leave from its end.
        for i in (0u32..1000).rev() {
            assert!(ws.remove(&i.to_be_bytes()).is_some());
        }
        assert!(ws.run.is_empty());
        assert_eq!(ws.len(), 1);
    }
}
