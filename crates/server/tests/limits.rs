//! The limits a connection obeys (issue 18): connect_timeout and the pre-authentication
//! packet cap, the administrator's extra slot (in wire.rs), wait_timeout and
//! interactive_timeout, net_read_timeout and net_write_timeout, long data capped at
//! max_allowed_packet, and statements killed when their client goes away. Timeouts are set
//! to a second or two so that the whole file runs in seconds.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::*;
use zipdb_server::protocol::handshake::NATIVE_PASSWORD;
use zipdb_server::protocol::{caps, Reader};
use zipdb_server::ServerConfig;
use zipdb_sql::InstanceOptions;

const SEC: Duration = Duration::from_secs(1);

/// Waits for the server to close `c`; returns how long that took (panics after `limit`).
fn closed_within(c: &mut Client, limit: Duration) -> Duration {
    let t = Instant::now();
    c.s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match c.s.read(&mut b) {
            Ok(0) => return t.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return t.elapsed(),
            Err(e) => panic!("not closed after {:?}: {e}", t.elapsed()),
        }
    }
}

fn with_connect_timeout(
    t: Duration,
    max_connections: usize,
    extra: usize,
) -> zipdb_server::Running {
    start_with(
        ServerConfig {
            connect_timeout: t,
            max_connections,
            extra_max_connections: extra,
            ..config()
        },
        InstanceOptions::default(),
    )
}

#[test]
fn connect_timeout_closes_silent_and_trickling_sockets_and_frees_their_slots() {
    let r = with_connect_timeout(SEC, 2, 0);
    // Silent after the greeting: closed after about a second.
    let mut silent = Client::connect(r.addr());
    silent.recv().expect("handshake");
    let took = closed_within(&mut silent, 5 * SEC);
    assert!(
        took > Duration::from_millis(800) && took < 3 * SEC,
        "{took:?}"
    );

    // A slowloris: a header promising 200 bytes, then one byte every 100 ms, which would take
    // 20 s. The deadline covers the whole handshake, so it is closed as soon.
    let mut slow = Client::connect(r.addr());
    slow.recv().expect("handshake");
    let mut writer = slow.s.try_clone().unwrap();
    let t = Instant::now();
    let trickle = std::thread::spawn(move || {
        let _ = writer.write_all(&[200, 0, 0, 1]);
        for _ in 0..200 {
            std::thread::sleep(Duration::from_millis(100));
            if writer.write_all(b"x").is_err() {
                break;
            }
        }
    });
    closed_within(&mut slow, 5 * SEC);
    let took = t.elapsed();
    assert!(
        took < 3 * SEC,
        "a trickle stretched the handshake to {took:?}"
    );
    trickle.join().unwrap();

    // Two silent sockets take both slots (no extra one here): the next is refused, until the
    // timeout frees them.
    let mut a = Client::connect(r.addr());
    let mut b = Client::connect(r.addr());
    a.recv().expect("handshake");
    b.recv().expect("handshake");
    let mut refused = Client::connect(r.addr());
    assert_eq!(err_code(&refused.recv().unwrap()), Some(1040));
    closed_within(&mut a, 5 * SEC);
    closed_within(&mut b, 5 * SEC);
    assert!(eventually(5 * SEC, || r.connections() == 0));
    let mut c = root(&r);
    // A login well within the timeout is not cut by it later.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(c.command(0x0e, b"").unwrap()[0], 0);
}

#[test]
fn packets_before_login_are_capped() {
    let r = start(64 << 20);
    let mut c = Client::connect(r.addr());
    c.recv().expect("handshake");
    // A handshake response claiming 1 MiB: refused at its header (nothing allocated for it),
    // with MySQL's handshake error.
    c.s.write_all(&[0, 0, 16, 1]).unwrap();
    c.seq = 2;
    let e = c.recv().expect("an error");
    assert_eq!(err_code(&e), Some(1043), "{}", String::from_utf8_lossy(&e));
    assert!(
        String::from_utf8_lossy(&e).contains("before authentication"),
        "{}",
        String::from_utf8_lossy(&e)
    );
    assert_eq!(c.recv(), None, "closed");
    // After login the limit is max_allowed_packet again.
    let mut c = root(&r);
    let big = format!("SELECT '{}'", "x".repeat(200_000));
    assert_eq!(query(&mut c, &big), [1], "one column");
}

