//! Per-tree zstd dictionaries for the cold layer (issue 19, design note session 18).
//!
//! A page compressed by [`Codec::ZstdDict`] names the version of its tree's dictionary that
//! it used: the image payload is that version (u16, little-endian) followed by a zstd frame
//! made with the dictionary. Across 16 KiB pages a dictionary trained on the tree's records
//! finds the repeats one page cannot see: real text's cold pages came out 14% smaller with a
//! 64 KiB dictionary at level 3 (docs/BENCHMARKS.md, session 18).
//!
//! [`PageDicts`] holds each dictionary digested once for compression and once for
//! decompression (building them per page would cost more than the page: RocksDB's lesson).
//! Whoever installs a version must make it durable before any page that names it can be
//! durable; the pool only looks versions up. A tree without a dictionary writes plain zstd,
//! so images of both kinds mix within a tree.
//!
//! The engine trains, stores and installs them (`engine/src/btree/colddict.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use zstd::zstd_safe;

use crate::codec::{Codec, CodecError};
use crate::page::TreeId;

/// Bytes in front of the zstd frame: the dictionary version.
pub const VERSION_LEN: usize = 2;
/// Dictionaries longer than this are refused: a dictionary is digested twice in memory.
pub const DICT_LEN_MAX: usize = 1 << 20;

/// A dictionary's version within its tree; 0 is never a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DictVersion(pub u16);

/// One dictionary, digested for both directions.
pub struct PageDict {
    pub version: DictVersion,
    level: i32,
    cdict: zstd_safe::CDict<'static>,
    ddict: zstd_safe::DDict<'static>,
}

impl std::fmt::Debug for PageDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageDict({:?}, level {})", self.version, self.level)
    }
}

/// Why a dictionary was not installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DictError {
    #[error("dictionary version 0 is reserved")]
    VersionZero,
    #[error("dictionary of {0} bytes: must be 1..={DICT_LEN_MAX}")]
    BadLength(usize),
    #[error("zstd level {0} out of range 1..=22")]
    BadLevel(i32),
    #[error("tree {tree:?} already has dictionary version {version}")]
    Exists { tree: TreeId, version: u16 },
    #[error("zstd cannot load the dictionary (damaged tables)")]
    Corrupt,
    #[error("tree {tree:?}: version {version} is not newer than {newest}")]
    NotNewer {
        tree: TreeId,
        version: u16,
        newest: u16,
    },
}

#[derive(Default)]
struct TreeDicts {
    /// Oldest first; the last is the one new pages use.
    versions: Vec<Arc<PageDict>>,
}

/// The dictionaries of every tree of one store, shared by the threads that encode and
/// decode its pages.
#[derive(Default)]
pub struct PageDicts {
    trees: RwLock<HashMap<TreeId, TreeDicts>>,
    /// A dictionary was trained and waits to be made durable ([`PageDicts::note_waiting`]):
    /// the engine's checkpointer takes a checkpoint soon, so that pages start using it.
    checkpoint_wanted: AtomicBool,
}

impl std::fmt::Debug for PageDicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let trees = self.trees.read();
        write!(f, "PageDicts({} trees)", trees.len())
    }
}

impl PageDicts {
    pub fn new() -> PageDicts {
        PageDicts::default()
    }

    /// A tree trained a dictionary that waits for a checkpoint. Call it after the dictionary
    /// is where the next checkpoint's catalog snapshot will find it.
    pub fn note_waiting(&self) {
        self.checkpoint_wanted.store(true, Ordering::Release);
    }

    /// Whether a checkpoint was asked for since the last call; clears the request. A request
    /// made after this call is kept for the next one, and a dictionary noted before it is
    /// already visible to the checkpoint that the caller now takes.
    pub fn take_checkpoint_request(&self) -> bool {
        self.checkpoint_wanted.swap(false, Ordering::AcqRel)
    }

