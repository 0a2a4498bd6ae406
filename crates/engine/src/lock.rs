//! Row lock manager for MVCC transactions.
//!
//! Snapshot reads never lock; a write takes an exclusive lock on `(tree, key)` and keeps it
//! until the transaction commits or rolls back (as InnoDB does). A request for a lock held by
//! another transaction blocks until the lock is handed over, the timeout passes, or waiting
//! would close a cycle in the wait-for graph, in which case the requester is the victim.
//!
//! Design:
//! * The lock table is split into [`SHARDS`] mutex-protected hash maps chosen by a hash of
//!   `(tree, key)`, so an uncontended lock or release takes one shard mutex and nothing global.
//! * Waiters queue FIFO on the lock; a release hands the lock directly to the head of the
//!   queue, so a stream of newcomers cannot starve an old waiter.
//! * Since every lock is exclusive, a waiting transaction waits for exactly one holder: the
//!   wait-for graph is a functional graph (`waiter -> holder`), kept under one global mutex
//!   that is only taken by threads that wait, hand a lock over, or give up waiting. A deadlock
//!   is a walk from the holder that comes back to the requester.
//! * Lock order: shard mutex, then graph mutex. Every change of the holder of a lock that has
//!   waiters happens with both held, together with the re-pointing of the remaining waiters'
//!   edges. Hence, whenever the graph mutex is free, each edge `w -> h` names the *current*
//!   holder of the lock `w` waits for, and the detection run under the graph mutex sees a
//!   consistent graph: two transactions that start waiting at the same moment are serialized
//!   by the graph mutex and the second one finds the cycle.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use zipdb_storage::TreeId;

use crate::inline_key::InlineKey;

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Identifies a transaction to the lock manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxnId(pub u64);

impl std::fmt::Display for TxnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a lock request failed. Either way the request did not get the lock, the locks the
/// transaction already holds are unchanged, and the transaction is expected to roll back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Waiting would have closed a cycle of waiting transactions; the requester is the victim.
    /// `cycle` starts with `txn`, then the holder it would wait for, and so on: each member
    /// waits for the next and the last one waits for `txn`.
    #[error(
        "deadlock found when trying to get lock: transaction {txn} would close the wait cycle {}; \
         it is chosen as the victim",
        fmt_cycle(.cycle)
    )]
    Deadlock { txn: TxnId, cycle: Vec<TxnId> },
    /// The lock was not handed over within the timeout. `holder` held it when waiting stopped.
    #[error(
        "lock wait timeout exceeded: transaction {txn} waited {waited:?} for a row lock held by \
         transaction {holder}"
    )]
    Timeout {
        txn: TxnId,
        holder: TxnId,
        waited: Duration,
    },
}

fn fmt_cycle(cycle: &[TxnId]) -> String {
    let mut s = String::new();
    for t in cycle {
        s.push_str(&t.to_string());
        s.push_str(" -> ");
    }
    // Close the loop visibly: the last member waits for the first.
    if let Some(first) = cycle.first() {
        s.push_str(&first.to_string());
    }
    s
}

/// Outcome of a successful [`LockManager::lock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// The transaction did not hold the lock before (it may have waited for it).
    New,
    /// The transaction already held the lock; nothing changed.
    AlreadyHeld,
}

/// Counters of a [`LockManager`]. Summed shard by shard, so a snapshot taken while locks are
/// being taken is not atomic across shards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Locks granted ([`Acquired::New`]), with or without waiting.
    pub granted: u64,
    /// Requests that had to wait (deadlock victims rejected up front are not counted).
    pub waits: u64,
    /// Time spent waiting by all waits that ended, granted or timed out.
    pub wait_ns_total: u64,
    /// Requests refused because waiting would have closed a cycle.
    pub deadlocks: u64,
    /// Requests that gave up after their timeout.
    pub timeouts: u64,
    /// Locks held now.
    pub current_locks: u64,
    /// Requests waiting now.
    pub current_waiters: u64,
}

/// Number of lock-table shards (a power of two). 64 keeps the odds that two busy threads hit
/// the same shard low on the core counts we target, while `stats` stays cheap.
pub const SHARDS: usize = 64;
const SHARD_BITS: u32 = SHARDS.trailing_zeros();

