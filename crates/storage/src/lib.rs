//! zipdb storage core.
//!
//! Layers, each using only the one below it:
//! [`pool`] (buffer pool: decoded and compressed tiers under one byte budget) →
//! [`store`] (page store: out-of-place variable-size images, page map, checkpoints) →
//! [`page`] + [`codec`] (image format, CRC32C, codecs) → [`io`] (files and the simulated disk).
//! [`views`]: what upper layers derive from unchanged pages, in memory the pool is not using.
//! Beside them, [`fsst`]: the per-record string codec (static symbol tables) of issue 19, and
//! [`dict`]: per-tree zstd dictionaries for the cold layer.

mod arena;
pub mod codec;
pub mod dict;
pub mod error;
pub mod fsst;
pub mod io;
pub mod page;
pub mod pool;
pub mod store;
pub mod views;
pub mod wal;
pub mod warm;

pub use codec::Codec;
pub use error::{Result, StoreError};
pub use page::{Lsn, PageId, PageType, TreeId};
