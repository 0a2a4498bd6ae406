//! EXPLAIN: MariaDB's ten tabular columns (checked against MariaDB 10.11's output for the
//! same schema, where zipdb's plan is the same), `FORMAT=TREE`, and the format errors.

use zipdb_sql::{Outcome, Session};

mod common;
use common::{fixture, q, Fixture};

fn session(f: &Fixture) -> Session {
    let mut s = f.inst.session("root", 1);
    for sql in [
        "CREATE DATABASE x",
        "USE x",
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(20), d CHAR(10) NOT NULL, \
         KEY k (k), KEY kc (k, c))",
        "INSERT INTO t VALUES (1, 1, 'a', 'a'), (2, 2, 'b', 'b'), (3, 3, 'c', 'c')",
        "CREATE TABLE u (id BIGINT UNSIGNED PRIMARY KEY, t_id INT, KEY (t_id))",
        "INSERT INTO u VALUES (1, 1), (2, 1)",
        "CREATE TABLE p (a INT NOT NULL, b DATETIME(3) NOT NULL, m DECIMAL(10,2), \
         PRIMARY KEY (a, b), KEY km (m))",
    ] {
        q(&mut s, sql);
    }
    s
}

/// The rows of `EXPLAIN sql`, as MariaDB's client prints them (NULL as "NULL").
fn explain(s: &mut Session, sql: &str) -> Vec<String> {
    q(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .map(|r| r.join("|"))
        .collect()
}

fn err(s: &mut Session, sql: &str) -> (u16, String) {
    let mut r = s.query(sql);
    match r.remove(0) {
        Ok(_) => panic!("{sql}: succeeded"),
        Err(e) => (e.code(), e.message().to_string()),
    }
}

#[test]
fn tabular_form_has_mariadbs_columns() {
    let f = fixture("explain-columns");
    let mut s = session(&f);
    let mut r = s.query("EXPLAIN SELECT * FROM t WHERE id = 2");
    let Ok(Outcome::Rows { columns, .. }) = r.remove(0) else {
        panic!("EXPLAIN gave no rows");
    };
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "id",
            "select_type",
            "table",
            "type",
            "possible_keys",
            "key",
            "key_len",
            "ref",
            "rows",
            "Extra"
        ]
    );
}

#[test]
fn tabular_rows_match_mariadb_where_the_plans_agree() {
    let f = fixture("explain-rows");
    let mut s = session(&f);
    let cases: &[(&str, &[&str])] = &[
        (
            "SELECT 1",
            &["1|SIMPLE|NULL|NULL|NULL|NULL|NULL|NULL|NULL|No tables used"],
        ),
        (
            "SELECT * FROM t WHERE id = 2",
            &["1|SIMPLE|t|const|PRIMARY|PRIMARY|4|const|1|"],
        ),
        (
            "SELECT * FROM t WHERE id > 1",
            &["1|SIMPLE|t|range|PRIMARY|PRIMARY|4|NULL|NULL|Using where"],
        ),
        (
            "SELECT * FROM t WHERE k = 2",
            &["1|SIMPLE|t|ref|k|k|5|const|NULL|"],
        ),
        (
            "SELECT * FROM t WHERE c LIKE '%a%'",
            &["1|SIMPLE|t|ALL|NULL|NULL|NULL|NULL|NULL|Using where"],
        ),
        (
            "SELECT * FROM t ORDER BY c",
            &["1|SIMPLE|t|ALL|NULL|NULL|NULL|NULL|NULL|Using filesort"],
        ),
        (
            "SELECT 1 UNION SELECT 2",
            &[
                "1|PRIMARY|NULL|NULL|NULL|NULL|NULL|NULL|NULL|No tables used",
                "2|UNION|NULL|NULL|NULL|NULL|NULL|NULL|NULL|No tables used",
                "NULL|UNION RESULT|<union1,2>|ALL|NULL|NULL|NULL|NULL|NULL|",
            ],
        ),
        (
            "SELECT 1 UNION ALL SELECT 2",
            &[
                "1|PRIMARY|NULL|NULL|NULL|NULL|NULL|NULL|NULL|No tables used",
                "2|UNION|NULL|NULL|NULL|NULL|NULL|NULL|NULL|No tables used",
            ],
        ),
        (
            "SELECT * FROM (SELECT k, COUNT(*) FROM t GROUP BY k) d",
            &[
                "1|PRIMARY|<derived2>|ALL|NULL|NULL|NULL|NULL|NULL|",
                "2|DERIVED|t|ALL|NULL|NULL|NULL|NULL|NULL|Using temporary",
            ],
        ),
        (
            "SELECT (SELECT MAX(id) FROM u) FROM t",
            &[
                "1|PRIMARY|t|ALL|NULL|NULL|NULL|NULL|NULL|",
                "2|SUBQUERY|u|ALL|NULL|NULL|NULL|NULL|NULL|",
            ],
        ),
        (
            "UPDATE t SET c = 'x' WHERE id = 1",
            &["1|SIMPLE|t|range|PRIMARY|PRIMARY|4|NULL|1|Using where"],
        ),
        (
            // An index lookup join names the outer column it reads, as MariaDB does.
            "SELECT * FROM t JOIN u ON u.t_id = t.id",
            &[
                "1|SIMPLE|t|ALL|NULL|NULL|NULL|NULL|NULL|",
                "1|SIMPLE|u|ref|t_id|t_id|5|x.t.id|NULL|Using where",
            ],
        ),
        (
            "DELETE FROM t WHERE k = 5",
            &["1|SIMPLE|t|range|k|k|5|NULL|NULL|Using where"],
        ),
        (
            // Key lengths: INT NOT NULL 4, DATETIME(3) NOT NULL 5 + 2, DECIMAL(10,2) 5 + 1.
            "SELECT * FROM p WHERE a = 1 AND b = '2024-01-01'",
            &["1|SIMPLE|p|const|PRIMARY|PRIMARY|11|const,const|1|"],
        ),
        (
            "SELECT * FROM p WHERE a = 1",
            &["1|SIMPLE|p|ref|PRIMARY|PRIMARY|4|const|NULL|"],
        ),
        (
            "SELECT * FROM p WHERE m = 1.5",
            &["1|SIMPLE|p|ref|km|km|6|const|NULL|"],
        ),
    ];
    for (sql, want) in cases {
        assert_eq!(explain(&mut s, sql), *want, "{sql}");
    }
}

