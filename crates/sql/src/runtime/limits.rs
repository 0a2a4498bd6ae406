//! What one statement may consume: time (`max_execution_time`, `max_statement_time`) and
//! memory (`max_session_mem_used`), and how a running statement learns that it must stop
//! (KILL QUERY, a timeout, the memory budget).
//!
//! A statement looks at its [`Interrupt`] at its check points (every few hundred rows of a
//! scan, every join candidate): one relaxed load. Nothing else runs per row for time limits:
//! a timer thread ([`Deadlines`]) sets the interrupt when a statement's deadline passes. The
//! memory budget is charged where rows are held (buffered results, sort input, groups, hash
//! tables): one relaxed add per row held.
//!
//! The interrupt word holds the statement's sequence number with the reason, so that a timer
//! that fires just as its statement ends cannot stop the next one: it sets the reason only
//! if the word still names the statement it was armed for (one compare-and-swap).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{ErrorKind, SqlError};

/// Why a statement was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Reason {
    /// KILL QUERY or KILL CONNECTION.
    Killed = 1,
    /// MySQL's `max_execution_time` (SELECT only, milliseconds).
    ExecutionTime = 2,
    /// MariaDB's `max_statement_time` (every statement, seconds).
    StatementTime = 3,
}

const REASON_MASK: u64 = 0xff;

/// A session's stop signal and its statement's memory charge.
#[derive(Debug, Default)]
pub struct Interrupt {
    /// `statement sequence << 8 | reason` (reason 0: not stopped).
    word: AtomicU64,
    mem_used: AtomicU64,
    mem_max: AtomicU64,
    /// The session's temporary space, where blocking operators spill past their memory
    /// (set once when the session opens; unset for statements run outside a session).
    temp: std::sync::OnceLock<Arc<crate::runtime::spill::SessionTemp>>,
}

impl Interrupt {
    /// Gives the session's temporary space to its statements (the first call only counts).
    pub(crate) fn set_temp(&self, temp: Arc<crate::runtime::spill::SessionTemp>) {
        let _ = self.temp.set(temp);
    }

    /// The session's temporary space, if it has one.
    pub(crate) fn temp(&self) -> Option<&crate::runtime::spill::SessionTemp> {
        self.temp.get().map(|t| &**t)
    }

    /// Whether the running statement must stop.
    pub(crate) fn is_set(&self) -> bool {
        self.word.load(Ordering::Relaxed) & REASON_MASK != 0
    }

    /// The error the stopped statement ends with.
    pub(crate) fn error(&self) -> SqlError {
        match self.word.load(Ordering::Acquire) & REASON_MASK {
            2 => SqlError::of(
                ErrorKind::QueryTimeout,
                "Query execution was interrupted, maximum statement execution time exceeded",
            ),
            3 => SqlError::of(
                ErrorKind::StatementTimeout,
                "Query execution was interrupted (max_statement_time exceeded)",
            ),
            _ => SqlError::interrupted(),
        }
    }

