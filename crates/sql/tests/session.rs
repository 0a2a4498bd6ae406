//! The SQL layer driven through `Session`, without the wire protocol: query results, error
//! codes, transactions and `information_schema`, on a real database in a temporary folder.

use zipdb_sql::{Outcome, Session};

mod common;
use common::{fixture as open_fixture, q, Fixture};

fn fixture() -> Fixture {
    open_fixture("session")
}

fn session(f: &Fixture, id: u64) -> Session {
    let mut s = f.inst.session("root", id);
    ok(&mut s, "CREATE DATABASE IF NOT EXISTS d");
    s.use_db("d").expect("use d");
    s
}

fn ok(s: &mut Session, sql: &str) -> u64 {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    match r.remove(0) {
        Ok(Outcome::Done { affected_rows, .. }) => affected_rows,
        Ok(Outcome::Rows { .. }) => panic!("{sql}: rows, expected none"),
        Err(e) => panic!("{sql}: error {} {}", e.code(), e.message()),
    }
}

fn err(s: &mut Session, sql: &str) -> u16 {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    match r.remove(0) {
        Ok(_) => panic!("{sql}: succeeded, expected an error"),
        Err(e) => e.code(),
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
        // A boolean prints as ON/OFF here, as in MariaDB.
        "ON"
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
    assert_eq!(q(&mut s, "SHOW TABLES").len(), 13);
}

/// A small deterministic generator for the join model test (replayable from its seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// An `a`/`b` row of the join model: (id, int value or NULL, string or NULL).
type ModelRow = (i64, Option<i64>, Option<String>);

/// The default collation's equality, as the model applies it.
fn ci_eq(x: &str, y: &str) -> bool {
    x.trim_end_matches(' ').to_uppercase() == y.trim_end_matches(' ').to_uppercase()
}

#[test]
fn joins_by_index_lookup_hash_and_loop_agree_with_a_nested_loop_model() {
    let f = fixture();
    let mut s = session(&f, 1);
    let strs = ["p", "P", "p ", "q", "Q  ", "r", ""];
    for seed in 1..=6u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        ok(&mut s, "DROP TABLE IF EXISTS a, b");
        ok(
            &mut s,
            "CREATE TABLE a (id INT PRIMARY KEY, x INT, s VARCHAR(8), KEY kx (x))",
        );
        ok(
            &mut s,
            "CREATE TABLE b (id INT PRIMARY KEY, y INT, s VARCHAR(8), z INT, KEY ky (y))",
        );
        let gen = |rng: &mut Rng, n: u64| -> Vec<ModelRow> {
            (1..=n as i64)
                .map(|id| {
                    let v = (rng.next(4) != 0).then(|| rng.next(6) as i64);
                    let st = (rng.next(5) != 0).then(|| strs[rng.next(7) as usize].to_string());
                    (id, v, st)
                })
                .collect()
        };
        let (ra, rb) = (gen(&mut rng, 12), gen(&mut rng, 15));
        let lit = |v: &Option<i64>| v.map_or("NULL".to_string(), |v| v.to_string());
        let slit = |v: &Option<String>| v.as_ref().map_or("NULL".to_string(), |v| format!("'{v}'"));
        for (id, v, st) in &ra {
            ok(
                &mut s,
                &format!("INSERT INTO a VALUES ({id}, {}, {})", lit(v), slit(st)),
            );
        }
        for (id, v, st) in &rb {
            // b.z = b.y, without an index: the same join through the hash method.
            ok(
                &mut s,
                &format!(
                    "INSERT INTO b VALUES ({id}, {}, {}, {})",
                    lit(v),
                    slit(st),
                    lit(v)
                ),
            );
        }
        // (join condition in SQL, model predicate, expected method in EXPLAIN's Extra)
        type Pred = fn(&ModelRow, &ModelRow) -> bool;
        let int_eq: Pred = |a, b| matches!((a.1, b.1), (Some(x), Some(y)) if x == y);
        let str_eq: Pred = |a, b| matches!((&a.2, &b.2), (Some(x), Some(y)) if ci_eq(x, y));
        let lt: Pred = |a, b| matches!((a.1, b.1), (Some(x), Some(y)) if x < y);
        let cases: [(&str, Pred, &str); 4] = [
            ("b.y = a.x", int_eq, "ref "),
            ("b.z = a.x", int_eq, "hash join"),
            ("b.s = a.s", str_eq, "hash join"),
            ("a.x < b.z", lt, "nested loop"),
        ];
        for (cond, pred, method) in cases {
            for left in [false, true] {
                let kind = if left { "LEFT JOIN" } else { "JOIN" };
                let sql = format!("SELECT a.id, b.id FROM a {kind} b ON {cond}");
                let plan = q(&mut s, &format!("EXPLAIN {sql}"));
                // A lookup shows as MariaDB's `ref` on the key, the others in Extra.
                let shown = format!("{} {}", plan[1][3], plan[1][9]);
                assert!(shown.contains(method), "{sql}: {plan:?}");
                let mut got = q(&mut s, &sql);
                got.sort();
                let mut want = Vec::new();
                for x in &ra {
                    let hits: Vec<_> = rb.iter().filter(|y| pred(x, y)).collect();
                    for y in &hits {
                        want.push(vec![x.0.to_string(), y.0.to_string()]);
                    }
                    if left && hits.is_empty() {
                        want.push(vec![x.0.to_string(), "NULL".into()]);
                    }
                }
                want.sort();
                assert_eq!(got, want, "seed {seed}: {sql}");
            }
        }
        // WHERE on the inner table of a LEFT JOIN filters after NULL extension (anti-join).
        let mut got = q(
            &mut s,
            "SELECT a.id FROM a LEFT JOIN b ON b.y = a.x WHERE b.id IS NULL",
        );
        got.sort();
        let mut want: Vec<Vec<String>> = ra
            .iter()
            .filter(|x| !rb.iter().any(|y| int_eq(x, y)))
            .map(|x| vec![x.0.to_string()])
            .collect();
        want.sort();
        assert_eq!(got, want, "seed {seed}: anti-join");
    }
    assert_eq!(
        err(&mut s, "SELECT id FROM a JOIN b ON a.x = b.y"),
        1052,
        "ambiguous column"
    );
    assert_eq!(
        err(&mut s, "SELECT 1 FROM a JOIN a ON 1"),
        1066,
        "same alias twice"
    );
    assert_eq!(
        err(&mut s, "SELECT 1 FROM a JOIN b ON a.x = c.y"),
        1054,
        "unknown table in ON"
    );
}