/// One blocked request. Shared between the waiting thread and the lock's queue.
struct Waiter {
    txn: TxnId,
    /// Set by the releasing thread when it hands the lock over. Only read or written with the
    /// shard mutex held; atomic merely for interior mutability, so relaxed ordering suffices.
    granted: AtomicBool,
    /// Always waited on with the mutex of the shard the lock lives in, so a hand-over and the
    /// waiter's check of `granted` cannot interleave (no lost wakeup).
    cv: Condvar,
}

struct LockEntry {
    holder: TxnId,
    /// FIFO; `VecDeque::new` does not allocate, so an uncontended lock costs only its key.
    waiters: VecDeque<Arc<Waiter>>,
}

#[derive(Default)]
struct Counters {
    granted: u64,
    waits: u64,
    wait_ns_total: u64,
    deadlocks: u64,
    timeouts: u64,
    current_locks: u64,
    current_waiters: u64,
}

#[derive(Default)]
struct ShardState {
    /// Keyed by tree first so that a lookup borrows the caller's `&[u8]` instead of building
    /// an owned `(tree, key)`. Empty per-tree maps are kept: there is one per tree and shard at
    /// most, and dropping them would re-allocate on the next lock of that tree. Keys come from
    /// clients, so the hasher is seeded at random per map (foldhash; std's SipHash was 3 % of
    /// a bulk INSERT), and short keys are stored in the entry (no allocation per lock).
    trees: Map<TreeId, Map<InlineKey, LockEntry>>,
    /// Kept per shard under the shard mutex rather than in shared atomics, so that counting
    /// does not make every core write one cache line.
    counters: Counters,
}

/// Aligned to keep two shards' mutexes off one cache line (no false sharing).
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    state: Mutex<ShardState>,
}

/// The wait-for graph: each waiting transaction maps to the transaction holding the lock it
/// waits for. Acyclic at all times, because an edge that would close a cycle is never added.
#[derive(Default)]
struct WaitGraph {
    waits_for: HashMap<TxnId, TxnId>,
}

impl WaitGraph {
    /// If `requester` waiting for `holder` would close a cycle, returns it (starting with
    /// `requester`). `requester` must not be waiting already.
    fn cycle_if_waits(&self, requester: TxnId, holder: TxnId) -> Option<Vec<TxnId>> {
        assert!(
            !self.waits_for.contains_key(&requester),
            "transaction {requester} requested a lock while already waiting for another"
        );
        // The graph is acyclic, so the walk ends within `len` steps at a transaction that does
        // not wait; exceeding that bound means the invariant is broken.
        let mut cur = holder;
        let mut steps = 0;
        while cur != requester {
            cur = *self.waits_for.get(&cur)?;
            steps += 1;
            assert!(steps <= self.waits_for.len(), "wait-for graph has a cycle");
        }
        // Walk again to name the members; only done when there is a deadlock to report.
        let mut cycle = vec![requester];
        let mut cur = holder;
        while cur != requester {
            cycle.push(cur);
            cur = self.waits_for[&cur];
        }
        Some(cycle)
    }
}

/// The row lock table shared by all transactions of a database.
pub struct LockManager {
    shards: Box<[Shard]>,
    graph: Mutex<WaitGraph>,
}

impl Default for LockManager {
    fn default() -> LockManager {
        LockManager::new()
    }
}

impl std::fmt::Debug for LockManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockManager")
            .field("stats", &self.stats())
            .finish()
    }
}

impl LockManager {
    pub fn new() -> LockManager {
        LockManager {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            graph: Mutex::new(WaitGraph::default()),
        }
    }

    fn shard(&self, tree: TreeId, key: &[u8]) -> &Shard {
        &self.shards[shard_index(tree, key)]
    }