/// Select types and ids of nested blocks: a correlated subquery is DEPENDENT, a derived
/// table inside a derived table gets the id after its holder's.
#[test]
fn nested_blocks_are_numbered_in_order() {
    let f = fixture("explain-nested");
    let mut s = session(&f);
    let kinds = |s: &mut Session, sql: &str| -> Vec<String> {
        q(s, &format!("EXPLAIN {sql}"))
            .into_iter()
            .map(|r| format!("{} {} {}", r[0], r[1], r[2]))
            .collect()
    };
    assert_eq!(
        kinds(
            &mut s,
            "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.t_id = t.k)"
        ),
        ["1 PRIMARY t", "2 DEPENDENT SUBQUERY u"]
    );
    assert_eq!(
        kinds(
            &mut s,
            "SELECT * FROM (SELECT * FROM (SELECT id FROM t) a) b JOIN (SELECT id FROM u) c \
             ON c.id = b.id"
        ),
        [
            "1 PRIMARY <derived2>",
            "1 PRIMARY <derived4>",
            "2 DERIVED <derived3>",
            "3 DERIVED t",
            "4 DERIVED u"
        ]
    );
}

#[test]
fn tree_form_prints_the_logical_plan() {
    let f = fixture("explain-tree");
    let mut s = session(&f);
    let rows = q(
        &mut s,
        "EXPLAIN FORMAT=TREE SELECT k, COUNT(*) FROM t WHERE c <> 'b' GROUP BY k ORDER BY k",
    );
    assert_eq!(rows.len(), 1);
    let tree = &rows[0][0];
    println!("{tree}");
    let lines: Vec<&str> = tree.lines().collect();
    assert!(lines[0].starts_with("-> "), "{tree}");
    assert!(tree.contains("Scan: x.t"), "{tree}");
    assert!(tree.contains("Filter:"), "{tree}");
    assert!(
        tree.contains("Aggregate") || tree.contains("group by"),
        "{tree}"
    );
    // Inputs are indented below the node that reads them.
    let depth = |needle: &str| {
        let l = lines.iter().find(|l| l.contains(needle)).expect(needle);
        l.len() - l.trim_start().len()
    };
    assert!(depth("Scan: x.t") > depth("Filter:"), "{tree}");
    // The keyword form and the subquery section.
    let rows = q(
        &mut s,
        "EXPLAIN FORMAT TREE SELECT * FROM t WHERE k IN (SELECT t_id FROM u)",
    );
    assert!(rows[0][0].contains("Subquery #0"), "{}", rows[0][0]);
}

