//! Redo records: the payloads the engine writes to the WAL.
//!
//! Records are logical: "tree 5, key k, now value v", never page bytes, so replay does not
//! depend on page layout or compressor output. Every operation is a blind write of a final
//! value (put or delete), so replaying a record over a state that already contains it changes
//! nothing, and replaying a log suffix in order over any state that contains every earlier
//! record yields the same final state. Recovery relies on that (see `db.rs`).
//!
//! # Format (little-endian)
//!
//! ```text
//! byte 0: kind
//! kind 1, commit:      u32 n, then n operations:
//!                        u32 tree id, u8 op (1 put, 2 delete), u16 key length K,
//!                        [put only: u32 value length V], K key bytes, [put only: V value bytes]
//! kind 2, create tree: u32 tree id, u8 codec id, u8 codec level byte, u16 name length L,
//!                      L bytes of UTF-8 name (a classic tree; written before issue 19)
//! kind 3, drop tree:   u32 tree id
//! kind 4, create tree v2: u32 tree id, 6 bytes tree format (crate::format), u16 name
//!                      length L, L bytes of UTF-8 name
//! ```
//! Writers use kind 4 for every new tree; kind 2 still decodes (as a classic tree) so that
//! logs written before it replay. An older build refuses kind 4 as an unknown kind.
//! The WAL frames each record with its length, LSN and CRC32C; a record must use all its bytes.

use zipdb_storage::{Codec, TreeId};

use crate::format::{TreeFormat, TREE_FORMAT_LEN};

const KIND_COMMIT: u8 = 1;
const KIND_CREATE_TREE: u8 = 2;
const KIND_DROP_TREE: u8 = 3;
const KIND_CREATE_TREE_V2: u8 = 4;
const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;

/// A decoded redo record. Keys and values borrow from the payload.
#[derive(Debug, PartialEq, Eq)]
pub enum Record<'a> {
    Commit(Vec<Op<'a>>),
    /// Kind 4, or kind 2 read as a classic tree.
    CreateTree {
        id: TreeId,
        format: TreeFormat,
        name: &'a str,
    },
    DropTree {
        id: TreeId,
    },
}

/// One write of a commit.
#[derive(Debug, PartialEq, Eq)]
pub struct Op<'a> {
    pub tree: TreeId,
    pub key: &'a [u8],
    /// None: delete.
    pub value: Option<&'a [u8]>,
}

/// Builds a commit record.
#[derive(Debug, Default)]
pub struct CommitEncoder {
    buf: Vec<u8>,
    n: u32,
}

impl CommitEncoder {
    pub fn new() -> CommitEncoder {
        let mut buf = Vec::with_capacity(64);
        buf.push(KIND_COMMIT);
        buf.extend_from_slice(&0u32.to_le_bytes());
        CommitEncoder { buf, n: 0 }
    }

    /// Adds one write. The key must be shorter than 64 KiB (trees cap keys far below that).
    pub fn op(&mut self, tree: TreeId, key: &[u8], value: Option<&[u8]>) {
        assert!(key.len() <= u16::MAX as usize, "key of {} bytes", key.len());
        self.buf.extend_from_slice(&tree.0.to_le_bytes());
        self.buf
            .push(if value.is_some() { OP_PUT } else { OP_DELETE });
        self.buf
            .extend_from_slice(&(key.len() as u16).to_le_bytes());
        if let Some(v) = value {
            let len = u32::try_from(v.len()).expect("values are below 4 GiB");
            self.buf.extend_from_slice(&len.to_le_bytes());
        }
        self.buf.extend_from_slice(key);
        if let Some(v) = value {
            self.buf.extend_from_slice(v);
        }
        self.n += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf[1..5].copy_from_slice(&self.n.to_le_bytes());
        self.buf
    }
}

