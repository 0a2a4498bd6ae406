//! SELECTs that stream (steps E2, E3, E4): their rows reach the sink as the scan (or join, or
//! UNION ALL) yields them, so a result larger than `max_session_mem_used` succeeds, and
//! blocking stages hold only what they need; KILL and a client gone stop such a statement
//! part way, and the session goes on.

use std::sync::Arc;

use zipdb_sql::{ColumnMeta, ResultSink, Session, SinkClosed, StatementEnd, Value};

mod common;
use common::{fixture, q};

const ROWS: usize = 20_000;

/// A table of `ROWS` rows of ~100 bytes each (about 2 MB of result).
fn filled(s: &mut Session) {
    q(s, "CREATE DATABASE d");
    s.use_db("d").unwrap();
    q(
        s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120), KEY k_1 (k))",
    );
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(2000) {
        let values: Vec<String> = chunk
            .iter()
            .map(|i| format!("({i}, {}, REPEAT('x', 100))", i % 97))
            .collect();
        q(s, &format!("INSERT INTO t VALUES {}", values.join(",")));
    }
}

/// Counts rows; on row `at`, calls `on_row` (once); refuses rows after `close_after`.
struct Counter<'f> {
    rows: usize,
    at: usize,
    on_row: Option<Box<dyn FnMut() + 'f>>,
    close_after: Option<usize>,
    end: Option<Result<(), u16>>,
}

impl<'f> Counter<'f> {
    fn new() -> Counter<'f> {
        Counter {
            rows: 0,
            at: usize::MAX,
            on_row: None,
            close_after: None,
            end: None,
        }
    }
}

impl ResultSink for Counter<'_> {
    fn columns(
        &mut self,
        _: &Arc<Vec<ColumnMeta>>,
        _: zipdb_sql::Status,
    ) -> Result<(), SinkClosed> {
        Ok(())
    }

    fn row(&mut self, _: &[Value]) -> Result<(), SinkClosed> {
        if self.close_after.is_some_and(|n| self.rows >= n) {
            return Err(SinkClosed);
        }
        self.rows += 1;
        if self.rows == self.at {
            if let Some(f) = &mut self.on_row {
                f();
            }
        }
        Ok(())
    }

    fn end(&mut self, end: StatementEnd<'_>) {
        self.end = Some(match end {
            StatementEnd::Error(e) => Err(e.code()),
            _ => Ok(()),
        });
    }
}

fn code(s: &mut Session, sql: &str) -> Option<u16> {
    match s.query(sql).pop().unwrap() {
        Ok(_) => None,
        Err(e) => Some(e.code()),
    }
}

#[test]
fn a_select_star_larger_than_max_session_mem_used_streams_and_succeeds() {
    let f = fixture("stream");
    let mut s = f.inst.session("root", 1);
    filled(&mut s);
    // Far below the ~2 MB the result holds.
    q(&mut s, "SET max_session_mem_used = 200000");
    let mut c = Counter::new();
    s.query_into("SELECT * FROM t", &mut c);
    assert_eq!((c.rows, c.end), (ROWS, Some(Ok(()))));
    let mut c = Counter::new();
    s.query_into(
        "SELECT id, c FROM t WHERE k + 0 < 50 ORDER BY id DESC",
        &mut c,
    );
    assert_eq!(c.end, Some(Ok(())));
    assert_eq!(c.rows, (0..ROWS).filter(|i| i % 97 < 50).count());
    // A sort the scan does not give spills its rows past the budget (E6) and succeeds...
    let mut c = Counter::new();
    s.query_into("SELECT * FROM t ORDER BY c, id", &mut c);
    assert_eq!((c.rows, c.end), (ROWS, Some(Ok(()))));
    // ... and is held to the temporary-space cap instead.
    q(&mut s, "SET max_tmp_session_space_usage = 65536");
    assert_eq!(code(&mut s, "SELECT * FROM t ORDER BY c, id"), Some(4198));
    q(&mut s, "SET max_tmp_session_space_usage = 1073741824");
    // ORDER BY … LIMIT holds only the rows it can still send, whatever the table's size.
    let want: Vec<Vec<String>> = (0..ROWS)
        .filter(|i| i % 97 == 96)
        .skip(2)
        .take(3)
        .map(|i| vec![i.to_string()])
        .collect();
    assert_eq!(
        q(
            &mut s,
            "SELECT id FROM t ORDER BY k DESC, id LIMIT 3 OFFSET 2"
        ),
        want
    );
    // Grouping holds its groups, DISTINCT its distinct rows: not the table.
    assert_eq!(q(&mut s, "SELECT k, COUNT(*) FROM t GROUP BY k").len(), 97);
    assert_eq!(q(&mut s, "SELECT DISTINCT k FROM t").len(), 97);
}

