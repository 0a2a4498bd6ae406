//! The I/O layer: a [`Storage`] is one flat file of bytes addressed by offset.
//!
//! Two backends: [`FileStorage`] (positioned `pread`/`pwrite`, `fdatasync`, optional O_DIRECT)
//! and [`SimStorage`], an in-memory disk for tests that can tear writes, fail any operation with
//! an I/O error, and "crash" by dropping every write that was not yet synced.
//!
//! Everything above this layer talks to `dyn Storage`, so every I/O path in zipdb can be run
//! against the simulated disk.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Alignment of buffers, offsets and lengths for O_DIRECT I/O. 512 is the logical block size of
/// the disks zipdb was measured on; [`FileStorage::open`] checks the real requirement.
pub const DIRECT_IO_ALIGN: usize = 512;

/// Which operation failed, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    Open,
    Read,
    Write,
    Sync,
    SetLen,
    Punch,
}

impl std::fmt::Display for IoOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IoOp::Open => "open",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Sync => "sync",
            IoOp::SetLen => "set_len",
            IoOp::Punch => "punch_hole",
        })
    }
}

/// An I/O failure with where it happened.
#[derive(Debug, thiserror::Error)]
#[error("{op} of {len} bytes at offset {offset} in {path} failed: {source}")]
pub struct IoError {
    pub op: IoOp,
    pub path: String,
    pub offset: u64,
    pub len: usize,
    #[source]
    pub source: std::io::Error,
}

/// A flat, byte-addressed file. Implementations must be safe to call from many threads at once;
/// writes to disjoint ranges never interfere.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Fills `buf` from `offset`. Reading past the end is an error (`UnexpectedEof`).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError>;
    /// Writes all of `buf` at `offset`, growing the file if needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError>;
    /// Makes every completed write durable (fdatasync).
    fn sync(&self) -> Result<(), IoError>;
    /// Current length in bytes.
    fn len(&self) -> Result<u64, IoError>;
    /// Truncates or extends the file.
    fn set_len(&self, len: u64) -> Result<(), IoError>;
    /// Gives the blocks of `[offset, offset + len)` back to the filesystem; the range then
    /// reads as zeros and the file keeps its length. Only for ranges no durable structure
    /// references (the store's free space): a failure loses nothing, and callers may ignore
    /// it. The default does nothing (storage without holes, such as test doubles).
    fn punch_hole(&self, offset: u64, len: u64) -> Result<(), IoError> {
        let _ = (offset, len);
        Ok(())
    }
    /// A name for error messages (the file path).
    fn name(&self) -> &str;
    /// True when reads and writes bypass the OS page cache and must be aligned to
    /// [`DIRECT_IO_ALIGN`] (offsets, lengths and buffer addresses).
    fn is_direct(&self) -> bool {
        false
    }
    /// `true` if the file has no bytes.
    fn is_empty(&self) -> Result<bool, IoError> {
        Ok(self.len()? == 0)
    }
}

/// A real file.
#[derive(Debug)]
pub struct FileStorage {
    file: File,
    path: String,
    direct: bool,
}

impl FileStorage {
    /// Opens (creating if missing) `path`. With `direct`, the file is opened with O_DIRECT so that
    /// reads really reach the device; callers must then pass aligned buffers, offsets and lengths.
    pub fn open(path: &Path, direct: bool) -> Result<FileStorage, IoError> {
        let name = path.display().to_string();
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create(true).truncate(false);
        if direct {
            opts.custom_flags(libc::O_DIRECT);
        }
        let file = opts.open(path).map_err(|source| IoError {
            op: IoOp::Open,
            path: name.clone(),
            offset: 0,
            len: 0,
            source,
        })?;
        Ok(FileStorage {
            file,
            path: name,
            direct,
        })
    }

    pub fn path(&self) -> PathBuf {
        PathBuf::from(&self.path)
    }

    fn err(&self, op: IoOp, offset: u64, len: usize, source: std::io::Error) -> IoError {
        IoError {
            op,
            path: self.path.clone(),
            offset,
            len,
            source,
        }
    }

    fn check_aligned(
        &self,
        op: IoOp,
        ptr: *const u8,
        len: usize,
        offset: u64,
    ) -> Result<(), IoError> {
        if self.direct
            && (!(ptr as usize).is_multiple_of(DIRECT_IO_ALIGN)
                || !len.is_multiple_of(DIRECT_IO_ALIGN)
                || !offset.is_multiple_of(DIRECT_IO_ALIGN as u64))
        {
            return Err(self.err(
                op,
                offset,
                len,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "unaligned O_DIRECT request (buffer, length and offset must be 512-aligned)",
                ),
            ));
        }
        Ok(())
    }
}

