use std::io::Read;

use super::*;
use crate::session::sink::{ResultSink, SinkClosed, StatementEnd, Status};
use crate::types::result::ColumnMeta;
use crate::types::value::Value;

/// A client: hands out `file` when asked (or refuses), keeps results as `Session::query` does.
struct Client {
    file: Option<Vec<u8>>,
    /// Fail the read after this many bytes (a client gone mid-file).
    cut: Option<usize>,
    asked: Vec<String>,
    inner: Collect,
    hooks: Hooks,
}

/// What a client does to the statement while its file is read.
#[derive(Default, Clone)]
struct Hooks {
    /// KILL QUERY of the reading session once this many bytes were read.
    kill_at: Option<(usize, std::sync::Arc<crate::runtime::limits::Interrupt>)>,
    /// A pause before the first byte (a slow client).
    stall: std::time::Duration,
}

struct Cut<'a> {
    data: &'a [u8],
    fail: bool,
    hooks: Hooks,
    read: usize,
}

impl Read for Cut<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.read == 0 {
            std::thread::sleep(self.hooks.stall);
        }
        if let Some((at, i)) = &self.hooks.kill_at {
            if self.read >= *at {
                i.kill();
            }
        }
        if self.data.is_empty() && self.fail {
            return Err(std::io::Error::other("connection lost"));
        }
        let k = self.data.len().min(out.len()).min(7);
        out[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        self.read += k;
        Ok(k)
    }
}

impl ResultSink for Client {
    fn columns(
        &mut self,
        c: &std::sync::Arc<Vec<ColumnMeta>>,
        s: Status,
    ) -> Result<(), SinkClosed> {
        self.inner.columns(c, s)
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SinkClosed> {
        self.inner.row(row)
    }
    fn end(&mut self, end: StatementEnd<'_>) {
        self.inner.end(end)
    }
    fn local_infile(&mut self, name: &str) -> Option<Box<dyn Read + '_>> {
        self.asked.push(name.to_string());
        let file = self.file.as_deref()?;
        let (data, fail) = match self.cut {
            Some(n) => (&file[..n.min(file.len())], true),
            None => (file, false),
        };
        Some(Box::new(Cut {
            data,
            fail,
            hooks: self.hooks.clone(),
            read: 0,
        }))
    }
}