/// `a(id, x)` and `b(id, a_id, y)` with NULLs in both the join column and the value column,
/// the fixture of the subquery tests.
fn parent_and_child_tables(s: &mut Session) {
    ok(s, "CREATE TABLE a (id INT PRIMARY KEY, x INT)");
    ok(s, "CREATE TABLE b (id INT PRIMARY KEY, a_id INT, y INT)");
    ok(
        s,
        "INSERT INTO a VALUES (1, 10), (2, 20), (3, NULL), (4, 10)",
    );
    ok(
        s,
        "INSERT INTO b VALUES (1, 1, 100), (2, 1, 200), (3, 2, 300), (4, NULL, 400)",
    );
}

#[test]
fn subqueries_in_exists_and_scalar_follow_sql_null_rules() {
    let f = fixture();
    let mut s = session(&f, 1);
    parent_and_child_tables(&mut s);
    let ids = |s: &mut Session, sql: &str| -> Vec<String> {
        q(s, sql).into_iter().map(|r| r[0].clone()).collect()
    };
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM a WHERE id IN (SELECT a_id FROM b) ORDER BY id"
        ),
        ["1", "2"]
    );
    // NOT IN over a set with a NULL is never true.
    assert!(ids(
        &mut s,
        "SELECT id FROM a WHERE id NOT IN (SELECT a_id FROM b)"
    )
    .is_empty());
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM a WHERE id NOT IN (SELECT a_id FROM b WHERE a_id IS NOT NULL) \
             ORDER BY id"
        ),
        ["3", "4"]
    );
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.a_id = a.id) ORDER BY id"
        ),
        ["3", "4"]
    );
    assert_eq!(
        q(
            &mut s,
            "SELECT id, (SELECT MAX(y) FROM b WHERE b.a_id = a.id) FROM a ORDER BY id"
        ),
        [["1", "200"], ["2", "300"], ["3", "NULL"], ["4", "NULL"]]
    );
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM a WHERE x = (SELECT MIN(x) FROM a) ORDER BY id"
        ),
        ["1", "4"]
    );
    assert_eq!(one(&mut s, "SELECT (SELECT COUNT(*) FROM b)"), "4");
    assert_eq!(
        one(
            &mut s,
            "SELECT COUNT(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE y > 1000)"
        ),
        "0"
    );
    assert_eq!(
        err(&mut s, "SELECT id FROM a WHERE x = (SELECT x FROM a)"),
        1242
    );
    assert_eq!(
        err(&mut s, "SELECT id FROM a WHERE id IN (SELECT id, y FROM b)"),
        1241
    );
}