    /// Stops the running statement (KILL), unless it is already stopped.
    pub(crate) fn kill(&self) {
        let _ = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                (w & REASON_MASK == 0).then_some(w | Reason::Killed as u64)
            });
    }

    /// A new command starts: a stop that came after the previous one ended is forgotten.
    pub(crate) fn clear(&self) {
        let seq = self.word.load(Ordering::Acquire) >> 8;
        self.word.store(seq.wrapping_add(1) << 8, Ordering::Release);
    }

    /// A new statement starts (within a command, whose stop it keeps): its sequence number,
    /// for [`Deadlines::arm`], and a fresh memory charge against `mem_max` bytes.
    pub(crate) fn begin_statement(&self, mem_max: u64) -> u64 {
        self.mem_used.store(0, Ordering::Relaxed);
        self.mem_max.store(mem_max, Ordering::Relaxed);
        self.next_sequence()
    }

    /// The statement ended: a deadline that fires from now on finds another sequence number.
    pub(crate) fn end_statement(&self) {
        self.next_sequence();
    }

    /// Moves the sequence number on, keeping the stop reason; returns the new number.
    fn next_sequence(&self) -> u64 {
        let prev = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some((((w >> 8).wrapping_add(1)) << 8) | (w & REASON_MASK))
            })
            .expect("the update always applies");
        (prev >> 8).wrapping_add(1) & (u64::MAX >> 8)
    }

    /// Stops statement `seq` for `reason`, if it is still the one running and not stopped.
    fn fire(&self, seq: u64, reason: Reason) {
        let armed = (seq & (u64::MAX >> 8)) << 8;
        let _ = self.word.compare_exchange(
            armed,
            armed | reason as u64,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Charges `bytes` held by the running statement against its budget; past it, the
    /// statement fails with MariaDB's error for `max_session_mem_used`.
    pub(crate) fn charge(&self, bytes: u64) -> Result<(), SqlError> {
        let used = self.mem_used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let max = self.mem_max.load(Ordering::Relaxed);
        if used > max {
            return Err(self.over_budget());
        }
        Ok(())
    }

    /// Charges `bytes` if they fit in the budget; past it nothing is charged and the answer is
    /// `false` (for a holder that can let go of something instead, as a spilling one will).
    pub(crate) fn try_charge(&self, bytes: u64) -> bool {
        let used = self.mem_used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if used > self.mem_max.load(Ordering::Relaxed) {
            self.release(bytes);
            return false;
        }
        true
    }

    /// Gives back `bytes` charged earlier that the statement no longer holds.
    pub(crate) fn release(&self, bytes: u64) {
        // Saturating: a statement that began since the charge (the counter was reset) must
        // not wrap around to a huge charge.
        let _ = self
            .mem_used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(bytes))
            });
    }

    /// Bytes the running statement holds now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.mem_used.load(Ordering::Relaxed)
    }

    /// Checks the transaction's buffered writes (`pending` bytes, held in memory until
    /// commit) together with what the running statement holds against the same budget: a
    /// client must not be able to grow the server's memory without bound by writing rows and
    /// not committing. MariaDB's error for `max_session_mem_used`, saying what holds it.
    pub(crate) fn check_pending(&self, pending: u64) -> Result<(), SqlError> {
        let max = self.mem_max.load(Ordering::Relaxed);
        if self
            .mem_used
            .load(Ordering::Relaxed)
            .saturating_add(pending)
            <= max
        {
            return Ok(());
        }
        Err(SqlError::of(
            ErrorKind::OptionPreventsStatement,
            format!(
                "The zipdb server is running with the --max-session-mem-used={max} option so \
                 it cannot execute this statement (the transaction's uncommitted changes would \
                 hold more than {max} bytes in memory; commit in smaller transactions or raise \
                 max_session_mem_used)"
            ),
        ))
    }

    /// MariaDB's error for a statement past `max_session_mem_used`.
    pub(crate) fn over_budget(&self) -> SqlError {
        let max = self.mem_max.load(Ordering::Relaxed);
        SqlError::of(
            ErrorKind::OptionPreventsStatement,
            format!(
                "The zipdb server is running with the --max-session-mem-used={max} option so \
                 it cannot execute this statement (it would hold more than {max} bytes of rows \
                 in memory; raise max_session_mem_used or narrow the query)"
            ),
        )
    }
}

/// Global values of the statement limits: what a new session starts with, as in MySQL
/// (`SET GLOBAL` changes them for sessions that connect afterwards).
#[derive(Debug)]
pub(crate) struct Globals {
    pub max_prepared_stmt_count: AtomicU64,
    pub max_execution_time_ms: AtomicU64,
    pub max_statement_time_ms: AtomicU64,
    pub max_session_mem_used: AtomicU64,
    /// What a new session's `max_tmp_session_space_usage` and `sort_buffer_size` start as.
    pub max_tmp_session_space_usage: AtomicU64,
    pub sort_buffer_size: AtomicU64,
    /// `tmp_memory_table_size` (alias `tmp_table_size`).
    pub tmp_memory_table_size: AtomicU64,
}

/// A session's statement limits (copied from [`Globals`] at connect).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatementLimits {
    pub max_execution_time_ms: u64,
    pub max_statement_time_ms: u64,
    pub max_session_mem_used: u64,
}

impl Globals {
    /// What a session that connects now starts with.
    pub fn session_limits(&self) -> StatementLimits {
        StatementLimits {
            max_execution_time_ms: self.max_execution_time_ms.load(Ordering::Relaxed),
            max_statement_time_ms: self.max_statement_time_ms.load(Ordering::Relaxed),
            max_session_mem_used: self.max_session_mem_used.load(Ordering::Relaxed),
        }
    }
}

impl StatementLimits {
    /// The deadline a statement runs under, if any: `max_execution_time` applies to SELECTs
    /// (`is_select`), `max_statement_time` to everything; the earlier one wins.
    pub fn deadline(&self, is_select: bool) -> Option<(Duration, Reason)> {
        let exec = if is_select {
            self.max_execution_time_ms
        } else {
            0
        };
        let stmt_ms = self.max_statement_time_ms;
        let (ms, reason) = match (exec, stmt_ms) {
            (0, 0) => return None,
            (0, s) => (s, Reason::StatementTime),
            (e, s) if s == 0 || e <= s => (e, Reason::ExecutionTime),
            (_, s) => (s, Reason::StatementTime),
        };
        Some((Duration::from_millis(ms), reason))
    }
}

