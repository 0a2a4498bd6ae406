//! Snapshots and old row versions (multi-version concurrency control).
//!
//! The B-trees hold only the newest committed value of each row; a transaction's writes stay in
//! its own write set until commit. Old values live here, in memory only: when a commit replaces
//! or deletes a row while some snapshot may still need the row as it was, the row's previous
//! value (its *before-image*) is kept in a per-tree ordered map, tagged with the commit's
//! timestamp. A reader with snapshot `s` reading key `k` takes the tree's value unless `k` has
//! a before-image tagged later than `s`; then the earliest such before-image is what `k` was
//! at `s`. Pages on disk never carry versions, so versions cost no compression ratio and no
//! page space; they cost memory for rows changed since the oldest running snapshot began, and
//! are dropped as soon as no snapshot can need them.
//!
//! Timestamps are handed out when a commit starts applying its writes, and a commit is
//! *published* once it and every commit with a smaller timestamp have finished applying. A
//! snapshot is the published timestamp when it is taken: it sees exactly the commits with a
//! timestamp at or below it. `commit` returns only after its own commit is published, so a
//! transaction begun after another's commit returned always sees it.
//!
//! Ordering that makes a lock-free read safe: a commit records the before-image *before* it
//! changes the tree, and a reader reads the tree *before* it looks for before-images. So a
//! reader that saw the new value also sees the before-image; one that saw the old value
//! either sees no before-image or one equal to what it saw.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use zipdb_storage::TreeId;

/// A commit timestamp (snapshots are timestamps too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ts(pub u64);

/// One row's before-images, oldest first.
type Chain = Vec<(Ts, Option<Box<[u8]>>)>;

/// Before-images of one tree, by key.
#[derive(Default)]
pub(crate) struct TreeVersions {
    map: RwLock<BTreeMap<Box<[u8]>, Chain>>,
    len: AtomicUsize,
}

impl TreeVersions {
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// What snapshot `s` sees for `key` (read the tree first, then call this).
    pub(crate) fn visible(&self, key: &[u8], s: Ts) -> Visible {
        if self.is_empty() {
            return Visible::Tree;
        }
        let m = self.map.read();
        match m.get(key).and_then(|c| c.iter().find(|(t, _)| *t > s)) {
            Some((_, v)) => Visible::Old(v.as_ref().map(|b| b.to_vec())),
            None => Visible::Tree,
        }
    }

    /// The first key strictly between `lo` and `hi` (in scan direction) that snapshot `s`
    /// must see from before-images, with what it sees.
    pub(crate) fn next_old(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        s: Ts,
    ) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        if self.is_empty() {
            return None;
        }
        let m = self.map.read();
        let pick = |k: &[u8], c: &Chain| -> Option<(Vec<u8>, Option<Vec<u8>>)> {
            c.iter()
                .find(|(t, _)| *t > s)
                .map(|(_, v)| (k.to_vec(), v.as_ref().map(|b| b.to_vec())))
        };
        let r = m.range::<[u8], _>((lo, hi));
        if reverse {
            r.rev().find_map(|(k, c)| pick(k, c))
        } else {
            r.into_iter().find_map(|(k, c)| pick(k, c))
        }
    }
}

/// What a snapshot sees for a key, given the tree's current value.
pub(crate) enum Visible {
    /// The tree's value is the one.
    Tree,
    /// This older value (None: the key did not exist).
    Old(Option<Vec<u8>>),
}

struct State {
    /// Last timestamp handed out.
    last_ts: u64,
    /// Commits applying now: timestamp → whether they skipped recording before-images.
    in_flight: BTreeMap<u64, bool>,
    skipping: usize,
    /// Snapshots being taken, waiting for commits that skipped before-images.
    starting: usize,
    /// Running snapshots (timestamp → count).
    snapshots: BTreeMap<u64, usize>,
}

impl State {
    fn published(&self) -> u64 {
        match self.in_flight.first_key_value() {
            Some((&t, _)) => t - 1,
            None => self.last_ts,
        }
    }
}

/// A before-image to collect: its commit, tree and key.
type GcItem = (Ts, TreeId, Box<[u8]>);

/// A commit between [`Mvcc::begin_commit`] and [`Mvcc::finish_commit`].
#[derive(Debug)]
pub(crate) struct CommitTicket {
    pub ts: Ts,
    /// Whether before-images must be recorded (some snapshot may need them).
    pub keep_versions: bool,
}