    /// Forgets every dictionary of a dropped tree.
    pub fn remove_tree(&self, tree: TreeId) {
        self.trees.write().remove(&tree);
    }

    /// Whether a checkpoint request is pending.
    pub fn any_waiting(&self) -> bool {
        self.checkpoint_wanted.load(Ordering::Acquire)
    }

    /// Makes `bytes` version `version` of `tree`'s dictionary, compressing at `level`. The
    /// version must be newer than the tree's newest: new pages use it from now on.
    pub fn install(
        &self,
        tree: TreeId,
        version: DictVersion,
        bytes: &[u8],
        level: i32,
    ) -> Result<(), DictError> {
        if version.0 == 0 {
            return Err(DictError::VersionZero);
        }
        if bytes.is_empty() || bytes.len() > DICT_LEN_MAX {
            return Err(DictError::BadLength(bytes.len()));
        }
        if !(1..=22).contains(&level) {
            return Err(DictError::BadLevel(level));
        }
        // Digest outside the lock: it takes milliseconds for a large dictionary. Bytes that
        // look like a zstd dictionary but whose tables are damaged make zstd refuse them
        // (a catalog's CRC can be right for such bytes): an error, never a panic.
        let dict = Arc::new(PageDict {
            version,
            level,
            cdict: zstd_safe::CDict::try_create(bytes, level).ok_or(DictError::Corrupt)?,
            ddict: zstd_safe::DDict::try_create(bytes).ok_or(DictError::Corrupt)?,
        });
        let mut trees = self.trees.write();
        let t = trees.entry(tree).or_default();
        if let Some(newest) = t.versions.last() {
            if t.versions.iter().any(|d| d.version == version) {
                return Err(DictError::Exists {
                    tree,
                    version: version.0,
                });
            }
            if newest.version >= version {
                return Err(DictError::NotNewer {
                    tree,
                    version: version.0,
                    newest: newest.version.0,
                });
            }
        }
        t.versions.push(dict);
        Ok(())
    }

    /// Forgets a version no page names any more. Returns whether it was there.
    pub fn remove(&self, tree: TreeId, version: DictVersion) -> bool {
        let mut trees = self.trees.write();
        let Some(t) = trees.get_mut(&tree) else {
            return false;
        };
        let before = t.versions.len();
        t.versions.retain(|d| d.version != version);
        let removed = t.versions.len() != before;
        if t.versions.is_empty() {
            trees.remove(&tree);
        }
        removed
    }

    /// The version new pages of `tree` use, if it has one.
    pub fn newest(&self, tree: TreeId) -> Option<Arc<PageDict>> {
        self.trees.read().get(&tree)?.versions.last().cloned()
    }

    /// Version `version` of `tree`'s dictionary.
    pub fn get(&self, tree: TreeId, version: DictVersion) -> Option<Arc<PageDict>> {
        let trees = self.trees.read();
        trees
            .get(&tree)?
            .versions
            .iter()
            .find(|d| d.version == version)
            .cloned()
    }

    /// The versions `tree` has, oldest first.
    pub fn versions(&self, tree: TreeId) -> Vec<DictVersion> {
        self.trees
            .read()
            .get(&tree)
            .map_or_else(Vec::new, |t| t.versions.iter().map(|d| d.version).collect())
    }
}

/// Trains a dictionary of at most `bytes_max` bytes on samples stored back to back in `data`
/// (`sizes` gives their lengths, in order). zstd's trainer needs many samples and some
/// hundreds of KiB; it fails (an error text) on too little or too uniform data.
pub fn train(data: &[u8], sizes: &[usize], bytes_max: usize) -> Result<Vec<u8>, String> {
    if sizes.iter().sum::<usize>() != data.len() {
        return Err("sample sizes do not add up to the sample".into());
    }
    zstd::dict::from_continuous(data, sizes, bytes_max).map_err(|e| e.to_string())
}

