//! INSERT's batch path (exec/insert_batch.rs) against the per-row path: the same statements on two instances, one with
//! the batch path turned off, give the same results, warnings, errors and rows; and its rows
//! lock another session's inserts as the per-row path does.

use std::time::Duration;

use crate::exec::insert_batch::{BATCHED, ROW_PATH_ONLY};
use crate::{Outcome, Session};

fn open(dir: &std::path::Path, wait: Duration) -> std::sync::Arc<crate::Instance> {
    let _ = std::fs::remove_dir_all(dir);
    let db = zipdb_engine::Database::open(
        dir,
        zipdb_engine::Options {
            pool_bytes: 8 << 20,
            wal_bytes: 8 << 20,
            recovery_progress: false,
            lock_wait_timeout: wait,
            ..Default::default()
        },
    )
    .expect("open the test database");
    crate::Instance::open(db, Default::default()).expect("catalog")
}

fn dir(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("zipdb-batch-{tag}-{}", std::process::id()))
}

/// Everything a client sees of a statement: its result (rows, counts, info, last insert id)
/// or its error, and the warnings.
fn seen(s: &mut Session, sql: &str, row_path: bool) -> String {
    ROW_PATH_ONLY.with(|c| c.set(row_path));
    let r = s.query(sql).pop().expect("one result");
    ROW_PATH_ONLY.with(|c| c.set(false));
    let r = match r {
        Ok(Outcome::Rows { rows, .. }) => format!("rows {rows:?}"),
        Ok(Outcome::Done {
            affected_rows,
            last_insert_id,
            info,
        }) => format!("done {affected_rows} {last_insert_id} {info:?}"),
        Err(e) => format!("error {} {}", e.code(), e.message()),
    };
    let w: Vec<String> = s
        .warnings
        .iter()
        .map(|w| format!("{} {} {}", w.level, w.code, w.message))
        .collect();
    format!("{r} warnings {w:?}")
}

/// A small deterministic generator (xorshift64*), so that a failing case can be replayed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const SCHEMAS: [&str; 3] = [
    "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, k TINYINT NOT NULL DEFAULT 0, \
     c CHAR(6), d DECIMAL(5,1) DEFAULT 1.5, KEY kk (k))",
    "CREATE TABLE t (a INT NOT NULL, b VARCHAR(4) NOT NULL, v INT, PRIMARY KEY (a, b), \
     KEY vv (v, b))",
    "CREATE TABLE t (x INT, y VARCHAR(4) DEFAULT 'y')",
];

/// One VALUES row for schema `schema` over `cols` columns.
fn value_row(g: &mut Gen, schema: usize, cols: &[&str]) -> String {
    let vals: Vec<String> = cols
        .iter()
        .map(|&c| match (schema, c) {
            (0, "id") => match g.below(10) {
                0 => "NULL".into(),
                1 => "0".into(),
                2 => "DEFAULT".into(),
                _ => (1 + g.below(40)).to_string(),
            },
            (0, "k") => g
                .pick(&["1", "2", "-5", "127", "300", "NULL", "DEFAULT", "'7'"])
                .into(),
            (0, "c") => g
                .pick(&["'ab'", "''", "NULL", "'toolong!'", "'x y'"])
                .into(),
            (0, "d") => g.pick(&["1.25", "2", "'3.5'", "DEFAULT", "9999.9"]).into(),
            (1, "a") => g.below(12).to_string(),
            (1, "b") => g.pick(&["'p'", "'q'", "'r'", "'toolong'"]).into(),
            (1, "v") => g.pick(&["1", "NULL", "-3", "DEFAULT"]).into(),
            (2, "x") => g.pick(&["1", "2", "NULL", "'q'"]).into(),
            (2, "y") => g.pick(&["'a'", "DEFAULT", "'longer'"]).into(),
            _ => unreachable!("{schema} {c}"),
        })
        .collect();
    format!("({})", vals.join(", "))
}

fn statement(g: &mut Gen, schema: usize) -> String {
    let cols: &[&[&str]] = match schema {
        0 => &[
            &["id", "k", "c", "d"],
            &["k", "c"],
            &["id", "c"],
            &["c", "id", "k"],
        ],
        1 => &[&["a", "b", "v"], &["b", "a"]],
        _ => &[&["x", "y"], &["y"]],
    };
    match g.below(20) {
        0 => "BEGIN".into(),
        1 => "COMMIT".into(),
        2 => "ROLLBACK".into(),
        3 => match schema {
            0 => format!("DELETE FROM t WHERE id = {}", 1 + g.below(40)),
            1 => format!("DELETE FROM t WHERE a = {}", g.below(12)),
            _ => "DELETE FROM t WHERE x = 2".into(),
        },
        4 => "SELECT LAST_INSERT_ID()".into(),
        _ => {
            let cols = cols[g.below(cols.len() as u64) as usize];
            let n = match g.below(4) {
                0 => 1,
                1 => 2 + g.below(3),
                _ => 2 + g.below(12),
            };
            let rows: Vec<String> = (0..n).map(|_| value_row(g, schema, cols)).collect();
            format!(
                "INSERT INTO t ({}) VALUES {}",
                cols.join(", "),
                rows.join(", ")
            )
        }
    }
}

