//! The format of a tree: how its nodes are laid out, how its record values are encoded, and
//! which codecs its page images use. Fixed when the tree is created, stored in the catalog
//! (format v3) and in the "create tree" redo record (kind 4); see
//! docs/design/issue19-record-compression.md §2.2 and docs/FORMAT.md.
//!
//! # Bytes (6, in this order)
//!
//! ```text
//! 0  u8 node format:   0 classic, 1 compact
//! 1  u8 record codec:  0 none, 1 fsst
//! 2  u8 image codec id (0 none, 1 lz4, 2 zstd, 3 zlib, 4 trim)
//! 3  u8 image codec level byte (zstd level as i8, zlib level, 0 otherwise)
//! 4  u8 cold codec id (same ids)
//! 5  u8 cold codec level byte
//! ```
//!
//! This build creates and opens classic trees and compact trees with raw or FSST values
//! ([`TreeFormat::check_supported`]), the latter with a zstd cold layer over Trim images
//! (issue 19 step 8) or none. It encodes,
//! decodes and validates every variant, so that catalogs and logs of later builds are refused
//! with a clear error instead of being misread page by page.
//!
//! A table (SQL's, or the storage bench's sbtest table) is a primary tree plus index trees;
//! [`TableFormat`] names how such a table is stored and is the one place that maps that choice
//! to the [`TreeFormat`] of each of its trees, so that the SQL layer and the benchmarks agree.

use crate::error::OpenError;
use std::fmt;

use zipdb_storage::Codec;

/// Bytes of an encoded [`TreeFormat`].
pub const TREE_FORMAT_LEN: usize = 6;

/// How the tree's leaves are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeFormat {
    /// Today's nodes (FORMAT.md, "B-tree node").
    Classic,
    /// Leaves with fence keys and key suffixes (design §2.3); inner nodes stay classic.
    Compact,
}

impl NodeFormat {
    pub fn id(self) -> u8 {
        match self {
            NodeFormat::Classic => 0,
            NodeFormat::Compact => 1,
        }
    }

    pub fn from_id(id: u8) -> Option<NodeFormat> {
        match id {
            0 => Some(NodeFormat::Classic),
            1 => Some(NodeFormat::Compact),
            _ => None,
        }
    }
}

/// How each record value is encoded on its own inside a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordCodec {
    /// Values are stored as given.
    None,
    /// Values are FSST-encoded with the tree's versioned symbol tables (design §2.5).
    Fsst,
}

impl RecordCodec {
    pub fn id(self) -> u8 {
        match self {
            RecordCodec::None => 0,
            RecordCodec::Fsst => 1,
        }
    }

    pub fn from_id(id: u8) -> Option<RecordCodec> {
        match id {
            0 => Some(RecordCodec::None),
            1 => Some(RecordCodec::Fsst),
            _ => None,
        }
    }
}

/// A tree's format; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TreeFormat {
    pub nodes: NodeFormat,
    pub records: RecordCodec,
    /// The codec of the page images written to disk (and of the pool's compressed tier).
    pub image: Codec,
    /// The codec of the optional cold layer of compact trees (design §2.6); `Codec::None`
    /// for classic trees.
    pub cold: Codec,
}

/// Why bytes or a value are not a valid [`TreeFormat`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("tree format truncated: {len} bytes, need {TREE_FORMAT_LEN}")]
    Truncated { len: usize },
    #[error("unknown node format {0}")]
    UnknownNodeFormat(u8),
    #[error("unknown record codec {0}")]
    UnknownRecordCodec(u8),
    #[error("unknown {which} codec id {id}")]
    UnknownCodec { which: &'static str, id: u8 },
    /// Known values that do not go together, e.g. FSST records in classic leaves (classic
    /// cells have no value-kind bit for an encoded value).
    #[error("tree format {format} is inconsistent: {why}")]
    Inconsistent {
        format: TreeFormat,
        why: &'static str,
    },
}

impl TreeFormat {
    /// Today's trees: classic nodes, raw values, whole-page `image` codec, no cold layer.
    pub const fn classic(image: Codec) -> TreeFormat {
        TreeFormat {
            nodes: NodeFormat::Classic,
            records: RecordCodec::None,
            image,
            cold: Codec::None,
        }
    }

