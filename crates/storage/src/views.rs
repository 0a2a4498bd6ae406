//! Page views: what an upper layer derived from a page's bytes (the engine keeps decoded FSST
//! leaves here), kept while the page is unchanged, in memory the pool is not using.
//!
//! # Validity
//! A view is stored with the page's latch version ([`crate::pool::PageReadGuard::version`]).
//! Every exclusive release of a page bumps that version, and its bytes change only under the
//! exclusive latch, so a view whose version equals the one a reader sees under its shared
//! latch was derived from exactly the bytes that reader sees. A stale view is never returned
//! and is dropped when found.
//!
//! # Memory
//! Views live on the heap. Their total is kept at or below what the pool calls view room: the
//! bytes of its free frames less a reserve. The pool allocates its arena zeroed, so the OS
//! maps frames the pool has never used lazily; views use that memory while the pool does not
//! need it (the data fits the budget with room to spare) and give it up first when it does:
//! every frame the pool takes from its free queue shrinks the views back under the new room.
//! When the budget is tight there is no room and no view is kept, so compressed pages cost no
//! extra memory exactly when memory matters.
//!
//! # Admission and eviction
//! A view is kept only while there is room: a full set is not churned to admit another (see
//! [`PageViews::put`]). Views leave when their page changes, or when the pool shrinks the room;
//! then each shard gives up its views in FIFO order, with a second chance for views used since
//! they were queued.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::page::PageId;

const SHARDS: usize = 16;

/// Per view, what the map and queue cost beyond the view's own bytes (a rough upper bound,
/// so that many tiny views cannot exceed the room unseen).
const ENTRY_OVERHEAD: usize = 96;

/// A shared, type-erased view.
pub type View = Arc<dyn Any + Send + Sync>;

/// A kept view, or the tombstone of one whose page changed (`view: None`), which remembers
/// how the page has been used since so that a page rewritten between visits is not decoded
/// whole again on every visit.
struct Entry {
    /// The page version the view was derived from; for a tombstone, the version last seen.
    version: u64,
    view: Option<View>,
    bytes: usize,
    referenced: bool,
    /// Hits on the view; for a tombstone, visits to `version` so far.
    uses: u32,
    /// Names this entry's place in the shard's queue.
    seq: u64,
    /// Changes made to the page since the view's version, one per version (see
    /// [`PageViews::note_change`]).
    changes: Vec<Change>,
}

impl Entry {
    /// The page version the view plus its changes describe.
    fn covers(&self) -> u64 {
        self.version + self.changes.len() as u64
    }
}

/// One keyed change to a page, as its writer described it: `key` now holds `value`, or
/// nothing. What a key means is the upper layer's business.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub key: Box<[u8]>,
    pub value: Option<Box<[u8]>>,
}

impl Change {
    fn bytes(&self) -> usize {
        32 + self.key.len() + self.value.as_ref().map_or(0, |v| v.len())
    }
}

/// Changes kept per view; a page changed more often between two reads is decoded anew.
const CHANGES_MAX: usize = 32;

/// Visits to one unchanged version a page needs before a view is advised: for a page never
/// seen, and for one whose last view went stale without having served that many. A first
/// visit leaves a tombstone only, so one-pass scans (CREATE INDEX, a dump, a full scan run
/// once) decode each leaf once instead of building a view nobody reads: CREATE INDEX on 400,000
/// fsst rows took 0.55-0.66 s with views built on first visits, 0.34-0.35 s without views
/// (docs/BENCHMARKS.md, session 17).
const USES_TO_REBUILD: u32 = 2;

#[derive(Default)]
struct Shard {
    map: HashMap<u64, Entry>,
    /// (page id, entry seq) in insertion order; a pair whose entry was replaced or removed is
    /// skipped when it comes up.
    fifo: VecDeque<(u64, u64)>,
    next_seq: u64,
}

