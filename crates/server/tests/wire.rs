//! The server over real TCP connections, driven by a minimal client written here: handshake,
//! authentication, ping, errors, oversized and malformed packets, and that a misbehaving
//! client never takes the server down.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use zipdb_server::protocol::handshake::{CACHING_SHA2_PASSWORD, NATIVE_PASSWORD};
use zipdb_server::{Server, ServerConfig};

/// Whether a login as `user` with `password`, starting with `plugin`, succeeds.
fn logs_in(r: &zipdb_server::Running, user: &str, password: &str, plugin: &str) -> bool {
    let (_c, answer) = login(r, user, password.as_bytes(), None, plugin);
    match answer[0] {
        0 => true,
        _ => {
            assert_eq!(err_code(&answer), Some(1045), "{answer:?}");
            false
        }
    }
}

#[test]
fn root_logs_in_pings_and_gets_clear_errors() {
    let r = start(1 << 20);
    let (mut c, ok) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0, "OK after login: {ok:?}");
    assert_eq!(c.command(0x0e, b"").unwrap()[0], 0, "COM_PING");
    // Valid SQL that zipdb does not support: 1235 naming the construct.
    let e = c
        .command(0x03, b"SELECT a FROM t1 NATURAL JOIN t2")
        .unwrap();
    assert_eq!(
        err_code(&e),
        Some(1235),
        "NATURAL JOIN is not supported yet"
    );
    assert!(String::from_utf8_lossy(&e[9..]).contains("'NATURAL JOIN'"));
    let e = c.command(0x03, b"CREATE VIEW v AS SELECT 1");
    let e = e.unwrap();
    assert_eq!(err_code(&e), Some(1235), "{}", String::from_utf8_lossy(&e));
    assert_eq!(&e[3..9], b"#42000");
    assert!(String::from_utf8_lossy(&e[9..]).contains("'CREATE VIEW'"));
    // Invalid SQL: 1064 quoting where it went wrong, as MySQL does.
    let e = c.command(0x03, b"SELECT * FORM t").unwrap();
    assert_eq!(err_code(&e), Some(1064));
    assert!(String::from_utf8_lossy(&e[9..]).contains("near 'FORM t' at line 1"));
    assert_eq!(err_code(&c.command(0x03, b"   ").unwrap()), Some(1065));
    // Nesting deep enough to hit the parser's recursion limit: MySQL's stack overrun error
    // (1436, as zipdb_sql's parser reports it since the expression-depth bounds), not a crash.
    let deep = format!("SELECT {}1{}", "(".repeat(20_000), ")".repeat(20_000));
    assert_eq!(
        err_code(&c.command(0x03, deep.as_bytes()).unwrap()),
        Some(1436)
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
    let mut c = Client::connect(r.addr());
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
fn connections_beyond_the_limit_get_error_1040_and_root_has_a_slot_of_its_own() {
    let r = start(1 << 20);
    let mut admin = root(&r);
    exec(&mut admin, "CREATE USER 'app'@'%'");
    let mut held = Vec::new();
    for _ in 0..7 {
        let (c, ok) = login(&r, "app", b"", None, NATIVE_PASSWORD);
        assert_eq!(ok[0], 0);
        held.push(c);
    }
    // Nine sockets are accepted (max_connections 8, plus the extra one); on the ninth only
    // root may log in, after its login, as MySQL checks.
    let (_c, e) = login(&r, "app", b"", None, NATIVE_PASSWORD);
    assert_eq!(err_code(&e), Some(1040), "{}", String::from_utf8_lossy(&e));
    assert!(String::from_utf8_lossy(&e).contains("Too many connections"));
    assert!(eventually(Duration::from_secs(5), || r.connections() == 8));
    let mut second_root = root(&r);
    assert_eq!(scalar(&mut second_root, "SELECT 1").as_deref(), Some("1"));
    // The tenth socket is refused at once, in place of the handshake.
    let mut c = Client::connect(r.addr());
    assert_eq!(err_code(&c.recv().unwrap()), Some(1040));
    // Closing one frees a slot.
    let mut first = held.remove(0);
    assert_eq!(first.command(0x01, b""), None);
    assert!(eventually(Duration::from_secs(5), || r.connections() < 9));
    let (_c, ok) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0);
}

