//! zipdb's MySQL-protocol server (work in progress: the wire protocol and connection handling
//! exist; SQL execution does not yet, so every query is answered with error 1235).

pub mod config;
pub mod protocol;

mod conn;
mod server;

pub use server::{Running, Server, ServerConfig, ServerError};
