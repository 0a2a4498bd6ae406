//! The watchdog: a thread that, about once a second, looks at the sockets of the connections
//! that are executing a statement and kills those whose client has gone away (the peer closed
//! the socket), as KILL CONNECTION would: the statement stops with 1317 at its next check and
//! is undone, and the connection ends. Idle connections need no watching: their blocked read
//! sees the close at once. It also closes the failed-login log's window, so that the count of a
//! flood that stopped is still written.
//!
//! One `poll` call a second covers every busy connection; a connection's own cost is one
//! relaxed store before and after each command.
//!
//! A client that shuts down only its sending side while it waits for a result (no MySQL
//! client library does) is treated as gone: `POLLRDHUP` cannot tell the two apart.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use zipdb_sql::Process;

use crate::server::Shared;

/// How often busy connections are checked.
pub const PERIOD: Duration = Duration::from_secs(1);

/// The connections that can be watched, by connection id.
#[derive(Default)]
pub struct Watchdog {
    conns: Mutex<std::collections::HashMap<u32, Watched>>,
}

struct Watched {
    fd: RawFd,
    busy: Arc<AtomicBool>,
    process: Arc<Process>,
}

/// A connection's registration; dropping it ends the watch, and it must be dropped before
/// the socket is closed (the descriptor number could otherwise be reused by another socket
/// and polled in its place).
pub struct Watch {
    dog: Arc<Watchdog>,
    id: u32,
    busy: Arc<AtomicBool>,
}

impl Watch {
    /// A command starts (`true`) or has been answered (`false`).
    pub fn busy(&self, on: bool) {
        self.busy.store(on, Ordering::Relaxed);
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.dog.conns.lock().remove(&self.id);
    }
}

impl Watchdog {
    /// Starts watching connection `id` on `sock`, whose session is `process`.
    pub fn watch(self: &Arc<Self>, id: u32, sock: &impl AsRawFd, process: Arc<Process>) -> Watch {
        let busy = Arc::new(AtomicBool::new(false));
        self.conns.lock().insert(
            id,
            Watched {
                fd: sock.as_raw_fd(),
                busy: busy.clone(),
                process,
            },
        );
        Watch {
            dog: Arc::clone(self),
            id,
            busy,
        }
    }

    /// Kills the busy connections whose client has gone; returns how many.
    pub fn check(&self) -> usize {
        // Under the lock throughout: a connection cannot close its socket (see `Watch`)
        // between the poll and the kill.
        let conns = self.conns.lock();
        let busy: Vec<&Watched> = conns
            .values()
            .filter(|w| w.busy.load(Ordering::Relaxed))
            .collect();
        if busy.is_empty() {
            return 0;
        }
        let fds: Vec<RawFd> = busy.iter().map(|w| w.fd).collect();
        let gone = peers_gone(&fds);
        let mut killed = 0;
        for (w, gone) in busy.iter().zip(gone) {
            if gone {
                w.process.kill_connection();
                killed += 1;
            }
        }
        killed
    }
}

/// Runs the watchdog of `shared` until the server and all its connections are gone.
pub fn run(shared: Weak<Shared>) {
    loop {
        std::thread::sleep(PERIOD);
        let Some(s) = shared.upgrade() else {
            return;
        };
        s.watchdog.check();
        s.login_log.tick();
    }
}

#[cfg(target_os = "linux")]
const HANGUP: libc::c_short = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;
#[cfg(not(target_os = "linux"))]
const HANGUP: libc::c_short = libc::POLLHUP | libc::POLLERR;

/// For each socket, whether its peer has closed it (or it failed). Never blocks.
fn peers_gone(fds: &[RawFd]) -> Vec<bool> {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: HANGUP,
            revents: 0,
        })
        .collect();
    // SAFETY: `polls` is an initialised array of `polls.len()` pollfd structs, which poll(2)
    // reads and whose `revents` it writes, within the array; a timeout of 0 returns at once.
    let rc = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 0) };
    if rc <= 0 {
        return vec![false; fds.len()];
    }
    polls.iter().map(|p| p.revents & HANGUP != 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_closed_peer_is_seen_an_open_one_is_not() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a_srv, _) = l.accept().unwrap();
        let b = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b_srv, _) = l.accept().unwrap();
        // Unread data is not a hang-up.
        use std::io::Write;
        (&a).write_all(b"pipelined").unwrap();
        assert_eq!(
            peers_gone(&[a_srv.as_raw_fd(), b_srv.as_raw_fd()]),
            [false, false]
        );
        drop(b);
        let t = std::time::Instant::now();
        while !peers_gone(&[b_srv.as_raw_fd()])[0] {
            assert!(t.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            peers_gone(&[a_srv.as_raw_fd(), b_srv.as_raw_fd()]),
            [false, true]
        );
        drop(a);
    }
}
