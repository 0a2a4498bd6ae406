//! The SELECT corpus of D1b–D1d, kept after D1e deleted the old path it was checked against:
//! query blocks over one table or none, joins, derived tables, CTE uses and set operations
//! bind to a LogicalPlan, lower and run; binding errors stay errors; FOR UPDATE without a
//! table to lock drops the lock; the differential regression scripts' queries bind and run
//! where their FROM resolves; a sample of results is checked row by row; and altering a node
//! of the plan changes the lowered `SelectPlan`, so lowering reads every node it is given.

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::env::Env;
use crate::bind::select::{bind_and_lower, compile_select};
use crate::front::parse::parse_ast;
use crate::instance::session::Session;
use crate::plan::logical::node::{JoinKind, LogicalPlan};
use crate::plan::select::SelectPlan;
use crate::types::result::Outcome;
use crate::SqlError;

/// The statement bound to a LogicalPlan, `alter`ed, and lowered (`None`: its FROM clause
/// fails, or it is no SELECT).
fn bound(
    s: &mut Session,
    sql: &str,
    alter: &dyn Fn(&mut LogicalPlan),
) -> Option<Result<SelectPlan, SqlError>> {
    s.text = sql.to_string();
    let stmts = parse_ast(sql).expect("parses");
    let ast::Statement::Query(q) = &stmts[0] else {
        panic!("{sql}: not a query");
    };
    let lookup = s.env_lookup();
    let vars = |n: &str| s.sysvar(n);
    let text = crate::bind::labels::StatementText::new(sql);
    let env = Env {
        db: s.db.as_deref(),
        lookup: &lookup,
        vars: &vars,
        outer: None,
        sql: Some(&text),
        ctes: &[],
        compile_query: &compile_select,
    };
    bind_and_lower(q, &env, &mut Compiler::new(), alter)
}

