//! D1b's shadow check over a corpus: query blocks over one table or none are compiled through
//! the LogicalPlan (bind, then `plan::lower`) and the old way, and the two `SelectPlan`s must
//! print the same; the other shapes must stay on the old path; and an altered plan must make
//! the check fire.

use std::panic::{catch_unwind, AssertUnwindSafe};

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::bind::env::Env;
use crate::bind::select::shadow::{check, compare};
use crate::bind::select::{both_ways, compile_select};
use crate::front::parse::parse_ast;
use crate::instance::session::Session;
use crate::plan::logical::node::LogicalPlan;
use crate::plan::select::SelectPlan;
use crate::types::result::Outcome;
use crate::SqlError;

type Both = (
    Result<SelectPlan, SqlError>,
    Compiler,
    Result<SelectPlan, SqlError>,
    Compiler,
);

/// The statement's block compiled both ways (`None`: it stays on the old path).
fn both(s: &mut Session, sql: &str, alter: &dyn Fn(&mut LogicalPlan)) -> Option<Both> {
    s.text = sql.to_string();
    let stmts = parse_ast(sql).expect("parses");
    let ast::Statement::Query(q) = &stmts[0] else {
        panic!("{sql}: not a query");
    };
    let lookup = s.env_lookup();
    let vars = |n: &str| s.sysvar(n);
    let env = Env {
        db: s.db.as_deref(),
        lookup: &lookup,
        vars: &vars,
        outer: None,
        sql: Some(sql),
        ctes: &[],
        compile_query: &compile_select,
    };
    both_ways(q, &env, &mut Compiler::new(), alter)
}

fn texts(b: &Both) -> (String, String) {
    (
        format!("{:?}\n{:?}", b.0, b.1),
        format!("{:?}\n{:?}", b.2, b.3),
    )
}

fn with_session(name: &str, f: impl FnOnce(&mut Session)) {
    let dir = std::env::temp_dir().join(format!("zipdb-shadow-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let db = zipdb_engine::Database::open(
            &dir,
            zipdb_engine::Options {
                pool_bytes: 8 << 20,
                wal_bytes: 8 << 20,
                recovery_progress: false,
                ..Default::default()
            },
        )
        .expect("open the test database");
        let inst = crate::Instance::open(db, Default::default()).expect("open catalog");
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

/// Shapes that stay on the old path until D1c/D1d.
const OLD_PATH: &[&str] = &[
    "SELECT a.id, b.b FROM sbtest1 a JOIN t2 b ON a.id = b.a",
    "SELECT * FROM sbtest1, t2 WHERE sbtest1.id = t2.a",
    "SELECT * FROM t2 LEFT JOIN sbtest1 ON t2.a = sbtest1.k",
    "SELECT id FROM (SELECT id FROM sbtest1) AS dt",
    "SELECT id FROM sbtest1 UNION SELECT a FROM t2",
    "WITH w AS (SELECT 1 AS x) SELECT x FROM w",
    "SELECT 1 FROM DUAL FOR UPDATE",
];

#[test]
fn single_table_blocks_lower_to_the_old_plan() {
    with_session("corpus", |s| {
        for sql in NEW_PATH {
            let b = both(s, sql, &|_| {}).unwrap_or_else(|| panic!("{sql}: took the old path"));
            assert!(b.0.is_ok(), "{sql}: {:?}", b.0);
            let (new, old) = texts(&b);
            if let Err(diff) = compare(&new, &old) {
                panic!("{sql}: {diff}");
            }
            if !sql.contains('?') {
                // Through the session too, whose compile runs the check itself.
                let r = s.query(sql).pop().expect("one result");
                assert!(matches!(r, Ok(Outcome::Rows { .. })), "{sql}: {r:?}");
            }
        }
        for sql in OLD_PATH {
            assert!(both(s, sql, &|_| {}).is_none(), "{sql}: took the new path");
            let r = s.query(sql).pop().expect("one result");
            assert!(r.is_ok(), "{sql}: {r:?}");
        }
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

#[test]
fn an_altered_plan_makes_the_shadow_check_fire() {
    with_session("fires", |s| {
        let cases: [(&str, &dyn Fn(&mut LogicalPlan)); 2] = [
            (
                "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3 ORDER BY c",
                &flip_sort,
            ),
            (
                "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 3",
                &drop_where,
            ),
        ];
        for (sql, alter) in cases {
            let b = both(s, sql, alter).expect("takes the new path");
            assert!(b.0.is_ok(), "{sql}: {:?}", b.0);
            let (new, old) = texts(&b);
            let diff = compare(&new, &old).expect_err("the altered plan differs");
            assert!(diff.contains(&new) && diff.contains(&old), "{diff}");
            // The check itself panics on the same pair.
            let (n, nc, o, oc) = b;
            let fired = catch_unwind(AssertUnwindSafe(|| check(&n, &nc, || (o, oc))));
            assert!(fired.is_err(), "{sql}: the shadow check did not fire");
        }
    });
}