    /// Takes the exclusive lock on `(tree, key)` for `txn`, waiting up to `timeout` while
    /// another transaction holds it (`Duration::ZERO`: do not wait; `Duration::MAX`: wait
    /// without limit). Fails at once with [`LockError::Deadlock`] if waiting would close a
    /// cycle of waiting transactions. A transaction may hold many locks but must not request
    /// one from two threads at once.
    pub fn lock(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        timeout: Duration,
    ) -> Result<Acquired, LockError> {
        let shard = self.shard(tree, key);
        let mut st = shard.state.lock();
        let state = &mut *st;
        let keys = state.trees.entry(tree).or_default();
        let entry = match keys.get_mut(key) {
            None => {
                keys.insert(
                    InlineKey::new(key),
                    LockEntry {
                        holder: txn,
                        waiters: VecDeque::new(),
                    },
                );
                state.counters.granted += 1;
                state.counters.current_locks += 1;
                return Ok(Acquired::New);
            }
            Some(e) if e.holder == txn => return Ok(Acquired::AlreadyHeld),
            Some(e) => e,
        };

        // Contended. The shard mutex pins the holder while the edge is checked and recorded.
        {
            let mut graph = self.graph.lock();
            if let Some(cycle) = graph.cycle_if_waits(txn, entry.holder) {
                drop(graph);
                state.counters.deadlocks += 1;
                return Err(LockError::Deadlock { txn, cycle });
            }
            graph.waits_for.insert(txn, entry.holder);
        }
        let waiter = Arc::new(Waiter {
            txn,
            granted: AtomicBool::new(false),
            cv: Condvar::new(),
        });
        entry.waiters.push_back(Arc::clone(&waiter));
        state.counters.waits += 1;
        state.counters.current_waiters += 1;

        let start = Instant::now();
        // `None`: the timeout is too large to express as an instant, i.e. no limit.
        let deadline = start.checked_add(timeout);
        loop {
            // Checked first on every wakeup: a hand-over that raced with the deadline wins,
            // since the lock is then ours and returning an error would leak it.
            if waiter.granted.load(Ordering::Relaxed) {
                let c = &mut st.counters;
                c.wait_ns_total += duration_ns(start.elapsed());
                c.current_waiters -= 1;
                c.granted += 1;
                return Ok(Acquired::New);
            }
            match deadline {
                Some(d) if Instant::now() >= d => {
                    let holder = self.abandon_wait(&mut st, tree, key, &waiter);
                    let waited = start.elapsed();
                    let c = &mut st.counters;
                    c.wait_ns_total += duration_ns(waited);
                    c.current_waiters -= 1;
                    c.timeouts += 1;
                    return Err(LockError::Timeout {
                        txn,
                        holder,
                        waited,
                    });
                }
                // The loop re-checks both conditions, which also absorbs spurious wakeups.
                Some(d) => {
                    waiter.cv.wait_until(&mut st, d);
                }
                None => waiter.cv.wait(&mut st),
            }
        }
    }

    /// Removes a timed-out waiter from its queue and the graph; returns the current holder.
    fn abandon_wait(
        &self,
        st: &mut ShardState,
        tree: TreeId,
        key: &[u8],
        waiter: &Arc<Waiter>,
    ) -> TxnId {
        // A queued, not granted waiter means the lock is held, so its entry exists.
        let entry = st
            .trees
            .get_mut(&tree)
            .and_then(|keys| keys.get_mut(key))
            .expect("the lock a waiter is queued on exists");
        let pos = entry
            .waiters
            .iter()
            .position(|w| Arc::ptr_eq(w, waiter))
            .expect("a waiter not granted is still queued");
        entry.waiters.remove(pos);
        // Leaving the queue does not change whom the other waiters wait for.
        let edge = self.graph.lock().waits_for.remove(&waiter.txn);
        assert_eq!(
            edge,
            Some(entry.holder),
            "wait-for edge must name the current holder"
        );
        entry.holder
    }

    /// Releases `txn`'s lock on `(tree, key)`, handing it to the oldest waiter if any.
    /// Returns false, changing nothing, if `txn` does not hold that lock.
    pub fn release(&self, txn: TxnId, tree: TreeId, key: &[u8]) -> bool {
        let shard = self.shard(tree, key);
        let mut st = shard.state.lock();
        let state = &mut *st;
        let Some(keys) = state.trees.get_mut(&tree) else {
            return false;
        };
        let Some(entry) = keys.get_mut(key) else {
            return false;
        };
        if entry.holder != txn {
            return false;
        }
        let Some(next) = entry.waiters.pop_front() else {
            keys.remove(key);
            state.counters.current_locks -= 1;
            return true;
        };

        // Hand over, changing the holder and every remaining waiter's edge in one graph
        // critical section so that no detection sees a stale holder.
        {
            let mut graph = self.graph.lock();
            let edge = graph.waits_for.remove(&next.txn);
            assert_eq!(
                edge,
                Some(txn),
                "wait-for edge must name the current holder"
            );
            entry.holder = next.txn;
            for w in &entry.waiters {
                let edge = graph.waits_for.insert(w.txn, next.txn);
                assert_eq!(
                    edge,
                    Some(txn),
                    "wait-for edge must name the current holder"
                );
            }
            // The re-pointed edges cannot close a cycle: a cycle through them would have to
            // leave the new holder, and it just stopped waiting (the edge removed above was
            // its only one: a transaction waits for one lock at a time). A cycle can only form
            // when the new holder next waits, and `lock` detects it there, against the edges
            // already re-pointed. So no victim needs choosing here.
        }
        next.granted.store(true, Ordering::Relaxed);
        next.cv.notify_one();
        true
    }

