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
    /// One commit's (or DDL step's) redo record is larger than the WAL can hold; nothing was
    /// written. Commit in smaller transactions, or give the WAL more room.
    #[error(
        "a change of {bytes} bytes of redo exceeds the largest record the WAL holds ({max} bytes)"
    )]
    ChangeTooLarge { bytes: u64, max: u64 },
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

/// What a caller can do about an [`Error`]: the three families issue 20 names, plus the
/// errors a single request causes. Callers map families, not variants, so a new variant
/// only has to be placed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Opening or configuring the database: a bad directory, option, file or format. Fix
    /// the setup and open again.
    OpenConfig,
    /// The transaction lost a conflict (deadlock, lock wait timeout, write conflict): roll
    /// back and retry it.
    RetryableTxn,
    /// This request cannot be done as asked (a key or value too large, a tree name taken or
    /// missing, a pool too small for what is latched at once); the database is fine.
    Request,
    /// Stored data or the I/O under it failed: corruption, an I/O error, a WAL that cannot
    /// be written or read, or the fail-stop state after one. Needs an operator.
    Storage,
}

impl Error {
    /// The family this error belongs to.
    pub fn class(&self) -> ErrorClass {
        use ErrorClass as C;
        match self {
            Error::Deadlock | Error::LockWaitTimeout { .. } | Error::WriteConflict { .. } => {
                C::RetryableTxn
            }
            Error::KeyTooLarge { .. }
            | Error::ValueTooLarge { .. }
            | Error::ChangeTooLarge { .. }
            | Error::TreeExists(_)
            | Error::NoSuchTree(_)
            | Error::InvalidName(_)
            | Error::InvalidTreeFormat(_) => C::Request,
            Error::Dir { .. }
            | Error::UnsupportedTreeFormat { .. }
            | Error::Config(_)
            | Error::PageSizeMismatch { .. }
            | Error::WalMissing(_) => C::OpenConfig,
            Error::Storage(e) => match e {
                StoreError::Config(_) | StoreError::Incompatible { .. } => C::OpenConfig,
                StoreError::PoolExhausted(_) | StoreError::NoSuchPage(_) => C::Request,
                StoreError::Io(_)
                | StoreError::CorruptPage { .. }
                | StoreError::CorruptMeta { .. }
                | StoreError::ReadOnlyAfterIoError(_) => C::Storage,
            },
            Error::Corrupt { .. }
            | Error::CorruptCatalog(_)
            | Error::StoreVerify(_)
            | Error::Warm(_)
            | Error::Wal(_)
            | Error::CorruptRedo { .. }
            | Error::ReadOnlyAfterIoError(_) => C::Storage,
        }
    }

    /// Stored bytes that make no sense (as opposed to an I/O failure): a page, the catalog,
    /// a redo record or the store's own check.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corrupt { .. }
                | Error::CorruptCatalog(_)
                | Error::StoreVerify(_)
                | Error::CorruptRedo { .. }
                | Error::Storage(StoreError::CorruptPage { .. } | StoreError::CorruptMeta { .. })
        )
    }

    pub(crate) fn corrupt(page: PageId, detail: impl Into<String>) -> Error {
        Error::Corrupt {
            page,
            detail: detail.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_reachable_and_retryable_means_rollback() {
        assert_eq!(Error::Deadlock.class(), ErrorClass::RetryableTxn);
        assert_eq!(
            Error::LockWaitTimeout {
                waited: Duration::from_secs(1)
            }
            .class(),
            ErrorClass::RetryableTxn
        );
        assert_eq!(
            Error::KeyTooLarge { len: 9, max: 8 }.class(),
            ErrorClass::Request
        );
        assert_eq!(Error::Config("x".into()).class(), ErrorClass::OpenConfig);
        let corrupt = Error::corrupt(PageId(7), "bad slot");
        assert_eq!(corrupt.class(), ErrorClass::Storage);
        assert!(corrupt.is_corruption());
        let failed = Error::ReadOnlyAfterIoError("fsync".into());
        assert_eq!(failed.class(), ErrorClass::Storage);
        assert!(!failed.is_corruption());
    }
}
