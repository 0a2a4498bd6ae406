//! What client tools read from the server besides their own tables: `information_schema`
//! COLUMNS, STATISTICS and PROCESSLIST, SHOW PROCESSLIST and KILL, the statements mysqldump
//! sends and writes. Driven through `Session`, on a real database in a temporary folder.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use zipdb_sql::{Outcome, Session};

mod common;
use common::{fixture as open_fixture, q, Fixture};

fn fixture() -> Fixture {
    open_fixture("clients")
}

fn session(f: &Fixture, id: u64) -> Session {
    let mut s = f.inst.session("root", id);
    ok(&mut s, "CREATE DATABASE IF NOT EXISTS d");
    s.use_db("d").expect("use d");
    s
}

fn ok(s: &mut Session, sql: &str) {
    for r in s.query(sql) {
        if let Err(e) = r {
            panic!("{sql}: error {} {}", e.code(), e.message());
        }
    }
}

/// The error of a statement that must fail: (code, SQLSTATE, message).
fn err(s: &mut Session, sql: &str) -> (u16, String, String) {
    match s.query(sql).pop() {
        Some(Err(e)) => (e.code(), e.sqlstate().to_string(), e.into_message()),
        other => panic!("{sql}: expected an error, got {other:?}"),
    }
}

#[test]
fn information_schema_columns_describe_every_type_as_mariadb_does() {
    let f = fixture();
    let mut s = session(&f, 1);
    ok(
        &mut s,
        "CREATE TABLE t (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, a INT NOT NULL DEFAULT 7, \
         b VARCHAR(20) DEFAULT 'it''s', c DECIMAL(10,2), d DOUBLE, e TEXT, f BLOB, \
         g DATETIME(3), h TIMESTAMP DEFAULT CURRENT_TIMESTAMP, i CHAR(4) NOT NULL, \
         j VARBINARY(8), k DATE, PRIMARY KEY (id), UNIQUE KEY ub (b), KEY ac (a, c))",
    );
    let rows = q(
        &mut s,
        "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, DATA_TYPE, \
         CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, \
         DATETIME_PRECISION, CHARACTER_SET_NAME, COLUMN_TYPE, COLUMN_KEY, EXTRA \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't' \
         ORDER BY ORDINAL_POSITION",
    );
    let want: &[&[&str]] = &[
        &[
            "id",
            "1",
            "NULL",
            "NO",
            "bigint",
            "NULL",
            "NULL",
            "20",
            "0",
            "NULL",
            "NULL",
            "bigint(20) unsigned",
            "PRI",
            "auto_increment",
        ],
        &[
            "a", "2", "7", "NO", "int", "NULL", "NULL", "10", "0", "NULL", "NULL", "int(11)",
            "MUL", "",
        ],
        &[
            "b",
            "3",
            "'it''s'",
            "YES",
            "varchar",
            "20",
            "80",
            "NULL",
            "NULL",
            "NULL",
            "utf8mb4",
            "varchar(20)",
            "UNI",
            "",
        ],
        &[
            "c",
            "4",
            "NULL",
            "YES",
            "decimal",
            "NULL",
            "NULL",
            "10",
            "2",
            "NULL",
            "NULL",
            "decimal(10,2)",
            "",
            "",
        ],
        &[
            "d", "5", "NULL", "YES", "double", "NULL", "NULL", "22", "NULL", "NULL", "NULL",
            "double", "", "",
        ],
        &[
            "e", "6", "NULL", "YES", "text", "65535", "65535", "NULL", "NULL", "NULL", "utf8mb4",
            "text", "", "",
        ],
        &[
            "f", "7", "NULL", "YES", "blob", "65535", "65535", "NULL", "NULL", "NULL", "NULL",
            "blob", "", "",
        ],
        &[
            "g",
            "8",
            "NULL",
            "YES",
            "datetime",
            "NULL",
            "NULL",
            "NULL",
            "NULL",
            "3",
            "NULL",
            "datetime(3)",
            "",
            "",
        ],
        &[
            "h",
            "9",
            "current_timestamp()",
            "YES",
            "timestamp",
            "NULL",
            "NULL",
            "NULL",
            "NULL",
            "0",
            "NULL",
            "timestamp",
            "",
            "",
        ],
        &[
            "i", "10", "NULL", "NO", "char", "4", "16", "NULL", "NULL", "NULL", "utf8mb4",
            "char(4)", "", "",
        ],
        &[
            "j",
            "11",
            "NULL",
            "YES",
            "varbinary",
            "8",
            "8",
            "NULL",
            "NULL",
            "NULL",
            "NULL",
            "varbinary(8)",
            "",
            "",
        ],
        &[
            "k", "12", "NULL", "YES", "date", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL",
            "date", "", "",
        ],
    ];
    assert_eq!(rows.len(), want.len());
    for (got, want) in rows.iter().zip(want) {
        assert_eq!(got, want, "column {}", want[0]);
    }
    // The full MariaDB column list, in order (tools read some by position).
    let all = s.query("SELECT * FROM information_schema.COLUMNS WHERE TABLE_NAME = 't'");
    match &all[0] {
        Ok(Outcome::Rows { columns, rows }) => {
            assert_eq!(columns.len(), 22);
            assert_eq!(columns[3].name, "COLUMN_NAME");
            assert_eq!(columns[21].name, "GENERATION_EXPRESSION");
            assert_eq!(rows.len(), 12);
        }
        other => panic!("{other:?}"),
    }
    // Nothing for a table that does not exist; the information_schema tables themselves
    // are not listed.
    assert!(q(
        &mut s,
        "SELECT * FROM information_schema.COLUMNS WHERE TABLE_NAME = 'nope'"
    )
    .is_empty());
}

