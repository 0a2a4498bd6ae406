//! The catalog: tree name → tree id, root page, codec. Saved in the page store's catalog blob
//! at every checkpoint.
//!
//! # Format, version 2 (all integers little-endian)
//!
//! ```text
//! offset size field
//! 0      4    magic "ZCAT"
//! 4      2    format version (2)
//! 6      2    reserved, 0
//! 8      4    next tree id to hand out
//! 12     4    number of entries n
//! 16     8    redo LSN: where recovery starts reading the WAL (0: no WAL yet)
//! 24     8    WAL id: the id in the header of this database's WAL file
//! 32     ..   n entries, in name order:
//!              0   4  tree id (u32)
//!              4   8  root page id (u64)
//!              12  1  codec id (0 none, 1 lz4, 2 zstd, 3 zlib)
//!              13  1  codec level byte (zstd level as i8, zlib level; 0 otherwise)
//!              14  2  name length L (1..=255)
//!              16  L  name, UTF-8
//! ```
//!
//! Version 1 (written before the WAL existed) is the same without bytes 16..32; it reads as
//! redo LSN 0. An empty blob (a store that was never checkpointed by the engine) is an empty
//! catalog.
//! Integrity is covered by the CRC32C of the store's checkpoint metadata.

use zipdb_storage::{Codec, PageId, TreeId};

use crate::error::{Error, Result};

pub const CATALOG_MAGIC: &[u8; 4] = b"ZCAT";
pub const CATALOG_VERSION: u16 = 2;
/// Tree ids start here; 0 is what the store reports for pages of no tree.
pub const FIRST_TREE_ID: u32 = 1;
/// Longest tree name, in bytes.
pub const NAME_LEN_MAX: usize = 255;

/// One tree in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub name: String,
    pub id: TreeId,
    pub root: PageId,
    pub codec: Codec,
}

/// The decoded catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    pub next_tree_id: u32,
    /// Where recovery starts replaying the WAL; 0 when the database has no WAL yet.
    pub redo_lsn: u64,
    /// Id of the WAL file that belongs to this data file.
    pub wal_id: u64,
    pub entries: Vec<CatalogEntry>,
}

