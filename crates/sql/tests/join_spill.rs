//! Issue 20 E7: a hash join whose build side is past `tmp_memory_table_size` or the statement's
//! budget joins through partitions in temporary files (Grace) and gives the in-memory join's
//! rows in the in-memory order, over seeded random tables: duplicate keys, NULL keys,
//! collation ties, keys that cannot be hashed, inner and LEFT joins, build filters.

use std::sync::Arc;

use zipdb_sql::{Instance, Outcome, Session, SqlError};

mod common;
use common::fixture;

fn session(inst: &Arc<Instance>) -> Session {
    let mut s = inst.session("root", 1);
    for sql in ["CREATE DATABASE IF NOT EXISTS d", "USE d"] {
        assert!(s.query(sql).pop().expect("a result").is_ok(), "{sql}");
    }
    s
}

fn ok(s: &mut Session, sql: &str) {
    let r = s.query(sql).pop().expect("a result");
    assert!(r.is_ok(), "{sql}: {r:?}");
}

/// Every row of `sql`, printed, in the order sent.
fn rows(s: &mut Session, sql: &str) -> Result<Vec<String>, SqlError> {
    match s.query(sql).pop().expect("a result")? {
        Outcome::Rows { rows, .. } => Ok(rows.iter().map(|r| format!("{r:?}")).collect()),
        other => panic!("{sql}: {other:?}"),
    }
}

