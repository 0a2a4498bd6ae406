//! What the server's integration tests share: a fresh instance, a server on it, and a minimal
//! client written here (handshake, authentication, commands, text result sets).
#![allow(dead_code)] // each test file uses a different part

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use zipdb_server::protocol::handshake::{
    caching_sha2_response, native_password_response, CACHING_SHA2_PASSWORD, NATIVE_PASSWORD,
};
use zipdb_server::protocol::{caps, put_lenenc_bytes, Reader};
use zipdb_server::{Running, Server, ServerConfig};

/// A fresh instance in a temporary directory (kept alive by the server's handles until the
/// test process ends; each test has its own directory).
pub fn instance() -> std::sync::Arc<zipdb_sql::Instance> {
    instance_with(zipdb_sql::InstanceOptions::default())
}

/// [`instance`] with options.
pub fn instance_with(options: zipdb_sql::InstanceOptions) -> std::sync::Arc<zipdb_sql::Instance> {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "zipdb-wire-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let db = zipdb_engine::Database::open(
        &dir,
        zipdb_engine::Options {
            pool_bytes: 16 << 20,
            wal_bytes: 8 << 20,
            recovery_progress: false,
            ..Default::default()
        },
    )
    .unwrap();
    zipdb_sql::Instance::open(db, options).unwrap()
}

/// A server on a fresh instance, on loopback.
pub fn start(max_allowed_packet: usize) -> Running {
    start_with(
        ServerConfig {
            max_allowed_packet,
            ..config()
        },
        zipdb_sql::InstanceOptions::default(),
    )
}

/// The tests' base configuration: loopback, any port, 8 connections, the default
/// thread_handling unless `ZIPDB_TEST_THREAD_HANDLING` names one (to run every test on both).
pub fn config() -> ServerConfig {
    let thread_handling = std::env::var("ZIPDB_TEST_THREAD_HANDLING")
        .ok()
        .map(|v| zipdb_server::ThreadHandling::parse(&v).unwrap())
        .unwrap_or(zipdb_server::DEFAULT_THREAD_HANDLING);
    ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_connections: 8,
        thread_handling,
        ..ServerConfig::default()
    }
}

/// A server with `config` on a fresh instance with `options`.
pub fn start_with(config: ServerConfig, options: zipdb_sql::InstanceOptions) -> Running {
    Server::bind(config)
        .unwrap()
        .spawn(instance_with(options))
        .unwrap()
}

pub struct Client {
    pub s: TcpStream,
    pub seq: u8,
}

impl Client {
    /// A raw connection, not logged in, with a read timeout of 10 s.
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { s, seq: 0 }
    }

    pub fn send(&mut self, payload: &[u8]) {
        let n = payload.len();
        let mut p = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, self.seq];
        p.extend_from_slice(payload);
        self.s.write_all(&p).unwrap();
        self.seq = self.seq.wrapping_add(1);
    }

    /// The next packet's payload; None when the server closed the connection.
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).ok()?;
        let n = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        assert_eq!(h[3], self.seq, "server sequence id");
        self.seq = self.seq.wrapping_add(1);
        let mut p = vec![0; n];
        self.s.read_exact(&mut p).ok()?;
        Some(p)
    }

    pub fn command(&mut self, cmd: u8, arg: &[u8]) -> Option<Vec<u8>> {
        self.seq = 0;
        let mut p = vec![cmd];
        p.extend_from_slice(arg);
        self.send(&p);
        self.recv()
    }
}

/// Connects and authenticates; returns the client and the server's answer to the login.
pub fn login(
    r: &Running,
    user: &str,
    password: &[u8],
    db: Option<&str>,
    plugin: &str,
) -> (Client, Vec<u8>) {
    login_to(r.addr(), user, password, db, plugin)
}

/// [`login`] to an address. The client starts with `plugin` and follows a switch.
pub fn login_to(
    addr: SocketAddr,
    user: &str,
    password: &[u8],
    db: Option<&str>,
    plugin: &str,
) -> (Client, Vec<u8>) {
    login_with_caps(addr, user, password, db, plugin, 0)
}