/// EXPLAIN INSERT: MariaDB 10.11's rows for the same schema (INSERT … VALUES is one INSERT
/// row with a NULL Extra; INSERT … SELECT is its query's rows, "Using temporary" on the
/// first when the query reads the target), and the tree: the Insert over its source.
#[test]
fn insert_rows_match_mariadb_and_the_tree_shows_the_source() {
    let f = fixture("explain-insert");
    let mut s = session(&f);
    let values_row: &[&str] = &["1|INSERT|t|ALL|NULL|NULL|NULL|NULL|NULL|NULL"];
    let cases: &[(&str, &[&str])] = &[
        ("INSERT INTO t (id, d) VALUES (9, 'a')", values_row),
        (
            "INSERT INTO t (id, d) VALUES (9, 'a'), (10, 'b')",
            values_row,
        ),
        ("INSERT IGNORE INTO t (id, d) VALUES (9, 'a')", values_row),
        ("REPLACE INTO t (id, d) VALUES (9, 'a')", values_row),
        ("INSERT INTO t SET id = 9, d = 'a'", values_row),
        (
            "INSERT INTO t (id, d) VALUES (1, 'a') ON DUPLICATE KEY UPDATE k = k + 1",
            values_row,
        ),
        (
            "INSERT INTO u SELECT id, k FROM t WHERE id = 2",
            &["1|SIMPLE|t|const|PRIMARY|PRIMARY|4|const|1|"],
        ),
        (
            "REPLACE INTO u SELECT id, k FROM t WHERE id = 2",
            &["1|SIMPLE|t|const|PRIMARY|PRIMARY|4|const|1|"],
        ),
        (
            "INSERT INTO u SELECT id, k FROM t WHERE id = 2 ON DUPLICATE KEY UPDATE t_id = 3",
            &["1|SIMPLE|t|const|PRIMARY|PRIMARY|4|const|1|"],
        ),
        (
            "INSERT INTO u (id) SELECT 5",
            &["1|SIMPLE|NULL|NULL|NULL|NULL|NULL|NULL|NULL|No tables used"],
        ),
    ];
    for (sql, want) in cases {
        assert_eq!(explain(&mut s, sql), *want, "{sql}");
    }
    // A query over the target: MariaDB says `1|SIMPLE|t|ALL|NULL|NULL|NULL|NULL|3|Using
    // where; Using temporary` (zipdb has no row estimate: `rows` is NULL).
    assert_eq!(
        explain(
            &mut s,
            "INSERT INTO t (id, d) SELECT id + 10, c FROM t WHERE d LIKE '%a%'"
        ),
        ["1|SIMPLE|t|ALL|NULL|NULL|NULL|NULL|NULL|Using where; Using temporary"]
    );
    // EXPLAIN runs nothing.
    assert_eq!(q(&mut s, "SELECT COUNT(*) FROM t"), [["3"]]);

    let tree =
        |s: &mut Session, sql: &str| q(s, &format!("EXPLAIN FORMAT=TREE {sql}"))[0][0].clone();
    let t = tree(
        &mut s,
        "INSERT IGNORE INTO t (id, d) VALUES (9, 'a'), (10, DEFAULT)",
    );
    assert_eq!(
        t, "-> Insert: x.t (id, d) ignore\n    -> Values: (9, 'a'), (10, DEFAULT)\n",
        "{t}"
    );
    // INSERT … SELECT's query goes through the passes as a SELECT's: the point lookup.
    let t = tree(
        &mut s,
        "INSERT INTO u SELECT id, k FROM t WHERE id = 2 ON DUPLICATE KEY UPDATE t_id = VALUES(t_id) + 1",
    );
    let lines: Vec<&str> = t.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        [
            "-> Insert: x.u (id, t_id) on duplicate key update t_id = values(t_id) + 1",
            "-> Project: t.id, t.k",
            "-> Filter: t.id = 2",
            "-> Scan: x.t (id, k) using const PRIMARY",
        ],
        "{t}"
    );
    assert!(depth_of(&t, "Scan:") > depth_of(&t, "Project:"), "{t}");
    let t = tree(
        &mut s,
        "REPLACE INTO u (id) SELECT id FROM t UNION SELECT 7",
    );
    assert!(t.starts_with("-> Insert: x.u (id) replace\n"), "{t}");
    assert!(t.contains("-> Compiled query (id)"), "{t}");
    let t = tree(
        &mut s,
        "INSERT INTO u (id) SELECT (SELECT MAX(id) FROM u) + 10",
    );
    assert!(t.contains("Subquery #0"), "{t}");
}

