//! The catalog: tree name → tree id, root page, tree format, FSST symbol tables and
//! cold-layer dictionaries. Saved in the page store's catalog blob at every checkpoint.
//!
//! # Format, version 4 (all integers little-endian)
//!
//! ```text
//! offset size field
//! 0      4    magic "ZCAT"
//! 4      2    format version (4)
//! 6      2    reserved, 0
//! 8      4    next tree id to hand out
//! 12     4    number of entries n
//! 16     8    redo LSN: where recovery starts reading the WAL (0: no WAL yet)
//! 24     8    WAL id: the id in the header of this database's WAL file
//! 32     ..   n entries, in name order:
//!              0    4  tree id (u32)
//!              4    8  root page id (u64)
//!              12   6  tree format (crate::format: nodes, records, image id/level, cold id/level)
//!              18   2  name length L (1..=255)
//!              20   L  name, UTF-8
//!              20+L 1  number of symbol-table versions T (0..=4; 0 unless records are FSST)
//!              ..      T versions, oldest first:
//!                       0   2  version (u16, not 0, unique in the entry)
//!                       2   S  the table as zipdb_storage::fsst serializes it (own CRC-32C)
//!                       2+S 2  trained ratio, per mille (encoded bytes × 1000 / raw bytes)
//!                       4+S 8  pages that name this version
//!              ..   1  number of cold-layer dictionaries D (0 or 1; 0 unless the cold codec
//!                      is zstd-dict; version 4 only, version 3 entries end before it)
//!              ..      D dictionaries:
//!                       0   2  version (u16, not 0)
//!                       2   1  zstd level it compresses at (1..=22)
//!                       3   4  length B (1..=zipdb_storage::dict::DICT_LEN_MAX)
//!                       7   4  CRC-32C of the B bytes
//!                       11  B  the zstd dictionary
//! ```
//!
//! Version 2 entries are `tree id u32, root u64, codec id u8, codec level u8, L u16, name`:
//! they read as classic trees with that image codec and no tables. Version 1 (written before
//! the WAL existed) is version 2 without header bytes 16..32; it reads as redo LSN 0. An
//! empty blob (a store that was never checkpointed by the engine) is an empty catalog.
//! Integrity is covered by the CRC32C of the store's checkpoint metadata (the map blob).

use std::sync::Arc;
use zipdb_storage::fsst::SymbolTable;

use zipdb_storage::dict::{DictVersion, DICT_LEN_MAX};
use zipdb_storage::page::crc32c;
use zipdb_storage::{Codec, PageId, TreeId};

use crate::error::{Error, Result};
use crate::format::{RecordCodec, TreeFormat, TREE_FORMAT_LEN};

pub const CATALOG_MAGIC: &[u8; 4] = b"ZCAT";
/// The version this build writes; it reads 1 ..= this.
pub const CATALOG_VERSION: u16 = 4;
/// Tree ids start here; 0 is what the store reports for pages of no tree.
pub const FIRST_TREE_ID: u32 = 1;
/// Longest tree name, in bytes.
pub const NAME_LEN_MAX: usize = 255;
/// Most symbol-table versions one tree keeps alive (design §2.5: retraining waits at 4).
pub const TABLE_VERSIONS_MAX: usize = 4;

/// The number of a tree's FSST symbol table. Pages name it; 0 means "no table" there, so a
/// stored version is never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableVersion(pub u16);

/// A ratio in thousandths (500 = half).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PerMille(pub u16);

/// One live symbol-table version of a tree whose records are FSST-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolTableVersion {
    pub version: TableVersion,
    pub table: SymbolTable,
    /// Encoded/raw size of the training sample; drift is measured against it.
    pub trained_ratio: PerMille,
    /// Pages whose values use this version (retirement waits for 0).
    pub pages: u64,
}

/// The cold layer's zstd dictionary of a tree (storage `dict`; `btree::colddict`). Pages
/// name it only after a checkpoint whose catalog holds it is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColdDictVersion {
    pub version: DictVersion,
    pub level: u8,
    pub bytes: Arc<[u8]>,
}

