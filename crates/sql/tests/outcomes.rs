//! What a session answers, as a client sees it: OK packet info strings and the scale of
//! decimal aggregates, column names, SHOW WARNINGS (all found by tests/clients/mariadb_session.sh against MariaDB 10.11).

use zipdb_sql::{Instance, Outcome, Session};

fn session(name: &str) -> Session {
    let dir = std::env::temp_dir().join(format!("zipdb-outcomes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = zipdb_engine::Database::open(
        &dir,
        zipdb_engine::Options {
            pool_bytes: 16 << 20,
            wal_bytes: 8 << 20,
            recovery_progress: false,
            ..Default::default()
        },
    )
    .unwrap();
    Instance::open(db, Default::default())
        .unwrap()
        .session("root", 1)
}

fn run(s: &mut Session, sql: &str) -> Outcome {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    r.pop()
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {}", e.message()))
}

fn info(s: &mut Session, sql: &str) -> (u64, String) {
    match run(s, sql) {
        Outcome::Done {
            affected_rows,
            info,
            ..
        } => (affected_rows, info),
        Outcome::Rows { .. } => panic!("{sql}: rows"),
    }
}

/// The first row as text, and each column's announced decimals.
fn select(s: &mut Session, sql: &str) -> (Vec<String>, Vec<u8>) {
    let Outcome::Rows { columns, rows } = run(s, sql) else {
        panic!("{sql}: no rows")
    };
    let text = rows[0]
        .iter()
        .map(|v| String::from_utf8(v.to_text().unwrap().to_vec()).unwrap())
        .collect();
    (text, columns.iter().map(|c| c.decimals).collect())
}

#[test]
fn every_update_reports_rows_matched_and_changed_delete_does_not() {
    let mut s = session("info");
    run(&mut s, "CREATE DATABASE d");
    s.use_db("d").unwrap();
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    assert_eq!(
        info(&mut s, "INSERT INTO t VALUES (1, 1), (2, 2)"),
        (2, "Records: 2  Duplicates: 0  Warnings: 0".into())
    );
    assert_eq!(info(&mut s, "INSERT INTO t VALUES (3, 3)"), (1, "".into()));
    assert_eq!(
        info(&mut s, "UPDATE t SET v = 1 WHERE id <= 2"),
        (1, "Rows matched: 2  Changed: 1  Warnings: 0".into())
    );
    // MySQL and MariaDB send the info string even when nothing matched.
    assert_eq!(
        info(&mut s, "UPDATE t SET v = 0 WHERE id = 99"),
        (0, "Rows matched: 0  Changed: 0  Warnings: 0".into())
    );
    assert_eq!(info(&mut s, "DELETE FROM t WHERE id = 3"), (1, "".into()));
}

#[test]
fn sums_of_decimal_expressions_keep_the_expression_scale() {
    let mut s = session("scale");
    run(&mut s, "CREATE DATABASE d");
    s.use_db("d").unwrap();
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, p DECIMAL(10,2), q INT)",
    );
    run(&mut s, "INSERT INTO t VALUES (1, 1.10, 2), (2, 2.25, 3)");
    // As MariaDB 10.11 prints them.
    assert_eq!(
        select(
            &mut s,
            "SELECT SUM(p), SUM(p * q), SUM(p + 1), AVG(p * q), SUM(p / 2) FROM t"
        ),
        (
            vec![
                "3.35".into(),
                "8.95".into(),
                "5.35".into(),
                "4.475000".into(),
                "1.675000".into()
            ],
            vec![2, 2, 2, 6, 6]
        )
    );
}

#[test]
fn string_literals_name_their_column_by_their_value() {
    let mut s = session("names");
    let Outcome::Rows { columns, .. } =
        run(&mut s, r#"SELECT 'it''s', "say \"hi\"", 1 + 1, 'x' AS y"#)
    else {
        panic!("no rows")
    };
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["it's", "say \"hi\"", "1 + 1", "y"]);
}

#[test]
fn show_warnings_lists_them_without_counting_them_again() {
    let mut s = session("warnings");
    run(&mut s, "CREATE DATABASE d");
    s.use_db("d").unwrap();
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB");
    assert_eq!(s.warning_count(), 1);
    // MariaDB prints "1 row in set", not "1 row in set, 1 warning"; the list stays.
    for _ in 0..2 {
        let Outcome::Rows { rows, .. } = run(&mut s, "SHOW WARNINGS") else {
            panic!("no rows")
        };
        assert_eq!(rows.len(), 1);
        assert_eq!(s.warning_count(), 0);
    }
    run(&mut s, "SELECT 1");
    assert_eq!(s.warning_count(), 0);
}