/// UPDATE and DELETE print their source after the passes: the target's access path shows,
/// in the tree as in the tabular form.
#[test]
fn dml_trees_show_the_access_path() {
    let f = fixture("explain-dml-tree");
    let mut s = session(&f);
    let tree =
        |s: &mut Session, sql: &str| q(s, &format!("EXPLAIN FORMAT=TREE {sql}"))[0][0].clone();
    let t = tree(&mut s, "DELETE FROM t WHERE id = 1");
    assert!(t.starts_with("-> Delete: x.t"), "{t}");
    assert!(t.contains("-> Filter: t.id = 1"), "{t}");
    assert!(t.contains("using ") && t.contains(" PRIMARY"), "{t}");
    assert!(depth_of(&t, "Scan: x.t") > depth_of(&t, "Filter:"), "{t}");
    let t = tree(
        &mut s,
        "UPDATE u SET t_id = 2 WHERE t_id = 5 ORDER BY id DESC LIMIT 3",
    );
    assert!(t.starts_with("-> Update: x.u set"), "{t}");
    assert!(t.contains("using ref t_id"), "{t}");
    // exec/dml.rs sorts the matched rows itself: the Sort is not the scan's.
    assert!(t.contains("Sort:") && !t.contains("by the scan"), "{t}");
    assert!(t.contains("Limit"), "{t}");
    let t = tree(&mut s, "UPDATE t SET k = 1 WHERE c = 'z'");
    assert!(t.contains("Scan: x.t") && !t.contains("using"), "{t}");
    // The tabular form reads the same decision (the key used) from the plan that runs; as
    // MariaDB's single-table DML rows, a key lookup shows as a range.
    let rows = q(&mut s, "EXPLAIN DELETE FROM t WHERE id = 1");
    assert_eq!(
        (&*rows[0][3], &*rows[0][5]),
        ("range", "PRIMARY"),
        "{rows:?}"
    );
    let rows = q(&mut s, "EXPLAIN UPDATE u SET t_id = 2 WHERE t_id = 5");
    assert_eq!(rows[0][5], "t_id", "{rows:?}");
    let rows = q(&mut s, "EXPLAIN UPDATE t SET k = 1 WHERE c = 'z'");
    assert_eq!((&*rows[0][3], &*rows[0][5]), ("ALL", "NULL"), "{rows:?}");
}

/// The tree is printed after the optimizer's passes: their decisions show.
#[test]
fn tree_form_shows_the_passes_decisions() {
    let f = fixture("explain-tree-passes");
    let mut s = session(&f);
    let tree =
        |s: &mut Session, sql: &str| q(s, &format!("EXPLAIN FORMAT=TREE {sql}"))[0][0].clone();
    let t = tree(
        &mut s,
        "SELECT t.id, u.id FROM t JOIN u ON u.t_id = t.id WHERE t.id > 1 AND u.id < 9 \
         ORDER BY t.id",
    );
    let lines: Vec<&str> = t.lines().map(str::trim).collect();
    let depth = |needle: &str| {
        let l = t.lines().find(|l| l.contains(needle)).expect(needle);
        l.len() - l.trim_start().len()
    };
    // The sort is the primary-key scan's order; the WHERE term on t went below the join
    // (with t's access path), the one on u into the ON, looked up through u's index.
    assert_eq!(
        lines[0], "-> Sort: order key 1 (by the scan's key order)",
        "{t}"
    );
    assert!(
        t.contains("-> Inner join on (u.t_id = t.id) AND (u.id < 9) (lookup per row)"),
        "{t}"
    );
    assert!(t.contains("-> Filter: t.id > 1"), "{t}");
    assert!(depth("-> Filter: t.id > 1") > depth("Inner join"), "{t}");
    assert!(t.contains("Scan: x.t (id) using range PRIMARY"), "{t}");
    assert!(t.contains("Scan: x.u (id, t_id) using ref t_id"), "{t}");
    // A LEFT JOIN keeps the WHERE term on its nullable side above it.
    let t = tree(
        &mut s,
        "SELECT t.id FROM t LEFT JOIN u ON u.id = t.k WHERE u.t_id IS NULL",
    );
    assert!(
        depth_of(&t, "-> Filter: u.t_id IS NULL") < depth_of(&t, "Left join"),
        "{t}"
    );
}

fn depth_of(tree: &str, needle: &str) -> usize {
    let l = tree.lines().find(|l| l.contains(needle)).expect(needle);
    l.len() - l.trim_start().len()
}

#[test]
fn other_formats_are_refused_as_mariadb_does() {
    let f = fixture("explain-formats");
    let mut s = session(&f);
    assert_eq!(
        err(&mut s, "EXPLAIN FORMAT=GRAPHVIZ SELECT 1"),
        (
            1791,
            "Unknown EXPLAIN/ANALYZE format name: 'graphviz'".to_string()
        )
    );
    assert_eq!(
        err(&mut s, "EXPLAIN FORMAT=TEXT SELECT 1"),
        (
            1791,
            "Unknown EXPLAIN/ANALYZE format name: 'text'".to_string()
        )
    );
    assert_eq!(err(&mut s, "EXPLAIN FORMAT=JSON SELECT 1").0, 1235);
    assert_eq!(err(&mut s, "EXPLAIN ANALYZE SELECT 1").0, 1235);
    // The session goes on.
    assert_eq!(q(&mut s, "SELECT 2"), [["2"]]);
}
