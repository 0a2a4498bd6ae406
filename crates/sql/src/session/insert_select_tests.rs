//! INSERT … SELECT through the operators (E5). Each statement of the corpus runs two ways
//! over the same starting tables: autocommit, where the rows are stored as the SELECT yields
//! them (read through a second read-committed transaction); and inside BEGIN … COMMIT, where
//! they are read whole through the tree first. The outcome (counts, info, error), SHOW
//! WARNINGS and the target's rows must agree; they also agreed with the buffered path while it
//! existed, and tests/diff's `for-update-and-insert-select-self.sql` and `insert-select.sql`
//! hold them to MariaDB's. Then:
//! a streamed INSERT … SELECT holds no selected rows, so it fits a budget that reading them
//! whole does not.

use crate::instance::session::Session;

const SETUP: &[&str] = &[
    "CREATE DATABASE d",
    "USE d",
    "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(40))",
    "CREATE TABLE s (id INT PRIMARY KEY, x INT)",
    "INSERT INTO s VALUES (1, 5), (2, NULL), (3, 7), (4, 5)",
];

/// The target, made anew before each run (so AUTO_INCREMENT starts over too).
const TARGET: &[&str] = &[
    "DROP TABLE IF EXISTS w",
    "CREATE TABLE w (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(6), n TINYINT, \
     UNIQUE KEY uv (v))",
    "INSERT INTO w VALUES (3, 'x3', 1), (10, 'dup', 2)",
];

const CORPUS: &[&str] = &[
    "INSERT INTO w (v, n) SELECT c, k FROM t WHERE id < 20",
    "INSERT INTO w SELECT id + 100, c, k FROM t WHERE id BETWEEN 5 AND 9 ORDER BY id DESC",
    "INSERT INTO w (id, v) SELECT NULL, CONCAT('a', id) FROM t WHERE id < 5",
    "INSERT INTO w (id, v) SELECT 0, CONCAT('b', id) FROM t WHERE id < 5",
    // Duplicates: an error part way (undone), IGNORE, REPLACE, ON DUPLICATE KEY UPDATE.
    "INSERT INTO w (id, v) SELECT id, 'u' FROM t WHERE id < 5",
    "INSERT INTO w (id, v) SELECT id + 1, 'dup' FROM t WHERE id < 5",
    "INSERT IGNORE INTO w (id, v) SELECT id, 'dup' FROM t WHERE id < 6",
    "REPLACE INTO w (id, v, n) SELECT id, CONCAT('r', id % 3), 9 FROM t WHERE id < 8",
    "INSERT INTO w (id, v) SELECT id, 'x' FROM t WHERE id < 12 \
     ON DUPLICATE KEY UPDATE n = n + 1, v = CONCAT(w.v, '+')",
    // Coercions: out of range, too long (strict: error; IGNORE: warnings).
    "INSERT INTO w (v, n) SELECT c, k * 10 FROM t WHERE id < 40",
    "INSERT IGNORE INTO w (v, n) SELECT CONCAT(c, 'xxxxx'), k * 10 FROM t WHERE id < 30",
    // The SELECT warns or fails part way.
    "INSERT IGNORE INTO w (v, n) SELECT id, c + 0 FROM t WHERE id < 20",
    "INSERT INTO w (v, n) SELECT id, c + 0 FROM t WHERE id < 20",
    "INSERT INTO w (v) SELECT id FROM t WHERE c REGEXP '('",
    "INSERT IGNORE INTO w (v, n) SELECT CONCAT(c, 'xxxxx'), c + 0 FROM t WHERE id IN (17, 18, 67)",
    "INSERT INTO w (v, n) SELECT id, EXP(IF(id > 50, 1000, 1)) FROM t WHERE id < 60",
    // Joins, grouping, set operations, subqueries, derived tables as the source.
    "INSERT INTO w (v, n) SELECT t.id, s.x FROM t JOIN s ON s.id = t.k WHERE t.id < 30",
    "INSERT INTO w (v, n) SELECT k, COUNT(*) FROM t GROUP BY k HAVING COUNT(*) > 20",
    "INSERT INTO w (v) SELECT x FROM s UNION SELECT k FROM t WHERE id < 10",
    "INSERT INTO w (v, n) SELECT id, (SELECT MAX(x) FROM s WHERE s.x < t.k) FROM t \
     WHERE id IN (SELECT id FROM s)",
    "INSERT INTO w (v) SELECT * FROM (SELECT DISTINCT k FROM t WHERE id < 100) d",
    // The SELECT reads the target: every row is read before the first is written.
    "INSERT INTO w (v, n) SELECT CONCAT(v, '2'), n FROM w",
    "INSERT INTO w (v) SELECT CONCAT('z', COUNT(*)) FROM w",
    "INSERT INTO w (v) SELECT id FROM t WHERE id IN (SELECT id FROM w)",
    // A locking SELECT.
    "INSERT INTO w (v, n) SELECT id, k FROM t WHERE id < 4 FOR UPDATE",
];

