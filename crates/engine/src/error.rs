//! The engine's error type.

use zipdb_storage::{PageId, StoreError};

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
