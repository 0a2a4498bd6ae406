//! zipdb's MySQL-protocol server: the wire protocol (handshake, both password plugins, text and
//! binary protocols), one thread per connection, settings (`config`); SQL itself is executed by
//! `zipdb_sql`.

pub mod config;
pub mod limits;
pub mod protocol;

mod conn;
mod loginlog;
mod server;
mod watchdog;

pub use server::{Running, Server, ServerConfig, ServerError, ADMIN_USER};