/// Bytes that `data`, cut in pages of `page` bytes, takes compressed as the cold layer would
/// compress it: (plain zstd level 1, zstd at `level` with `dict`). For deciding whether a
/// trained dictionary is worth its 2.6x encode cost (BENCHMARKS, session 18).
pub fn compare(data: &[u8], page: usize, dict: &[u8], level: i32) -> (usize, usize) {
    let (Some(cdict), Some(ddict)) = (
        zstd_safe::CDict::try_create(dict, level),
        zstd_safe::DDict::try_create(dict),
    ) else {
        // zstd refuses the dictionary: it saves nothing.
        return (data.len(), data.len());
    };
    let digested = PageDict {
        version: DictVersion(1),
        level,
        cdict,
        ddict,
    };
    let mut ctx = DictCtx::new();
    let mut out = vec![0u8; VERSION_LEN + zstd_safe::compress_bound(page)];
    let (mut plain, mut with) = (0, 0);
    for chunk in data.chunks(page.max(1)) {
        plain += zstd::bulk::compress(chunk, 1).map_or(chunk.len(), |z| z.len());
        with += ctx
            .compress(&digested, chunk, &mut out)
            .unwrap_or(chunk.len());
    }
    (plain, with)
}

/// Reusable zstd states for dictionary work, one per thread (inside [`crate::codec::CodecCtx`]).
pub(crate) struct DictCtx {
    c: zstd_safe::CCtx<'static>,
    d: zstd_safe::DCtx<'static>,
}

impl DictCtx {
    pub(crate) fn new() -> DictCtx {
        DictCtx {
            c: zstd_safe::CCtx::create(),
            d: zstd_safe::DCtx::create(),
        }
    }

    /// Compresses `src` with `dict` into `dst` as the version and a frame; `None` if it does
    /// not fit.
    pub(crate) fn compress(
        &mut self,
        dict: &PageDict,
        src: &[u8],
        dst: &mut [u8],
    ) -> Option<usize> {
        let (head, body) = dst.split_at_mut_checked(VERSION_LEN)?;
        head.copy_from_slice(&dict.version.0.to_le_bytes());
        let n = self.c.compress_using_cdict(body, src, &dict.cdict).ok()?;
        Some(VERSION_LEN + n)
    }

