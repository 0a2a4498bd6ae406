//! The warm-restart list: the ids of the pages resident in the buffer pool, hottest first,
//! saved at a clean shutdown and read back at the next start so that a background thread can
//! load those pages before the workload asks for them (a restarted server is otherwise slow
//! until its working set has been read back one miss at a time).
//!
//! The list is only a hint: a missing, stale or damaged list costs the warm-up, never data.
//! Byte layout (all integers little-endian; also in docs/FORMAT.md):
//!
//! | offset    | size | field                                                    |
//! |-----------|------|----------------------------------------------------------|
//! | 0         | 8    | magic `ZIPDBWRM`                                         |
//! | 8         | 4    | format version (1)                                       |
//! | 12        | 4    | page size of the data file the list was taken from       |
//! | 16        | 8    | entry count `n`                                          |
//! | 24        | 8·n  | page ids (u64), hottest first                            |
//! | 24 + 8·n  | 4    | CRC32C of bytes `0 .. 24 + 8·n`                          |
//!
//! On a real file system the list is written to a temporary file, synced, renamed over the
//! old one and the directory synced, so a crash leaves either the old or the new list. On a
//! bare [`Storage`] (the simulated disk of the tests) it is overwritten in place; a torn write
//! then fails the checksum and the list is ignored, which is all a hint needs.

use std::path::{Path, PathBuf};

use crate::io::{FileStorage, IoError, Storage};
use crate::page::{crc32c, PageId};

/// Name of the list inside the database directory.
pub const WARM_FILE: &str = "zipdb.warm";
const MAGIC: &[u8; 8] = b"ZIPDBWRM";
pub const WARM_VERSION: u32 = 1;
const HEADER_LEN: usize = 24;
const CRC_LEN: usize = 4;
/// Upper bound on entries accepted when decoding (2^30, the page map's capacity), so that a
/// damaged count cannot make the reader allocate without bound.
const ENTRIES_MAX: u64 = 1 << 30;

/// Why a warm-restart list could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("cannot replace {to} with {from}: {source}")]
    Rename {
        from: String,
        to: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot sync directory {dir}: {source}")]
    SyncDir {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a list this build can use.
    #[error("{file} is not a usable warm-restart list: {detail}")]
    Corrupt { file: String, detail: String },
}

/// Encodes a list of page ids for a data file of `page_size`.
pub fn encode(page_size: usize, ids: &[PageId]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 8 * ids.len() + CRC_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&WARM_VERSION.to_le_bytes());
    out.extend_from_slice(&(page_size as u32).to_le_bytes());
    out.extend_from_slice(&(ids.len() as u64).to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.0.to_le_bytes());
    }
    let crc = crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a list written by [`encode`]; `file` names it in errors. A list taken from a data
/// file of another page size is refused (its ids would belong to another database).
pub fn decode(file: &str, page_size: usize, b: &[u8]) -> Result<Vec<PageId>, WarmError> {
    let bad = |detail: String| WarmError::Corrupt {
        file: file.to_string(),
        detail,
    };
    if b.len() < HEADER_LEN + CRC_LEN {
        return Err(bad(format!("{} bytes, shorter than its header", b.len())));
    }
    if &b[0..8] != MAGIC {
        return Err(bad("bad magic".into()));
    }
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let u64_at = |o: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(a)
    };
    let version = u32_at(8);
    if version != WARM_VERSION {
        return Err(bad(format!(
            "format version {version}, this build reads {WARM_VERSION}"
        )));
    }
    let count = u64_at(16);
    if count > ENTRIES_MAX {
        return Err(bad(format!("entry count {count} is implausible")));
    }
    let want = HEADER_LEN + 8 * count as usize + CRC_LEN;
    if b.len() != want {
        return Err(bad(format!(
            "{} bytes, {count} entries need {want} (truncated or extended)",
            b.len()
        )));
    }
    let body = &b[..want - CRC_LEN];
    let (stored, computed) = (u32_at(want - CRC_LEN), crc32c(body));
    if stored != computed {
        return Err(bad(format!(
            "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
        )));
    }
    // Checked after the checksum, so that damage is reported as damage.
    let listed_page_size = u32_at(12) as usize;
    if listed_page_size != page_size {
        return Err(bad(format!(
            "taken from a data file of {listed_page_size}-byte pages, this one has {page_size}"
        )));
    }
    Ok((0..count as usize)
        .map(|i| PageId(u64_at(HEADER_LEN + 8 * i)))
        .collect())
}

/// Where a warm-restart list lives.
#[derive(Debug)]
pub enum WarmFile {
    /// A file on a real file system, replaced atomically (temporary file + rename).
    Path(PathBuf),
    /// A bare storage file (the simulated disk), overwritten in place.
    Storage(Box<dyn Storage>),
}

