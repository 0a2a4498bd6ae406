//! The functions of the session and the server: DATABASE, USER, VERSION, CONNECTION_ID,
//! LAST_INSERT_ID, SLEEP and UUID.

use crate::expr::builtins as bi;
use crate::expr::func::args::{double_arg, next_random, now_micros};
use crate::expr::node::{Args, Arity, ScalarFunction, Typing};
use crate::expr::typing::{BIGINT, INT, TEXT};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

/// What a session function returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SessionValue {
    /// DATABASE / SCHEMA: the current database, NULL if none.
    Database,
    /// USER / CURRENT_USER / SESSION_USER / SYSTEM_USER: `user@host`.
    User,
    Version,
    ConnectionId,
    LastInsertId,
}

/// DATABASE, USER, VERSION, CONNECTION_ID and LAST_INSERT_ID.
pub struct Session(pub SessionValue);

impl ScalarFunction for Session {
    fn name(&self) -> &'static str {
        match self.0 {
            SessionValue::Database => "database",
            SessionValue::User => "user",
            SessionValue::Version => "version",
            SessionValue::ConnectionId => "connection_id",
            SessionValue::LastInsertId => "last_insert_id",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(match self.0 {
            SessionValue::ConnectionId | SessionValue::LastInsertId => BIGINT,
            _ => TEXT,
        })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let ctx = a.ctx();
        Ok(match self.0 {
            SessionValue::Database => ctx.db.map_or(Value::Null, |d| Value::Str(d.to_string())),
            SessionValue::User => Value::Str(ctx.user.to_string()),
            SessionValue::Version => Value::Str(ctx.version.to_string()),
            SessionValue::ConnectionId => Value::UInt(ctx.conn_id),
            SessionValue::LastInsertId => Value::UInt(ctx.last_insert_id),
        })
    }
}

/// SLEEP(seconds): 0. `KILL QUERY` does not cut it short (see docs/COMPATIBILITY.md).
pub struct Sleep;

impl ScalarFunction for Sleep {
    fn name(&self) -> &'static str {
        "sleep"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(INT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let secs = double_arg(&a.value(0)?).unwrap_or(0.0);
        if secs > 0.0 && secs.is_finite() {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(1e9)));
        }
        Ok(Value::Int(0))
    }
    fn volatile(&self) -> bool {
        true
    }
}

/// UUID(): a version-1 UUID from the clock and a random node.
pub struct Uuid;

impl ScalarFunction for Uuid {
    fn name(&self) -> &'static str {
        "uuid"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(Value::Str(bi::uuid(now_micros(a.ctx()), next_random())))
    }
    fn volatile(&self) -> bool {
        true
    }
}
