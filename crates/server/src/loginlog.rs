//! Failed logins, logged to stderr with the user, the client's host and the reason, at most
//! [`LINES_PER_SECOND`] a second: a flood of bad logins costs a summary line a second, not the
//! disk. The summary of a second is written when the next failure comes or, if none does, by
//! the server's watchdog within a second or two (see [`LoginLog::tick`]).

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Lines of failed logins written per second at most; the rest are counted.
pub const LINES_PER_SECOND: u32 = 10;

/// Where the lines go (stderr in the server, a vector in tests).
pub type Sink = Box<dyn Fn(&str) + Send + Sync>;

pub struct LoginLog {
    state: Mutex<Window>,
    sink: Sink,
}

/// The current one-second window.
struct Window {
    start: Instant,
    written: u32,
    suppressed: u64,
}

impl LoginLog {
    pub fn new(sink: Sink) -> LoginLog {
        LoginLog {
            state: Mutex::new(Window {
                start: Instant::now(),
                written: 0,
                suppressed: 0,
            }),
            sink,
        }
    }

    /// Writes to stderr.
    pub fn stderr() -> LoginLog {
        LoginLog::new(Box::new(|line| eprintln!("{line}")))
    }

    /// A failed login: `user` as the client sent it (`-` when it never said), `host` its
    /// address, `reason` for the operator (the client was told less).
    pub fn failed(&self, user: &str, host: &str, reason: &str) {
        self.failed_at(Instant::now(), user, host, reason);
    }

    fn failed_at(&self, now: Instant, user: &str, host: &str, reason: &str) {
        let mut w = self.state.lock();
        self.roll(&mut w, now);
        if w.written < LINES_PER_SECOND {
            w.written += 1;
            // The user name comes from the client: quoted with escapes, so that it cannot
            // forge a line.
            (self.sink)(&format!(
                "zipdb: failed login: user {user:?} from {host}: {reason}"
            ));
        } else {
            w.suppressed += 1;
        }
    }

    /// Closes a window that is over, writing its summary: called every second or so, so
    /// that the count of a flood that stopped is still reported.
    pub fn tick(&self) {
        let mut w = self.state.lock();
        self.roll(&mut w, Instant::now());
    }

    fn roll(&self, w: &mut Window, now: Instant) {
        if now.saturating_duration_since(w.start) < Duration::from_secs(1) {
            return;
        }
        if w.suppressed > 0 {
            (self.sink)(&format!(
                "zipdb: {} more failed logins not logged (at most {LINES_PER_SECOND} a second are)",
                w.suppressed
            ));
        }
        *w = Window {
            start: now,
            written: 0,
            suppressed: 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn log() -> (LoginLog, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        (
            LoginLog::new(Box::new(move |s| l.lock().push(s.to_string()))),
            lines,
        )
    }

    #[test]
    fn a_flood_is_cut_to_a_few_lines_and_a_count_each_second() {
        let (log, lines) = log();
        let t0 = Instant::now();
        for i in 0..1000 {
            log.failed_at(t0, &format!("u{i}"), "10.0.0.1", "wrong password");
        }
        {
            let l = lines.lock();
            assert_eq!(l.len(), LINES_PER_SECOND as usize);
            assert_eq!(
                l[0],
                "zipdb: failed login: user \"u0\" from 10.0.0.1: wrong password"
            );
        }
        // The next second: the summary of the first, then lines again.
        let t1 = t0 + Duration::from_millis(1001);
        log.failed_at(t1, "late", "10.0.0.2", "no such account");
        let l = lines.lock().clone();
        assert_eq!(l.len(), LINES_PER_SECOND as usize + 2);
        assert!(
            l[10].contains("990 more failed logins not logged"),
            "{}",
            l[10]
        );
        assert!(l[11].contains("\"late\" from 10.0.0.2: no such account"));
    }

    #[test]
    fn the_count_is_reported_even_when_the_flood_stops() {
        let (log, lines) = log();
        let past = Instant::now() - Duration::from_secs(5);
        *log.state.lock() = Window {
            start: past,
            written: 0,
            suppressed: 0,
        };
        for _ in 0..15 {
            log.failed_at(past, "x", "h", "r");
        }
        assert_eq!(lines.lock().len(), 10);
        log.tick();
        let l = lines.lock().clone();
        assert_eq!(l.len(), 11);
        assert!(l[10].contains("5 more failed logins"), "{}", l[10]);
        // Nothing more to report.
        log.tick();
        assert_eq!(lines.lock().len(), 11);
    }

    #[test]
    fn user_names_cannot_forge_lines() {
        let (log, lines) = log();
        log.failed("a\nzipdb: fake", "h", "r");
        let l = lines.lock().clone();
        assert_eq!(l.len(), 1);
        assert!(!l[0].contains('\n'), "{}", l[0]);
    }
}
