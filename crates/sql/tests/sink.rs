//! `Session::query_into`/`execute_into` and the `ResultSink` contract: what a sink is handed
//! and in which order, and that a sink that closes fails its statement (rolled back to the
//! statement's savepoint) and ends the command.

use std::sync::Arc;

use zipdb_sql::{ColumnMeta, ResultSink, SinkClosed, StatementEnd, Value};

mod common;
use common::{fixture, q};

/// What a sink was handed, as text.
#[derive(Default)]
struct Recorder {
    events: Vec<String>,
    /// Refuse rows after this many (the client went away).
    close_after: Option<usize>,
    rows: usize,
}

impl ResultSink for Recorder {
    fn columns(
        &mut self,
        columns: &Arc<Vec<ColumnMeta>>,
        st: zipdb_sql::Status,
    ) -> Result<(), SinkClosed> {
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        self.events
            .push(format!("columns {} more={}", names.join(","), st.more));
        Ok(())
    }

    fn row(&mut self, row: &[Value]) -> Result<(), SinkClosed> {
        if self.close_after.is_some_and(|n| self.rows >= n) {
            return Err(SinkClosed);
        }
        self.rows += 1;
        let vals: Vec<String> = row
            .iter()
            .map(|v| v.to_string_lossy().unwrap_or_else(|| "NULL".into()))
            .collect();
        self.events.push(format!("row {}", vals.join(",")));
        Ok(())
    }

    fn end(&mut self, end: StatementEnd<'_>) {
        self.events.push(match end {
            StatementEnd::Rows(st) => format!("end rows warnings={} more={}", st.warnings, st.more),
            StatementEnd::Done {
                affected_rows,
                status,
                ..
            } => format!("end done {affected_rows} more={}", status.more),
            StatementEnd::Error(e) => format!("end error {}", e.code()),
        });
    }
}

#[test]
fn each_statement_gets_its_columns_rows_and_one_end_in_order() {
    let f = fixture("sink");
    let mut s = f.inst.session("root", 1);
    s.set_multi_statements(true);
    q(&mut s, "CREATE DATABASE d");
    s.use_db("d").unwrap();
    q(&mut s, "CREATE TABLE t (i INT PRIMARY KEY)");
    let mut r = Recorder::default();
    s.query_into(
        "INSERT INTO t VALUES (1), (2); SELECT i, i / 0 AS z FROM t; SELECT * FROM nope; SELECT 1",
        &mut r,
    );
    assert_eq!(
        r.events,
        [
            "end done 2 more=true",
            "columns i,z more=true",
            "row 1,NULL",
            "row 2,NULL",
            "end rows warnings=2 more=true",
            // The first error ends the command: the last statement does not run.
            "end error 1146",
        ]
    );
    // A statement without a result set through EXECUTE, and an unknown statement id.
    let id = s.prepare("SELECT i FROM t WHERE i > ?").unwrap().id;
    let mut r = Recorder::default();
    s.execute_into(id, &[Value::Int(1)], &mut r);
    s.execute_into(id + 100, &[], &mut r);
    assert_eq!(
        r.events,
        [
            "columns i more=false",
            "row 2",
            "end rows warnings=0 more=false",
            "end error 1243",
        ]
    );
}

#[test]
fn a_sink_that_closes_fails_its_statement_and_ends_the_command_leaving_the_transaction_open() {
    let f = fixture("sink");
    let mut s = f.inst.session("root", 1);
    s.set_multi_statements(true);
    q(&mut s, "CREATE DATABASE d");
    s.use_db("d").unwrap();
    q(&mut s, "CREATE TABLE t (i INT PRIMARY KEY)");
    let values: Vec<String> = (0..1000).map(|i| format!("({i})")).collect();
    q(
        &mut s,
        &format!("INSERT INTO t VALUES {}", values.join(",")),
    );
    q(&mut s, "BEGIN");
    q(&mut s, "INSERT INTO t VALUES (5000)");
    let mut r = Recorder {
        close_after: Some(10),
        ..Recorder::default()
    };
    s.query_into("SELECT i FROM t; INSERT INTO t VALUES (6000)", &mut r);
    assert_eq!(r.rows, 10);
    assert_eq!(
        r.events.last().map(String::as_str),
        Some("end error 1160"),
        "{:?}",
        r.events
    );
    assert_eq!(
        r.events.len(),
        1 + 10 + 1,
        "nothing ran after the failed statement"
    );
    // The transaction is still open, with what came before the failed statement only.
    assert!(s.in_transaction());
    assert_eq!(
        q(&mut s, "SELECT COUNT(*), MAX(i) FROM t"),
        [["1001", "5000"]]
    );
    q(&mut s, "ROLLBACK");
    assert_eq!(q(&mut s, "SELECT COUNT(*) FROM t"), [["1000"]]);
}
