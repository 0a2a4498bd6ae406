//! Statements shaped the way a hostile (or careless) client sends them: several in one text,
//! long operator chains, deep nesting. Every one must end in a result or a MySQL error, never
//! in a stack overflow (which aborts the whole server). Each runs on a thread with exactly
//! [`zipdb_sql::STATEMENT_STACK_BYTES`] of stack, as the server's connection threads have.

use std::sync::Arc;

use zipdb_sql::{Instance, Outcome, Session, SqlError};

mod common;
use common::{fixture as open_fixture, Fixture};

fn fixture() -> Fixture {
    open_fixture("hostile")
}

/// Runs `f` on a thread with `bytes` of stack.
fn on_stack<T: Send + 'static>(bytes: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(bytes)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("the statement thread panicked")
}

fn session(inst: &Arc<Instance>) -> Session {
    let mut s = inst.session("root", 1);
    for sql in [
        "CREATE DATABASE IF NOT EXISTS d",
        "USE d",
        "CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v VARCHAR(10))",
    ] {
        assert!(s.query(sql).pop().expect("a result").is_ok(), "{sql}");
    }
    s
}

/// The one result of `sql`: its single value as text, or the error.
fn one(s: &mut Session, sql: &str) -> Result<String, SqlError> {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "one result for {}", &sql[..sql.len().min(60)]);
    match r.pop().expect("one")? {
        Outcome::Rows { rows, .. } => Ok(rows[0][0]
            .to_string_lossy()
            .unwrap_or_else(|| "NULL".into())),
        Outcome::Done { affected_rows, .. } => Ok(affected_rows.to_string()),
    }
}

fn code(r: Result<String, SqlError>) -> u16 {
    match r {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => e.code(),
    }
}

#[test]
fn several_statements_in_one_text_each_get_a_result() {
    let f = fixture();
    let mut s = session(&f.inst);
    let r = s.query("SELECT 1; SELECT 2 ; SELECT ';' /* ; */; -- x;y\n");
    let values: Vec<String> = r
        .into_iter()
        .map(|r| match r.expect("ok") {
            Outcome::Rows { rows, .. } => rows[0][0].to_string_lossy().unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(values, ["1", "2", ";"]);
    // The first error ends the list: the statement after it does not run.
    let r =
        s.query("INSERT INTO t VALUES (1, 'a'); SELECT * FROM nope; INSERT INTO t VALUES (2, 'b')");
    assert_eq!(r.len(), 2);
    assert!(r[0].is_ok());
    assert_eq!(r[1].as_ref().unwrap_err().code(), 1146);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "1");
    // Comments and quotes that hold `;` are one statement.
    assert_eq!(one(&mut s, "SELECT 1 /* a;b */").unwrap(), "1");
    assert_eq!(one(&mut s, "SELECT 1 -- x;y").unwrap(), "1");
    assert_eq!(one(&mut s, "SHOW TABLES /* ; */").unwrap(), "t");
    // Without CLIENT_MULTI_STATEMENTS: MySQL's syntax error, and nothing runs.
    s.set_multi_statements(false);
    let r = s.query("INSERT INTO t VALUES (3, 'c'); SELECT 2");
    assert_eq!(r.len(), 1);
    let e = r[0].as_ref().unwrap_err();
    assert_eq!(e.code(), 1064);
    assert!(e.message().contains("near 'SELECT 2'"), "{}", e.message());
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "1");
    assert_eq!(one(&mut s, "SELECT 5;").unwrap(), "5");
    // A stored program is one statement (with `;` in its body), refused as one.
    s.set_multi_statements(true);
    let r = s.query(
        "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.v = 'x'; SET NEW.id = 1; END",
    );
    assert_eq!(r.len(), 1);
    assert!(r[0].is_err());
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "1");
    // Empty texts.
    assert_eq!(code(one(&mut s, ";;")), 1065);
    assert_eq!(code(one(&mut s, "/* nothing */")), 1065);
}

/// The split reads texts on the tokenizer a window at a time: texts of nothing but `;`, many
/// statements, quotes and comments left open after a statement, and deep nesting after a
/// `;` end in results or errors, on a connection thread's stack.
#[test]
fn semicolon_texts_and_open_quotes_end_in_results_or_errors() {
    let f = fixture();
    let inst = Arc::clone(&f.inst);
    on_stack(zipdb_sql::STATEMENT_STACK_BYTES, move || {
        let mut s = session(&inst);
        assert_eq!(code(one(&mut s, ";")), 1065);
        assert_eq!(code(one(&mut s, &";".repeat(1 << 20))), 1065);
        assert_eq!(code(one(&mut s, &" ;\n-- c\n".repeat(100_000))), 1065);
        let r = s.query(&"SELECT 1;".repeat(20_000));
        assert_eq!(r.len(), 20_000);
        assert!(r.iter().all(Result::is_ok));
        // A quote left open is the last statement's error; a comment left open is a comment.
        let long = "x".repeat(200_000);
        for (sql, n, err) in [
            (format!("SELECT 1; SELECT '{long}"), 2, Some(1064)),
            (format!("SELECT 1; SELECT `{long}"), 2, Some(1064)),
            (format!("SELECT 1; /* {long}"), 1, None),
            (format!("SELECT 1; -- {long}"), 1, None),
            (format!("SELECT ';{long}'; SELECT 2"), 2, None),
        ] {
            let r = s.query(&sql);
            assert_eq!(r.len(), n, "{}", &sql[..30]);
            assert!(r[0].is_ok(), "{}", &sql[..30]);
            assert_eq!(r[n - 1].as_ref().err().map(SqlError::code), err);
        }
        let deep = format!(
            "SELECT 1; SELECT {}1{}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        let r = s.query(&deep);
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].as_ref().unwrap_err().code(), 1436);
    });
}

/// On a thread of the size the server gives connections (no stack is allocated then).
#[test]
fn long_chains_and_deep_nesting_end_in_a_result_or_an_error() {
    let f = fixture();
    let inst = Arc::clone(&f.inst);
    on_stack(zipdb_sql::STATEMENT_STACK_BYTES, move || {
        deep_statements(&inst)
    });
}

/// On a small thread (an embedding application's): each statement gets a stack of its own.
/// 8 MiB (or less) overflows on the deepest shapes without it.
#[test]
fn deep_statements_on_a_small_thread_get_a_stack_of_their_own() {
    let f = fixture();
    let inst = Arc::clone(&f.inst);
    on_stack(2 << 20, move || deep_statements(&inst));
}

