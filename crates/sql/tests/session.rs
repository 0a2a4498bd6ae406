//! The SQL layer driven through `Session`, without the wire protocol: query results, error
//! codes, transactions and `information_schema`, on a real database in a temporary folder.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use zipdb_engine::{Database, FlushPolicy, Options};
use zipdb_sql::{Instance, InstanceOptions, Outcome, Session, Value};

struct Fixture {
    inst: Arc<Instance>,
    dir: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture() -> Fixture {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "zipdb-sql-session-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Options {
        pool_bytes: 16 << 20,
        wal_bytes: 8 << 20,
        flush_policy: FlushPolicy::None,
        recovery_progress: false,
        ..Options::default()
    };
    let db = Database::open(&dir, opts).expect("open database");
    let inst = Instance::open(db, InstanceOptions::default()).expect("open instance");
    Fixture { inst, dir }
}

fn session(f: &Fixture, id: u64) -> Session {
    let mut s = f.inst.session("root", id);
    ok(&mut s, "CREATE DATABASE IF NOT EXISTS d");
    s.use_db("d").expect("use d");
    s
}

fn text(v: &Value) -> String {
    v.to_string_lossy().unwrap_or_else(|| "NULL".into())
}

/// Runs one statement that must succeed; its rows as text (empty for a statement without).
fn q(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    match r.remove(0) {
        Ok(Outcome::Rows { rows, .. }) => rows
            .iter()
            .map(|row| row.iter().map(text).collect())
            .collect(),
        Ok(Outcome::Done { .. }) => Vec::new(),
        Err(e) => panic!("{sql}: error {} {}", e.code, e.message),
    }
}

fn ok(s: &mut Session, sql: &str) -> u64 {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    match r.remove(0) {
        Ok(Outcome::Done { affected_rows, .. }) => affected_rows,
        Ok(Outcome::Rows { .. }) => panic!("{sql}: rows, expected none"),
        Err(e) => panic!("{sql}: error {} {}", e.code, e.message),
    }
}

fn err(s: &mut Session, sql: &str) -> u16 {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    match r.remove(0) {
        Ok(_) => panic!("{sql}: succeeded, expected an error"),
        Err(e) => e.code,
    }
}

fn one(s: &mut Session, sql: &str) -> String {
    let r = q(s, sql);
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    assert_eq!(r[0].len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}

fn load(s: &mut Session) {
    ok(
        s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(20), KEY k_1 (k)) \
         ROW_FORMAT=COMPRESSED",
    );
    let values: Vec<String> = (1..=100)
        .map(|i| format!("({i}, {}, 'row{i}')", i % 10))
        .collect();
    assert_eq!(
        ok(s, &format!("INSERT INTO t VALUES {}", values.join(","))),
        100
    );
}

#[test]
fn queries_use_every_access_path_and_agree_with_a_scan() {
    let f = fixture();
    let mut s = session(&f, 1);
    load(&mut s);
    assert_eq!(one(&mut s, "SELECT c FROM t WHERE id = 42"), "row42");
    assert_eq!(
        q(
            &mut s,
            "SELECT id FROM t WHERE id IN (3, 1, 200) ORDER BY id"
        ),
        [["1"], ["3"]]
    );
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM t WHERE id BETWEEN 10 AND 19"),
        "10"
    );
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE k = 3"), "10");
    assert_eq!(one(&mut s, "SELECT SUM(id) FROM t WHERE k > 7"), "1070");
    // The same sum by a scan (c is not indexed).
    assert_eq!(
        one(
            &mut s,
            "SELECT SUM(id) FROM t WHERE c LIKE 'row%' AND k > 7"
        ),
        "1070"
    );
    assert_eq!(
        q(&mut s, "SELECT id FROM t ORDER BY id DESC LIMIT 2 OFFSET 1"),
        [["99"], ["98"]]
    );
    assert_eq!(
        q(
            &mut s,
            "SELECT k, COUNT(*), MAX(id) FROM t GROUP BY k HAVING MAX(id) > 98 ORDER BY k"
        ),
        [["0", "10", "100"], ["9", "10", "99"]]
    );
    assert_eq!(one(&mut s, "SELECT COUNT(DISTINCT k) FROM t"), "10");
    assert_eq!(ok(&mut s, "UPDATE t SET k = k + 100 WHERE k = 0"), 10);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE k >= 100"), "10");
    assert_eq!(
        ok(&mut s, "DELETE FROM t WHERE id > 90 ORDER BY id LIMIT 5"),
        5
    );
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "95");
    assert_eq!(one(&mut s, "SELECT MAX(id) FROM t"), "100");
    assert_eq!(
        q(&mut s, "SELECT id FROM t WHERE id > 90 ORDER BY id"),
        [["96"], ["97"], ["98"], ["99"], ["100"]]
    );
    assert_eq!(
        ok(
            &mut s,
            "UPDATE t SET c = 'last' WHERE k < 100 ORDER BY id DESC LIMIT 3"
        ),
        3
    );
    assert_eq!(
        q(&mut s, "SELECT id FROM t WHERE c = 'last' ORDER BY id"),
        [["97"], ["98"], ["99"]]
    );
    assert_eq!(err(&mut s, "INSERT INTO t VALUES (1, 1, 'dup')"), 1062);
    assert_eq!(err(&mut s, "SELECT nope FROM t"), 1054);
    assert_eq!(err(&mut s, "SELECT * FROM missing"), 1146);
    assert_eq!(err(&mut s, "SELEKT 1"), 1064);
}

