//! Variables: SET, system variables (the session's, the instance's limits, the embedding
//! server's), their defaults and the list SHOW VARIABLES prints.

use std::sync::atomic::Ordering;

use sqlparser::ast;
use zipdb_engine::IsolationLevel;

use crate::bind::compile::Compiler;
use crate::catalog::format_name;
use crate::error::{ErrorKind, SqlError};
use crate::instance::session::Session;
use crate::instance::txn::isolation_of;
use crate::types::result::Outcome;
use crate::types::value::Value;

impl Session {
    pub(crate) fn set(&mut self, set: &ast::Set) -> Result<Outcome, SqlError> {
        match set {
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => {
                let name = variable.to_string();
                let v = values.first().ok_or_else(|| SqlError::syntax("SET", 1))?;
                let global = matches!(scope, Some(ast::ContextModifier::Global));
                self.set_var(&name, v, global)?;
            }
            ast::Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    let global = matches!(a.scope, Some(ast::ContextModifier::Global));
                    self.set_var(&a.name.to_string(), &a.value, global)?;
                }
            }
            ast::Set::SetNames { .. } | ast::Set::SetNamesDefault {} => {}
            ast::Set::SetTransaction { modes, .. } => {
                for m in modes {
                    if let ast::TransactionMode::IsolationLevel(l) = m {
                        self.isolation = isolation_of(l);
                    }
                }
            }
            ast::Set::SetTimeZone { .. } => {}
            other => {
                return Err(SqlError::unsupported(&other.to_string()));
            }
        }
        Ok(Outcome::done(0))
    }

    pub(crate) fn set_var(
        &mut self,
        raw: &str,
        value: &ast::Expr,
        global: bool,
    ) -> Result<(), SqlError> {
        let name = raw.to_ascii_lowercase();
        let global = global || name.starts_with("@@global.") || name.starts_with("global ");
        let name = name
            .trim_start_matches("@@")
            .trim_start_matches("session.")
            .trim_start_matches("local.")
            .trim_start_matches("global.")
            .trim_start_matches("session ")
            .trim_start_matches("global ")
            .trim_matches('`')
            .to_string();
        let mut c = Compiler::new();
        let vars = |n: &str| self.sysvar(n);
        let v = match value {
            // `SET x = @saved`: a user variable (NULL when never set, as in MySQL).
            ast::Expr::Identifier(id)
                if id.value.starts_with('@') && !id.value.starts_with("@@") =>
            {
                self.user_vars
                    .get(&id.value[1..].trim_matches('`').to_ascii_lowercase())
                    .cloned()
                    .unwrap_or(Value::Null)
            }
            // `SET x = ON` / `= DEFAULT`: bare words are values here.
            ast::Expr::Identifier(id) => Value::Str(id.value.clone()),
            e => c
                .compile(
                    e,
                    &mut crate::bind::scope::NoScope {
                        vars: &vars,
                        clause: "set",
                    },
                )?
                .eval(&[], &self.ctx(&[]))?,
        };
        if let Some(user_var) = name.strip_prefix('@') {
            self.user_vars
                .insert(user_var.trim_matches('`').to_ascii_lowercase(), v);
            return Ok(());
        }
        // Unknown variables are an error, as in MySQL.
        self.sysvar(&name)?;
        let truth = |v: &Value| -> Result<bool, SqlError> {
            match v {
                Value::Str(s) => match s.to_ascii_uppercase().as_str() {
                    "ON" | "TRUE" | "1" => Ok(true),
                    "OFF" | "FALSE" | "0" => Ok(false),
                    _ => Err(SqlError::wrong_value_for_var(&name, s)),
                },
                other => Ok(other.truth().unwrap_or(false)),
            }
        };
        match name.as_str() {
            "autocommit" => {
                let on = truth(&v)?;
                if on && !self.autocommit {
                    self.commit()?;
                }
                self.autocommit = on;
            }
            "innodb_snapshot_isolation" => self.snapshot_isolation = truth(&v)?,
            "local_infile" if !global => {
                return Err(SqlError::of(
                    ErrorKind::GlobalVariable,
                    format!(
                        "Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"
                    ),
                ))
            }
            "local_infile" => {
                let default = matches!(&v, Value::Str(s) if s.eq_ignore_ascii_case("DEFAULT"));
                let on = default || truth(&v)?;
                self.inst.local_infile.store(on, Ordering::Relaxed);
            }
            "max_prepared_stmt_count"
            | "max_execution_time"
            | "max_statement_time"
            | "max_session_mem_used"
            | "max_tmp_session_space_usage"
            | "max_tmp_total_space_usage"
            | "sort_buffer_size" => self.set_limit(&name, &v, global)?,
            // One variable under two names, as in MariaDB.
            "tmp_memory_table_size" | "tmp_table_size" => {
                self.set_limit("tmp_memory_table_size", &v, global)?
            }
            "innodb_flush_log_at_trx_commit" => {
                return Err(SqlError::read_only_var(
                    &name,
                    "set it with the server's --flush-policy",
                ))
            }
            // Read by the server at start only: accepting a new value that changes nothing
            // would mislead.
            n if matches!(
                n,
                "connect_timeout" | "extra_max_connections" | "max_connections"
            ) || self
                .inst
                .options
                .server_variables
                .iter()
                .any(|(k, _)| *k == n) =>
            {
                return Err(SqlError::read_only_var(
                    &name,
                    &format!(
                        "set it with the server's --{} flag or config file",
                        name.replace('_', "-")
                    ),
                ))
            }
            "tx_isolation" | "transaction_isolation" => {
                let s = v.to_string_lossy().unwrap_or_default().to_ascii_uppercase();
                self.isolation = match s.replace(' ', "-").as_str() {
                    "READ-COMMITTED" | "READ-UNCOMMITTED" => IsolationLevel::ReadCommitted,
                    "REPEATABLE-READ" | "SERIALIZABLE" => IsolationLevel::RepeatableRead,
                    _ => return Err(SqlError::wrong_value_for_var(&name, &s)),
                };
            }
            _ => {
                self.vars.insert(name, v);
            }
        }
        Ok(())
    }

    /// `SET [GLOBAL] max_execution_time | max_statement_time | max_session_mem_used |
    /// max_prepared_stmt_count | max_tmp_session_space_usage | max_tmp_total_space_usage |
    /// sort_buffer_size | tmp_memory_table_size` (`max_prepared_stmt_count` and
    /// `max_tmp_total_space_usage` are global only, as in MariaDB).
    pub(crate) fn set_limit(
        &mut self,
        name: &str,
        v: &Value,
        global: bool,
    ) -> Result<(), SqlError> {
        let wrong = || {
            SqlError::of(
                ErrorKind::WrongTypeForVar,
                format!("Incorrect argument type to variable '{name}'"),
            )
        };
        let g = &self.inst.globals;
        // `= DEFAULT`: a session takes the global value, the global the server's start value
        // (a bare word reaches here as text, and read as a number it was 0: the floor).
        let default;
        let v = match v {
            Value::Str(s) if s.eq_ignore_ascii_case("default") => {
                let o = &self.inst.options;
                let ms = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
                default = match (name, global) {
                    ("max_statement_time", true) => {
                        Value::Double(o.max_statement_time.as_secs_f64())
                    }
                    ("max_statement_time", false) => {
                        Value::Double(ms(&g.max_statement_time_ms) as f64 / 1000.0)
                    }
                    ("max_execution_time", true) => {
                        Value::UInt(o.max_execution_time.as_millis() as u64)
                    }
                    ("max_execution_time", false) => Value::UInt(ms(&g.max_execution_time_ms)),
                    ("max_prepared_stmt_count", _) => Value::UInt(o.max_prepared_stmt_count),
                    ("max_tmp_total_space_usage", _) => Value::UInt(o.max_tmp_total_space_usage),
                    ("max_tmp_session_space_usage", true) => {
                        Value::UInt(o.max_tmp_session_space_usage)
                    }
                    ("max_tmp_session_space_usage", false) => {
                        Value::UInt(ms(&g.max_tmp_session_space_usage))
                    }
                    ("sort_buffer_size", true) => Value::UInt(o.sort_buffer_size),
                    ("sort_buffer_size", false) => Value::UInt(ms(&g.sort_buffer_size)),
                    ("tmp_memory_table_size", true) => Value::UInt(o.tmp_memory_table_size),
                    ("tmp_memory_table_size", false) => Value::UInt(ms(&g.tmp_memory_table_size)),
                    (_, true) => Value::UInt(o.max_session_mem_used),
                    (_, false) => Value::UInt(ms(&g.max_session_mem_used)),
                };
                &default
            }
            Value::Str(s) if s.trim().parse::<f64>().is_err() => return Err(wrong()),
            v => v,
        };
        match name {
            "max_prepared_stmt_count" if !global => Err(SqlError::of(
                ErrorKind::GlobalVariable,
                format!("Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"),
            )),
            "max_prepared_stmt_count" => {
                let n = v.to_i64().ok_or_else(wrong)?.clamp(0, 1_048_576) as u64;
                g.max_prepared_stmt_count.store(n, Ordering::Relaxed);
                Ok(())
            }
            "max_statement_time" => {
                // Seconds, with fractions (MariaDB).
                let secs = v.to_f64().ok_or_else(wrong)?.clamp(0.0, 31_536_000.0);
                let ms = (secs * 1000.0).round() as u64;
                if global {
                    g.max_statement_time_ms.store(ms, Ordering::Relaxed);
                } else {
                    self.limits.max_statement_time_ms = ms;
                }
                Ok(())
            }
            "max_tmp_total_space_usage" if !global => Err(SqlError::of(
                ErrorKind::GlobalVariable,
                format!("Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"),
            )),
            "max_tmp_session_space_usage" | "max_tmp_total_space_usage" => {
                // Bytes in blocks of 64 KiB, rounded down, as MariaDB 11.5 takes them; 0 is
                // no cap.
                let n = u64::try_from(v.to_i64().ok_or_else(wrong)?.max(0)).unwrap_or(0);
                let n = n & !0xffff;
                match (name, global) {
                    ("max_tmp_total_space_usage", _) => self.inst.temp.set_max(n),
                    (_, true) => g.max_tmp_session_space_usage.store(n, Ordering::Relaxed),
                    (_, false) => {
                        if let Some(t) = self.process.interrupt.temp() {
                            t.set_max(n);
                        }
                    }
                }
                Ok(())
            }
            "sort_buffer_size" => {
                // zipdb's lower bound: a smaller buffer only makes more, tinier runs.
                let n = v.to_i64().ok_or_else(wrong)?.max(16_384) as u64;
                if global {
                    g.sort_buffer_size.store(n, Ordering::Relaxed);
                } else if let Some(t) = self.process.interrupt.temp() {
                    t.set_sort_buffer(n);
                }
                Ok(())
            }
            "tmp_memory_table_size" => {
                // Rounded down to 16 KiB blocks, as MariaDB 10.11 takes it; 0 keeps no group
                // in memory (every one spills).
                let n = u64::try_from(v.to_i64().ok_or_else(wrong)?.max(0)).unwrap_or(0);
                let n = n & !0x3fff;
                if global {
                    g.tmp_memory_table_size.store(n, Ordering::Relaxed);
                } else if let Some(t) = self.process.interrupt.temp() {
                    t.set_tmp_table(n);
                }
                Ok(())
            }
            "max_execution_time" => {
                let ms = v.to_i64().ok_or_else(wrong)?.clamp(0, u32::MAX.into()) as u64;
                if global {
                    g.max_execution_time_ms.store(ms, Ordering::Relaxed);
                } else {
                    self.limits.max_execution_time_ms = ms;
                }
                Ok(())
            }
            _ => {
                // max_session_mem_used: MariaDB's lower bound is 8192 bytes.
                let n = v.to_i64().ok_or_else(wrong)?.max(8192) as u64;
                if global {
                    g.max_session_mem_used.store(n, Ordering::Relaxed);
                } else {
                    self.limits.max_session_mem_used = n;
                }
                Ok(())
            }
        }
    }

    /// A system variable's value (`@@name`).
    pub fn sysvar(&self, name: &str) -> Result<Value, SqlError> {
        // `@name`: a user variable (NULL when never set, as in MySQL). Read when the statement
        // compiles: text statements compile each time they run; a prepared statement keeps
        // the value it had at PREPARE.
        if let Some(u) = name.strip_prefix('@') {
            return Ok(self
                .user_vars
                .get(&u.trim_matches('`').to_ascii_lowercase())
                .cloned()
                .unwrap_or(Value::Null));
        }
        let n = name.to_ascii_lowercase();
        if let Some(v) = n.strip_prefix("global.").and_then(|g| self.global_limit(g)) {
            return Ok(v);
        }
        let n = n
            .trim_start_matches("session.")
            .trim_start_matches("global.")
            .trim_start_matches("local.");
        if let Some(v) = self.vars.get(n) {
            return Ok(v.clone());
        }
        sysvar_default(self, n).ok_or_else(|| {
            SqlError::of(
                ErrorKind::UnknownSystemVariable,
                format!("Unknown system variable '{name}'"),
            )
        })
    }

    /// `@@global.name` of a limit whose session value can differ from its global one (what
    /// sessions that connect next start with); `None` for any other name.
    fn global_limit(&self, name: &str) -> Option<Value> {
        let g = &self.inst.globals;
        let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        Some(match name {
            "max_statement_time" => Value::Double(ld(&g.max_statement_time_ms) as f64 / 1000.0),
            "max_execution_time" => Value::Int(ld(&g.max_execution_time_ms) as i64),
            "max_session_mem_used" => Value::UInt(ld(&g.max_session_mem_used)),
            "max_tmp_session_space_usage" => Value::UInt(ld(&g.max_tmp_session_space_usage)),
            "sort_buffer_size" => Value::UInt(ld(&g.sort_buffer_size)),
            "tmp_memory_table_size" | "tmp_table_size" => Value::UInt(ld(&g.tmp_memory_table_size)),
            _ => return None,
        })
    }

    /// A numeric system variable as the session sees it (set, else its default), for the
    /// server's limits. `name`: lower case, without `@@` or scope. `None` when it is unknown
    /// or holds no non-negative number.
    pub fn sysvar_u64(&self, name: &str) -> Option<u64> {
        let v = match self.vars.get(name) {
            Some(v) => v.clone(),
            None => sysvar_default(self, name)?,
        };
        u64::try_from(v.to_i64()?).ok()
    }

    /// Sets a numeric system variable for this session only, as the server does at login
    /// (an interactive client's `wait_timeout` starts as `interactive_timeout`).
    pub fn set_sysvar_u64(&mut self, name: &str, value: u64) {
        self.vars.insert(name.to_string(), Value::UInt(value));
    }
}