/// A kind 4 record: the tree with its full format. Names are at most 255 bytes (callers
/// check), so the length fits its u16.
pub fn encode_create_tree(id: TreeId, format: TreeFormat, name: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(7 + TREE_FORMAT_LEN + name.len());
    b.push(KIND_CREATE_TREE_V2);
    b.extend_from_slice(&id.0.to_le_bytes());
    b.extend_from_slice(&format.to_bytes());
    b.extend_from_slice(&(name.len() as u16).to_le_bytes());
    b.extend_from_slice(name.as_bytes());
    b
}

/// A kind 2 record, as builds before issue 19 wrote it. Nothing writes it any more; tests and
/// the fuzz target use it to check that old logs still replay.
pub fn encode_create_tree_v1(id: TreeId, codec: Codec, name: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(9 + name.len());
    b.push(KIND_CREATE_TREE);
    b.extend_from_slice(&id.0.to_le_bytes());
    b.push(codec.id());
    b.push(codec.level_byte());
    b.extend_from_slice(&(name.len() as u16).to_le_bytes());
    b.extend_from_slice(name.as_bytes());
    b
}

pub fn encode_drop_tree(id: TreeId) -> Vec<u8> {
    let mut b = vec![KIND_DROP_TREE];
    b.extend_from_slice(&id.0.to_le_bytes());
    b
}

struct Reader<'a> {
    b: &'a [u8],
    o: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .o
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                format!(
                    "{what} at byte {} runs past the end ({} bytes)",
                    self.o,
                    self.b.len()
                )
            })?;
        let s = &self.b[self.o..end];
        self.o = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, String> {
        let s = self.take(2, what)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
}

fn name<'a>(r: &mut Reader<'a>) -> Result<&'a str, String> {
    let len = r.u16("name length")? as usize;
    std::str::from_utf8(r.take(len, "name")?).map_err(|_| "tree name is not UTF-8".to_string())
}