fn deep_statements(inst: &Arc<Instance>) {
    {
        let mut s = session(inst);
        for i in 0..50 {
            let sql = format!("REPLACE INTO t VALUES ({}, 'v{i}')", i * 3);
            assert!(s.query(&sql).pop().unwrap().is_ok());
        }
        let chain = |n: usize, op: &str| (0..n).map(|_| "1").collect::<Vec<_>>().join(op);
        let nest =
            |n: usize, open: &str, close: &str| format!("{}1{}", open.repeat(n), close.repeat(n));
        // Chains that ORMs and generators send: they work.
        assert_eq!(
            one(&mut s, &format!("SELECT {}", chain(1_500, "+"))).unwrap(),
            "1500"
        );
        assert_eq!(
            one(&mut s, &format!("SELECT {}", chain(1_900, "*"))).unwrap(),
            "1"
        );
        let ors: Vec<String> = (0..10_000).map(|i| format!("id = {i}")).collect();
        let sql = format!("SELECT COUNT(*) FROM t WHERE {}", ors.join(" OR "));
        assert_eq!(one(&mut s, &sql).unwrap(), "50");
        let list: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
        let sql = format!("SELECT COUNT(*) FROM t WHERE id IN ({})", list.join(","));
        assert_eq!(one(&mut s, &sql).unwrap(), "50");
        let ands: Vec<String> = (0..10_000)
            .map(|i| format!("id <> {}", i * 3 + 1))
            .collect();
        let sql = format!("SELECT COUNT(*) FROM t WHERE {}", ands.join(" AND "));
        assert_eq!(one(&mut s, &sql).unwrap(), "50");
        let sql = format!(
            "SELECT COUNT(*) FROM t WHERE id = -1 || {}",
            chain(10_000, " || ")
        );
        assert_eq!(one(&mut s, &sql).unwrap(), "50");
        let sql = format!("SELECT {}", chain(10_000, " XOR "));
        assert_eq!(one(&mut s, &sql).unwrap(), "0");
        // 1,000 nested parentheses work, as in MySQL.
        assert_eq!(
            one(&mut s, &format!("SELECT {}", nest(1_000, "(", ")"))).unwrap(),
            "1"
        );
        // Every nesting shape, at the deepest the limits accept and far beyond: a result or
        // 1436/1064/1473, never a crash.
        let deep_shapes = |n: usize| {
            vec![
                format!("SELECT {}", nest(n, "(", ")")),
                format!("SELECT {}", nest(n, "-(", ")")),
                format!("SELECT {}", nest(n, "ABS(", ")")),
                format!("SELECT {}", nest(n, "1+(", ")")),
                format!("SELECT {}", nest(n, "NOT ", "")),
                format!("SELECT {}", nest(n, "- ", "")),
                format!("SELECT {}", nest(n, "CASE WHEN 1 THEN ", " END")),
                format!("SELECT {}", nest(n, "COALESCE(NULL, ", ")")),
                format!("SELECT {}", nest(n, "CONCAT('a', ", ")")),
                format!("SELECT 1{}", " IS NOT NULL".repeat(n)),
                format!("SELECT 1{}", " = 1".repeat(n)),
                format!("SELECT {}", chain(n, "-")),
                format!(
                    "SELECT id FROM t WHERE {}",
                    nest(n, "(", ")").replace('1', "id = 3")
                ),
                format!("SELECT {}", nest(n.min(200), "(SELECT ", ")")),
                format!(
                    "SELECT * FROM {}",
                    nest(n.min(200), "(SELECT * FROM ", ") AS x").replace('1', "t")
                ),
            ]
        };
        for n in [900, 1_990, 2_100, 5_000, 100_000] {
            for sql in deep_shapes(n) {
                let r = one(&mut s, &sql);
                if let Err(e) = &r {
                    assert!(
                        matches!(e.code(), 1436 | 1064 | 1473 | 1690 | 1235 | 1054),
                        "n={n} {}: {e:?}",
                        &sql[..60]
                    );
                }
            }
        }
        // A chain far past the depth limit: 1436.
        assert_eq!(
            code(one(&mut s, &format!("SELECT {}", chain(70_000, "+")))),
            1436
        );
        // Chains of set operations: the longest accepted one runs (the parser builds a tree
        // as deep as the chain; 100,000 operands overflowed the server's stack before the
        // limit), a longer one, nested ones that add up past it, and one of 200,000 are
        // 1436, each taken apart without recursion.
        let selects = |n: usize, op: &str| {
            (0..n)
                .map(|i| format!("SELECT {i}"))
                .collect::<Vec<_>>()
                .join(op)
        };
        let max = zipdb_sql::SET_OPERANDS_MAX;
        let sql = format!(
            "SELECT COUNT(*) FROM ({}) d",
            selects(max - 1, " UNION ALL ")
        );
        assert_eq!(one(&mut s, &sql).unwrap(), (max - 1).to_string());
        // INTERSECT and EXCEPT chains are combined by a loop, not a tree as deep as the chain.
        let sql = format!(
            "SELECT COUNT(*) FROM ({}) d",
            selects(max - 1, " EXCEPT ALL ")
        );
        assert_eq!(one(&mut s, &sql).unwrap(), "1");
        let sql = format!(
            "SELECT COUNT(*) FROM ({}) d",
            selects(max - 1, " INTERSECT ")
        );
        assert_eq!(one(&mut s, &sql).unwrap(), "0");
        assert_eq!(code(one(&mut s, &selects(max + 1, " UNION ALL "))), 1436);
        let inner = format!("({})", selects(max / 2 + 1, " UNION "));
        let nested = format!("{} UNION ALL {inner}", selects(max / 2 + 1, " INTERSECT "));
        assert_eq!(code(one(&mut s, &nested)), 1436);
        for op in [" UNION ALL ", " EXCEPT ", " INTERSECT ALL "] {
            let huge = format!("{} UNION {inner}", selects(200_000, op));
            assert_eq!(code(one(&mut s, &huge)), 1436, "{op}");
        }
        // A prepared statement with 70,000 parameters in one chain.
        let e = s
            .prepare(&format!("SELECT {}", chain(70_000, "+").replace('1', "?")))
            .unwrap_err();
        assert_eq!(e.code(), 1436);
        let p = s
            .prepare(&format!("SELECT {}", chain(1_000, "+").replace('1', "?")))
            .unwrap();
        assert_eq!(p.params, 1_000);
        // The session is still usable.
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "50");
    }
}