impl Shard {
    /// Puts a fresh entry for page `id` (a view, or a tombstone when `view` is `None`) at the
    /// back of the queue; returns the entry it replaces.
    fn insert(
        &mut self,
        id: PageId,
        version: u64,
        view: Option<View>,
        bytes: usize,
        uses: u32,
    ) -> Option<Entry> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.fifo.push_back((id.0, seq));
        self.map.insert(
            id.0,
            Entry {
                version,
                view,
                bytes,
                referenced: false,
                uses,
                seq,
                changes: Vec::new(),
            },
        )
    }
}

/// What [`PageViews::get`] found.
pub enum Lookup {
    Hit(View),
    /// A view of an older version, and the changes that lead from it to this one, handed
    /// over: the page's entry is a tombstone until the caller puts the applied view back.
    Changed(View, Vec<Change>),
    /// No view of this version; `build` advises whether deriving one is likely to pay off.
    Miss {
        build: bool,
    },
}

impl Lookup {
    pub fn hit(self) -> Option<View> {
        match self {
            Lookup::Hit(v) => Some(v),
            Lookup::Changed(..) | Lookup::Miss { .. } => None,
        }
    }
}

/// Counters of [`PageViews`] (see [`crate::pool::PoolStats`]).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ViewStats {
    pub hits: u64,
    /// Lookups that found no view, or a stale one.
    pub misses: u64,
    pub stored: u64,
    /// Views refused for want of room.
    pub refused: u64,
    pub evicted: u64,
    /// Lookups that found a view of an older version and the changes since.
    pub changed: u64,
    /// Misses where no view was advised: the page changed since its last view, before that
    /// view served [`USES_TO_REBUILD`] visits.
    pub deferred: u64,
    pub bytes: u64,
    /// Views and tombstones kept.
    pub count: u64,
}

/// The views of one pool.
pub struct PageViews {
    shards: Box<[Mutex<Shard>]>,
    bytes: AtomicUsize,
    count: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    stored: AtomicU64,
    refused: AtomicU64,
    evicted: AtomicU64,
    changed: AtomicU64,
    deferred: AtomicU64,
    /// Next shard [`PageViews::shrink`] takes from.
    rr: AtomicUsize,
}

impl Default for PageViews {
    fn default() -> Self {
        PageViews {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            bytes: AtomicUsize::new(0),
            count: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            changed: AtomicU64::new(0),
            deferred: AtomicU64::new(0),
            rr: AtomicUsize::new(0),
        }
    }
}

impl PageViews {
    fn shard(&self, id: PageId) -> &Mutex<Shard> {
        &self.shards[(id.0 as usize) % SHARDS]
    }