impl WarmFile {
    /// The list's file in database directory `dir`.
    pub fn in_dir(dir: &Path) -> WarmFile {
        WarmFile::Path(dir.join(WARM_FILE))
    }

    /// A name for messages.
    pub fn name(&self) -> String {
        match self {
            WarmFile::Path(p) => p.display().to_string(),
            WarmFile::Storage(s) => s.name().to_string(),
        }
    }

    /// Replaces the list with `bytes`, durably.
    pub fn save(&self, bytes: &[u8]) -> Result<(), WarmError> {
        match self {
            WarmFile::Storage(s) => write_all(&**s, bytes),
            WarmFile::Path(path) => {
                let mut tmp = path.as_os_str().to_owned();
                tmp.push(".tmp");
                let tmp = PathBuf::from(tmp);
                {
                    let f = FileStorage::open(&tmp, false)?;
                    write_all(&f, bytes)?;
                }
                std::fs::rename(&tmp, path).map_err(|source| WarmError::Rename {
                    from: tmp.display().to_string(),
                    to: path.display().to_string(),
                    source,
                })?;
                // The rename is durable only once the directory is.
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                std::fs::File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|source| WarmError::SyncDir {
                        dir: dir.display().to_string(),
                        source,
                    })
            }
        }
    }

    /// The list's bytes; `None` when there is none (no file, or an empty one).
    pub fn load(&self) -> Result<Option<Vec<u8>>, WarmError> {
        match self {
            WarmFile::Storage(s) => read_all(&**s),
            WarmFile::Path(path) => {
                if !path.exists() {
                    return Ok(None);
                }
                read_all(&FileStorage::open(path, false)?)
            }
        }
    }
}

fn write_all(s: &dyn Storage, bytes: &[u8]) -> Result<(), WarmError> {
    s.write_at(bytes, 0)?;
    s.set_len(bytes.len() as u64)?;
    s.sync()?;
    Ok(())
}

fn read_all(s: &dyn Storage) -> Result<Option<Vec<u8>>, WarmError> {
    let len = s.len()?;
    if len == 0 {
        return Ok(None);
    }
    // A list of more than the page map's capacity is damage, not something to allocate.
    if len > HEADER_LEN as u64 + 8 * ENTRIES_MAX + CRC_LEN as u64 {
        return Err(WarmError::Corrupt {
            file: s.name().to_string(),
            detail: format!("{len} bytes is implausibly long"),
        });
    }
    let mut buf = vec![0u8; len as usize];
    s.read_at(&mut buf, 0)?;
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SimStorage;

    fn ids(n: u64) -> Vec<PageId> {
        (0..n).map(|i| PageId(i * 7 + 1)).collect()
    }

    #[test]
    fn round_trip() {
        for n in [0, 1, 1000] {
            let b = encode(16384, &ids(n));
            assert_eq!(b.len(), 24 + 8 * n as usize + 4);
            assert_eq!(decode("w", 16384, &b).unwrap(), ids(n));
        }
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_detected() {
        let b = encode(4096, &ids(20));
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x40;
            assert!(decode("w", 4096, &c).is_err(), "flip at byte {i} accepted");
        }
        for len in 0..b.len() {
            assert!(decode("w", 4096, &b[..len]).is_err(), "truncation to {len}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(decode("w", 4096, &longer).is_err());
    }

    #[test]
    fn wrong_page_size_and_errors_name_the_file() {
        let b = encode(4096, &ids(3));
        let e = decode("dir/zipdb.warm", 16384, &b).unwrap_err().to_string();
        assert!(e.contains("dir/zipdb.warm") && e.contains("4096"), "{e}");
        let e = decode("dir/zipdb.warm", 4096, &b[..10])
            .unwrap_err()
            .to_string();
        assert!(e.contains("dir/zipdb.warm") && e.contains("header"), "{e}");
    }

    #[test]
    fn save_and_load_on_a_simulated_disk_and_on_a_file() {
        let sim = SimStorage::new("warm");
        let w = WarmFile::Storage(Box::new(sim.clone()));
        assert!(w.load().unwrap().is_none());
        w.save(&encode(4096, &ids(50))).unwrap();
        // A shorter list replaces a longer one entirely.
        w.save(&encode(4096, &ids(2))).unwrap();
        let got = WarmFile::Storage(Box::new(sim.crash()))
            .load()
            .unwrap()
            .unwrap();
        assert_eq!(decode("warm", 4096, &got).unwrap(), ids(2));

        let dir = std::env::temp_dir().join(format!("zipdb-warm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let w = WarmFile::in_dir(&dir);
        assert!(w.load().unwrap().is_none());
        w.save(&encode(4096, &ids(9))).unwrap();
        let got = w.load().unwrap().unwrap();
        assert_eq!(decode(&w.name(), 4096, &got).unwrap(), ids(9));
        assert!(!dir.join("zipdb.warm.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