    /// Releases every lock in `keys`, all held by `txn` (at commit or rollback), waking the
    /// waiters. The transaction layer keeps the list, so the lock table needs no per-txn index.
    pub fn release_all(&self, txn: TxnId, keys: &[(TreeId, Vec<u8>)]) {
        self.release_each(txn, keys.iter().map(|(t, k)| (*t, k.as_slice())));
    }

    /// [`LockManager::release_all`] over borrowed keys.
    pub fn release_each<'a>(&self, txn: TxnId, keys: impl Iterator<Item = (TreeId, &'a [u8])>) {
        for (tree, key) in keys {
            let released = self.release(txn, tree, key);
            debug_assert!(
                released,
                "transaction {txn} released a lock it does not hold"
            );
        }
    }

    /// The transaction holding the lock on `(tree, key)`, if any.
    pub fn holder(&self, tree: TreeId, key: &[u8]) -> Option<TxnId> {
        let st = self.shard(tree, key).state.lock();
        st.trees.get(&tree)?.get(key).map(|e| e.holder)
    }

    pub fn stats(&self) -> LockStats {
        let mut s = LockStats::default();
        for shard in self.shards.iter() {
            let st = shard.state.lock();
            let c = &st.counters;
            s.granted += c.granted;
            s.waits += c.waits;
            s.wait_ns_total += c.wait_ns_total;
            s.deadlocks += c.deadlocks;
            s.timeouts += c.timeouts;
            s.current_locks += c.current_locks;
            s.current_waiters += c.current_waiters;
        }
        s
    }
}