    /// Decompresses a payload written by [`DictCtx::compress`] into exactly `dst.len()` bytes,
    /// looking its version up in `dicts` under `tree`.
    pub(crate) fn decompress(
        &mut self,
        dicts: Option<&PageDicts>,
        tree: TreeId,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<(), CodecError> {
        let Some((head, frame)) = src.split_first_chunk::<VERSION_LEN>() else {
            return Err(CodecError::Malformed {
                codec: "zstd-dict",
                detail: format!("{} bytes: no dictionary version", src.len()),
            });
        };
        let version = u16::from_le_bytes(*head);
        let dict = dicts
            .and_then(|d| d.get(tree, DictVersion(version)))
            .ok_or(CodecError::UnknownDictionary { tree, version })?;
        let got = self
            .d
            .decompress_using_ddict(dst, frame, &dict.ddict)
            .map_err(|code| CodecError::Malformed {
                codec: "zstd-dict",
                detail: zstd_safe::get_error_name(code).to_string(),
            })?;
        if got != dst.len() {
            return Err(CodecError::WrongLength {
                codec: "zstd-dict",
                got,
                expected: dst.len(),
            });
        }
        Ok(())
    }
}

/// The codec a page leaving the pool is compressed with when its cold codec is `codec`:
/// [`Codec::ZstdDict`] falls back to plain zstd at level 1 while its tree has no dictionary.
pub(crate) fn effective(
    codec: Codec,
    dicts: Option<&PageDicts>,
    tree: TreeId,
) -> (Codec, Option<Arc<PageDict>>) {
    match codec {
        Codec::ZstdDict => match dicts.and_then(|d| d.newest(tree)) {
            Some(dict) => (codec, Some(dict)),
            None => (Codec::Zstd(1), None),
        },
        other => (other, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text-like samples with a repeated paragraph, so that a dictionary has something to
    /// learn.
    pub(crate) fn samples() -> Vec<Vec<u8>> {
        let words = [
            "copyright",
            "license",
            "debian",
            "package",
            "the",
            "of",
            "and",
            "software",
            "permission",
            "warranty",
            "granted",
            "free",
            "without",
            "distribute",
        ];
        let mut out = Vec::new();
        let mut x: u64 = 7;
        for i in 0..2000 {
            let mut s = String::new();
            if i % 5 == 0 {
                s.push_str("Permission is hereby granted, free of charge, to any person ");
            }
            for _ in 0..20 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push_str(words[(x >> 33) as usize % words.len()]);
                s.push(' ');
            }
            out.push(s.into_bytes());
        }
        out
    }

    pub(crate) fn trained() -> Vec<u8> {
        let s = samples();
        let sizes: Vec<usize> = s.iter().map(Vec::len).collect();
        train(&s.concat(), &sizes, 16 * 1024).expect("trains")
    }

    fn page(samples: &[Vec<u8>], from: usize) -> Vec<u8> {
        let mut p = Vec::new();
        for s in samples.iter().cycle().skip(from) {
            if p.len() + s.len() > 16 * 1024 {
                break;
            }
            p.extend_from_slice(s);
        }
        p.resize(16 * 1024, 0);
        p
    }

    #[test]
    fn install_checks_versions_and_lookups_find_them() {
        let d = PageDicts::new();
        let t = TreeId(3);
        let bytes = trained();
        assert_eq!(
            d.install(t, DictVersion(0), &bytes, 3),
            Err(DictError::VersionZero)
        );
        assert_eq!(
            d.install(t, DictVersion(1), &[], 3),
            Err(DictError::BadLength(0))
        );
        assert_eq!(
            d.install(t, DictVersion(1), &bytes, 0),
            Err(DictError::BadLevel(0))
        );
        // zstd's dictionary magic, then garbage tables: refused, not a panic.
        let mut broken = bytes.clone();
        for b in broken[8..200].iter_mut() {
            *b = 0xFF;
        }
        assert_eq!(
            d.install(t, DictVersion(1), &broken, 3),
            Err(DictError::Corrupt)
        );
        assert!(d.newest(t).is_none());
        d.install(t, DictVersion(2), &bytes, 3).unwrap();
        assert!(matches!(
            d.install(t, DictVersion(2), &bytes, 3),
            Err(DictError::Exists { .. })
        ));
        assert!(matches!(
            d.install(t, DictVersion(1), &bytes, 3),
            Err(DictError::NotNewer { newest: 2, .. })
        ));
        d.install(t, DictVersion(5), &bytes, 1).unwrap();
        assert_eq!(d.newest(t).unwrap().version, DictVersion(5));
        assert_eq!(d.versions(t), vec![DictVersion(2), DictVersion(5)]);
        assert!(d.get(t, DictVersion(2)).is_some());
        assert!(d.get(TreeId(4), DictVersion(2)).is_none());
        assert!(d.remove(t, DictVersion(5)));
        assert!(!d.remove(t, DictVersion(5)));
        assert_eq!(d.newest(t).unwrap().version, DictVersion(2));
        assert!(d.remove(t, DictVersion(2)));
        assert!(d.versions(t).is_empty());
    }

    #[test]
    fn pages_round_trip_and_shrink_with_the_dictionary() {
        let d = PageDicts::new();
        let t = TreeId(1);
        d.install(t, DictVersion(1), &trained(), 3).unwrap();
        let dict = d.newest(t).unwrap();
        let samples = samples();
        let mut ctx = DictCtx::new();
        let mut plain = zstd::bulk::Compressor::new(1).unwrap();
        let (mut with, mut without) = (0, 0);
        for from in [0, 17, 301, 999] {
            let p = page(&samples, from);
            let mut out = vec![0u8; p.len()];
            let n = ctx.compress(&dict, &p, &mut out).expect("fits");
            assert_eq!(&out[..2], &1u16.to_le_bytes());
            let mut back = vec![0u8; p.len()];
            ctx.decompress(Some(&d), t, &out[..n], &mut back).unwrap();
            assert!(back == p);
            with += n;
            without += plain.compress(&p).unwrap().len();
        }
        assert!(
            with < without,
            "dictionary {with} B, plain zstd:1 {without} B"
        );
    }

    #[test]
    fn unknown_versions_and_damaged_payloads_are_errors() {
        let d = PageDicts::new();
        let t = TreeId(1);
        d.install(t, DictVersion(1), &trained(), 3).unwrap();
        let dict = d.newest(t).unwrap();
        let p = page(&samples(), 0);
        let mut ctx = DictCtx::new();
        let mut out = vec![0u8; p.len()];
        let n = ctx.compress(&dict, &p, &mut out).unwrap();
        let mut back = vec![0u8; p.len()];
        // Another tree, another version, no registry at all.
        for (dicts, tree) in [(Some(&d), TreeId(2)), (None, t)] {
            assert_eq!(
                ctx.decompress(dicts, tree, &out[..n], &mut back),
                Err(CodecError::UnknownDictionary { tree, version: 1 })
            );
        }
        let mut other = out[..n].to_vec();
        other[..2].copy_from_slice(&9u16.to_le_bytes());
        assert!(matches!(
            ctx.decompress(Some(&d), t, &other, &mut back),
            Err(CodecError::UnknownDictionary { version: 9, .. })
        ));
        assert!(ctx.decompress(Some(&d), t, &out[..1], &mut back).is_err());
        // Truncated and bit-flipped frames fail cleanly.
        assert!(ctx
            .decompress(Some(&d), t, &out[..n / 2], &mut back)
            .is_err());
        let mut flipped = out[..n].to_vec();
        for i in (2..n).step_by(97) {
            flipped[i] ^= 0x5A;
        }
        let r = ctx.decompress(Some(&d), t, &flipped, &mut back);
        assert!(
            r.is_err() || back != p,
            "a damaged frame decoded to the page"
        );
        // Too short a destination.
        assert!(ctx
            .decompress(Some(&d), t, &out[..n], &mut back[..100])
            .is_err());
    }

    #[test]
    fn compare_sees_what_a_dictionary_saves() {
        let s = samples();
        let data = s.concat();
        let (plain, with) = compare(&data[..64 * 1024], 16 * 1024, &trained(), 3);
        assert!(with * 100 < plain * 95, "text: {with} against {plain}");
        // Random bytes: nothing to gain.
        let mut x = 1u64;
        let noise: Vec<u8> = (0..64 * 1024)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect();
        let (plain, with) = compare(&noise, 16 * 1024, &trained(), 3);
        assert!(with * 100 >= plain * 95, "noise: {with} against {plain}");
    }

    #[test]
    fn without_a_dictionary_the_cold_codec_is_plain_zstd() {
        let d = PageDicts::new();
        let t = TreeId(8);
        assert_eq!(effective(Codec::ZstdDict, Some(&d), t).0, Codec::Zstd(1));
        assert_eq!(effective(Codec::ZstdDict, None, t).0, Codec::Zstd(1));
        d.install(t, DictVersion(1), &trained(), 3).unwrap();
        let (c, dict) = effective(Codec::ZstdDict, Some(&d), t);
        assert_eq!(
            (c, dict.map(|d| d.version)),
            (Codec::ZstdDict, Some(DictVersion(1)))
        );
        assert_eq!(effective(Codec::Zstd(1), Some(&d), t).0, Codec::Zstd(1));
    }
}
