//! Each SHOW form front/show.rs reads, run through `Session`: its rows, and the errors of
//! malformed and unsupported forms.

use zipdb_sql::Session;

mod common;
use common::{fixture, q, Fixture};

fn session(f: &Fixture) -> Session {
    let mut s = f.inst.session("root", 1);
    q(&mut s, "CREATE DATABASE IF NOT EXISTS d");
    s.use_db("d").expect("use d");
    q(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(20), KEY k_1 (k))",
    );
    q(&mut s, "CREATE TABLE t2 (a INT)");
    s
}

fn err(s: &mut Session, sql: &str) -> (u16, String) {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    match r.remove(0) {
        Ok(_) => panic!("{sql}: succeeded, expected an error"),
        Err(e) => (e.code(), e.message().to_string()),
    }
}

fn col(rows: &[Vec<String>], i: usize) -> Vec<&str> {
    rows.iter().map(|r| r[i].as_str()).collect()
}

#[test]
fn lists_and_their_filters() {
    let f = fixture("show-lists");
    let mut s = session(&f);
    let dbs = q(&mut s, "SHOW DATABASES");
    assert!(col(&dbs, 0).contains(&"d"), "{dbs:?}");
    assert_eq!(q(&mut s, "show schemas like 'd'"), [["d"]]);
    assert_eq!(col(&q(&mut s, "SHOW TABLES"), 0), ["t", "t2"]);
    // A `;` in a string or a comment is not the statement's end (before P2 such a SHOW went
    // to sqlparser, which ran none of them).
    assert!(q(&mut s, "SHOW TABLES LIKE 't;2'").is_empty());
    assert_eq!(col(&q(&mut s, "SHOW /* ; */ TABLES # ;"), 0), ["t", "t2"]);
    assert_eq!(q(&mut s, "SHOW TABLES FROM d LIKE 't_'"), [["t2"]]);
    // A backslash keeps LIKE's `_` literal, as in MySQL (before P2 it was dropped).
    assert!(q(&mut s, "SHOW TABLES LIKE 't\\_'").is_empty());
    assert_eq!(
        q(&mut s, "SHOW FULL TABLES IN `d` LIKE 't2' ;"),
        [["t2", "BASE TABLE"]]
    );
    let cols = q(&mut s, "SHOW COLUMNS FROM t");
    assert_eq!(col(&cols, 0), ["id", "k", "c"]);
    assert_eq!(cols[0].len(), 6);
    let full = q(&mut s, "SHOW FULL FIELDS IN t FROM d LIKE 'c'");
    assert_eq!((full.len(), full[0].len()), (1, 9));
    assert_eq!(
        q(&mut s, "SHOW COLUMNS FROM d.t2"),
        q(&mut s, "SHOW FIELDS FROM t2")
    );
    let ix = q(&mut s, "SHOW INDEX FROM t");
    assert_eq!(col(&ix, 2), ["PRIMARY", "k_1"]);
    assert_eq!(q(&mut s, "SHOW KEYS IN t IN d"), ix);
    let create = q(&mut s, "SHOW CREATE TABLE /* c */ `d`.`t`");
    assert!(create[0][1].starts_with("CREATE TABLE `t`"), "{create:?}");
    let db = q(&mut s, "SHOW CREATE DATABASE IF NOT EXISTS d");
    assert_eq!(db[0][0], "d");
    let vars = q(&mut s, "SHOW GLOBAL VARIABLES LIKE 'autocommit'");
    assert_eq!(col(&vars, 0), ["autocommit"]);
    assert_eq!(q(&mut s, "SHOW SESSION VARIABLES LIKE 'autocommit'"), vars);
    let status = q(&mut s, "SHOW STATUS LIKE 'Uptime'");
    assert_eq!(col(&status, 0), ["Uptime"]);
    let ts = q(&mut s, "SHOW TABLE STATUS FROM d LIKE 't2'");
    assert_eq!(col(&ts, 0), ["t2"]);
    assert_eq!(q(&mut s, "SHOW TABLE STATUS").len(), 2);
    assert!(q(&mut s, "SHOW FUNCTION STATUS WHERE Db = 'd'").is_empty());
    assert!(q(&mut s, "SHOW TRIGGERS FROM d LIKE 't'").is_empty());
    assert!(q(&mut s, "SHOW EVENTS").is_empty());
    assert_eq!(q(&mut s, "SHOW PROCESSLIST").len(), 1);
    assert_eq!(q(&mut s, "SHOW FULL PROCESSLIST")[0].len(), 8);
    assert_eq!(col(&q(&mut s, "SHOW STORAGE ENGINES"), 0), ["zipdb"]);
    assert_eq!(q(&mut s, "SHOW COLLATION LIKE 'utf8mb4%'").len(), 1);
    assert!(q(&mut s, "SHOW COLLATION LIKE 'latin1%'").is_empty());
    assert!(q(&mut s, "SHOW CHARACTER SET WHERE Charset = 'x'").is_empty());
    assert_eq!(q(&mut s, "SHOW CHARSET WHERE Charset = 'utf8mb4'").len(), 1);
    assert!(q(&mut s, "SHOW CHARSET LIKE 'latin1'").is_empty());
}