fn rows_of(s: &mut Session, sql: &str) -> usize {
    match s.query(sql).pop().expect("a result") {
        Ok(Outcome::Rows { rows, .. }) => rows.len(),
        other => panic!("{sql}: {other:?}"),
    }
}

/// A cross join of 3 x 400 rows: 64M rows, far more than any limit below lets run.
fn big_join_session(inst: &Arc<Instance>) -> Session {
    let mut s = session(inst);
    let values: Vec<String> = (0..400).map(|i| format!("({i}, 'x{i}')")).collect();
    let sql = format!("REPLACE INTO t VALUES {}", values.join(","));
    assert!(s.query(&sql).pop().unwrap().is_ok());
    s
}

const BIG_JOIN: &str = "SELECT a.id, b.id, c.id FROM t a, t b, t c ORDER BY a.v, b.v, c.v LIMIT 5";

#[test]
fn statement_time_limits_stop_statements_with_mysql_and_mariadb_errors() {
    let f = fixture();
    let mut s = big_join_session(&f.inst);
    s.query("SET SESSION max_session_mem_used = 1000000000000");
    // MySQL's max_execution_time (milliseconds, SELECT only): 3024.
    assert!(s
        .query("SET SESSION max_execution_time = 300")
        .pop()
        .unwrap()
        .is_ok());
    assert_eq!(one(&mut s, "SELECT @@max_execution_time").unwrap(), "300");
    let t0 = std::time::Instant::now();
    assert_eq!(code(one(&mut s, BIG_JOIN)), 3024);
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t0.elapsed()
    );
    // The next statement is not hit by the deadline of the one before.
    assert_eq!(rows_of(&mut s, "SELECT * FROM t LIMIT 3"), 3);
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(rows_of(&mut s, "SELECT * FROM t LIMIT 3"), 3);
    // MariaDB's max_statement_time (seconds, every statement): 1969; the earlier one wins.
    s.query("SET max_execution_time = 0");
    s.query("SET max_statement_time = 0.3");
    assert_eq!(code(one(&mut s, BIG_JOIN)), 1969);
    s.query("SET max_execution_time = 100000");
    assert_eq!(code(one(&mut s, BIG_JOIN)), 1969);
    s.query("SET max_statement_time = 0");
    s.query("SET max_execution_time = 0");
    // SET GLOBAL applies to sessions that connect afterwards, as in MySQL.
    s.query("SET GLOBAL max_statement_time = 0.2");
    assert_eq!(one(&mut s, "SELECT @@max_statement_time").unwrap(), "0");
    let mut s2 = session(&f.inst);
    s2.query("SET SESSION max_session_mem_used = 1000000000000");
    assert_eq!(code(one(&mut s2, BIG_JOIN)), 1969);
    s.query("SET GLOBAL max_statement_time = 0");
}

#[test]
fn a_statement_that_would_hold_too_many_rows_fails_with_1290() {
    let f = fixture();
    let mut s = big_join_session(&f.inst);
    // The default budget (1 GiB) is far above what ordinary statements hold.
    assert_eq!(rows_of(&mut s, "SELECT a.id, b.id FROM t a, t b"), 160_000);
    s.query("SET max_session_mem_used = 8000000");
    let t0 = std::time::Instant::now();
    // A sort past the budget spills its rows to temporary files (E6), so it stops at the
    // temporary-space cap instead...
    s.query("SET max_tmp_session_space_usage = 1048576");
    let big_sort = BIG_JOIN.trim_end_matches(" LIMIT 5");
    assert_eq!(code(one(&mut s, big_sort)), 4198);
    assert!(t0.elapsed() < std::time::Duration::from_secs(20));
    // ... and ORDER BY ... LIMIT keeps only the rows it can send (TopN, E4).
    assert_eq!(
        rows_of(
            &mut s,
            "SELECT a.id, b.id FROM t a, t b ORDER BY a.v, b.v LIMIT 5"
        ),
        5
    );
    // GROUP BY groups count too: past the budget they spill (E7), to the same cap.
    assert_eq!(
        code(one(
            &mut s,
            "SELECT a.id, b.id, COUNT(*) FROM t a, t b GROUP BY a.id, b.id"
        )),
        4198
    );
    // A small statement still runs.
    assert_eq!(rows_of(&mut s, "SELECT * FROM t ORDER BY v LIMIT 5"), 5);
    // The rows an UPDATE or DELETE collects before changing them count too; the failed
    // statement changes nothing.
    s.query("SET max_session_mem_used = 20000");
    let before = one(&mut s, "SELECT SUM(LENGTH(v)) FROM t").unwrap();
    assert_eq!(code(one(&mut s, "UPDATE t SET v = CONCAT(v, 'y')")), 1290);
    assert_eq!(code(one(&mut s, "DELETE FROM t ORDER BY v")), 1290);
    assert_eq!(one(&mut s, "SELECT SUM(LENGTH(v)) FROM t").unwrap(), before);
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "400");
    assert_eq!(
        one(&mut s, "UPDATE t SET v = 'z' WHERE id = 7").unwrap(),
        "1"
    );
}

#[test]
fn prepared_statements_are_capped_by_max_prepared_stmt_count() {
    let f = fixture();
    let mut s = session(&f.inst);
    assert_eq!(
        code(one(&mut s, "SET SESSION max_prepared_stmt_count = 10")),
        1229
    );
    assert!(s
        .query("SET GLOBAL max_prepared_stmt_count = 10")
        .pop()
        .unwrap()
        .is_ok());
    let ids: Vec<u32> = (0..10).map(|_| s.prepare("SELECT ?").unwrap().id).collect();
    assert_eq!(s.prepare("SELECT 1").unwrap_err().code(), 1461);
    // Another session counts against the same limit; closing one frees a place.
    let mut s2 = session(&f.inst);
    assert_eq!(s2.prepare("SELECT 1").unwrap_err().code(), 1461);
    s.close_statement(ids[0]);
    assert!(s2.prepare("SELECT 1").is_ok());
    // A session's statements are released when it ends.
    drop(s);
    for _ in 0..9 {
        s2.prepare("SELECT 2").unwrap();
    }
    assert_eq!(s2.prepare("SELECT 1").unwrap_err().code(), 1461);
    // More placeholders than the wire can count: 1390.
    s2.query("SET GLOBAL max_prepared_stmt_count = 100");
    let many = format!("SELECT {}", vec!["?"; 70_000].join(","));
    assert_eq!(s2.prepare(&many).unwrap_err().code(), 1390);
}