/// Names listed by SHOW VARIABLES and information_schema's *_VARIABLES, in order: ours and
/// the embedding server's.
pub(crate) fn variable_names(sess: &Session) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = VARIABLES.to_vec();
    names.extend(sess.inst.options.server_variables.iter().map(|(k, _)| *k));
    names.sort_unstable();
    names.dedup();
    names
}

/// A variable's value as SHOW VARIABLES and information_schema's *_VARIABLES print it: a
/// boolean as `ON`/`OFF`, as MariaDB does (`SELECT @@autocommit` still gives 1).
pub(crate) fn shown_value(name: &str, v: &Value) -> String {
    const BOOLEAN: [&str; 16] = [
        "autocommit",
        "big_tables",
        "foreign_key_checks",
        "innodb_snapshot_isolation",
        "local_infile",
        "performance_schema",
        "profiling",
        "sql_auto_is_null",
        "sql_big_selects",
        "sql_log_bin",
        "sql_notes",
        "sql_safe_updates",
        "sql_warnings",
        "transaction_read_only",
        "tx_read_only",
        "unique_checks",
    ];
    match v {
        Value::Int(0) if BOOLEAN.contains(&name) => "OFF".into(),
        Value::Int(1) if BOOLEAN.contains(&name) => "ON".into(),
        _ => v.to_string_lossy().unwrap_or_default(),
    }
}

