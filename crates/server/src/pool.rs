//! The pool of threads (`thread_handling=pool-of-threads`), after MariaDB's thread pool: idle
//! connections cost no thread, only an entry in an epoll set.
//!
//! - **Thread groups.** `thread_pool_size` groups (default: the number of CPUs); connection
//!   `id` belongs to group `id % size`. Each group has its own epoll set, queue of ready
//!   connections, workers and lock, so groups never contend with each other.
//! - **Listener.** A group has no dedicated event thread: one of its idle workers is the
//!   listener and blocks in `epoll_wait`. When connections become readable it takes them out
//!   of the group's parked set; if the queue was empty it runs the first one itself (no
//!   hand-off, no extra wake-up on the fast path) and queues the rest for other workers.
//! - **Workers** run a connection's next command with the ordinary blocking code
//!   (`Conn::command`: the socket stays blocking while a worker owns it, one write per
//!   response). After the answer, if the client's next command is already there (it is in
//!   the read buffer, or a non-blocking `MSG_PEEK` sees bytes) the worker runs it at once, up
//!   to [`BATCH`] commands; otherwise it parks the connection again (one `epoll_ctl`, the
//!   registration is one-shot).
//! - **Concurrency.** A group runs one command at a time as a rule; a worker picks more work
//!   from the queue only while fewer than `1 + thread_pool_oversubscribe` of the group's
//!   workers are running commands, unless the group is stalled.
//! - **Stalls.** A timer thread wakes every `thread_pool_stall_limit`: a group whose queue is
//!   not empty and from which nothing was taken since the last tick is stalled (its workers
//!   wait for row locks, the disk or a long statement): it wakes a sleeping worker or starts
//!   a new one, up to `thread_pool_max_threads` in all, and while stalled the oversubscribe
//!   bound is lifted. A group in which nobody listened for a whole tick gets a listener the
//!   same way. zipdb's statements do not tell the pool when they wait (MariaDB's
//!   `thd_wait_begin`), so the stall limit is what bounds how long a group waits behind a
//!   blocked command; hence its default is shorter than MariaDB's 500 ms.
//! - Workers with nothing to do for `thread_pool_idle_timeout` exit (one stays per group).
//! - **Before login** the greeting is sent on the accept thread and the socket parked in its
//!   group with `SO_RCVLOWAT` set so that epoll reports it only once a whole packet header,
//!   then a whole handshake response, has arrived (or the client closed): a worker runs the
//!   login only when it cannot block on the client, so silent or trickling sockets occupy no
//!   worker. (An authentication switch, which needs one more round trip, waits on the worker,
//!   bounded by what is left of `connect_timeout`.)
//! - **Timeouts.** The timer also closes parked connections past their deadline: sockets in
//!   the connection phase at `connect_timeout` after their accept, idle sessions at their
//!   `wait_timeout` (checked four times a second). KILL CONNECTION of an idle connection shuts
//!   its socket down, which makes it readable: a worker sees the end at once.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::conn::{self, Conn, Greeted};

/// How connections are given threads (MariaDB's `thread_handling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadHandling {
    /// A thread per connection, for the connection's whole life.
    OneThreadPerConnection,
    /// A pool of worker threads runs the commands of every connection; idle connections
    /// wait in epoll sets.
    PoolOfThreads,
}

impl ThreadHandling {
    pub const ALLOWED: &'static str = "pool-of-threads or one-thread-per-connection";

    pub fn name(self) -> &'static str {
        match self {
            ThreadHandling::OneThreadPerConnection => "one-thread-per-connection",
            ThreadHandling::PoolOfThreads => "pool-of-threads",
        }
    }

    /// MariaDB's names (with `_` for `-` accepted too).
    pub fn parse(s: &str) -> Result<ThreadHandling, String> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "one-thread-per-connection" => Ok(ThreadHandling::OneThreadPerConnection),
            "pool-of-threads" => Ok(ThreadHandling::PoolOfThreads),
            _ => Err(format!(
                "invalid thread_handling {s:?}: expected {}",
                Self::ALLOWED
            )),
        }
    }
}