/// Statement deadlines of an instance, and the thread that enforces them. The thread starts
/// with the first deadline and ends once the instance is gone.
#[derive(Default)]
pub(crate) struct Deadlines {
    state: Mutex<Armed>,
    wake: Condvar,
}

#[derive(Default)]
struct Armed {
    /// By deadline; the second key part makes entries unique.
    at: BTreeMap<(Instant, u64), (Weak<Interrupt>, u64, Reason)>,
    next: u64,
    thread: bool,
}

/// An armed deadline; [`Deadlines::disarm`] removes it.
pub(crate) struct DeadlineKey((Instant, u64));

impl Deadlines {
    /// Stops statement `seq` of `interrupt` for `reason` once `after` has passed.
    pub(crate) fn arm(
        self: &Arc<Self>,
        interrupt: &Arc<Interrupt>,
        seq: u64,
        after: Duration,
        reason: Reason,
    ) -> DeadlineKey {
        let at = Instant::now() + after;
        let mut st = self.state.lock();
        st.next += 1;
        let key = (at, st.next);
        let first = st.at.keys().next().is_none_or(|k| *k > key);
        st.at.insert(key, (Arc::downgrade(interrupt), seq, reason));
        if !st.thread {
            let me = Arc::downgrade(self);
            let spawned = std::thread::Builder::new()
                .name("zipdb-deadlines".into())
                .spawn(move || run(me));
            // Without the thread, deadlines are not enforced (and nothing else breaks).
            st.thread = spawned.is_ok();
        } else if first {
            self.wake.notify_one();
        }
        DeadlineKey(key)
    }

    pub(crate) fn disarm(&self, armed: DeadlineKey) {
        self.state.lock().at.remove(&armed.0);
    }
}

/// The timer thread: fires deadlines as they pass; ends when the instance is dropped.
fn run(me: Weak<Deadlines>) {
    loop {
        let Some(d) = me.upgrade() else { return };
        let mut st = d.state.lock();
        let now = Instant::now();
        while let Some((&key, _)) = st.at.iter().next() {
            if key.0 > now {
                break;
            }
            let (target, seq, reason) = st.at.remove(&key).expect("present");
            if let Some(i) = target.upgrade() {
                i.fire(seq, reason);
            }
        }
        // Wake for the next deadline, or every second to notice that the instance is gone.
        let until = st
            .at
            .keys()
            .next()
            .map_or(now + Duration::from_secs(1), |k| {
                k.0.min(now + Duration::from_secs(1))
            });
        let _ = d.wake.wait_until(&mut st, until);
    }
}

/// Bytes a row of `values` holds in memory, for the budget: the values themselves and what
/// their strings and byte strings hold on the heap.
pub(crate) fn row_bytes(values: &[crate::Value]) -> u64 {
    let heap: usize = values
        .iter()
        .map(|v| match v {
            crate::Value::Str(s) => s.len(),
            crate::Value::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum();
    (std::mem::size_of_val(values) + heap + 24) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_stops_its_statement_and_only_it() {
        let d = Arc::new(Deadlines::default());
        let i = Arc::new(Interrupt::default());
        let seq = i.begin_statement(u64::MAX);
        let _a = d.arm(&i, seq, Duration::from_millis(20), Reason::StatementTime);
        let t0 = Instant::now();
        while !i.is_set() {
            assert!(t0.elapsed() < Duration::from_secs(5), "never fired");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(i.error().code(), 1969);
        // A deadline for a statement that has ended does nothing to the next one.
        i.clear();
        let seq = i.begin_statement(u64::MAX);
        let _b = d.arm(&i, seq, Duration::from_millis(10), Reason::ExecutionTime);
        i.end_statement();
        let _next = i.begin_statement(u64::MAX);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!i.is_set());
        // Disarmed deadlines never fire.
        let seq = i.begin_statement(u64::MAX);
        let c = d.arm(&i, seq, Duration::from_millis(10), Reason::ExecutionTime);
        d.disarm(c);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!i.is_set());
        // KILL wins over a later timeout, and its error is 1317.
        i.kill();
        i.fire(seq, Reason::ExecutionTime);
        assert_eq!(i.error().code(), 1317);
    }

    #[test]
    fn the_memory_budget_fails_the_statement_past_its_limit() {
        let i = Interrupt::default();
        i.begin_statement(1000);
        assert!(i.charge(600).is_ok());
        assert_eq!(i.charge(600).unwrap_err().code(), 1290);
        i.begin_statement(1000);
        assert!(i.charge(600).is_ok(), "a new statement starts at zero");
    }
}
