//! The pool of threads (`--thread-handling pool-of-threads`), on a real `zipdb serve` process:
//! thousands of idle authenticated connections cost no thread each, a new client is still
//! answered, and KILL and wait_timeout still close pooled connections.
//!
//! The number of idle connections is 10,000 when the hard limit on open files allows it (the
//! test and the server each need one descriptor per connection), else as many as it allows
//! (printed); `ZIPDB_POOL_TEST_CONNS` sets it.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{login_to, Client};
use zipdb_server::protocol::handshake::NATIVE_PASSWORD;

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Raises this process's soft limit on open files to the hard limit; returns it.
fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct, to `lim`, which outlives the call.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: setrlimit reads one rlimit struct, `lim`, which outlives the call.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    lim.rlim_cur
}

fn spawn(dir: &std::path::Path, max_connections: usize) -> (Proc, std::net::SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zipdb"))
        .args(["serve", "--port", "0", "--pool-mb", "16", "--data-dir"])
        .arg(dir)
        .args([
            "--thread-handling",
            "pool-of-threads",
            "--max-connections",
            &max_connections.to_string(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    let port: u16 = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "server exited before listening: {log}"
        );
        log.push_str(&line);
        if let Some(rest) = line.split("listening on 127.0.0.1:").nth(1) {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            break digits.parse().unwrap();
        }
    };
    // Keep draining stderr (failed logins and the like), so the server never blocks on it.
    std::thread::spawn(move || {
        let mut line = String::new();
        while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
            line.clear();
        }
    });
    (Proc(child), ([127, 0, 0, 1], port).into())
}

fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// The first column of the first row of a text result set.
fn scalar(c: &mut Client, sql: &str) -> String {
    let head = c.command(0x03, sql.as_bytes()).expect("answer");
    assert_ne!(head[0], 0xff, "{sql}: {}", String::from_utf8_lossy(&head));
    let cols = head[0] as usize;
    for _ in 0..cols {
        c.recv().unwrap();
    }
    assert_eq!(c.recv().unwrap()[0], 0xfe, "EOF after the columns");
    let row = c.recv().unwrap();
    loop {
        let p = c.recv().unwrap();
        if p[0] == 0xfe && p.len() < 9 {
            break;
        }
    }
    let n = row[0] as usize;
    String::from_utf8(row[1..1 + n].to_vec()).unwrap()
}

fn root(addr: std::net::SocketAddr) -> Client {
    let (c, ok) = login_to(addr, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0, "login: {}", String::from_utf8_lossy(&ok));
    c
}

/// The connection is closed by the server within `limit`.
fn closed_within(c: &mut Client, limit: Duration) -> Duration {
    let t = Instant::now();
    c.s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 64];
    loop {
        match std::io::Read::read(&mut c.s, &mut b) {
            Ok(0) => return t.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return t.elapsed(),
            Err(e) => panic!("not closed within {limit:?}: {e}"),
        }
    }
}

/// Median time of `n` `SELECT 1` round trips on `c`.
fn select1_median(c: &mut Client, n: usize) -> Duration {
    let mut t: Vec<Duration> = (0..n)
        .map(|_| {
            let s = Instant::now();
            assert_eq!(scalar(c, "SELECT 1"), "1");
            s.elapsed()
        })
        .collect();
    t.sort();
    t[n / 2]
}