fn with_session(tag: &str, f: impl FnOnce(&mut Session)) {
    let dir = std::env::temp_dir().join(format!("zipdb-insel-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let (_db, inst) = crate::Instance::open_for_tests(&dir);
        let mut s = inst.session("root", 1);
        for sql in SETUP {
            assert!(s.query(sql).pop().expect("a result").is_ok(), "{sql}");
        }
        let values: Vec<String> = (0..300)
            .map(|i| match i % 50 {
                17 => format!("({i}, {}, '{i}x')", i % 13),
                _ => format!("({i}, {}, 'c{}')", i % 13, i % 7),
            })
            .collect();
        let insert = format!("INSERT INTO t VALUES {}", values.join(","));
        assert!(s.query(&insert).pop().expect("a result").is_ok());
        f(&mut s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// How `sql` ran: its outcome, the warnings after it and the target's rows after it.
fn run(s: &mut Session, sql: &str, how: &str) -> String {
    for t in TARGET {
        assert!(s.query(t).pop().expect("a result").is_ok(), "{t}");
    }
    let r = match how {
        "explicit" => {
            assert!(s.query("BEGIN").pop().expect("a result").is_ok());
            let r = s.query(sql);
            let w = s.query("SHOW WARNINGS");
            assert!(s.query("COMMIT").pop().expect("a result").is_ok());
            format!("{r:?}\n{w:?}")
        }
        _ => {
            let r = s.query(sql);
            let w = s.query("SHOW WARNINGS");
            format!("{r:?}\n{w:?}")
        }
    };
    let rows = s.query("SELECT * FROM w ORDER BY id");
    format!("{r}\n{rows:?}")
}

#[test]
fn insert_select_streamed_and_read_whole_agree() {
    with_session("corpus", |s| {
        let (mut failed, mut warned) = (0, 0);
        for sql in CORPUS {
            let streamed = run(s, sql, "autocommit");
            assert_eq!(streamed, run(s, sql, "explicit"), "explicit: {sql}");
            failed += usize::from(streamed.starts_with("[Err("));
            warned += usize::from(
                streamed.contains("level: \"Warning\"") || streamed.contains("Warning"),
            );
        }
        // The corpus exercises failures and warnings, not only rows.
        assert!(failed >= 5, "{failed}");
        assert!(warned >= 4, "{warned}");
    });
}

#[test]
fn a_streamed_insert_select_holds_no_selected_rows() {
    with_session("budget", |s| {
        for t in TARGET {
            assert!(s.query(t).pop().expect("a result").is_ok(), "{t}");
        }
        assert!(s
            .query("SET max_session_mem_used = 100000")
            .pop()
            .unwrap()
            .is_ok());
        // 300 wide selected rows (about 600 KB of text) that all collide
        // with one row: what is written stays tiny.
        let sql = "INSERT IGNORE INTO w (id, v) SELECT 3, REPEAT(c, 1000) FROM t";
        let code = |r: Vec<Result<crate::Outcome, crate::SqlError>>| {
            r.into_iter()
                .next()
                .expect("a result")
                .err()
                .map(|e| e.code())
        };
        assert_eq!(code(s.query(sql)), None, "streamed");
        // Read whole (E7): past the budget the rows go to a temporary file, not 1290; without
        // room there, the temporary-space cap's error.
        assert!(s.query("BEGIN").pop().unwrap().is_ok());
        assert_eq!(code(s.query(sql)), None, "read whole, spilled");
        assert!(s.query("ROLLBACK").pop().unwrap().is_ok());
        // A SELECT over the target is read whole even under autocommit.
        let sql =
            "INSERT IGNORE INTO w (id, v) SELECT 3, REPEAT(c, 1000) FROM t JOIN w ON w.id = 3";
        assert_eq!(code(s.query(sql)), None, "reads its target, spilled");
        assert!(s
            .query("SET max_tmp_session_space_usage = 65536")
            .pop()
            .unwrap()
            .is_ok());
        assert_eq!(
            code(s.query(sql)),
            Some(4198),
            "past the temporary-space cap"
        );
    });
}
