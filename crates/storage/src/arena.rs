//! The buffer pool's arena: one allocation cut into equal frames, and the only code that turns a
//! frame number into memory.
//!
//! Threads read and write different frames at the same time, so no reference may ever cover
//! more than one frame: a `&[u8]` over the whole arena, however briefly, would assert that no
//! byte of it changes while it lives (and under Miri's aliasing models it invalidates the
//! `&mut` another thread holds on its own frame). Every access therefore starts from `base`, a
//! raw pointer with the allocation's own provenance, and is cut to one frame (or a range of one
//! frame) before it becomes a reference or a copy.
//!
//! Who may touch a frame is the pool's business, not the arena's (see `pool/`): a frame that
//! holds a decoded page is guarded by that page's latch (shared to read, exclusive to write); a
//! frame of a compressed log by the mutex of the log's shard; a free frame belongs to whichever
//! thread popped it from the free queue. Every accessor here is `unsafe` with that contract, and
//! checks only what it can check cheaply: that the range lies inside one frame.

use std::ptr::NonNull;

use crate::io::AlignedBuf;

/// `frames` frames of `frame_size` bytes in one zeroed allocation.
pub(crate) struct Arena {
    /// Start of the allocation, from the allocator's own pointer, never from a reference: it
    /// may be written through, and deriving a frame from it retags no other frame.
    base: NonNull<u8>,
    frames: usize,
    frame_size: usize,
    /// Owns the memory and frees it on drop; never dereferenced after `base` is taken.
    _buf: AlignedBuf,
}

// SAFETY: the arena owns its memory like a `Box<[u8]>` does and has no thread-affine state.
unsafe impl Send for Arena {}
// SAFETY: shared access goes only through the unsafe accessors below, whose callers promise
// that no two threads conflict on a frame (the per-frame protocol in the module docs). That is
// the contract of an `UnsafeCell<[u8]>` per frame, which is `Sync` under the same promise.
unsafe impl Sync for Arena {}

impl Arena {
    /// A zeroed arena, offered to the kernel for transparent huge pages (see
    /// [`AlignedBuf::new_huge`]).
    pub(crate) fn new(frames: usize, frame_size: usize) -> Arena {
        assert!(frames > 0 && frame_size > 0, "empty arena");
        let len = frames
            .checked_mul(frame_size)
            .expect("arena size overflows");
        let mut buf = AlignedBuf::new_huge(len);
        assert!(buf.len() >= len, "allocation shorter than the arena");
        let base = buf.as_non_null();
        Arena {
            base,
            frames,
            frame_size,
            _buf: buf,
        }
    }

    /// Start of frame `frame`, with the allocation's provenance.
    #[inline]
    fn frame_ptr(&self, frame: usize) -> *mut u8 {
        if frame >= self.frames {
            outside_arena(frame, self.frames);
        }
        // SAFETY: frame < frames and the allocation holds frames * frame_size bytes (checked
        // in `new`), so the offset stays inside it.
        unsafe { self.base.as_ptr().add(frame * self.frame_size) }
    }

    /// Start of `len` bytes at `off` in frame `frame`, checked to lie inside that frame.
    #[inline]
    fn range_ptr(&self, frame: usize, off: usize, len: usize) -> *mut u8 {
        if off > self.frame_size || len > self.frame_size - off {
            outside_frame(off, len, self.frame_size);
        }
        // SAFETY: off + len <= frame_size, so the range stays inside the frame.
        unsafe { self.frame_ptr(frame).add(off) }
    }

    /// Frame `frame`, to read.
    ///
    /// # Safety
    /// Nobody writes the frame while the slice lives: the caller holds a latch on the page that
    /// owns it, or the mutex of the log that owns it.
    #[inline]
    pub(crate) unsafe fn frame(&self, frame: usize) -> &[u8] {
        // SAFETY: the pointer is in bounds for frame_size bytes, initialised (the allocation
        // is zeroed), and by the caller's contract no one writes them while the slice lives.
        unsafe { std::slice::from_raw_parts(self.frame_ptr(frame), self.frame_size) }
    }