/// `OPTIMIZE TABLE n0, n1, ...` over `n` tables that do not exist: each costs a lookup and
/// two result rows, so a long list runs long without rewriting anything.
fn optimize_missing(n: usize) -> String {
    let names: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    format!("OPTIMIZE TABLE {}", names.join(", "))
}

#[test]
fn optimize_refuses_open_quotes_and_repeated_tables() {
    let f = fixture();
    let mut s = session(&f.inst);
    // MariaDB 10.11: an open backtick or quote, or a string, is no table name (1064).
    for sql in [
        "OPTIMIZE TABLE `t",
        "OPTIMIZE TABLE 't",
        "OPTIMIZE TABLE \"t",
        "OPTIMIZE TABLE 't'",
    ] {
        assert_eq!(code(one(&mut s, sql)), 1064, "{sql}");
    }
    // A table named twice, however spelled, fails the statement before any table is
    // rewritten (1066), as in MariaDB; so one named 60,000 times is not rewritten 60,000
    // times.
    for sql in [
        "OPTIMIZE TABLE t, t",
        "OPTIMIZE TABLE t, d.t",
        "OPTIMIZE TABLE t, `t`, nosuch",
        "OPTIMIZE TABLE nosuch, nosuch",
    ] {
        assert_eq!(code(one(&mut s, sql)), 1066, "{sql}");
    }
    let e = s.query("OPTIMIZE TABLE t, t").pop().unwrap().unwrap_err();
    assert_eq!(e.message(), "Not unique table/alias: 't'");
    let many = format!("OPTIMIZE TABLE {}", vec!["t"; 60_000].join(", "));
    assert_eq!(code(one(&mut s, &many)), 1066);
    // Past 65,536 names the list is refused before it is read (1235), whatever it names.
    let many = format!("OPTIMIZE TABLE {}", vec!["t"; 100_000].join(", "));
    assert_eq!(code(one(&mut s, &many)), 1235);
    // Distinct tables of the same name in two databases are two tables.
    assert_eq!(rows_of(&mut s, "OPTIMIZE TABLE t, e.t"), 3);
    assert_eq!(rows_of(&mut s, "OPTIMIZE TABLE t"), 1);
}

#[test]
fn a_long_optimize_stops_at_the_statement_time_limit() {
    let f = fixture();
    let mut s = session(&f.inst);
    let sql = optimize_missing(60_000);
    // Unlimited, the whole list runs: two rows a missing table.
    assert_eq!(rows_of(&mut s, &sql), 120_000);
    s.query("SET max_statement_time = 0.001");
    assert_eq!(code(one(&mut s, &sql)), 1969);
    s.query("SET max_statement_time = 0");
    // The rows count against the statement's memory budget.
    s.query("SET max_session_mem_used = 100000");
    assert_eq!(code(one(&mut s, &sql)), 1290);
}

#[test]
fn kill_query_stops_a_long_optimize_between_tables() {
    let f = fixture();
    let inst = f.inst.clone();
    let mut killer = inst.session("root", 2);
    assert!(killer
        .query("CREATE DATABASE IF NOT EXISTS d")
        .pop()
        .unwrap()
        .is_ok());
    let runner = std::thread::spawn(move || {
        let mut s = inst.session("root", 3);
        s.use_db("d").expect("use d");
        let t0 = std::time::Instant::now();
        // Run until killed: the list is long enough to outlast the polling below.
        let r = loop {
            match s.query(&optimize_missing(60_000)).pop().expect("a result") {
                Err(e) => break e,
                Ok(_) if t0.elapsed() > std::time::Duration::from_secs(120) => {
                    panic!("never killed")
                }
                Ok(_) => {}
            }
        };
        r.code()
    });
    // Whenever the runner is inside its OPTIMIZE, stop it (again, should a KILL land just
    // after a statement ended: the next command forgets it).
    while !runner.is_finished() {
        let running = match killer.query("SHOW PROCESSLIST").pop().unwrap() {
            Ok(Outcome::Rows { rows, .. }) => rows.iter().any(|r| {
                r[0].to_string_lossy().as_deref() == Some("3")
                    && r[7]
                        .to_string_lossy()
                        .is_some_and(|i| i.starts_with("OPTIMIZE"))
            }),
            other => panic!("{other:?}"),
        };
        if running {
            assert!(killer.query("KILL QUERY 3").pop().unwrap().is_ok());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(runner.join().expect("runner"), 1317);
}

/// An error built from what the client sent is cut at MySQL's 511 bytes: a `DROP USER` of
/// 100,000 unknown accounts used to answer with a message naming all of them (about 1 MB),
/// kept again in SHOW WARNINGS.
#[test]
fn an_error_naming_what_the_client_sent_stays_short() {
    let f = fixture();
    let mut s = session(&f.inst);
    let names: Vec<String> = (0..100_000).map(|i| format!("'u{i}'@'h'")).collect();
    let sql = format!("DROP USER {}", names.join(", "));
    let mut r = s.query(&sql);
    let e = r.remove(0).expect_err("no such accounts");
    assert_eq!(e.code(), 1396);
    assert!(
        e.message()
            .starts_with("Operation DROP USER failed for 'u0'@'h'"),
        "{}",
        &e.message()[..80]
    );
    assert_eq!(e.message().len(), 511);
    let shown = s.query("SHOW ERRORS").remove(0).expect("show errors");
    let Outcome::Rows { rows, .. } = shown else {
        panic!("SHOW ERRORS gives rows")
    };
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][2].to_string_lossy().map(|m| m.len()), Some(511));
}