/// The pool's settings, under MariaDB's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// `thread_pool_size`: thread groups, each running one command at a time as a rule.
    pub size: usize,
    /// `thread_pool_max_threads`: workers in all groups together.
    pub max_threads: usize,
    /// `thread_pool_stall_limit`: how long a group's queue may wait before another worker
    /// is woken or started.
    pub stall_limit: Duration,
    /// `thread_pool_idle_timeout`: a worker with nothing to do this long exits.
    pub idle_timeout: Duration,
    /// `thread_pool_oversubscribe`: workers of a group that may run commands at once beyond
    /// the first.
    pub oversubscribe: usize,
}

/// Defaults; the stall limit is zipdb's (see the module doc), the rest MariaDB's.
pub const DEFAULT_STALL_LIMIT_MS: u64 = 10;
pub const DEFAULT_MAX_THREADS: usize = 65_536;
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_OVERSUBSCRIBE: usize = 3;

/// The number of CPUs, the default `thread_pool_size`.
pub fn default_size() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig {
            size: default_size(),
            max_threads: DEFAULT_MAX_THREADS,
            stall_limit: Duration::from_millis(DEFAULT_STALL_LIMIT_MS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            oversubscribe: DEFAULT_OVERSUBSCRIBE,
        }
    }
}

/// Commands a worker runs back to back for one connection whose next command is already
/// there, before it lets the connection wait its turn again.
const BATCH: usize = 32;

/// How often the deadlines of parked connections are checked.
const DEADLINE_PERIOD: Duration = Duration::from_millis(250);

/// Events one `epoll_wait` returns at most.
const EVENTS: usize = 64;

/// The epoll token of a group's stop event (connection ids are `u32`).
const STOP_TOKEN: u64 = u64::MAX;

/// A connection the pool holds.
enum Kind {
    /// Greeted, waiting for its login.
    Greeted(Box<Greeted>),
    Conn(Box<Conn>),
}

struct Pooled {
    kind: Kind,
    /// Whether its socket is in the group's epoll set already (then re-armed with
    /// `EPOLL_CTL_MOD`).
    registered: bool,
}

impl Pooled {
    fn fd(&self) -> RawFd {
        match &self.kind {
            Kind::Greeted(g) => g.io.stream().as_raw_fd(),
            Kind::Conn(c) => c.io.stream().as_raw_fd(),
        }
    }
    fn id(&self) -> u32 {
        match &self.kind {
            Kind::Greeted(g) => g.id,
            Kind::Conn(c) => c.id,
        }
    }
    fn in_transaction(&self) -> bool {
        matches!(&self.kind, Kind::Conn(c) if c.in_transaction())
    }
}

struct Parked {
    p: Pooled,
    /// Closed when this passes (connect_timeout or wait_timeout).
    deadline: Option<Instant>,
}

/// Connections ready to run (readable, or logins whose response has arrived), in two
/// queues as MariaDB's `thread_pool_priority=auto`: a connection inside a transaction goes
/// first. Its row locks and its snapshot (which keeps old row versions alive) are held
/// until it commits, so letting it wait behind connections that have nothing held
/// lengthens every transaction and the lock waits of everyone behind it. A transaction is
/// begun only from the low queue, so the high one cannot starve it for long: it drains as
/// its transactions end.
#[derive(Default)]
struct Queue {
    high: VecDeque<Pooled>,
    low: VecDeque<Pooled>,
}

impl Queue {
    fn push(&mut self, p: Pooled, prioritize: bool) {
        if prioritize && p.in_transaction() {
            self.high.push_back(p);
        } else {
            self.low.push_back(p);
        }
    }
    fn pop(&mut self) -> Option<Pooled> {
        self.high.pop_front().or_else(|| self.low.pop_front())
    }
    fn len(&self) -> usize {
        self.high.len() + self.low.len()
    }
    fn is_empty(&self) -> bool {
        self.high.is_empty() && self.low.is_empty()
    }
    fn drain(&mut self) -> Vec<Pooled> {
        self.high.drain(..).chain(self.low.drain(..)).collect()
    }
}

