//! Temporary space for blocking operators that outgrow the statement's memory budget
//! (docs/design/issue20-sql-engine.md §4.4; issue 20 E6).
//!
//! An instance has one [`TempSpace`]: a directory (MariaDB's `tmpdir`) and a cap on the bytes
//! all sessions may keep there (`max_tmp_total_space_usage`). A session charges its files to a
//! [`SessionTemp`] with its own cap (`max_tmp_session_space_usage`). A [`TempFile`] has a unique
//! name, is written and read only through `dyn Storage` (so tests run it on `SimStorage` with
//! faults), and is deleted and uncharged when dropped. A crash leaves files behind, so opening a
//! `TempSpace` deletes what an earlier process left in its directory.
//!
//! A file holds runs: sequences of checksummed blocks of length-prefixed records (the format is
//! in docs/FORMAT.md, "Spill runs"). A block that fails its checksum is an error naming the file
//! and offset; nothing read back from disk is trusted to size an allocation without a bound.
//!
//! The instance owns one (`<datadir>/tmp/`, or a private folder under the system's temporary
//! one for an instance given no folder); each session a [`SessionTemp`] reached through its
//! `Interrupt`; the external merge sort (`exec::op::sort_spill`) is its user.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use zipdb_engine::storage::io::{FileStorage, IoError, Storage};

use crate::error::{ErrorKind, SqlError};

/// Default for `max_tmp_session_space_usage` (MariaDB 11.5's default is 1 TiB; zipdb is
/// stricter so that one query cannot fill a small disk).
pub(crate) const SESSION_MAX_DEFAULT: u64 = 1 << 30;
/// Default for `max_tmp_total_space_usage`.
pub(crate) const TOTAL_MAX_DEFAULT: u64 = 16 << 30;
/// Default for `sort_buffer_size`: MariaDB's (see `exec::op::sort_spill` for the measurement).
pub(crate) const SORT_BUFFER_DEFAULT: u64 = 2 << 20;
/// Default for `tmp_memory_table_size` (alias `tmp_table_size`): MariaDB's.
pub(crate) const TMP_TABLE_DEFAULT: u64 = 16 << 20;

/// Records are gathered until a block holds at least this many bytes.
const BLOCK_TARGET: usize = 64 << 10;
/// Bytes before a block's payload: payload length (u32) and CRC32C of the payload (u32).
const BLOCK_HEADER: usize = 8;
/// No block is longer than this; a header saying more is corruption, not an allocation.
const BLOCK_MAX: usize = 64 << 20;
/// Names of temp files start with this, so that cleanup at open deletes only zipdb's files.
const PREFIX: &str = "zipdb-spill-";

type Opener = dyn Fn(&Path) -> Result<Arc<dyn Storage>, IoError> + Send + Sync;

/// The instance's temporary directory and its total cap.
pub(crate) struct TempSpace {
    dir: PathBuf,
    open: Box<Opener>,
    /// Whether files are real (and so must be removed from the directory when dropped).
    on_disk: bool,
    /// A folder of this instance's own, created at the first file and removed with the space.
    private: bool,
    next: AtomicU64,
    used: AtomicU64,
    max: AtomicU64,
}

impl std::fmt::Debug for TempSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TempSpace")
            .field("dir", &self.dir)
            .field("used", &self.used.load(Ordering::Relaxed))
            .finish()
    }
}