    /// Compact leaves with raw values (the shape of secondary-index trees, design §2.2), no
    /// cold layer.
    pub const fn compact(image: Codec) -> TreeFormat {
        TreeFormat {
            nodes: NodeFormat::Compact,
            records: RecordCodec::None,
            image,
            cold: Codec::None,
        }
    }

    /// The primary tree of an "fsst" table (design §0, §2.2): compact leaves, FSST-encoded
    /// values, `Trim` page images (the pages are already dense, so an entropy coder would buy
    /// little and cost a decode per miss), no cold layer.
    pub const FSST: TreeFormat = TreeFormat {
        nodes: NodeFormat::Compact,
        records: RecordCodec::Fsst,
        image: Codec::Trim,
        cold: Codec::None,
    };

    /// The secondary index trees of an "fsst" table: index entries are short keys with empty
    /// values, so there is nothing for FSST to encode; compact leaves alone about halve them.
    pub const FSST_INDEX: TreeFormat = TreeFormat::compact(Codec::Trim);

    /// The cold layer of an "fsst+zstd" table (design §2.6): pages written because they leave
    /// the buffer pool are zstd-compressed, all other write-backs stay Trim.
    pub const COLD_ZSTD: Codec = Codec::Zstd(1);

    /// The cold layer of an "fsst+zstd" table's primary tree since session 18: zstd with a
    /// dictionary the tree trains on its first values (`btree::colddict`), zstd:1 until then.
    /// On real text its pages came out 14% smaller than with zstd:1 (BENCHMARKS, session 18).
    pub const COLD_ZSTD_DICT: Codec = Codec::ZstdDict;

    /// The primary tree of an "fsst+zstd" table: [`Self::FSST`] with the cold layer. Trees
    /// created before session 18 have [`Self::COLD_ZSTD`] in their catalog entry and keep it.
    pub const FSST_ZSTD: TreeFormat = TreeFormat {
        cold: Self::COLD_ZSTD_DICT,
        ..Self::FSST
    };

    /// The index trees of an "fsst+zstd" table: [`Self::FSST_INDEX`] with the cold layer.
    pub const FSST_ZSTD_INDEX: TreeFormat = TreeFormat {
        cold: Self::COLD_ZSTD,
        ..Self::FSST_INDEX
    };

    pub fn is_classic(&self) -> bool {
        self.nodes == NodeFormat::Classic
    }

    pub fn to_bytes(&self) -> [u8; TREE_FORMAT_LEN] {
        [
            self.nodes.id(),
            self.records.id(),
            self.image.id(),
            self.image.level_byte(),
            self.cold.id(),
            self.cold.level_byte(),
        ]
    }