#[derive(Default)]
struct State {
    queue: Queue,
    /// Workers alive, running a command, sleeping on the condition variable.
    threads: usize,
    active: usize,
    waiting: usize,
    /// A worker is in `epoll_wait`.
    listener: bool,
    /// The timer found the queue stuck: the oversubscribe bound is lifted until it drains.
    stalled: bool,
    /// Connections taken from the queue, and events received, since the timer's last tick.
    dequeued: u64,
    io_events: u64,
}

struct Group {
    index: usize,
    epoll: sys::Fd,
    /// An eventfd in the epoll set, written once at stop.
    stop_event: sys::Fd,
    state: Mutex<State>,
    cv: Condvar,
    /// Connections waiting for their socket to become readable, by connection id.
    parked: Mutex<HashMap<u32, Parked>>,
}

/// Counters of the pool (for tests and measurements).
#[derive(Default)]
pub(crate) struct Stats {
    /// Commands whose bytes were already there after the previous answer.
    pub fast_path: AtomicU64,
    /// Times a connection was parked to wait in epoll.
    pub parks: AtomicU64,
    /// Workers started (beyond the first of each group).
    pub spawned: AtomicU64,
    /// Stalls the timer found.
    pub stalls: AtomicU64,
}

pub(crate) struct Pool {
    cfg: PoolConfig,
    groups: Vec<Group>,
    /// Workers alive, all groups together.
    threads: AtomicUsize,
    stop: AtomicBool,
    /// Whether a worker looks for the next command before parking (`ZIPDB_POOL_FAST_PATH=0`
    /// turns it off, for measurements).
    fast_path: bool,
    /// Whether connections inside a transaction are run first (`ZIPDB_POOL_PRIORITY=0`
    /// turns it off, for measurements).
    prioritize: bool,
    pub stats: Stats,
}

impl Pool {
    /// Starts the groups (one worker each) and the timer.
    pub(crate) fn start(cfg: PoolConfig) -> std::io::Result<Arc<Pool>> {
        let mut cfg = cfg;
        cfg.size = cfg.size.max(1);
        cfg.max_threads = cfg.max_threads.max(cfg.size);
        let mut groups = Vec::with_capacity(cfg.size);
        for index in 0..cfg.size {
            let epoll = sys::epoll_create()?;
            let stop_event = sys::eventfd()?;
            sys::epoll_add(&epoll, stop_event.raw(), libc::EPOLLIN as u32, STOP_TOKEN)?;
            groups.push(Group {
                index,
                epoll,
                stop_event,
                state: Mutex::new(State::default()),
                cv: Condvar::new(),
                parked: Mutex::new(HashMap::new()),
            });
        }
        let fast_path = std::env::var("ZIPDB_POOL_FAST_PATH").map_or(true, |v| v != "0");
        let prioritize = std::env::var("ZIPDB_POOL_PRIORITY").map_or(true, |v| v != "0");
        let pool = Arc::new(Pool {
            cfg,
            groups,
            threads: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            fast_path,
            prioritize,
            stats: Stats::default(),
        });
        for g in &pool.groups {
            let mut st = g.state.lock();
            pool.spawn_worker(g, &mut st)?;
        }
        let weak = Arc::downgrade(&pool);
        std::thread::Builder::new()
            .name("zipdb-pool-timer".into())
            .spawn(move || timer(weak))?;
        Ok(pool)
    }

    /// Takes a freshly greeted socket: it waits in its group until its login has arrived.
    pub(crate) fn add(self: &Arc<Self>, g: Greeted, deadline: Instant) {
        let _ = sys::set_rcvlowat(g.io.stream(), 4);
        let gi = g.id as usize % self.groups.len();
        self.park(
            gi,
            Pooled {
                kind: Kind::Greeted(Box::new(g)),
                registered: false,
            },
            Some(deadline),
        );
    }

