//! Locking reads through the operators (E5): which rows a `SELECT … FOR UPDATE` locks, seen
//! from a second session whose writes wait for them (a short lock wait, so a locked row is
//! error 1205 at once), and FOR UPDATE with subqueries, which the buffered path refused.

use std::time::Duration;

use crate::instance::session::Session;
use crate::types::result::Outcome;

fn with_two(tag: &str, f: impl FnOnce(&mut Session, &mut Session)) {
    let dir = std::env::temp_dir().join(format!("zipdb-lock-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let db = zipdb_engine::Database::open(
            &dir,
            zipdb_engine::Options {
                pool_bytes: 8 << 20,
                wal_bytes: 8 << 20,
                recovery_progress: false,
                lock_wait_timeout: Duration::from_millis(50),
                ..Default::default()
            },
        )
        .expect("open the test database");
        let inst = crate::Instance::open(db.clone(), Default::default()).expect("catalog");
        let mut a = inst.session("root", 1);
        let mut b = inst.session("root", 2);
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL)",
            "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60)",
            "CREATE TABLE s (id INT PRIMARY KEY)",
            "INSERT INTO s VALUES (2), (4), (6)",
        ] {
            ok(&mut a, sql);
        }
        ok(&mut b, "USE d");
        f(&mut a, &mut b);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn ok(s: &mut Session, sql: &str) -> Outcome {
    match s.query(sql).pop().expect("a result") {
        Ok(o) => o,
        Err(e) => panic!("{sql}: {e:?}"),
    }
}

fn ids(s: &mut Session, sql: &str) -> Vec<String> {
    match ok(s, sql) {
        Outcome::Rows { rows, .. } => rows
            .iter()
            .map(|r| r[0].to_string_lossy().unwrap_or_default())
            .collect(),
        o => panic!("{sql}: {o:?}"),
    }
}

/// Which of t's rows `b` cannot update while `a` holds its locks: 1205 for those.
fn locked(b: &mut Session) -> Vec<i64> {
    (1..=6)
        .filter(|id| {
            let sql = format!("UPDATE t SET k = k WHERE id = {id}");
            match b.query(&sql).pop().expect("a result") {
                Ok(_) => false,
                Err(e) if e.code() == 1205 => true,
                Err(e) => panic!("{sql}: {e:?}"),
            }
        })
        .collect()
}

#[test]
fn for_update_locks_the_rows_read_and_stops_at_limit() {
    with_two("limit", |a, b| {
        let cases: &[(&str, &[&str], &[i64])] = &[
            (
                "SELECT id FROM t WHERE id >= 3 FOR UPDATE",
                &["3", "4", "5", "6"],
                &[3, 4, 5, 6],
            ),
            // LIMIT stops the locking at its last row; the rows after it stay free.
            (
                "SELECT id FROM t WHERE k > 15 LIMIT 2 FOR UPDATE",
                &["2", "3"],
                &[1, 2, 3],
            ),
            (
                "SELECT id FROM t WHERE id > 1 LIMIT 1 OFFSET 1 FOR UPDATE",
                &["3"],
                &[2, 3],
            ),
            // A sort reads (and locks) every row first.
            (
                "SELECT id FROM t ORDER BY k DESC LIMIT 1 FOR UPDATE",
                &["6"],
                &[1, 2, 3, 4, 5, 6],
            ),
            // Subqueries (MariaDB runs these; the buffered path refused them): the outer
            // table's rows are locked, the subquery's are read without locks.
            (
                "SELECT id FROM t WHERE id IN (SELECT id FROM s) FOR UPDATE",
                &["2", "4", "6"],
                &[1, 2, 3, 4, 5, 6],
            ),
            (
                "SELECT id, (SELECT COUNT(*) FROM s WHERE s.id < t.id) FROM t WHERE id < 3 \
                 FOR UPDATE",
                &["1", "2"],
                &[1, 2],
            ),
            (
                "SELECT * FROM (SELECT id FROM t WHERE id = 5 FOR UPDATE) x",
                &["5"],
                &[5],
            ),
            ("SELECT id FROM t WHERE 1 = 0 FOR UPDATE", &[], &[]),
        ];
        for &(sql, rows, want) in cases {
            ok(a, "BEGIN");
            assert_eq!(ids(a, sql), rows, "{sql}");
            assert_eq!(locked(b), want, "{sql}");
            ok(a, "ROLLBACK");
            assert_eq!(locked(b), Vec::<i64>::new(), "{sql}: released");
        }
        // A locking read sees the newest committed row, not its snapshot's.
        ok(a, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
        ok(a, "BEGIN");
        assert_eq!(ids(a, "SELECT k FROM t WHERE id = 4"), ["40"]);
        ok(b, "UPDATE t SET k = 41 WHERE id = 4");
        assert_eq!(ids(a, "SELECT k FROM t WHERE id = 4"), ["40"]);
        assert_eq!(ids(a, "SELECT k FROM t WHERE id = 4 FOR UPDATE"), ["41"]);
        assert_eq!(locked(b), [4]);
        ok(a, "ROLLBACK");
    });
}