#[test]
fn wait_timeout_closes_idle_connections_and_set_session_changes_it() {
    let r = start_with(
        config(),
        InstanceOptions {
            wait_timeout: SEC,
            ..InstanceOptions::default()
        },
    );
    let mut c = root(&r);
    assert_eq!(
        scalar(&mut c, "SELECT @@wait_timeout").as_deref(),
        Some("1")
    );
    // Busy: commands every 400 ms keep it open past the timeout.
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(c.command(0x0e, b"").unwrap()[0], 0);
    }
    // Idle: closed (without an error packet, as MariaDB does).
    let took = closed_within(&mut c, 5 * SEC);
    assert!(
        took > Duration::from_millis(800) && took < 3 * SEC,
        "{took:?}"
    );

    // SET SESSION wait_timeout takes effect for that connection only.
    let mut long = root(&r);
    exec(&mut long, "SET SESSION wait_timeout = 3");
    assert_eq!(
        scalar(&mut long, "SELECT @@wait_timeout").as_deref(),
        Some("3")
    );
    let mut short = root(&r);
    let t = Instant::now();
    closed_within(&mut short, 5 * SEC);
    assert!(t.elapsed() < 2 * SEC);
    std::thread::sleep(SEC);
    assert_eq!(
        long.command(0x0e, b"").unwrap()[0],
        0,
        "still open after 2 s"
    );
    let took = closed_within(&mut long, 6 * SEC);
    assert!(took > 2 * SEC, "{took:?}");
}

#[test]
fn a_prepared_set_of_wait_timeout_takes_effect_too() {
    let r = start(1 << 20);
    let mut c = root(&r);
    let ok = c.command(0x16, b"SET wait_timeout = 1").unwrap();
    assert_eq!(ok[0], 0, "{}", String::from_utf8_lossy(&ok));
    let id = u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]]);
    let mut exec = id.to_le_bytes().to_vec();
    exec.extend_from_slice(&[0, 1, 0, 0, 0]);
    let ok = c.command(0x17, &exec).unwrap();
    assert_eq!(ok[0], 0, "{}", String::from_utf8_lossy(&ok));
    let took = closed_within(&mut c, 5 * SEC);
    assert!(took < 3 * SEC, "{took:?}");
}

#[test]
fn interactive_clients_get_interactive_timeout() {
    let r = start_with(
        config(),
        InstanceOptions {
            interactive_timeout: SEC,
            ..InstanceOptions::default()
        },
    );
    let (mut i, ok) = login_with_caps(
        r.addr(),
        "root",
        b"",
        None,
        NATIVE_PASSWORD,
        caps::INTERACTIVE,
    );
    assert_eq!(ok[0], 0);
    let mut plain = root(&r);
    assert_eq!(
        scalar(&mut i, "SELECT @@wait_timeout").as_deref(),
        Some("1")
    );
    assert_eq!(
        scalar(&mut i, "SELECT @@interactive_timeout").as_deref(),
        Some("1")
    );
    assert_eq!(
        scalar(&mut plain, "SELECT @@wait_timeout").as_deref(),
        Some("28800")
    );
    let took = closed_within(&mut i, 5 * SEC);
    assert!(took < 3 * SEC, "{took:?}");
    assert_eq!(
        plain.command(0x0e, b"").unwrap()[0],
        0,
        "the other one stays"
    );
}