    /// Stops the pool: parked connections are closed, workers exit once their command is
    /// answered (its connection is then closed too).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        for g in &self.groups {
            sys::eventfd_signal(&g.stop_event);
            let parked: Vec<Parked> = g.parked.lock().drain().map(|(_, p)| p).collect();
            drop(parked);
            let queued: Vec<Pooled> = g.state.lock().queue.drain();
            drop(queued);
            g.cv.notify_all();
        }
    }

    /// Workers alive now.
    pub(crate) fn threads(&self) -> usize {
        self.threads.load(Ordering::Relaxed)
    }

    fn spawn_worker(self: &Arc<Self>, g: &Group, st: &mut State) -> std::io::Result<()> {
        st.threads += 1;
        self.threads.fetch_add(1, Ordering::Relaxed);
        let pool = Arc::clone(self);
        let gi = g.index;
        let r = std::thread::Builder::new()
            .name(format!("zipdb-pool-{gi}"))
            .stack_size(crate::server::CONNECTION_STACK_BYTES)
            .spawn(move || worker(pool, gi));
        if let Err(e) = r {
            st.threads -= 1;
            self.threads.fetch_sub(1, Ordering::Relaxed);
            return Err(e);
        }
        Ok(())
    }

    /// Wakes a sleeping worker of the group, or starts one if none sleeps and the pool may
    /// grow.
    fn wake_or_create(self: &Arc<Self>, g: &Group, st: &mut State) {
        if st.waiting > 0 {
            g.cv.notify_one();
        } else if self.threads.load(Ordering::Relaxed) < self.cfg.max_threads
            && self.spawn_worker(g, st).is_ok()
        {
            self.stats.spawned.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether the group runs as many commands as it may.
    fn too_many(&self, st: &State) -> bool {
        st.active > self.cfg.oversubscribe && !st.stalled
    }

    /// After work was queued: wakes sleeping workers for it, as many as may run, or starts
    /// one if nobody runs anything (otherwise the timer sees to it).
    fn wake_for_queue(self: &Arc<Self>, g: &Group, st: &mut State) {
        if st.queue.is_empty() {
            return;
        }
        let room = if st.stalled {
            st.queue.len()
        } else {
            (1 + self.cfg.oversubscribe).saturating_sub(st.active)
        };
        let n = st.queue.len().min(room);
        let wake = n.min(st.waiting);
        for _ in 0..wake {
            g.cv.notify_one();
        }
        if wake == 0 && n > 0 && st.active == 0 {
            self.wake_or_create(g, st);
        }
    }

    /// Puts a connection in its group's epoll set until it becomes readable (one-shot).
    fn park(&self, gi: usize, mut p: Pooled, deadline: Option<Instant>) {
        let g = &self.groups[gi];
        let fd = p.fd();
        let id = p.id();
        let op = if p.registered {
            libc::EPOLL_CTL_MOD
        } else {
            libc::EPOLL_CTL_ADD
        };
        p.registered = true;
        let mut parked = g.parked.lock();
        if self.stop.load(Ordering::Acquire) {
            return;
        }
        // Armed under the lock: nothing can close the socket (and let its descriptor number
        // be reused) between the insert and the arming.
        parked.insert(id, Parked { p, deadline });
        let events = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLONESHOT) as u32;
        if sys::epoll_ctl(&g.epoll, op, fd, events, u64::from(id)).is_err() {
            let gone = parked.remove(&id);
            drop(parked);
            drop(gone);
        }
    }

    /// The connections behind epoll events: connections to run, in order. A socket in the
    /// connection phase is run only once its whole login packet has arrived.
    fn collect(&self, g: &Group, events: &[libc::epoll_event]) -> Vec<Pooled> {
        let mut ready = Vec::with_capacity(events.len());
        let mut closed = Vec::new();
        let mut parked = g.parked.lock();
        for ev in events {
            let token = ev.u64;
            if token == STOP_TOKEN {
                continue;
            }
            let Some(entry) = parked.remove(&(token as u32)) else {
                continue;
            };
            let Kind::Greeted(gr) = &entry.p.kind else {
                ready.push(entry.p);
                continue;
            };
            let hangup =
                ev.events & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0;
            match sys::login_packet_ready(gr.io.stream(), hangup) {
                Readiness::Ready => {
                    let _ = sys::set_rcvlowat(gr.io.stream(), 1);
                    ready.push(entry.p);
                }
                Readiness::Closed => closed.push(entry),
                Readiness::Need(bytes) => {
                    let _ = sys::set_rcvlowat(gr.io.stream(), bytes);
                    let fd = entry.p.fd();
                    let id = entry.p.id();
                    parked.insert(id, entry);
                    let events = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLONESHOT) as u32;
                    if sys::epoll_ctl(&g.epoll, libc::EPOLL_CTL_MOD, fd, events, u64::from(id))
                        .is_err()
                    {
                        if let Some(e) = parked.remove(&id) {
                            closed.push(e);
                        }
                    }
                }
            }
        }
        drop(parked);
        drop(closed);
        ready
    }

    /// Runs a connection's work: its login, then its commands while they are there.
    fn run(&self, gi: usize, p: Pooled) {
        let registered = p.registered;
        let (mut c, mut readable) = match p.kind {
            Kind::Greeted(g) => match conn::login(*g) {
                Some(c) => (Box::new(c), false),
                None => return,
            },
            Kind::Conn(c) => (c, true),
        };
        let mut done = 0;
        loop {
            if !readable {
                if !self.fast_path || done >= BATCH || !c.pending() {
                    break;
                }
                self.stats.fast_path.fetch_add(1, Ordering::Relaxed);
            }
            readable = false;
            done += 1;
            match c.command() {
                Ok(true) => {}
                Ok(false) => return c.finish(Ok(())),
                Err(e) => return c.finish(Err(e)),
            }
            if self.stop.load(Ordering::Acquire) {
                return;
            }
        }
        self.stats.parks.fetch_add(1, Ordering::Relaxed);
        let deadline = c.wait_timeout().map(|t| Instant::now() + t);
        self.park(
            gi,
            Pooled {
                kind: Kind::Conn(c),
                registered,
            },
            deadline,
        );
    }

    /// Runs `p` on the calling worker, counted as active; a panic ends that connection only.
    fn run_counted(&self, g: &Group, st: &mut MutexGuard<'_, State>, p: Pooled) {
        st.dequeued += 1;
        st.active += 1;
        MutexGuard::unlocked(st, || {
            let id = p.id();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(g.index, p)));
            if r.is_err() {
                eprintln!(
                    "zipdb: connection {id} ended by an internal error (panic); the server goes on"
                );
            }
        });
        st.active -= 1;
    }

    /// Closes the parked connections past their deadline (a login not completed within
    /// `connect_timeout` is logged as a failed one).
    fn expire(&self, now: Instant) {
        for g in &self.groups {
            let gone: Vec<Parked> = {
                let mut parked = g.parked.lock();
                let ids: Vec<u32> = parked
                    .iter()
                    .filter(|(_, p)| p.deadline.is_some_and(|d| d <= now))
                    .map(|(&id, _)| id)
                    .collect();
                ids.iter().filter_map(|id| parked.remove(id)).collect()
            };
            for p in gone {
                match p.p.kind {
                    Kind::Greeted(g) => g.timed_out(),
                    // MariaDB's way at wait_timeout: the socket is just closed.
                    Kind::Conn(c) => drop(c),
                }
            }
        }
    }
}