/// Names of the variables zipdb's SQL layer itself has.
const VARIABLES: &[&str] = &[
    "auto_increment_increment",
    "auto_increment_offset",
    "autocommit",
    "big_tables",
    "character_set_client",
    "character_set_connection",
    "character_set_database",
    "character_set_results",
    "character_set_server",
    "character_set_system",
    "collation_connection",
    "collation_database",
    "collation_server",
    "connect_timeout",
    "default_storage_engine",
    "extra_max_connections",
    "foreign_key_checks",
    "have_ssl",
    "init_connect",
    "innodb_flush_log_at_trx_commit",
    "innodb_lock_wait_timeout",
    "innodb_snapshot_isolation",
    "interactive_timeout",
    "license",
    "local_infile",
    "lower_case_table_names",
    "max_allowed_packet",
    "max_connections",
    "max_execution_time",
    "max_prepared_stmt_count",
    "max_session_mem_used",
    "max_statement_time",
    "max_tmp_session_space_usage",
    "max_tmp_total_space_usage",
    "net_buffer_length",
    "net_read_timeout",
    "net_write_timeout",
    "performance_schema",
    "profiling",
    "query_cache_size",
    "query_cache_type",
    "sort_buffer_size",
    "sql_auto_is_null",
    "sql_big_selects",
    "sql_log_bin",
    "sql_mode",
    "sql_notes",
    "sql_safe_updates",
    "sql_warnings",
    "system_time_zone",
    "time_zone",
    "tmp_memory_table_size",
    "tmp_table_size",
    "tmpdir",
    "transaction_isolation",
    "transaction_read_only",
    "tx_isolation",
    "tx_read_only",
    "unique_checks",
    "version",
    "version_comment",
    "version_compile_machine",
    "version_compile_os",
    "wait_timeout",
    "zipdb_default_codec",
];

