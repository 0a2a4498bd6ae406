//! Finding a frame: the free queue, CLOCK over decoded frames, demotion and eviction.

use super::*;

impl BufferPool {
    /// Takes a free frame for page `id`, making one free if needed.
    pub(super) fn take_frame(&self, id: PageId) -> Result<usize> {
        let f = self.take_free_or_reclaim(true)?;
        // Writing the frame without other latches is sound only because its last owner gave
        // it up: a frame still owned by a page or a log here would be shared.
        let prev = self.owners[f].swap(id.0, Ordering::AcqRel);
        assert_eq!(prev, OWNER_FREE, "frame {f} taken while owned by {prev:#x}");
        Ok(f)
    }

    /// Pops a free frame or frees one. `may_write` lets it write back a dirty victim when
    /// nothing clean is found; callers already inside a write-back pass `false` and get up to a
    /// few attempts only.
    pub(super) fn take_free_or_reclaim(&self, may_write: bool) -> Result<usize> {
        let mut attempts = 0usize;
        let attempts_max = if may_write { 64 } else { 2 };
        loop {
            if let Some(f) = self.free.pop() {
                if self.views.bytes() > 0 {
                    self.views.shrink(self.view_room());
                }
                return Ok(f as usize);
            }
            let over_target = self.log_bytes.load(Ordering::Relaxed)
                > self.target_log_bytes.load(Ordering::Relaxed);
            let from_log = over_target || attempts % 4 == 3;
            let got = if from_log {
                self.reclaim_log_frame()
                    .or_else(|| self.clock_victim(may_write))
            } else {
                self.clock_victim(may_write)
                    .or_else(|| self.reclaim_log_frame())
            };
            if let Some(f) = got {
                return Ok(f);
            }
            attempts += 1;
            if attempts >= attempts_max {
                return Err(StoreError::PoolExhausted(format!(
                    "no frame could be freed among {} (all latched or dirty)",
                    self.frame_count
                )));
            }
            std::thread::yield_now();
        }
    }

    /// Runs the CLOCK hand over frames for up to two sweeps and frees the first clean,
    /// unreferenced decoded page it meets. Dirty unreferenced pages are skipped (the writer is
    /// asked to clean ahead of the hand); with `write_dirty`, once the hand has gone an eighth
    /// of the arena past the first such page without finding a clean one, that page is written
    /// back here and taken.
    pub(super) fn clock_victim(&self, write_dirty: bool) -> Option<usize> {
        let patience = (self.frame_count / 8).max(8);
        let mut candidate: Option<(usize, usize)> = None;
        for step in 0..2 * self.frame_count {
            if let Some((f, since)) = candidate {
                if write_dirty && step - since >= patience {
                    if let Some(f) = self.write_back_and_take(f) {
                        return Some(f);
                    }
                    candidate = None;
                }
            }
            let f = self.hand.fetch_add(1, Ordering::Relaxed) % self.frame_count;
            let owner = self.owners[f].load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            let flags = slot.flags.load(Ordering::Relaxed);
            if flags & REFERENCED != 0 {
                slot.flags.fetch_and(!REFERENCED, Ordering::Relaxed);
                continue;
            }
            if flags & DIRTY != 0 {
                self.counters.dirty_skips.fetch_add(1, Ordering::Relaxed);
                if candidate.is_none() {
                    candidate = Some((f, step));
                }
                if !self.writer_demand.swap(true, Ordering::Relaxed) {
                    self.wake_writer();
                }
                continue;
            }
            if let Some(f) = self.take_clean(f, owner, slot) {
                return Some(f);
            }
        }
        match candidate {
            Some((f, _)) if write_dirty => self.write_back_and_take(f),
            _ => None,
        }
    }

    /// Writes back the dirty page in frame `f` (if it still is there and dirty) and takes
    /// the frame if the page is then clean and unlatched.
    pub(super) fn write_back_and_take(&self, f: usize) -> Option<usize> {
        let owner = self.owners[f].load(Ordering::Acquire);
        if owner == OWNER_FREE || owner == OWNER_LOG {
            return None;
        }
        let slot = self.slots.get(owner)?;
        if !slot.try_lock_shared() {
            return None;
        }
        let r = if slot.frame() == Some(f) && slot.is_dirty() {
            self.write_back_locked(PageId(owner), slot, f, true)
        } else {
            Ok(())
        };
        slot.unlock_shared();
        r.ok()?;
        self.take_clean(f, owner, slot)
    }

    /// Drops the clean page `owner` from frame `f` (demotion if its image stays in a log,
    /// eviction if not) and returns the frame; `None` if the page is latched, dirty or moved.
    pub(super) fn take_clean(&self, f: usize, owner: u64, slot: &Slot) -> Option<usize> {
        if !slot.try_lock_exclusive() {
            return None;
        }
        if slot.frame() != Some(f)
            || slot.flags.load(Ordering::Acquire) & (DIRTY | CKPT) != 0
            || self.owners[f].load(Ordering::Acquire) != owner
        {
            slot.unlock_exclusive();
            return None;
        }
        slot.frame.store(0, Ordering::Release);
        let kind = if slot.cpos.load(Ordering::Acquire) != 0 {
            // Just left the decoded tier while hot: its image gets a second chance.
            slot.flags.fetch_or(C_REFERENCED, Ordering::Relaxed);
            self.counters.demotions.fetch_add(1, Ordering::Relaxed);
            GHOST_DEMOTED
        } else {
            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
            GHOST_EVICTED
        };
        self.set_ghost(slot, kind);
        slot.unlock_exclusive();
        self.owners[f].store(OWNER_FREE, Ordering::Release);
        Some(f)
    }

    pub(super) fn set_ghost(&self, slot: &Slot, kind: u64) {
        let tick = if kind == GHOST_EVICTED {
            self.evict_tick.fetch_add(1, Ordering::Relaxed)
        } else {
            self.demote_tick.fetch_add(1, Ordering::Relaxed)
        };
        slot.ghost.store((tick << 1) | kind, Ordering::Relaxed);
    }
}