fn with_session(tag: &str, f: impl FnOnce(&mut Session)) {
    let dir = std::env::temp_dir().join(format!("zipdb-load-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let (_db, inst) = crate::Instance::open_for_tests(&dir);
        let mut s = inst.session("root", 1);
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            "CREATE TABLE t (id INT PRIMARY KEY, n INT, c VARCHAR(20) DEFAULT 'dflt')",
            "INSERT INTO t VALUES (100, 1, 'old')",
        ] {
            assert!(s.query(sql).pop().expect("a result").is_ok(), "{sql}");
        }
        f(&mut s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn load(
    s: &mut Session,
    sql: &str,
    file: Option<&[u8]>,
    cut: Option<usize>,
) -> Result<Outcome, SqlError> {
    load_with(s, sql, file, cut, Hooks::default())
}

fn load_with(
    s: &mut Session,
    sql: &str,
    file: Option<&[u8]>,
    cut: Option<usize>,
    hooks: Hooks,
) -> Result<Outcome, SqlError> {
    let mut c = Client {
        file: file.map(<[u8]>::to_vec),
        cut,
        asked: Vec::new(),
        inner: Collect::default(),
        hooks,
    };
    s.query_into(sql, &mut c);
    c.inner.results.pop().expect("a result")
}

fn rows(s: &mut Session, sql: &str) -> Vec<String> {
    match s.query(sql).pop().expect("a result") {
        Ok(Outcome::Rows { rows, .. }) => rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect(),
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn local_load_inserts_rows_with_mariadb_s_counts() {
    with_session("basic", |s| {
        let file = b"1\t10\ta\n2\t\\N\tb'c\\\\\n3\t30\n4\t40\tx\textra\n100\t7\tdup\n";
        let r = load(
            s,
            "LOAD DATA LOCAL INFILE 'f.tsv' INTO TABLE t",
            Some(file),
            None,
        );
        match r {
            Ok(Outcome::Done {
                affected_rows,
                info,
                ..
            }) => {
                assert_eq!(affected_rows, 4);
                assert_eq!(info, "Records: 5  Deleted: 0  Skipped: 1  Warnings: 3");
            }
            other => panic!("{other:?}"),
        }
        let warnings = rows(s, "SHOW WARNINGS").join("\n");
        for code in ["1261", "1262", "1062"] {
            assert!(warnings.contains(code), "{warnings}");
        }
        let got = rows(s, "SELECT id, n, c FROM t ORDER BY id");
        assert_eq!(
            got,
            [
                r#"Int(1)|Int(10)|Str("a")"#,
                r#"Int(2)|Null|Str("b'c\\")"#,
                r#"Int(3)|Int(30)|Str("dflt")"#,
                r#"Int(4)|Int(40)|Str("x")"#,
                r#"Int(100)|Int(1)|Str("old")"#,
            ]
        );
    });
}

#[test]
fn replace_columns_ignore_lines_and_csv() {
    with_session("replace", |s| {
        let file = b"id,c\r\n\"100\",\"new, one\"\r\n5,\"q\"\"q\"\r\n";
        let r = load(
            s,
            "LOAD DATA LOCAL INFILE 'x' REPLACE INTO TABLE d.t FIELDS TERMINATED BY ',' \
             OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES (id, c)",
            Some(file),
            None,
        );
        match r {
            Ok(Outcome::Done { info, .. }) => {
                assert_eq!(info, "Records: 2  Deleted: 1  Skipped: 0  Warnings: 0")
            }
            other => panic!("{other:?}"),
        }
        let got = rows(s, "SELECT id, n, c FROM t ORDER BY id");
        assert_eq!(
            got,
            [
                r#"Int(5)|Null|Str("q\"q")"#,
                r#"Int(100)|Null|Str("new, one")"#
            ]
        );
    });
}

#[test]
fn refusals_and_a_client_gone_mid_file_leave_nothing() {
    with_session("refuse", |s| {
        let sql = "LOAD DATA LOCAL INFILE 'f' INTO TABLE t";
        assert_eq!(code(load(s, sql, None, None)), 4166);
        // `local_infile` is global only; OFF refuses LOCAL before the client is asked.
        assert_eq!(code(s.query("SET local_infile = 0").pop().unwrap()), 1229);
        assert_eq!(rows(s, "SELECT @@local_infile"), ["Int(1)"]);
        ok(s, "SET GLOBAL local_infile = OFF");
        assert_eq!(rows(s, "SELECT @@local_infile"), ["Int(0)"]);
        assert_eq!(code(load(s, sql, Some(b"9\n"), None)), 4166);
        ok(s, "SET GLOBAL local_infile = DEFAULT");
        assert_eq!(
            rows(s, "SHOW VARIABLES LIKE 'local_infile'"),
            [r#"Str("local_infile")|Str("ON")"#]
        );
        assert_eq!(
            code(load(
                s,
                "LOAD DATA INFILE '/etc/passwd' INTO TABLE t",
                Some(b""),
                None
            )),
            1290
        );
        assert_eq!(
            code(load(
                s,
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE nope",
                Some(b"1\n"),
                None
            )),
            1146
        );
        // 3,000 rows (three batches), cut after the second batch's bytes: all undone.
        let big: String = (1..=3000).map(|i| format!("{i}\t{i}\tr\n")).collect();
        let r = load(s, sql, Some(big.as_bytes()), Some(big.len() - 10));
        assert!(r.unwrap_err().message().contains("connection lost"));
        assert_eq!(
            rows(s, "SELECT COUNT(*) FROM t"),
            vec!["Int(1)".to_string()]
        );
        // The same file whole loads every row but the one whose key exists (100).
        match load(s, sql, Some(big.as_bytes()), None) {
            Ok(Outcome::Done { info, .. }) => {
                assert!(
                    info.starts_with("Records: 3000  Deleted: 0  Skipped: 1"),
                    "{info}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            rows(s, "SELECT COUNT(*) FROM t"),
            vec!["Int(3000)".to_string()]
        );
    });
}

fn code(r: Result<Outcome, SqlError>) -> u16 {
    r.map(|_| 0).unwrap_or_else(|e| e.code())
}

fn ok(s: &mut Session, sql: &str) {
    assert!(s.query(sql).pop().expect("a result").is_ok(), "{sql}");
}

fn count(s: &mut Session) -> Vec<String> {
    rows(s, "SELECT COUNT(*) FROM t")
}

/// 3,000 rows: three batches.
fn big() -> String {
    (1..=3000).map(|i| format!("{i}\t{i}\tr\n")).collect()
}

#[test]
fn kill_query_and_max_statement_time_stop_a_load() {
    with_session("kill", |s| {
        let sql = "LOAD DATA LOCAL INFILE 'f' INTO TABLE t";
        let big = big();
        let before = rows(s, "SHOW STATUS LIKE 'Com_load'");
        // Killed in its second batch: 1317, nothing of it left, the session goes on.
        let kill = Hooks {
            kill_at: Some((big.len() / 2, s.process.interrupt.clone())),
            ..Hooks::default()
        };
        assert_eq!(
            code(load_with(s, sql, Some(big.as_bytes()), None, kill)),
            1317
        );
        assert_eq!(count(s), ["Int(1)"]);
        // Past max_statement_time while the client is slow: 1969.
        ok(s, "SET max_statement_time = 0.02");
        let slow = Hooks {
            stall: std::time::Duration::from_millis(150),
            ..Hooks::default()
        };
        assert_eq!(
            code(load_with(s, sql, Some(big.as_bytes()), None, slow)),
            1969
        );
        assert_eq!(count(s), ["Int(1)"]);
        ok(s, "SET max_statement_time = 0");
        // Neither stop outlives its statement.
        assert_eq!(code(load(s, sql, Some(b"7\t7\tz\n"), None)), 0);
        assert_eq!(count(s), ["Int(2)"]);
        let after = rows(s, "SHOW STATUS LIKE 'Com_load'");
        assert_ne!(before, after, "Com_load counts loads");
    });
}

#[test]
fn a_failed_load_in_a_transaction_takes_back_only_itself() {
    with_session("txn", |s| {
        let sql = "LOAD DATA LOCAL INFILE 'f' INTO TABLE t";
        let big = big();
        let cut = Some(big.len() - 10);
        for start in ["BEGIN", "SET autocommit = 0"] {
            ok(s, start);
            ok(s, "INSERT INTO t VALUES (5000, 5, 'mine')");
            // Two batches went in before the client went away: both are taken back, the
            // INSERT before the load stays.
            assert_ne!(code(load(s, sql, Some(big.as_bytes()), cut)), 0);
            assert_eq!(count(s), ["Int(2)"], "{start}");
            assert!(s.in_transaction(), "{start}: the transaction stays open");
            // A load that succeeds is part of the transaction: ROLLBACK takes it back.
            assert_eq!(code(load(s, sql, Some(b"7\t7\tz\n"), None)), 0);
            assert_eq!(count(s), ["Int(3)"]);
            ok(s, "ROLLBACK");
            assert_eq!(count(s), ["Int(1)"], "{start}");
            ok(s, "SET autocommit = 1");
        }
        // Autocommit: one load is one transaction, committed at its end.
        assert_eq!(code(load(s, sql, Some(big.as_bytes()), None)), 0);
        ok(s, "ROLLBACK");
        assert_eq!(count(s), ["Int(3000)"]);
        assert!(!s.in_transaction());
    });
}

/// Expected rows and info lines taken from MariaDB 10.11 (InnoDB) loading the same files.
#[test]
fn variables_and_set_as_mariadb_loads_them() {
    with_session("vars", |s| {
        ok(s, "SET @b = 'before'");
        let info = |r: Result<Outcome, SqlError>| match r {
            Ok(Outcome::Done { info, .. }) => info,
            other => panic!("{other:?}"),
        };
        // A short row reaches no column it misses: no 1261, @b is NULL for it.
        let r = load(
            s,
            "LOAD DATA LOCAL INFILE 'v1' INTO TABLE t (id, @skip, @b) SET c = UPPER(@b)",
            Some("1\tskip\tabc\n2\tx\n3\ty\tdé\\\\f\n".as_bytes()),
            None,
        );
        assert_eq!(info(r), "Records: 3  Deleted: 0  Skipped: 0  Warnings: 0");
        // The variables keep the last row's fields.
        assert_eq!(rows(s, "SELECT @b, @skip"), [r#"Str("dé\\f")|Str("y")"#]);
        // Columns read in SET are the row's; a missing @n is NULL.
        let r = load(
            s,
            "LOAD DATA LOCAL INFILE 'v2' INTO TABLE t (id, @n) \
             SET n = @n * 2, c = CONCAT('x', id, '-', IFNULL(@n, 'null'))",
            Some(b"4\t7\n5\t\\N\n6\n"),
            None,
        );
        assert_eq!(info(r), "Records: 3  Deleted: 0  Skipped: 0  Warnings: 0");
        assert_eq!(rows(s, "SELECT @n"), ["Null"]);
        // Without a list every column takes a field; SET overrides one.
        let r = load(
            s,
            "LOAD DATA LOCAL INFILE 'v3' INTO TABLE t SET c = 'k'",
            Some(b"7\t1\tq\n8\t2\tr\n"),
            None,
        );
        assert_eq!(info(r), "Records: 2  Deleted: 0  Skipped: 0  Warnings: 0");
        assert_eq!(
            rows(s, "SELECT id, n, c FROM t ORDER BY id"),
            [
                r#"Int(1)|Null|Str("ABC")"#,
                r#"Int(2)|Null|Null"#,
                r#"Int(3)|Null|Str("DÉ\\F")"#,
                r#"Int(4)|Int(14)|Str("x4-7")"#,
                r#"Int(5)|Null|Str("x5-null")"#,
                r#"Int(6)|Null|Str("x6-null")"#,
                r#"Int(7)|Int(1)|Str("k")"#,
                r#"Int(8)|Int(2)|Str("k")"#,
                r#"Int(100)|Int(1)|Str("old")"#,
            ]
        );
    });
}

fn warning_codes(s: &mut Session) -> Vec<String> {
    let mut codes: Vec<String> = rows(s, "SHOW WARNINGS")
        .iter()
        .map(|w| w.split('|').nth(1).unwrap_or_default().to_string())
        .collect();
    codes.sort();
    codes
}

/// Awkward files; every expected row, info line and warning list was taken from MariaDB
/// 10.11 (InnoDB, its default strict sql_mode) loading the same bytes.
#[test]
fn awkward_files_load_as_in_mariadb() {
    with_session("awkward", |s| {
        ok(
            s,
            "CREATE TABLE t2 (id INT PRIMARY KEY, n INT, d DECIMAL(6,2), c VARCHAR(8))",
        );
        let info = |r: Result<Outcome, SqlError>| match r {
            Ok(Outcome::Done { info, .. }) => info,
            other => panic!("{other:?}"),
        };
        // Skipped lines, a short row, a long row, bad numbers, \N for a NOT NULL key, a
        // duplicate, out of range, empty fields.
        let a1: &[u8] = b"header line\nskip me too\n1\t10\t1.5\tshort\n2\n\
            3\t30\t2.25\tabcdefghijkl\textra\tmore\n4\t12abc\tx1\t\\N\n\\N\t5\t1\tnullkey\n\
            1\t99\t9\tdup\n5\t-\t99999\tbig\n6\t\t\t\n";
        let sql = "LOAD DATA LOCAL INFILE 'a1' INTO TABLE t2 IGNORE 2 LINES";
        assert_eq!(
            info(load(s, sql, Some(a1), None)),
            "Records: 8  Deleted: 0  Skipped: 1  Warnings: 13"
        );
        let want: Vec<&str> = vec![
            "Int(1062)",
            "Int(1261)",
            "Int(1261)",
            "Int(1261)",
            "Int(1262)",
            "Int(1263)",
            "Int(1264)",
            "Int(1265)",
            "Int(1265)",
            "Int(1366)",
            "Int(1366)",
            "Int(1366)",
            "Int(1366)",
        ];
        assert_eq!(warning_codes(s), want);
        // Enclosed CSV with REPLACE: two rows replaced (one from the file itself).
        let a2: &[u8] = b"\"7\",\"70\",\"7.5\",\"q,uote\"\n8,\"80\",\"0\",\"a\"\"b\"\n\
            \"9\",NULL,\"1e2\",NULL\n\"7\",\"71\",\"0\",\"again\"\n\"1\",\"11\",\"1\",\"repl\"\n";
        let sql = "LOAD DATA LOCAL INFILE 'a2' REPLACE INTO TABLE t2 FIELDS TERMINATED BY ',' \
                   ENCLOSED BY '\"'";
        assert_eq!(
            info(load(s, sql, Some(a2), None)),
            "Records: 5  Deleted: 2  Skipped: 0  Warnings: 0"
        );
        let a3: &[u8] = b"x;y\n10;1\n11;2;3\n10;5\n";
        let sql = "LOAD DATA LOCAL INFILE 'a3' IGNORE INTO TABLE t2 FIELDS TERMINATED BY ';' \
                   IGNORE 1 LINES (id, n)";
        assert_eq!(
            info(load(s, sql, Some(a3), None)),
            "Records: 3  Deleted: 0  Skipped: 1  Warnings: 2"
        );
        assert_eq!(warning_codes(s), ["Int(1062)", "Int(1262)"]);
        let got: Vec<String> = rows(
            s,
            "SELECT CONCAT_WS(' ', id, IFNULL(n, 'NULL'), IFNULL(d, 'NULL'), IFNULL(c, 'NULL')) \
             FROM t2 ORDER BY id",
        )
        .iter()
        .map(|r| {
            r.trim_start_matches("Str(\"")
                .trim_end_matches("\")")
                .replace("\\\"", "\"")
        })
        .collect();
        assert_eq!(
            got,
            [
                "0 5 1.00 nullkey",
                "1 11 1.00 repl",
                "2 NULL NULL NULL",
                "3 30 2.25 abcdefgh",
                "4 12 0.00 NULL",
                "5 0 9999.99 big",
                "6 0 0.00 ",
                "7 71 0.00 again",
                "8 80 0.00 a\"b",
                "9 NULL 100.00 NULL",
                "10 1 NULL NULL",
                "11 2 NULL NULL",
            ]
        );
        // REPLACE keeps strict mode: a short or long row fails the load, nothing stays.
        ok(s, "CREATE TABLE t3 (id INT PRIMARY KEY, d DECIMAL(6,2))");
        let sql = "LOAD DATA LOCAL INFILE 'a1' REPLACE INTO TABLE t3 IGNORE 2 LINES (id, @x, d)";
        assert_eq!(code(load(s, sql, Some(a1), None)), 1262);
        let sql = "LOAD DATA LOCAL INFILE 's' REPLACE INTO TABLE t3";
        assert_eq!(code(load(s, sql, Some(b"20\n"), None)), 1261);
        let sql = "LOAD DATA LOCAL INFILE 's' REPLACE INTO TABLE t3 (id, @x)";
        assert_eq!(code(load(s, sql, Some(b"20\n"), None)), 0);
        assert_eq!(rows(s, "SELECT id, d FROM t3"), ["Int(20)|Null"]);
        // \N for a NOT NULL column: its zero with 1263; under REPLACE the load's error.
        ok(
            s,
            "CREATE TABLE t4 (id INT PRIMARY KEY, s VARCHAR(5) NOT NULL)",
        );
        let sql = "LOAD DATA LOCAL INFILE 'n' INTO TABLE t4";
        assert_eq!(
            info(load(s, sql, Some(b"5\t\\N\n"), None)),
            "Records: 1  Deleted: 0  Skipped: 0  Warnings: 1"
        );
        assert_eq!(warning_codes(s), ["Int(1263)"]);
        assert_eq!(rows(s, "SELECT id, s FROM t4"), [r#"Int(5)|Str("")"#]);
        let sql = "LOAD DATA LOCAL INFILE 'n' REPLACE INTO TABLE t4 (id, @x)";
        assert_eq!(code(load(s, sql, Some(b"\\N\t1\n"), None)), 1263);
    });
}

/// As MariaDB 10.11 loads the same bytes.
#[test]
fn character_sets_latin1_and_binary() {
    with_session("charset", |s| {
        ok(
            s,
            "CREATE TABLE t5 (id INT PRIMARY KEY, c VARCHAR(10), b VARBINARY(10))",
        );
        let sql = "LOAD DATA LOCAL INFILE 'l' INTO TABLE t5 CHARACTER SET latin1 (id, c)";
        assert_eq!(code(load(s, sql, Some(b"1\tcaf\xe9 \x80\x9f\n"), None)), 0);
        let sql = "LOAD DATA LOCAL INFILE 'b' INTO TABLE t5 CHARACTER SET binary (id, b)";
        assert_eq!(code(load(s, sql, Some(b"2\t\xff\xfeab\n"), None)), 0);
        let sql = "LOAD DATA LOCAL INFILE 'b' INTO TABLE t5 CHARACTER SET klingon (id, b)";
        assert_eq!(code(load(s, sql, Some(b"3\tx\n"), None)), 1115);
        assert_eq!(
            rows(s, "SELECT id, HEX(c), HEX(b) FROM t5 ORDER BY id"),
            [
                r#"Int(1)|Str("636166C3A920E282ACC5B8")|Null"#,
                r#"Int(2)|Null|Str("FFFE6162")"#,
            ]
        );
    });
}

/// The two ways rows reach the INSERT (values without SET, printed text with it) agree: the
/// same awkward file loaded with `SET c = c` (which reads the row's field, so changes no
/// value) leaves the same rows, counts and warning codes.
#[test]
fn the_text_and_value_paths_agree() {
    with_session("paths", |s| {
        let file: &[u8] = b"1\t10\tok\n2\n3\t12abc\tlong text here\tx\n\\N\t5\tk\n1\t9\tdup\n\
            4\t-\t'q\\\\\n5\t99999999999\t\n";
        let mut seen = Vec::new();
        for (table, set) in [("p1", ""), ("p2", " SET c = c")] {
            ok(
                s,
                &format!("CREATE TABLE {table} (id INT PRIMARY KEY, n INT, c VARCHAR(6))"),
            );
            let sql = format!("LOAD DATA LOCAL INFILE 'f' INTO TABLE {table}{set}");
            let info = match load(s, &sql, Some(file), None) {
                Ok(Outcome::Done { info, .. }) => info,
                other => panic!("{sql}: {other:?}"),
            };
            let codes = warning_codes(s);
            let got = rows(s, &format!("SELECT * FROM {table} ORDER BY id"));
            seen.push((info, codes, got));
        }
        assert_eq!(seen[0], seen[1]);
        assert!(
            seen[0].0.starts_with("Records: 7  Deleted: 0  Skipped: 1"),
            "{:?}",
            seen[0]
        );
    });
}