/// Counters of the version store.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MvccStats {
    /// Before-images held now.
    pub versions: u64,
    /// Bytes of keys and values held by them (approximate: payload only).
    pub version_bytes: u64,
    pub versions_recorded: u64,
    pub versions_collected: u64,
    /// Running snapshots and the oldest one's age in commits.
    pub snapshots: u64,
    pub oldest_snapshot_lag: u64,
}

pub(crate) struct Mvcc {
    state: Mutex<State>,
    published: AtomicU64,
    trees: RwLock<HashMap<TreeId, Arc<TreeVersions>>>,
    /// How many times `trees` gained an entry: a scan of a tree without before-images asks
    /// `trees` again only when this moved, not once per row.
    trees_added: AtomicU64,
    /// Before-images in the order recorded, for collection.
    gc_queue: Mutex<VecDeque<GcItem>>,
    versions: AtomicU64,
    version_bytes: AtomicU64,
    recorded: AtomicU64,
    collected: AtomicU64,
}

impl Mvcc {
    pub fn new() -> Mvcc {
        Mvcc {
            state: Mutex::new(State {
                last_ts: 1,
                in_flight: BTreeMap::new(),
                skipping: 0,
                starting: 0,
                snapshots: BTreeMap::new(),
            }),
            published: AtomicU64::new(1),
            trees: RwLock::new(HashMap::new()),
            trees_added: AtomicU64::new(0),
            gc_queue: Mutex::new(VecDeque::new()),
            versions: AtomicU64::new(0),
            version_bytes: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
            collected: AtomicU64::new(0),
        }
    }

    /// Takes and registers a snapshot. Waits for commits that skipped before-images (they
    /// did so because no snapshot was running) and are still applying: the snapshot could not
    /// read their rows as they were. It announces itself first, so commits that start from now
    /// on keep before-images and the wait ends after the ones already applying (microseconds).
    pub fn begin_snapshot(&self) -> Ts {
        let mut st = self.state.lock();
        st.starting += 1;
        while st.skipping > 0 {
            drop(st);
            std::thread::yield_now();
            st = self.state.lock();
        }
        st.starting -= 1;
        let s = st.published();
        *st.snapshots.entry(s).or_insert(0) += 1;
        Ts(s)
    }

