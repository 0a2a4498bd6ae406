//! The compressed logs: per-shard FIFO rings of frames holding page images back to back.

use super::*;

impl BufferPool {
    /// Frees the oldest frame of the log with the most frames (at least two, so the head frame
    /// is never the one reclaimed). Images in it are dropped, or copied to the head if they were
    /// used since written and the head has room.
    pub(super) fn reclaim_log_frame(&self) -> Option<usize> {
        let start = self.log_rr.fetch_add(1, Ordering::Relaxed);
        let mut best: Option<(usize, usize)> = None;
        for i in 0..SHARDS {
            let s = (start + i) % SHARDS;
            let n = self.logs[s].lock().frames.len();
            if n >= 2 && best.is_none_or(|(_, bn)| n > bn) {
                best = Some((s, n));
            }
        }
        let (shard, _) = best?;
        let mut log = self.logs[shard].lock();
        if log.frames.len() < 2 {
            return None;
        }
        let fs = self.page_size as u64;
        let tail_frame = log.frames[0] as usize;
        let start_pos = log.tail_seq * fs;
        let end_pos = start_pos + fs;
        let mut pos = start_pos + self.first_record[tail_frame].load(Ordering::Relaxed) as u64;
        let under_target =
            self.log_bytes.load(Ordering::Relaxed) <= self.target_log_bytes.load(Ordering::Relaxed);
        // Room for copies: the unused part of the head frame.
        let head_end = (log.tail_seq + log.frames.len() as u64) * fs;
        while pos < end_pos && pos < log.head_pos {
            let mut hdr = [0u8; RECORD_HEADER];
            self.log_read(&log, pos, &mut hdr);
            let pid = u64::from_le_bytes(hdr[0..8].try_into().unwrap_or([0; 8]));
            let len = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]) as u64;
            let rec = record_len(len as usize) as u64;
            if let Some(slot) = self.slots.get(pid) {
                if slot.cpos.load(Ordering::Acquire) == pos + 1 {
                    let flags = slot.flags.load(Ordering::Relaxed);
                    let decoded = slot.frame.load(Ordering::Relaxed) != 0;
                    // Second chance: a compressed-only image used since it was written, or the
                    // copy of a decoded page while the tier is under its target.
                    let keep = flags & DIRTY == 0
                        && log.head_pos + rec <= head_end
                        && if decoded {
                            under_target
                        } else {
                            flags & C_REFERENCED != 0
                        };
                    if keep {
                        let dst = log.head_pos;
                        self.log_copy(&log, pos, dst, rec as usize);
                        self.note_record_span(&log, dst, rec);
                        log.head_pos += rec;
                        slot.cpos.store(dst + 1, Ordering::Release);
                        slot.flags.fetch_and(!C_REFERENCED, Ordering::Relaxed);
                        self.counters.relocations.fetch_add(1, Ordering::Relaxed);
                    } else {
                        slot.cpos.store(0, Ordering::Release);
                        self.counters
                            .compressed_evictions
                            .fetch_add(1, Ordering::Relaxed);
                        if slot.frame.load(Ordering::Relaxed) == 0 {
                            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
                            self.set_ghost(slot, GHOST_EVICTED);
                        }
                    }
                }
            }
            pos += rec;
        }
        // The next frame's first record starts where the last record of this one ended.
        if log.frames.len() >= 2 {
            let next = log.frames[1] as usize;
            if pos > end_pos {
                self.first_record[next].store((pos - end_pos) as u32, Ordering::Relaxed);
            }
        }
        log.frames.pop_front();
        log.tail_seq += 1;
        if log.head_pos < log.tail_seq * fs {
            log.head_pos = log.tail_seq * fs;
        }
        self.log_frames.fetch_sub(1, Ordering::Relaxed);
        self.log_bytes.fetch_sub(fs, Ordering::Relaxed);
        drop(log);
        self.owners[tail_frame].store(OWNER_FREE, Ordering::Release);
        Some(tail_frame)
    }

    /// The frame and offset of log position `pos`, which must lie in the log's frames.
    pub(super) fn log_locate(&self, log: &Log, pos: u64) -> (usize, usize) {
        let fs = self.page_size as u64;
        let seq = pos / fs;
        assert!(
            seq >= log.tail_seq && seq - log.tail_seq < log.frames.len() as u64,
            "log position {pos} outside the log's frames"
        );
        (
            log.frames[(seq - log.tail_seq) as usize] as usize,
            (pos % fs) as usize,
        )
    }

    /// Copies `out.len()` bytes from log position `pos` (possibly spanning frames). `log` is
    /// the guard of the shard mutex, which makes the log's frames ours.
    pub(super) fn log_read(&self, log: &Log, mut pos: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let (frame, off) = self.log_locate(log, pos);
            let n = (self.page_size - off).min(out.len() - done);
            // SAFETY: the frame belongs to this log and we hold its shard mutex, so nobody
            // else touches it; `out` is caller memory, never the arena.
            unsafe { self.arena.read(frame, off, &mut out[done..done + n]) };
            done += n;
            pos += n as u64;
        }
    }

    /// Copies `data` to log position `pos` (possibly spanning frames), under the shard mutex.
    pub(super) fn log_write(&self, log: &Log, mut pos: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let (frame, off) = self.log_locate(log, pos);
            let n = (self.page_size - off).min(data.len() - done);
            // SAFETY: the frame belongs to this log and we hold its shard mutex, so nobody
            // else reads or writes it; `data` is caller memory (a scratch image or a record
            // header), never the arena.
            unsafe { self.arena.write(frame, off, &data[done..done + n]) };
            done += n;
            pos += n as u64;
        }
    }

    /// A record was written at log position `pos`, `rec` bytes long: every frame it reaches
    /// into past its first starts its own first record where this one ends (a whole frame
    /// covered by it holds no record start). Reclaiming a tail frame walks its records from
    /// there, so this must be exact: a wrong start skips records whose pages would then keep
    /// pointing into a frame that is gone.
    pub(super) fn note_record_span(&self, log: &Log, pos: u64, rec: u64) {
        let fs = self.page_size as u64;
        let end = pos + rec;
        let mut b = (pos / fs + 1) * fs;
        while b < end {
            let idx = (b / fs - log.tail_seq) as usize;
            debug_assert!(idx < log.frames.len(), "record past the log's frames");
            if let Some(&f) = log.frames.get(idx) {
                self.first_record[f as usize].store((end - b).min(fs) as u32, Ordering::Relaxed);
            }
            b += fs;
        }
    }

    /// Copies a record of `len` bytes forward from log position `from` to `to` (the head),
    /// frame to frame, under the shard mutex.
    pub(super) fn log_copy(&self, log: &Log, from: u64, to: u64, len: usize) {
        // Relocation moves a record to the head, past its own end: the two ranges are disjoint
        // positions of one log, so disjoint bytes of the arena.
        assert!(
            from + len as u64 <= to,
            "log copy {from}+{len} -> {to} overlaps"
        );
        let mut done = 0;
        while done < len {
            let (sf, so) = self.log_locate(log, from + done as u64);
            let (df, doff) = self.log_locate(log, to + done as u64);
            let n = (len - done)
                .min(self.page_size - so)
                .min(self.page_size - doff);
            // SAFETY: both frames belong to this log and we hold its shard mutex; the ranges
            // are disjoint (asserted above).
            unsafe { self.arena.copy(sf, so, df, doff, n) };
            done += n;
        }
    }

    /// Appends `image` for page `id` to its shard's log and points the slot at it. Best effort:
    /// if no frame can be had the image is simply not cached.
    pub(super) fn log_append(&self, id: PageId, slot: &Slot, image: &[u8]) {
        let shard = Self::shard(id);
        let rec = record_len(image.len()) as u64;
        let fs = self.page_size as u64;
        let mut spare: Option<usize> = None;
        loop {
            let mut log = self.logs[shard].lock();
            let cap_end = (log.tail_seq + log.frames.len() as u64) * fs;
            if log.head_pos + rec > cap_end {
                let Some(f) = spare.take() else {
                    drop(log);
                    match self.take_free_or_reclaim(false) {
                        Ok(f) => {
                            spare = Some(f);
                            continue;
                        }
                        Err(_) => {
                            // Not cached. Any older image in the log is stale now (this may be
                            // a write-back): forget it, or a later demotion would serve it.
                            let _log = self.logs[shard].lock();
                            slot.cpos.store(0, Ordering::Release);
                            return;
                        }
                    }
                };
                if log.frames.is_empty() {
                    log.head_pos = log.tail_seq * fs;
                }
                // No record reaches into the new frame yet; the record that will is written
                // later (the shard mutex is let go in between, and another thread's record
                // may come first), and `note_record_span` sets this then.
                self.first_record[f].store(0, Ordering::Relaxed);
                let prev = self.owners[f].swap(OWNER_LOG, Ordering::AcqRel);
                assert_eq!(
                    prev, OWNER_FREE,
                    "frame {f} joins a log while owned by {prev:#x}"
                );
                log.frames.push_back(f as u32);
                self.log_frames.fetch_add(1, Ordering::Relaxed);
                self.log_bytes.fetch_add(fs, Ordering::Relaxed);
                continue;
            }
            let pos = log.head_pos;
            let mut hdr = [0u8; RECORD_HEADER];
            hdr[0..8].copy_from_slice(&id.0.to_le_bytes());
            hdr[8..12].copy_from_slice(&(image.len() as u32).to_le_bytes());
            self.log_write(&log, pos, &hdr);
            self.log_write(&log, pos + RECORD_HEADER as u64, image);
            self.note_record_span(&log, pos, rec);
            log.head_pos += rec;
            slot.cpos.store(pos + 1, Ordering::Release);
            slot.flags.fetch_and(!C_REFERENCED, Ordering::Relaxed);
            drop(log);
            if let Some(f) = spare {
                self.release_frame(f);
            }
            return;
        }
    }
}

pub(super) fn record_len(image_len: usize) -> usize {
    (RECORD_HEADER + image_len).div_ceil(8) * 8
}
