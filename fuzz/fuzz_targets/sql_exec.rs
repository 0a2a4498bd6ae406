//! SQL text to execution: the input, as the server turns COM_QUERY bytes into text, runs in a
//! fresh session (user root, database `fz`) of one instance per process, on a temporary data
//! directory with two small tables. Inputs run on one thread with the stack a server
//! connection gets (2 MiB), so a recursion that would overflow a connection's stack overflows
//! here too. Statements must return results or errors, never panic, abort or grow without
//! bound (libFuzzer's -rss_limit_mb and -timeout catch the last two).
//!
//! The session sets max_execution_time (ignored until the limits land) so that an input that
//! is merely slow ends on its own. An input that changes the fixture (DROP TABLE, DELETE, ...)
//! is followed by a reset of database `fz`, so that inputs stay reproducible.
#![no_main]

use std::sync::{mpsc, Arc, Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use zipdb_engine::{Database, FlushPolicy, Options};
use zipdb_sql::{Instance, InstanceOptions, Outcome, Session};

/// What a server connection thread gets (crates/server/src/server.rs).
const CONNECTION_STACK_BYTES: usize = 2 << 20;

const FIXTURE: &[&str] = &[
    "DROP DATABASE IF EXISTS fz",
    "CREATE DATABASE fz",
    "USE fz",
    "CREATE TABLE t (id INT PRIMARY KEY, a INT, s VARCHAR(20), d DATETIME, x DECIMAL(10,2), KEY ka (a))",
    "INSERT INTO t VALUES (1, 10, 'a', '2024-01-01 00:00:00', 1.5), (2, 20, 'bb', NULL, -2.25), \
     (3, NULL, 'ccc', '1999-12-31 23:59:59', 0), (4, 10, '', '2000-02-29 12:00:00', 99999999.99), \
     (5, -1, NULL, NULL, NULL)",
    "CREATE TABLE u (id INT PRIMARY KEY, tid INT, v TEXT)",
    "INSERT INTO u VALUES (1, 1, 'x'), (2, 1, 'y'), (3, 2, NULL), (4, 9, 'zz')",
];

/// The fixture's fingerprint: changed by any input that alters it.
const CHECK: &str = "SELECT COUNT(*), SUM(id), SUM(a), (SELECT COUNT(*) FROM fz.u) FROM fz.t";

fn instance() -> &'static (Arc<Instance>, String) {
    static INST: OnceLock<(Arc<Instance>, String)> = OnceLock::new();
    INST.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("zipdb-fuzz-sql-exec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let opts = Options {
            pool_bytes: 16 << 20,
            wal_bytes: 8 << 20,
            flush_policy: FlushPolicy::None,
            recovery_progress: false,
            ..Options::default()
        };
        let db = Database::open(&dir, opts).expect("open database");
        let inst = Instance::open(db, InstanceOptions::default()).expect("open instance");
        let mut s = inst.session("root", 1);
        run_fixture(&mut s);
        let fingerprint = fingerprint(&mut s);
        (inst, fingerprint)
    })
}

fn run_fixture(s: &mut Session) {
    for sql in FIXTURE {
        for r in s.query(sql) {
            if let Err(e) = r {
                panic!("fixture {sql}: {}", e.message());
            }
        }
    }
}

fn fingerprint(s: &mut Session) -> String {
    match s.query(CHECK).pop() {
        Some(Ok(Outcome::Rows { rows, .. })) => format!("{:?}", rows),
        other => format!("{:?}", other.map(|r| r.map(|_| ()).map_err(|e| e.code()))),
    }
}

/// The thread inputs run on, started once (a thread per input costs ~10 ms under ASan). A
/// panic there aborts the process (libfuzzer-sys's panic hook), so libFuzzer sees it.
struct Worker {
    to: mpsc::Sender<String>,
    done: mpsc::Receiver<()>,
}

fn worker() -> &'static Mutex<Worker> {
    static W: OnceLock<Mutex<Worker>> = OnceLock::new();
    W.get_or_init(|| {
        let (inst, expected) = instance();
        let inst = Arc::clone(inst);
        let expected = expected.clone();
        let (to, inputs) = mpsc::channel::<String>();
        let (finished, done) = mpsc::channel();
        std::thread::Builder::new()
            .name("sql-exec".into())
            .stack_size(CONNECTION_STACK_BYTES)
            .spawn(move || {
                for sql in inputs {
                    let mut s = inst.session("root", 2);
                    let _ = s.use_db("fz");
                    let _ = s.query("SET SESSION max_execution_time = 1000");
                    let _ = s.query(&sql);
                    drop(s);
                    let mut check = inst.session("root", 3);
                    if fingerprint(&mut check) != expected {
                        run_fixture(&mut check);
                    }
                    let _ = finished.send(());
                }
            })
            .expect("spawn");
        Mutex::new(Worker { to, done })
    })
}

fuzz_target!(|data: &[u8]| {
    let sql = zipdb_sql::sql_from_bytes(data).to_string();
    let w = worker().lock().unwrap_or_else(|e| e.into_inner());
    w.to.send(sql).expect("worker alive");
    w.done.recv().expect("worker alive");
});