#[test]
fn warnings_limit_and_count() {
    let f = fixture("show-warnings");
    let mut s = session(&f);
    q(
        &mut s,
        "SELECT CAST('1a' AS SIGNED), CAST('2b' AS SIGNED), CAST('3c' AS SIGNED)",
    );
    let all = q(&mut s, "SHOW WARNINGS");
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(q(&mut s, "SHOW COUNT(*) WARNINGS"), [["3"]]);
    assert_eq!(q(&mut s, "SHOW WARNINGS LIMIT 1"), all[..1]);
    assert_eq!(q(&mut s, "SHOW WARNINGS LIMIT 1, 1"), all[1..2]);
    assert_eq!(q(&mut s, "SHOW WARNINGS LIMIT 5 OFFSET 2"), all[2..]);
    assert!(q(&mut s, "SHOW WARNINGS LIMIT 0").is_empty());
    // SHOW leaves the warnings for the next SHOW; none of them is an error.
    assert_eq!(q(&mut s, "SHOW COUNT(*) WARNINGS"), [["3"]]);
    assert_eq!(q(&mut s, "SHOW COUNT(*) ERRORS"), [["0"]]);
    assert!(q(&mut s, "SHOW ERRORS").is_empty());
}

/// A failed statement's error is its diagnostics, as in MySQL: SHOW WARNINGS and SHOW ERRORS
/// list it, the counts are 1, and the next statement clears it.
#[test]
fn a_failed_statement_leaves_its_error() {
    let f = fixture("show-failure");
    let mut s = session(&f);
    q(&mut s, "SELECT CAST('1a' AS SIGNED)");
    for sql in [
        "SELECT * FROM nope",
        "SELEKT 1",
        // Strict mode escalates the 1366 warning to an error.
        "INSERT INTO t VALUES (1, 'x', 'c')",
    ] {
        let (code, message) = err(&mut s, sql);
        let want = vec![vec!["Error".to_string(), code.to_string(), message]];
        assert_eq!(q(&mut s, "SHOW WARNINGS"), want, "{sql}");
        assert_eq!(q(&mut s, "SHOW ERRORS"), want, "{sql}");
        assert_eq!(q(&mut s, "SHOW COUNT(*) ERRORS"), [["1"]], "{sql}");
        assert_eq!(q(&mut s, "SHOW COUNT(*) WARNINGS"), [["1"]], "{sql}");
    }
    // A statement without tables keeps it (as MariaDB does); one with tables clears it.
    q(&mut s, "SELECT 1");
    assert_eq!(q(&mut s, "SHOW COUNT(*) ERRORS"), [["1"]]);
    q(&mut s, "SELECT * FROM t");
    assert!(q(&mut s, "SHOW WARNINGS").is_empty());
    // A prepared statement's failure too, and an unknown statement id.
    let id = s
        .prepare("INSERT INTO t VALUES (?, 1, 'c')")
        .expect("prepare")
        .id;
    let one = [zipdb_sql::Value::Int(1)];
    assert!(s.execute(id, &one).is_ok());
    let dup = s.execute(id, &one).expect_err("duplicate key");
    assert_eq!(dup.code(), 1062);
    assert_eq!(q(&mut s, "SHOW ERRORS")[0][1], "1062");
    assert!(s.execute(id + 100, &one).is_err());
    assert_eq!(q(&mut s, "SHOW ERRORS")[0][1], "1243");
    assert_eq!(q(&mut s, "SHOW COUNT(*) ERRORS"), [["1"]]);
}

