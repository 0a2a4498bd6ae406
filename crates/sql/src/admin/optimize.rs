//! `OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE t [, t2 ...]` (issue 19 step 7): FSST tables
//! are rewritten onto a freshly trained symbol table (`zipdb_engine::Tree::optimize`); other
//! formats have nothing to rebuild. The result set is MySQL's (Table, Op, Msg_type,
//! Msg_text), one `status OK` row per table, or an `Error` row and `Operation failed` for a
//! missing one, as MySQL reports per table instead of failing the statement.

use crate::admin::s;
use crate::admin::show::{rows, words};
use crate::instance::session::Session;
use crate::types::result::Outcome;
use crate::SqlError;

/// The statement when `sql` is one (decided on the first word).
pub fn try_optimize(sess: &mut Session, sql: &str) -> Option<Result<Outcome, SqlError>> {
    let head = sql.trim_start().get(..8)?;
    if !head.eq_ignore_ascii_case("OPTIMIZE") {
        return None;
    }
    let sql = &*crate::front::split::without_comments(sql);
    let w = words(sql);
    let kw = |i: usize, k: &str| {
        w.get(i)
            .is_some_and(|x| !x.1 && x.0.eq_ignore_ascii_case(k))
    };
    if !kw(0, "OPTIMIZE") {
        return None;
    }
    let mut i = 1;
    if kw(i, "NO_WRITE_TO_BINLOG") || kw(i, "LOCAL") {
        i += 1;
    }
    if !(kw(i, "TABLE") || kw(i, "TABLES")) {
        return Some(Err(SqlError::syntax(sql.trim_start(), 1)));
    }
    i += 1;
    let mut names = Vec::new();
    loop {
        let Some((first, _)) = w.get(i) else {
            return Some(Err(SqlError::syntax(sql.trim_start(), 1)));
        };
        let (db, table) = if w.get(i + 1).is_some_and(|x| x.0 == "." && !x.1) {
            let Some((t, _)) = w.get(i + 2) else {
                return Some(Err(SqlError::syntax(sql.trim_start(), 1)));
            };
            i += 3;
            (Some(first.clone()), t.clone())
        } else {
            i += 1;
            (None, first.clone())
        };
        names.push((db, table));
        match w.get(i) {
            None => break,
            Some((c, false)) if c == "," => i += 1,
            Some(_) => return Some(Err(SqlError::syntax(sql.trim_start(), 1))),
        }
    }
    Some(optimize(sess, &names))
}

fn optimize(sess: &mut Session, names: &[(Option<String>, String)]) -> Result<Outcome, SqlError> {
    // Like other maintenance statements, it commits an open transaction first.
    sess.commit()?;
    let mut out = Vec::new();
    for (db, table) in names {
        let db = match db {
            Some(d) => d.clone(),
            None => sess.db.clone().ok_or_else(SqlError::no_db)?,
        };
        let full = format!("{db}.{table}");
        let row = |kind: &str, text: String| vec![s(full.clone()), s("optimize"), s(kind), s(text)];
        let t = match sess.inst.table(&db, table) {
            Ok(t) if t.virt.is_none() => t,
            Ok(_) => {
                // information_schema: nothing stored to rebuild.
                out.push(row(
                    "note",
                    "The storage engine for the table doesn't support optimize".into(),
                ));
                continue;
            }
            Err(e) => {
                out.push(row("Error", e.into_message()));
                out.push(row("status", "Operation failed".into()));
                continue;
            }
        };
        let r = std::iter::once(&t.primary)
            .chain(&t.indexes)
            .try_for_each(|tree| tree.optimize().map(drop));
        match r {
            Ok(()) => out.push(row("status", "OK".into())),
            Err(e) => {
                let e = SqlError::engine(e);
                out.push(row("Error", e.into_message()));
                out.push(row("status", "Operation failed".into()));
            }
        }
    }
    Ok(rows(&["Table", "Op", "Msg_type", "Msg_text"], out))
}