impl TempSpace {
    /// Temp space in `dir` (created if missing); files an earlier process left there are
    /// deleted, since only a crash leaves them.
    pub(crate) fn open_dir(dir: &Path) -> std::io::Result<TempSpace> {
        std::fs::create_dir_all(dir)?;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(PREFIX) {
                // A file that cannot be removed is left; it is only disk space.
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(TempSpace::with_opener(
            dir.to_path_buf(),
            true,
            Box::new(open_file),
        ))
    }

    /// Temp space for an instance given no folder (embedded use, tests): a folder of its own
    /// under the system's temporary one, named after the process and a counter, created only
    /// when a statement first spills and removed when the space is dropped. Being private,
    /// it needs no cleanup at open (a shared folder's cleanup would delete another process's
    /// files); a crashed process leaves it behind, as it leaves any temporary file.
    pub(crate) fn private() -> TempSpace {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "zipdb-tmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let mut space = TempSpace::with_opener(dir, true, Box::new(open_file));
        space.private = true;
        space
    }

    /// Temp space whose files come from `open` (tests: `SimStorage`s they keep to inject
    /// faults into). Nothing is removed from any directory.
    pub(crate) fn with_opener(dir: PathBuf, on_disk: bool, open: Box<Opener>) -> TempSpace {
        TempSpace {
            dir,
            open,
            on_disk,
            private: false,
            next: AtomicU64::new(0),
            used: AtomicU64::new(0),
            max: AtomicU64::new(TOTAL_MAX_DEFAULT),
        }
    }

    /// Sets `max_tmp_total_space_usage`.
    pub(crate) fn set_max(&self, bytes: u64) {
        self.max.store(bytes, Ordering::Relaxed);
    }

    /// `max_tmp_total_space_usage` now.
    pub(crate) fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// Bytes all sessions keep now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The folder files are created in.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn try_charge(&self, bytes: u64) -> bool {
        let max = cap(self.max.load(Ordering::Relaxed));
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(bytes).filter(|&n| n <= max)
            })
            .is_ok()
    }

    fn release(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

impl Drop for TempSpace {
    fn drop(&mut self) {
        if self.private {
            // Every file is gone by now (each holds its session's space); a folder that
            // cannot be removed is only an empty folder.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// A cap as MariaDB reads it: 0 is no cap.
fn cap(max: u64) -> u64 {
    if max == 0 {
        u64::MAX
    } else {
        max
    }
}

fn open_file(p: &Path) -> Result<Arc<dyn Storage>, IoError> {
    Ok(Arc::new(FileStorage::open(p, false)?) as Arc<dyn Storage>)
}

/// One session's share of the temp space, with its own cap.
#[derive(Debug)]
pub(crate) struct SessionTemp {
    space: Arc<TempSpace>,
    used: AtomicU64,
    max: AtomicU64,
    /// The session's `sort_buffer_size`: kept here, beside the space a sort spills to, so that
    /// an operator finds both through its statement's `Interrupt`.
    sort_buffer: AtomicU64,
    /// The session's `tmp_memory_table_size`: bytes of groups (GROUP BY) or keys (DISTINCT)
    /// held in memory before new ones go to temporary files.
    tmp_table: AtomicU64,
}

impl SessionTemp {
    pub(crate) fn new(space: Arc<TempSpace>) -> SessionTemp {
        SessionTemp {
            space,
            used: AtomicU64::new(0),
            max: AtomicU64::new(SESSION_MAX_DEFAULT),
            sort_buffer: AtomicU64::new(SORT_BUFFER_DEFAULT),
            tmp_table: AtomicU64::new(TMP_TABLE_DEFAULT),
        }
    }

    /// Sets `max_tmp_session_space_usage`.
    pub(crate) fn set_max(&self, bytes: u64) {
        self.max.store(bytes, Ordering::Relaxed);
    }

    /// `max_tmp_session_space_usage` now.
    pub(crate) fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// Bytes this session keeps now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Bytes one sort may hold in memory before it writes a run (`sort_buffer_size`).
    pub(crate) fn sort_buffer(&self) -> u64 {
        self.sort_buffer.load(Ordering::Relaxed)
    }

    /// Sets `sort_buffer_size`.
    pub(crate) fn set_sort_buffer(&self, bytes: u64) {
        self.sort_buffer.store(bytes, Ordering::Relaxed);
    }

    /// Bytes of groups or distinct keys held in memory (`tmp_memory_table_size`).
    pub(crate) fn tmp_table(&self) -> u64 {
        self.tmp_table.load(Ordering::Relaxed)
    }

    /// Sets `tmp_memory_table_size`.
    pub(crate) fn set_tmp_table(&self, bytes: u64) {
        self.tmp_table.store(bytes, Ordering::Relaxed);
    }

    /// A new empty file with a unique name.
    pub(crate) fn create(&self) -> Result<TempFile<'_>, SqlError> {
        let n = self.space.next.fetch_add(1, Ordering::Relaxed);
        let path = self
            .space
            .dir
            .join(format!("{PREFIX}{}-{n}", std::process::id()));
        if self.space.private {
            std::fs::create_dir_all(&self.space.dir).map_err(|e| {
                SqlError::of(
                    ErrorKind::ErrorOnWrite,
                    format!(
                        "Error writing file '{}' (cannot create the folder: {e})",
                        path.display()
                    ),
                )
            })?;
        }
        let storage = (self.space.open)(&path).map_err(|e| write_error(&path, e))?;
        Ok(TempFile {
            owner: self,
            storage,
            path,
            len: 0,
        })
    }

    /// Charges `bytes` to the session, then to the instance; on failure nothing is charged.
    fn charge(&self, bytes: u64) -> Result<(), SqlError> {
        let max = self.max.load(Ordering::Relaxed);
        if self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(bytes).filter(|&n| n <= cap(max))
            })
            .is_err()
        {
            return Err(SqlError::of(
                ErrorKind::LocalTmpSpaceFull,
                format!(
                    "Local temporary space limit reached: the statement would keep more than \
                     max_tmp_session_space_usage={max} bytes in temporary files"
                ),
            ));
        }
        if !self.space.try_charge(bytes) {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            let max = self.space.max.load(Ordering::Relaxed);
            return Err(SqlError::of(
                ErrorKind::GlobalTmpSpaceFull,
                format!(
                    "Global temporary space limit reached: all sessions would keep more than \
                     max_tmp_total_space_usage={max} bytes in temporary files"
                ),
            ));
        }
        Ok(())
    }

    fn release(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
        self.space.release(bytes);
    }
}

fn write_error(path: &Path, e: IoError) -> SqlError {
    SqlError::of(
        ErrorKind::ErrorOnWrite,
        format!("Error writing file '{}' ({e})", path.display()),
    )
}

fn read_error(path: &Path, detail: String) -> SqlError {
    SqlError::of(
        ErrorKind::ErrorOnRead,
        format!("Error reading file '{}' ({detail})", path.display()),
    )
}

/// A temporary file, written append-only; deleted and uncharged when dropped.
#[derive(Debug)]
pub(crate) struct TempFile<'s> {
    owner: &'s SessionTemp,
    storage: Arc<dyn Storage>,
    path: PathBuf,
    /// Bytes written (and charged).
    len: u64,
}