/// [`login_to`] with more capability flags (CLIENT_INTERACTIVE, ...).
pub fn login_with_caps(
    addr: SocketAddr,
    user: &str,
    password: &[u8],
    db: Option<&str>,
    plugin: &str,
    more_caps: u32,
) -> (Client, Vec<u8>) {
    let mut c = Client::connect(addr);
    let hs = c.recv().expect("handshake");
    assert_eq!(hs[0], 10, "protocol version");
    // The scramble: 8 bytes after version and connection id, 12 more after the fixed part.
    let ver_end = hs.iter().position(|&b| b == 0).unwrap();
    let mut scramble = hs[ver_end + 5..ver_end + 13].to_vec();
    let part2 = ver_end + 13 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    scramble.extend_from_slice(&hs[part2..part2 + 12]);
    let mut p = Vec::new();
    let client_caps = caps::PROTOCOL_41
        | caps::SECURE_CONNECTION
        | caps::PLUGIN_AUTH
        | caps::PLUGIN_AUTH_LENENC_CLIENT_DATA
        | more_caps
        | if db.is_some() {
            caps::CONNECT_WITH_DB
        } else {
            0
        };
    p.extend_from_slice(&client_caps.to_le_bytes());
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    let first = response_for(plugin, &scramble, password);
    put_lenenc_bytes(&mut p, &first);
    if let Some(d) = db {
        p.extend_from_slice(d.as_bytes());
        p.push(0);
    }
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    c.send(&p);
    let mut answer = c.recv().expect("login answer");
    let mut plugin = plugin.to_string();
    if answer[0] == 0xfe {
        // Auth switch: the plugin to use, and the scramble (NUL-terminated).
        let name_end = answer.iter().position(|&b| b == 0).unwrap();
        plugin = String::from_utf8(answer[1..name_end].to_vec()).unwrap();
        let s2 = answer[name_end + 1..name_end + 21].to_vec();
        c.send(&response_for(&plugin, &s2, password));
        answer = c.recv().expect("answer after the switch");
    }
    if plugin == CACHING_SHA2_PASSWORD && answer == [1, 3] {
        // caching_sha2_password's fast-auth success; the OK follows.
        answer = c.recv().expect("OK after fast auth");
    }
    (c, answer)
}

/// Logs in as root (no password) and checks that it worked.
pub fn root(r: &Running) -> Client {
    let (c, ok) = login(r, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0, "root logs in: {}", String::from_utf8_lossy(&ok));
    c
}

/// A plugin's response; for a plugin the test does not know, something no check accepts.
pub fn response_for(plugin: &str, scramble: &[u8], password: &[u8]) -> Vec<u8> {
    match plugin {
        NATIVE_PASSWORD => native_password_response(scramble, password),
        CACHING_SHA2_PASSWORD => caching_sha2_response(scramble, password),
        _ => b"not-for-this-plugin".to_vec(),
    }
}

/// Sends a query and returns the answer's first packet.
pub fn query(c: &mut Client, sql: &str) -> Vec<u8> {
    c.command(0x03, sql.as_bytes()).expect("an answer")
}

/// Runs a statement that must succeed without a result set.
pub fn exec(c: &mut Client, sql: &str) {
    let p = query(c, sql);
    assert_eq!(p[0], 0, "{sql}: {}", String::from_utf8_lossy(&p));
}

pub fn err_code(p: &[u8]) -> Option<u16> {
    (p.first() == Some(&0xff)).then(|| u16::from_le_bytes([p[1], p[2]]))
}

/// A query's rows as text (NULL as None), or its error code.
pub fn rows(c: &mut Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, u16> {
    let first = query(c, sql);
    if let Some(code) = err_code(&first) {
        return Err(code);
    }
    let columns = Reader::new(&first, "column count").lenenc().unwrap();
    for _ in 0..columns {
        c.recv().expect("column definition");
    }
    assert_eq!(c.recv().expect("EOF")[0], 0xfe);
    let mut out = Vec::new();
    loop {
        let p = c.recv().expect("a row or EOF");
        if p[0] == 0xfe && p.len() < 9 {
            return Ok(out);
        }
        if let Some(code) = err_code(&p) {
            return Err(code);
        }
        let mut r = Reader::new(&p, "row");
        let mut row = Vec::new();
        for _ in 0..columns {
            if r.remaining() > 0 && p[p.len() - r.remaining()] == 0xfb {
                r.u8().unwrap();
                row.push(None);
            } else {
                let b = r.lenenc_bytes().unwrap();
                row.push(Some(String::from_utf8_lossy(b).into_owned()));
            }
        }
        out.push(row);
    }
}

/// The one value of a one-row, one-column query.
pub fn scalar(c: &mut Client, sql: &str) -> Option<String> {
    let r = rows(c, sql).unwrap_or_else(|e| panic!("{sql}: error {e}"));
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}

/// Waits up to `limit` for `cond`; whether it came true.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = std::time::Instant::now();
    loop {
        if cond() {
            return true;
        }
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