/// A join of more tables than MariaDB's 61 is refused with its error (1116) before binding:
/// binding costs grow with the square of the tables, so a packet full of `t a1, t a2, ...`
/// would otherwise keep a thread busy for minutes. JOIN chains count as comma lists do, and
/// EXPLAIN is refused the same way.
#[test]
fn joins_of_more_than_61_tables_are_refused() {
    let f = fixture();
    let mut s = session(&f.inst);
    let tables = |n: usize| -> String {
        (0..n)
            .map(|i| format!("t AS a{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    assert_eq!(
        one(&mut s, &format!("SELECT COUNT(*) FROM {}", tables(61))).expect("61 tables"),
        "0"
    );
    for sql in [
        format!("SELECT 1 FROM {}", tables(62)),
        format!("SELECT 1 FROM {}", tables(100_000)),
        format!("EXPLAIN SELECT 1 FROM {}", tables(62)),
        format!(
            "SELECT 1 FROM {} ON 1 = 1",
            tables(62)
                .replace(", ", " ON 1 = 1 JOIN ")
                .replacen(" ON 1 = 1", "", 1)
        ),
    ] {
        let e = one(&mut s, &sql).expect_err("too many tables");
        assert_eq!(e.code(), 1116, "{}", e.message());
        assert!(e.message().contains("61 tables"), "{}", e.message());
    }
    assert_eq!(one(&mut s, "SELECT 2").expect("the session goes on"), "2");
}

/// A transaction's uncommitted writes are held in memory until commit, so they count against
/// `max_session_mem_used` with what the statement holds: past it the statement fails with
/// 1290 and is undone alone, and the transaction keeps its earlier statements.
#[test]
fn uncommitted_writes_count_against_the_session_memory_budget() {
    let f = fixture();
    let mut s = session(&f.inst);
    one(
        &mut s,
        "CREATE TABLE w (id INT PRIMARY KEY, v VARCHAR(1000))",
    )
    .expect("create");
    assert_eq!(
        code(one(&mut s, "SET SESSION max_session_mem_used = 'lots'")),
        1232,
        "not a number (it was read as 0, the floor)"
    );
    one(&mut s, "SET SESSION max_session_mem_used = 4000000").expect("set");
    let pad = "x".repeat(900);
    let batch = |from: usize| {
        let rows: Vec<String> = (from..from + 1000)
            .map(|i| format!("({i}, '{pad}')"))
            .collect();
        format!("INSERT INTO w VALUES {}", rows.join(","))
    };
    one(&mut s, "BEGIN").expect("begin");
    one(&mut s, &batch(0)).expect("first 1000 rows (~1 MB)");
    one(&mut s, &batch(1000)).expect("next 1000 rows");
    let mut failed = None;
    for k in 2..8 {
        if let Err(e) = one(&mut s, &batch(k * 1000)) {
            failed = Some((k, e));
            break;
        }
    }
    let (k, e) = failed.expect("the budget stops the transaction's growth");
    assert_eq!(e.code(), 1290, "{}", e.message());
    assert!(e.message().contains("uncommitted"), "{}", e.message());
    one(&mut s, "COMMIT").expect("commit");
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM w").expect("count"),
        (k * 1000).to_string(),
        "the failed statement alone was undone"
    );
    // Autocommit: one statement over the budget fails whole, and leaves nothing.
    let e = one(&mut s, "UPDATE w SET v = CONCAT(v, 'y')").expect_err("over budget");
    assert_eq!(e.code(), 1290, "{}", e.message());
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM w WHERE v LIKE '%y'").expect("count"),
        "0"
    );
    one(&mut s, "SET SESSION max_session_mem_used = DEFAULT").expect("set");
    assert_eq!(
        one(&mut s, "UPDATE w SET v = CONCAT(v, 'y')").expect("within the default"),
        (k * 1000).to_string()
    );
}

/// A statement whose commit would log more than the whole WAL (8 MiB in these tests) commits,
/// made durable by a checkpoint instead of a log record (it failed with 1197 before, and
/// before that fail-stopped the engine); rolled back, it leaves nothing; other sessions go on.
#[test]
fn a_transaction_larger_than_the_wal_commits() {
    let f = fixture();
    let mut s = session(&f.inst);
    one(
        &mut s,
        "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(1000))",
    )
    .expect("create");
    one(
        &mut s,
        "CREATE TABLE copy (id INT PRIMARY KEY, v VARCHAR(1000))",
    )
    .expect("create");
    let pad = "x".repeat(900);
    for chunk in 0..12 {
        let rows: Vec<String> = (0..1000)
            .map(|i| format!("({}, '{pad}')", chunk * 1000 + i))
            .collect();
        one(
            &mut s,
            &format!("INSERT INTO big VALUES {}", rows.join(",")),
        )
        .expect("load");
    }
    one(&mut s, "BEGIN").expect("begin");
    assert_eq!(
        one(&mut s, "INSERT INTO copy SELECT * FROM big").expect("large"),
        "12000"
    );
    one(&mut s, "ROLLBACK").expect("rollback");
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM copy").expect("count"),
        "0"
    );
    assert_eq!(
        one(&mut s, "INSERT INTO copy SELECT * FROM big").expect("large"),
        "12000"
    );
    assert_eq!(
        one(&mut s, "UPDATE copy SET v = CONCAT('y', v)").expect("large update"),
        "12000"
    );
    assert_eq!(
        one(&mut s, "SELECT COUNT(*) FROM copy WHERE v LIKE 'yx%'").expect("count"),
        "12000"
    );
    let mut other = f.inst.session("root", 2);
    one(&mut other, "USE d").expect("use");
    assert_eq!(
        one(&mut other, "DELETE FROM big WHERE id < 10").expect("delete"),
        "10"
    );
}