/// Decodes a record; a description of what is wrong otherwise.
pub fn decode(b: &[u8]) -> Result<Record<'_>, String> {
    let mut r = Reader { b, o: 0 };
    let rec = match r.u8("kind")? {
        KIND_COMMIT => {
            let n = r.u32("operation count")?;
            // Each operation takes at least 7 bytes: bound the allocation by the payload.
            if n as usize > b.len() / 7 {
                return Err(format!("{n} operations cannot fit in {} bytes", b.len()));
            }
            let mut ops = Vec::with_capacity(n as usize);
            for i in 0..n {
                let tree = TreeId(r.u32("tree id")?);
                let op = r.u8("op")?;
                let klen = r.u16("key length")? as usize;
                let vlen = match op {
                    OP_PUT => Some(r.u32("value length")? as usize),
                    OP_DELETE => None,
                    x => return Err(format!("operation {i}: unknown op {x}")),
                };
                let key = r.take(klen, "key")?;
                let value = match vlen {
                    Some(l) => Some(r.take(l, "value")?),
                    None => None,
                };
                ops.push(Op { tree, key, value });
            }
            Record::Commit(ops)
        }
        KIND_CREATE_TREE => {
            let id = TreeId(r.u32("tree id")?);
            let cid = r.u8("codec id")?;
            let level = r.u8("codec level")?;
            let codec =
                Codec::from_parts(cid, level).ok_or_else(|| format!("unknown codec id {cid}"))?;
            let name = name(&mut r)?;
            Record::CreateTree {
                id,
                format: TreeFormat::classic(codec),
                name,
            }
        }
        KIND_CREATE_TREE_V2 => {
            let id = TreeId(r.u32("tree id")?);
            let format = TreeFormat::from_bytes(r.take(TREE_FORMAT_LEN, "tree format")?)
                .map_err(|e| format!("tree id {}: {e}", id.0))?;
            let name = name(&mut r)?;
            Record::CreateTree { id, format, name }
        }
        KIND_DROP_TREE => Record::DropTree {
            id: TreeId(r.u32("tree id")?),
        },
        k => return Err(format!("unknown record kind {k}")),
    };
    if r.o != b.len() {
        return Err(format!("{} trailing bytes", b.len() - r.o));
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let mut e = CommitEncoder::new();
        e.op(TreeId(3), b"k1", Some(b"value"));
        e.op(TreeId(4), b"", None);
        e.op(TreeId(3), b"k2", Some(b""));
        let b = e.finish();
        let want = Record::Commit(vec![
            Op {
                tree: TreeId(3),
                key: b"k1",
                value: Some(b"value"),
            },
            Op {
                tree: TreeId(4),
                key: b"",
                value: None,
            },
            Op {
                tree: TreeId(3),
                key: b"k2",
                value: Some(b""),
            },
        ]);
        assert_eq!(decode(&b).unwrap(), want);
        let c = encode_create_tree_v1(TreeId(9), Codec::Zstd(3), "users");
        assert_eq!(
            decode(&c).unwrap(),
            Record::CreateTree {
                id: TreeId(9),
                format: TreeFormat::classic(Codec::Zstd(3)),
                name: "users"
            }
        );
        assert_eq!(
            decode(&encode_drop_tree(TreeId(9))).unwrap(),
            Record::DropTree { id: TreeId(9) }
        );
    }

    #[test]
    fn create_tree_v2_round_trips_every_format() {
        for format in crate::format::all_formats() {
            let b = encode_create_tree(TreeId(7), format, "t1");
            let got = decode(&b);
            if format.validate().is_ok() {
                assert_eq!(
                    got.unwrap(),
                    Record::CreateTree {
                        id: TreeId(7),
                        format,
                        name: "t1"
                    }
                );
            } else {
                let e = got.unwrap_err();
                assert!(e.contains("tree id 7") && e.contains("inconsistent"), "{e}");
            }
        }
    }

    #[test]
    fn create_tree_fixed_bytes() {
        // Pinned so that a change of layout is a visible format change (docs/FORMAT.md).
        let v1 = [2, 5, 0, 0, 0, 2, 1, 1, 0, b'a'];
        let v2 = [4, 5, 0, 0, 0, 1, 1, 0, 0, 2, 3, 1, 0, b'a'];
        let compact = TreeFormat {
            nodes: crate::format::NodeFormat::Compact,
            records: crate::format::RecordCodec::Fsst,
            image: Codec::None,
            cold: Codec::Zstd(3),
        };
        assert_eq!(encode_create_tree_v1(TreeId(5), Codec::Zstd(1), "a"), v1);
        assert_eq!(encode_create_tree(TreeId(5), compact, "a"), v2);
        assert_eq!(
            decode(&v1).unwrap(),
            Record::CreateTree {
                id: TreeId(5),
                format: TreeFormat::classic(Codec::Zstd(1)),
                name: "a"
            }
        );
        assert_eq!(
            decode(&v2).unwrap(),
            Record::CreateTree {
                id: TreeId(5),
                format: compact,
                name: "a"
            }
        );
        for cut in 0..v2.len() {
            assert!(decode(&v2[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = v2;
        bad[5] = 2; // node format 2
        assert!(decode(&bad).unwrap_err().contains("unknown node format 2"));
        let mut bad = v2;
        bad[7] = 9; // image codec 9
        assert!(decode(&bad)
            .unwrap_err()
            .contains("unknown image codec id 9"));
        assert!(decode(&[v2.as_slice(), &[0]].concat())
            .unwrap_err()
            .contains("trailing"));
    }

    proptest! {
        /// Truncations and bit flips are errors or other valid records, never panics.
        #[test]
        fn garbage_never_panics(mut b in proptest::collection::vec(any::<u8>(), 0..200), cut in 0usize..200) {
            let _ = decode(&b);
            let mut e = CommitEncoder::new();
            e.op(TreeId(1), &b[..b.len().min(20)], Some(&b));
            let good = e.finish();
            prop_assert!(decode(&good).is_ok());
            let cut = cut.min(good.len().saturating_sub(1));
            prop_assert!(decode(&good[..cut]).is_err());
            if !b.is_empty() {
                let i = cut % b.len();
                b[i] ^= 0x55;
                let _ = decode(&b);
            }
        }
    }
}