    /// Frame `frame`, to write.
    ///
    /// # Safety
    /// Nobody else reads or writes the frame while the slice lives: the caller holds the
    /// exclusive latch of the page that owns it.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn frame_mut(&self, frame: usize) -> &mut [u8] {
        // SAFETY: in bounds and initialised as in `frame`; the pointer descends from the
        // allocation, not from a shared reference, so writing through it is allowed, and by
        // the caller's contract this is the only access to the frame while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(self.frame_ptr(frame), self.frame_size) }
    }

    /// Copies `out.len()` bytes from offset `off` of frame `frame` into `out`.
    ///
    /// # Safety
    /// Nobody writes those bytes meanwhile (for a log frame: the caller holds its shard mutex).
    #[inline]
    pub(crate) unsafe fn read(&self, frame: usize, off: usize, out: &mut [u8]) {
        let src = self.range_ptr(frame, off, out.len());
        // SAFETY: src is valid for out.len() bytes inside one frame that no one writes (the
        // caller's contract); `out` is a live `&mut`, so it cannot overlap bytes that the
        // caller promises are only read.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) }
    }

    /// Copies `data` to offset `off` of frame `frame`.
    ///
    /// # Safety
    /// Nobody else reads or writes those bytes meanwhile (for a log frame: the caller holds its
    /// shard mutex), and `data` does not lie in them.
    #[inline]
    pub(crate) unsafe fn write(&self, frame: usize, off: usize, data: &[u8]) {
        let dst = self.range_ptr(frame, off, data.len());
        // SAFETY: dst is valid for data.len() bytes inside one frame, derived from the
        // allocation (writable), accessed by no one else (the caller's contract), and `data`
        // lies elsewhere (also the contract).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) }
    }

    /// Copies `len` bytes from `src_off` of frame `src` to `dst_off` of frame `dst`, without a
    /// bounce buffer. The two ranges must not overlap (asserted).
    ///
    /// # Safety
    /// Nobody writes the source bytes, nor reads or writes the destination bytes, meanwhile
    /// (for log frames: the caller holds the shard mutex of the log that owns both).
    #[inline]
    pub(crate) unsafe fn copy(
        &self,
        src: usize,
        src_off: usize,
        dst: usize,
        dst_off: usize,
        len: usize,
    ) {
        assert!(
            src != dst || src_off + len <= dst_off || dst_off + len <= src_off,
            "overlapping copy within frame {src}: {src_off} -> {dst_off}, {len} bytes"
        );
        let from = self.range_ptr(src, src_off, len);
        let to = self.range_ptr(dst, dst_off, len);
        // SAFETY: both ranges lie inside the allocation (checked), do not overlap (asserted,
        // and distinct frames are disjoint), `to` is derived from the allocation (writable),
        // and the caller's contract excludes every conflicting access.
        unsafe { std::ptr::copy_nonoverlapping(from, to, len) }
    }
}

// The checks' panics are kept out of line, so that the accessors stay small enough to be
// inlined into every page access (in other crates too).
#[cold]
#[inline(never)]
fn outside_arena(frame: usize, frames: usize) -> ! {
    panic!("frame {frame} outside an arena of {frames}")
}