/// The statement's temporary files now: those in the instance's `tmpdir` (a private folder
/// for an instance given none, absent until something spills).
fn spill_files(s: &mut Session) -> Vec<String> {
    let dir = one(s, "SELECT @@tmpdir").unwrap();
    match std::fs::read_dir(&dir) {
        Ok(d) => d
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("zipdb-spill-"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Issue 20's target: a sort of a 3 x 2000-row cross join (8e9 rows) cannot finish; it spills
/// and stops cleanly at the temporary-space caps (4198, 4199) or at a time limit or KILL,
/// leaving no file behind and the session usable.
#[test]
fn a_sort_of_a_3_x_2000_cross_join_spills_then_stops_cleanly() {
    let f = fixture();
    let mut s = session(&f.inst);
    for chunk in (0..2000).collect::<Vec<i32>>().chunks(500) {
        let values: Vec<String> = chunk.iter().map(|i| format!("({i}, 'x{i}')")).collect();
        let sql = format!("REPLACE INTO t VALUES {}", values.join(","));
        assert!(s.query(&sql).pop().unwrap().is_ok());
    }
    let cross = "SELECT a.id, b.id, c.id FROM t a, t b, t c ORDER BY a.v, b.v DESC, c.v";
    s.query("SET sort_buffer_size = 1048576");
    // The session's cap: 4198.
    s.query("SET max_tmp_session_space_usage = 16777216");
    let t0 = std::time::Instant::now();
    assert_eq!(code(one(&mut s, cross)), 4198);
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    // The instance's cap, over every session: 4199.
    s.query("SET max_tmp_session_space_usage = 0");
    s.query("SET GLOBAL max_tmp_total_space_usage = 8388608");
    assert_eq!(code(one(&mut s, cross)), 4199);
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    s.query("SET GLOBAL max_tmp_total_space_usage = 1073741824");
    // A time limit stops it while it spills; nothing is left either.
    s.query("SET max_tmp_session_space_usage = 268435456");
    s.query("SET max_statement_time = 0.5");
    assert_eq!(code(one(&mut s, cross)), 1969);
    s.query("SET max_statement_time = 0");
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    // The session goes on.
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "2000");

    // KILL QUERY from another session stops it too.
    let inst = f.inst.clone();
    let runner = std::thread::spawn(move || {
        let mut s = inst.session("root", 7);
        s.use_db("d").expect("use d");
        s.query("SET sort_buffer_size = 1048576");
        s.query("SET max_tmp_session_space_usage = 268435456");
        let e = code(one(&mut s, cross));
        (
            e,
            spill_files(&mut s),
            one(&mut s, "SELECT COUNT(*) FROM t").unwrap(),
        )
    });
    let mut killer = f.inst.session("root", 8);
    while !runner.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(200));
        // Unknown thread (1094) once the runner's session has ended.
        match killer.query("KILL QUERY 7").pop().unwrap() {
            Ok(_) => {}
            Err(e) => assert_eq!(e.code(), 1094, "{e}"),
        }
    }
    let (e, left, count) = runner.join().expect("runner");
    assert_eq!((e, left, count.as_str()), (1317, vec![], "2000"));
}

/// A cross join that spills (a buffer far below its rows) and finishes gives the rows, in
/// the order, of the same sort in memory, ties included.
#[test]
fn a_spilling_sort_of_a_cross_join_gives_the_in_memory_rows() {
    let f = fixture();
    let mut s = session(&f.inst);
    let values: Vec<String> = (0..600)
        .map(|i| format!("({i}, '{}')", ["b", "A", "a", "B ", "c"][i % 5]))
        .collect();
    let sql = format!("REPLACE INTO t VALUES {}", values.join(","));
    assert!(s.query(&sql).pop().unwrap().is_ok());
    // Ties on the keys keep the join's order, so the whole order is compared.
    let cross = "SELECT a.id, b.id, a.v FROM t a, t b ORDER BY a.v DESC, b.v, a.id % 7";
    let all = |s: &mut Session| -> Vec<String> {
        match s.query(cross).pop().expect("a result") {
            Ok(Outcome::Rows { rows, .. }) => rows.iter().map(|r| format!("{r:?}")).collect(),
            other => panic!("{other:?}"),
        }
    };
    let in_memory = all(&mut s);
    assert_eq!(in_memory.len(), 360_000);
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    s.query("SET sort_buffer_size = 65536");
    let spilled = all(&mut s);
    assert!(spilled == in_memory, "the spilled sort's rows differ");
    // And under a statement budget far below the rows, without a buffer of its own.
    s.query("SET sort_buffer_size = 1073741824");
    s.query("SET max_session_mem_used = 2000000");
    let spilled = all(&mut s);
    assert!(spilled == in_memory, "the spilled sort's rows differ");
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    // It did spill: with no room for a run it stops at the cap.
    s.query("SET max_tmp_session_space_usage = 65536");
    assert_eq!(code(one(&mut s, cross)), 4198);
}

/// The spill variables as MariaDB 11.5 scopes them.
#[test]
fn the_temporary_space_variables_are_set_and_shown_as_in_mariadb() {
    let f = fixture();
    let mut s = session(&f.inst);
    assert_eq!(
        one(&mut s, "SELECT @@max_tmp_session_space_usage").unwrap(),
        "1073741824"
    );
    assert_eq!(
        one(&mut s, "SELECT @@max_tmp_total_space_usage").unwrap(),
        "17179869184"
    );
    assert_eq!(one(&mut s, "SELECT @@sort_buffer_size").unwrap(), "2097152");
    // Blocks of 64 KiB, rounded down.
    s.query("SET max_tmp_session_space_usage = 100000");
    assert_eq!(
        one(&mut s, "SELECT @@max_tmp_session_space_usage").unwrap(),
        "65536"
    );
    // Global only.
    assert_eq!(
        code(one(&mut s, "SET SESSION max_tmp_total_space_usage = 65536")),
        1229
    );
    assert!(s
        .query("SET GLOBAL max_tmp_total_space_usage = 131072")
        .pop()
        .unwrap()
        .is_ok());
    assert_eq!(
        one(&mut s, "SELECT @@max_tmp_total_space_usage").unwrap(),
        "131072"
    );
    // SET GLOBAL of the session ones is for sessions that connect afterwards.
    s.query("SET GLOBAL max_tmp_session_space_usage = 196608");
    s.query("SET GLOBAL sort_buffer_size = 32768");
    assert_eq!(
        one(&mut s, "SELECT @@max_tmp_session_space_usage").unwrap(),
        "65536"
    );
    let mut s2 = session(&f.inst);
    assert_eq!(
        one(&mut s2, "SELECT @@max_tmp_session_space_usage").unwrap(),
        "196608"
    );
    assert_eq!(one(&mut s2, "SELECT @@sort_buffer_size").unwrap(), "32768");
    // `= DEFAULT`: the session takes the global value, the global its start value (each its
    // own: it once took max_session_mem_used's).
    s2.query("SET sort_buffer_size = 65536");
    s2.query("SET sort_buffer_size = DEFAULT");
    assert_eq!(one(&mut s2, "SELECT @@sort_buffer_size").unwrap(), "32768");
    s2.query("SET GLOBAL sort_buffer_size = DEFAULT");
    s2.query("SET GLOBAL max_tmp_total_space_usage = DEFAULT");
    let mut s3 = session(&f.inst);
    assert_eq!(
        one(&mut s3, "SELECT @@sort_buffer_size").unwrap(),
        "2097152"
    );
    // `@@global.` reads the global value, not the session's (it read the session's).
    s3.query("SET sort_buffer_size = 65536");
    s3.query("SET max_session_mem_used = 100000");
    assert_eq!(
        one(&mut s3, "SELECT @@global.sort_buffer_size").unwrap(),
        "2097152"
    );
    assert_eq!(
        one(&mut s3, "SELECT @@global.max_session_mem_used").unwrap(),
        "1073741824"
    );
    assert_eq!(one(&mut s3, "SELECT @@sort_buffer_size").unwrap(), "65536");
    assert_eq!(
        one(&mut s3, "SELECT @@session.max_session_mem_used").unwrap(),
        "100000"
    );
    assert_eq!(
        one(&mut s2, "SELECT @@max_tmp_total_space_usage").unwrap(),
        "17179869184"
    );
    match s2
        .query("SHOW VARIABLES LIKE 'max_tmp%'")
        .pop()
        .unwrap()
        .expect("rows")
    {
        Outcome::Rows { rows, .. } => assert_eq!(rows.len(), 2),
        other => panic!("{other:?}"),
    }
}