/// What a socket in the connection phase has received.
enum Readiness {
    /// A whole packet: the login can run without waiting for the client.
    Ready,
    /// The client closed (or failed) before sending a whole packet.
    Closed,
    /// Wait until this many bytes are there.
    Need(usize),
}

fn worker(pool: Arc<Pool>, gi: usize) {
    let g = &pool.groups[gi];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    let mut st = g.state.lock();
    loop {
        if pool.stop.load(Ordering::Acquire) {
            break;
        }
        if !pool.too_many(&st) {
            if let Some(p) = st.queue.pop() {
                pool.run_counted(g, &mut st, p);
                continue;
            }
        }
        if !st.listener {
            st.listener = true;
            let n = MutexGuard::unlocked(&mut st, || sys::epoll_wait(&g.epoll, &mut events));
            let ready = MutexGuard::unlocked(&mut st, || pool.collect(g, &events[..n]));
            st.listener = false;
            st.io_events += n as u64;
            // The listener runs the first itself when nothing waited before it (the first
            // by priority: a connection inside a transaction before the others).
            let mine = st.queue.is_empty() && !pool.too_many(&st);
            for p in ready {
                st.queue.push(p, pool.prioritize);
            }
            let first = if mine { st.queue.pop() } else { None };
            pool.wake_for_queue(g, &mut st);
            if let Some(p) = first {
                pool.run_counted(g, &mut st, p);
            }
            continue;
        }
        st.waiting += 1;
        let r = g.cv.wait_for(&mut st, pool.cfg.idle_timeout);
        st.waiting -= 1;
        if r.timed_out() && st.queue.is_empty() && st.threads > 1 {
            break;
        }
    }
    st.threads -= 1;
    pool.threads.fetch_sub(1, Ordering::Relaxed);
}