impl Catalog {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.entries.len() * 32);
        out.extend_from_slice(CATALOG_MAGIC);
        out.extend_from_slice(&CATALOG_VERSION.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&self.next_tree_id.to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.redo_lsn.to_le_bytes());
        out.extend_from_slice(&self.wal_id.to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&e.id.0.to_le_bytes());
            out.extend_from_slice(&e.root.0.to_le_bytes());
            out.push(e.codec.id());
            out.push(e.codec.level_byte());
            out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
            out.extend_from_slice(e.name.as_bytes());
        }
        out
    }

    pub fn decode(b: &[u8]) -> Result<Catalog> {
        if b.is_empty() {
            return Ok(Catalog {
                next_tree_id: FIRST_TREE_ID,
                redo_lsn: 0,
                wal_id: 0,
                entries: Vec::new(),
            });
        }
        let bad = |what: &str| Error::CorruptCatalog(what.to_string());
        if b.len() < 16 || &b[0..4] != CATALOG_MAGIC {
            return Err(bad("bad magic"));
        }
        let version = u16::from_le_bytes([b[4], b[5]]);
        if version != CATALOG_VERSION && version != 1 {
            return Err(Error::CorruptCatalog(format!(
                "catalog version {version}, this build reads {CATALOG_VERSION}"
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        if b[6] != 0 || b[7] != 0 {
            return Err(bad("reserved bytes 6..8 are not zero"));
        }
        let next_tree_id = u32_at(8);
        if next_tree_id < FIRST_TREE_ID {
            return Err(Error::CorruptCatalog(format!(
                "next tree id {next_tree_id} is below the first valid id {FIRST_TREE_ID}"
            )));
        }
        let n = u32_at(12) as usize;
        let mut entries = Vec::with_capacity(n.min(4096));
        let u64_at = |o: usize| {
            let mut r = [0u8; 8];
            r.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(r)
        };
        let (redo_lsn, wal_id, mut o) = if version == 1 {
            (0, 0, 16)
        } else if b.len() < 32 {
            return Err(bad("header truncated"));
        } else {
            (u64_at(16), u64_at(24), 32)
        };
        for i in 0..n {
            if o + 16 > b.len() {
                return Err(Error::CorruptCatalog(format!("entry {i} truncated")));
            }
            let id = TreeId(u32_at(o));
            let mut r = [0u8; 8];
            r.copy_from_slice(&b[o + 4..o + 12]);
            let root = PageId(u64::from_le_bytes(r));
            let codec = Codec::from_parts(b[o + 12], b[o + 13]).ok_or_else(|| {
                Error::CorruptCatalog(format!("entry {i}: unknown codec id {}", b[o + 12]))
            })?;
            let len = u16::from_le_bytes([b[o + 14], b[o + 15]]) as usize;
            if len > NAME_LEN_MAX {
                return Err(Error::CorruptCatalog(format!(
                    "entry {i}: name of {len} bytes (at most {NAME_LEN_MAX})"
                )));
            }
            o += 16;
            let name = b
                .get(o..o + len)
                .ok_or_else(|| Error::CorruptCatalog(format!("entry {i}: name truncated")))?;
            let name = std::str::from_utf8(name)
                .map_err(|_| Error::CorruptCatalog(format!("entry {i}: name is not UTF-8")))?
                .to_string();
            o += len;
            if id.0 < FIRST_TREE_ID || id.0 >= next_tree_id || root.is_none() || name.is_empty() {
                return Err(Error::CorruptCatalog(format!(
                    "entry {i} ({name:?}) is inconsistent"
                )));
            }
            if let Some(prev) = entries.last() {
                let prev: &CatalogEntry = prev;
                if prev.name >= name {
                    return Err(Error::CorruptCatalog(format!(
                        "entry {i} ({name:?}) is not after {:?}: names must be unique and sorted",
                        prev.name
                    )));
                }
            }
            if entries.iter().any(|e: &CatalogEntry| e.id == id) {
                return Err(Error::CorruptCatalog(format!(
                    "entry {i} ({name:?}) reuses tree id {}",
                    id.0
                )));
            }
            entries.push(CatalogEntry {
                name,
                id,
                root,
                codec,
            });
        }
        if o != b.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(Catalog {
            next_tree_id,
            redo_lsn,
            wal_id,
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_rejects_garbage() {
        let c = Catalog {
            next_tree_id: 5,
            redo_lsn: 77,
            wal_id: 99,
            entries: vec![
                CatalogEntry {
                    name: "a".into(),
                    id: TreeId(1),
                    root: PageId(3),
                    codec: Codec::Zstd(-2),
                },
                CatalogEntry {
                    name: "ß-tree".into(),
                    id: TreeId(4),
                    root: PageId(77),
                    codec: Codec::None,
                },
            ],
        };
        let b = c.encode();
        assert_eq!(Catalog::decode(&b).unwrap(), c);
        assert_eq!(Catalog::decode(&[]).unwrap().entries.len(), 0);
        for cut in 0..b.len() {
            let _ = Catalog::decode(&b[..cut]); // never panics
        }
        assert!(Catalog::decode(&b[..b.len() - 1]).is_err());
        let mut bad = b.clone();
        bad[0] = b'X';
        assert!(Catalog::decode(&bad).is_err());
    }

    fn entry(name: &str, id: u32) -> CatalogEntry {
        CatalogEntry {
            name: name.into(),
            id: TreeId(id),
            root: PageId(10 + id as u64),
            codec: Codec::None,
        }
    }

    #[test]
    fn rejects_inconsistent_catalogs() {
        let ok = Catalog {
            next_tree_id: 3,
            redo_lsn: 0,
            wal_id: 0,
            entries: vec![entry("a", 1), entry("b", 2)],
        };
        assert!(Catalog::decode(&ok.encode()).is_ok());
        let cases = [
            ("duplicate name", vec![entry("a", 1), entry("a", 2)], 3),
            ("unsorted names", vec![entry("b", 1), entry("a", 2)], 3),
            ("duplicate id", vec![entry("a", 1), entry("b", 1)], 3),
            ("id not below next", vec![entry("a", 3)], 3),
            ("next id zero", vec![], 0),
        ];
        for (what, entries, next_tree_id) in cases {
            let c = Catalog {
                next_tree_id,
                redo_lsn: 0,
                wal_id: 0,
                entries,
            };
            let e = Catalog::decode(&c.encode());
            assert!(matches!(e, Err(Error::CorruptCatalog(_))), "{what}: {e:?}");
        }
        let mut b = ok.encode();
        b[6] = 1;
        assert!(Catalog::decode(&b).is_err(), "reserved bytes");
    }
}