#[test]
fn union_removes_duplicates_up_to_its_last_distinct_and_orders_the_whole() {
    let f = fixture();
    let mut s = session(&f, 1);
    ok(&mut s, "CREATE TABLE a (id INT PRIMARY KEY, s VARCHAR(8))");
    ok(&mut s, "INSERT INTO a VALUES (1, 'x'), (2, 'X '), (3, 'y')");
    let col = |s: &mut Session, sql: &str| -> Vec<String> {
        q(s, sql).into_iter().map(|r| r[0].clone()).collect()
    };
    assert_eq!(
        col(
            &mut s,
            "SELECT id FROM a UNION SELECT id FROM a ORDER BY id"
        ),
        ["1", "2", "3"]
    );
    assert_eq!(
        col(
            &mut s,
            "SELECT id FROM a UNION ALL SELECT id FROM a ORDER BY 1 DESC LIMIT 3"
        ),
        ["3", "3", "2"]
    );
    // DISTINCT after ALL removes the duplicates the ALL kept; ALL after DISTINCT keeps its own.
    assert_eq!(
        col(&mut s, "SELECT 1 UNION ALL SELECT 1 UNION SELECT 1").len(),
        1
    );
    assert_eq!(
        col(&mut s, "SELECT 1 UNION SELECT 1 UNION ALL SELECT 1").len(),
        2
    );
    // Duplicates by the collation: 'x' and 'X ' are one value.
    assert_eq!(col(&mut s, "SELECT s FROM a UNION SELECT 'Y'").len(), 2);
    // Operands of different types print as the common type.
    assert_eq!(
        q(&mut s, "SELECT 1, 'a' UNION ALL SELECT 2.5, 3"),
        [["1.0", "a"], ["2.5", "3"]]
    );
    assert_eq!(
        err(&mut s, "SELECT id FROM a UNION SELECT id, s FROM a"),
        1222
    );
}

#[test]
fn information_schema_tables_join_and_nest_like_any_table() {
    let f = fixture();
    let mut s = session(&f, 1);
    ok(
        &mut s,
        "CREATE TABLE a (id INT PRIMARY KEY, x INT, KEY kx (x))",
    );
    ok(&mut s, "CREATE TABLE b (id INT PRIMARY KEY, y INT, z INT)");
    assert_eq!(
        q(
            &mut s,
            "SELECT t.TABLE_NAME, COUNT(*) FROM information_schema.TABLES t \
             JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA \
             AND c.TABLE_NAME = t.TABLE_NAME WHERE t.TABLE_SCHEMA = 'd' \
             GROUP BY t.TABLE_NAME ORDER BY 1"
        ),
        [["a", "2"], ["b", "3"]]
    );
    // A subquery over one information_schema table inside a query over another.
    assert_eq!(
        q(
            &mut s,
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND \
             TABLE_NAME IN (SELECT TABLE_NAME FROM information_schema.STATISTICS \
             WHERE INDEX_NAME <> 'PRIMARY')"
        ),
        [["a"]]
    );
    // A join between a user table and an information_schema table.
    ok(&mut s, "INSERT INTO a VALUES (1, 1), (2, 2)");
    assert_eq!(
        one(
            &mut s,
            "SELECT COUNT(*) FROM a JOIN information_schema.COLUMNS c \
             ON c.TABLE_SCHEMA = 'd' AND c.TABLE_NAME = 'b' AND c.ORDINAL_POSITION = a.x"
        ),
        "2"
    );
    // What mysqldump asks before dumping tablespaces: nothing to list, and no error.
    assert!(q(
        &mut s,
        "SELECT LOGFILE_GROUP_NAME, FILE_NAME FROM INFORMATION_SCHEMA.FILES \
         WHERE FILE_TYPE = 'UNDO LOG' AND LOGFILE_GROUP_NAME IN (SELECT DISTINCT \
         LOGFILE_GROUP_NAME FROM INFORMATION_SCHEMA.FILES WHERE TABLESPACE_NAME IN \
         (SELECT DISTINCT TABLESPACE_NAME FROM INFORMATION_SCHEMA.PARTITIONS \
         WHERE TABLE_SCHEMA IN ('d')))"
    )
    .is_empty());
    assert_eq!(
        q(
            &mut s,
            "SELECT TABLE_NAME FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = 'd' \
             UNION ALL SELECT 'z' ORDER BY 1"
        ),
        [["a"], ["b"], ["z"]]
    );
}

#[test]
fn user_variables_read_back_in_expressions() {
    let f = fixture();
    let mut s = session(&f, 1);
    ok(&mut s, "SET @a = 5, @B = 'x'");
    assert_eq!(
        q(&mut s, "SELECT @a, @b, @nope, @A + 1"),
        [["5", "x", "NULL", "6"]]
    );
    ok(&mut s, "SET @c = @a * 2");
    assert_eq!(one(&mut s, "SELECT @c"), "10");
    ok(&mut s, "CREATE TABLE t (id INT PRIMARY KEY)");
    ok(&mut s, "INSERT INTO t VALUES (@a), (@c)");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t WHERE id >= @a"), "2");
}