/// Default value of a system variable, `None` if unknown.
pub fn sysvar_default(sess: &Session, n: &str) -> Option<Value> {
    let inst = &sess.inst;
    if let Some((_, v)) = inst.options.server_variables.iter().find(|(k, _)| *k == n) {
        return Some(v.clone());
    }
    let int = |i: i64| Some(Value::Int(i));
    let st = |x: &str| Some(Value::Str(x.to_string()));
    match n {
        "autocommit" => int(i64::from(sess.autocommit)),
        "tx_isolation" | "transaction_isolation" => st(match sess.isolation {
            zipdb_engine::IsolationLevel::RepeatableRead => "REPEATABLE-READ",
            zipdb_engine::IsolationLevel::ReadCommitted => "READ-COMMITTED",
        }),
        "tx_read_only" | "transaction_read_only" | "read_only" | "super_read_only" => int(0),
        "version" => st(&inst.options.server_version),
        "version_comment" => st("zipdb"),
        "version_compile_os" => st("Linux"),
        "version_compile_machine" => st(std::env::consts::ARCH),
        "max_allowed_packet" => int(inst.options.max_allowed_packet as i64),
        "max_connections" => int(inst.options.max_connections as i64),
        "max_prepared_stmt_count" => {
            int(inst.globals.max_prepared_stmt_count.load(Ordering::Relaxed) as i64)
        }
        "sql_mode" => st("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"),
        "character_set_client"
        | "character_set_connection"
        | "character_set_database"
        | "character_set_results"
        | "character_set_server"
        | "character_set_system" => st("utf8mb4"),
        "collation_connection" | "collation_database" | "collation_server" => {
            st("utf8mb4_general_ci")
        }
        "time_zone" => st("SYSTEM"),
        "system_time_zone" => st("UTC"),
        "connect_timeout" => int(inst.options.connect_timeout.as_secs() as i64),
        "wait_timeout" => int(inst.options.wait_timeout.as_secs() as i64),
        "interactive_timeout" => int(inst.options.interactive_timeout.as_secs() as i64),
        "net_read_timeout" => int(inst.options.net_read_timeout.as_secs() as i64),
        "net_write_timeout" => int(inst.options.net_write_timeout.as_secs() as i64),
        "extra_max_connections" => int(inst.options.extra_max_connections as i64),
        "net_buffer_length" => int(16384),
        "lower_case_table_names" => int(0),
        "auto_increment_increment" | "auto_increment_offset" => int(1),
        "license" => st("Apache-2.0"),
        "performance_schema" => int(0),
        "have_ssl" | "have_openssl" => st("DISABLED"),
        "init_connect" => st(""),
        "query_cache_size" => int(0),
        "query_cache_type" => st("OFF"),
        "default_storage_engine" | "storage_engine" | "default_tmp_storage_engine" => st("zipdb"),
        "innodb_lock_wait_timeout" | "lock_wait_timeout" => {
            int(inst.options.lock_wait_timeout.as_secs() as i64)
        }
        "innodb_snapshot_isolation" => int(sess.snapshot_isolation as i64),
        "local_infile" => int(inst.local_infile.load(Ordering::Relaxed) as i64),
        // The server's --flush-policy, in InnoDB's numbers (read-only: it is chosen at start).
        "innodb_flush_log_at_trx_commit" => int(match inst.db.options().flush_policy {
            zipdb_engine::FlushPolicy::Sync => 1,
            zipdb_engine::FlushPolicy::Write => 2,
            zipdb_engine::FlushPolicy::None => 0,
        }),
        "sql_select_limit" => Some(Value::UInt(u64::MAX)),
        // Set by mysqldump; SHOW CREATE TABLE always quotes names.
        "sql_quote_show_create" => int(1),
        // MariaDB's statement timeout, in seconds (mariadb-dump sets it to 0).
        "max_statement_time" => Some(Value::Double(
            sess.limits.max_statement_time_ms as f64 / 1000.0,
        )),
        "max_session_mem_used" => Some(Value::UInt(sess.limits.max_session_mem_used)),
        "max_tmp_session_space_usage" => Some(Value::UInt(
            sess.process.interrupt.temp().map_or(0, |t| t.max()),
        )),
        "max_tmp_total_space_usage" => Some(Value::UInt(inst.temp.max())),
        "sort_buffer_size" => Some(Value::UInt(
            sess.process.interrupt.temp().map_or(0, |t| t.sort_buffer()),
        )),
        "tmp_memory_table_size" | "tmp_table_size" => Some(Value::UInt(
            sess.process.interrupt.temp().map_or(0, |t| t.tmp_table()),
        )),
        "tmpdir" => st(&inst.temp.dir().display().to_string()),
        "information_schema_stats_expiry" => int(0),
        "max_execution_time" => int(sess.limits.max_execution_time_ms as i64),
        "last_insert_id" | "identity" => Some(Value::UInt(sess.last_insert_id)),
        "warning_count" => int(sess.condition_count() as i64),
        "error_count" => int(sess.error_count() as i64),
        // MariaDB's defaults. zipdb keeps what a session sets and reads it back, but acts on
        // none of them (no foreign keys yet; unique checks always run; no binary log).
        "unique_checks" | "foreign_key_checks" | "sql_notes" | "sql_big_selects"
        | "sql_log_bin" => int(1),
        "sql_auto_is_null" | "sql_safe_updates" | "sql_warnings" | "big_tables" | "profiling" => {
            int(0)
        }
        "port" => int(3307),
        "hostname" => st("localhost"),
        "socket" => st(""),
        "datadir" => st(""),
        "zipdb_default_codec" => st(format_name(inst.options.default_format)),
        "session_track_schema" | "session_track_state_change" => st("OFF"),
        "div_precision_increment" => int(4),
        "group_concat_max_len" => int(1024),
        "max_sort_length" => int(1024),
        "long_query_time" => int(10),
        "transaction_isolation_level" => None,
        _ => None,
    }
}