/// One tree in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub name: String,
    pub id: TreeId,
    pub root: PageId,
    pub format: TreeFormat,
    /// Oldest first; empty unless `format.records` is FSST.
    pub tables: Vec<SymbolTableVersion>,
    /// `None` unless `format.cold` is [`Codec::ZstdDict`] and the tree has trained one.
    pub cold_dict: Option<ColdDictVersion>,
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

/// Bounds-checked reading; every failure names what was being read and where.
struct Reader<'a> {
    b: &'a [u8],
    o: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let s = self
            .o
            .checked_add(n)
            .and_then(|end| self.b.get(self.o..end))
            .ok_or_else(|| {
                Error::corrupt_catalog(format!(
                    "{what} at byte {} runs past the end ({} bytes)",
                    self.o,
                    self.b.len()
                ))
            })?;
        self.o += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        Ok(self.take(N, what)?.try_into().expect("took N bytes"))
    }
    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }
}

impl Catalog {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.entries.len() * 40);
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
            out.extend_from_slice(&e.format.to_bytes());
            out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
            out.extend_from_slice(e.name.as_bytes());
            // At most TABLE_VERSIONS_MAX by construction; the reader enforces it.
            out.push(e.tables.len() as u8);
            for t in &e.tables {
                out.extend_from_slice(&t.version.0.to_le_bytes());
                t.table.write_to(&mut out);
                out.extend_from_slice(&t.trained_ratio.0.to_le_bytes());
                out.extend_from_slice(&t.pages.to_le_bytes());
            }
            match &e.cold_dict {
                None => out.push(0),
                Some(d) => {
                    out.push(1);
                    out.extend_from_slice(&d.version.0.to_le_bytes());
                    out.push(d.level);
                    out.extend_from_slice(&(d.bytes.len() as u32).to_le_bytes());
                    out.extend_from_slice(&crc32c(&d.bytes).to_le_bytes());
                    out.extend_from_slice(&d.bytes);
                }
            }
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
        let bad = |what: &str| Error::corrupt_catalog(what.to_string());
        if b.len() < 16 || &b[0..4] != CATALOG_MAGIC {
            return Err(bad("bad magic"));
        }
        let mut r = Reader { b, o: 4 };
        let version = r.u16("version")?;
        if !(1..=CATALOG_VERSION).contains(&version) {
            // Kept in the wording older builds use for a version they do not know.
            return Err(Error::corrupt_catalog(format!(
                "catalog version {version}, this build reads 1 to {CATALOG_VERSION} (written by a newer zipdb?)"
            )));
        }
        if r.u16("reserved")? != 0 {
            return Err(bad("reserved bytes 6..8 are not zero"));
        }
        let next_tree_id = r.u32("next tree id")?;
        if next_tree_id < FIRST_TREE_ID {
            return Err(Error::corrupt_catalog(format!(
                "next tree id {next_tree_id} is below the first valid id {FIRST_TREE_ID}"
            )));
        }
        let n = r.u32("entry count")? as usize;
        let (redo_lsn, wal_id) = if version == 1 {
            (0, 0)
        } else if b.len() < 32 {
            return Err(bad("header truncated"));
        } else {
            (r.u64("redo LSN")?, r.u64("WAL id")?)
        };
        // Each entry takes at least 16 bytes: bound the allocation by the blob.
        let mut entries: Vec<CatalogEntry> = Vec::with_capacity(n.min(b.len() / 16));
        for i in 0..n {
            let e = if version >= 3 {
                decode_entry_v3(&mut r, i, version)?
            } else {
                decode_entry_v2(&mut r, i)?
            };
            let CatalogEntry { id, root, name, .. } = &e;
            if id.0 < FIRST_TREE_ID || id.0 >= next_tree_id || root.is_none() || name.is_empty() {
                return Err(Error::corrupt_catalog(format!(
                    "entry {i} ({name:?}) is inconsistent"
                )));
            }
            if let Some(prev) = entries.last() {
                if prev.name >= *name {
                    return Err(Error::corrupt_catalog(format!(
                        "entry {i} ({name:?}) is not after {:?}: names must be unique and sorted",
                        prev.name
                    )));
                }
            }
            if entries.iter().any(|p| p.id == *id) {
                return Err(Error::corrupt_catalog(format!(
                    "entry {i} ({name:?}) reuses tree id {}",
                    id.0
                )));
            }
            entries.push(e);
        }
        if r.o != b.len() {
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

fn decode_name(r: &mut Reader<'_>, i: usize) -> Result<String> {
    let len = r.u16("name length")? as usize;
    if len > NAME_LEN_MAX {
        return Err(Error::corrupt_catalog(format!(
            "entry {i}: name of {len} bytes (at most {NAME_LEN_MAX})"
        )));
    }
    let name = r
        .take(len, "name")
        .map_err(|_| Error::corrupt_catalog(format!("entry {i}: name truncated")))?;
    Ok(std::str::from_utf8(name)
        .map_err(|_| Error::corrupt_catalog(format!("entry {i}: name is not UTF-8")))?
        .to_string())
}

/// A version 1 or 2 entry: a classic tree.
fn decode_entry_v2(r: &mut Reader<'_>, i: usize) -> Result<CatalogEntry> {
    let truncated = |_| Error::corrupt_catalog(format!("entry {i} truncated"));
    let head: [u8; 14] = r.array("entry").map_err(truncated)?;
    let id = TreeId(u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")));
    let root = PageId(u64::from_le_bytes(head[4..12].try_into().expect("8 bytes")));
    let codec = Codec::from_parts(head[12], head[13]).ok_or_else(|| {
        Error::corrupt_catalog(format!("entry {i}: unknown codec id {}", head[12]))
    })?;
    let name = decode_name(r, i)?;
    Ok(CatalogEntry {
        name,
        id,
        root,
        format: TreeFormat::classic(codec),
        tables: Vec::new(),
        cold_dict: None,
    })
}

/// A version 3 or 4 entry (4 adds the cold-layer dictionary).
fn decode_entry_v3(r: &mut Reader<'_>, i: usize, version: u16) -> Result<CatalogEntry> {
    let id = TreeId(r.u32("tree id")?);
    let root = PageId(r.u64("root page id")?);
    let format = TreeFormat::from_bytes(r.take(TREE_FORMAT_LEN, "tree format")?)
        .map_err(|e| Error::corrupt_catalog(format!("entry {i} (tree id {}): {e}", id.0)))?;
    let name = decode_name(r, i)?;
    let ctx = |what: String| Error::corrupt_catalog(format!("entry {i} ({name:?}): {what}"));
    let n_tables = usize::from(r.u8("table count")?);
    if n_tables > TABLE_VERSIONS_MAX {
        return Err(ctx(format!(
            "{n_tables} symbol-table versions (at most {TABLE_VERSIONS_MAX})"
        )));
    }
    if n_tables > 0 && format.records != RecordCodec::Fsst {
        return Err(ctx(format!(
            "{n_tables} symbol tables, but its records are not FSST ({format})"
        )));
    }
    let mut tables: Vec<SymbolTableVersion> = Vec::with_capacity(n_tables);
    for t in 0..n_tables {
        let version = TableVersion(r.u16("table version")?);
        if version.0 == 0 || tables.iter().any(|p| p.version == version) {
            return Err(ctx(format!(
                "symbol table {t} has version {}: versions are 1.. and unique",
                version.0
            )));
        }
        let (table, used) = SymbolTable::parse_prefix(&r.b[r.o..])
            .map_err(|e| ctx(format!("symbol table version {}: {e}", version.0)))?;
        r.o += used;
        tables.push(SymbolTableVersion {
            version,
            table,
            trained_ratio: PerMille(r.u16("trained ratio")?),
            pages: r.u64("page count")?,
        });
    }
    let cold_dict = match version {
        3 => None,
        _ => match r.u8("dictionary count")? {
            0 => None,
            1 => Some(decode_cold_dict(r, format).map_err(ctx)?),
            n => return Err(ctx(format!("{n} cold-layer dictionaries (at most 1)"))),
        },
    };
    Ok(CatalogEntry {
        name,
        id,
        root,
        format,
        tables,
        cold_dict,
    })
}

fn decode_cold_dict(
    r: &mut Reader<'_>,
    format: TreeFormat,
) -> std::result::Result<ColdDictVersion, String> {
    if format.cold != Codec::ZstdDict {
        return Err(format!(
            "a cold-layer dictionary, but its cold codec is {}",
            format.cold
        ));
    }
    let err = |e: Error| e.to_string();
    let version = DictVersion(r.u16("dictionary version").map_err(err)?);
    let level = r.u8("dictionary level").map_err(err)?;
    let len = r.u32("dictionary length").map_err(err)? as usize;
    let crc = r.u32("dictionary CRC").map_err(err)?;
    if version.0 == 0 || !(1..=22).contains(&level) || !(1..=DICT_LEN_MAX).contains(&len) {
        return Err(format!(
            "dictionary version {}, level {level}, {len} bytes: out of range",
            version.0
        ));
    }
    let bytes = r.take(len, "dictionary").map_err(err)?;
    let actual = crc32c(bytes);
    if actual != crc {
        return Err(format!(
            "dictionary version {}: CRC {actual:#010x}, stored {crc:#010x}",
            version.0
        ));
    }
    Ok(ColdDictVersion {
        version,
        level,
        bytes: bytes.into(),
    })
}

/// A version 2 catalog as the build before issue 19 wrote it, byte for byte.
#[cfg(test)]
pub(crate) const V2_FIXTURE: &[u8] = &[
    b'Z', b'C', b'A', b'T', 2, 0, 0, 0, // magic, version 2, reserved
    5, 0, 0, 0, 2, 0, 0, 0, // next tree id 5, 2 entries
    77, 0, 0, 0, 0, 0, 0, 0, // redo LSN 77
    99, 0, 0, 0, 0, 0, 0, 0, // WAL id 99
    1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, // tree 1, root 3
    2, 0xfe, 1, 0, b'a', // zstd level -2, name "a"
    4, 0, 0, 0, 77, 0, 0, 0, 0, 0, 0, 0, // tree 4, root 77
    0, 0, 7, 0, 0xc3, 0x9f, b'-', b't', b'r', b'e', b'e', // none, name "ß-tree"
];

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
                    cold_dict: None,
                    name: "a".into(),
                    id: TreeId(1),
                    root: PageId(3),
                    format: TreeFormat::classic(Codec::Zstd(-2)),
                    tables: Vec::new(),
                },
                CatalogEntry {
                    cold_dict: None,
                    name: "ß-tree".into(),
                    id: TreeId(4),
                    root: PageId(77),
                    format: TreeFormat::classic(Codec::None),
                    tables: Vec::new(),
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
            cold_dict: None,
            name: name.into(),
            id: TreeId(id),
            root: PageId(10 + id as u64),
            format: TreeFormat::classic(Codec::None),
            tables: Vec::new(),
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
            assert!(
                matches!(
                    e,
                    Err(Error::Storage(crate::error::StorageError::CorruptCatalog(
                        _
                    )))
                ),
                "{what}: {e:?}"
            );
        }
        let mut b = ok.encode();
        b[6] = 1;
        assert!(Catalog::decode(&b).is_err(), "reserved bytes");
    }

    fn fixture_catalog() -> Catalog {
        Catalog {
            next_tree_id: 5,
            redo_lsn: 77,
            wal_id: 99,
            entries: vec![
                CatalogEntry {
                    cold_dict: None,
                    name: "a".into(),
                    id: TreeId(1),
                    root: PageId(3),
                    format: TreeFormat::classic(Codec::Zstd(-2)),
                    tables: Vec::new(),
                },
                CatalogEntry {
                    cold_dict: None,
                    name: "ß-tree".into(),
                    id: TreeId(4),
                    root: PageId(77),
                    format: TreeFormat::classic(Codec::None),
                    tables: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn v1_and_v2_catalogs_read_as_classic_trees() {
        assert_eq!(Catalog::decode(V2_FIXTURE).unwrap(), fixture_catalog());
        // Version 1: no redo LSN and WAL id.
        let mut v1 = V2_FIXTURE[..16].to_vec();
        v1[4] = 1;
        v1.extend_from_slice(&V2_FIXTURE[32..]);
        let mut want = fixture_catalog();
        want.redo_lsn = 0;
        want.wal_id = 0;
        assert_eq!(Catalog::decode(&v1).unwrap(), want);
        for cut in 1..V2_FIXTURE.len() {
            assert!(Catalog::decode(&V2_FIXTURE[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = V2_FIXTURE.to_vec();
        bad[44] = 9; // codec id of the first entry
        let e = Catalog::decode(&bad).unwrap_err().to_string();
        assert!(e.contains("entry 0: unknown codec id 9"), "{e}");
        // What an old catalog decodes to is written back as version 4.
        let v4 = fixture_catalog().encode();
        assert_eq!(&v4[4..6], &[4, 0]);
        assert_eq!(Catalog::decode(&v4).unwrap(), fixture_catalog());
    }

    #[test]
    fn newer_versions_are_refused_by_name() {
        let mut b = fixture_catalog().encode();
        b[4] = 5;
        let e = Catalog::decode(&b).unwrap_err().to_string();
        assert!(
            e.contains("catalog version 5, this build reads 1 to 4"),
            "{e}"
        );
    }

    fn trained(seed: &str) -> SymbolTable {
        let samples: Vec<String> = (0..200)
            .map(|i| format!("{seed}-{i:05}-{seed}{seed} row number {}", i * 7))
            .collect();
        let t = SymbolTable::train(&samples);
        assert!(t.len() > 10, "a real trained table");
        t
    }

    fn fsst_entry(name: &str, id: u32, versions: &[u16]) -> CatalogEntry {
        CatalogEntry {
            cold_dict: None,
            name: name.into(),
            id: TreeId(id),
            root: PageId(100 + id as u64),
            format: TreeFormat {
                nodes: crate::format::NodeFormat::Compact,
                records: RecordCodec::Fsst,
                image: Codec::None,
                cold: Codec::Zstd(3),
            },
            tables: versions
                .iter()
                .map(|&v| SymbolTableVersion {
                    version: TableVersion(v),
                    table: trained(&format!("t{v}")),
                    trained_ratio: PerMille(400 + v % 1000),
                    pages: u64::from(v) << 40,
                })
                .collect(),
        }
    }

    /// An fsst+zstd entry whose tree has a cold-layer dictionary.
    fn dict_entry(name: &str, id: u32, bytes: &[u8]) -> CatalogEntry {
        let mut e = fsst_entry(name, id, &[1]);
        e.format.cold = Codec::ZstdDict;
        e.format.image = Codec::Trim;
        e.cold_dict = Some(ColdDictVersion {
            version: DictVersion(1),
            level: 3,
            bytes: bytes.into(),
        });
        e
    }

    #[test]
    fn v4_keeps_cold_dictionaries_and_checks_them() {
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 31 % 251) as u8).collect();
        let c = Catalog {
            next_tree_id: 10,
            redo_lsn: 5,
            wal_id: 6,
            entries: vec![dict_entry("d", 1, &bytes), fsst_entry("e", 2, &[1])],
        };
        let b = c.encode();
        assert_eq!(Catalog::decode(&b).unwrap(), c);
        // The dictionary's first byte: its own CRC catches what the blob's would.
        let at = b.windows(16).position(|w| w == &bytes[..16]).unwrap();
        let mut bad = b.clone();
        bad[at] ^= 1;
        let e = Catalog::decode(&bad).unwrap_err().to_string();
        assert!(e.contains("(\"d\"): dictionary version 1: CRC"), "{e}");
        // A dictionary on a tree whose cold codec is not zstd-dict.
        let mut wrong = c.clone();
        wrong.entries[0].format.cold = Codec::Zstd(1);
        let e = Catalog::decode(&wrong.encode()).unwrap_err().to_string();
        assert!(e.contains("but its cold codec is zstd:1"), "{e}");
        // Count, level and length out of range; truncation anywhere.
        let count_at = at - 12;
        assert_eq!(
            b[count_at], 1,
            "the count byte precedes version, level, length, CRC"
        );
        for (off, v) in [(0, 2u8), (3, 0), (3, 23)] {
            let mut bad = b.clone();
            bad[count_at + off] = v;
            assert!(Catalog::decode(&bad).is_err(), "byte {off} = {v}");
        }
        for cut in 1..b.len() {
            assert!(Catalog::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        // A version 3 entry has no dictionary count at all.
        let mut v3 = Catalog {
            entries: vec![fsst_entry("e", 2, &[1])],
            ..c.clone()
        }
        .encode();
        assert_eq!(
            v3.pop(),
            Some(0),
            "the v4 entry ends with its dictionary count"
        );
        v3[4] = 3;
        assert_eq!(
            Catalog::decode(&v3).unwrap().entries[0],
            fsst_entry("e", 2, &[1])
        );
    }

    #[test]
    fn v3_round_trips_every_format_and_symbol_tables() {
        let mut entries = vec![
            fsst_entry("f0", 1, &[]),
            fsst_entry("f1", 2, &[1]),
            fsst_entry("f4", 3, &[9, 7, 65535, 8]),
        ];
        let mut id = 4;
        for f in crate::format::all_formats() {
            if f.validate().is_ok() {
                entries.push(CatalogEntry {
                    cold_dict: None,
                    name: format!("g{id:03}"),
                    id: TreeId(id),
                    root: PageId(id as u64),
                    format: f,
                    tables: Vec::new(),
                });
                id += 1;
            }
        }
        let c = Catalog {
            next_tree_id: id,
            redo_lsn: 1,
            wal_id: 2,
            entries,
        };
        let b = c.encode();
        assert_eq!(Catalog::decode(&b).unwrap(), c);
        for cut in 0..b.len() {
            assert!(
                Catalog::decode(&b[..cut]).is_err() || cut == 0,
                "cut at {cut}"
            );
        }
        // Every single-byte change is an error or another valid catalog, never a panic.
        for i in 0..b.len().min(4000) {
            let mut bad = b.clone();
            bad[i] ^= 0x41;
            if let Ok(d) = Catalog::decode(&bad) {
                assert_eq!(Catalog::decode(&d.encode()).unwrap(), d);
            }
        }
    }

    #[test]
    fn v3_symbol_table_lists_are_validated() {
        let check = |what: &str, e: CatalogEntry, want: &str| {
            let c = Catalog {
                next_tree_id: 10,
                redo_lsn: 0,
                wal_id: 0,
                entries: vec![e],
            };
            let err = Catalog::decode(&c.encode()).unwrap_err().to_string();
            assert!(err.contains(want), "{what}: {err}");
        };
        check(
            "five versions",
            fsst_entry("t", 1, &[1, 2, 3, 4, 5]),
            "5 symbol-table versions (at most 4)",
        );
        check("version 0", fsst_entry("t", 1, &[0]), "has version 0");
        check("repeated", fsst_entry("t", 1, &[3, 4, 3]), "has version 3");
        let mut raw = fsst_entry("t", 1, &[1]);
        raw.format.records = RecordCodec::None;
        check("tables without fsst", raw, "its records are not FSST");

        // A flipped bit inside a table is caught by the table's own CRC, named by version.
        let c = Catalog {
            next_tree_id: 10,
            redo_lsn: 0,
            wal_id: 0,
            entries: vec![fsst_entry("t", 1, &[6])],
        };
        let mut b = c.encode();
        let table_at = 32 + 20 + 1 + 1 + 2; // header, entry head, name "t", count, version
        b[table_at + 8] ^= 1;
        let e = Catalog::decode(&b).unwrap_err().to_string();
        assert!(
            e.contains("(\"t\"): symbol table version 6: symbol table checksum"),
            "{e}"
        );

        // An unknown node format byte in a v3 entry is named with its entry.
        let mut b = c.encode();
        b[32 + 12] = 7;
        let e = Catalog::decode(&b).unwrap_err().to_string();
        assert!(
            e.contains("entry 0 (tree id 1): unknown node format 7"),
            "{e}"
        );
    }
}