#[cold]
#[inline(never)]
fn outside_frame(off: usize, len: usize, frame_size: usize) -> ! {
    panic!("range {off}+{len} outside a frame of {frame_size}")
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Arena({} frames of {})", self.frames, self.frame_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::sync::Arc;

    /// Frames per thread: a page frame, and two log frames that records straddle.
    const OWN: usize = 3;
    const THREADS: usize = 4;
    /// Small frames keep the test fast under Miri; the arena does not care about the size.
    const FS: usize = 256;

    fn pattern(t: usize, round: usize, i: usize) -> u8 {
        (t * 31 + round * 7 + i) as u8
    }

    /// Threads at once, each on its own frames, the way the pool works on pages and logs:
    /// whole-frame slices under a "latch", records written and read in pieces across a frame
    /// boundary, a frame-to-frame copy across boundaries (a log relocation), and appends to one
    /// shared frame under a mutex (a shard's log head). Run under Miri (`.ci/run`), this checks
    /// that no access to one frame disturbs another thread's frame (the aliasing defect of
    /// issue 19) and that the mutex orders the shared frame's accesses (no data race).
    #[test]
    fn miri_arena_threads() {
        let rounds = if cfg!(miri) { 3 } else { 200 };
        let shared = THREADS * OWN;
        let arena = Arc::new(Arena::new(THREADS * OWN + 1, FS));
        let head = Arc::new(Mutex::new(0usize));
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let arena = Arc::clone(&arena);
                let head = Arc::clone(&head);
                std::thread::spawn(move || {
                    let (page, log0, log1) = (t * OWN, t * OWN + 1, t * OWN + 2);
                    for round in 0..rounds {
                        // SAFETY: frames t*OWN.. are this thread's alone (its "latch").
                        let p = unsafe { arena.frame_mut(page) };
                        p.fill(pattern(t, round, 0));
                        p[FS - 1] = pattern(t, round, 1);
                        // SAFETY: as above; the &mut above is no longer used.
                        let p = unsafe { arena.frame(page) };
                        assert!(p[..FS - 1].iter().all(|&b| b == pattern(t, round, 0)));
                        assert_eq!(p[FS - 1], pattern(t, round, 1));

                        // A 100-byte record straddling log0 | log1, written in two pieces.
                        let rec: Vec<u8> = (0..100).map(|i| pattern(t, round, i)).collect();
                        let at = FS - 40;
                        // SAFETY: this thread's frames.
                        unsafe {
                            arena.write(log0, at, &rec[..40]);
                            arena.write(log1, 0, &rec[40..]);
                        }
                        // Relocated frame to frame as the log does it, piece by piece: the
                        // two pieces to log1[100..200], then the whole record to log0[..100].
                        // SAFETY: this thread's frames; ranges disjoint.
                        unsafe {
                            arena.copy(log0, at, log1, 100, 40);
                            arena.copy(log1, 0, log1, 140, 60);
                            arena.copy(log1, 100, log0, 0, 100);
                        }
                        let mut back = [0u8; 100];
                        // SAFETY: this thread's frames.
                        unsafe {
                            arena.read(log0, at, &mut back[..40]);
                            arena.read(log1, 0, &mut back[40..]);
                        }
                        assert_eq!(&back[..], &rec[..]);
                        // SAFETY: this thread's frame.
                        unsafe { arena.read(log0, 0, &mut back) };
                        assert_eq!(&back[..], &rec[..]);

                        // Appends to the shared frame, ordered by the mutex.
                        let mut h = head.lock();
                        if *h + 2 > FS {
                            *h = 0;
                        }
                        let rec = [t as u8, round as u8];
                        // SAFETY: the shared frame is accessed only under `head`'s mutex.
                        unsafe { arena.write(shared, *h, &rec) };
                        let mut got = [0u8; 2];
                        // SAFETY: as above.
                        unsafe { arena.read(shared, *h, &mut got) };
                        assert_eq!(got, rec);
                        *h += 2;
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        // Every thread's last round is intact: no thread wrote outside its frames.
        for t in 0..THREADS {
            // SAFETY: the workers are done.
            let p = unsafe { arena.frame(t * OWN) };
            assert_eq!(p[0], pattern(t, rounds - 1, 0));
        }
    }

    #[test]
    #[should_panic(expected = "outside an arena")]
    fn frame_index_is_checked() {
        let arena = Arena::new(2, FS);
        // SAFETY: no other access; the call panics before forming a slice.
        let _ = unsafe { arena.frame(2) };
    }

    #[test]
    #[should_panic(expected = "outside a frame")]
    fn ranges_do_not_cross_frames() {
        let arena = Arena::new(2, FS);
        // SAFETY: no other access; the call panics before copying.
        unsafe { arena.write(0, FS - 1, &[1, 2]) };
    }

    #[test]
    #[should_panic(expected = "overlapping copy")]
    fn overlapping_copies_are_refused() {
        let arena = Arena::new(1, FS);
        // SAFETY: no other access; the call panics before copying.
        unsafe { arena.copy(0, 0, 0, 10, 20) };
    }
}
