//! Errors of the storage layer. Every corruption error names the file and where it was found.

use crate::io::IoError;
use crate::page::{Corruption, PageId};

/// Errors from the page store and the buffer pool.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Io(#[from] IoError),
    /// A page image failed verification when it was read from storage.
    #[error("corrupt page {page_id} in {file} at offset {offset}: {what}")]
    CorruptPage {
        file: String,
        page_id: PageId,
        offset: u64,
        what: Corruption,
    },
    /// Neither superblock copy, or the checkpoint they point at, is valid.
    #[error("corrupt checkpoint metadata in {file}: {detail}")]
    CorruptMeta { file: String, detail: String },
    /// The file is not a zipdb data file, or was made with settings this build cannot use.
    #[error("{file} is not usable: {detail}")]
    Incompatible { file: String, detail: String },
    /// The page id has never been allocated (or was freed).
    #[error("page {0} does not exist")]
    NoSuchPage(PageId),
    /// An earlier write or sync failed; the store refuses writes until it is reopened, because
    /// after a failed fsync the state of the file is unknown (fail-stop).
    #[error("the store refuses writes after an earlier I/O error: {0}")]
    ReadOnlyAfterIoError(String),
    /// The buffer pool budget is too small to hold the pages that are latched right now.
    #[error("buffer pool exhausted: {0}")]
    PoolExhausted(String),
    #[error("invalid configuration: {0}")]
    Config(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