#[test]
fn joins_and_union_all_larger_than_max_session_mem_used_stream_and_succeed() {
    let f = fixture("stream");
    let mut s = f.inst.session("root", 1);
    filled(&mut s);
    q(&mut s, "CREATE TABLE m (id INT PRIMARY KEY, x INT)");
    q(&mut s, "INSERT INTO m VALUES (1, 1), (2, 2), (3, 3)");
    q(&mut s, "SET max_session_mem_used = 200000");
    for (sql, rows) in [
        // A loop join (m held, 3 rows) and a lookup join, each ~2-6 MB of result.
        ("SELECT t.*, m.x FROM t JOIN m ON m.x < t.k + 10", 3 * ROWS),
        ("SELECT a.c, b.c FROM t a JOIN t b ON b.id = a.id", ROWS),
        ("SELECT c FROM t UNION ALL SELECT c FROM t", 2 * ROWS),
        (
            "SELECT d.c, m.x FROM (SELECT c, k FROM t) d LEFT JOIN m ON m.id = d.k",
            ROWS,
        ),
    ] {
        let mut c = Counter::new();
        s.query_into(sql, &mut c);
        assert_eq!((c.rows, c.end), (rows, Some(Ok(()))), "{sql}");
    }
    // UNION (DISTINCT) streams its operands into one DISTINCT, which spills its keys past
    // the budget: first occurrences, in order.
    let mut c = Counter::new();
    s.query_into(
        "SELECT c, id FROM t UNION SELECT c, id FROM t UNION ALL SELECT c, id FROM t",
        &mut c,
    );
    assert_eq!((c.rows, c.end), (2 * ROWS, Some(Ok(()))));
    let ids: Vec<Vec<String>> = q(
        &mut s,
        "SELECT id FROM t WHERE id < 3 UNION SELECT id FROM t WHERE id < 5 UNION SELECT 1",
    );
    assert_eq!(
        ids,
        [["0"], ["1"], ["2"], ["3"], ["4"]].map(|r| vec![r[0].to_string()])
    );
    // INTERSECT and EXCEPT sort their operands, spilling past the budget (they held them
    // and failed with 1290 before): every row, in the first operand's order.
    for (sql, rows) in [
        ("SELECT c, id FROM t INTERSECT SELECT c, id FROM t", ROWS),
        (
            "SELECT c, id FROM t INTERSECT ALL SELECT c, id FROM t",
            ROWS,
        ),
        (
            "SELECT c, id FROM t EXCEPT SELECT c, id FROM t WHERE id % 2 = 0",
            ROWS / 2,
        ),
        (
            "SELECT c, id FROM t EXCEPT ALL SELECT c, id FROM t UNION ALL SELECT c, id FROM t",
            ROWS,
        ),
    ] {
        let mut c = Counter::new();
        s.query_into(sql, &mut c);
        assert_eq!((c.rows, c.end), (rows, Some(Ok(()))), "{sql}");
    }
    let ids: Vec<Vec<String>> = q(
        &mut s,
        "SELECT id FROM t WHERE id < 6 EXCEPT SELECT id FROM t WHERE id IN (1, 4) \
         INTERSECT ALL SELECT id FROM t WHERE id > 2",
    );
    // INTERSECT binds tighter: 0..5 less (1, 4 INTERSECT ALL 3..).
    assert_eq!(
        ids,
        [["0"], ["1"], ["2"], ["3"], ["5"]].map(|r| vec![r[0].to_string()])
    );
}

#[test]
fn kill_query_stops_a_streaming_select_part_way() {
    let f = fixture("stream");
    let mut s = f.inst.session("root", 7);
    filled(&mut s);
    let mut killer = f.inst.session("root", 8);
    let mut c = Counter::new();
    c.at = 1000;
    c.on_row = Some(Box::new(|| {
        assert!(killer.query("KILL QUERY 7").pop().unwrap().is_ok());
    }));
    s.query_into("SELECT * FROM t", &mut c);
    assert_eq!(c.end, Some(Err(1317)));
    // The KILL is seen within the next 256 rows sent, long before the end.
    assert!(c.rows >= 1000 && c.rows < 1000 + 256, "{}", c.rows);
    assert_eq!(q(&mut s, "SELECT COUNT(*) FROM t"), [[ROWS.to_string()]]);
}

