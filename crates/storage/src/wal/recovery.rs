//! Replay: the sequential scan of [`super::Wal::open`] and the classification of where it stops
//! (torn tail or corruption; the rules are in the parent module docs).

use std::time::Instant;

use super::format::{self, record_size, HEADER_SIZE, RECORD_ALIGN, RECORD_HEADER_SIZE};
use super::{OnRecord, RecoveryOptions, Salvaged, WalError};
use crate::io::{IoError, Storage};
use crate::page::Lsn;

/// Bytes per read. Large enough that syscalls cost nothing next to the checksums.
const READ_CHUNK: u64 = 4 << 20;
/// How far past the unsynced window the search for intact records after a stop looks (module
/// docs: it bridges a damaged region up to this long).
const SEARCH_BEYOND_WINDOW: u64 = 8 << 20;

/// Result of the scan.
pub(super) struct Scan {
    /// End of the last valid record.
    pub end: u64,
    pub records: u64,
    pub payload_bytes: u64,
    pub torn_tail: bool,
    pub discarded_after_tail: u64,
    pub salvaged: Option<Salvaged>,
    /// `open` must zero `end .. zero_to` before appending: the remains after the cut that could
    /// otherwise pass for records later.
    pub zero_to: u64,
}

/// A window of the log stream in memory, read ahead in large chunks. Moves forward only.
struct Reader<'a> {
    storage: &'a dyn Storage,
    capacity: u64,
    /// Never read at or beyond this LSN (the end of the lap).
    limit: u64,
    buf: Vec<u8>,
    /// LSN of `buf[0]`.
    base: u64,
    /// Valid bytes in `buf`.
    len: usize,
}

impl<'a> Reader<'a> {
    fn new(storage: &'a dyn Storage, capacity: u64, from: u64, limit: u64) -> Reader<'a> {
        Reader {
            storage,
            capacity,
            limit,
            buf: Vec::new(),
            base: from,
            len: 0,
        }
    }

    /// Makes LSNs `lsn .. lsn + n` available to [`Reader::bytes`].
    fn fill(&mut self, lsn: u64, n: u64) -> Result<(), IoError> {
        assert!(lsn >= self.base, "the scan only moves forward");
        assert!(lsn + n <= self.limit, "the scan stays within the lap");
        if lsn + n <= self.base + self.len as u64 {
            return Ok(());
        }
        // Keep the bytes from `lsn` on, then read a chunk after them.
        let skip = lsn - self.base;
        if skip < self.len as u64 {
            self.buf.copy_within(skip as usize..self.len, 0);
            self.len -= skip as usize;
        } else {
            self.len = 0;
        }
        self.base = lsn;
        let want = n.max(READ_CHUNK).min(self.limit - lsn) as usize;
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let at = self.base + self.len as u64;
        read_wrapped(
            self.storage,
            self.capacity,
            &mut self.buf[self.len..want],
            at,
        )?;
        self.len = want;
        Ok(())
    }

    fn bytes(&self, lsn: u64, n: u64) -> &[u8] {
        let s = (lsn - self.base) as usize;
        &self.buf[s..s + n as usize]
    }
}

/// Reads the log bytes of LSNs `lsn .. lsn + buf.len()`, in two reads where they wrap.
fn read_wrapped(
    storage: &dyn Storage,
    capacity: u64,
    buf: &mut [u8],
    lsn: u64,
) -> Result<(), IoError> {
    assert!(buf.len() as u64 <= capacity);
    let off = lsn % capacity;
    let first = (buf.len() as u64).min(capacity - off) as usize;
    storage.read_at(&mut buf[..first], HEADER_SIZE + off)?;
    if first < buf.len() {
        storage.read_at(&mut buf[first..], HEADER_SIZE)?;
    }
    Ok(())
}

/// What is at a position of the log.
#[derive(Debug, Clone, Copy)]
enum Check {
    Valid {
        size: u64,
        len: u64,
    },
    /// Fewer than 16 bytes are left in the lap.
    NoRoom,
    /// The header holds another LSN: zeros, an earlier lap, or never written.
    Stale {
        found: u64,
    },
    BadLength {
        len: u64,
    },
    /// `size`: what the (intact-looking) header claims the record occupies.
    BadCrc {
        stored: u32,
        computed: u32,
        size: u64,
    },
}

impl Check {
    /// The stop looks like the end of what was written (as opposed to a record cut short).
    fn is_clean_end(self) -> bool {
        matches!(self, Check::NoRoom | Check::Stale { .. })
    }