#[test]
fn information_schema_statistics_lists_every_index_column() {
    let f = fixture();
    let mut s = session(&f, 1);
    ok(
        &mut s,
        "CREATE TABLE t (id INT NOT NULL, a INT, b VARCHAR(5) NOT NULL, PRIMARY KEY (id), \
         UNIQUE KEY ub (b), KEY ab (a, b))",
    );
    // Names compare case-insensitively: `ab` < `PRIMARY` < `ub`.
    let rows = q(
        &mut s,
        "SELECT TABLE_NAME, NON_UNIQUE, INDEX_SCHEMA, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, \
         NULLABLE, INDEX_TYPE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'd' \
         ORDER BY INDEX_NAME, SEQ_IN_INDEX",
    );
    assert_eq!(
        rows,
        [
            ["t", "1", "d", "ab", "1", "a", "YES", "BTREE"],
            ["t", "1", "d", "ab", "2", "b", "", "BTREE"],
            ["t", "0", "d", "PRIMARY", "1", "id", "", "BTREE"],
            ["t", "0", "d", "ub", "1", "b", "", "BTREE"],
        ]
    );
    // SHOW INDEX says the same.
    let show = q(&mut s, "SHOW INDEX FROM t");
    assert_eq!(show.len(), 4);
    assert_eq!(show[0][2], "PRIMARY");
}

#[test]
fn information_schema_tables_lists_user_tables_with_their_engine() {
    let f = fixture();
    let mut s = session(&f, 1);
    ok(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY) COMPRESSION='lz4'",
    );
    ok(&mut s, "CREATE TABLE u (id INT PRIMARY KEY)");
    // What mysqldump asks of each table.
    assert_eq!(
        q(
            &mut s,
            "SELECT engine, table_type FROM INFORMATION_SCHEMA.TABLES \
             WHERE table_schema = DATABASE() AND table_name = 't'"
        ),
        [["zipdb", "BASE TABLE"]]
    );
    assert_eq!(
        q(
            &mut s,
            "SELECT TABLE_NAME, ROW_FORMAT FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = 'd' ORDER BY TABLE_NAME"
        ),
        [["t", "Compressed"], ["u", "Compressed"]]
    );
}

#[test]
fn processlist_shows_every_session_and_kill_marks_them() {
    let f = fixture();
    let mut a = session(&f, 11);
    let mut b = session(&f, 12);
    b.set_peer("127.0.0.1:4000");
    let rows = q(&mut a, "SHOW PROCESSLIST");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][0], "11");
    assert_eq!(rows[0][4], "Query");
    assert_eq!(rows[0][7], "SHOW PROCESSLIST");
    assert_eq!(
        rows[1],
        [
            "12",
            "root",
            "127.0.0.1:4000",
            "d",
            "Sleep",
            "0",
            "",
            "NULL"
        ]
    );
    assert_eq!(
        q(
            &mut a,
            "SELECT ID, COMMAND FROM information_schema.PROCESSLIST ORDER BY ID"
        ),
        [["11", "Query"], ["12", "Sleep"]]
    );
    assert_eq!(
        err(&mut a, "KILL 999"),
        (1094, "HY000".into(), "Unknown thread id: 999".into())
    );
    // KILL QUERY of an idle session changes nothing.
    ok(&mut a, "KILL QUERY 12");
    assert!(!b.query_killed() && !b.connection_killed());
    assert_eq!(q(&mut b, "SELECT 1"), [["1"]]);
    // KILL CONNECTION closes the other session's socket (here: calls its closer).
    let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let c2 = closed.clone();
    b.set_closer(Box::new(move || c2.store(true, Ordering::Release)));
    ok(&mut a, "KILL CONNECTION 12");
    assert!(b.connection_killed());
    assert!(closed.load(Ordering::Acquire));
    // A session that kills itself is told so.
    assert_eq!(err(&mut a, "KILL 11").0, 1927);
    assert!(a.connection_killed());
    drop(b);
    let c = session(&f, 13);
    drop(c);
    let mut d = session(&f, 14);
    assert_eq!(
        q(
            &mut d,
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST"
        ),
        [["2"]]
    );
}