/// The pool's timer: stalls, missing listeners and deadlines.
fn timer(pool: Weak<Pool>) {
    let Some(tick) = pool.upgrade().map(|p| p.cfg.stall_limit) else {
        return;
    };
    let tick = tick.max(Duration::from_millis(1));
    let mut next_deadlines = Instant::now();
    loop {
        std::thread::sleep(tick);
        let Some(pool) = pool.upgrade() else {
            return;
        };
        if pool.stop.load(Ordering::Acquire) {
            return;
        }
        for g in &pool.groups {
            let mut st = g.state.lock();
            if st.queue.is_empty() {
                st.stalled = false;
            } else if st.dequeued == 0 {
                st.stalled = true;
                pool.stats.stalls.fetch_add(1, Ordering::Relaxed);
                pool.wake_or_create(g, &mut st);
            }
            if !st.listener && st.io_events == 0 && st.waiting == 0 {
                // Everybody runs commands and nobody watches the idle connections.
                pool.wake_or_create(g, &mut st);
            }
            st.dequeued = 0;
            st.io_events = 0;
        }
        let now = Instant::now();
        if now >= next_deadlines {
            pool.expire(now);
            next_deadlines = now + DEADLINE_PERIOD;
        }
    }
}

impl Conn {
    /// Whether the next command (or the end of the stream) is already there: in the read
    /// buffer, or on the socket (a non-blocking peek).
    pub(crate) fn pending(&self) -> bool {
        self.io.buffered() > 0 || sys::readable_now(self.io.stream())
    }
}

/// Thin wrappers around the system calls the pool needs.
mod sys {
    use super::Readiness;
    use std::net::TcpStream;
    use std::os::fd::{AsRawFd, RawFd};

    /// An owned file descriptor (epoll, eventfd), closed on drop.
    pub struct Fd(RawFd);

    impl Fd {
        pub fn raw(&self) -> RawFd {
            self.0
        }
    }

    impl Drop for Fd {
        fn drop(&mut self) {
            // SAFETY: the descriptor was returned by epoll_create1 or eventfd and is owned by
            // this value alone; it is closed once.
            unsafe { libc::close(self.0) };
        }
    }

    fn check(rc: libc::c_int) -> std::io::Result<libc::c_int> {
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    }

