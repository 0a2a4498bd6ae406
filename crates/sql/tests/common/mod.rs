//! What the SQL integration tests share: a database in a temporary folder that is removed
//! when the test ends, an instance over it, and statement helpers. Each test binary uses part
//! of it, so items unused by one binary are not dead code.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use zipdb_engine::{Database, FlushPolicy, Options};
use zipdb_sql::{Instance, InstanceOptions, Outcome, Session, Value};

/// A temporary folder, removed on drop.
pub struct Dir(pub PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh folder under the system's temporary one, named after `tag`, the process and a
/// counter, so parallel tests and concurrent test binaries never share one.
pub fn temp_dir(tag: &str) -> Dir {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "zipdb-sql-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    Dir(dir)
}

/// Opens (or reopens) the database in `dir` with small test limits, and an instance over it.
pub fn open(dir: &Path, options: InstanceOptions) -> (Database, Arc<Instance>) {
    let opts = Options {
        pool_bytes: 16 << 20,
        wal_bytes: 8 << 20,
        flush_policy: FlushPolicy::None,
        recovery_progress: false,
        ..Options::default()
    };
    let db = Database::open(dir, opts).expect("open database");
    let inst = Instance::open(db.clone(), options).expect("open instance");
    (db, inst)
}

/// An instance with default options over a fresh database; the folder goes with it.
pub struct Fixture {
    pub inst: Arc<Instance>,
    // Dropped after `inst` (fields drop in order), so the folder outlives the instance.
    _dir: Dir,
}

pub fn fixture(tag: &str) -> Fixture {
    let dir = temp_dir(tag);
    let (_, inst) = open(&dir.0, InstanceOptions::default());
    Fixture { inst, _dir: dir }
}

pub fn text(v: &Value) -> String {
    v.to_string_lossy().unwrap_or_else(|| "NULL".into())
}

/// Runs one statement that must succeed; its rows as text (NULL as "NULL"; empty for a
/// statement without rows).
pub fn q(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    let mut r = s.query(sql);
    assert_eq!(r.len(), 1, "{sql}");
    match r.remove(0) {
        Ok(Outcome::Rows { rows, .. }) => rows
            .iter()
            .map(|row| row.iter().map(text).collect())
            .collect(),
        Ok(Outcome::Done { .. }) => Vec::new(),
        Err(e) => panic!("{sql}: error {} {}", e.code(), e.message()),
    }
}
