//! Decoded views of compact leaves (issue 19: in-memory scans at the speed of uncompressed
//! pages).
//!
//! A compact leaf keeps its values FSST-encoded in the buffer pool, so every row a scan hands
//! out costs a decode (about 100 ns for a sysbench row). When the pool has memory to spare,
//! a scan that reaches a leaf decodes all of it once into a [`LeafView`] (keys rebuilt, values
//! decoded, packed back to back) and keeps it as a page view (`zipdb_storage::views`): until
//! the leaf changes, later scans copy from the view as they would from an
//! uncompressed leaf. Memory-tight pools keep no views, so the compressed format costs its
//! compressed size there. Leaves with overflow values get no view (the chain is other pages).

use std::sync::Arc;

use zipdb_storage::pool::PageReadGuard;

use super::compact::{CompactLeaf, StoredValue};
use super::BTree;
use crate::error::Result;

/// Every entry of one compact leaf, decoded.
pub(super) struct LeafView {
    data: Vec<u8>,
    /// Per entry: key at `start..start + klen`, value at `start + klen..end` of `data`.
    rows: Vec<(u32, u32, u32)>,
}

impl LeafView {
    pub(super) fn count(&self) -> usize {
        self.rows.len()
    }

    pub(super) fn key(&self, i: usize) -> &[u8] {
        let (s, k, _) = self.rows[i];
        &self.data[s as usize..(s + k) as usize]
    }

    /// Key and value of entry `i` as one slice (the key first, `klen` bytes).
    pub(super) fn entry(&self, i: usize) -> (&[u8], usize) {
        let (s, k, e) = self.rows[i];
        (&self.data[s as usize..e as usize], k as usize)
    }

    pub(super) fn search(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        self.rows
            .binary_search_by(|&(s, k, _)| self.data[s as usize..(s + k) as usize].cmp(key))
    }

    fn bytes(&self) -> usize {
        self.data.capacity() + self.rows.capacity() * std::mem::size_of::<(u32, u32, u32)>()
    }
}

impl BTree {
    /// The view of leaf `l` (latched by `g`): the one kept, or a new one when the pool
    /// advises it (room to keep it, and the leaf not rewritten between visits); otherwise the
    /// caller decodes the rows it needs one by one. `None` for leaves without FSST values or with overflow
    /// values, and when there is no room.
    pub(super) fn leaf_view(
        &self,
        g: &PageReadGuard<'_>,
        l: &CompactLeaf<'_>,
    ) -> Result<Option<Arc<LeafView>>> {
        if l.symtab_version() == 0 {
            return Ok(None);
        }
        // A decoded leaf is about twice the page: FSST halves sysbench rows and real text.
        match self.pool.view::<LeafView>(g, 2 * g.len()) {
            Ok(v) => {
                debug_assert_eq!(v.count(), l.count());
                return Ok(Some(v));
            }
            Err(false) => return Ok(None),
            Err(true) => {}
        }
        let id = g.id();
        let version = l.symtab_version();
        let mut data = Vec::with_capacity(2 * g.len());
        let mut rows = Vec::with_capacity(l.count());
        for i in 0..l.count() {
            let start = data.len();
            let v = l.entry_into(i, &mut data)?;
            let klen = data.len() - start;
            if matches!(v, StoredValue::Overflow { .. }) {
                return Ok(None);
            }
            self.read_stored(id, version, v, &mut data)?;
            rows.push((start as u32, klen as u32, data.len() as u32));
        }
        // The estimate above may be short or long; what is kept should be what is used.
        data.shrink_to_fit();
        let view = Arc::new(LeafView { data, rows });
        let bytes = view.bytes();
        // Not kept when another thread took the room meanwhile; this scan uses it anyway.
        self.pool.put_view(g, view.clone(), bytes);
        Ok(Some(view))
    }
}