/// Issue 20 E7: GROUP BY and DISTINCT over a 3 x 2000-row cross join (8e9 groups) spill past
/// `tmp_memory_table_size` and stop cleanly at the temporary-space caps (4198, 4199), a time
/// limit or KILL, leaving no file behind and the session usable.
#[test]
fn a_group_by_or_distinct_of_a_3_x_2000_cross_join_spills_then_stops_cleanly() {
    let f = fixture();
    let mut s = session(&f.inst);
    for chunk in (0..2000).collect::<Vec<i32>>().chunks(500) {
        let values: Vec<String> = chunk.iter().map(|i| format!("({i}, 'x{i}')")).collect();
        let sql = format!("REPLACE INTO t VALUES {}", values.join(","));
        assert!(s.query(&sql).pop().unwrap().is_ok());
    }
    let grouped = "SELECT a.id, b.id, c.v, COUNT(*), SUM(a.id) FROM t a, t b, t c \
                   GROUP BY a.id, b.id, c.v";
    let distinct = "SELECT DISTINCT c.v, b.id, a.id FROM t a, t b, t c";
    s.query("SET tmp_memory_table_size = 1048576");
    s.query("SET sort_buffer_size = 1048576");
    for sql in [grouped, distinct] {
        // The session's cap: 4198.
        s.query("SET max_tmp_session_space_usage = 16777216");
        let t0 = std::time::Instant::now();
        assert_eq!(code(one(&mut s, sql)), 4198, "{sql}");
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(spill_files(&mut s), Vec::<String>::new());
        // The instance's cap, over every session: 4199.
        s.query("SET max_tmp_session_space_usage = 0");
        s.query("SET GLOBAL max_tmp_total_space_usage = 8388608");
        assert_eq!(code(one(&mut s, sql)), 4199, "{sql}");
        assert_eq!(spill_files(&mut s), Vec::<String>::new());
        s.query("SET GLOBAL max_tmp_total_space_usage = 1073741824");
        // A time limit stops it while it spills.
        s.query("SET max_tmp_session_space_usage = 268435456");
        s.query("SET max_statement_time = 0.5");
        assert_eq!(code(one(&mut s, sql)), 1969, "{sql}");
        s.query("SET max_statement_time = 0");
        assert_eq!(spill_files(&mut s), Vec::<String>::new());
        assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "2000");
    }

    // KILL QUERY from another session stops it too.
    let inst = f.inst.clone();
    let runner = std::thread::spawn(move || {
        let mut s = inst.session("root", 7);
        s.use_db("d").expect("use d");
        s.query("SET tmp_table_size = 1048576");
        s.query("SET max_tmp_session_space_usage = 268435456");
        let e = code(one(&mut s, grouped));
        (
            e,
            spill_files(&mut s),
            one(&mut s, "SELECT COUNT(*) FROM t").unwrap(),
        )
    });
    let mut killer = f.inst.session("root", 8);
    while !runner.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(200));
        match killer.query("KILL QUERY 7").pop().unwrap() {
            Ok(_) => {}
            Err(e) => assert_eq!(e.code(), 1094, "{e}"),
        }
    }
    let (e, left, count) = runner.join().expect("runner");
    assert_eq!((e, left, count.as_str()), (1317, vec![], "2000"));
}

/// GROUP BY and DISTINCT over a cross join that spill give the groups and rows, in the order,
/// of the same statements in memory: collation ties in the keys, every aggregate kind.
#[test]
fn a_spilling_group_by_or_distinct_gives_the_in_memory_rows() {
    let f = fixture();
    let mut s = session(&f.inst);
    let values: Vec<String> = (0..600)
        .map(|i| match i % 11 {
            3 => format!("({i}, NULL)"),
            _ => format!("({i}, '{}')", ["b", "A", "a", "B ", "c", "é", "E"][i % 7]),
        })
        .collect();
    let sql = format!("REPLACE INTO t VALUES {}", values.join(","));
    assert!(s.query(&sql).pop().unwrap().is_ok());
    let statements = [
        "SELECT b.v, a.id % 97, COUNT(*), COUNT(b.v), COUNT(DISTINCT a.v), SUM(a.id), \
         SUM(DISTINCT b.id % 5), AVG(b.id), MIN(a.v), MAX(b.v), MIN(a.id * 0.5), MAX(b.id), \
         a.v FROM t a, t b GROUP BY b.v, a.id % 97",
        "SELECT a.id % 13 AS k, b.v, COUNT(*) FROM t a, t b GROUP BY b.v, k HAVING COUNT(*) > 10 \
         ORDER BY COUNT(*) DESC, k",
        "SELECT DISTINCT b.v, a.id % 89, a.v FROM t a, t b",
        "SELECT DISTINCT a.id % 31, b.v FROM t a, t b ORDER BY 1 DESC LIMIT 50",
    ];
    let all = |s: &mut Session, sql: &str| -> Vec<String> {
        match s.query(sql).pop().expect("a result") {
            Ok(Outcome::Rows { rows, .. }) => rows.iter().map(|r| format!("{r:?}")).collect(),
            other => panic!("{other:?}"),
        }
    };
    for sql in statements {
        s.query("SET tmp_memory_table_size = DEFAULT");
        s.query("SET sort_buffer_size = DEFAULT");
        let in_memory = all(&mut s, sql);
        assert!(in_memory.len() > 20, "{sql}");
        // Past the table size, and (the table unbounded) past a statement budget far below
        // the groups.
        for (table, buffer, mem) in [
            ("0", "16384", "DEFAULT"),
            ("16384", "65536", "DEFAULT"),
            ("1073741824", "DEFAULT", "300000"),
        ] {
            s.query(&format!("SET tmp_memory_table_size = {table}"));
            s.query(&format!("SET sort_buffer_size = {buffer}"));
            s.query(&format!("SET max_session_mem_used = {mem}"));
            let spilled = all(&mut s, sql);
            assert!(
                spilled == in_memory,
                "{sql}: spilled at {table}/{mem} differs"
            );
            assert_eq!(spill_files(&mut s), Vec::<String>::new());
        }
        s.query("SET max_session_mem_used = DEFAULT");
        // It did spill: with no room for a run it stops at the cap.
        s.query("SET max_tmp_session_space_usage = 65536");
        s.query("SET tmp_memory_table_size = 0");
        assert_eq!(code(one(&mut s, sql)), 4198, "{sql}");
        s.query("SET max_tmp_session_space_usage = DEFAULT");
    }
}

