//! The engine's error type.

use std::time::Duration;

use zipdb_storage::wal::WalError;
use zipdb_storage::{PageId, StoreError};

use crate::format::{FormatError, TreeFormat};

/// Every error the engine returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An error of the page store or buffer pool (I/O, corrupt page image, fail-stop, ...).
    #[error(transparent)]
    Storage(#[from] StoreError),
    /// Creating or opening the database directory failed.
    #[error("cannot use database directory {path}: {source}")]
    Dir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A key longer than the tree accepts (see [`crate::btree::BTree::max_key_len`]).
    #[error("key of {len} bytes exceeds the maximum of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    /// A value longer than the on-page length field can describe (4 GiB - 1).
    #[error("value of {len} bytes exceeds the maximum of {max} bytes")]
    ValueTooLarge { len: usize, max: usize },
    #[error("tree {0:?} already exists")]
    TreeExists(String),
    #[error("no tree named {0:?}")]
    NoSuchTree(String),
    #[error("invalid tree name {0:?}: names are 1 to 255 bytes of UTF-8")]
    InvalidName(String),
    /// A tree format whose parts do not go together (see [`crate::TreeFormat::validate`]).
    #[error("invalid tree format: {0}")]
    InvalidTreeFormat(#[from] FormatError),
    /// A valid tree format this build cannot run yet: creating such a tree, or opening or
    /// replaying one written by a later build. Refused up front so that no page of the tree
    /// is ever read with the wrong node layout.
    #[error("tree {tree:?} has format {format}, which this build does not support (this build runs classic trees and compact trees without a cold layer or with a zstd one over trim images)")]
    UnsupportedTreeFormat { tree: String, format: TreeFormat },
    /// A B-tree page (or an overflow page) whose bytes make no sense.
    #[error("corrupt page {page}: {detail}")]
    Corrupt { page: PageId, detail: String },
    /// The catalog blob saved at the last checkpoint cannot be parsed.
    #[error("corrupt catalog: {0}")]
    CorruptCatalog(String),
    /// The page store's own consistency check failed.
    #[error("page store verification failed: {0}")]
    StoreVerify(String),
    #[error("invalid options: {0}")]
    Config(String),
    /// The warm-restart list could not be written (reading one never fails an open: a bad
    /// list is ignored).
    #[error(transparent)]
    Warm(#[from] zipdb_storage::warm::WarmError),
    /// The data file exists with another page size than the one required
    /// ([`crate::Database::data_page_size`] lets a caller check before opening).
    #[error("{file} has {existing}-byte pages, but {requested}-byte pages were asked for; the page size is fixed when a database is created")]
    PageSizeMismatch {
        file: String,
        existing: usize,
        requested: usize,
    },
    /// The WAL could not be written, read or recovered.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// The data file says a WAL belongs to it, but the WAL file is missing.
    #[error("the WAL file {0} is missing: commits since the last checkpoint would be lost (open with salvage_wal to accept that)")]
    WalMissing(String),
    /// A WAL record passed its checksum but does not decode: a bug or a foreign file.
    #[error("corrupt redo record at LSN {lsn}: {detail}")]
    CorruptRedo { lsn: u64, detail: String },
    /// This transaction was chosen as the victim of a deadlock; roll it back and retry
    /// (MySQL error 1213).
    #[error("deadlock found when trying to get lock; try restarting transaction")]
    Deadlock,
    /// A row lock was not granted in time (MySQL error 1205).
    #[error("lock wait timeout exceeded after {waited:?}; try restarting transaction")]
    LockWaitTimeout { waited: Duration },
    /// Under repeatable read, the row was changed by a transaction that committed after this
    /// one's snapshot (first updater wins); roll back and retry.
    #[error("row in tree {tree:?} changed since this transaction's snapshot; try restarting transaction")]
    WriteConflict { tree: String },
    /// An earlier write to the WAL or the data file failed; the database refuses changes
    /// until it is reopened (which recovers it).
    #[error("the database refuses changes after an earlier I/O error: {0}")]
    ReadOnlyAfterIoError(String),
}

impl Error {
    pub(crate) fn corrupt(page: PageId, detail: impl Into<String>) -> Error {
        Error::Corrupt {
            page,
            detail: detail.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