#[test]
fn malformed_and_unsupported_forms() {
    let f = fixture("show-errors");
    let mut s = session(&f);
    for (sql, code, text) in [
        ("SHOW TABLES LIKE", 1064, "near '' at line 1"),
        ("SHOW TABLES LIKE 'x", 1064, "near ''x' at line 1"),
        ("SHOW TABLES junk", 1064, "near 'junk' at line 1"),
        ("SHOW COLUMNS t", 1064, "near 't' at line 1"),
        ("SHOW\nPROCESSLIST\nx", 1064, "near 'x' at line 3"),
        (
            "SHOW TABLES WHERE nope = 't'",
            1054,
            "Unknown column 'nope' in 'where clause'",
        ),
        (
            "SHOW TABLES WHERE x.Tables_in_d = 't'",
            1054,
            "'x.Tables_in_d'",
        ),
        (
            "SHOW TABLES WHERE Tables_in_d IN (SELECT 1)",
            1235,
            "subqueries",
        ),
        ("DESCRIBE nope", 1146, "d.nope"),
        ("DESCRIBE t c junk", 1064, "near 'junk' at line 1"),
        ("DESCRIBE", 1064, "at line 1"),
        ("SHOW GRANTS", 1235, "'SHOW GRANTS'"),
        ("SHOW CREATE VIEW v", 1235, "'SHOW CREATE VIEW'"),
        ("SHOW COLUMNS FROM nope", 1146, "d.nope"),
        ("SHOW TABLES FROM nope", 1049, "nope"),
    ] {
        let (c, m) = err(&mut s, sql);
        assert_eq!(c, code, "{sql}: {m}");
        assert!(m.contains(text), "{sql}: {m}");
    }
    let mut none = f.inst.session("root", 2);
    assert_eq!(err(&mut none, "SHOW TABLES").0, 1046);
    assert_eq!(err(&mut none, "SHOW INDEX FROM t").0, 1046);
}

/// WHERE is evaluated over the SHOW's own result columns, by label in any case (before, it
/// was refused on most forms and ignored on INDEX).
#[test]
fn where_filters_the_result_rows() {
    let f = fixture("show-where");
    let mut s = session(&f);
    assert_eq!(q(&mut s, "SHOW TABLES WHERE Tables_in_d = 't2'"), [["t2"]]);
    assert_eq!(
        q(
            &mut s,
            "SHOW FULL TABLES WHERE table_type = 'BASE TABLE' AND tables_in_d LIKE 't%'"
        )
        .len(),
        2
    );
    assert_eq!(
        q(&mut s, "SHOW DATABASES WHERE `Database` IN ('d', 'nope')"),
        [["d"]]
    );
    let cols = q(
        &mut s,
        "SHOW COLUMNS FROM t WHERE `Null` = 'NO' OR Field = 'c'",
    );
    assert_eq!(col(&cols, 0), ["id", "k", "c"]);
    let cols = q(&mut s, "SHOW COLUMNS FROM t WHERE `Key` = 'PRI'");
    assert_eq!(col(&cols, 0), ["id"]);
    let ix = q(&mut s, "SHOW INDEX FROM t WHERE Key_name = 'PRIMARY'");
    assert_eq!(col(&ix, 2), ["PRIMARY"]);
    assert!(q(&mut s, "SHOW KEYS FROM t WHERE Non_unique = 5").is_empty());
    // Connector/J 5.x asks for its variables this way.
    let vars = q(
        &mut s,
        "SHOW VARIABLES WHERE Variable_name = 'autocommit' OR Variable_name = 'max_allowed_packet'",
    );
    assert_eq!(col(&vars, 0), ["autocommit", "max_allowed_packet"]);
    // Booleans print as ON/OFF, as in MariaDB; @@autocommit stays a number.
    assert_eq!(vars[0][1], "ON");
    q(&mut s, "SET autocommit = 0");
    assert_eq!(
        q(
            &mut s,
            "SHOW VARIABLES WHERE Variable_name = 'autocommit' AND Value = 'OFF'"
        )
        .len(),
        1
    );
    assert_eq!(q(&mut s, "SELECT @@autocommit"), [["0"]]);
    q(&mut s, "SET autocommit = 1");
    assert_eq!(
        q(&mut s, "SHOW SESSION STATUS WHERE variable_name = 'Uptime'").len(),
        1
    );
    assert_eq!(
        col(&q(&mut s, "SHOW TABLE STATUS WHERE Name = 't'"), 0),
        ["t"]
    );
    // NULL and false both leave a row out; an expression over several columns works.
    assert!(q(&mut s, "SHOW TABLES WHERE NULL").is_empty());
    assert_eq!(q(&mut s, "SHOW TABLES WHERE 1 = 1").len(), 2);
    assert_eq!(
        q(
            &mut s,
            "SHOW COLUMNS FROM t WHERE CONCAT(Field, Type) LIKE 'k%int%'"
        )
        .len(),
        1
    );
}

