//! Results larger than the server's output buffer (64 KiB), which go out while the statement
//! runs: they arrive whole and in order in both protocols; KILL in the middle ends them with
//! an error after the rows already sent; a client that leaves in the middle takes neither the
//! server nor its locks with it.

mod common;

use std::io::Read;
use std::time::Duration;

use common::*;
use zipdb_server::protocol::Reader;

const SEC: Duration = Duration::from_secs(1);

/// `d.t` with `rows` rows: `i` from 0, and `c` of `width` bytes that begin with `i`.
fn table(c: &mut Client, rows: usize, width: usize) {
    exec(c, "CREATE DATABASE d");
    exec(c, "CREATE TABLE d.t (i INT PRIMARY KEY, c TEXT)");
    for start in (0..rows).step_by(500) {
        let values: Vec<String> = (start..rows.min(start + 500))
            .map(|i| format!("({i}, CONCAT('{i:06}', REPEAT('x', {})))", width - 6))
            .collect();
        exec(c, &format!("INSERT INTO d.t VALUES {}", values.join(",")));
    }
}

/// Prepares `sql` (no parameters); returns the statement id (reads the whole answer).
fn prepare(c: &mut Client, sql: &str) -> u32 {
    let ok = c.command(0x16, sql.as_bytes()).unwrap();
    assert_eq!(ok[0], 0, "{}", String::from_utf8_lossy(&ok));
    let columns = u16::from_le_bytes([ok[5], ok[6]]);
    for _ in 0..columns {
        c.recv().unwrap();
    }
    assert_eq!(c.recv().unwrap()[0], 0xfe);
    u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]])
}

/// Executes statement `id` (two columns: INT, TEXT) and reads its binary rows.
fn execute_rows(c: &mut Client, id: u32) -> Vec<(i32, Vec<u8>)> {
    let mut p = id.to_le_bytes().to_vec();
    p.extend_from_slice(&[0, 1, 0, 0, 0]);
    let head = c.command(0x17, &p).unwrap();
    assert_eq!(head, [2], "two columns: {}", String::from_utf8_lossy(&head));
    c.recv().unwrap();
    c.recv().unwrap();
    assert_eq!(c.recv().unwrap()[0], 0xfe);
    let mut out = Vec::new();
    loop {
        let row = c.recv().expect("a row or EOF");
        if row[0] == 0xfe && row.len() < 9 {
            return out;
        }
        assert_eq!(row[0], 0, "a binary row: {}", String::from_utf8_lossy(&row));
        // Header, then a one-byte NULL bitmap (2 columns + 2 reserved bits): no NULLs here.
        assert_eq!(row[1], 0);
        let i = i32::from_le_bytes([row[2], row[3], row[4], row[5]]);
        let mut r = Reader::new(&row[6..], "row");
        out.push((i, r.lenenc_bytes().unwrap().to_vec()));
    }
}

fn expected(rows: usize, width: usize) -> Vec<(i32, Vec<u8>)> {
    (0..rows)
        .map(|i| {
            let mut c = format!("{i:06}").into_bytes();
            c.resize(width, b'x');
            (i as i32, c)
        })
        .collect()
}

#[test]
fn a_result_over_64_kib_arrives_whole_and_in_order_in_both_protocols() {
    let (rows, width) = (3000, 300);
    let r = start(1 << 20);
    let mut c = root(&r);
    table(&mut c, rows, width);
    let want = expected(rows, width);
    // Text protocol: about 900 KB, many times the buffer.
    let text = rows_of(&mut c, "SELECT i, c FROM d.t");
    let text: Vec<(i32, Vec<u8>)> = text
        .into_iter()
        .map(|r| {
            (
                r[0].as_deref().unwrap().parse().unwrap(),
                r[1].clone().unwrap().into_bytes(),
            )
        })
        .collect();
    assert_eq!(text.len(), rows);
    assert!(text == want, "text rows differ");
    // Binary protocol, twice (the statement is reused).
    let id = prepare(&mut c, "SELECT i, c FROM d.t");
    for _ in 0..2 {
        let got = execute_rows(&mut c, id);
        assert_eq!(got.len(), rows);
        assert!(got == want, "binary rows differ");
    }
    // Multi-statements: a large result, then another; the connection stays in step.
    let mut m = root_multi(&r);
    let first = query(&mut m, "SELECT c FROM d.t; SELECT COUNT(*) FROM d.t");
    assert_eq!(first, [1]);
    m.recv().unwrap();
    let mut n = 0;
    let eof = loop {
        let p = m.recv().unwrap();
        if p[0] == 0xfe && p.len() < 9 {
            if n > 0 {
                break p;
            }
            continue;
        }
        n += 1;
    };
    assert_eq!(n, rows);
    let status = u16::from_le_bytes([eof[3], eof[4]]);
    assert_ne!(status & 0x0008, 0, "more results follow");
    assert_eq!(m.recv().unwrap(), [1], "the second result");
    m.recv().unwrap();
    assert_eq!(m.recv().unwrap()[0], 0xfe);
    let count = m.recv().unwrap();
    assert_eq!(&count[1..], format!("{rows}").as_bytes());
    let last = m.recv().unwrap();
    assert_eq!(u16::from_le_bytes([last[3], last[4]]) & 0x0008, 0);
    assert_eq!(scalar(&mut c, "SELECT 1").as_deref(), Some("1"));
}

/// `rows`, for a result that must succeed.
fn rows_of(c: &mut Client, sql: &str) -> Vec<Vec<Option<String>>> {
    rows(c, sql).unwrap_or_else(|e| panic!("{sql}: error {e}"))
}

