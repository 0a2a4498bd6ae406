//! Write-back: encoding dirty pages (by the writer, evicting threads, flushes and
//! checkpoints), the checkpoint's page capture, and the background writer's loop.

use super::*;

impl BufferPool {
    /// Compresses page `id` into its on-disk image in `out` (with its cold codec if it is
    /// `leaving` the pool), counting the work; returns the image length.
    pub(super) fn encode(&self, data: &[u8], id: PageId, out: &mut [u8], leaving: bool) -> usize {
        let t0 = Instant::now();
        let n = page::encode_image_local_cold(data, id, UNIT, out, leaving, Some(&self.dicts));
        self.counters
            .encode_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.counters.encodes.fetch_add(1, Ordering::Relaxed);
        // Byte 7 of the image: the codec it was encoded with (none when compressing did not pay).
        Counters::count_codec(&self.counters.encoded_by_codec, out[7]);
        n
    }

    /// Writes back page `id` (latched at least shared, resident in `frame`, dirty): compress,
    /// write out of place, then cache the new image in the compressed tier. `leaving`: the
    /// page is written because it is about to leave the pool (a CLOCK victim, or an
    /// unreferenced page the writer cleans ahead of the hand), so its cold codec applies, if it
    /// has one. Pages that stay (checkpoints, flushes, referenced pages) keep their cheap image
    /// codec. A clean page is never written, and write-backs of one page never overlap (the
    /// [`WRITING`] flag), so an unchanged page is not encoded twice.
    pub(super) fn write_back_locked(
        &self,
        id: PageId,
        slot: &Slot,
        frame: usize,
        leaving: bool,
    ) -> Result<()> {
        let mut spins = 0u32;
        while slot.flags.fetch_or(WRITING, Ordering::AcqRel) & WRITING != 0 {
            backoff(&mut spins);
        }
        // The write-back we waited for may have saved this very content (nothing changed it:
        // we hold a latch); write only what is still owed, to the live map or the checkpoint.
        let r = if slot.flags.load(Ordering::Acquire) & (DIRTY | CKPT) == 0 {
            Ok(())
        } else {
            self.write_back_claimed(id, slot, frame, leaving)
        };
        slot.flags.fetch_and(!WRITING, Ordering::AcqRel);
        r
    }

    /// [`Self::write_back_locked`] once this thread holds the page's [`WRITING`] flag.
    pub(super) fn write_back_claimed(
        &self,
        id: PageId,
        slot: &Slot,
        frame: usize,
        leaving: bool,
    ) -> Result<()> {
        // A page flagged for the checkpoint is unchanged since its snapshot (a change would
        // have copied it and cleared the flag under the exclusive latch, which our latch
        // excludes): this image serves the checkpoint too. Claimed before writing, so that of
        // two threads writing the page back, exactly one records it.
        let for_ckpt = slot.flags.fetch_and(!CKPT, Ordering::AcqRel) & CKPT != 0;
        with_scratch(&WRITE_SCRATCH, |s| {
            // SAFETY: the caller holds a latch on the page resident in `frame` (shared or
            // exclusive), so no writer changes the frame and nobody takes it meanwhile.
            let data = unsafe { self.arena.frame(frame) };
            let n = self.encode(data, id, &mut s.image, leaving);
            if for_ckpt {
                let r = self.store.write_image_pinned(id, &mut s.image, n);
                self.ckpt_record(id, r.as_ref().ok().copied(), r.as_ref().err());
                r?;
            } else {
                self.store.write_image(id, &mut s.image, n)?;
            }
            self.counters.writebacks.fetch_add(1, Ordering::Relaxed);
            if slot.flags.fetch_and(!DIRTY, Ordering::AcqRel) & DIRTY != 0 {
                self.dirty_count.fetch_sub(1, Ordering::Relaxed);
            }
            if self.admit_image(s.image[7]) {
                self.log_append(id, slot, &s.image[..n]);
            } else {
                let _log = self.logs[Self::shard(id)].lock();
                slot.cpos.store(0, Ordering::Release);
            }
            Ok(())
        })
    }