/// The session's temporary files now.
fn spill_files(s: &mut Session) -> Vec<String> {
    let dir = match rows(s, "SELECT @@tmpdir").expect("tmpdir").pop() {
        Some(d) => d,
        None => return Vec::new(),
    };
    // `[Str("…")]` as printed.
    let dir = dir
        .trim_start_matches("[Str(\"")
        .trim_end_matches("\")]")
        .to_string();
    match std::fs::read_dir(&dir) {
        Ok(d) => d
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("zipdb-spill-"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A small deterministic generator (no dependency for a seed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

const TEXT: [&str; 9] = ["a", "A", "a ", "b", "B", "é", "E", "e", ""];

/// Tables `a` and `b` (no index on the join columns, so the joins hash): `k` an integer with
/// duplicates and NULLs, `s` text with collation ties and NULLs, `m` text that is mostly
/// numeric (against `k` it cannot always be hashed), `pad` to make rows wide.
fn fill(s: &mut Session, seed: u64, n_a: usize, n_b: usize, pad: usize) {
    let mut g = Lcg(seed);
    for (t, n) in [("a", n_a), ("b", n_b)] {
        ok(s, &format!("DROP TABLE IF EXISTS {t}"));
        ok(
            s,
            &format!(
                "CREATE TABLE {t} (id INT PRIMARY KEY, k INT, s VARCHAR(10), m VARCHAR(10), \
                 pad VARCHAR(300))"
            ),
        );
        let mut values = Vec::new();
        for i in 0..n {
            let k = match g.next(10) {
                0 => "NULL".to_string(),
                _ => g.next(40).to_string(),
            };
            let txt = match g.next(8) {
                0 => "NULL".to_string(),
                _ => format!("'{}'", TEXT[g.next(TEXT.len() as u64) as usize]),
            };
            let m = match g.next(12) {
                0 => "'x'".to_string(),
                1 => "NULL".to_string(),
                _ => format!("'{}'", g.next(40)),
            };
            values.push(format!("({i}, {k}, {txt}, {m}, '{}')", "p".repeat(pad)));
            if values.len() == 500 || i + 1 == n {
                ok(s, &format!("INSERT INTO {t} VALUES {}", values.join(",")));
                values.clear();
            }
        }
    }
}

const JOINS: [&str; 13] = [
    // The probe key is text against an integer build key: no probe value can be hashed, so
    // every probe tries every build row (the "home" copies across the partitions).
    "SELECT a.id, b.id FROM a JOIN b ON b.k = a.m",
    "SELECT a.id, b.id, b.k FROM a LEFT JOIN b ON b.k = a.m AND b.id % 4 = 0",
    "SELECT a.id, b.id, LENGTH(b.pad) FROM a LEFT JOIN b ON b.k = a.k AND b.s <> a.s",
    "SELECT a.id, b.id, a.k FROM a JOIN b ON b.k = a.k",
    "SELECT a.id, b.id, b.s FROM a JOIN b ON b.s = a.s",
    "SELECT a.id, b.id FROM a JOIN b ON b.s = a.s AND b.k = a.k",
    "SELECT a.id, b.id, b.s FROM a LEFT JOIN b ON b.s = a.s AND b.id % 3 = 0",
    "SELECT a.id, b.id FROM a LEFT JOIN b ON b.k = a.k WHERE b.id IS NULL",
    "SELECT a.id, b.id FROM a LEFT JOIN b ON b.k = a.k AND b.id > 50 WHERE b.id < 150 OR b.id IS NULL",
    "SELECT a.id, b.id FROM a JOIN b ON b.m = a.k WHERE b.id % 2 = 1",
    "SELECT a.id, b.id, c.id FROM a JOIN b ON b.k = a.k LEFT JOIN b c ON c.s = b.s AND c.id < 40",
    "SELECT a.id, b.id FROM a JOIN b ON b.k = a.k ORDER BY a.id LIMIT 37",
    "SELECT a.id, b.id FROM a LEFT JOIN b ON b.m = a.m LIMIT 60",
];

/// Each join spilled (every build past the table size, or past a small statement budget) gives
/// the in-memory rows in the in-memory order, and leaves no file.
#[test]
fn a_spilled_hash_join_gives_the_in_memory_rows_in_order() {
    let f = fixture("join-spill");
    let mut s = session(&f.inst);
    for seed in [1, 2, 3] {
        fill(&mut s, seed, 200, 300, 300);
        for sql in JOINS {
            ok(&mut s, "SET tmp_memory_table_size = DEFAULT");
            ok(&mut s, "SET max_session_mem_used = DEFAULT");
            let in_memory = rows(&mut s, sql).expect(sql);
            assert!(
                in_memory.len() > 10,
                "seed {seed}, {sql}: too few rows to compare"
            );
            for (table, mem) in [
                ("0", "DEFAULT"),
                ("1024", "DEFAULT"),
                ("16384", "DEFAULT"),
                ("1073741824", "200000"),
            ] {
                ok(&mut s, &format!("SET tmp_memory_table_size = {table}"));
                ok(&mut s, &format!("SET max_session_mem_used = {mem}"));
                let spilled = rows(&mut s, sql).expect(sql);
                assert!(
                    spilled == in_memory,
                    "seed {seed}, {sql} at {table}/{mem}: {} rows spilled, {} in memory",
                    spilled.len(),
                    in_memory.len()
                );
                assert_eq!(spill_files(&mut s), Vec::<String>::new());
            }
            ok(&mut s, "SET max_session_mem_used = DEFAULT");
            if !sql.contains("pad") {
                continue;
            }
            // It did spill: without room for the partitions (300 rows of 300 bytes) it stops
            // at the cap.
            ok(&mut s, "SET tmp_memory_table_size = 0");
            ok(&mut s, "SET max_tmp_session_space_usage = 65536");
            let e = rows(&mut s, sql).expect_err(sql);
            assert_eq!(e.code(), 4198, "{sql}: {e}");
            ok(&mut s, "SET max_tmp_session_space_usage = DEFAULT");
            assert_eq!(spill_files(&mut s), Vec::<String>::new());
        }
    }
}

/// Partitions that do not fit are split again (a second level), and the rows still come back
/// as in memory; a key alone past the budget ends in the budget's error at the depth bound.
#[test]
fn a_partition_past_the_budget_is_split_again_then_stops_at_the_depth_bound() {
    let f = fixture("join-spill-deep");
    let mut s = session(&f.inst);
    fill(&mut s, 7, 300, 6000, 250);
    // The second and third: every build key (text against an integer: the class is numeric)
    // or every probe key cannot be hashed, so the build rows are joined in chunks against
    // every probe, or every probe tries each partition's rows after the split.
    for sql in [
        "SELECT a.id, b.id, LENGTH(b.pad) FROM a JOIN b ON b.k = a.k ORDER BY a.id",
        "SELECT a.id, b.id, LENGTH(b.pad) FROM a LEFT JOIN b ON b.m = a.k AND b.id % 5 > 0",
        "SELECT a.id, b.id, LENGTH(b.pad) FROM a LEFT JOIN b ON b.k = a.m AND b.id % 5 > 0",
    ] {
        ok(&mut s, "SET tmp_memory_table_size = DEFAULT");
        ok(&mut s, "SET max_session_mem_used = DEFAULT");
        let in_memory = rows(&mut s, sql).expect(sql);
        assert!(in_memory.len() > 1000, "{sql}");
        ok(&mut s, "SET tmp_memory_table_size = 0");
        ok(&mut s, "SET max_session_mem_used = 600000");
        assert!(rows(&mut s, sql).expect(sql) == in_memory, "{sql}");
        assert_eq!(spill_files(&mut s), Vec::<String>::new());
    }
    // Every build row of one key: no split helps.
    ok(&mut s, "SET max_session_mem_used = DEFAULT");
    ok(&mut s, "UPDATE b SET k = 1");
    ok(&mut s, "SET max_session_mem_used = 600000");
    let e = rows(&mut s, "SELECT COUNT(*) FROM a JOIN b ON b.k = a.k").expect_err("1290");
    assert_eq!(e.code(), 1290, "{e}");
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    ok(&mut s, "SET max_session_mem_used = DEFAULT");
    assert_eq!(
        rows(&mut s, "SELECT COUNT(*) FROM b").expect("count"),
        ["[Int(6000)]"]
    );
}

/// A nested loop's inner table past its memory is materialized in a temporary file and read
/// again for each outer row; a derived table as a build side streams into the step's table
/// (held once); INSERT … SELECT from its own table holds the rows in a file before inserting.
/// Each gives the in-memory rows, in order, and leaves no file.
#[test]
fn a_spilled_loop_table_derived_build_and_insert_select_give_the_in_memory_rows() {
    let f = fixture("join-spill-loop");
    let mut s = session(&f.inst);
    fill(&mut s, 11, 150, 400, 300);
    let statements = [
        "SELECT a.id, b.id, LENGTH(b.pad) FROM a JOIN b ON b.k > a.k + 25 AND b.m <> a.s",
        "SELECT a.id, b.id, LENGTH(b.pad) FROM a LEFT JOIN b ON b.k > a.k + 30 AND b.s <> a.s \
         WHERE a.id < 100",
        "SELECT a.id, d.n, d.p FROM a JOIN (SELECT k, COUNT(*) AS n, MAX(pad) AS p FROM b \
         GROUP BY k) d ON d.k = a.k",
        "SELECT a.id, d.id FROM a LEFT JOIN (SELECT id, s, pad FROM b WHERE id % 3 <> 0) d \
         ON d.s = a.s ORDER BY a.id",
    ];
    for sql in statements {
        ok(&mut s, "SET tmp_memory_table_size = DEFAULT");
        let in_memory = rows(&mut s, sql).expect(sql);
        assert!(in_memory.len() > 50, "{sql}");
        for (table, mem) in [("0", "DEFAULT"), ("1073741824", "200000")] {
            ok(&mut s, &format!("SET tmp_memory_table_size = {table}"));
            ok(&mut s, &format!("SET max_session_mem_used = {mem}"));
            assert!(
                rows(&mut s, sql).expect(sql) == in_memory,
                "{sql} at {table}/{mem}"
            );
            assert_eq!(spill_files(&mut s), Vec::<String>::new());
        }
        ok(&mut s, "SET max_session_mem_used = DEFAULT");
        if sql.contains("GROUP BY") {
            // 41 groups: too few bytes to reach the cap below.
            continue;
        }
        // It did spill: without room for the file it stops at the cap.
        ok(&mut s, "SET tmp_memory_table_size = 0");
        ok(&mut s, "SET max_tmp_session_space_usage = 65536");
        assert_eq!(rows(&mut s, sql).expect_err(sql).code(), 4198, "{sql}");
        ok(&mut s, "SET max_tmp_session_space_usage = DEFAULT");
        assert_eq!(spill_files(&mut s), Vec::<String>::new());
    }
    // INSERT … SELECT from the table it writes: read whole first, through a file.
    let sum = "SELECT COUNT(*), SUM(id), SUM(LENGTH(pad)), COUNT(s) FROM b";
    let before = rows(&mut s, sum).expect(sum);
    ok(&mut s, "SET tmp_memory_table_size = 0");
    ok(&mut s, "SET max_tmp_session_space_usage = 65536");
    let e = s
        .query("INSERT INTO b SELECT id + 1000, k, s, m, pad FROM b")
        .pop()
        .unwrap();
    assert_eq!(e.expect_err("past the cap").code(), 4198);
    assert_eq!(rows(&mut s, sum).expect(sum), before, "nothing inserted");
    ok(&mut s, "SET max_tmp_session_space_usage = DEFAULT");
    ok(
        &mut s,
        "INSERT INTO b SELECT id + 1000, k, s, m, pad FROM b",
    );
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    let copy = "SELECT b.k, b.s, b.m, b.pad FROM b JOIN b c ON c.id = b.id + 1000 ORDER BY b.id";
    let orig = "SELECT k, s, m, pad FROM b WHERE id < 1000 ORDER BY id";
    assert!(rows(&mut s, copy).expect(copy) == rows(&mut s, orig).expect(orig));
    assert_eq!(
        rows(&mut s, "SELECT COUNT(*) FROM b").expect("n"),
        ["[Int(800)]"]
    );
}