#[test]
fn ten_thousand_idle_connections_cost_no_thread_each() {
    let started = Instant::now();
    let hard = raise_nofile();
    // One descriptor per connection here and in the server, plus a margin for both.
    let fit = (hard as usize).saturating_sub(200);
    let want: usize = std::env::var("ZIPDB_POOL_TEST_CONNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let n = want.min(fit);
    eprintln!("open files hard limit {hard}: {n} idle connections (wanted {want})");
    let dir = std::env::temp_dir().join(format!("zipdb-pool-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (server, addr) = spawn(&dir, n + 10);
    let pid = server.0.id();

    let mut probe = root(addr);
    let idle_server = select1_median(&mut probe, 500);
    let threads_before = threads_of(pid);

    let mut idle = Vec::with_capacity(n);
    for i in 0..n {
        let c = root(addr);
        idle.push(c);
        if i % 1000 == 999 {
            eprintln!("{} connections, {:?}", i + 1, started.elapsed());
        }
    }
    // Every connection answers: logged in, and a command on a few of them.
    for c in idle.iter_mut().step_by(n.div_ceil(20).max(1)) {
        assert_eq!(c.command(0x0e, b"").unwrap()[0], 0, "COM_PING");
    }
    let threads = threads_of(pid);
    // A new client logs in and is answered at once.
    let t = Instant::now();
    let mut fresh = root(addr);
    assert_eq!(scalar(&mut fresh, "SELECT 1"), "1");
    let first_answer = t.elapsed();
    let busy_server = select1_median(&mut fresh, 500);
    eprintln!(
        "threads: {threads_before} before, {threads} with {n} idle connections; SELECT 1 \
         median {idle_server:?} on an idle server, {busy_server:?} with them; a new client's \
         login and first answer {first_answer:?}"
    );
    assert!(
        threads < 64,
        "{threads} threads for {n} idle connections: idle connections must not cost a thread"
    );
    assert!(first_answer < Duration::from_secs(2), "{first_answer:?}");

    // KILL CONNECTION closes an idle pooled connection promptly.
    let mut victim = idle.pop().unwrap();
    let id = scalar(&mut victim, "SELECT CONNECTION_ID()");
    let ok = fresh
        .command(0x03, format!("KILL {id}").as_bytes())
        .unwrap();
    assert_eq!(ok[0], 0, "KILL: {}", String::from_utf8_lossy(&ok));
    let took = closed_within(&mut victim, Duration::from_secs(5));
    assert!(took < Duration::from_secs(2), "KILL took {took:?}");

    // wait_timeout closes an idle pooled connection.
    let mut short = idle.pop().unwrap();
    let ok = short
        .command(0x03, b"SET SESSION wait_timeout = 1")
        .unwrap();
    assert_eq!(ok[0], 0);
    let took = closed_within(&mut short, Duration::from_secs(10));
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "wait_timeout 1 s closed the connection after {took:?}"
    );
    // The others are still there.
    assert_eq!(idle[0].command(0x0e, b"").unwrap()[0], 0);
    assert_eq!(scalar(&mut fresh, "SELECT 2"), "2");

    drop(idle);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        started.elapsed() < Duration::from_secs(240),
        "took {:?}",
        started.elapsed()
    );
}

/// The pool's settings and the port are variables clients can read, and not set: the server
/// reads them at start only.
#[test]
fn thread_handling_settings_are_read_only_variables() {
    let dir = std::env::temp_dir().join(format!("zipdb-pool-vars-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (_server, addr) = spawn(&dir, 10);
    let mut c = root(addr);
    assert_eq!(
        scalar(&mut c, "SELECT @@thread_handling"),
        "pool-of-threads"
    );
    assert_eq!(scalar(&mut c, "SELECT @@port"), addr.port().to_string());
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert_eq!(
        scalar(&mut c, "SELECT @@thread_pool_size"),
        cpus.to_string()
    );
    assert_eq!(
        scalar(&mut c, "SELECT @@global.thread_pool_stall_limit"),
        "10"
    );
    let listed = common::rows(&mut c, "SHOW VARIABLES LIKE 'thread_pool%'").unwrap();
    let names: Vec<&str> = listed.iter().map(|r| r[0].as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "thread_pool_idle_timeout",
            "thread_pool_max_threads",
            "thread_pool_oversubscribe",
            "thread_pool_size",
            "thread_pool_stall_limit"
        ]
    );
    for set in [
        "SET GLOBAL thread_pool_size = 4",
        "SET GLOBAL connect_timeout = 5",
        "SET GLOBAL max_connections = 5",
        "SET @@global.port = 1",
    ] {
        assert_eq!(
            common::err_code(&common::query(&mut c, set)),
            Some(1238),
            "{set}"
        );
    }
    assert_eq!(scalar(&mut c, "SELECT @@connect_timeout"), "10");
    let _ = std::fs::remove_dir_all(&dir);
}