    /// Bytes held by views (with their bookkeeping).
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The view of page `id` at `version`, if one is kept. A view of another version becomes
    /// a tombstone (its bytes freed). A page seen for the first time gets a tombstone, if
    /// `room` has place for one, and no advice to build yet ([`USES_TO_REBUILD`]).
    pub fn get(&self, id: PageId, version: u64, room: usize) -> Lookup {
        let mut s = self.shard(id).lock();
        let Some(e) = s.map.get_mut(&id.0) else {
            let kept =
                self.bytes.fetch_add(ENTRY_OVERHEAD, Ordering::Relaxed) + ENTRY_OVERHEAD <= room;
            if kept {
                s.insert(id, version, None, ENTRY_OVERHEAD, 1);
                self.count.fetch_add(1, Ordering::Relaxed);
            } else {
                self.bytes.fetch_sub(ENTRY_OVERHEAD, Ordering::Relaxed);
            }
            drop(s);
            self.misses.fetch_add(1, Ordering::Relaxed);
            self.deferred.fetch_add(1, Ordering::Relaxed);
            return Lookup::Miss { build: false };
        };
        if e.version != version && e.covers() == version && e.view.is_some() {
            // Handed over, not shared: the entry becomes a tombstone of the old version until
            // the caller puts the applied view back. A caller then holding the only reference
            // can apply the changes in place (the engine does when every change rewrites a row
            // with a value of its length), where a shared view must be copied whole, and
            // write_mix copied about 30 KB per changed leaf visit that way.
            let v = e.view.take().expect("checked");
            let changes = std::mem::take(&mut e.changes);
            let freed = e.bytes - ENTRY_OVERHEAD;
            e.bytes = ENTRY_OVERHEAD;
            drop(s);
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
            self.changed.fetch_add(1, Ordering::Relaxed);
            return Lookup::Changed(v, changes);
        }
        if e.version == version {
            if let Some(v) = &e.view {
                e.referenced = true;
                e.uses = e.uses.saturating_add(1);
                let v = Arc::clone(v);
                drop(s);
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Lookup::Hit(v);
            }
            // A tombstone: one more visit to an unchanged page.
            e.uses = e.uses.saturating_add(1);
        } else {
            // The page changed: a view becomes a tombstone that keeps what it served (a view
            // that served enough visits is rebuilt at once); a tombstone starts counting anew.
            if e.view.take().is_none() {
                e.uses = 1;
            }
            e.version = version;
            e.changes = Vec::new();
            let freed = e.bytes - ENTRY_OVERHEAD;
            e.bytes = ENTRY_OVERHEAD;
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
        let build = e.uses >= USES_TO_REBUILD;
        drop(s);
        self.misses.fetch_add(1, Ordering::Relaxed);
        if !build {
            self.deferred.fetch_add(1, Ordering::Relaxed);
        }
        Lookup::Miss { build }
    }

    /// Whether a view of `bytes` bytes would be kept under `room` now.
    pub fn fits(&self, bytes: usize, room: usize) -> bool {
        self.bytes() + bytes + ENTRY_OVERHEAD <= room
    }

    /// Keeps `view` (about `bytes` bytes) for page `id` at `version` if the total stays within
    /// `room`. Returns whether it was kept.
    ///
    /// A full set of views is not churned to admit a new one: with access spread wider than
    /// the room (uniform reads over data larger than it), replacing views would rebuild a
    /// leaf on almost every visit and keep few long enough to pay off, while a set kept as it
    /// is serves its share of visits for free. Views leave when their page changes, or when
    /// the pool needs the memory ([`PageViews::shrink`]).
    pub fn put(&self, id: PageId, version: u64, view: View, bytes: usize, room: usize) -> bool {
        let bytes = bytes + ENTRY_OVERHEAD;
        let mut s = self.shard(id).lock();
        // A view replacing one of the same page needs only the difference, and is kept even
        // past the room when that difference is what the old view's changes already held
        // (refusing it would leave readers applying the same changes on every visit).
        let (old_bytes, replaces) = s
            .map
            .get(&id.0)
            .map_or((0, false), |e| (e.bytes, e.view.is_some()));
        let more = bytes.saturating_sub(old_bytes);
        let slack = if replaces { 4096 } else { 0 };
        // Reserve first, so that concurrent admissions cannot pass the room together.
        if self.bytes.fetch_add(more, Ordering::Relaxed) + more > room + slack {
            self.bytes.fetch_sub(more, Ordering::Relaxed);
            // An old view left in place would have its changes applied again by every
            // reader: it becomes a tombstone.
            if let Some(e) = s.map.get_mut(&id.0).filter(|e| e.view.is_some()) {
                let freed = e.bytes - ENTRY_OVERHEAD;
                e.view = None;
                e.changes = Vec::new();
                e.version = version;
                e.uses = 1;
                e.bytes = ENTRY_OVERHEAD;
                self.bytes.fetch_sub(freed, Ordering::Relaxed);
            }
            drop(s);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let old = s.insert(id, version, Some(view), bytes, 0);
        drop(s);
        match old {
            // `more` was reserved; what the old entry held beyond it goes.
            Some(old) => {
                self.bytes
                    .fetch_sub(old.bytes - (bytes - more), Ordering::Relaxed);
            }
            None => {
                self.count.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.stored.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Records that the writer holding page `id` at `version` (exclusively, about to release
    /// it as `version + 1`) changed `key` to `value` (`None`: removed it). The page's view,
    /// if one is kept and its changes reach `version`, gets the change; later readers then
    /// apply the changes to the view rather than derive it anew. Anything else (no view, a
    /// view already behind, too many changes) records nothing: the view is stale for readers.
    pub fn note_change(&self, id: PageId, version: u64, key: &[u8], value: Option<&[u8]>) {
        let mut s = self.shard(id).lock();
        let Some(e) = s.map.get_mut(&id.0) else {
            return;
        };
        if e.view.is_none() || e.covers() != version || e.changes.len() >= CHANGES_MAX {
            return;
        }
        let c = Change {
            key: key.into(),
            value: value.map(Into::into),
        };
        let b = c.bytes();
        e.changes.push(c);
        e.bytes += b;
        drop(s);
        // Counted against the room only when the next view is admitted: a write never waits
        // for or refuses on views.
        self.bytes.fetch_add(b, Ordering::Relaxed);
    }

    fn forget(&self, bytes: usize) {
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Evicts views until their total is at most `room` (or none is left).
    pub fn shrink(&self, room: usize) {
        let mut empty_in_a_row = 0;
        while self.bytes() > room && empty_in_a_row < SHARDS {
            let i = self.rr.fetch_add(1, Ordering::Relaxed) % SHARDS;
            if self.evict_one(&self.shards[i]) {
                empty_in_a_row = 0;
            } else {
                empty_in_a_row += 1;
            }
        }
    }

    /// Evicts the oldest view of a shard not used since it was queued (used ones go to the
    /// back once). Returns whether one was evicted.
    fn evict_one(&self, shard: &Mutex<Shard>) -> bool {
        let mut s = shard.lock();
        // Every queued id is looked at most twice: once to clear its bit, once to evict.
        let mut budget = 2 * s.fifo.len();
        while budget > 0 {
            budget -= 1;
            let Some((id, seq)) = s.fifo.pop_front() else {
                return false;
            };
            let Some(e) = s.map.get_mut(&id) else {
                continue;
            };
            if e.seq != seq {
                continue;
            }
            if e.referenced {
                e.referenced = false;
                s.fifo.push_back((id, seq));
                continue;
            }
            let e = s.map.remove(&id).expect("entry just seen");
            drop(s);
            self.forget(e.bytes);
            self.evicted.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        false
    }

    pub fn stats(&self) -> ViewStats {
        ViewStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stored: self.stored.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            changed: self.changed.load(Ordering::Relaxed),
            deferred: self.deferred.load(Ordering::Relaxed),
            bytes: self.bytes() as u64,
            count: self.count.load(Ordering::Relaxed) as u64,
        }
    }

    /// Checks that the byte and view totals match the shards.
    pub fn verify(&self) -> std::result::Result<(), String> {
        let (mut bytes, mut count) = (0usize, 0usize);
        for s in self.shards.iter() {
            let s = s.lock();
            for (id, e) in &s.map {
                if !s.fifo.iter().any(|&(i, q)| i == *id && q == e.seq) {
                    return Err(format!("view of page {id} is not queued"));
                }
                bytes += e.bytes;
                count += 1;
            }
        }
        if bytes != self.bytes() || count != self.count.load(Ordering::Relaxed) {
            return Err(format!(
                "views: totals say {} bytes in {} views, shards hold {bytes} in {count}",
                self.bytes(),
                self.count.load(Ordering::Relaxed)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Room for every view and tombstone a test makes.
    const ROOM: usize = 1 << 20;

    fn view(n: usize) -> View {
        Arc::new(vec![7u8; n])
    }

    #[test]
    fn a_view_is_returned_only_for_its_version() {
        let v = PageViews::default();
        assert!(v.put(PageId(3), 10, view(100), 100, 1 << 20));
        assert!(v.get(PageId(3), 10, ROOM).hit().is_some());
        // A newer version of the page: the view is stale, dropped, and not returned again.
        assert!(v.get(PageId(3), 11, ROOM).hit().is_none());
        assert!(v.get(PageId(3), 10, ROOM).hit().is_none());
        // What is left is a tombstone.
        assert_eq!(v.bytes(), ENTRY_OVERHEAD);
        let s = v.stats();
        assert_eq!((s.hits, s.misses, s.count), (1, 2, 1));
        v.verify().unwrap();
    }

    #[test]
    fn a_page_rewritten_between_visits_gets_no_new_view_until_it_holds_still() {
        let v = PageViews::default();
        let room = 1 << 20;
        // Never seen: a tombstone; seen twice at one version: build.
        assert!(matches!(
            v.get(PageId(1), 1, ROOM),
            Lookup::Miss { build: false }
        ));
        assert!(matches!(
            v.get(PageId(1), 1, ROOM),
            Lookup::Miss { build: true }
        ));
        assert!(v.put(PageId(1), 1, view(100), 100, room));
        // Changed before its view served twice: no rebuild advised.
        assert!(v.get(PageId(1), 1, ROOM).hit().is_some());
        assert!(matches!(
            v.get(PageId(1), 2, ROOM),
            Lookup::Miss { build: false }
        ));
        // Changed again: still none; then a second visit to one version advises one.
        assert!(matches!(
            v.get(PageId(1), 3, ROOM),
            Lookup::Miss { build: false }
        ));
        assert!(matches!(
            v.get(PageId(1), 3, ROOM),
            Lookup::Miss { build: true }
        ));
        assert!(v.put(PageId(1), 3, view(100), 100, room));
        // A view that served twice is rebuilt at once after a change.
        assert!(v.get(PageId(1), 3, ROOM).hit().is_some());
        assert!(v.get(PageId(1), 3, ROOM).hit().is_some());
        assert!(matches!(
            v.get(PageId(1), 4, ROOM),
            Lookup::Miss { build: true }
        ));
        assert_eq!(v.stats().deferred, 3);
        v.verify().unwrap();
    }

    #[test]
    fn a_first_visit_leaves_a_tombstone_within_the_room() {
        let v = PageViews::default();
        // No room for a tombstone: nothing is kept, and no build is advised either.
        assert!(matches!(
            v.get(PageId(7), 1, 10),
            Lookup::Miss { build: false }
        ));
        assert_eq!((v.bytes(), v.stats().count), (0, 0));
        // Room: the first visit is remembered, the second advises a view.
        assert!(matches!(
            v.get(PageId(7), 1, ROOM),
            Lookup::Miss { build: false }
        ));
        assert_eq!((v.bytes(), v.stats().count), (ENTRY_OVERHEAD, 1));
        v.verify().unwrap();
        assert!(matches!(
            v.get(PageId(7), 1, ROOM),
            Lookup::Miss { build: true }
        ));
        // A tombstone is evicted like a view when the room shrinks.
        v.shrink(0);
        assert_eq!((v.bytes(), v.stats().count), (0, 0));
        v.verify().unwrap();
    }

    #[test]
    fn room_bounds_the_total_and_shrinking_evicts_unused_views_first() {
        let v = PageViews::default();
        let per = 1000 + ENTRY_OVERHEAD;
        let room = 4 * per;
        for id in 0..4 {
            assert!(v.fits(1000, room));
            assert!(v.put(PageId(id * SHARDS as u64), 1, view(1000), 1000, room));
        }
        assert_eq!(v.bytes(), room);
        // Full: a new view is refused, the kept ones stay.
        assert!(!v.fits(1000, room));
        assert!(!v.put(PageId(64), 1, view(1000), 1000, room));
        assert_eq!(v.stats().refused, 1);
        // Page 0 is used, so its view survives a shrink by one; page 16's does not.
        assert!(v.get(PageId(0), 1, ROOM).hit().is_some());
        v.shrink(3 * per);
        assert!(v.get(PageId(0), 1, ROOM).hit().is_some());
        assert!(v.get(PageId(16), 1, ROOM).hit().is_none());
        v.verify().unwrap();
        // No room at all: everything goes, and nothing new is kept.
        v.shrink(0);
        assert_eq!((v.bytes(), v.stats().count), (0, 0));
        assert!(!v.put(PageId(1), 1, view(10), 10, 50));
        assert_eq!(v.stats().refused, 2);
        v.verify().unwrap();
    }

    #[test]
    fn changes_lead_from_a_view_to_the_version_they_reach() {
        let v = PageViews::default();
        let room = 1 << 20;
        assert!(v.put(PageId(2), 5, view(100), 100, room));
        // The writer holds version 5 and releases it as 6, then 6 as 7.
        v.note_change(PageId(2), 5, b"k1", Some(b"v1"));
        v.note_change(PageId(2), 6, b"k2", None);
        let Lookup::Changed(_, ch) = v.get(PageId(2), 7, ROOM) else {
            panic!("changes reach version 7");
        };
        assert_eq!(ch.len(), 2);
        assert_eq!(
            (&*ch[0].key, ch[0].value.as_deref()),
            (&b"k1"[..], Some(&b"v1"[..]))
        );
        assert_eq!((&*ch[1].key, ch[1].value.as_deref()), (&b"k2"[..], None));
        // Version 6 is neither the view's nor the changes' end: nothing to apply.
        assert!(matches!(v.get(PageId(2), 6, ROOM), Lookup::Miss { .. }));
        v.verify().unwrap();

        // A version bump without a change (the page left the pool and came back) breaks the
        // chain for good.
        assert!(v.put(PageId(3), 1, view(100), 100, room));
        v.note_change(PageId(3), 2, b"k", Some(b"v"));
        assert!(matches!(v.get(PageId(3), 3, ROOM), Lookup::Miss { .. }));
        // The applied view replaces the old one at the same cost in room.
        assert!(v.put(PageId(2), 9, view(100), 100, room));
        assert!(v.put(PageId(2), 9, view(100), 100, 2 * (100 + ENTRY_OVERHEAD)));
        assert!(v.get(PageId(2), 9, ROOM).hit().is_some());
        v.verify().unwrap();
    }

    #[test]
    fn a_refused_replacement_leaves_a_tombstone_not_the_old_view() {
        let v = PageViews::default();
        let per = 100 + ENTRY_OVERHEAD;
        assert!(v.put(PageId(4), 1, view(100), 100, per));
        v.note_change(PageId(4), 1, b"k", Some(b"v"));
        assert!(matches!(v.get(PageId(4), 2, ROOM), Lookup::Changed(..)));
        // The applied view grew past the room and the slack: refused.
        assert!(!v.put(PageId(4), 2, view(100_000), 100_000, per));
        assert!(matches!(v.get(PageId(4), 2, ROOM), Lookup::Miss { .. }));
        assert_eq!(v.bytes(), ENTRY_OVERHEAD);
        v.verify().unwrap();
    }

    #[test]
    fn replacing_a_view_keeps_the_totals() {
        let v = PageViews::default();
        assert!(v.put(PageId(5), 1, view(10), 10, 1 << 20));
        assert!(v.put(PageId(5), 2, view(20), 20, 1 << 20));
        assert_eq!(v.bytes(), 20 + ENTRY_OVERHEAD);
        assert!(v.get(PageId(5), 2, ROOM).hit().is_some());
        v.verify().unwrap();
        v.shrink(0);
        assert_eq!(v.bytes(), 0);
        v.verify().unwrap();
    }

    #[test]
    fn concurrent_use_keeps_the_totals() {
        let v = Arc::new(PageViews::default());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let v = Arc::clone(&v);
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let id = PageId((i * 7 + t) % 97);
                        if v.get(id, i % 3, 40 * (64 + ENTRY_OVERHEAD)).hit().is_none() {
                            v.put(id, i % 3, view(64), 64, 40 * (64 + ENTRY_OVERHEAD));
                        }
                        if i % 500 == 0 {
                            v.shrink(10 * (64 + ENTRY_OVERHEAD));
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        v.verify().unwrap();
        assert!(v.bytes() <= 40 * (64 + ENTRY_OVERHEAD));
    }
}
