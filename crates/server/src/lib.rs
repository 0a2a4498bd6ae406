//! zipdb's MySQL-protocol server: the wire protocol (handshake, both password plugins, text and
//! binary protocols), a thread per connection or a pool of threads (`pool`), settings (`config`); SQL itself is executed by
//! `zipdb_sql`.

pub mod config;
pub mod limits;
pub mod protocol;

mod conn;
mod loginlog;
mod pool;
mod results;
mod server;
mod watchdog;

pub use pool::{PoolConfig, ThreadHandling};
pub use server::{Running, Server, ServerConfig, ServerError, ADMIN_USER, DEFAULT_THREAD_HANDLING};