/// The rows a statement gives, each as its values' text (`NULL` for NULL) joined by `|`.
fn rows_of(s: &mut Session, sql: &str) -> Vec<String> {
    match s.query(sql).pop().expect("one result") {
        Ok(Outcome::Rows { rows, .. }) => rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| {
                        v.to_text()
                            .map_or("NULL".to_string(), |t| String::from_utf8_lossy(&t).into())
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect(),
        other => panic!("{sql}: {other:?}"),
    }
}

fn with_session(name: &str, f: impl FnOnce(&mut Session)) {
    let dir = std::env::temp_dir().join(format!("zipdb-corpus-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let (_db, inst) = crate::Instance::open_for_tests(&dir);
        let mut s = inst.session("root", 1);
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            // sysbench's table, as `sysbench oltp_read_write prepare` creates it.
            "CREATE TABLE sbtest1 (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
             PRIMARY KEY (id), KEY k_1 (k))",
            "INSERT INTO sbtest1 (k, c, pad) VALUES (3, '12-34', 'p'), (3, '56-78', 'q'), \
             (5, '123-9', 'r'), (7, '', 's')",
            "CREATE TABLE t2 (a INT PRIMARY KEY, b VARCHAR(20), d DATE NOT NULL, \
             x DECIMAL(10,2), name VARCHAR(10), KEY bx (b, x))",
            "INSERT INTO t2 VALUES (1, 'one', '2024-01-02', 1.25, 'a'), \
             (2, NULL, '2024-02-03', 2.50, 'b'), (3, 'one', '2024-03-04', NULL, 'c')",
            "CREATE TABLE t3 (id INT PRIMARY KEY, a INT, note VARCHAR(10), KEY ka (a))",
            "INSERT INTO t3 VALUES (1, 1, 'one'), (2, 1, 'x'), (3, 3, NULL), (4, 9, 'nine')",
        ] {
            let r = s.query(sql).pop().expect("one result");
            assert!(r.is_ok(), "{sql}: {r:?}");
        }
        f(&mut s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Blocks over one table or none: the LogicalPlan path. Those without `?` also run.
const NEW_PATH: &[&str] = &[
    // sysbench oltp_read_write / oltp_point_select, as text and with placeholders.
    "SELECT c FROM sbtest1 WHERE id=2",
    "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3",
    "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 3",
    "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3 ORDER BY c",
    "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 3 ORDER BY c",
    "SELECT c FROM sbtest1 WHERE id=?",
    "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
    "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
    // issue 20's benchmark queries.
    "SELECT COUNT(*) FROM sbtest1 WHERE c LIKE '%123%'",
    "SELECT k % 100, COUNT(*), SUM(LENGTH(c)) FROM sbtest1 GROUP BY 1",
    "SELECT c FROM sbtest1 ORDER BY c LIMIT 10 OFFSET 2",
    // WHERE, access paths, ORDER BY on the key (the scan's order), LIMIT.
    "SELECT * FROM sbtest1",
    "SELECT id, k FROM sbtest1 WHERE k = 3",
    "SELECT id FROM sbtest1 WHERE k > 2 AND c LIKE '%1%' ORDER BY id DESC LIMIT 3",
    "SELECT id FROM sbtest1 ORDER BY id LIMIT 2 OFFSET 1",
    "SELECT id, c FROM sbtest1 WHERE id IN (1, 3) OR k = 7 ORDER BY k, id",
    "SELECT s.id, s.k FROM sbtest1 AS s WHERE s.k BETWEEN 1 AND 5 ORDER BY s.id",
    "SELECT sbtest1.* FROM sbtest1 WHERE id < 3",
    "SELECT id FROM sbtest1 WHERE id > 1 FOR UPDATE",
    "SELECT c FROM sbtest1 LIMIT ?",
    "SELECT id FROM sbtest1 WHERE id = ? AND k = ?",
    // Expressions, aliases, ORDER BY by alias and position.
    "SELECT id + 1 AS x, UPPER(c), CONCAT(c, pad) FROM sbtest1 WHERE id IN (1, 2) ORDER BY x",
    "SELECT id * 2 AS twice FROM sbtest1 ORDER BY 1 DESC",
    "SELECT CASE WHEN k > 3 THEN 'big' ELSE 'small' END AS size, k FROM sbtest1",
    "SELECT CAST(k AS CHAR), COALESCE(NULL, k), IF(k = 3, 1, 0) FROM sbtest1",
    // Aggregates, GROUP BY, HAVING, ORDER BY over the group row.
    "SELECT MIN(id), MAX(id), AVG(k), COUNT(DISTINCT k), COUNT(k) FROM sbtest1",
    "SELECT k, COUNT(*) AS n FROM sbtest1 GROUP BY k HAVING n > 1 ORDER BY n DESC, k",
    "SELECT k, c FROM sbtest1 GROUP BY k",
    "SELECT k FROM sbtest1 GROUP BY k HAVING SUM(id) > 2 ORDER BY MAX(id)",
    "SELECT b, SUM(x), COUNT(*) FROM t2 GROUP BY b ORDER BY 2 DESC",
    "SELECT COUNT(*) FROM t2 HAVING COUNT(*) > 0",
    // DISTINCT, NULLs, dates (NOT NULL zero dates), decimals, text keys.
    "SELECT DISTINCT b FROM t2",
    "SELECT DISTINCT k, id FROM sbtest1 ORDER BY id DESC",
    "SELECT a, b FROM t2 WHERE d = '0000-00-00' OR d IS NULL",
    "SELECT a FROM t2 WHERE b IS NULL OR x > 1.5 ORDER BY b, a",
    "SELECT a, YEAR(d), DATE_ADD(d, INTERVAL 1 DAY) FROM t2 WHERE b = 'one' AND x >= 1",
    "SELECT name FROM t2 ORDER BY name DESC LIMIT 1",
    // Subqueries: the outer block takes the path, and so do theirs.
    "SELECT a FROM t2 WHERE a = (SELECT MAX(id) FROM sbtest1)",
    "SELECT a, (SELECT COUNT(*) FROM sbtest1 WHERE k = t2.a) FROM t2",
    "SELECT a FROM t2 WHERE EXISTS (SELECT 1 FROM sbtest1 WHERE id = t2.a)",
    "SELECT a FROM t2 WHERE a IN (SELECT k FROM sbtest1 GROUP BY k) ORDER BY a",
    // No FROM: OneRow.
    "SELECT 1",
    "SELECT 1 + 2 AS three, 'it''s', NOW() IS NOT NULL",
    "SELECT @@autocommit, DATABASE()",
    "SELECT COUNT(*)",
    "SELECT 1 LIMIT 0",
    // information_schema tables are Scans too.
    "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' ORDER BY TABLE_NAME",
    "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_NAME = 'sbtest1'",
    "SELECT COUNT(*) FROM information_schema.SCHEMATA",
];

/// Joins, derived tables and CTE uses (D1c): the LogicalPlan path too.
const JOINS: &[&str] = &[
    // Every join kind: comma, [INNER] JOIN, CROSS JOIN, STRAIGHT_JOIN, LEFT, RIGHT; ON, USING.
    "SELECT a.id, b.b FROM sbtest1 a JOIN t2 b ON a.id = b.a",
    "SELECT * FROM sbtest1, t2 WHERE sbtest1.id = t2.a",
    "SELECT * FROM t2 LEFT JOIN sbtest1 ON t2.a = sbtest1.k",
    "SELECT * FROM t2 RIGHT JOIN sbtest1 ON t2.a = sbtest1.k ORDER BY sbtest1.id",
    "SELECT t2.a, t3.id FROM t2 CROSS JOIN t3 ORDER BY 1, 2",
    "SELECT t2.a, t3.note FROM t2 INNER JOIN t3 ON t3.a = t2.a",
    "SELECT t2.a, t3.note FROM t2 STRAIGHT_JOIN t3 ON t3.a = t2.a",
    "SELECT * FROM t2 JOIN t3 USING (a)",
    "SELECT a, t3.id FROM t2 LEFT JOIN t3 USING (a) WHERE t3.id IS NULL",
    "SELECT * FROM t2 RIGHT JOIN t3 USING (a) ORDER BY t3.id",
    "SELECT a, COUNT(*) FROM t2 JOIN t3 USING (a) GROUP BY a ORDER BY a",
    // Join methods: primary-key and index lookups, hash on numbers and text, loops, constant
    // bounds read once; ON terms that read no row; WHERE terms over the later tables.
    "SELECT * FROM t2 JOIN sbtest1 ON sbtest1.id = t2.a",
    "SELECT * FROM t2 JOIN sbtest1 ON sbtest1.k = t2.a",
    "SELECT t2.a, t3.id FROM t2 JOIN t3 ON t3.note = t2.b",
    "SELECT t2.a, t3.id FROM t2 JOIN t3 ON t3.id < t2.a ORDER BY 1, 2 LIMIT 3",
    "SELECT t2.a, s.id FROM t2 JOIN sbtest1 s ON s.id <= 2",
    "SELECT * FROM t2 JOIN t3 ON t3.a = t2.a AND 1 = 1",
    "SELECT * FROM t2 LEFT JOIN t3 ON t3.a = t2.a AND 1 = 0",
    "SELECT * FROM t2 LEFT JOIN t3 ON t3.a = t2.a AND t3.id > 1 WHERE t3.note = 'x' OR t2.a > 1",
    "SELECT t2.a, t3.id FROM t2, t3 WHERE t3.a = t2.a AND t3.note LIKE 'o%' AND t2.x > 1",
    "SELECT t2.a, t3.id FROM t2 JOIN t3 ON t3.a = t2.a ORDER BY t2.a DESC",
    "SELECT t2.a, t3.id FROM t2 JOIN t3 ON t3.a = t2.a FOR UPDATE",
    "SELECT x.a, y.a FROM t2 x JOIN t2 y ON x.b = y.b",
    // Three and four tables, inner and outer mixed.
    "SELECT s.id, t2.b, t3.note FROM sbtest1 s JOIN t2 ON t2.a = s.k \
     LEFT JOIN t3 ON t3.a = t2.a WHERE s.id < 4 ORDER BY s.id",
    "SELECT COUNT(*) FROM sbtest1 a, sbtest1 b, t2 c WHERE a.k = b.k AND c.a = a.id",
    "SELECT * FROM t2 x JOIN t3 y ON y.a = x.a JOIN sbtest1 z ON z.id = y.id \
     LEFT JOIN t2 w ON w.a = z.k",
    "SELECT t3.id, SUM(s.k) FROM t3 LEFT JOIN t2 ON t2.a = t3.a LEFT JOIN sbtest1 s \
     ON s.k = t2.a GROUP BY t3.id HAVING SUM(s.k) IS NULL OR t3.id > 1 ORDER BY t3.id",
    // Joins with subqueries (in WHERE, the select list, ON; a join inside a subquery).
    "SELECT t2.a FROM t2 JOIN t3 ON t3.a = t2.a WHERE t3.id IN (SELECT id FROM sbtest1)",
    "SELECT t2.a, (SELECT COUNT(*) FROM sbtest1 WHERE sbtest1.k = t3.a) FROM t2 JOIN t3 \
     ON t3.a = t2.a",
    "SELECT * FROM t2 JOIN t3 ON t3.a = t2.a AND t3.id > (SELECT MIN(id) FROM sbtest1)",
    "SELECT * FROM t2 LEFT JOIN t3 ON t3.a = t2.a AND EXISTS (SELECT 1 FROM sbtest1 \
     WHERE sbtest1.id = t3.id)",
    "SELECT a FROM t2 WHERE EXISTS (SELECT 1 FROM sbtest1 s JOIN t3 ON t3.id = s.id \
     WHERE s.k = t2.a)",
    // Derived tables: alone, in joins (either side, LEFT), nested, with a set operation.
    "SELECT id FROM (SELECT id FROM sbtest1) AS dt",
    "SELECT * FROM (SELECT a, b FROM t2 ORDER BY b LIMIT 2) AS d WHERE d.a > 1",
    "SELECT COUNT(*) FROM (SELECT DISTINCT k FROM sbtest1) AS t",
    "SELECT d.k, t2.b FROM (SELECT k, COUNT(*) AS n FROM sbtest1 GROUP BY k) d \
     JOIN t2 ON t2.a = d.k",
    "SELECT t2.a, d.n FROM t2 LEFT JOIN (SELECT k, COUNT(*) n FROM sbtest1 GROUP BY k) d \
     ON d.k = t2.a ORDER BY t2.a",
    "SELECT p.id, q.a FROM (SELECT id FROM sbtest1) p, (SELECT a FROM t2) q WHERE p.id = q.a",
    "SELECT x FROM (SELECT y AS x FROM (SELECT id AS y FROM sbtest1 WHERE id > 1) i) o",
    "SELECT u.v FROM (SELECT id AS v FROM sbtest1 UNION SELECT a FROM t2) u WHERE u.v > 1",
    "SELECT COUNT(*) FROM (SELECT s.id FROM sbtest1 s JOIN t2 ON t2.a = s.k) j",
    "SELECT t2.a, d.one FROM t2, (SELECT 1 AS one) d FOR UPDATE",
    "SELECT a FROM t2 WHERE a IN (SELECT v FROM (SELECT k AS v FROM sbtest1) d)",
    "SELECT * FROM t3 JOIN (SELECT t2.a, s.id FROM t2 JOIN sbtest1 s ON s.id = t2.a) j \
     ON j.a = t3.a",
    // CTE uses: once, twice (a self-join), with a column list, chained, in a subquery.
    "WITH w AS (SELECT 1 AS x) SELECT x FROM w",
    "WITH c AS (SELECT id, k FROM sbtest1) SELECT p.id, q.id FROM c p JOIN c q ON p.k = q.k",
    "WITH c (n, m) AS (SELECT a, b FROM t2) SELECT * FROM c WHERE n > 1",
    "WITH c AS (SELECT id FROM sbtest1), e AS (SELECT id FROM c WHERE id > 1) \
     SELECT * FROM e ORDER BY id",
    "WITH c AS (SELECT k FROM sbtest1) SELECT a FROM t2 WHERE a IN (SELECT k FROM c)",
    "WITH c AS (SELECT a FROM t2 UNION ALL SELECT a FROM t3) SELECT a, COUNT(*) FROM c GROUP BY a",
];

/// Errors after the FROM clause resolves: binding fails, and so does the statement.
const ERRORS: &[&str] = &[
    "SELECT nope FROM t2 JOIN t3 ON t3.a = t2.a",
    "SELECT * FROM t2 JOIN t3 ON t3.zz = t2.a",
    "SELECT a FROM t2 JOIN t3 ON t3.a = t2.a",
    "SELECT x.* FROM t2 JOIN t3 ON t3.a = t2.a",
    "SELECT n FROM (SELECT 1 AS m) d",
];

/// Set operations (D1d): SetOp nodes over their operands' plans.
const SET_OPS: &[&str] = &[
    "SELECT id FROM sbtest1 UNION SELECT a FROM t2",
    "SELECT id FROM sbtest1 UNION ALL SELECT a FROM t2 ORDER BY 1 DESC LIMIT 2",
    "SELECT id FROM sbtest1 UNION DISTINCT SELECT a FROM t2 ORDER BY id LIMIT 1 OFFSET 1",
    "SELECT k FROM sbtest1 INTERSECT SELECT a FROM t2",
    "SELECT k FROM sbtest1 INTERSECT ALL SELECT a FROM t3",
    "SELECT id FROM sbtest1 EXCEPT SELECT a FROM t2 ORDER BY 1",
    "SELECT id FROM sbtest1 EXCEPT ALL SELECT a FROM t3",
    "SELECT id FROM sbtest1 UNION SELECT a FROM t2 EXCEPT SELECT 2 UNION ALL SELECT 9",
    "SELECT 1 UNION (SELECT 2 INTERSECT SELECT 2)",
    "(SELECT id FROM sbtest1 ORDER BY id DESC LIMIT 2) UNION ALL (SELECT a FROM t2 LIMIT 1)",
    "(SELECT id FROM sbtest1 ORDER BY id LIMIT 3) ORDER BY id DESC LIMIT 1",
    "SELECT 1, 'x' UNION ALL SELECT 2.5, 3 UNION ALL SELECT NULL, NULL",
    "SELECT c FROM sbtest1 UNION SELECT b FROM t2 ORDER BY c",
    "WITH w AS (SELECT 1 AS x) SELECT x FROM w UNION SELECT 2",
    "SELECT a FROM t2 WHERE a IN (SELECT id FROM sbtest1 UNION SELECT 3)",
    "SELECT s.id FROM sbtest1 s JOIN t3 ON t3.id = s.id UNION SELECT COUNT(*) FROM t2",
];

/// Set operations whose binding fails.
const SET_OP_ERRORS: &[&str] = &[
    "SELECT id FROM sbtest1 UNION SELECT id, k FROM sbtest1",
    "SELECT id FROM sbtest1 UNION SELECT a FROM t2 ORDER BY nope",
    "SELECT id FROM sbtest1 UNION SELECT a FROM t2 ORDER BY t2.a",
];

/// FOR UPDATE with no table to lock: the lock is dropped (nothing to lock), and a subquery
/// is then no reason to refuse.
const NO_LOCK: &[&str] = &[
    "SELECT 1 FROM DUAL FOR UPDATE",
    "SELECT x FROM (SELECT 1 AS x) d FOR UPDATE",
    "SELECT (SELECT COUNT(*) FROM t2) FROM DUAL FOR UPDATE",
    "SELECT d.a FROM (SELECT a FROM t2) d WHERE d.a IN (SELECT id FROM t3) FOR UPDATE",
];

#[test]
fn blocks_bind_lower_and_run() {
    with_session("corpus", |s| {
        for sql in NEW_PATH.iter().chain(JOINS).chain(SET_OPS) {
            let b = bound(s, sql, &|_| {}).unwrap_or_else(|| panic!("{sql}: did not bind"));
            assert!(b.is_ok(), "{sql}: {b:?}");
            if !sql.contains('?') {
                let r = s.query(sql).pop().expect("one result");
                assert!(matches!(r, Ok(Outcome::Rows { .. })), "{sql}: {r:?}");
            }
        }
        for sql in NO_LOCK {
            let b = bound(s, sql, &|_| {}).unwrap_or_else(|| panic!("{sql}: did not bind"));
            let plan = b.unwrap_or_else(|e| panic!("{sql}: {e:?}"));
            assert!(!plan.for_update, "{sql}: locks");
            let r = s.query(sql).pop().expect("one result");
            assert!(matches!(r, Ok(Outcome::Rows { .. })), "{sql}: {r:?}");
        }
        // With a table to lock, FOR UPDATE still locks, with subqueries too (E5).
        let b = bound(s, "SELECT a FROM t2 FOR UPDATE", &|_| {}).expect("binds");
        assert!(b.is_ok_and(|p| p.for_update));
        let r = s.query("SELECT a, (SELECT 1) FROM t2 FOR UPDATE").pop();
        assert!(matches!(r, Some(Ok(Outcome::Rows { .. }))), "{r:?}");
    });
}

#[test]
fn binding_errors_stay_errors() {
    with_session("errors", |s| {
        for sql in ERRORS.iter().chain(SET_OP_ERRORS) {
            let b = bound(s, sql, &|_| {}).unwrap_or_else(|| panic!("{sql}: did not bind"));
            assert!(b.is_err(), "{sql}: {b:?}");
            let r = s.query(sql).pop().expect("one result");
            assert!(r.is_err(), "{sql}: {r:?}");
        }
    });
}

/// Statements over the fixture's rows and what they give, one way per plan shape.
const RESULTS: &[(&str, &[&str])] = &[
    ("SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3 ORDER BY c", &["12-34", "123-9", "56-78"]),
    ("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 3", &["11"]),
    ("SELECT k, COUNT(*) FROM sbtest1 GROUP BY k HAVING COUNT(*) > 1", &["3|2"]),
    ("SELECT id FROM sbtest1 ORDER BY id DESC LIMIT 2 OFFSET 1", &["3", "2"]),
    ("SELECT DISTINCT k FROM sbtest1 ORDER BY k", &["3", "5", "7"]),
    (
        "SELECT t2.a, t3.id FROM t2 LEFT JOIN t3 ON t3.a = t2.a ORDER BY t2.a, t3.id",
        &["1|1", "1|2", "2|NULL", "3|3"],
    ),
    ("SELECT t2.a, t3.id FROM t3 RIGHT JOIN t2 USING (a) ORDER BY 1, 2", &["1|1", "1|2", "2|NULL", "3|3"]),
    ("SELECT COUNT(*) FROM t2, t3", &["12"]),
    ("SELECT d.n FROM (SELECT COUNT(*) n FROM t3 WHERE a = 1) d", &["2"]),
    ("WITH w AS (SELECT a FROM t2 WHERE b = 'one') SELECT x.a FROM w x JOIN w y ON x.a = y.a ORDER BY 1", &["1", "3"]),
    ("SELECT a FROM t2 UNION SELECT a FROM t3 ORDER BY 1 DESC", &["9", "3", "2", "1"]),
    ("SELECT a FROM t2 INTERSECT SELECT a FROM t3 ORDER BY 1", &["1", "3"]),
    ("SELECT a FROM t2 EXCEPT SELECT a FROM t3", &["2"]),
    ("SELECT a FROM t3 UNION ALL SELECT a FROM t3 ORDER BY 1 LIMIT 3", &["1", "1", "1"]),
    ("SELECT a FROM t2 WHERE a IN (SELECT a FROM t3) ORDER BY a", &["1", "3"]),
    ("SELECT (SELECT COUNT(*) FROM t3 WHERE t3.a = t2.a) FROM t2 ORDER BY a", &["2", "0", "1"]),
    ("SELECT x FROM (SELECT 1 AS x UNION SELECT 2) u ORDER BY x", &["1", "2"]),
    ("SELECT 1 FROM DUAL FOR UPDATE", &["1"]),
];

#[test]
fn results_are_the_expected_ones() {
    with_session("results", |s| {
        for (sql, want) in RESULTS {
            assert!(bound(s, sql, &|_| {}).is_some_and(|b| b.is_ok()), "{sql}");
            assert_eq!(rows_of(s, sql), *want, "{sql}");
        }
    });
}

/// The differential tester's regression scripts for joins, derived tables and CTEs
/// (tests/diff/regressions), each in a database of its own.
const SCRIPTS: &[(&str, &str)] = &[
    (
        "joins",
        include_str!("../../../../tests/diff/regressions/joins-subqueries-unions.sql"),
    ),
    (
        "rightusing",
        include_str!("../../../../tests/diff/regressions/right-join-using.sql"),
    ),
    (
        "derived",
        include_str!("../../../../tests/diff/regressions/derived-tables.sql"),
    ),
    (
        "cte",
        include_str!("../../../../tests/diff/regressions/with-cte.sql"),
    ),
    (
        "setops",
        include_str!("../../../../tests/diff/regressions/intersect-except.sql"),
    ),
];

#[test]
fn regression_scripts_bind_and_run() {
    with_session("scripts", |s| {
        let mut checked = 0;
        for (db, script) in SCRIPTS {
            for sql in [format!("CREATE DATABASE {db}"), format!("USE {db}")] {
                assert!(s.query(&sql).pop().expect("one result").is_ok(), "{sql}");
            }
            let stmts = script
                .lines()
                .filter(|l| !l.starts_with("--") && !l.trim().is_empty())
                .map(|l| l.trim().trim_end_matches(';'));
            for sql in stmts {
                let query = ["SELECT", "WITH", "("].iter().any(|w| sql.starts_with(w));
                let b = query.then(|| bound(s, sql, &|_| {})).flatten();
                let r = s.query(sql).pop().expect("one result");
                match &b {
                    Some(b) => {
                        // A compile error is the statement's error (a plan may fail running).
                        assert!(b.is_ok() || r.is_err(), "{db}: {sql}: {r:?}");
                        checked += 1;
                    }
                    // Not a query, or a FROM clause that fails.
                    None => assert!(!query || r.is_err(), "{db}: {sql}: did not bind"),
                }
            }
        }
        // The five scripts hold 68 queries, 5 of them with a FROM clause that fails (a table
        // named twice, USING an unknown column, a derived table without an alias or with a
        // duplicate column, a CTE's column list of the wrong length).
        assert_eq!(checked, 63);
    });
}

/// Flips the direction of the plan's first sort key.
fn flip_sort(p: &mut LogicalPlan) {
    match p {
        LogicalPlan::Sort { keys, .. } => keys[0].desc = !keys[0].desc,
        LogicalPlan::Limit { input, .. } | LogicalPlan::Distinct { input, .. } => flip_sort(input),
        _ => panic!("no Sort to alter"),
    }
}

/// Drops the WHERE Filter above the Scan.
fn drop_where(p: &mut LogicalPlan) {
    match p {
        LogicalPlan::Filter { input, .. } if matches!(**input, LogicalPlan::Scan { .. }) => {
            *p = (**input).clone();
        }
        LogicalPlan::Limit { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Distinct { input, .. }
        | LogicalPlan::Project { input, .. }
        | LogicalPlan::Filter { input, .. }
        | LogicalPlan::Aggregate { input, .. } => drop_where(input),
        _ => panic!("no WHERE to drop"),
    }
}

/// The Join at the top of the FROM side, under the block's other nodes.
fn top_join(p: &mut LogicalPlan) -> &mut LogicalPlan {
    match p {
        LogicalPlan::Join { .. } => p,
        LogicalPlan::Limit { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Distinct { input, .. }
        | LogicalPlan::Project { input, .. }
        | LogicalPlan::Filter { input, .. }
        | LogicalPlan::Aggregate { input, .. } => top_join(input),
        _ => panic!("no Join to alter"),
    }
}

/// A LEFT JOIN becomes an inner one and the other way round.
fn flip_join_kind(p: &mut LogicalPlan) {
    if let LogicalPlan::Join { kind, .. } = top_join(p) {
        *kind = match kind {
            JoinKind::Left => JoinKind::Inner,
            JoinKind::Inner => JoinKind::Left,
        };
    }
}

/// The top Join loses its ON.
fn drop_on(p: &mut LogicalPlan) {
    if let LogicalPlan::Join { on, .. } = top_join(p) {
        assert!(on.take().is_some(), "no ON to drop");
    }
}

/// The top SetOp's UNION ALL becomes UNION (and the other way round).
fn flip_all(p: &mut LogicalPlan) {
    match p {
        LogicalPlan::SetOp { all, .. } => *all = !*all,
        LogicalPlan::Limit { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Project { input, .. } => flip_all(input),
        _ => panic!("no SetOp to alter"),
    }
}

/// The input of the first Derived in the plan (left to right).
fn derived_input(p: &mut LogicalPlan) -> Option<&mut LogicalPlan> {
    match p {
        LogicalPlan::Derived { input, .. } => Some(input),
        LogicalPlan::Join { left, right, .. } => match derived_input(left) {
            Some(d) => Some(d),
            None => derived_input(right),
        },
        LogicalPlan::Limit { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Distinct { input, .. }
        | LogicalPlan::Project { input, .. }
        | LogicalPlan::Filter { input, .. }
        | LogicalPlan::Aggregate { input, .. } => derived_input(input),
        _ => None,
    }
}

/// The derived table's own block with its first sort key flipped.
fn flip_derived_sort(p: &mut LogicalPlan) {
    flip_sort(derived_input(p).expect("a derived table"));
}

#[test]
fn derived_blocks_bind_to_plans_of_their_own() {
    with_session("derived", |s| {
        // What the first derived table's input is: the block's top node, or a Compiled query.
        let cases = [
            ("SELECT * FROM (SELECT a FROM t2 WHERE a > 1) d", "Project"),
            (
                "SELECT * FROM (SELECT a FROM t2 ORDER BY b LIMIT 1) d",
                "Limit",
            ),
            (
                "WITH c AS (SELECT DISTINCT b FROM t2) SELECT * FROM t3, c",
                "Distinct",
            ),
            (
                "SELECT * FROM t3 LEFT JOIN (SELECT k, COUNT(*) n FROM sbtest1 GROUP BY k) d \
                 ON d.k = t3.a",
                "Project",
            ),
            (
                "SELECT * FROM (SELECT a FROM t2 UNION SELECT id FROM t3) u",
                "Compiled",
            ),
        ];
        for (sql, top) in cases {
            let seen = std::cell::RefCell::new(String::new());
            let record = |p: &mut LogicalPlan| {
                let d = derived_input(p).expect("a derived table");
                let name = format!("{d:?}");
                *seen.borrow_mut() = name.split([' ', '{']).next().unwrap_or("").to_string();
            };
            let b = bound(s, sql, &record).unwrap_or_else(|| panic!("{sql}: did not bind"));
            assert_eq!(*seen.borrow(), top, "{sql}");
            assert!(b.is_ok(), "{sql}: {b:?}");
        }
    });
}

#[test]
fn an_altered_plan_lowers_to_another_plan() {
    with_session("fires", |s| {
        let cases: [(&str, &dyn Fn(&mut LogicalPlan)); 8] = [
            (
                "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3 ORDER BY c",
                &flip_sort,
            ),
            (
                "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 3",
                &drop_where,
            ),
            (
                "SELECT t2.a, t3.id FROM t2 LEFT JOIN t3 ON t3.a = t2.a",
                &flip_join_kind,
            ),
            (
                "SELECT t2.a, t3.id FROM t2 JOIN t3 ON t3.a = t2.a",
                &flip_join_kind,
            ),
            (
                "SELECT t2.a, d.n FROM t2 JOIN (SELECT k, COUNT(*) n FROM sbtest1 GROUP BY k) d \
                 ON d.k = t2.a",
                &drop_on,
            ),
            (
                "SELECT * FROM (SELECT a, b FROM t2 ORDER BY b LIMIT 2) AS d WHERE d.a > 1",
                &flip_derived_sort,
            ),
            (
                "SELECT id FROM sbtest1 UNION ALL SELECT a FROM t2 ORDER BY 1",
                &flip_all,
            ),
            (
                "SELECT id FROM sbtest1 UNION SELECT a FROM t2 ORDER BY 1 DESC",
                &flip_sort,
            ),
        ];
        for (sql, alter) in cases {
            let plain = bound(s, sql, &|_| {}).expect("binds");
            let altered = bound(s, sql, alter).expect("binds");
            let (plain, altered) = (format!("{plain:?}"), format!("{altered:?}"));
            assert!(
                plain.starts_with("Ok(") && altered.starts_with("Ok("),
                "{sql}"
            );
            assert_ne!(plain, altered, "{sql}: lowering ignored the change");
        }
    });
}