#[test]
fn net_read_timeout_ends_a_stalled_packet_with_error_1159() {
    let r = start_with(
        config(),
        InstanceOptions {
            net_read_timeout: SEC,
            ..InstanceOptions::default()
        },
    );
    let mut c = root(&r);
    assert_eq!(
        scalar(&mut c, "SELECT @@net_read_timeout").as_deref(),
        Some("1")
    );
    // A COM_QUERY of 20 bytes of which 5 arrive.
    c.s.write_all(&[20, 0, 0, 0, 0x03, b'S', b'E', b'L', b'E'])
        .unwrap();
    c.seq = 1;
    let t = Instant::now();
    let e = c.recv().expect("an error");
    assert_eq!(err_code(&e), Some(1159), "{}", String::from_utf8_lossy(&e));
    assert!(t.elapsed() < 3 * SEC);
    assert_eq!(c.recv(), None, "closed");
}

/// The connection ids in SHOW PROCESSLIST, with their command.
fn processes(c: &mut Client) -> Vec<(String, String)> {
    rows(c, "SHOW PROCESSLIST")
        .unwrap()
        .into_iter()
        .map(|r| (r[0].clone().unwrap(), r[4].clone().unwrap()))
        .collect()
}

#[test]
fn net_write_timeout_aborts_a_client_that_does_not_read() {
    let r = start_with(
        config(),
        InstanceOptions {
            net_write_timeout: SEC,
            ..InstanceOptions::default()
        },
    );
    let mut admin = root(&r);
    exec(&mut admin, "CREATE DATABASE d");
    exec(&mut admin, "CREATE TABLE d.t (i INT)");
    let values: Vec<String> = (0..48).map(|i| format!("({i})")).collect();
    exec(
        &mut admin,
        &format!("INSERT INTO d.t VALUES {}", values.join(",")),
    );
    let mut lazy = root(&r);
    let id = scalar(&mut lazy, "SELECT CONNECTION_ID()").unwrap();
    // 48 MiB of result, far more than the sockets buffer; the client never reads it.
    lazy.seq = 0;
    lazy.send(b"\x03SELECT REPEAT('x', 1048576) FROM d.t");
    let gone = eventually(10 * SEC, || {
        processes(&mut admin).iter().all(|(p, _)| *p != id)
    });
    assert!(
        gone,
        "connection {id} still there: {:?}",
        processes(&mut admin)
    );
}

/// Prepares `sql`; returns the statement id (reads the whole answer).
fn prepare(c: &mut Client, sql: &str) -> u32 {
    let ok = c.command(0x16, sql.as_bytes()).unwrap();
    assert_eq!(ok[0], 0, "{}", String::from_utf8_lossy(&ok));
    let id = u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]]);
    let columns = u16::from_le_bytes([ok[5], ok[6]]);
    let params = u16::from_le_bytes([ok[7], ok[8]]);
    for n in [params, columns] {
        if n > 0 {
            for _ in 0..n {
                c.recv().unwrap();
            }
            assert_eq!(c.recv().unwrap()[0], 0xfe);
        }
    }
    id
}

fn long_data(c: &mut Client, stmt: u32, param: u16, data: &[u8]) {
    c.seq = 0;
    let mut p = vec![0x18];
    p.extend_from_slice(&stmt.to_le_bytes());
    p.extend_from_slice(&param.to_le_bytes());
    p.extend_from_slice(data);
    c.send(&p);
}

/// Executes a statement whose `params` parameters all came as long data (typed BLOB);
/// returns the first packet of the answer.
fn execute_long(c: &mut Client, stmt: u32, params: usize) -> Vec<u8> {
    let mut p = stmt.to_le_bytes().to_vec();
    p.extend_from_slice(&[0, 1, 0, 0, 0]);
    p.extend(std::iter::repeat_n(0u8, params.div_ceil(8)));
    p.push(1);
    for _ in 0..params {
        p.extend_from_slice(&[0xfc, 0]);
    }
    c.command(0x17, &p).unwrap()
}