#[test]
fn accounts_log_in_with_both_plugins_until_changed_or_dropped() {
    let r = start(1 << 20);
    let (mut root, ok) = login(&r, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0);
    let ok = query(
        &mut root,
        "CREATE USER 'nat'@'%' IDENTIFIED BY 'n1', 'sha'@'localhost' IDENTIFIED WITH \
         caching_sha2_password BY 's1'",
    );
    assert_eq!(ok[0], 0, "{}", String::from_utf8_lossy(&ok));
    for start_with in [NATIVE_PASSWORD, CACHING_SHA2_PASSWORD] {
        // Each account logs in whichever plugin the client starts with (the server switches
        // it to the account's), with the right password only.
        assert!(
            logs_in(&r, "nat", "n1", start_with),
            "nat from {start_with}"
        );
        assert!(
            logs_in(&r, "sha", "s1", start_with),
            "sha from {start_with}"
        );
        assert!(!logs_in(&r, "nat", "n2", start_with));
        assert!(!logs_in(&r, "sha", "S1", start_with));
        assert!(!logs_in(&r, "sha", "", start_with));
        assert!(!logs_in(&r, "nobody", "", start_with));
    }
    // The answers name the account and whether a password was used.
    let (_c, e) = login(&r, "sha", b"", None, CACHING_SHA2_PASSWORD);
    let text = String::from_utf8_lossy(&e);
    assert!(
        text.contains("Access denied for user 'sha'@'127.0.0.1' (using password: NO)"),
        "{text}"
    );
    let (_c, e) = login(&r, "nat", b"x", None, NATIVE_PASSWORD);
    assert!(String::from_utf8_lossy(&e).contains("(using password: YES)"));
    // The session knows its account.
    let (mut sha, _) = login(&r, "sha", b"s1", None, CACHING_SHA2_PASSWORD);
    assert_eq!(query(&mut sha, "SELECT CURRENT_USER()"), [1], "one column");
    sha.recv().expect("column definition");
    sha.recv().expect("EOF");
    let row = sha.recv().expect("the row");
    assert_eq!(&row[1..], b"sha@localhost");
    // ALTER USER changes password and plugin; the old password stops working.
    let ok = query(
        &mut root,
        "ALTER USER nat IDENTIFIED WITH caching_sha2_password BY 'n2'",
    );
    assert_eq!(ok[0], 0, "{}", String::from_utf8_lossy(&ok));
    assert!(!logs_in(&r, "nat", "n1", NATIVE_PASSWORD));
    assert!(logs_in(&r, "nat", "n2", NATIVE_PASSWORD));
    assert!(logs_in(&r, "nat", "n2", CACHING_SHA2_PASSWORD));
    assert_eq!(
        query(&mut root, "SET PASSWORD FOR 'sha'@'localhost' = 's2'")[0],
        0
    );
    assert!(!logs_in(&r, "sha", "s1", CACHING_SHA2_PASSWORD));
    assert!(logs_in(&r, "sha", "s2", CACHING_SHA2_PASSWORD));
    // Errors with MySQL's codes.
    assert_eq!(err_code(&query(&mut root, "CREATE USER nat")), Some(1396));
    assert_eq!(
        err_code(&query(
            &mut root,
            "CREATE USER x IDENTIFIED WITH nope BY 'x'"
        )),
        Some(1524)
    );
    assert_eq!(err_code(&query(&mut root, "CREATE USER 'x'@")), Some(1064));
    assert_eq!(
        err_code(&query(&mut root, "REVOKE ALL ON *.* FROM nat")),
        Some(1235)
    );
    // DROP USER: the account can no longer log in; IF EXISTS turns the error into a note.
    assert_eq!(query(&mut root, "DROP USER nat, 'sha'@'localhost'")[0], 0);
    assert!(!logs_in(&r, "nat", "n2", CACHING_SHA2_PASSWORD));
    assert!(!logs_in(&r, "sha", "s2", CACHING_SHA2_PASSWORD));
    assert_eq!(err_code(&query(&mut root, "DROP USER nat")), Some(1396));
    let ok = query(&mut root, "DROP USER IF EXISTS nat");
    assert_eq!(ok[0], 0);
    // OK: header, affected rows, last id, status (2 bytes), then the warning count.
    assert_eq!(u16::from_le_bytes([ok[5], ok[6]]), 1, "one note: {ok:?}");
}

#[test]
fn a_non_loopback_address_is_served_only_once_every_account_has_a_password() {
    let inst = instance();
    let config = ServerConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..ServerConfig::default()
    };
    let e = Server::bind(config.clone())
        .unwrap()
        .spawn(inst.clone())
        .err()
        .expect("refused while root has no password");
    assert!(e.to_string().contains("'root'@'localhost'"), "{e}");
    let mut s = inst.session("root", 1);
    let r = s.query("ALTER USER 'root'@'localhost' IDENTIFIED BY 'rootpw'");
    assert!(r[0].is_ok(), "{r:?}");
    let r = Server::bind(config).unwrap().spawn(inst).unwrap();
    // Served (here reached through loopback); root now needs its password.
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], r.addr().port()));
    let (mut c, ok) = login_to(local, "root", b"rootpw", None, NATIVE_PASSWORD);
    assert_eq!(ok[0], 0, "{ok:?}");
    let (_c, e) = login_to(local, "root", b"", None, NATIVE_PASSWORD);
    assert_eq!(err_code(&e), Some(1045));
    // An account without a password would not be served from here on: refused.
    assert_eq!(
        err_code(&query(&mut c, "CREATE USER 'open'@'%'")),
        Some(1819)
    );
    assert_eq!(
        query(&mut c, "CREATE USER 'closed'@'%' IDENTIFIED BY 'x'")[0],
        0
    );
}