#[test]
fn a_failed_statement_undoes_only_itself_and_rollback_undoes_the_transaction() {
    let f = fixture();
    let mut s = session(&f, 1);
    load(&mut s);
    ok(&mut s, "BEGIN");
    assert_eq!(ok(&mut s, "UPDATE t SET c = 'x' WHERE id = 1"), 1);
    // A multi-row insert failing on its last row leaves none of its rows.
    assert_eq!(
        err(&mut s, "INSERT INTO t VALUES (500, 0, 'a'), (1, 0, 'b')"),
        1062
    );
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE id = 500"), "0");
    assert_eq!(one(&mut s, "SELECT c FROM t WHERE id = 1"), "x");
    ok(&mut s, "ROLLBACK");
    assert_eq!(one(&mut s, "SELECT c FROM t WHERE id = 1"), "row1");
}

/// As in MariaDB 10.11 by default: an UPDATE in a repeatable-read transaction acts on the
/// newest committed version of a row another session changed after the snapshot; with
/// `innodb_snapshot_isolation=ON` it fails with 1020 instead and the transaction is rolled
/// back.
#[test]
fn repeatable_read_updates_see_the_newest_version_unless_snapshot_isolation_is_on() {
    let f = fixture();
    let mut a = session(&f, 1);
    let mut b = session(&f, 2);
    load(&mut a);
    ok(&mut a, "BEGIN");
    assert_eq!(one(&mut a, "SELECT k FROM t WHERE id = 5"), "5");
    assert_eq!(ok(&mut b, "UPDATE t SET k = 50 WHERE id = 5"), 1);
    assert_eq!(
        one(&mut a, "SELECT k FROM t WHERE id = 5"),
        "5",
        "snapshot read"
    );
    assert_eq!(ok(&mut a, "UPDATE t SET k = k + 1 WHERE id = 5"), 1);
    assert_eq!(
        one(&mut a, "SELECT k FROM t WHERE id = 5"),
        "51",
        "own write"
    );
    // A row that no longer matches after the other commit is not updated.
    assert_eq!(ok(&mut b, "UPDATE t SET k = 70 WHERE id = 6"), 1);
    assert_eq!(
        ok(&mut a, "UPDATE t SET c = 'hit' WHERE id = 6 AND k = 6"),
        0
    );
    ok(&mut a, "COMMIT");
    assert_eq!(one(&mut b, "SELECT k FROM t WHERE id = 5"), "51");
    assert_eq!(one(&mut b, "SELECT c FROM t WHERE id = 6"), "row6");

    ok(&mut a, "SET innodb_snapshot_isolation = ON");
    assert_eq!(one(&mut a, "SELECT @@innodb_snapshot_isolation"), "1");
    ok(&mut a, "BEGIN");
    assert_eq!(one(&mut a, "SELECT k FROM t WHERE id = 7"), "7");
    assert_eq!(ok(&mut b, "UPDATE t SET k = 700 WHERE id = 7"), 1);
    assert_eq!(err(&mut a, "UPDATE t SET k = k + 1 WHERE id = 7"), 1020);
    // The whole transaction was rolled back: a new statement starts a new one.
    assert_eq!(one(&mut a, "SELECT k FROM t WHERE id = 7"), "700");
}

#[test]
fn information_schema_shows_counters_sizes_and_is_read_only() {
    let f = fixture();
    let mut s = session(&f, 1);
    load(&mut s);
    // Every SHOW STATUS counter is a GLOBAL_STATUS row.
    let show = q(&mut s, "SHOW STATUS");
    let count = one(
        &mut s,
        "SELECT COUNT(*) FROM information_schema.GLOBAL_STATUS",
    );
    assert_eq!(count, show.len().to_string());
    let pool = q(
        &mut s,
        "SELECT VARIABLE_NAME FROM information_schema.global_status \
         WHERE VARIABLE_NAME LIKE 'zipdb\\_pool\\_%' ORDER BY 1",
    );
    assert!(pool.len() >= 5, "pool counters: {pool:?}");
    assert!(
        pool.windows(2).all(|w| w[0] < w[1]),
        "sorted and distinct: {pool:?}"
    );
    let questions: u64 = one(
        &mut s,
        "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS \
         WHERE VARIABLE_NAME = 'QUESTIONS'",
    )
    .parse()
    .expect("a number");
    assert!(questions > 0);
    // TABLES: the table, with its compressed row format and sizes.
    let t = q(
        &mut s,
        "SELECT TABLE_SCHEMA, TABLE_NAME, ROW_FORMAT, LOGICAL_DATA_LENGTH > 0, \
         LOGICAL_INDEX_LENGTH > 0 FROM information_schema.TABLES WHERE TABLE_NAME = 't'",
    );
    assert_eq!(t, [["d", "t", "Compressed", "1", "1"]]);
    assert_eq!(
        q(
            &mut s,
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME"
        ),
        [["d"], ["information_schema"]]
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES \
             WHERE VARIABLE_NAME = 'AUTOCOMMIT'"
        ),
        "1"
    );
    assert_eq!(err(&mut s, "SELECT * FROM information_schema.nope"), 1146);
    assert_eq!(err(&mut s, "DELETE FROM information_schema.TABLES"), 1044);
    assert_eq!(
        err(
            &mut s,
            "INSERT INTO information_schema.SCHEMATA VALUES (1,2,3,4,5)"
        ),
        1044
    );
    assert_eq!(
        err(&mut s, "CREATE TABLE information_schema.x (a INT)"),
        1044
    );
    assert_eq!(err(&mut s, "DROP TABLE information_schema.TABLES"), 1044);
    s.use_db("information_schema")
        .expect("use information_schema");
    assert_eq!(q(&mut s, "SHOW TABLES").len(), 10);
}