/// `tmp_memory_table_size` and its alias `tmp_table_size`, as MariaDB 10.11 takes them.
#[test]
fn tmp_memory_table_size_is_one_variable_under_two_names() {
    let f = fixture();
    let mut s = session(&f.inst);
    for name in ["tmp_memory_table_size", "tmp_table_size"] {
        assert_eq!(
            one(&mut s, &format!("SELECT @@{name}")).unwrap(),
            "16777216"
        );
    }
    // Blocks of 16 KiB, rounded down; set under either name, read under both.
    s.query("SET tmp_table_size = 100000");
    assert_eq!(
        one(&mut s, "SELECT @@tmp_memory_table_size").unwrap(),
        "98304"
    );
    s.query("SET tmp_memory_table_size = 0");
    assert_eq!(one(&mut s, "SELECT @@tmp_table_size").unwrap(), "0");
    // GLOBAL: for sessions that connect afterwards; DEFAULT takes it back.
    s.query("SET GLOBAL tmp_memory_table_size = 32768");
    assert_eq!(one(&mut s, "SELECT @@tmp_table_size").unwrap(), "0");
    assert_eq!(
        one(&mut s, "SELECT @@global.tmp_table_size").unwrap(),
        "32768"
    );
    let mut s2 = session(&f.inst);
    assert_eq!(one(&mut s2, "SELECT @@tmp_table_size").unwrap(), "32768");
    s2.query("SET GLOBAL tmp_table_size = DEFAULT");
    s2.query("SET tmp_table_size = DEFAULT");
    assert_eq!(
        one(&mut s2, "SELECT @@tmp_memory_table_size").unwrap(),
        "16777216"
    );
    assert_eq!(code(one(&mut s2, "SET tmp_table_size = 'big'")), 1232);
}

/// Issue 20 E7: a hash join whose build side is past `tmp_memory_table_size` partitions both
/// sides to temporary files; a join too large to finish (2000 x 667 x 667 rows, the second
/// step's outer input written whole) stops cleanly at the temporary-space caps (4198, 4199), a
/// time limit or KILL, leaving no file behind and the session usable.
#[test]
fn a_hash_join_past_its_memory_spills_then_stops_cleanly() {
    let f = fixture();
    let mut s = session(&f.inst);
    for chunk in (0..2000).collect::<Vec<i32>>().chunks(500) {
        let values: Vec<String> = chunk.iter().map(|i| format!("({i}, 'x{i}')")).collect();
        let sql = format!("REPLACE INTO t VALUES {}", values.join(","));
        assert!(s.query(&sql).pop().unwrap().is_ok());
    }
    let join = "SELECT COUNT(*), SUM(c.id) FROM t a JOIN t b ON b.id % 3 = a.id % 3 \
                JOIN t c ON c.v = CONCAT('x', (a.id + b.id) % 1000)";
    // A join that fits the partitions gives the in-memory count.
    let small = "SELECT COUNT(*), SUM(b.id) FROM t a JOIN t b ON b.id % 7 = a.id % 5";
    let in_memory = one(&mut s, small).unwrap();
    s.query("SET tmp_memory_table_size = 0");
    assert_eq!(one(&mut s, small).unwrap(), in_memory);
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    // The session's cap: 4198.
    s.query("SET max_tmp_session_space_usage = 16777216");
    let t0 = std::time::Instant::now();
    assert_eq!(code(one(&mut s, join)), 4198);
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    // The instance's cap, over every session: 4199.
    s.query("SET max_tmp_session_space_usage = 0");
    s.query("SET GLOBAL max_tmp_total_space_usage = 8388608");
    assert_eq!(code(one(&mut s, join)), 4199);
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    s.query("SET GLOBAL max_tmp_total_space_usage = 1073741824");
    // A time limit stops it while it spills.
    s.query("SET max_tmp_session_space_usage = 268435456");
    s.query("SET max_statement_time = 0.5");
    assert_eq!(code(one(&mut s, join)), 1969);
    s.query("SET max_statement_time = 0");
    assert_eq!(spill_files(&mut s), Vec::<String>::new());
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t").unwrap(), "2000");

    // KILL QUERY from another session stops it too.
    let inst = f.inst.clone();
    let runner = std::thread::spawn(move || {
        let mut s = inst.session("root", 7);
        s.use_db("d").expect("use d");
        s.query("SET tmp_memory_table_size = 0");
        s.query("SET max_tmp_session_space_usage = 268435456");
        let e = code(one(&mut s, join));
        (
            e,
            spill_files(&mut s),
            one(&mut s, "SELECT COUNT(*) FROM t").unwrap(),
        )
    });
    let mut killer = f.inst.session("root", 8);
    while !runner.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(200));
        match killer.query("KILL QUERY 7").pop().unwrap() {
            Ok(_) => {}
            Err(e) => assert_eq!(e.code(), 1094, "{e}"),
        }
    }
    let (e, left, count) = runner.join().expect("runner");
    assert_eq!((e, left, count.as_str()), (1317, vec![], "2000"));
}