    /// Writes back dirty pages, visiting frames from `start` round the arena.
    /// - `Pass::All`: every dirty page, waiting for latches (before a checkpoint).
    /// - `Pass::DownTo(n)`: pages the CLOCK hand would take soonest (not referenced) first,
    ///   then any, until at most `n` remain dirty; latched pages are skipped.
    /// - `Pass::Cold(n)`: up to `n` unreferenced dirty pages, so that evicting threads ahead
    ///   of the writer find clean victims.
    pub(super) fn write_back_pass(&self, pass: Pass, start: usize) -> Result<usize> {
        let mut written = 0;
        let all = matches!(pass, Pass::All);
        let rounds = if matches!(pass, Pass::DownTo(_)) {
            2
        } else {
            1
        };
        for round in 0..rounds {
            let cold_only = !all && round == 0;
            // Unreferenced pages are the ones the CLOCK hand takes next: written as leaving,
            // or a page cleaned ahead of the hand would leave the pool with its cheap image and
            // never be written again (clean pages are not rewritten). Referenced pages stay.
            let leaving = cold_only;
            for i in 0..self.frame_count {
                match pass {
                    Pass::DownTo(n) if self.dirty_count.load(Ordering::Relaxed) <= n => {
                        return Ok(written)
                    }
                    Pass::Cold(n) if written >= n => return Ok(written),
                    _ => {}
                }
                let f = (start + i) % self.frame_count;
                let owner = self.owners[f].load(Ordering::Acquire);
                if owner == OWNER_FREE || owner == OWNER_LOG {
                    continue;
                }
                let Some(slot) = self.slots.get(owner) else {
                    continue;
                };
                if !slot.is_dirty()
                    || (cold_only && slot.flags.load(Ordering::Relaxed) & REFERENCED != 0)
                {
                    continue;
                }
                if all {
                    slot.lock_shared();
                } else if !slot.try_lock_shared() {
                    continue;
                }
                let r = if slot.frame() == Some(f)
                    && slot.is_dirty()
                    && self.owners[f].load(Ordering::Acquire) == owner
                {
                    written += 1;
                    self.write_back_locked(PageId(owner), slot, f, leaving)
                } else {
                    Ok(())
                };
                slot.unlock_shared();
                r?;
            }
        }
        Ok(written)
    }

    /// Starts a checkpoint: flags every dirty page so that its content as of now is saved
    /// for it — written by [`Self::checkpoint_pages`] or by any write-back before that, or
    /// copied by the first change to it (the copy is written later). Pages clean now are in
    /// the store's snapshot already. The caller must keep page changes out during this call
    /// (the engine holds its checkpoint gate) and must take the store's snapshot
    /// ([`PageStore::begin_checkpoint`]) in the same quiet moment, *after* this call: pages
    /// that a concurrent write-back cleans meanwhile are not flagged, and the snapshot must
    /// then see the map entry that write-back installed. Returns the pages flagged.
    pub fn begin_checkpoint(&self) -> Result<usize> {
        if let Some(e) = self.writer_error.lock().clone() {
            return Err(StoreError::ReadOnlyAfterIoError(e));
        }
        let mut ck = self.ckpt.lock();
        assert!(ck.is_none(), "a pool checkpoint is already in progress");
        *ck = Some(PoolCheckpoint::default());
        let mut flagged = 0;
        for f in 0..self.frame_count {
            let owner = self.owners[f].load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            if slot.frame() != Some(f) {
                continue;
            }
            // Flag only while the page is still dirty, in one atomic step: a write-back that
            // is finishing concurrently (it holds only a shared latch; the gate does not stop
            // it) has then either cleared DIRTY first — and already pointed the live map at
            // its image, which the store's snapshot (taken after this) will hold — or finds
            // the flag and the page is written again for the checkpoint. Between a plain
            // check and a set, an evicting thread could drop the page with the flag on.
            let mut cur = slot.flags.load(Ordering::Acquire);
            while cur & DIRTY != 0 {
                match slot.flags.compare_exchange_weak(
                    cur,
                    cur | CKPT,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(prev) => {
                        debug_assert_eq!(prev & CKPT, 0, "page {owner} flagged twice");
                        flagged += 1;
                        break;
                    }
                    Err(now) => cur = now,
                }
            }
        }
        self.ckpt_pending.fetch_add(flagged, Ordering::AcqRel);
        Ok(flagged)
    }

    /// Saves every page flagged by [`Self::begin_checkpoint`] and points `snap` at the
    /// images. Writers may run meanwhile. Returns the pages written.
    pub fn checkpoint_pages(&self, snap: &mut MapSnapshot) -> Result<usize> {
        let r = self.checkpoint_pages_inner(snap);
        // Whatever happened, the checkpoint is over for the pool; flags left behind (after an
        // error) are cleared so pages can be evicted again.
        if r.is_err() {
            for f in 0..self.frame_count {
                let owner = self.owners[f].load(Ordering::Acquire);
                if owner != OWNER_FREE && owner != OWNER_LOG {
                    if let Some(slot) = self.slots.get(owner) {
                        if slot.flags.fetch_and(!CKPT, Ordering::AcqRel) & CKPT != 0 {
                            self.ckpt_pending.fetch_sub(1, Ordering::AcqRel);
                        }
                    }
                }
            }
        }
        *self.ckpt.lock() = None;
        r
    }