    pub fn end_snapshot(&self, s: Ts) {
        let mut st = self.state.lock();
        match st.snapshots.get_mut(&s.0) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                st.snapshots.remove(&s.0);
            }
            None => debug_assert!(false, "snapshot {s:?} ended twice"),
        }
    }

    pub fn begin_commit(&self) -> CommitTicket {
        let mut st = self.state.lock();
        st.last_ts += 1;
        let ts = st.last_ts;
        let keep = !st.snapshots.is_empty() || st.starting > 0;
        st.in_flight.insert(ts, !keep);
        if !keep {
            st.skipping += 1;
        }
        CommitTicket {
            ts: Ts(ts),
            keep_versions: keep,
        }
    }

    /// Marks the commit applied and waits until it is published (every earlier commit has
    /// finished applying too).
    #[cfg(test)]
    pub fn finish_commit(&self, t: CommitTicket) {
        let ts = self.mark_applied(t);
        self.wait_published(ts);
    }

    /// Marks the commit applied, publishing it (and later ones already applied) if every
    /// earlier commit has finished applying. Does not wait.
    pub fn mark_applied(&self, t: CommitTicket) -> Ts {
        let mut st = self.state.lock();
        let skipped = st.in_flight.remove(&t.ts.0);
        assert_eq!(
            skipped,
            Some(!t.keep_versions),
            "commit {t:?} finished twice"
        );
        if !t.keep_versions {
            st.skipping -= 1;
        }
        self.published.store(st.published(), Ordering::Release);
        t.ts
    }

    /// Waits until commit `ts` (already marked applied) is published. The engine calls it
    /// after the commit's log flush, by which time the earlier commits have almost always
    /// finished applying, so the wait is rarely more than a load.
    pub fn wait_published(&self, ts: Ts) {
        let mut spins = 0u32;
        while self.published.load(Ordering::Acquire) < ts.0 {
            if spins < 64 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn tree(&self, tree: TreeId) -> Option<Arc<TreeVersions>> {
        self.trees.read().get(&tree).cloned()
    }

    /// Records that the commit `ts` replaces key's value `before` (None: the key was absent).
    pub fn record(&self, tree: TreeId, key: &[u8], ts: Ts, before: Option<Vec<u8>>) {
        let tv = match self.tree(tree) {
            Some(t) => t,
            None => {
                let mut trees = self.trees.write();
                let tv = trees.entry(tree).or_default().clone();
                // After the entry is in the map, so that a scan that sees the new count finds
                // it (and before the commit writes the tree, which a scan reads first).
                self.trees_added.fetch_add(1, Ordering::Release);
                tv
            }
        };
        let bytes = key.len() + before.as_ref().map_or(0, |v| v.len());
        {
            let mut m = tv.map.write();
            let chain = m.entry(key.into()).or_default();
            debug_assert!(chain.last().is_none_or(|(t, _)| *t < ts));
            chain.push((ts, before.map(Vec::into_boxed_slice)));
            tv.len.fetch_add(1, Ordering::Release);
        }
        self.versions.fetch_add(1, Ordering::Relaxed);
        self.version_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.recorded.fetch_add(1, Ordering::Relaxed);
        self.gc_queue.lock().push_back((ts, tree, key.into()));
    }

    /// What snapshot `s` sees for `key` (read the tree first, then call this).
    pub fn visible(&self, tree: TreeId, key: &[u8], s: Ts) -> Visible {
        match self.tree(tree) {
            Some(tv) => tv.visible(key, s),
            None => Visible::Tree,
        }
    }

    /// The before-images of `tree`, once it has had any. The map keeps the same `Arc` for a
    /// tree until [`Mvcc::drop_tree`], so a scan may hold it instead of looking it up for
    /// every row; `None` means none yet, and must be asked again (a commit may add some).
    pub(crate) fn tree_versions(&self, tree: TreeId) -> Option<Arc<TreeVersions>> {
        self.tree(tree)
    }

    /// A count that moves whenever some tree gets its first before-image (see
    /// `trees_added`); read it before [`Mvcc::tree_versions`].
    pub(crate) fn trees_added(&self) -> u64 {
        self.trees_added.load(Ordering::Acquire)
    }

    /// Whether a commit after snapshot `s` changed `key` (first-updater-wins check; the caller
    /// holds the row lock, so no commit of `key` is in flight).
    pub fn changed_since(&self, tree: TreeId, key: &[u8], s: Ts) -> bool {
        let Some(tv) = self.tree(tree) else {
            return false;
        };
        let m = tv.map.read();
        m.get(key)
            .and_then(|c| c.last())
            .is_some_and(|(t, _)| *t > s)
    }

    /// The first key strictly between `after` and `before` (in scan direction) that snapshot
    /// `s` must see from before-images, with what it sees. (Scans hold the tree's
    /// [`TreeVersions`] and ask it directly; this is the by-id form the tests use.)
    #[cfg(test)]
    pub fn next_old(
        &self,
        tree: TreeId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        s: Ts,
    ) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        self.tree(tree)?.next_old(lo, hi, reverse, s)
    }

    /// Drops before-images no running or future snapshot can need; at most `budget` of them.
    pub fn collect(&self, budget: usize) -> usize {
        // Every commit calls this; without snapshots there is never anything to collect.
        if self.versions.load(Ordering::Acquire) == 0 {
            return 0;
        }
        let horizon = {
            let st = self.state.lock();
            let oldest = st.snapshots.first_key_value().map(|(&s, _)| s);
            oldest.unwrap_or(u64::MAX).min(st.published())
        };
        let mut done = 0;
        while done < budget {
            let item = {
                let mut q = self.gc_queue.lock();
                match q.front() {
                    Some((ts, _, _)) if ts.0 <= horizon => q.pop_front(),
                    _ => None,
                }
            };
            let Some((_, tree, key)) = item else { break };
            let Some(tv) = self.tree(tree) else { continue };
            let mut m = tv.map.write();
            if let Some(chain) = m.get_mut(&key) {
                let before = chain.len();
                let mut bytes = 0;
                chain.retain(|(t, v)| {
                    let keep = t.0 > horizon;
                    if !keep {
                        bytes += key.len() + v.as_ref().map_or(0, |v| v.len());
                    }
                    keep
                });
                let n = before - chain.len();
                if chain.is_empty() {
                    m.remove(&key);
                }
                tv.len.fetch_sub(n, Ordering::Release);
                self.versions.fetch_sub(n as u64, Ordering::Relaxed);
                self.version_bytes
                    .fetch_sub(bytes as u64, Ordering::Relaxed);
                self.collected.fetch_add(n as u64, Ordering::Relaxed);
            }
            done += 1;
        }
        done
    }

    /// Forgets a dropped tree's before-images.
    pub fn drop_tree(&self, tree: TreeId) {
        if let Some(tv) = self.trees.write().remove(&tree) {
            let m = tv.map.read();
            let n: usize = m.values().map(Vec::len).sum();
            let bytes: usize = m
                .iter()
                .flat_map(|(k, c)| {
                    c.iter()
                        .map(move |(_, v)| k.len() + v.as_ref().map_or(0, |v| v.len()))
                })
                .sum();
            self.versions.fetch_sub(n as u64, Ordering::Relaxed);
            self.version_bytes
                .fetch_sub(bytes as u64, Ordering::Relaxed);
        }
    }

    pub fn stats(&self) -> MvccStats {
        let st = self.state.lock();
        let snapshots: usize = st.snapshots.values().sum();
        let lag = st
            .snapshots
            .first_key_value()
            .map_or(0, |(&s, _)| st.last_ts.saturating_sub(s));
        MvccStats {
            versions: self.versions.load(Ordering::Relaxed),
            version_bytes: self.version_bytes.load(Ordering::Relaxed),
            versions_recorded: self.recorded.load(Ordering::Relaxed),
            versions_collected: self.collected.load(Ordering::Relaxed),
            snapshots: snapshots as u64,
            oldest_snapshot_lag: lag,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_sees_the_value_as_of_its_timestamp() {
        let m = Mvcc::new();
        let t = TreeId(1);
        let s0 = m.begin_snapshot();
        let c1 = m.begin_commit();
        assert!(c1.keep_versions);
        m.record(t, b"k", c1.ts, None);
        let ts1 = c1.ts;
        m.finish_commit(c1);
        let s1 = m.begin_snapshot();
        assert_eq!(s1, ts1);
        let c2 = m.begin_commit();
        m.record(t, b"k", c2.ts, Some(b"v1".to_vec()));
        m.finish_commit(c2);
        assert!(matches!(m.visible(t, b"k", s0), Visible::Old(None)));
        assert!(matches!(m.visible(t, b"k", s1), Visible::Old(Some(ref v)) if v == b"v1"));
        let s2 = m.begin_snapshot();
        assert!(matches!(m.visible(t, b"k", s2), Visible::Tree));
        assert!(m.changed_since(t, b"k", s1));
        assert!(!m.changed_since(t, b"k", s2));
        // s0 still needs everything.
        assert_eq!(m.collect(100), 0);
        m.end_snapshot(s0);
        assert_eq!(m.collect(100), 1, "c1's entry is dead once s0 ends");
        m.end_snapshot(s1);
        m.end_snapshot(s2);
        m.collect(100);
        assert_eq!(m.stats().versions, 0);
        assert_eq!(m.stats().version_bytes, 0);
    }

    #[test]
    fn commits_publish_in_timestamp_order() {
        let m = Arc::new(Mvcc::new());
        let _s = m.begin_snapshot();
        let a = m.begin_commit();
        let b = m.begin_commit();
        let (a_ts, b_ts) = (a.ts, b.ts);
        let m2 = m.clone();
        let h = std::thread::spawn(move || m2.finish_commit(b));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!h.is_finished(), "b waits for a to be published first");
        assert!(m.begin_snapshot() < a_ts);
        m.finish_commit(a);
        h.join().unwrap();
        assert_eq!(m.begin_snapshot(), b_ts);
    }

    #[test]
    fn next_old_finds_deleted_keys_in_both_directions() {
        let m = Mvcc::new();
        let t = TreeId(7);
        let s = m.begin_snapshot();
        for k in [b"b", b"d"] {
            let c = m.begin_commit();
            m.record(t, k, c.ts, Some(k.to_vec()));
            m.finish_commit(c);
        }
        let all = (Bound::Unbounded, Bound::Unbounded);
        assert_eq!(
            m.next_old(t, all.0, all.1, false, s).map(|x| x.0),
            Some(b"b".to_vec())
        );
        assert_eq!(
            m.next_old(t, all.0, all.1, true, s).map(|x| x.0),
            Some(b"d".to_vec())
        );
        assert_eq!(
            m.next_old(
                t,
                Bound::Excluded(&b"b"[..]),
                Bound::Excluded(&b"d"[..]),
                false,
                s
            ),
            None
        );
        let later = m.begin_snapshot();
        assert_eq!(m.next_old(t, all.0, all.1, false, later), None);
    }
}
