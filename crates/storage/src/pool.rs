//! Buffer pool — TEMPORARY SIMPLE IMPLEMENTATION with the final API.
//!
//! Every page stays decoded in memory behind its own RwLock; dirty pages are written back on
//! `flush_all`. The real two-tier pool replaces the internals, not the API.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{RawRwLock, RwLock};

use crate::codec::{self, Codec};
use crate::error::{Result, StoreError};
use crate::io::AlignedBuf;
use crate::page::{self, LogicalHeader, PageId, PageType, TreeId};
use crate::store::{PageStore, UNIT};

/// Settings of a buffer pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolConfig {
    /// One budget for decoded frames and compressed images together.
    pub budget_bytes: usize,
}

struct Frame {
    data: Box<[u8]>,
    dirty: bool,
}

/// Counters of the pool.
#[derive(Debug, Default, Clone, Copy)]
pub struct PoolStats {
    pub hit_decoded: u64,
    pub hit_compressed: u64,
    pub miss: u64,
}

/// The buffer pool.
pub struct BufferPool {
    store: Arc<PageStore>,
    pages: RwLock<HashMap<PageId, Arc<RwLock<Frame>>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// A shared latch on a decoded page.
pub struct PageReadGuard<'a> {
    id: PageId,
    g: ArcRwLockReadGuard<RawRwLock, Frame>,
    _pool: &'a BufferPool,
}

/// An exclusive latch on a decoded page; mutable access marks it dirty.
pub struct PageWriteGuard<'a> {
    id: PageId,
    g: ArcRwLockWriteGuard<RawRwLock, Frame>,
    _pool: &'a BufferPool,
}

impl PageReadGuard<'_> {
    pub fn id(&self) -> PageId {
        self.id
    }
}

impl PageWriteGuard<'_> {
    pub fn id(&self) -> PageId {
        self.id
    }
}

impl std::ops::Deref for PageReadGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.g.data
    }
}

impl std::ops::Deref for PageWriteGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.g.data
    }
}

impl std::ops::DerefMut for PageWriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.g.dirty = true;
        &mut self.g.data
    }
}

impl BufferPool {
    pub fn new(store: Arc<PageStore>, _config: PoolConfig) -> Result<Arc<BufferPool>> {
        Ok(Arc::new(BufferPool {
            store,
            pages: RwLock::new(HashMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }))
    }

    pub fn page_size(&self) -> usize {
        self.store.page_size()
    }

    pub fn store(&self) -> &Arc<PageStore> {
        &self.store
    }

    fn frame(&self, id: PageId) -> Result<Arc<RwLock<Frame>>> {
        if let Some(f) = self.pages.read().get(&id) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(f.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let mut buf = AlignedBuf::new(self.store.image_len_max());
        let h = self.store.read_image(id, &mut buf)?;
        let mut data = vec![0u8; self.page_size()].into_boxed_slice();
        codec::with_ctx(|c| page::decode_image(c, &buf, &h, &mut data)).map_err(|what| StoreError::CorruptPage {
            file: self.store.file_name().to_string(),
            page_id: id,
            offset: self.store.extent(id).offset_bytes(),
            what,
        })?;
        let mut pages = self.pages.write();
        Ok(pages
            .entry(id)
            .or_insert_with(|| Arc::new(RwLock::new(Frame { data, dirty: false })))
            .clone())
    }

    /// Latches page `id` shared, loading it if needed.
    pub fn read(&self, id: PageId) -> Result<PageReadGuard<'_>> {
        let f = self.frame(id)?;
        Ok(PageReadGuard {
            id,
            g: f.read_arc(),
            _pool: self,
        })
    }

    /// Latches page `id` exclusively, loading it if needed.
    pub fn write(&self, id: PageId) -> Result<PageWriteGuard<'_>> {
        let f = self.frame(id)?;
        Ok(PageWriteGuard {
            id,
            g: f.write_arc(),
            _pool: self,
        })
    }

    /// Allocates a new page of `tree`, zeroed, with its logical header set, latched exclusively.
    pub fn allocate(&self, ty: PageType, tree: TreeId, codec: Codec) -> Result<PageWriteGuard<'_>> {
        let id = self.store.allocate_page_id(tree)?;
        let mut data = vec![0u8; self.page_size()].into_boxed_slice();
        LogicalHeader::init(&mut data, ty, codec, tree);
        let f = Arc::new(RwLock::new(Frame { data, dirty: true }));
        self.pages.write().insert(id, f.clone());
        Ok(PageWriteGuard {
            id,
            g: f.write_arc(),
            _pool: self,
        })
    }

    /// Frees a page the caller holds exclusively.
    pub fn free(&self, g: PageWriteGuard<'_>) -> Result<()> {
        let id = g.id;
        drop(g);
        self.pages.write().remove(&id);
        self.store.free_page(id)
    }

    /// Writes back every dirty page.
    pub fn flush_all(&self) -> Result<()> {
        let frames: Vec<_> = self.pages.read().iter().map(|(k, v)| (*k, v.clone())).collect();
        let mut buf = AlignedBuf::new(self.store.image_len_max());
        for (id, f) in frames {
            let mut g = f.write();
            if g.dirty {
                let n = codec::with_ctx(|c| page::encode_image(c, &g.data, id, UNIT, &mut buf));
                self.store.write_image(id, &mut buf, n)?;
                g.dirty = false;
            }
        }
        Ok(())
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            hit_decoded: self.hits.load(Ordering::Relaxed),
            hit_compressed: 0,
            miss: self.misses.load(Ordering::Relaxed),
        }
    }
}