    pub(super) fn checkpoint_pages_inner(&self, snap: &mut MapSnapshot) -> Result<usize> {
        let mut written = 0;
        // 1. Flagged pages still unchanged: write them from their frames.
        for f in 0..self.frame_count {
            let owner = self.owners[f].load(Ordering::Acquire);
            if owner == OWNER_FREE || owner == OWNER_LOG {
                continue;
            }
            let Some(slot) = self.slots.get(owner) else {
                continue;
            };
            if slot.flags.load(Ordering::Acquire) & CKPT == 0 {
                continue;
            }
            slot.lock_shared();
            let r = if slot.frame() == Some(f) && slot.flags.load(Ordering::Acquire) & CKPT != 0 {
                written += 1;
                self.write_back_locked(PageId(owner), slot, f, false)
            } else {
                Ok(())
            };
            slot.unlock_shared();
            r?;
        }
        // 2. Wait for write-backs by other threads that claimed a flag to record their image.
        let mut spins = 0u32;
        while self.ckpt_pending.load(Ordering::Acquire) != 0 {
            backoff(&mut spins);
        }
        // 3. Pages changed since the snapshot: write their copies, outside the live map.
        let (extents, copies) = {
            let mut ck = self.ckpt.lock();
            let ck = ck.as_mut().expect("checkpoint in progress");
            if let Some(e) = ck.failed.take() {
                return Err(StoreError::ReadOnlyAfterIoError(e));
            }
            (
                std::mem::take(&mut ck.extents),
                std::mem::take(&mut ck.copies),
            )
        };
        for (id, ext) in extents {
            snap.set(id, ext);
        }
        with_scratch(&WRITE_SCRATCH, |s| -> Result<()> {
            for (id, data) in &copies {
                let n = self.encode(data, *id, &mut s.image, false);
                let ext = self.store.write_image_detached(*id, &mut s.image, n)?;
                self.counters.ckpt_writes.fetch_add(1, Ordering::Relaxed);
                snap.set(*id, ext);
            }
            Ok(())
        })?;
        Ok(written + copies.len())
    }

    /// Under the page's exclusive latch, before its first change since the checkpoint began:
    /// keeps a copy of its content for the checkpoint.
    pub(super) fn ckpt_preserve(&self, id: PageId, slot: &Slot, frame: usize) {
        if slot.flags.fetch_and(!CKPT, Ordering::AcqRel) & CKPT == 0 {
            return;
        }
        // SAFETY: the caller holds the exclusive latch of the page resident in `frame` and
        // has not yet handed out a mutable slice of it.
        let data: Box<[u8]> = unsafe { self.arena.frame(frame) }.into();
        self.counters.ckpt_copies.fetch_add(1, Ordering::Relaxed);
        if let Some(ck) = self.ckpt.lock().as_mut() {
            ck.copies.push((id, data));
        }
        let prev = self.ckpt_pending.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(prev > 0);
    }

    /// A write-back that claimed a page's [`CKPT`] flag finished.
    pub(super) fn ckpt_record(&self, id: PageId, ext: Option<Extent>, err: Option<&StoreError>) {
        if let Some(ck) = self.ckpt.lock().as_mut() {
            match ext {
                Some(e) => ck.extents.push((id, e)),
                None => {
                    let why = err.map_or_else(|| "write failed".to_string(), |e| e.to_string());
                    ck.failed.get_or_insert(why);
                }
            }
        }
        self.counters.ckpt_writes.fetch_add(1, Ordering::Relaxed);
        let prev = self.ckpt_pending.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(prev > 0);
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Pass {
    All,
    DownTo(usize),
    Cold(usize),
}

/// The background writer. It compresses pages off the request path when evicting threads
/// are about to meet dirty pages (it cleans just ahead of the CLOCK hand) or when more than
/// 90% of the decoded frames are dirty. Otherwise dirty pages stay dirty: a hot page rewritten
/// many times is compressed once, at eviction or checkpoint, not once per change. It also
/// refreshes the cost model of the tier split as read and decode costs are measured.
pub(super) fn writer_loop(pool: std::sync::Weak<BufferPool>) {
    loop {
        let Some(p) = pool.upgrade() else { return };
        if p.shutdown.load(Ordering::Acquire) {
            return;
        }
        {
            let (m, cv) = &p.writer_wake;
            let mut w = m.lock();
            if !*w {
                cv.wait_for(&mut w, Duration::from_millis(20));
            }
            *w = false;
        }
        if p.shutdown.load(Ordering::Acquire) {
            return;
        }
        let _busy = p.writer_busy.lock();
        p.refresh_model();
        p.adapt_bias();
        if p.writer_error.lock().is_some() {
            continue;
        }
        let high = p.dirty_high();
        let hand = p.hand.load(Ordering::Relaxed) % p.frame_count;
        let r = if p.dirty_count.load(Ordering::Relaxed) > high {
            p.write_back_pass(Pass::DownTo(high * 8 / 9), hand)
        } else if p.writer_demand.swap(false, Ordering::Relaxed) {
            p.write_back_pass(Pass::Cold((p.frame_count / 64).max(8)), hand)
        } else {
            Ok(0)
        };
        if let Err(e) = r {
            *p.writer_error.lock() = Some(e.to_string());
        }
    }
}
