//! The engine's error type.

use std::time::Duration;

use zipdb_storage::wal::WalError;
use zipdb_storage::{PageId, StoreError};

use crate::format::{FormatError, TreeFormat};

/// Every error the engine returns, in the families a caller acts on differently (issue 20):
/// fix the setup and open again ([`OpenError`]), roll back and retry the transaction
/// ([`TxnError`]), refuse one request and go on ([`RequestError`]), or call an operator
/// because stored data or the I/O under it failed ([`StorageError`]). The messages are the
/// inner errors' own.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Txn(#[from] TxnError),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Opening or configuring the database failed: a bad directory, option, file or format.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Creating or opening the database directory failed.
    #[error("cannot use database directory {path}: {source}")]
    Dir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid options: {0}")]
    Config(String),
    /// A valid tree format this build cannot run yet: creating such a tree, or opening or
    /// replaying one written by a later build. Refused up front so that no page of the tree
    /// is ever read with the wrong node layout.
    #[error("tree {tree:?} has format {format}, which this build does not support (this build runs classic trees and compact trees without a cold layer or with a zstd one over trim images)")]
    UnsupportedTreeFormat { tree: String, format: TreeFormat },
    /// The data file exists with another page size than the one required
    /// ([`crate::Database::data_page_size`] lets a caller check before opening).
    #[error("{file} has {existing}-byte pages, but {requested}-byte pages were asked for; the page size is fixed when a database is created")]
    PageSizeMismatch {
        file: String,
        existing: usize,
        requested: usize,
    },
    /// The data file says a WAL belongs to it, but the WAL file is missing.
    #[error("the WAL file {0} is missing: commits since the last checkpoint would be lost (open with salvage_wal to accept that)")]
    WalMissing(String),
    /// The page store refused its configuration or the file's (`StoreError::Config`,
    /// `StoreError::Incompatible`).
    #[error(transparent)]
    Store(StoreError),
}

/// The transaction lost a conflict; roll it back and retry it.
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    /// This transaction was chosen as the victim of a deadlock (MySQL error 1213).
    #[error("deadlock found when trying to get lock; try restarting transaction")]
    Deadlock,
    /// A row lock was not granted in time (MySQL error 1205).
    #[error("lock wait timeout exceeded after {waited:?}; try restarting transaction")]
    LockWaitTimeout { waited: Duration },
    /// Under repeatable read, the row was changed by a transaction that committed after this
    /// one's snapshot (first updater wins).
    #[error("row in tree {tree:?} changed since this transaction's snapshot; try restarting transaction")]
    WriteConflict { tree: String },
}

/// This request cannot be done as asked; the database is fine.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// A key longer than the tree accepts (see [`crate::btree::BTree::max_key_len`]).
    #[error("key of {len} bytes exceeds the maximum of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    /// A value longer than the on-page length field can describe (4 GiB - 1).
    #[error("value of {len} bytes exceeds the maximum of {max} bytes")]
    ValueTooLarge { len: usize, max: usize },
    /// One commit's (or DDL step's) redo record is larger than the WAL can hold; nothing was
    /// written. Commit in smaller transactions, or give the WAL more room.
    #[error(
        "a change of {bytes} bytes of redo exceeds the largest record the WAL holds ({max} bytes)"
    )]
    ChangeTooLarge { bytes: u64, max: u64 },
    #[error("tree {0:?} already exists")]
    TreeExists(String),
    #[error("no tree named {0:?}")]
    NoSuchTree(String),
    #[error("invalid tree name {0:?}: names are 1 to 255 bytes of UTF-8")]
    InvalidName(String),
    /// A tree format whose parts do not go together (see [`crate::TreeFormat::validate`]).
    #[error("invalid tree format: {0}")]
    InvalidTreeFormat(#[from] FormatError),
    /// The pool is too small for what is latched at once, or a page id that was never
    /// allocated (`StoreError::PoolExhausted`, `StoreError::NoSuchPage`).
    #[error(transparent)]
    Store(StoreError),
}

/// Stored data or the I/O under it failed. Needs an operator; on the write path the database
/// then refuses changes until it is reopened (fail-stop).
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// An error of the page store or buffer pool: I/O, a corrupt page image or superblock,
    /// or the store's fail-stop state.
    #[error(transparent)]
    Store(StoreError),
    /// A B-tree page (or an overflow page) whose bytes make no sense.
    #[error("corrupt page {page}: {detail}")]
    Corrupt { page: PageId, detail: String },
    /// The catalog blob saved at the last checkpoint cannot be parsed.
    #[error("corrupt catalog: {0}")]
    CorruptCatalog(String),
    /// The page store's own consistency check failed.
    #[error("page store verification failed: {0}")]
    StoreVerify(String),
    /// The warm-restart list could not be written (reading one never fails an open: a bad
    /// list is ignored).
    #[error(transparent)]
    Warm(#[from] zipdb_storage::warm::WarmError),
    /// The WAL could not be written, read or recovered.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// A WAL record passed its checksum but does not decode: a bug or a foreign file.
    #[error("corrupt redo record at LSN {lsn}: {detail}")]
    CorruptRedo { lsn: u64, detail: String },
    /// An earlier write to the WAL or the data file failed; the database refuses changes
    /// until it is reopened (which recovers it).
    #[error("the database refuses changes after an earlier I/O error: {0}")]
    ReadOnlyAfterIoError(String),
}

