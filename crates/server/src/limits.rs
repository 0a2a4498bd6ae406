//! Every time and size limit a connection obeys, computed here from the server's settings and
//! the session's variables, so that whatever serves connections (a thread each today, an event
//! loop later) takes them over unchanged:
//!
//! - before authentication: the whole connection phase within `connect_timeout` (a deadline,
//!   so a client trickling bytes cannot stretch it) and packets of at most
//!   [`PRE_AUTH_MAX_PACKET`];
//! - after it: `wait_timeout` between commands (an interactive client starts with
//!   `interactive_timeout` as its `wait_timeout`, as in MySQL), `net_read_timeout` for the
//!   rest of a packet once it began, `net_write_timeout` for a reply the client does not read,
//!   and `max_allowed_packet` per packet.

use std::time::{Duration, Instant};

use zipdb_sql::Session;

use crate::protocol::packet::Timeouts;

/// Largest packet a client may send before it has authenticated. A handshake response is a
/// few hundred bytes (user, scramble answer, database, plugin, connection attributes, which
/// client libraries keep under 64 KiB), an authentication-switch answer 20 or 32.
pub const PRE_AUTH_MAX_PACKET: usize = 64 << 10;

/// MySQL's range for the timeout variables, in seconds (values outside it are clamped here;
/// MySQL clamps them at SET with a warning).
const TIMEOUT_MIN_SECS: u64 = 1;
const TIMEOUT_MAX_SECS: u64 = 31_536_000;

/// The connection phase: everything within `connect_timeout` of the accept.
pub fn handshake(accepted: Instant, connect_timeout: Duration) -> Timeouts {
    Timeouts {
        idle: None,
        read: None,
        write: None,
        deadline: Some(accepted + connect_timeout),
    }
}

/// The command phase, from the session's variables (their defaults are the server's
/// settings).
pub fn session(s: &Session) -> Timeouts {
    let o = &s.instance().options;
    let secs = |name: &str, default: Duration| {
        let v = s.sysvar_u64(name).unwrap_or(default.as_secs());
        Duration::from_secs(v.clamp(TIMEOUT_MIN_SECS, TIMEOUT_MAX_SECS))
    };
    Timeouts {
        idle: Some(secs("wait_timeout", o.wait_timeout)),
        read: Some(secs("net_read_timeout", o.net_read_timeout)),
        write: Some(secs("net_write_timeout", o.net_write_timeout)),
        deadline: None,
    }
}

/// At login: an interactive client (CLIENT_INTERACTIVE) gets `interactive_timeout` as its
/// session's `wait_timeout`, as MySQL does.
pub fn start_session(s: &mut Session, interactive: bool) {
    if interactive {
        let it = s
            .sysvar_u64("interactive_timeout")
            .unwrap_or(s.instance().options.interactive_timeout.as_secs());
        s.set_sysvar_u64("wait_timeout", it);
    }
}

/// Whether a statement may have changed one of the variables [`session`] reads, so that they
/// must be read again: it names one, and each of them ends in `timeout`. Reading them after
/// every command would cost three variable lookups on the fast path; this scan costs
/// nanoseconds for the short statements that dominate it.
pub fn may_change_timeouts(sql: &[u8]) -> bool {
    const WORD: &[u8] = b"timeout";
    const CHUNK: usize = 64;
    for (k, chunk) in sql.chunks(CHUNK).enumerate() {
        // A loop without an early exit, which the compiler vectorizes: chunks without a `t`
        // (most of a bulk INSERT's digits) cost a fraction of a nanosecond per byte.
        if !chunk.iter().fold(false, |a, &b| a | (b | 0x20 == b't')) {
            continue;
        }
        let start = k * CHUNK;
        for at in start..start + chunk.len() {
            if sql[at..].len() >= WORD.len() && sql[at..at + WORD.len()].eq_ignore_ascii_case(WORD)
            {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_that_name_a_timeout_are_noticed() {
        for sql in [
            "SET wait_timeout = 5",
            "set @@SESSION.Net_Read_Timeout=1",
            "SET autocommit = 0, `WAIT_TIMEOUT` = 2",
        ] {
            assert!(may_change_timeouts(sql.as_bytes()), "{sql}");
        }
        for sql in ["SELECT 1", "SET autocommit = 0", "", "timeou"] {
            assert!(!may_change_timeouts(sql.as_bytes()), "{sql}");
        }
        // Across a chunk boundary, and at the very end of a long statement.
        for at in [0, 60, 63, 64, 500] {
            let mut sql = vec![b'1'; at];
            sql.extend_from_slice(b"TimeOut");
            assert!(may_change_timeouts(&sql), "at {at}");
            sql.pop();
            assert!(!may_change_timeouts(&sql), "at {at}, cut");
        }
    }

    #[test]
    fn the_handshake_has_one_deadline_and_no_other_bound() {
        let now = Instant::now();
        let t = handshake(now, Duration::from_secs(10));
        assert_eq!(t.deadline, Some(now + Duration::from_secs(10)));
        assert_eq!((t.idle, t.read, t.write), (None, None, None));
    }
}
