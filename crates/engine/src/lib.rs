//! zipdb engine: the B+tree ([`btree`]) and the embedded API ([`Database`], [`Tree`],
//! [`Transaction`]).
//!
//! ```no_run
//! use zipdb_engine::{Database, Options};
//! # fn main() -> zipdb_engine::Result<()> {
//! let db = Database::open(std::path::Path::new("/tmp/db"), Options::default())?;
//! let t = db.create_tree("users", None)?;
//! t.upsert(b"alice", b"1")?;
//! assert_eq!(t.get(b"alice")?.as_deref(), Some(&b"1"[..]));
//! for entry in t.range(..)? {
//!     let (k, v) = entry?;
//!     println!("{k:?} = {v:?}");
//! }
//! db.close()?;
//! # Ok(()) }
//! ```

#[cfg(test)]
mod append_tests;
mod apply;
#[cfg(test)]
mod apply_tests;
pub mod btree;
pub mod catalog;
#[cfg(test)]
mod colddict_tests;
#[cfg(test)]
mod compact_tree_tests;
#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod cursor_tests;
pub mod db;
#[cfg(test)]
mod drift_tests;
pub mod error;
#[cfg(test)]
mod file_tests;
pub mod format;
#[cfg(test)]
mod format_tests;
mod inline_key;
pub mod lock;
pub mod mvcc;
pub mod redo;
mod replay;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;

pub use btree::symtab::RecordStats;
pub use btree::{BTree, Cursor, VerifyReport};
pub use db::{
    Database, FlushPolicy, InsertProbe, IsolationLevel, Options, Savepoint, Stats, StoreStats,
    Transaction, Tree, TreeStats, TxnScan,
};
pub use error::{Error, ErrorClass, OpenError, RequestError, Result, StorageError, TxnError};
pub use format::{FormatError, NodeFormat, RecordCodec, TableFormat, TreeFormat};
pub use zipdb_storage as storage;
pub use zipdb_storage::Codec;