    /// Decodes the first [`TREE_FORMAT_LEN`] bytes of `b` and validates them. Codec level
    /// bytes are read as the catalog always read them (`Codec::from_parts`), so a decoded
    /// format re-encodes to bytes that decode to the same format.
    pub fn from_bytes(b: &[u8]) -> Result<TreeFormat, FormatError> {
        let b: &[u8; TREE_FORMAT_LEN] = b
            .get(..TREE_FORMAT_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(FormatError::Truncated { len: b.len() })?;
        let codec = |which, id, level| {
            Codec::from_parts(id, level).ok_or(FormatError::UnknownCodec { which, id })
        };
        let f = TreeFormat {
            nodes: NodeFormat::from_id(b[0]).ok_or(FormatError::UnknownNodeFormat(b[0]))?,
            records: RecordCodec::from_id(b[1]).ok_or(FormatError::UnknownRecordCodec(b[1]))?,
            image: codec("image", b[2], b[3])?,
            cold: codec("cold", b[4], b[5])?,
        };
        f.validate()?;
        Ok(f)
    }

    /// Checks that the parts go together. Classic leaves have no way to mark an encoded
    /// value and no cold layer (their logical header byte 3 is reserved 0), so a classic tree
    /// must have raw records and no cold codec.
    pub fn validate(&self) -> Result<(), FormatError> {
        let why = match self.nodes {
            NodeFormat::Classic if self.records != RecordCodec::None => {
                "classic leaves cannot hold encoded records"
            }
            NodeFormat::Classic if self.cold != Codec::None => "classic trees have no cold layer",
            // It needs the tree's dictionary, which only the cold layer's write-back has.
            _ if self.image == Codec::ZstdDict => "zstd-dict is a cold codec only",
            _ => return Ok(()),
        };
        Err(FormatError::Inconsistent { format: *self, why })
    }

    /// Whether this build can create and open trees of this format: classic trees, and
    /// compact trees with raw or FSST values (issue 19 steps 3b, 4), either without a cold
    /// layer or with a zstd one over Trim images (step 8: the page header has one level
    /// byte, so the image codec must have no level; only zstd has been measured as a cold
    /// codec), with or without a tree dictionary (FSST records only). Other formats are refused when created and when a catalog or log names them.
    pub fn check_supported(&self, tree: &str) -> crate::Result<()> {
        let supported = match self.nodes {
            NodeFormat::Classic => true,
            NodeFormat::Compact => match self.cold {
                Codec::None => true,
                Codec::Zstd(_) => self.image == Codec::Trim,
                // The dictionary is trained on FSST codes.
                Codec::ZstdDict => self.image == Codec::Trim && self.records == RecordCodec::Fsst,
                _ => false,
            },
        };
        if supported && self.validate().is_ok() {
            return Ok(());
        }
        Err(crate::Error::Open(OpenError::UnsupportedTreeFormat {
            tree: tree.to_string(),
            format: *self,
        }))
    }
}

impl fmt::Display for TreeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes = match self.nodes {
            NodeFormat::Classic => "classic",
            NodeFormat::Compact => "compact",
        };
        let records = match self.records {
            RecordCodec::None => "raw",
            RecordCodec::Fsst => "fsst",
        };
        write!(
            f,
            "{nodes}/{records} image={} cold={}",
            self.image, self.cold
        )
    }
}

/// How a table's trees are stored: whole-page compression of classic trees, or the record
/// format of issue 19. SQL's `COMPRESSION='...'` and the server's `--codec` name one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableFormat {
    /// Classic trees whose page images use this codec (`none`, `lz4`, `zstd:1`, ...): the
    /// primary tree and the index trees alike.
    Codec(Codec),
    /// [`TreeFormat::FSST`] for the primary tree, [`TreeFormat::FSST_INDEX`] for indexes.
    Fsst,
    /// `fsst` plus the zstd cold layer: [`TreeFormat::FSST_ZSTD`] and
    /// [`TreeFormat::FSST_ZSTD_INDEX`].
    FsstZstd,
}

impl TableFormat {
    /// What `ROW_FORMAT=COMPRESSED` and the server's default format pick: the record format.
    /// Decided by measurement (docs/BENCHMARKS.md, "The default becomes fsst", 2026-11-26):
    /// where only the compressed data fits the budget (uniform sysbench access), fsst ran
    /// 1.3–1.4x uncompressed tables on the real disk and zstd:1 0.5–0.6x; where everything fits,
    /// the two are alike. Whole-page zstd stays selectable (`COMPRESSION='zstd'`) for its
    /// better ratio on repetitive text.
    pub const COMPRESSED_DEFAULT: TableFormat = TableFormat::Fsst;

    /// The format of the table's primary (row) tree.
    pub const fn primary(self) -> TreeFormat {
        match self {
            TableFormat::Codec(c) => TreeFormat::classic(c),
            TableFormat::Fsst => TreeFormat::FSST,
            TableFormat::FsstZstd => TreeFormat::FSST_ZSTD,
        }
    }

    /// The format of each of the table's secondary index trees.
    pub const fn index(self) -> TreeFormat {
        match self {
            TableFormat::Codec(c) => TreeFormat::classic(c),
            TableFormat::Fsst => TreeFormat::FSST_INDEX,
            TableFormat::FsstZstd => TreeFormat::FSST_ZSTD_INDEX,
        }
    }

    /// The page-image codec of the table's trees (the same for all of them).
    pub const fn image_codec(self) -> Codec {
        self.primary().image
    }