/// Seeded random statements (duplicates inside a statement, against committed rows and against
/// the open transaction's own rows, rows it deleted, NULLs, DEFAULTs, AUTO_INCREMENT, values
/// that fail or warn, chunks of 4 rows): after each, the result and the table agree between
/// the batch path and the per-row path.
#[test]
fn the_batch_path_matches_the_row_path() {
    let (da, db) = (dir("a"), dir("b"));
    let (ia, ib) = (
        open(&da, Duration::from_secs(1)),
        open(&db, Duration::from_secs(1)),
    );
    let (mut a, mut b) = (ia.session("root", 1), ib.session("root", 1));
    for s in [&mut a, &mut b] {
        for sql in ["CREATE DATABASE d", "USE d"] {
            assert!(s.query(sql).pop().unwrap().is_ok());
        }
    }
    let batched_before = BATCHED.with(|c| c.get());
    let mut g = Gen(0x5eed_f2f2);
    let mut statements = 0;
    for round in 0..90 {
        let schema = round % SCHEMAS.len();
        for sql in ["ROLLBACK", "DROP TABLE IF EXISTS t", SCHEMAS[schema]] {
            assert_eq!(seen(&mut a, sql, false), seen(&mut b, sql, true), "{sql}");
        }
        for _ in 0..30 {
            let sql = statement(&mut g, schema);
            let (x, y) = (seen(&mut a, &sql, false), seen(&mut b, &sql, true));
            assert_eq!(x, y, "round {round}: {sql}");
            let all = "SELECT * FROM t ORDER BY 1, 2";
            let (x, y) = (seen(&mut a, all, false), seen(&mut b, all, true));
            assert_eq!(x, y, "round {round}: after {sql}");
            statements += 1;
        }
    }
    // The comparison means something only if the batch path ran, and often.
    let batched = BATCHED.with(|c| c.get()) - batched_before;
    assert!(
        batched > 1000,
        "{batched} rows batched in {statements} statements"
    );
    drop((a, b, ia, ib));
    let _ = std::fs::remove_dir_all(&da);
    let _ = std::fs::remove_dir_all(&db);
}

fn ok(s: &mut Session, sql: &str) {
    if let Err(e) = s.query(sql).pop().expect("a result") {
        panic!("{sql}: {e:?}");
    }
}

fn code(s: &mut Session, sql: &str) -> u16 {
    match s.query(sql).pop().expect("a result") {
        Ok(o) => panic!("{sql}: {o:?}"),
        Err(e) => e.code(),
    }
}

/// Rows a batch inserted are locked until its transaction ends: another session's batch that
/// meets one waits (and times out, 1205), and once the first commits it finds the duplicate
/// (1062), naming the first colliding row in statement order; after a rollback it inserts.
#[test]
fn batched_rows_lock_other_sessions_inserts() {
    let d = dir("locks");
    let inst = open(&d, Duration::from_secs(2));
    let mut a = inst.session("root", 1);
    for sql in [
        "CREATE DATABASE d",
        "USE d",
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, KEY (k))",
        "BEGIN",
        "INSERT INTO t VALUES (5, 1), (3, 1), (9, 1)",
    ] {
        ok(&mut a, sql);
    }
    let mut b = inst.session("root", 2);
    ok(&mut b, "USE d");
    assert_eq!(
        code(&mut b, "INSERT INTO t VALUES (1, 2), (9, 2), (2, 2)"),
        1205
    );
    // Waits for `a`, which commits meanwhile: then 9 and 3 are duplicates, and the error
    // names 9, first in the statement (3 is first in key order).
    let runner = {
        let inst = inst.clone();
        std::thread::spawn(move || {
            let mut b = inst.session("root", 3);
            ok(&mut b, "USE d");
            let r = b.query("INSERT INTO t VALUES (1, 2), (9, 2), (3, 2)").pop();
            match r.expect("a result") {
                Ok(o) => panic!("{o:?}"),
                Err(e) => (e.code(), e.message().to_string()),
            }
        })
    };
    let t0 = std::time::Instant::now();
    while inst.db.stats().locks.current_waiters == 0 {
        assert!(!runner.is_finished(), "the second batch did not wait");
        assert!(t0.elapsed() < Duration::from_secs(1), "no lock wait began");
        std::thread::sleep(Duration::from_millis(1));
    }
    ok(&mut a, "COMMIT");
    let (c, m) = runner.join().expect("runner");
    assert_eq!(
        (c, m.as_str()),
        (1062, "Duplicate entry '9' for key 'PRIMARY'")
    );
    // The failed statement left nothing; a rolled-back batch frees its keys.
    ok(&mut a, "BEGIN");
    ok(&mut a, "INSERT INTO t VALUES (20, 1), (21, 1)");
    assert_eq!(code(&mut b, "INSERT INTO t VALUES (19, 2), (21, 2)"), 1205);
    ok(&mut a, "ROLLBACK");
    ok(&mut b, "INSERT INTO t VALUES (19, 2), (21, 2)");
    match a.query("SELECT id, k FROM t ORDER BY id").pop().unwrap() {
        Ok(Outcome::Rows { rows, .. }) => {
            let got: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "{}:{}",
                        r[0].to_string_lossy().unwrap(),
                        r[1].to_string_lossy().unwrap()
                    )
                })
                .collect();
            assert_eq!(got, ["3:1", "5:1", "9:1", "19:2", "21:2"]);
        }
        o => panic!("{o:?}"),
    }
    drop((a, b, inst));
    let _ = std::fs::remove_dir_all(&d);
}