/// `DESCRIBE t`, `DESC t`, `EXPLAIN t` are SHOW COLUMNS (before, 1235).
#[test]
fn describe_is_show_columns() {
    let f = fixture("show-describe");
    let mut s = session(&f);
    let cols = q(&mut s, "SHOW COLUMNS FROM t");
    assert_eq!(q(&mut s, "DESCRIBE t"), cols);
    assert_eq!(q(&mut s, "desc d.t;"), cols);
    assert_eq!(q(&mut s, "EXPLAIN `t`"), cols);
    assert_eq!(q(&mut s, "/* c */ DESCRIBE t"), cols);
    assert_eq!(col(&q(&mut s, "DESCRIBE t k"), 0), ["k"]);
    assert_eq!(col(&q(&mut s, "DESCRIBE t '%d'"), 0), ["id"]);
    // EXPLAIN of a statement is still EXPLAIN.
    let plan = q(&mut s, "EXPLAIN SELECT * FROM t WHERE id = 1");
    assert_eq!(plan.len(), 1, "{plan:?}");
    assert_ne!(plan, cols);
}

/// Keys are shown in MariaDB's order (primary, unique of NOT NULL columns, other unique, the
/// rest) by SHOW INDEX and SHOW CREATE TABLE alike; integer columns carry their display
/// widths; SHOW INDEX's numeric columns are typed as numbers.
#[test]
fn key_order_display_widths_and_index_column_types() {
    let f = fixture("show-key-order");
    let mut s = session(&f);
    q(
        &mut s,
        "CREATE TABLE ko (x INT NOT NULL, y INT, z INT NOT NULL, id INT NOT NULL, \
         flag BOOLEAN, w INT(5) UNSIGNED, KEY kx (x), UNIQUE KEY uy (y), \
         UNIQUE KEY uz (z, x), PRIMARY KEY (id), KEY kzy (z, y))",
    );
    let ix = q(&mut s, "SHOW INDEX FROM ko");
    assert_eq!(
        col(&ix, 2),
        ["PRIMARY", "uz", "uz", "uy", "kx", "kzy", "kzy"]
    );
    assert_eq!(col(&ix, 13), ["NO"; 7]);
    let create = &q(&mut s, "SHOW CREATE TABLE ko")[0][1];
    let keys: Vec<&str> = create
        .lines()
        .filter(|l| l.contains("KEY"))
        .map(str::trim)
        .collect();
    assert_eq!(
        keys,
        [
            "PRIMARY KEY (`id`),",
            "UNIQUE KEY `uz` (`z`,`x`),",
            "UNIQUE KEY `uy` (`y`),",
            "KEY `kx` (`x`),",
            "KEY `kzy` (`z`,`y`)",
        ]
    );
    assert!(create.contains("`x` int(11) NOT NULL,"), "{create}");
    assert!(
        create.contains("`flag` tinyint(1) DEFAULT NULL,"),
        "{create}"
    );
    assert!(
        create.contains("`w` int(5) unsigned DEFAULT NULL,"),
        "{create}"
    );
    let mut r = s.query("SHOW INDEX FROM ko");
    let Ok(zipdb_sql::Outcome::Rows { columns, .. }) = r.remove(0) else {
        panic!("SHOW INDEX gave no rows");
    };
    let types: Vec<u8> = columns.iter().map(|c| c.wire_type).collect();
    assert_eq!(types[..8], [253, 8, 253, 3, 253, 253, 8, 8]);
    // A result column's length is its display width (Connector/J's tinyInt1isBit reads it).
    let mut r = s.query("SELECT flag, x, w FROM ko");
    let Ok(zipdb_sql::Outcome::Rows { columns, .. }) = r.remove(0) else {
        panic!("SELECT gave no rows");
    };
    let lengths: Vec<u32> = columns.iter().map(|c| c.length).collect();
    assert_eq!(lengths, [1, 11, 5]);
}