    /// `fsst`, `fsst+zstd`, or what [`Codec::parse`] accepts (`none`, `lz4`, `zstd:3`, ...);
    /// any case.
    pub fn parse(s: &str) -> Option<TableFormat> {
        if s.eq_ignore_ascii_case("fsst") {
            return Some(TableFormat::Fsst);
        }
        if s.eq_ignore_ascii_case("fsst+zstd") {
            return Some(TableFormat::FsstZstd);
        }
        Codec::parse(s).map(TableFormat::Codec)
    }
}

impl fmt::Display for TableFormat {
    /// `fsst`, `fsst+zstd`, or the codec as [`Codec`] prints it (`zstd:1`), so that this
    /// parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableFormat::Codec(c) => write!(f, "{c}"),
            TableFormat::Fsst => f.write_str("fsst"),
            TableFormat::FsstZstd => f.write_str("fsst+zstd"),
        }
    }
}

/// Every combination of node format, record codec and a few codecs, valid or not.
#[cfg(test)]
pub(crate) fn all_formats() -> Vec<TreeFormat> {
    let codecs = [
        Codec::None,
        Codec::Lz4,
        Codec::Zstd(-3),
        Codec::Zstd(19),
        Codec::Zlib(9),
        Codec::Trim,
        Codec::ZstdDict,
    ];
    let mut v = Vec::new();
    for nodes in [NodeFormat::Classic, NodeFormat::Compact] {
        for records in [RecordCodec::None, RecordCodec::Fsst] {
            for image in codecs {
                for cold in codecs {
                    v.push(TreeFormat {
                        nodes,
                        records,
                        image,
                        cold,
                    });
                }
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_formats_round_trip_and_invalid_ones_are_refused() {
        let mut valid = 0;
        for f in all_formats() {
            let b = f.to_bytes();
            match f.validate() {
                Ok(()) => {
                    valid += 1;
                    assert_eq!(TreeFormat::from_bytes(&b), Ok(f), "{f}");
                }
                Err(e) => {
                    assert!(matches!(e, FormatError::Inconsistent { .. }), "{f}: {e}");
                    assert_eq!(TreeFormat::from_bytes(&b), Err(e));
                }
            }
        }
        // Classic: 6 image codecs (not zstd-dict); compact: 2 record codecs × 6 × 7.
        assert_eq!(valid, 6 + 84);
        assert_eq!(
            TreeFormat::classic(Codec::Zstd(1)).to_bytes(),
            [0, 0, 2, 1, 0, 0]
        );
        assert!(TreeFormat::classic(Codec::Lz4).check_supported("t").is_ok());
        assert!(TreeFormat::compact(Codec::Zstd(1))
            .check_supported("t")
            .is_ok());
        let mut f = TreeFormat::compact(Codec::None);
        f.records = RecordCodec::Fsst;
        assert!(
            f.check_supported("t").is_ok(),
            "FSST records since issue 19 step 4"
        );
        let mut f = TreeFormat::compact(Codec::None);
        f.cold = Codec::Lz4;
        assert!(f.check_supported("t").is_err());
        // The cold layer (step 8): zstd over Trim images only, FSST or raw records.
        for f in [TreeFormat::FSST_ZSTD, TreeFormat::FSST_ZSTD_INDEX] {
            assert!(f.check_supported("t").is_ok(), "{f}");
            assert_eq!(TreeFormat::from_bytes(&f.to_bytes()), Ok(f));
        }
        assert_eq!(TreeFormat::FSST_ZSTD.to_bytes(), [1, 1, 4, 0, 5, 0]);
        assert_eq!(TreeFormat::FSST_ZSTD_INDEX.to_bytes(), [1, 0, 4, 0, 2, 1]);
        // Trees made before session 18: zstd:1 without a dictionary, still supported.
        let old = TreeFormat {
            cold: TreeFormat::COLD_ZSTD,
            ..TreeFormat::FSST
        };
        assert_eq!(TreeFormat::from_bytes(&[1, 1, 4, 0, 2, 1]), Ok(old));
        assert!(old.check_supported("t").is_ok());
        // A dictionary is trained on FSST codes: raw-record trees cannot have one.
        let raw = TreeFormat {
            cold: Codec::ZstdDict,
            ..TreeFormat::FSST_INDEX
        };
        assert!(raw.check_supported("t").is_err());
        for (image, cold) in [
            (Codec::Zstd(1), Codec::Zstd(1)),
            (Codec::None, Codec::Zstd(1)),
            (Codec::Trim, Codec::Zlib(6)),
            (Codec::Trim, Codec::Trim),
        ] {
            let f = TreeFormat {
                image,
                cold,
                ..TreeFormat::FSST
            };
            assert!(f.check_supported("t").is_err(), "{f}");
        }
        // Trim (image codec id 4, no level) is a valid image codec since issue 19 step 5.
        let trim = TreeFormat::classic(Codec::Trim);
        assert_eq!(trim.to_bytes(), [0, 0, 4, 0, 0, 0]);
        assert_eq!(TreeFormat::from_bytes(&[0, 0, 4, 0, 0, 0]), Ok(trim));
        assert!(trim.check_supported("t").is_ok());
    }

    #[test]
    fn table_formats_map_to_supported_trees_and_parse_back() {
        for t in [
            TableFormat::Codec(Codec::None),
            TableFormat::Codec(Codec::Lz4),
            TableFormat::Codec(Codec::Zstd(3)),
            TableFormat::Codec(Codec::Zlib(9)),
            TableFormat::Fsst,
            TableFormat::FsstZstd,
            TableFormat::COMPRESSED_DEFAULT,
        ] {
            for f in [t.primary(), t.index()] {
                assert!(f.check_supported("t").is_ok(), "{t}: {f}");
                assert_eq!(f.image, t.image_codec(), "{t}");
            }
            assert_eq!(TableFormat::parse(&t.to_string()), Some(t));
        }
        let c = TableFormat::Codec(Codec::Lz4);
        assert_eq!(
            (c.primary(), c.index()),
            (TreeFormat::classic(Codec::Lz4), c.primary())
        );
        let f = TableFormat::Fsst;
        assert_eq!(
            (f.primary().nodes, f.primary().records, f.primary().image),
            (NodeFormat::Compact, RecordCodec::Fsst, Codec::Trim)
        );
        assert_eq!(
            (f.index().nodes, f.index().records, f.index().image),
            (NodeFormat::Compact, RecordCodec::None, Codec::Trim)
        );
        assert_eq!(TableFormat::parse("FSST"), Some(TableFormat::Fsst));
        assert_eq!(TableFormat::parse("Fsst+Zstd"), Some(TableFormat::FsstZstd));
        let z = TableFormat::FsstZstd;
        assert_eq!(
            (z.primary().cold, z.index().cold, z.image_codec()),
            (Codec::ZstdDict, Codec::Zstd(1), Codec::Trim)
        );
        assert_eq!(TableFormat::parse("zstd:40"), None);
        assert_eq!(TableFormat::parse("fsst:1"), None);
    }

    #[test]
    fn corrupt_bytes_are_typed_errors() {
        let ok = TreeFormat::classic(Codec::Lz4).to_bytes();
        for cut in 0..TREE_FORMAT_LEN {
            assert_eq!(
                TreeFormat::from_bytes(&ok[..cut]),
                Err(FormatError::Truncated { len: cut })
            );
        }
        let with = |i: usize, v: u8| {
            let mut b = ok;
            b[i] = v;
            TreeFormat::from_bytes(&b)
        };
        assert_eq!(with(0, 2), Err(FormatError::UnknownNodeFormat(2)));
        assert_eq!(with(1, 9), Err(FormatError::UnknownRecordCodec(9)));
        assert_eq!(
            with(2, 6),
            Err(FormatError::UnknownCodec {
                which: "image",
                id: 6
            })
        );
        assert_eq!(
            with(2, 7),
            Err(FormatError::UnknownCodec {
                which: "image",
                id: 7
            })
        );
        assert_eq!(
            with(4, 255),
            Err(FormatError::UnknownCodec {
                which: "cold",
                id: 255
            })
        );
        // Every byte string decodes or fails; none panics, and what decodes re-encodes to a
        // string that decodes the same.
        for a in 0..=255u8 {
            for i in 0..TREE_FORMAT_LEN {
                if let Ok(f) = with(i, a) {
                    assert_eq!(TreeFormat::from_bytes(&f.to_bytes()), Ok(f));
                }
            }
        }
    }
}