/// A store error goes to the family its kind belongs to.
impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        match e {
            StoreError::Config(_) | StoreError::Incompatible { .. } => {
                Error::Open(OpenError::Store(e))
            }
            StoreError::PoolExhausted(_) | StoreError::NoSuchPage(_) => {
                Error::Request(RequestError::Store(e))
            }
            StoreError::Io(_)
            | StoreError::CorruptPage { .. }
            | StoreError::CorruptMeta { .. }
            | StoreError::ReadOnlyAfterIoError(_) => Error::Storage(StorageError::Store(e)),
        }
    }
}

impl From<WalError> for Error {
    fn from(e: WalError) -> Error {
        Error::Storage(StorageError::Wal(e))
    }
}

impl From<zipdb_storage::warm::WarmError> for Error {
    fn from(e: zipdb_storage::warm::WarmError) -> Error {
        Error::Storage(StorageError::Warm(e))
    }
}

impl From<FormatError> for Error {
    fn from(e: FormatError) -> Error {
        Error::Request(RequestError::InvalidTreeFormat(e))
    }
}

/// What a caller can do about an [`Error`]: one class per family. Kept beside the families
/// for callers that map a class to something of their own (the SQL layer's error codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// [`OpenError`]: fix the setup and open again.
    OpenConfig,
    /// [`TxnError`]: roll back and retry.
    RetryableTxn,
    /// [`RequestError`]: this request fails; the database is fine.
    Request,
    /// [`StorageError`]: needs an operator.
    Storage,
}

impl Error {
    /// The family this error belongs to.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Open(_) => ErrorClass::OpenConfig,
            Error::Txn(_) => ErrorClass::RetryableTxn,
            Error::Request(_) => ErrorClass::Request,
            Error::Storage(_) => ErrorClass::Storage,
        }
    }

    /// Stored bytes that make no sense (as opposed to an I/O failure): a page, the catalog,
    /// a redo record or the store's own check.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Storage(
                StorageError::Corrupt { .. }
                    | StorageError::CorruptCatalog(_)
                    | StorageError::StoreVerify(_)
                    | StorageError::CorruptRedo { .. }
                    | StorageError::Store(
                        StoreError::CorruptPage { .. } | StoreError::CorruptMeta { .. }
                    )
            )
        )
    }

    pub(crate) fn corrupt(page: PageId, detail: impl Into<String>) -> Error {
        Error::Storage(StorageError::Corrupt {
            page,
            detail: detail.into(),
        })
    }

    pub(crate) fn corrupt_catalog(detail: impl Into<String>) -> Error {
        Error::Storage(StorageError::CorruptCatalog(detail.into()))
    }

    pub(crate) fn config(detail: impl Into<String>) -> Error {
        Error::Open(OpenError::Config(detail.into()))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_reachable_and_retryable_means_rollback() {
        let txn = |e: TxnError| Error::from(e).class();
        assert_eq!(txn(TxnError::Deadlock), ErrorClass::RetryableTxn);
        assert_eq!(
            txn(TxnError::LockWaitTimeout {
                waited: Duration::from_secs(1)
            }),
            ErrorClass::RetryableTxn
        );
        assert_eq!(
            Error::from(RequestError::KeyTooLarge { len: 9, max: 8 }).class(),
            ErrorClass::Request
        );
        assert_eq!(Error::config("x").class(), ErrorClass::OpenConfig);
        let corrupt = Error::corrupt(PageId(7), "bad slot");
        assert_eq!(corrupt.class(), ErrorClass::Storage);
        assert!(corrupt.is_corruption());
        let failed = Error::from(StorageError::ReadOnlyAfterIoError("fsync".into()));
        assert_eq!(failed.class(), ErrorClass::Storage);
        assert!(!failed.is_corruption());
    }

    #[test]
    fn store_errors_go_to_their_family_with_their_own_message() {
        let cases = [
            (
                StoreError::Config("c".into()),
                ErrorClass::OpenConfig,
                false,
            ),
            (
                StoreError::Incompatible {
                    file: "f".into(),
                    detail: "d".into(),
                },
                ErrorClass::OpenConfig,
                false,
            ),
            (
                StoreError::PoolExhausted("p".into()),
                ErrorClass::Request,
                false,
            ),
            (
                StoreError::NoSuchPage(PageId(3)),
                ErrorClass::Request,
                false,
            ),
            (
                StoreError::CorruptMeta {
                    file: "f".into(),
                    detail: "d".into(),
                },
                ErrorClass::Storage,
                true,
            ),
            (
                StoreError::ReadOnlyAfterIoError("w".into()),
                ErrorClass::Storage,
                false,
            ),
        ];
        for (store, class, corrupt) in cases {
            let text = store.to_string();
            let e = Error::from(store);
            assert_eq!((e.class(), e.is_corruption()), (class, corrupt), "{e:?}");
            assert_eq!(e.to_string(), text);
        }
    }
}