fn duration_ns(d: Duration) -> u64 {
    // Saturates after 584 years of waiting.
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Picks the shard of `(tree, key)`: a cheap multiplicative hash (the maps inside the shard
/// hash again with a keyed hasher, so this one only needs to spread keys, not resist attacks).
fn shard_index(tree: TreeId, key: &[u8]) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let mut h = mix(u64::from(tree.0), key.len() as u64);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = mix(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_le_bytes(w));
    }
    // The top bits of a multiplicative hash are the well-mixed ones.
    (h >> (64 - SHARD_BITS)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::{AtomicU64, AtomicUsize};
    use std::sync::Barrier;
    use std::thread;

    const T: TreeId = TreeId(1);
    const LONG: Duration = Duration::from_secs(10);

    fn waiting_edges(lm: &LockManager) -> usize {
        lm.graph.lock().waits_for.len()
    }

    /// Polls until `n` requests are queued; panics instead of hanging.
    fn wait_for_waiters(lm: &LockManager, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while lm.stats().current_waiters != n {
            assert!(Instant::now() < deadline, "never saw {n} waiters");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn lock_manager_is_send_sync() {
        fn check<X: Send + Sync>() {}
        check::<LockManager>();
    }

    #[test]
    fn lock_uncontended_relock_and_release() {
        let lm = LockManager::new();
        let a = TxnId(1);
        assert_eq!(lm.lock(a, T, b"k", LONG), Ok(Acquired::New));
        assert_eq!(lm.lock(a, T, b"k", LONG), Ok(Acquired::AlreadyHeld));
        // Same key in another tree, and the empty key, are distinct locks.
        assert_eq!(lm.lock(a, TreeId(2), b"k", LONG), Ok(Acquired::New));
        assert_eq!(lm.lock(a, T, b"", LONG), Ok(Acquired::New));
        assert_eq!(lm.holder(T, b"k"), Some(a));
        assert_eq!(lm.holder(T, b"other"), None);
        let s = lm.stats();
        assert_eq!((s.granted, s.current_locks, s.waits), (3, 3, 0));

        // Only the holder can release.
        assert!(!lm.release(TxnId(2), T, b"k"));
        assert_eq!(lm.holder(T, b"k"), Some(a));
        lm.release_all(
            a,
            &[(T, b"k".to_vec()), (TreeId(2), b"k".to_vec()), (T, vec![])],
        );
        assert_eq!(lm.holder(T, b"k"), None);
        assert_eq!(lm.stats().current_locks, 0);
        assert!(!lm.release(a, T, b"k"));
        // Free again for anyone, without waiting.
        assert_eq!(
            lm.lock(TxnId(2), T, b"k", Duration::ZERO),
            Ok(Acquired::New)
        );
    }

    #[test]
    fn lock_waiter_gets_lock_after_release() {
        let lm = LockManager::new();
        let (a, b) = (TxnId(1), TxnId(2));
        lm.lock(a, T, b"k", LONG).unwrap();
        thread::scope(|s| {
            let h = s.spawn(|| lm.lock(b, T, b"k", LONG));
            wait_for_waiters(&lm, 1);
            assert_eq!(waiting_edges(&lm), 1);
            assert_eq!(lm.holder(T, b"k"), Some(a));
            assert!(lm.release(a, T, b"k"));
            assert_eq!(h.join().unwrap(), Ok(Acquired::New));
        });
        assert_eq!(lm.holder(T, b"k"), Some(b));
        let s = lm.stats();
        assert_eq!((s.granted, s.waits, s.current_waiters), (2, 1, 0));
        assert!(s.wait_ns_total > 0);
        assert_eq!(waiting_edges(&lm), 0);
    }

    #[test]
    fn lock_timeout_fires_and_holder_keeps_lock() {
        let lm = LockManager::new();
        let (a, b) = (TxnId(1), TxnId(2));
        lm.lock(a, T, b"k", LONG).unwrap();
        let timeout = Duration::from_millis(150);
        let t0 = Instant::now();
        let err = lm.lock(b, T, b"k", timeout).unwrap_err();
        let took = t0.elapsed();
        match &err {
            LockError::Timeout {
                txn,
                holder,
                waited,
            } => {
                assert_eq!((*txn, *holder), (b, a));
                assert!(*waited >= timeout, "waited only {waited:?}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert!(
            took >= timeout && took < Duration::from_secs(3),
            "took {took:?}"
        );
        assert!(err.to_string().contains("lock wait timeout"), "{err}");
        assert_eq!(lm.holder(T, b"k"), Some(a));
        let s = lm.stats();
        assert_eq!((s.timeouts, s.current_waiters, s.current_locks), (1, 0, 1));
        assert_eq!(waiting_edges(&lm), 0);

        // A zero timeout fails at once; the abandoned waits left no trace in the queue.
        assert!(matches!(
            lm.lock(b, T, b"k", Duration::ZERO),
            Err(LockError::Timeout { .. })
        ));
        assert!(lm.release(a, T, b"k"));
        assert_eq!(lm.holder(T, b"k"), None);
        assert_eq!(lm.lock(b, T, b"k", Duration::ZERO), Ok(Acquired::New));
    }

    #[test]
    fn lock_two_txn_deadlock_detected_when_second_waits() {
        let lm = LockManager::new();
        let (a, b) = (TxnId(1), TxnId(2));
        lm.lock(a, T, b"k1", LONG).unwrap();
        lm.lock(b, T, b"k2", LONG).unwrap();
        thread::scope(|s| {
            let h = s.spawn(|| lm.lock(a, T, b"k2", LONG));
            wait_for_waiters(&lm, 1);
            let t0 = Instant::now();
            let err = lm.lock(b, T, b"k1", LONG).unwrap_err();
            assert!(
                t0.elapsed() < Duration::from_secs(1),
                "detection must not wait"
            );
            assert_eq!(
                err,
                LockError::Deadlock {
                    txn: b,
                    cycle: vec![b, a]
                }
            );
            assert!(err.to_string().contains("2 -> 1 -> 2"), "{err}");
            // The victim rolls back; the survivor proceeds.
            lm.release_all(b, &[(T, b"k2".to_vec())]);
            assert_eq!(h.join().unwrap(), Ok(Acquired::New));
        });
        assert_eq!(lm.holder(T, b"k1"), Some(a));
        assert_eq!(lm.holder(T, b"k2"), Some(a));
        assert_eq!(lm.stats().deadlocks, 1);
        assert_eq!(waiting_edges(&lm), 0);
    }

    #[test]
    fn lock_two_txn_deadlock_simultaneous_exactly_one_victim() {
        let lm = LockManager::new();
        for round in 0..50u64 {
            let (a, b) = (TxnId(2 * round), TxnId(2 * round + 1));
            let (k1, k2) = (
                round.to_le_bytes().to_vec(),
                (!round).to_le_bytes().to_vec(),
            );
            lm.lock(a, T, &k1, LONG).unwrap();
            lm.lock(b, T, &k2, LONG).unwrap();
            let barrier = Barrier::new(2);
            let t0 = Instant::now();
            // Each side, if chosen as the victim, rolls back at once so the other proceeds.
            let side = |me: TxnId, mine: &Vec<u8>, want: &Vec<u8>| {
                barrier.wait();
                let r = lm.lock(me, T, want, LONG);
                if r.is_err() {
                    lm.release_all(me, &[(T, mine.clone())]);
                }
                r
            };
            let (ra, rb) = thread::scope(|s| {
                let ha = s.spawn(|| side(a, &k1, &k2));
                let hb = s.spawn(|| side(b, &k2, &k1));
                (ha.join().unwrap(), hb.join().unwrap())
            });
            assert!(t0.elapsed() < Duration::from_secs(5), "no timeout involved");
            let (winner, err) = match (ra, rb) {
                (Ok(Acquired::New), Err(e)) => (a, e),
                (Err(e), Ok(Acquired::New)) => (b, e),
                other => panic!("round {round}: expected exactly one victim, got {other:?}"),
            };
            let victim = if winner == a { b } else { a };
            assert_eq!(
                err,
                LockError::Deadlock {
                    txn: victim,
                    cycle: vec![victim, winner]
                }
            );
            assert_eq!(lm.holder(T, &k1), Some(winner));
            assert_eq!(lm.holder(T, &k2), Some(winner));
            lm.release_all(winner, &[(T, k1), (T, k2)]);
        }
        let s = lm.stats();
        assert_eq!(
            (s.deadlocks, s.current_locks, s.current_waiters),
            (50, 0, 0)
        );
        assert_eq!(waiting_edges(&lm), 0);
    }

    #[test]
    fn lock_three_txn_cycle() {
        let lm = LockManager::new();
        let (a, b, c) = (TxnId(1), TxnId(2), TxnId(3));
        lm.lock(a, T, b"k1", LONG).unwrap();
        lm.lock(b, T, b"k2", LONG).unwrap();
        lm.lock(c, T, b"k3", LONG).unwrap();
        thread::scope(|s| {
            let ha = s.spawn(|| lm.lock(a, T, b"k2", LONG));
            wait_for_waiters(&lm, 1);
            let hb = s.spawn(|| lm.lock(b, T, b"k3", LONG));
            wait_for_waiters(&lm, 2);
            // C -> A -> B -> C.
            assert_eq!(
                lm.lock(c, T, b"k1", LONG),
                Err(LockError::Deadlock {
                    txn: c,
                    cycle: vec![c, a, b]
                })
            );
            lm.release_all(c, &[(T, b"k3".to_vec())]);
            assert_eq!(hb.join().unwrap(), Ok(Acquired::New));
            lm.release_all(b, &[(T, b"k2".to_vec()), (T, b"k3".to_vec())]);
            assert_eq!(ha.join().unwrap(), Ok(Acquired::New));
        });
        assert_eq!(lm.holder(T, b"k1"), Some(a));
        assert_eq!(lm.holder(T, b"k2"), Some(a));
        assert_eq!(lm.holder(T, b"k3"), None);
        assert_eq!(lm.stats().deadlocks, 1);
    }

    #[test]
    fn lock_chain_without_cycle_is_no_deadlock() {
        let lm = LockManager::new();
        let (a, b, c, d) = (TxnId(1), TxnId(2), TxnId(3), TxnId(4));
        lm.lock(a, T, b"k1", LONG).unwrap();
        lm.lock(b, T, b"k2", LONG).unwrap();
        lm.lock(c, T, b"k3", LONG).unwrap();
        thread::scope(|s| {
            // D -> A -> B -> C: a long chain, but C does not wait.
            let ha = s.spawn(|| lm.lock(a, T, b"k2", LONG));
            wait_for_waiters(&lm, 1);
            let hb = s.spawn(|| lm.lock(b, T, b"k3", LONG));
            wait_for_waiters(&lm, 2);
            let hd = s.spawn(|| lm.lock(d, T, b"k1", LONG));
            wait_for_waiters(&lm, 3);
            // The end of the chain can keep taking locks, including new ones.
            assert_eq!(lm.lock(c, T, b"k4", LONG), Ok(Acquired::New));
            assert_eq!(lm.stats().deadlocks, 0);
            lm.release_all(c, &[(T, b"k3".to_vec()), (T, b"k4".to_vec())]);
            assert_eq!(hb.join().unwrap(), Ok(Acquired::New));
            lm.release_all(b, &[(T, b"k2".to_vec()), (T, b"k3".to_vec())]);
            assert_eq!(ha.join().unwrap(), Ok(Acquired::New));
            lm.release_all(a, &[(T, b"k1".to_vec()), (T, b"k2".to_vec())]);
            assert_eq!(hd.join().unwrap(), Ok(Acquired::New));
        });
        assert_eq!(lm.holder(T, b"k1"), Some(d));
        assert_eq!(lm.stats().deadlocks, 0);
    }

    #[test]
    fn lock_fifo_handover_in_arrival_order() {
        let lm = LockManager::new();
        let order = Mutex::new(Vec::new());
        lm.lock(TxnId(0), T, b"k", LONG).unwrap();
        thread::scope(|s| {
            for i in 1..=5u64 {
                let (lm, order) = (&lm, &order);
                s.spawn(move || {
                    assert_eq!(lm.lock(TxnId(i), T, b"k", LONG), Ok(Acquired::New));
                    order.lock().push(i);
                    assert!(lm.release(TxnId(i), T, b"k"));
                });
                // Queue them one by one so that arrival order is known.
                wait_for_waiters(lm, i);
            }
            // A newcomer with a short timeout must not jump the queue either.
            assert!(matches!(
                lm.lock(TxnId(99), T, b"k", Duration::from_millis(20)),
                Err(LockError::Timeout { .. })
            ));
            assert!(lm.release(TxnId(0), T, b"k"));
        });
        assert_eq!(*order.lock(), vec![1, 2, 3, 4, 5]);
        assert_eq!(lm.holder(T, b"k"), None);
    }

    #[test]
    fn lock_deadlock_detected_after_handover() {
        // A holds k; W1 (holding j) and then W2 (holding m) queue for k. When A releases, k
        // passes to W1 and W2 must now be recorded as waiting for W1, so that W1 asking for
        // m is a deadlock found at once rather than a hang until the timeout.
        let lm = LockManager::new();
        let (a, w1, w2) = (TxnId(1), TxnId(2), TxnId(3));
        lm.lock(a, T, b"k", LONG).unwrap();
        lm.lock(w1, T, b"j", LONG).unwrap();
        lm.lock(w2, T, b"m", LONG).unwrap();
        thread::scope(|s| {
            let h1 = s.spawn(|| {
                assert_eq!(lm.lock(w1, T, b"k", LONG), Ok(Acquired::New));
                let t0 = Instant::now();
                let r = lm.lock(w1, T, b"m", LONG);
                assert!(
                    t0.elapsed() < Duration::from_secs(1),
                    "detection must not wait"
                );
                lm.release_all(w1, &[(T, b"j".to_vec()), (T, b"k".to_vec())]);
                r
            });
            wait_for_waiters(&lm, 1);
            let h2 = s.spawn(|| lm.lock(w2, T, b"k", LONG));
            wait_for_waiters(&lm, 2);
            assert!(lm.release(a, T, b"k"));
            assert_eq!(
                h1.join().unwrap(),
                Err(LockError::Deadlock {
                    txn: w1,
                    cycle: vec![w1, w2]
                })
            );
            assert_eq!(h2.join().unwrap(), Ok(Acquired::New));
        });
        assert_eq!(lm.holder(T, b"k"), Some(w2));
        assert_eq!(waiting_edges(&lm), 0);
    }

    #[test]
    fn lock_stress_random_transactions() {
        const THREADS: usize = 8;
        const TXNS_PER_THREAD: u64 = 100;
        const KEYS: usize = 6;
        let lm = LockManager::new();
        let next_txn = AtomicU64::new(1);
        let in_use: Vec<AtomicBool> = (0..KEYS).map(|_| AtomicBool::new(false)).collect();
        // Updated with a separate load and store: lost updates would show without exclusion.
        let counters: Vec<AtomicU64> = (0..KEYS).map(|_| AtomicU64::new(0)).collect();
        let expected: Vec<AtomicU64> = (0..KEYS).map(|_| AtomicU64::new(0)).collect();
        let commits = AtomicUsize::new(0);
        let aborts = AtomicUsize::new(0);
        let key_of = |k: usize| [k as u8];

        thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (lm, next_txn, in_use, counters, expected, commits, aborts) = (
                        &lm, &next_txn, &in_use, &counters, &expected, &commits, &aborts,
                    );
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(t as u64);
                        for _ in 0..TXNS_PER_THREAD {
                            let mut keys: Vec<usize> = (0..KEYS).collect();
                            keys.shuffle(&mut rng);
                            keys.truncate(rng.gen_range(1..=4));
                            loop {
                                // A rolled-back transaction restarts under a new id. Short
                                // timeouts on some tries make timeouts happen too.
                                let txn = TxnId(next_txn.fetch_add(1, Ordering::Relaxed));
                                let timeout = if rng.gen_bool(0.2) {
                                    Duration::from_micros(rng.gen_range(0..500))
                                } else {
                                    Duration::from_millis(rng.gen_range(2..100))
                                };
                                let mut held = Vec::new();
                                let mut failed = false;
                                keys.shuffle(&mut rng);
                                for &k in &keys {
                                    match lm.lock(txn, T, &key_of(k), timeout) {
                                        Ok(Acquired::New) => held.push((T, key_of(k).to_vec())),
                                        Ok(Acquired::AlreadyHeld) => panic!("keys are distinct"),
                                        Err(_) => {
                                            failed = true;
                                            break;
                                        }
                                    }
                                }
                                if failed {
                                    lm.release_all(txn, &held);
                                    aborts.fetch_add(1, Ordering::Relaxed);
                                    thread::sleep(Duration::from_micros(rng.gen_range(0..500)));
                                    continue;
                                }
                                for &k in &keys {
                                    assert_eq!(lm.holder(T, &key_of(k)), Some(txn));
                                    assert!(
                                        !in_use[k].swap(true, Ordering::SeqCst),
                                        "key {k} used by two transactions at once"
                                    );
                                }
                                for &k in &keys {
                                    let v = counters[k].load(Ordering::SeqCst);
                                    thread::yield_now();
                                    counters[k].store(v + 1, Ordering::SeqCst);
                                    expected[k].fetch_add(1, Ordering::Relaxed);
                                }
                                // Hold the keys a while so that others queue up behind them.
                                thread::sleep(Duration::from_micros(rng.gen_range(0..300)));
                                for &k in &keys {
                                    in_use[k].store(false, Ordering::SeqCst);
                                }
                                lm.release_all(txn, &held);
                                commits.fetch_add(1, Ordering::Relaxed);
                                break;
                            }
                        }
                    })
                })
                .collect();
            // Fail rather than hang if some thread never finishes.
            let deadline = Instant::now() + Duration::from_secs(30);
            while !handles.iter().all(|h| h.is_finished()) {
                assert!(
                    Instant::now() < deadline,
                    "stress test did not finish in time"
                );
                thread::sleep(Duration::from_millis(5));
            }
            for h in handles {
                h.join().unwrap();
            }
        });

        assert_eq!(
            commits.load(Ordering::Relaxed),
            THREADS * TXNS_PER_THREAD as usize
        );
        for k in 0..KEYS {
            assert_eq!(
                counters[k].load(Ordering::SeqCst),
                expected[k].load(Ordering::SeqCst)
            );
        }
        let st = lm.stats();
        assert_eq!((st.current_locks, st.current_waiters), (0, 0));
        assert_eq!(waiting_edges(&lm), 0);
        assert_eq!(
            st.deadlocks + st.timeouts,
            aborts.load(Ordering::Relaxed) as u64
        );
        // Both kinds of abort must have been exercised (hundreds of each in practice).
        assert!(
            st.waits > 0 && st.deadlocks > 0 && st.timeouts > 0,
            "the test should contend: {st:?}"
        );
    }

    #[test]
    fn lock_shard_index_spreads_keys() {
        let mut used = [false; SHARDS];
        for i in 0u32..1024 {
            used[shard_index(T, &i.to_be_bytes())] = true;
        }
        assert!(
            used.iter().all(|&u| u),
            "sequential keys should reach every shard"
        );
        assert!(shard_index(T, b"k") < SHARDS);
        assert!(shard_index(TreeId(u32::MAX), &[0xff; 37]) < SHARDS);
    }
}