/// The rest of a one-row binary result after its column count: the row's first value.
fn binary_first_value(c: &mut Client, columns: usize) -> Vec<u8> {
    for _ in 0..columns {
        c.recv().unwrap();
    }
    assert_eq!(c.recv().unwrap()[0], 0xfe);
    let row = c.recv().unwrap();
    assert_eq!(row[0], 0);
    let bitmap = (columns + 7 + 2) / 8;
    let mut r = Reader::new(&row[1 + bitmap..], "row");
    let v = r.lenenc_bytes().unwrap().to_vec();
    assert_eq!(c.recv().unwrap()[0], 0xfe);
    v
}

#[test]
fn long_data_past_max_allowed_packet_fails_the_execute_as_in_mysql() {
    let r = start(4096);
    let mut c = root(&r);
    let one = prepare(&mut c, "SELECT ?");
    // Within the limit: used.
    long_data(&mut c, one, 0, &[b'a'; 3000]);
    let head = execute_long(&mut c, one, 1);
    assert_eq!(head, [1], "one column");
    assert_eq!(binary_first_value(&mut c, 1), [b'a'; 3000]);
    // Past it (3000 + 2000 > 4096): the EXECUTE that follows fails with MySQL's error, and
    // keeps failing (further long data ignored) until COM_STMT_RESET.
    long_data(&mut c, one, 0, &[b'b'; 3000]);
    long_data(&mut c, one, 0, &[b'c'; 2000]);
    for _ in 0..2 {
        let e = execute_long(&mut c, one, 1);
        assert_eq!(err_code(&e), Some(1105), "{}", String::from_utf8_lossy(&e));
        assert!(String::from_utf8_lossy(&e)
            .contains("mysql_send_long_data() is longer than 'max_allowed_packet' bytes"));
        long_data(&mut c, one, 0, b"ignored");
    }
    c.seq = 0;
    let mut reset = vec![0x1a];
    reset.extend_from_slice(&one.to_le_bytes());
    c.send(&reset);
    assert_eq!(c.recv().unwrap()[0], 0, "COM_STMT_RESET");
    long_data(&mut c, one, 0, b"fresh");
    assert_eq!(execute_long(&mut c, one, 1), [1]);
    assert_eq!(binary_first_value(&mut c, 1), b"fresh");

    // The statement's parameters together are bounded too.
    let two = prepare(&mut c, "SELECT ?, ?");
    long_data(&mut c, two, 0, &[b'a'; 3000]);
    long_data(&mut c, two, 1, &[b'b'; 3000]);
    assert_eq!(err_code(&execute_long(&mut c, two, 2)), Some(1105));
    // The connection is fine.
    assert_eq!(c.command(0x0e, b"").unwrap()[0], 0);
}

#[test]
fn a_statement_whose_client_went_away_is_killed() {
    let r = start(1 << 20);
    let mut admin = root(&r);
    exec(&mut admin, "CREATE DATABASE d");
    exec(&mut admin, "CREATE TABLE d.t (i INT)");
    let values: Vec<String> = (0..200).map(|i| format!("({i})")).collect();
    exec(
        &mut admin,
        &format!("INSERT INTO d.t VALUES {}", values.join(",")),
    );
    let mut gone = root(&r);
    let id = scalar(&mut gone, "SELECT CONNECTION_ID()").unwrap();
    // 200^4 = 1.6 billion rows: hours, unless killed.
    gone.seq = 0;
    gone.send(b"\x03SELECT COUNT(*) FROM d.t a, d.t b, d.t c, d.t e");
    let running = eventually(10 * SEC, || {
        processes(&mut admin)
            .iter()
            .any(|(p, cmd)| *p == id && cmd == "Query")
    });
    assert!(running, "{:?}", processes(&mut admin));
    std::thread::sleep(Duration::from_millis(300));
    drop(gone);
    let t = Instant::now();
    let ended = eventually(10 * SEC, || {
        processes(&mut admin).iter().all(|(p, _)| *p != id)
    });
    assert!(ended, "still running: {:?}", processes(&mut admin));
    assert!(t.elapsed() < 4 * SEC, "took {:?}", t.elapsed());
    // The others are untouched.
    assert_eq!(
        scalar(&mut admin, "SELECT COUNT(*) FROM d.t").as_deref(),
        Some("200")
    );
}