/// Where one run lies in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    start: u64,
    end: u64,
}

impl<'s> TempFile<'s> {
    /// Starts a run at the end of the file.
    pub(crate) fn run_writer(&mut self) -> RunWriter<'_, 's> {
        let start = self.len;
        RunWriter {
            file: self,
            start,
            block: Vec::new(),
        }
    }

    /// Reads `run` back, record by record.
    #[cfg(test)]
    pub(crate) fn run_reader(&self, run: Run) -> RunReader<'_, 's> {
        RunReader {
            file: self,
            cursor: RunCursor::new(run),
        }
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), SqlError> {
        self.owner.charge(bytes.len() as u64)?;
        if let Err(e) = self.storage.write_at(bytes, self.len) {
            self.owner.release(bytes.len() as u64);
            return Err(write_error(&self.path, e));
        }
        self.len += bytes.len() as u64;
        Ok(())
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        self.owner.release(self.len);
        if self.owner.space.on_disk {
            // The storage still has the file open; unlinking it now frees the space once the
            // last handle goes. A failure leaves a file that the next open deletes.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Appends records to one run of a [`TempFile`].
pub(crate) struct RunWriter<'f, 's> {
    file: &'f mut TempFile<'s>,
    start: u64,
    /// The block being gathered: header placeholder, then records.
    block: Vec<u8>,
}

impl RunWriter<'_, '_> {
    /// Appends one record (at most `BLOCK_MAX - 4` bytes).
    pub(crate) fn push(&mut self, record: &[u8]) -> Result<(), SqlError> {
        if record.len() + 4 > BLOCK_MAX - BLOCK_HEADER {
            return Err(SqlError::of(
                ErrorKind::ErrorOnWrite,
                format!(
                    "Error writing file '{}' (a record of {} bytes is longer than a block)",
                    self.file.path.display(),
                    record.len()
                ),
            ));
        }
        if !self.block.is_empty() && self.block.len() + 4 + record.len() > BLOCK_MAX {
            self.flush()?;
        }
        if self.block.is_empty() {
            self.block.extend_from_slice(&[0; BLOCK_HEADER]);
        }
        self.block
            .extend_from_slice(&(record.len() as u32).to_le_bytes());
        self.block.extend_from_slice(record);
        if self.block.len() >= BLOCK_TARGET {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SqlError> {
        if self.block.is_empty() {
            return Ok(());
        }
        let payload_len = (self.block.len() - BLOCK_HEADER) as u32;
        let crc = crc32c::crc32c(&self.block[BLOCK_HEADER..]);
        self.block[0..4].copy_from_slice(&payload_len.to_le_bytes());
        self.block[4..8].copy_from_slice(&crc.to_le_bytes());
        let block = std::mem::take(&mut self.block);
        let r = self.file.append(&block);
        self.block = block;
        self.block.clear();
        r
    }

    /// Writes what is gathered and says where the run lies.
    pub(crate) fn finish(mut self) -> Result<Run, SqlError> {
        self.flush()?;
        Ok(Run {
            start: self.start,
            end: self.file.len,
        })
    }
}

/// Reads one run back, block by block, checking each block's checksum.
#[cfg(test)]
pub(crate) struct RunReader<'f, 's> {
    file: &'f TempFile<'s>,
    cursor: RunCursor,
}

#[cfg(test)]
impl RunReader<'_, '_> {
    /// The next record, or `None` at the end of the run.
    pub(crate) fn next_record(&mut self) -> Result<Option<&[u8]>, SqlError> {
        self.cursor.next_record(self.file)
    }
}

/// A read position in one run that does not borrow its file (an operator keeps cursors and
/// their file side by side, and hands the file in at each read).
#[derive(Debug)]
pub(crate) struct RunCursor {
    /// Offset of the next block.
    next: u64,
    end: u64,
    /// The current block's payload and the read position in it.
    block: Vec<u8>,
    pos: usize,
}

impl RunCursor {
    pub(crate) fn new(run: Run) -> RunCursor {
        RunCursor {
            next: run.start,
            end: run.end,
            block: Vec::new(),
            pos: 0,
        }
    }

    /// The next record of the run in `file` (the file the run was written to), or `None` at
    /// the end of the run.
    pub(crate) fn next_record<'c>(
        &'c mut self,
        file: &TempFile<'_>,
    ) -> Result<Option<&'c [u8]>, SqlError> {
        if self.pos >= self.block.len() {
            if self.next >= self.end {
                return Ok(None);
            }
            self.load_block(file)?;
        }
        let at = self.next_offset_of_pos();
        let Some(len) = self.block.get(self.pos..self.pos + 4) else {
            return Err(corrupt(file, at, "a record's length is cut off"));
        };
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        let start = self.pos + 4;
        if len > self.block.len() - start {
            return Err(corrupt(file, at, "a record runs past its block"));
        }
        self.pos = start + len;
        Ok(Some(&self.block[start..start + len]))
    }

    /// For messages only: the file offset of the block being read.
    fn next_offset_of_pos(&self) -> u64 {
        self.next - (self.block.len() + BLOCK_HEADER) as u64
    }

    fn load_block(&mut self, file: &TempFile<'_>) -> Result<(), SqlError> {
        let at = self.next;
        let io = |e: IoError| read_error(&file.path, e.to_string());
        let mut header = [0u8; BLOCK_HEADER];
        if self.end - at < BLOCK_HEADER as u64 {
            return Err(corrupt(file, at, "the run ends inside a block header"));
        }
        file.storage.read_at(&mut header, at).map_err(io)?;
        let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
        if len > BLOCK_MAX || len as u64 > self.end - at - BLOCK_HEADER as u64 {
            return Err(corrupt(file, at, "a block's length runs past its run"));
        }
        self.block.resize(len, 0);
        file.storage
            .read_at(&mut self.block, at + BLOCK_HEADER as u64)
            .map_err(io)?;
        if crc32c::crc32c(&self.block) != crc {
            self.block.clear();
            return Err(corrupt(file, at, "checksum mismatch"));
        }
        self.pos = 0;
        self.next = at + (BLOCK_HEADER + len) as u64;
        Ok(())
    }
}

fn corrupt(file: &TempFile<'_>, offset: u64, what: &str) -> SqlError {
    read_error(
        &file.path,
        format!("corrupt temporary block at offset {offset}: {what}"),
    )
}

/// A corrupt record inside a block that passed its checksum (what a reader of records, such
/// as the sort's row decoder, reports): error 1024 naming the file.
pub(crate) fn corrupt_record(file: &TempFile<'_>, what: &str) -> SqlError {
    read_error(&file.path, format!("corrupt temporary record: {what}"))
}

/// Temp space on simulated disks for tests; the returned list holds every file it created, in
/// order. With `write_fault`, each file fails its write of that number (from 0).
#[cfg(test)]
pub(crate) fn sim_space_with(
    write_fault: Option<u64>,
) -> (
    Arc<TempSpace>,
    Arc<parking_lot::Mutex<Vec<zipdb_engine::storage::io::SimStorage>>>,
) {
    use zipdb_engine::storage::io::{Fault, SimStorage};
    let files: Arc<parking_lot::Mutex<Vec<SimStorage>>> = Arc::default();
    let keep = files.clone();
    let space = TempSpace::with_opener(
        PathBuf::from("/sim/tmp"),
        false,
        Box::new(move |p: &Path| {
            let s = SimStorage::new(&p.display().to_string());
            if let Some(n) = write_fault {
                s.fault_write_after(n, Fault::Fail);
            }
            keep.lock().push(s.clone());
            Ok(Arc::new(s) as Arc<dyn Storage>)
        }),
    );
    (Arc::new(space), files)
}

#[cfg(test)]
#[path = "spill_tests.rs"]
mod tests;
