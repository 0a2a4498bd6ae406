//! The tier split: ghost votes, the cost model and the target size of the compressed tier
//! (module docs "Policy").

use super::*;

impl BufferPool {
    /// Records a ghost hit if the page left memory (or the decoded tier) recently, and moves
    /// the ghost bias of the compressed-tier target accordingly.
    ///
    /// Both windows cover the same number of bytes (a quarter of the budget). A hit on a page
    /// evicted `d` evictions ago would have been saved by `d` more images in the compressed
    /// tier (a read saved each, `d * image` bytes) or by `d` more decoded frames (read + decode
    /// saved each, `d * page` bytes); per byte, images win when `read * page / image > read +
    /// decode`, so the bias moves up or down by that difference. A compressed hit on a page
    /// demoted recently would have been saved by a larger decoded tier (a decode saved): the
    /// bias moves down. Steps are weighted by the measured costs, so the bias settles where a
    /// byte saves as much time in either tier.
    pub(super) fn note_ghost(&self, slot: &Slot, kind: u64) {
        let g = slot.ghost.load(Ordering::Relaxed);
        if g == 0 || g & 1 != kind {
            return;
        }
        let tick = g >> 1;
        let window_bytes = (self.frame_count * self.page_size / 4) as u64;
        let (now, window) = if kind == GHOST_EVICTED {
            (
                self.evict_tick.load(Ordering::Relaxed),
                window_bytes / self.image_bytes_avg(),
            )
        } else {
            (
                self.demote_tick.load(Ordering::Relaxed),
                window_bytes / self.page_size as u64,
            )
        };
        if now.saturating_sub(tick) > window {
            return;
        }
        // One ghost hit counts once.
        slot.ghost.store(0, Ordering::Relaxed);
        let (read_ns, decode_ns) = self.cost_averages();
        let (read, decode) = (
            read_ns as i64,
            decode_ns as i64 + self.rewrite_cost_per_load_ns() as i64,
        );
        let total = (read + decode).max(1);
        let page = self.page_size as i64;
        let vote = if kind == GHOST_EVICTED {
            self.counters
                .ghost_hits_evicted
                .fetch_add(1, Ordering::Relaxed);
            let images_per_page = page as f64 / self.image_bytes_avg() as f64;
            let gain = (read as f64 * images_per_page) as i64 - total;
            (page * gain / total).clamp(-page, page)
        } else {
            self.counters
                .ghost_hits_demoted
                .fetch_add(1, Ordering::Relaxed);
            -(page * decode / total)
        };
        self.ghost_votes.fetch_add(vote, Ordering::Relaxed);
    }

    /// Moves the ghost bias one step (1/64 of the budget) the way the ghost hits since the last
    /// call voted, and lets it decay toward the model (1/32 per call). Called by the writer
    /// every 20 ms or so: the bias can cross the whole budget within about a second of
    /// consistent votes, and fades when the ghosts fall silent, so it can neither saturate
    /// on old evidence nor outvote the model for good.
    pub(super) fn adapt_bias(&self) {
        let votes = self.ghost_votes.swap(0, Ordering::Relaxed);
        let step = (self.frame_count * self.page_size / 64) as i64;
        let max = self.log_bytes_max() as i64;
        let b = self.ghost_bias.load(Ordering::Relaxed);
        let b = b - b / 32 + step * votes.signum();
        self.ghost_bias.store(b.clamp(-max, max), Ordering::Relaxed);
        self.update_target();
    }

    /// Frames kept out of the compressed tier's reach, so hot pages (roots, inner nodes, the
    /// pages being worked on) always stay decoded.
    pub(super) fn reserve_frames(&self) -> usize {
        (self.frame_count / 8).max(FRAMES_MIN)
    }

    /// The most bytes the compressed tier may take.
    pub(super) fn log_bytes_max(&self) -> u64 {
        ((self.frame_count - self.reserve_frames()) * self.page_size) as u64
    }

    /// Average bytes one page's image takes in a log, from the store's totals.
    pub(super) fn image_bytes_avg(&self) -> u64 {
        let (pages, phys) = self.store.totals();
        if pages == 0 {
            return (self.page_size / 2) as u64;
        }
        (phys / pages + RECORD_HEADER as u64).max(RECORD_HEADER as u64 + 64)
    }

    /// Recomputes the cost model's split. Under uniform access the expected cost per page
    /// access is linear in the compressed tier's size, so the best split is a corner: either no
    /// compressed tier (a decoded cache, misses cost read + decode), or a compressed tier as large
    /// as every image (or the budget less the reserve), with the rest decoded (hits on
    /// compressed-only pages cost a decode). Compare the two with the measured read and decode
    /// costs. Keeping images pays when a read costs more than a decode times the compression
    /// ratio; on a fast RAM disk it often does not, on a real disk it does. Skew (hot sets) is
    /// left to the ghost bias.
    pub(super) fn refresh_model(&self) {
        let (pages, _) = self.store.totals();
        let page = self.page_size as f64;
        let budget = (self.frame_count * self.page_size) as f64;
        let decoded_all = pages as f64 * page;
        let reserve = (self.reserve_frames() * self.page_size) as f64;
        let target = if pages == 0 || decoded_all <= budget - reserve {
            // Everything fits decoded: images would only take room from decoded pages.
            0
        } else {
            let (read_ns, decode_ns) = self.cost_averages();
            let (read, decode) = (read_ns as f64, decode_ns as f64);
            // A page brought into a frame and then modified costs an encode when it leaves
            // again: in both corners, but more often in the one with fewer decoded pages.
            let decode = decode + self.rewrite_cost_per_load_ns();
            let n = pages as f64;
            let image = self.image_bytes_avg() as f64;
            let t = (self.all_images_bytes(pages) as f64).min(self.log_bytes_max() as f64);
            let cost_decoded_only = (1.0 - (budget / decoded_all).min(1.0)) * (read + decode);
            let held = (t / image / n).min(1.0);
            let decoded = ((budget - t) / page / n).min(held);
            let cost_with_images = (held - decoded) * decode + (1.0 - held) * (read + decode);
            if cost_with_images < cost_decoded_only {
                t as u64
            } else {
                0
            }
        };
        let all_images = self.all_images_bytes(pages);
        self.model_holds_all
            .store(target > 0 && target >= all_images, Ordering::Relaxed);
        self.model_target.store(target, Ordering::Relaxed);
        self.update_target();
    }