#[test]
fn a_client_gone_mid_stream_fails_the_statement_and_the_session_goes_on() {
    let f = fixture("stream");
    let mut s = f.inst.session("root", 1);
    filled(&mut s);
    let mut c = Counter::new();
    c.close_after = Some(5000);
    s.query_into("SELECT id, k FROM t WHERE id >= 100 ORDER BY id", &mut c);
    assert_eq!((c.rows, c.end), (5000, Some(Err(1160))));
    assert!(!s.in_transaction());
    assert_eq!(
        q(&mut s, "SELECT id FROM t WHERE id > 19997"),
        [["19998"], ["19999"]]
    );
}

/// EXISTS reads one row of its subquery and a scalar subquery two, as MariaDB's do: over a
/// table far larger than the budget, EXISTS answers and a scalar subquery of many rows fails
/// with "more than 1 row" (1242), not with the budget's 1290.
#[test]
fn exists_and_scalar_subqueries_read_only_the_rows_they_need() {
    let f = fixture("stream");
    let mut s = f.inst.session("root", 1);
    filled(&mut s);
    q(&mut s, "CREATE TABLE m (id INT PRIMARY KEY, x INT)");
    q(&mut s, "INSERT INTO m VALUES (1, 1), (2, 2), (3, 3)");
    q(&mut s, "SET max_session_mem_used = 200000");
    assert_eq!(
        q(
            &mut s,
            "SELECT EXISTS (SELECT c FROM t), NOT EXISTS (SELECT * FROM t a, t b)"
        ),
        vec![vec!["1".to_string(), "0".to_string()]]
    );
    assert_eq!(
        q(
            &mut s,
            "SELECT id FROM m WHERE EXISTS (SELECT 1 FROM t WHERE t.k >= m.x) ORDER BY id"
        ),
        vec![
            vec!["1".to_string()],
            vec!["2".to_string()],
            vec!["3".to_string()]
        ]
    );
    assert_eq!(code(&mut s, "SELECT (SELECT c FROM t)"), Some(1242));
    assert_eq!(
        q(
            &mut s,
            "SELECT (SELECT c FROM t WHERE id = 5) = REPEAT('x', 100)"
        ),
        vec![vec!["1".to_string()]]
    );
    // UPDATE/DELETE run theirs ahead the same way.
    q(
        &mut s,
        "UPDATE m SET x = x + 1 WHERE EXISTS (SELECT c FROM t)",
    );
    assert_eq!(
        q(&mut s, "SELECT SUM(x) FROM m"),
        vec![vec!["9".to_string()]]
    );
    assert_eq!(
        code(&mut s, "DELETE FROM m WHERE x = (SELECT k FROM t)"),
        Some(1242)
    );
}

/// An uncorrelated IN or ANY/ALL subquery whose rows do not fit in the budget is run per
/// outer row, streamed, instead of failing the statement with 1290: the same answers.
#[test]
fn uncorrelated_in_and_all_subqueries_past_the_budget_run_per_row() {
    let f = fixture("stream");
    let mut s = f.inst.session("root", 1);
    filled(&mut s);
    let queries = [
        "SELECT id FROM t WHERE id < 60 AND id IN (SELECT id + 7 FROM t WHERE k % 3 = 0)",
        "SELECT id FROM t WHERE id < 60 AND k NOT IN (SELECT k + 20 FROM t WHERE id > 100)",
        "SELECT id FROM t WHERE id < 40 AND id >= ALL (SELECT k FROM t WHERE c > '')",
        "SELECT id FROM t WHERE id < 40 AND id + 60 > ANY (SELECT id FROM t WHERE id > 19990)",
        "SELECT id, id IN (SELECT id * 2 FROM t) FROM t WHERE id < 30",
    ];
    let want: Vec<Vec<Vec<String>>> = queries.iter().map(|sql| q(&mut s, sql)).collect();
    assert!(want.iter().any(|r| !r.is_empty()));
    // Far below the ~2 MB the subqueries' rows take.
    q(&mut s, "SET max_session_mem_used = 200000");
    for (sql, want) in queries.iter().zip(&want) {
        assert_eq!(&q(&mut s, sql), want, "{sql}");
    }
    // One that fits is held once, as before.
    assert_eq!(
        q(
            &mut s,
            "SELECT COUNT(*) FROM t WHERE id IN (SELECT id FROM t WHERE id < 3)"
        ),
        [["3"]]
    );
}