impl Storage for FileStorage {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        self.check_aligned(IoOp::Read, buf.as_ptr(), buf.len(), offset)?;
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| self.err(IoOp::Read, offset, buf.len(), e))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        self.check_aligned(IoOp::Write, buf.as_ptr(), buf.len(), offset)?;
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| self.err(IoOp::Write, offset, buf.len(), e))
    }

    fn sync(&self) -> Result<(), IoError> {
        self.file
            .sync_data()
            .map_err(|e| self.err(IoOp::Sync, 0, 0, e))
    }

    fn len(&self) -> Result<u64, IoError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| self.err(IoOp::Read, 0, 0, e))
    }

    fn set_len(&self, len: u64) -> Result<(), IoError> {
        self.file
            .set_len(len)
            .map_err(|e| self.err(IoOp::SetLen, len, 0, e))
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<(), IoError> {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return Err(self.err(
                IoOp::Punch,
                offset,
                0,
                std::io::Error::from(std::io::ErrorKind::InvalidInput),
            ));
        };
        // SAFETY: fallocate on a descriptor this struct owns; no memory is passed.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off,
                n,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(self.err(
                IoOp::Punch,
                offset,
                len as usize,
                std::io::Error::last_os_error(),
            ))
        }
    }

    fn name(&self) -> &str {
        &self.path
    }

    fn is_direct(&self) -> bool {
        self.direct
    }
}

/// A fault the simulated disk injects on a future operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The next matching operation fails with an I/O error and changes nothing.
    Fail,
    /// The next write persists only its first `n` bytes (a torn write), then reports an error,
    /// as a power cut mid-write would leave it.
    Tear(usize),
}

/// Counts of operations, so tests can aim a fault at "the Nth write".
#[derive(Debug, Default)]
struct SimState {
    /// Bytes as the OS would return them (every write, synced or not).
    volatile: Vec<u8>,
    /// Bytes as they would survive a crash (state at the last sync).
    durable: Vec<u8>,
    /// Writes since the last sync, replayed onto `durable` at the next sync.
    unsynced: Vec<(u64, Vec<u8>)>,
    read_fault: Option<(u64, Fault)>,
    write_fault: Option<(u64, Fault)>,
    sync_fault: Option<(u64, Fault)>,
    reads: u64,
    writes: u64,
    syncs: u64,
    punch_fails: bool,
    punches: u64,
    punched_bytes: u64,
}

/// An in-memory disk with fault injection. Cloning shares the same disk, so a test can keep a
/// handle, let the engine "crash", and reopen over [`SimStorage::crash`]'s surviving bytes.
#[derive(Debug, Clone)]
pub struct SimStorage {
    state: Arc<Mutex<SimState>>,
    name: Arc<str>,
    read_bytes: Arc<AtomicU64>,
}