    /// The target is the model's plus the ghost bias, except that when the model holds every
    /// image the bias may only add: there, shrinking the compressed tier turns certain
    /// compressed hits into misses, while the ghosts of the few pages it evicts are too few to
    /// say so (the evicted side of the comparison has no population to measure).
    /// Average encode cost per page load: the measured encode ns times the share of loads
    /// that were written back (0 for a read-only workload).
    pub(super) fn rewrite_cost_per_load_ns(&self) -> f64 {
        let c = &self.counters;
        let encodes = c.encodes.load(Ordering::Relaxed);
        let loads = c.decodes.load(Ordering::Relaxed);
        if encodes == 0 || loads == 0 || self.fixed_read_ns.load(Ordering::Relaxed) != 0 {
            return 0.0;
        }
        let encode_ns = c.encode_ns.load(Ordering::Relaxed) as f64 / encodes as f64;
        let share = (c.writebacks.load(Ordering::Relaxed) as f64 / loads as f64).min(1.0);
        encode_ns * share
    }

    /// Log bytes that hold every page's image: the images with their record headers, plus
    /// one frame per shard for what a log cannot fill (its partly written head frame).
    /// Without it the log would turn over and drop images it should keep.
    pub(super) fn all_images_bytes(&self, pages: u64) -> u64 {
        pages * self.image_bytes_avg() + (SHARDS * self.page_size) as u64
    }

    pub(super) fn update_target(&self) {
        let model = self.model_target.load(Ordering::Relaxed) as i64;
        let mut bias = self.ghost_bias.load(Ordering::Relaxed);
        if self.model_holds_all.load(Ordering::Relaxed) {
            bias = bias.max(0);
        }
        let t = (model + bias).clamp(0, self.log_bytes_max() as i64) as u64;
        self.target_log_bytes.store(t, Ordering::Relaxed);
    }

    /// Whether an image of codec `codec_id` read from disk or just written should be cached.
    ///
    /// Never raw (codec none) or Trim images: they are the page itself, or the page minus its
    /// zeros, so a log copy would cost nearly a frame to save only a read, and decoding it
    /// gains nothing over keeping the page decoded. (Admitting Trim images of half-full pages
    /// is a later option, to be measured first: issue 19 design §2.6.)
    ///
    /// Other images only while the policy wants a compressed tier and it is not over its
    /// target. Otherwise caching it would push out a decoded page for a copy the policy does
    /// not want; even free frames are better left to decoded pages (kept together in the arena,
    /// fewer TLB misses).
    pub(super) fn admit_image(&self, codec_id: u8) -> bool {
        if codec_id == Codec::None.id() || codec_id == codec::TRIM_ID {
            return false;
        }
        let target = self.target_log_bytes.load(Ordering::Relaxed);
        // At the target an image is still taken: the log then reclaims its oldest frame,
        // dropping the images nobody used (and the stale ones write-backs left behind).
        target > 0
            && self.log_bytes.load(Ordering::Relaxed) < target + (SHARDS * self.page_size) as u64
    }

    /// Dirty pages above which the writer cleans regardless of eviction: 90% of the frames
    /// not in compressed logs (as InnoDB's `innodb_max_dirty_pages_pct`). Below it, pages are
    /// written only when evicting threads are about to need them clean, or at a checkpoint.
    pub(super) fn dirty_high(&self) -> usize {
        // Log frames beyond the target are reclaimed before any decoded page is touched, so
        // they count as room for decoded pages.
        let target_frames = self.target_log_bytes.load(Ordering::Relaxed) as usize / self.page_size;
        let log = self.log_frames.load(Ordering::Relaxed).min(target_frames);
        (self.frame_count - log) * 9 / 10
    }

    /// Average ns of one storage read (incl. checksum) and of one decode, measured so far.
    pub(super) fn cost_averages(&self) -> (u64, u64) {
        let fixed = (
            self.fixed_read_ns.load(Ordering::Relaxed),
            self.fixed_decode_ns.load(Ordering::Relaxed),
        );
        if fixed.0 != 0 && fixed.1 != 0 {
            return fixed;
        }
        let c = &self.store.counters;
        let reads = c.reads.load(Ordering::Relaxed).max(1);
        let read_ns =
            (c.read_ns.load(Ordering::Relaxed) + c.checksum_ns.load(Ordering::Relaxed)) / reads;
        let decodes = self.counters.decodes.load(Ordering::Relaxed).max(1);
        let decode_ns = self.counters.decode_ns.load(Ordering::Relaxed) / decodes;
        // Before anything was measured, assume a read costs ten decodes.
        if c.reads.load(Ordering::Relaxed) == 0
            || self.counters.decodes.load(Ordering::Relaxed) == 0
        {
            return (100_000, 10_000);
        }
        (read_ns.max(1), decode_ns.max(1))
    }
}