    fn describe(self) -> String {
        match self {
            Check::Valid { .. } => "valid record".to_string(),
            Check::NoRoom => "end of the lap".to_string(),
            Check::Stale { found } => {
                format!("record header holds LSN {found} (stale or never written)")
            }
            Check::BadLength { len } => {
                format!("record length {len} does not fit in the log")
            }
            Check::BadCrc {
                stored, computed, ..
            } => format!(
                "record checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
        }
    }
}

fn check(rd: &mut Reader<'_>, pos: u64) -> Result<Check, IoError> {
    let lap_end = rd.limit;
    if pos + RECORD_HEADER_SIZE > lap_end {
        return Ok(Check::NoRoom);
    }
    rd.fill(pos, RECORD_HEADER_SIZE)?;
    let (stored, len, lsn) = format::parse_record_header(rd.bytes(pos, RECORD_HEADER_SIZE));
    if lsn != pos {
        return Ok(Check::Stale { found: lsn });
    }
    let len = u64::from(len);
    let size = record_size(len);
    if size > lap_end - pos {
        return Ok(Check::BadLength { len });
    }
    rd.fill(pos, RECORD_HEADER_SIZE + len)?;
    let computed = format::record_crc(rd.bytes(pos, RECORD_HEADER_SIZE + len), len as u32);
    if computed != stored {
        return Ok(Check::BadCrc {
            stored,
            computed,
            size,
        });
    }
    Ok(Check::Valid { size, len })
}

/// Replays the log from `from` and decides where it ends. `max_unsynced` is the window `W`.
pub(super) fn scan(
    storage: &dyn Storage,
    capacity: u64,
    max_unsynced: u64,
    from: u64,
    options: &RecoveryOptions,
    on_record: &mut OnRecord<'_>,
) -> Result<Scan, WalError> {
    assert!(from.is_multiple_of(RECORD_ALIGN));
    let started = Instant::now();
    let lap_end = from + capacity;
    let mut rd = Reader::new(storage, capacity, from, lap_end);
    let mut pos = from;
    let mut records = 0u64;
    let mut payload_bytes = 0u64;
    let mut last_progress = started;
    let stop = loop {
        match check(&mut rd, pos)? {
            Check::Valid { size, len } => {
                let payload =
                    &rd.bytes(pos, RECORD_HEADER_SIZE + len)[RECORD_HEADER_SIZE as usize..];
                on_record(Lsn(pos), Lsn(pos + size), payload).map_err(|source| {
                    WalError::Replay {
                        lsn: Lsn(pos),
                        source,
                    }
                })?;
                pos += size;
                records += 1;
                payload_bytes += len;
                if let Some(every) = options.progress_interval {
                    // Reading the clock per record would cost more than small records do.
                    if records.is_multiple_of(256) && last_progress.elapsed() >= every {
                        last_progress = Instant::now();
                        let secs = started.elapsed().as_secs_f64().max(1e-9);
                        let done = pos - from;
                        eprintln!(
                            "zipdb wal recovery {}: replayed {:.1} MiB ({:.0} MB/s), at LSN {pos}",
                            storage.name(),
                            done as f64 / (1 << 20) as f64,
                            done as f64 / 1e6 / secs,
                        );
                    }
                }
            }
            other => break other,
        }
    };

    // Search for intact records after the stop: evidence of corruption beyond the window, or
    // records that must be erased before appends resume.
    let f = pos;
    // A crash can abandon records up to `W` past the durable point, which lies at most at the end
    // of the cut-short record at `f`: where its header says it ends when the checksum alone
    // failed, else within its header (whose sector did not reach the disk whole).
    let stopped_record_end = match stop {
        Check::BadCrc { size, .. } => f + size,
        _ => f + RECORD_HEADER_SIZE,
    };
    let search_end = if options.salvage {
        lap_end
    } else {
        lap_end.min(stopped_record_end + max_unsynced + SEARCH_BEYOND_WINDOW)
    };
    let mut found = 0u64;
    let mut furthest = f;
    // The first valid record after `f`. `f` is a record boundary of the timeline that wrote the
    // valid records found here (records of older timelines were erased by earlier opens), so the
    // damaged record(s) lie within `f .. first`.
    let mut first: Option<u64> = None;
    let mut evidence: Option<u64> = None;
    let mut q = f + RECORD_ALIGN;
    while q + RECORD_HEADER_SIZE <= search_end {
        match check(&mut rd, q)? {
            Check::Valid { size, .. } => {
                found += 1;
                furthest = q + size;
                let q1 = *first.get_or_insert(q);
                // Everything before `q + size - W` was synced when this record was written: if
                // that covers all of `f .. q1`, the damage is in synced data.
                if evidence.is_none() && q + size >= q1 + max_unsynced {
                    evidence = Some(q);
                    if !options.salvage {
                        break;
                    }
                }
                q += size;
            }
            _ => q += RECORD_ALIGN,
        }
    }

    let offset = HEADER_SIZE + f % capacity;
    let reason = stop.describe();
    let mut salvaged = None;
    if let Some(q) = evidence {
        if !options.salvage {
            return Err(WalError::Corrupt {
                file: storage.name().to_string(),
                lsn: Lsn(f),
                offset,
                detail: format!(
                    "{reason}; valid records follow (from LSN {}, file offset {}) and reach \
                     beyond the {max_unsynced}-byte unsynced window, so the damaged record had \
                     been synced and this is not a torn tail (open with salvage to keep the \
                     records before it and drop the rest)",
                    first.unwrap_or(q),
                    HEADER_SIZE + first.unwrap_or(q) % capacity
                ),
            });
        }
        salvaged = Some(Salvaged {
            lsn: Lsn(f),
            offset,
            detail: reason,
            records_lost: found,
            bytes_lost: furthest - f,
        });
    }
    let torn_tail = salvaged.is_none() && (!stop.is_clean_end() || found > 0);
    // A cut-short record's header is erased too, so that the next open does not report the same
    // torn tail again if nothing was appended over it.
    let mut zero_to = furthest;
    if !stop.is_clean_end() {
        zero_to = zero_to.max(f + RECORD_HEADER_SIZE);
    }
    Ok(Scan {
        end: f,
        records,
        payload_bytes,
        torn_tail,
        discarded_after_tail: if salvaged.is_none() { found } else { 0 },
        salvaged,
        zero_to,
    })
}