impl SimStorage {
    pub fn new(name: &str) -> SimStorage {
        SimStorage {
            state: Arc::new(Mutex::new(SimState::default())),
            name: Arc::from(name),
            read_bytes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Makes the read with 0-based index `nth` (counting from now) fail.
    pub fn fail_read_after(&self, nth: u64, fault: Fault) {
        let mut s = self.state.lock();
        let at = s.reads + nth;
        s.read_fault = Some((at, fault));
    }

    /// Injects `fault` on the write with 0-based index `nth` counting from now.
    pub fn fault_write_after(&self, nth: u64, fault: Fault) {
        let mut s = self.state.lock();
        let at = s.writes + nth;
        s.write_fault = Some((at, fault));
    }

    /// Makes the sync with 0-based index `nth` counting from now fail.
    pub fn fail_sync_after(&self, nth: u64) {
        let mut s = self.state.lock();
        let at = s.syncs + nth;
        s.sync_fault = Some((at, Fault::Fail));
    }

    /// Makes every hole punch from now on fail (as on a filesystem without holes).
    pub fn fail_punches(&self, fail: bool) {
        self.state.lock().punch_fails = fail;
    }

    /// Hole punches issued so far, and their bytes.
    pub fn punch_counts(&self) -> (u64, u64) {
        let s = self.state.lock();
        (s.punches, s.punched_bytes)
    }

    /// Removes every pending fault.
    pub fn clear_faults(&self) {
        let mut s = self.state.lock();
        s.read_fault = None;
        s.write_fault = None;
        s.sync_fault = None;
        s.punch_fails = false;
    }

    /// Simulates a power cut: every write since the last sync is lost. Returns a fresh disk that
    /// holds only what was durable; the old handle keeps working on the old state (the "dead"
    /// process may keep writing into the void without affecting the survivor).
    pub fn crash(&self) -> SimStorage {
        let s = self.state.lock();
        let survivor = SimState {
            volatile: s.durable.clone(),
            durable: s.durable.clone(),
            ..SimState::default()
        };
        SimStorage {
            state: Arc::new(Mutex::new(survivor)),
            name: self.name.clone(),
            read_bytes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Flips bits of the stored bytes at `offset` (both volatile and durable), as media corruption.
    pub fn corrupt(&self, offset: u64, xor: u8) {
        let mut s = self.state.lock();
        let o = offset as usize;
        if o < s.volatile.len() {
            s.volatile[o] ^= xor;
        }
        if o < s.durable.len() {
            s.durable[o] ^= xor;
        }
    }

    /// Number of reads, writes and syncs issued so far.
    pub fn op_counts(&self) -> (u64, u64, u64) {
        let s = self.state.lock();
        (s.reads, s.writes, s.syncs)
    }

    fn io_err(&self, op: IoOp, offset: u64, len: usize, msg: &str) -> IoError {
        IoError {
            op,
            path: self.name.to_string(),
            offset,
            len,
            source: std::io::Error::other(msg.to_string()),
        }
    }
}

fn write_into(dst: &mut Vec<u8>, buf: &[u8], offset: u64) {
    let end = offset as usize + buf.len();
    if dst.len() < end {
        resize_zeroed(dst, end);
    }
    dst[offset as usize..end].copy_from_slice(buf);
}

/// `v.resize(len, 0)` as one copy of a zeroed block: `resize` stores the zeros one at a time,
/// which Miri (the pool's tests of issue 19) interprets byte by byte, a second per page.
fn resize_zeroed(v: &mut Vec<u8>, len: usize) {
    if len <= v.len() {
        v.truncate(len);
    } else {
        v.extend_from_slice(&vec![0u8; len - v.len()]);
    }
}

impl Storage for SimStorage {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        let mut s = self.state.lock();
        let n = s.reads;
        s.reads += 1;
        if let Some((at, _)) = s.read_fault {
            if at == n {
                s.read_fault = None;
                return Err(self.io_err(IoOp::Read, offset, buf.len(), "injected read error"));
            }
        }
        let end = offset as usize + buf.len();
        if end > s.volatile.len() {
            return Err(IoError {
                op: IoOp::Read,
                path: self.name.to_string(),
                offset,
                len: buf.len(),
                source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past end"),
            });
        }
        buf.copy_from_slice(&s.volatile[offset as usize..end]);
        self.read_bytes
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        let mut s = self.state.lock();
        let n = s.writes;
        s.writes += 1;
        if let Some((at, fault)) = s.write_fault {
            if at == n {
                s.write_fault = None;
                return match fault {
                    Fault::Fail => {
                        Err(self.io_err(IoOp::Write, offset, buf.len(), "injected write error"))
                    }
                    Fault::Tear(keep) => {
                        let part = &buf[..keep.min(buf.len())];
                        // A torn write reaches the media as far as it got: it survives a crash.
                        write_into(&mut s.volatile, part, offset);
                        write_into(&mut s.durable, part, offset);
                        Err(self.io_err(IoOp::Write, offset, buf.len(), "injected torn write"))
                    }
                };
            }
        }
        write_into(&mut s.volatile, buf, offset);
        s.unsynced.push((offset, buf.to_vec()));
        Ok(())
    }

    fn sync(&self) -> Result<(), IoError> {
        let mut s = self.state.lock();
        let n = s.syncs;
        s.syncs += 1;
        if let Some((at, _)) = s.sync_fault {
            if at == n {
                s.sync_fault = None;
                return Err(self.io_err(IoOp::Sync, 0, 0, "injected sync error"));
            }
        }
        let pending = std::mem::take(&mut s.unsynced);
        for (off, data) in pending {
            write_into(&mut s.durable, &data, off);
        }
        let vlen = s.volatile.len();
        resize_zeroed(&mut s.durable, vlen);
        Ok(())
    }

    fn len(&self) -> Result<u64, IoError> {
        Ok(self.state.lock().volatile.len() as u64)
    }

    fn set_len(&self, len: u64) -> Result<(), IoError> {
        let mut s = self.state.lock();
        resize_zeroed(&mut s.volatile, len as usize);
        Ok(())
    }

    /// A hole reads as zeros at once and survives a crash only once synced, like a write of
    /// zeros (what a filesystem promises for its metadata after fdatasync is no more).
    fn punch_hole(&self, offset: u64, len: u64) -> Result<(), IoError> {
        let mut s = self.state.lock();
        if s.punch_fails {
            return Err(self.io_err(IoOp::Punch, offset, len as usize, "injected punch error"));
        }
        let end = (offset + len).min(s.volatile.len() as u64);
        if offset < end {
            let zeros = vec![0u8; (end - offset) as usize];
            write_into(&mut s.volatile, &zeros, offset);
            s.unsynced.push((offset, zeros));
        }
        s.punches += 1;
        s.punched_bytes += len;
        Ok(())
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A heap buffer aligned for O_DIRECT, allocated once and reused (no allocation on I/O paths).
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    align: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to 4096 (enough for any O_DIRECT device).
    pub fn new(len: usize) -> AlignedBuf {
        Self::with_align(len, 4096)
    }

    /// A zeroed buffer for a large arena: aligned to 2 MiB and offered to the kernel for
    /// transparent huge pages, so that a pool spread over many frames does not pay a TLB miss
    /// per 4 KiB touched. Where THP is off, this is an ordinary allocation.
    pub fn new_huge(len: usize) -> AlignedBuf {
        const HUGE: usize = 2 << 20;
        let b = Self::with_align(len.div_ceil(HUGE) * HUGE, HUGE);
        // Miri cannot run foreign calls, and paging advice means nothing to it.
        #[cfg(not(miri))]
        // SAFETY: the range is our own allocation. madvise only changes paging advice; a
        // failure (THP disabled, old kernel) leaves ordinary pages, which is fine.
        unsafe {
            libc::madvise(b.ptr.as_ptr().cast(), b.len, libc::MADV_HUGEPAGE);
        }
        b
    }

    /// The start of the allocation, with the allocation's own provenance: unlike a pointer
    /// taken from the `&[u8]` that `Deref` hands out, it may be written through, and using it
    /// retags nothing beyond the bytes actually accessed. `&mut self` because the owner alone
    /// may decide how the bytes are shared; the buffer pool's arena keeps the pointer and
    /// never derefs the buffer again.
    pub fn as_non_null(&mut self) -> std::ptr::NonNull<u8> {
        self.ptr
    }

    fn with_align(len: usize, align: usize) -> AlignedBuf {
        let len = len.max(1);
        let layout = std::alloc::Layout::from_size_align(len, align).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len, align }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for the lifetime of self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout =
            std::alloc::Layout::from_size_align(self.len, self.align).expect("valid layout");
        // SAFETY: allocated in `with_align` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_crash_drops_unsynced_writes() {
        let d = SimStorage::new("t");
        d.write_at(b"hello", 0).unwrap();
        d.sync().unwrap();
        d.write_at(b"world", 0).unwrap();
        let mut b = [0u8; 5];
        d.read_at(&mut b, 0).unwrap();
        assert_eq!(&b, b"world");
        let after = d.crash();
        after.read_at(&mut b, 0).unwrap();
        assert_eq!(&b, b"hello");
    }

    #[test]
    fn sim_torn_write_keeps_prefix_and_errors() {
        let d = SimStorage::new("t");
        d.write_at(&[1u8; 8], 0).unwrap();
        d.sync().unwrap();
        d.fault_write_after(0, Fault::Tear(3));
        assert!(d.write_at(&[2u8; 8], 0).is_err());
        let after = d.crash();
        let mut b = [0u8; 8];
        after.read_at(&mut b, 0).unwrap();
        assert_eq!(b, [2, 2, 2, 1, 1, 1, 1, 1]);
    }

    #[test]
    fn sim_injected_errors_fire_once() {
        let d = SimStorage::new("t");
        d.fail_sync_after(0);
        assert!(d.sync().is_err());
        assert!(d.sync().is_ok());
        d.write_at(&[0u8; 4], 0).unwrap();
        d.fail_read_after(1, Fault::Fail);
        let mut b = [0u8; 4];
        assert!(d.read_at(&mut b, 0).is_ok());
        assert!(d.read_at(&mut b, 0).is_err());
        assert!(d.read_at(&mut b, 0).is_ok());
    }

    #[test]
    fn file_direct_roundtrip() {
        let dir = std::env::temp_dir().join(format!("zipdb-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("direct.db");
        // Some filesystems (tmpfs on old kernels) refuse O_DIRECT; then there is nothing to test.
        let Ok(f) = FileStorage::open(&path, true) else {
            return;
        };
        let mut buf = AlignedBuf::new(4096);
        buf[..4].copy_from_slice(b"zipd");
        f.write_at(&buf, 4096).unwrap();
        f.sync().unwrap();
        let mut rd = AlignedBuf::new(4096);
        f.read_at(&mut rd, 4096).unwrap();
        assert_eq!(&rd[..4], b"zipd");
        let unaligned = [0u8; 100];
        assert!(f.write_at(&unaligned, 3).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
