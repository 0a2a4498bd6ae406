//! Streamed and buffered SELECTs agree (step E2): over a corpus of single-table queries each
//! runs both ways (the buffered way forced by `operator::BUFFERED_ONLY`), and the results,
//! errors and SHOW WARNINGS after them must be the same. The corpus also says which
//! queries stream, so that a change of `operator::streams` shows here.

use crate::bind::compile::Compiler;
use crate::exec::operator::{streams, BUFFERED_ONLY};
use crate::front::parse::parse_ast;
use crate::instance::session::Session;
use crate::plan::dml::Plan;

/// (query, whether it streams)
const CORPUS: &[(&str, bool)] = &[
    ("SELECT * FROM t WHERE id = 5", true),
    ("SELECT * FROM t WHERE id IN (3, 7, 9999, 1)", true),
    (
        "SELECT * FROM t WHERE id IN (3, 7, 1) ORDER BY id DESC",
        true,
    ),
    ("SELECT id, k FROM t WHERE id BETWEEN 10 AND 20", true),
    ("SELECT id FROM t WHERE id > 1990", true),
    ("SELECT id FROM t WHERE id < 15 ORDER BY id DESC", true),
    ("SELECT id FROM t ORDER BY id DESC LIMIT 5 OFFSET 3", true),
    ("SELECT id FROM t ORDER BY id LIMIT 1995, 10", true),
    ("SELECT * FROM t WHERE k = 7", true),
    (
        "SELECT id, k FROM t WHERE k BETWEEN 3 AND 5 ORDER BY k DESC",
        false,
    ),
    ("SELECT id FROM t WHERE k IN (1, 2) ORDER BY k", false),
    ("SELECT id FROM t WHERE k > 90 AND id % 3 = 0", true),
    ("SELECT * FROM t LIMIT 0", true),
    ("SELECT * FROM t WHERE 1 = 0", true),
    ("SELECT id FROM t WHERE id < 600 AND 1 = 1", true),
    ("SELECT * FROM t", true),
    ("SELECT id, c FROM t LIMIT 7", true),
    // Filters and select lists that warn: how many, in which order, and which rows' do.
    ("SELECT id FROM t WHERE c + 0 > 3 LIMIT 4", true),
    ("SELECT id, c / 0 FROM t WHERE id < 5", true),
    ("SELECT id, CAST(c AS SIGNED) FROM t LIMIT 2 OFFSET 3", true),
    ("SELECT id FROM t WHERE id = '5x'", true),
    ("SELECT id, k / 0 FROM t ORDER BY id DESC LIMIT 3", true),
    ("SELECT id, 1 / 0 FROM t WHERE k = 3 ORDER BY k, id", false),
    // Errors.
    ("SELECT id FROM t WHERE c REGEXP '('", true),
    (
        "SELECT id, IF(id > 1500, CAST(c AS DECIMAL(65, 100)), 0) FROM t",
        true,
    ),
    ("SELECT 1", true),
    ("SELECT 1 / 0, 'a' + 1", true),
    ("SELECT 1 FROM DUAL WHERE 0", true),
    ("SELECT 2 LIMIT 1 OFFSET 1", true),
    (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'd'",
        true,
    ),
    // Shapes that stay buffered, for comparison.
    ("SELECT id FROM t ORDER BY c DESC, id LIMIT 3", false),
    ("SELECT DISTINCT k FROM t WHERE id < 300", false),
    ("SELECT k, COUNT(*) FROM t GROUP BY k LIMIT 3", false),
    (
        "SELECT id FROM t WHERE id IN (SELECT k FROM t) LIMIT 5",
        false,
    ),
    ("SELECT * FROM t WHERE id = 5 FOR UPDATE", false),
];

fn with_session(f: impl FnOnce(&mut Session)) {
    let dir = std::env::temp_dir().join(format!("zipdb-stream-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let (_db, inst) = crate::Instance::open_for_tests(&dir);
        let mut s = inst.session("root", 1);
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(40), KEY k_1 (k))",
        ] {
            assert!(s.query(sql).pop().expect("a result").is_ok(), "{sql}");
        }
        let values: Vec<String> = (0..2000)
            .map(|i| format!("({i}, {}, '{}abc')", i % 97, i % 13))
            .collect();
        let insert = format!("INSERT INTO t VALUES {}", values.join(","));
        assert!(s.query(&insert).pop().expect("a result").is_ok());
        f(&mut s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The query's result and the SHOW WARNINGS after it, printed.
fn run(s: &mut Session, sql: &str, buffered: bool) -> String {
    BUFFERED_ONLY.set(buffered);
    let r = s.query(sql);
    BUFFERED_ONLY.set(false);
    let w = s.query("SHOW WARNINGS");
    format!("{r:?}\n{w:?}")
}

#[test]
fn streamed_and_buffered_selects_give_the_same_rows_warnings_and_errors() {
    with_session(|s| {
        let mut warned = 0;
        let mut failed = 0;
        for &(sql, streamed) in CORPUS {
            s.text = sql.to_string();
            let stmts = parse_ast(sql).expect("parses");
            let crate::front::Statement::Dml(ast) =
                crate::front::Statement::from_ast(stmts.into_iter().next().expect("one statement"))
            else {
                panic!("{sql}: not DML");
            };
            // A statement that does not compile fails alike both ways (checked below).
            if let Ok(root) = s.compile(&ast, &mut Compiler::new()) {
                let Plan::Select(p) = root.plan else {
                    panic!("{sql}: not a SELECT");
                };
                assert_eq!(streams(&p), streamed, "{sql}");
            }
            let a = run(s, sql, false);
            let b = run(s, sql, true);
            assert_eq!(a, b, "{sql}");
            warned += usize::from(a.contains("Warning"));
            failed += usize::from(a.contains("Err("));
        }
        // The corpus exercises what it means to: warnings and errors, not only rows.
        assert!(warned >= 6, "{warned}");
        assert!(failed >= 1, "{failed}");
    });
}
