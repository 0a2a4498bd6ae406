//! The server over real TCP connections, driven by a minimal client written here: handshake,
//! authentication, ping, errors, oversized and malformed packets, and that a misbehaving
//! client never takes the server down.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use zipdb_server::protocol::handshake::{native_password_response, NATIVE_PASSWORD};
use zipdb_server::protocol::{caps, put_lenenc_bytes};
use zipdb_server::{Running, Server, ServerConfig};

/// A server on a fresh database in a temporary directory (kept alive by the server's handles
/// until the test process ends; each test has its own directory).
fn start(max_allowed_packet: usize) -> Running {
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
    let inst = zipdb_sql::Instance::open(db, Default::default()).unwrap();
    let config = ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        max_allowed_packet,
        max_connections: 8,
        ..ServerConfig::default()
    };
    Server::bind(config).unwrap().spawn(inst).unwrap()
}

struct Client {
    s: TcpStream,
    seq: u8,
}

impl Client {
    fn send(&mut self, payload: &[u8]) {
        let n = payload.len();
        let mut p = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, self.seq];
        p.extend_from_slice(payload);
        self.s.write_all(&p).unwrap();
        self.seq = self.seq.wrapping_add(1);
    }

    /// The next packet's payload; None when the server closed the connection.
    fn recv(&mut self) -> Option<Vec<u8>> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).ok()?;
        let n = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        assert_eq!(h[3], self.seq, "server sequence id");
        self.seq = self.seq.wrapping_add(1);
        let mut p = vec![0; n];
        self.s.read_exact(&mut p).ok()?;
        Some(p)
    }

    fn command(&mut self, cmd: u8, arg: &[u8]) -> Option<Vec<u8>> {
        self.seq = 0;
        let mut p = vec![cmd];
        p.extend_from_slice(arg);
        self.send(&p);
        self.recv()
    }
}

/// Connects and authenticates; returns the client and the server's answer to the login.
fn login(
    r: &Running,
    user: &str,
    password: &[u8],
    db: Option<&str>,
    plugin: &str,
) -> (Client, Vec<u8>) {
    let s = TcpStream::connect(r.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = Client { s, seq: 0 };
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
    let first = if plugin == NATIVE_PASSWORD {
        native_password_response(&scramble, password)
    } else {
        b"not-for-this-plugin".to_vec()
    };
    put_lenenc_bytes(&mut p, &first);
    if let Some(d) = db {
        p.extend_from_slice(d.as_bytes());
        p.push(0);
    }
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    c.send(&p);
    let mut answer = c.recv().expect("login answer");
    if answer[0] == 0xfe {
        // Auth switch to mysql_native_password, with a new scramble.
        let name_end = answer.iter().position(|&b| b == 0).unwrap();
        assert_eq!(&answer[1..name_end], NATIVE_PASSWORD.as_bytes());
        let s2 = answer[name_end + 1..name_end + 21].to_vec();
        c.send(&native_password_response(&s2, password));
        answer = c.recv().expect("answer after the switch");
    }
    (c, answer)
}

fn err_code(p: &[u8]) -> Option<u16> {
    (p.first() == Some(&0xff)).then(|| u16::from_le_bytes([p[1], p[2]]))
}

#[test]
fn root_logs_in_pings_and_gets_clear_errors() {
    let r = start(1 << 20);
    let (mut c, ok) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0, "OK after login: {ok:?}");
    assert_eq!(c.command(0x0e, b"").unwrap()[0], 0, "COM_PING");
    // Valid SQL that zipdb does not support: 1235 naming the construct.
    let e = c
        .command(0x03, b"SELECT a FROM t1 JOIN t2 ON t1.a = t2.a")
        .unwrap();
    assert_eq!(err_code(&e), Some(1235), "JOIN is not supported yet");
    assert!(String::from_utf8_lossy(&e[9..]).contains("'JOIN'"));
    let e = c.command(0x03, b"SELECT 1 UNION SELECT 2");
    let e = e.unwrap();
    assert_eq!(err_code(&e), Some(1235), "{}", String::from_utf8_lossy(&e));
    assert_eq!(&e[3..9], b"#42000");
    assert!(String::from_utf8_lossy(&e[9..]).contains("'UNION/INTERSECT/EXCEPT'"));
    // Invalid SQL: 1064 quoting where it went wrong, as MySQL does.
    let e = c.command(0x03, b"SELECT * FORM t").unwrap();
    assert_eq!(err_code(&e), Some(1064));
    assert!(String::from_utf8_lossy(&e[9..]).contains("near 'FORM t' at line 1"));
    assert_eq!(err_code(&c.command(0x03, b"   ").unwrap()), Some(1065));
    // Nesting deep enough to hit the parser's recursion limit, and invalid UTF-8.
    let deep = format!("SELECT {}1{}", "(".repeat(20_000), ")".repeat(20_000));
    assert_eq!(
        err_code(&c.command(0x03, deep.as_bytes()).unwrap()),
        Some(1064)
    );
    // Invalid UTF-8 is read lossily: an ordinary answer (here: no database), not a crash.
    assert_eq!(
        err_code(&c.command(0x03, b"SELECT '\xff\xfe' FROM t").unwrap()),
        Some(1046)
    );
    assert_eq!(err_code(&c.command(0x02, b"nope").unwrap()), Some(1049));
    assert_eq!(err_code(&c.command(0x7f, b"").unwrap()), Some(1047));
    // Still usable after all those errors.
    assert_eq!(c.command(0x0e, b"").unwrap()[0], 0);
    // COM_QUIT closes the connection.
    assert_eq!(c.command(0x01, b""), None);
}

