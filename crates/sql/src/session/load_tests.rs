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
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE t (@a) SET id = @a",
                Some(b"1\n"),
                None
            )),
            1235
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
