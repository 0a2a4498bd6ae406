//! SHOW PROCESSLIST's rows (also `information_schema.PROCESSLIST`'s).

use crate::admin::s;
use crate::instance::session::Session;
use crate::types::value::Value;

/// SHOW PROCESSLIST's rows (also `information_schema.PROCESSLIST`'s), by connection id;
/// without `full` the statement text is cut to 100 characters, as MySQL cuts it.
pub(crate) fn processlist_rows(sess: &Session, full: bool) -> Vec<Vec<Value>> {
    let procs: Vec<_> = sess.inst.processes.lock().values().cloned().collect();
    procs
        .iter()
        .map(|p| {
            let a = p.activity.lock().clone();
            let info = if a.command == "Sleep" {
                Value::Null
            } else if full {
                Value::Str(a.info)
            } else {
                Value::Str(a.info.chars().take(100).collect())
            };
            let state = if a.command == "Sleep" {
                ""
            } else {
                "executing"
            };
            vec![
                Value::Int(p.id as i64),
                s(p.user.clone()),
                s(p.host.lock().clone()),
                a.db.map_or(Value::Null, Value::Str),
                s(a.command),
                Value::Int(a.since.elapsed().as_secs().min(i32::MAX as u64) as i64),
                s(state),
                info,
            ]
        })
        .collect()
}