/// A root connection with CLIENT_MULTI_STATEMENTS.
fn root_multi(r: &zipdb_server::Running) -> Client {
    let (c, ok) = login_with_caps(
        r.addr(),
        "root",
        b"",
        None,
        zipdb_server::protocol::handshake::NATIVE_PASSWORD,
        zipdb_server::protocol::caps::MULTI_STATEMENTS,
    );
    assert_eq!(ok[0], 0);
    c
}

/// Sends `sql` and reads nothing: the server blocks once the socket buffers are full.
fn send_query(c: &mut Client, sql: &str) {
    c.seq = 0;
    let mut p = vec![0x03];
    p.extend_from_slice(sql.as_bytes());
    c.send(&p);
}

/// `d.s` with 2000 rows, `i` from 0: `SELECT i, REPEAT('x', 20000) FROM d.s` is 40 MB, far
/// more than the sockets on both ends buffer, so a client that does not read holds the
/// server in the middle of the result.
fn small_table(c: &mut Client) {
    exec(c, "CREATE DATABASE d");
    exec(c, "CREATE TABLE d.s (i INT PRIMARY KEY)");
    let values: Vec<String> = (0..2000).map(|i| format!("({i})")).collect();
    exec(c, &format!("INSERT INTO d.s VALUES {}", values.join(",")));
}

const LARGE: &str = "SELECT i, REPEAT('x', 20000) FROM d.s";

#[test]
fn kill_in_the_middle_of_a_large_result_ends_it_with_an_error_after_its_rows() {
    let r = start(1 << 20);
    let mut admin = root(&r);
    small_table(&mut admin);
    let mut c = root(&r);
    let id = scalar(&mut c, "SELECT CONNECTION_ID()").unwrap();
    send_query(&mut c, LARGE);
    // The first bytes arrive once the rows are being sent (the first 64 KiB).
    c.s.peek(&mut [0]).unwrap();
    exec(&mut admin, &format!("KILL QUERY {id}"));
    assert_eq!(c.recv().unwrap(), [2]);
    c.recv().unwrap();
    c.recv().unwrap();
    assert_eq!(c.recv().unwrap()[0], 0xfe);
    let mut got = 0;
    let end = loop {
        let p = c.recv().expect("a row, or the end");
        if p[0] == 0xff || (p[0] == 0xfe && p.len() < 9) {
            break p;
        }
        let i = Reader::new(&p, "row").lenenc_bytes().unwrap().to_vec();
        assert_eq!(i, got.to_string().into_bytes(), "rows in order");
        got += 1;
    };
    assert_eq!(
        err_code(&end),
        Some(1317),
        "{}",
        String::from_utf8_lossy(&end)
    );
    // KILL is seen within 256 rows of the moment it came.
    assert!(got > 0 && got < 2000, "{got} rows before the error");
    // The connection goes on.
    assert_eq!(scalar(&mut c, "SELECT 1").as_deref(), Some("1"));
}

#[test]
fn a_client_that_leaves_in_the_middle_of_a_result_leaves_nothing_behind() {
    let r = start(1 << 20);
    let mut admin = root(&r);
    small_table(&mut admin);
    exec(&mut admin, "CREATE TABLE d.u (k INT PRIMARY KEY)");
    let mut c = root(&r);
    let id = scalar(&mut c, "SELECT CONNECTION_ID()").unwrap();
    // Inside a transaction that holds a row lock.
    exec(&mut c, "BEGIN");
    exec(&mut c, "INSERT INTO d.u VALUES (1)");
    send_query(&mut c, LARGE);
    let mut some = [0u8; 200_000];
    c.s.read_exact(&mut some).unwrap();
    drop(c);
    let gone = eventually(10 * SEC, || {
        rows_of(&mut admin, "SHOW PROCESSLIST")
            .iter()
            .all(|p| p[0].as_deref() != Some(&id))
    });
    assert!(gone, "connection {id} is gone");
    // Its transaction was rolled back: the row is not there, and its key is free at once.
    assert_eq!(
        scalar(&mut admin, "SELECT COUNT(*) FROM d.u").as_deref(),
        Some("0")
    );
    exec(&mut admin, "SET SESSION innodb_lock_wait_timeout = 1");
    exec(&mut admin, "INSERT INTO d.u VALUES (1)");
    // The server serves new clients.
    let mut again = root(&r);
    assert_eq!(
        scalar(&mut again, "SELECT COUNT(*) FROM d.s").as_deref(),
        Some("2000")
    );
}

#[test]
fn each_result_of_a_multi_statement_command_ends_with_its_own_warning_count() {
    let r = start(1 << 20);
    let mut m = root_multi(&r);
    let mut packets = vec![query(&mut m, "SELECT 1; SELECT 2/0; SELECT 3")];
    // Three one-column, one-row results: count, definition, EOF, row, EOF each.
    while packets.len() < 15 {
        packets.push(m.recv().expect("the rest of the three results"));
    }
    let final_eofs: Vec<(u16, u16)> = [4, 9, 14]
        .iter()
        .map(|&i| {
            let p = &packets[i];
            assert_eq!(p[0], 0xfe, "packet {i} is an EOF");
            (
                u16::from_le_bytes([p[1], p[2]]),
                u16::from_le_bytes([p[3], p[4]]) & 0x0008,
            )
        })
        .collect();
    // As MariaDB sends them: the division by zero's warning is the second result's only,
    // and more results follow the first two.
    assert_eq!(final_eofs, [(0, 8), (1, 8), (0, 0)]);
}