#[test]
fn a_client_starting_with_another_plugin_is_switched_to_native_password() {
    let r = start(1 << 20);
    let (_c, ok) = login(&r, "root", b"", None, "caching_sha2_password");
    assert_eq!(ok[0], 0, "{ok:?}");
}

#[test]
fn wrong_user_password_or_database_is_refused() {
    let r = start(1 << 20);
    let (_c, e) = login(&r, "alice", b"", None, NATIVE_PASSWORD);
    assert_eq!(err_code(&e), Some(1045));
    assert!(String::from_utf8_lossy(&e).contains("'alice'@'127.0.0.1'"));
    let (_c, e) = login(&r, "root", b"guess", None, NATIVE_PASSWORD);
    assert_eq!(err_code(&e), Some(1045));
    assert!(String::from_utf8_lossy(&e).contains("using password: YES"));
    let (_c, e) = login(&r, "root", b"", Some("sbtest"), NATIVE_PASSWORD);
    assert_eq!(err_code(&e), Some(1049));
}

#[test]
fn bad_packets_close_only_their_connection() {
    let r = start(4096);
    // Oversized: error 1153, then the connection is closed.
    let (mut c, _) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    let big = vec![b'x'; 10_000];
    let e = c.command(0x03, &big).unwrap();
    assert_eq!(err_code(&e), Some(1153));
    // Out of sequence: closed.
    let (mut c, _) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    c.seq = 5;
    c.send(&[0x0e]);
    assert_eq!(c.recv(), None);
    // Garbage instead of a handshake response: an error or a close, never a hang.
    let s = TcpStream::connect(r.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = Client { s, seq: 0 };
    c.recv().unwrap();
    c.send(&[1, 2, 3]);
    if let Some(p) = c.recv() {
        assert_eq!(err_code(&p), Some(1043));
    }
    // A connection dropped mid-packet.
    let mut s = TcpStream::connect(r.addr()).unwrap();
    s.write_all(&[200, 0, 0]).unwrap();
    drop(s);
    // The server is still up.
    let (mut c, ok) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0);
    assert_eq!(c.command(0x0e, b"").unwrap()[0], 0);
}

#[test]
fn connections_beyond_the_limit_get_error_1040() {
    let r = start(1 << 20);
    let mut held = Vec::new();
    for _ in 0..8 {
        let (c, ok) = login(&r, "root", b"", None, NATIVE_PASSWORD);
        assert_eq!(ok[0], 0);
        held.push(c);
    }
    let s = TcpStream::connect(r.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = Client { s, seq: 0 };
    assert_eq!(err_code(&c.recv().unwrap()), Some(1040));
    // Closing one frees a slot.
    let mut first = held.remove(0);
    assert_eq!(first.command(0x01, b""), None);
    for _ in 0..100 {
        if r.connections() < 8 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let (_c, ok) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0);
}

#[test]
fn a_non_loopback_address_is_refused_while_root_has_no_password() {
    let config = ServerConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..ServerConfig::default()
    };
    assert!(Server::bind(config).is_err());
}