#[test]
fn in_over_a_large_subquery_uses_sql_equality_and_null_rules() {
    let f = fixture();
    let mut s = session(&f, 1);
    ok(
        &mut s,
        "CREATE TABLE a (id INT PRIMARY KEY, x INT, s VARCHAR(8))",
    );
    ok(
        &mut s,
        "CREATE TABLE b (id INT PRIMARY KEY, y DECIMAL(6,2), t VARCHAR(8))",
    );
    let rows: Vec<String> = (1..=100)
        .map(|i| format!("({i}, {i}, 'k{}')", i % 10))
        .collect();
    ok(&mut s, &format!("INSERT INTO a VALUES {}", rows.join(",")));
    // b: 40 values, even numbers as decimals (2.00 = 2), text differing in case and
    // trailing spaces, then a NULL.
    let rows: Vec<String> = (1..=40)
        .map(|i| format!("({i}, {}.00, 'K{} ')", i * 2, i % 3))
        .collect();
    ok(&mut s, &format!("INSERT INTO b VALUES {}", rows.join(",")));
    let count = |s: &mut Session, sql: &str| one(s, sql);
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM a WHERE x IN (SELECT y FROM b)"
        ),
        "40"
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM a WHERE x NOT IN (SELECT y FROM b)"
        ),
        "60"
    );
    // 'k0', 'k1', 'k2' match 'K0 ', 'K1 ', 'K2 ' under the collation: 30 of 100 rows.
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM a WHERE s IN (SELECT t FROM b)"
        ),
        "30"
    );
    ok(&mut s, "INSERT INTO b VALUES (41, NULL, NULL)");
    // With a NULL among the values, a miss is unknown: NOT IN matches nothing.
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM a WHERE x IN (SELECT y FROM b)"
        ),
        "40"
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM a WHERE x NOT IN (SELECT y FROM b)"
        ),
        "0"
    );
    // A string probe against numbers compares as numbers (no hashing across classes).
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM a WHERE '4' IN (SELECT y FROM b)"
        ),
        "100"
    );
}

#[test]
fn subqueries_resolve_by_id_through_aliases_nesting_prepares_and_updates() {
    let f = fixture();
    let mut s = session(&f, 1);
    parent_and_child_tables(&mut s);
    // An alias for a subquery, named again in HAVING and ORDER BY of a grouped query: the
    // alias is compiled once more there, and its subquery must land in the statement's table.
    assert_eq!(
        q(
            &mut s,
            "SELECT x, (SELECT MAX(y) FROM b WHERE y < 350) AS m, COUNT(*) FROM a \
             WHERE x IS NOT NULL GROUP BY x HAVING m > 0 ORDER BY m, x"
        ),
        [["10", "300", "2"], ["20", "300", "1"]]
    );
    // An uncorrelated subquery inside a correlated one, which runs once per outer row.
    assert_eq!(
        q(
            &mut s,
            "SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.a_id = a.id AND \
             b.y = (SELECT MAX(y) FROM b WHERE a_id IS NOT NULL)) ORDER BY id"
        ),
        [["2"]]
    );
    // A prepared statement keeps its plan and subquery table between executions.
    let id = s
        .prepare("SELECT COUNT(*) FROM a WHERE x IN (SELECT y DIV 10 FROM b WHERE id <= ?)")
        .expect("prepare")
        .id;
    let count = |s: &mut Session, p: i64| match s.execute(id, &[zipdb_sql::Value::Int(p)]) {
        Ok(Outcome::Rows { rows, .. }) => common::text(&rows[0][0]),
        other => panic!("execute: {other:?}"),
    };
    assert_eq!(count(&mut s, 1), "2");
    assert_eq!(count(&mut s, 3), "3");
    // UPDATE runs its subqueries ahead, each once, then writes.
    assert_eq!(
        ok(
            &mut s,
            "UPDATE a SET x = (SELECT MAX(y) FROM b) WHERE id IN (SELECT a_id FROM b)"
        ),
        2
    );
    assert_eq!(
        q(&mut s, "SELECT id, x FROM a ORDER BY id"),
        [["1", "400"], ["2", "400"], ["3", "NULL"], ["4", "10"]]
    );
    assert_eq!(
        ok(
            &mut s,
            "DELETE FROM a WHERE x > ALL (SELECT y FROM b WHERE y < 400)"
        ),
        2
    );
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM a"), "2");
}
