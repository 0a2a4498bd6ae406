//! Warm restart: loading the pages that were resident at the last shutdown.

use super::*;

impl BufferPool {
    /// The pages in the pool, hottest first, for the warm-restart list: decoded inner nodes
    /// (every lookup passes through them), then decoded pages used since the CLOCK hand last
    /// passed, then the other decoded pages, then pages held only as compressed images (used
    /// ones first). Dirty pages are listed like clean ones: what matters at the next start is
    /// that they were in use. Call it when the pool is quiet (at shutdown); under load the
    /// list is still valid, only approximate.
    pub fn resident_pages(&self) -> Vec<PageId> {
        let mut classes: [Vec<PageId>; 5] = Default::default();
        for (f, owner) in self.owners.iter().enumerate() {
            let owner = owner.load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            let class = if slot.try_lock_shared() {
                let class = if slot.frame() != Some(f) {
                    None
                } else {
                    // SAFETY: we hold a shared latch on the page, and its slot points at `f`
                    // (checked under the latch), so no writer changes the frame meanwhile.
                    let page = unsafe { self.arena.frame(f) };
                    Some(if page[0] == PageType::Inner as u8 {
                        0
                    } else if slot.flags.load(Ordering::Relaxed) & REFERENCED != 0 {
                        1
                    } else {
                        2
                    })
                };
                slot.unlock_shared();
                class
            } else {
                // Latched exclusively right now: in use.
                Some(1)
            };
            if let Some(c) = class {
                classes[c].push(PageId(owner));
            }
        }
        // Compressed-only pages are found through the page table: their images lie in the
        // logs, but a log may still hold stale records of a page.
        for id in 1..self.store.page_id_end() {
            let Some(slot) = self.slots.get(id) else {
                continue;
            };
            if slot.cpos.load(Ordering::Acquire) == 0 || slot.frame().is_some() {
                continue;
            }
            let c = if slot.flags.load(Ordering::Relaxed) & C_REFERENCED != 0 {
                3
            } else {
                4
            };
            classes[c].push(PageId(id));
        }
        classes.concat()
    }

    /// Starts a background thread that loads `ids` (a warm-restart list, hottest first) into
    /// the pool. It stops at the end of the list, when loading more would evict something
    /// (only free frames beyond the reserve kept for hot pages are used), or at shutdown.
    /// Pages that no longer exist or cannot be read or verified are skipped and counted.
    /// Progress is in [`PoolStats`]' `warm_*` fields.
    pub fn start_warm_load(self: &Arc<Self>, ids: Vec<PageId>) -> Result<()> {
        let c = &self.counters;
        c.warm_listed.store(ids.len() as u64, Ordering::Relaxed);
        if ids.is_empty() {
            c.warm_done.store(1, Ordering::Release);
            return Ok(());
        }
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("zipdb-warm".into())
            .spawn(move || warm_loop(weak, ids));
        match spawned {
            Ok(h) => {
                *self.warm_loader.lock() = Some(h);
                Ok(())
            }
            Err(e) => {
                c.warm_done.store(1, Ordering::Release);
                Err(StoreError::Config(format!(
                    "cannot start the warm-restart loader: {e}"
                )))
            }
        }
    }

    /// Marks that no warm-restart load will run (disabled, or no usable list).
    pub fn skip_warm_load(&self) {
        self.counters.warm_done.store(1, Ordering::Release);
    }

    /// Whether the pool has room for a warm-restart page without evicting anything.
    pub(super) fn warm_has_room(&self) -> bool {
        self.free.len() > self.reserve_frames()
    }

    /// Loads page `id` for the warm-restart list unless it is resident or busy.
    pub(super) fn warm_one(&self, id: PageId) -> WarmOutcome {
        if !self.store.page_exists(id) {
            return WarmOutcome::Skipped;
        }
        let Ok(slot) = self.slots.ensure(id.0) else {
            return WarmOutcome::Skipped;
        };
        // A page latched by someone is being used: it needs no help.
        if slot.frame().is_some() || !slot.try_lock_exclusive() {
            return WarmOutcome::Resident;
        }
        if slot.frame().is_some() {
            slot.unlock_exclusive();
            return WarmOutcome::Resident;
        }
        let r = self.load_locked(id, slot);
        if r.is_ok() {
            // Not used yet: let CLOCK take it first if the workload does not want it.
            slot.flags.fetch_and(!REFERENCED, Ordering::Relaxed);
        }
        slot.unlock_exclusive();
        match r {
            Ok(_) => WarmOutcome::Loaded,
            Err(_) => WarmOutcome::Skipped,
        }
    }
}

/// What the warm-restart loader did with one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WarmOutcome {
    Loaded,
    Resident,
    Skipped,
}

/// Pages the warm-restart loader reads per batch, in disk order within the batch: the list
/// is hottest first, but images lie out of place, so sorting a batch by offset turns scattered
/// reads into mostly forward ones while the hottest pages still come first.
pub(super) const WARM_BATCH: usize = 256;

pub(super) fn warm_loop(pool: std::sync::Weak<BufferPool>, ids: Vec<PageId>) {
    for chunk in ids.chunks(WARM_BATCH) {
        let Some(p) = pool.upgrade() else { return };
        let mut batch: Vec<(u64, PageId)> = chunk
            .iter()
            .map(|&id| (p.store.extent(id).offset_bytes(), id))
            .collect();
        batch.sort_unstable();
        for (_, id) in batch {
            if p.shutdown.load(Ordering::Acquire) || !p.warm_has_room() {
                p.counters.warm_done.store(1, Ordering::Release);
                return;
            }
            match p.warm_one(id) {
                WarmOutcome::Loaded => p.counters.warm_loaded.fetch_add(1, Ordering::Relaxed),
                WarmOutcome::Skipped => p.counters.warm_skipped.fetch_add(1, Ordering::Relaxed),
                WarmOutcome::Resident => 0,
            };
        }
    }
    if let Some(p) = pool.upgrade() {
        p.counters.warm_done.store(1, Ordering::Release);
    }
}