    pub fn epoll_create() -> std::io::Result<Fd> {
        // SAFETY: epoll_create1 takes no pointers.
        check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }).map(Fd)
    }

    pub fn eventfd() -> std::io::Result<Fd> {
        // SAFETY: eventfd takes no pointers.
        check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) }).map(Fd)
    }

    pub fn eventfd_signal(fd: &Fd) {
        let one: u64 = 1;
        // SAFETY: writes the 8 bytes of `one`, which lives across the call, to an eventfd.
        unsafe { libc::write(fd.0, (&one as *const u64).cast(), 8) };
    }

    pub fn epoll_add(ep: &Fd, fd: RawFd, events: u32, token: u64) -> std::io::Result<()> {
        epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, events, token)
    }

    pub fn epoll_ctl(
        ep: &Fd,
        op: libc::c_int,
        fd: RawFd,
        events: u32,
        token: u64,
    ) -> std::io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid epoll_event that outlives the call, which only reads it.
        check(unsafe { libc::epoll_ctl(ep.0, op, fd, &mut ev) }).map(drop)
    }

    /// Waits for events without limit; returns how many were written to `out` (0 after an
    /// interruption).
    pub fn epoll_wait(ep: &Fd, out: &mut [libc::epoll_event]) -> usize {
        // SAFETY: `out` is a writable array of `out.len()` epoll_event structs, and the
        // kernel writes at most that many.
        let n = unsafe { libc::epoll_wait(ep.0, out.as_mut_ptr(), out.len() as libc::c_int, -1) };
        n.max(0) as usize
    }

    /// The socket is reported readable only once `bytes` are in its receive buffer (or at
    /// its end).
    pub fn set_rcvlowat(s: &TcpStream, bytes: usize) -> std::io::Result<()> {
        let v = bytes.min(i32::MAX as usize) as libc::c_int;
        // SAFETY: passes a pointer to `v`, a c_int that outlives the call, with its size.
        check(unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })
        .map(drop)
    }

    /// Copies up to `buf.len()` bytes at the head of the receive buffer without consuming
    /// them and without blocking: `Ok(0)` at the end of the stream, `Err(WouldBlock)` when
    /// nothing is there.
    fn peek(s: &TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: `buf` is writable for `buf.len()` bytes, which the kernel writes at most.
        let n = unsafe {
            libc::recv(
                s.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Bytes waiting in the socket's receive buffer.
    fn available(s: &TcpStream) -> std::io::Result<usize> {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int, to `n`, which outlives the call.
        check(unsafe { libc::ioctl(s.as_raw_fd(), libc::FIONREAD, &mut n) })?;
        Ok(n.max(0) as usize)
    }

    /// Whether a read would return at once: bytes are there, or the end of the stream, or
    /// an error (which the read then reports).
    pub fn readable_now(s: &TcpStream) -> bool {
        match peek(s, &mut [0u8; 1]) {
            Ok(_) => true,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        }
    }

    /// Whether a whole packet (the handshake response or, later, an authentication-switch
    /// answer) has arrived on a socket in the connection phase.
    pub fn login_packet_ready(s: &TcpStream, hangup: bool) -> Readiness {
        let mut head = [0u8; 4];
        match peek(s, &mut head) {
            Ok(0) => return Readiness::Closed,
            Ok(4) => {}
            Ok(_) if hangup => return Readiness::Closed,
            Ok(_) => return Readiness::Need(4),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && !hangup => {
                return Readiness::Need(4)
            }
            Err(_) => return Readiness::Closed,
        }
        let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
        if len > crate::limits::PRE_AUTH_MAX_PACKET {
            // The login refuses it at once, without waiting for the rest.
            return Readiness::Ready;
        }
        match available(s) {
            Ok(n) if n >= 4 + len => Readiness::Ready,
            // The rest will never come: the login sees the truncated packet.
            Ok(_) if hangup => Readiness::Ready,
            Ok(_) => Readiness::Need(4 + len),
            Err(_) => Readiness::Closed,
        }
    }
}
