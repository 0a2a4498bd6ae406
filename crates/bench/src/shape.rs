//! The storage benchmark's row shapes: what a tree's values are made of.
//!
//! - `sbtest` (the default): sysbench rows (see sbtest.rs), 8 + 184 bytes, random digits.
//! - `debian_docs`: real English text. Key: the id, 8 bytes big-endian (the same encoding as
//!   sbtest's); value: one paragraph of the debian_docs data set (see datasets.rs). Row `id` of
//!   tree `t` gets paragraph `(t * rows + id - 1) mod n`, so the rows of a load are distinct until
//!   they outnumber the paragraphs, and then repeat in the same order (far apart: not within one
//!   page). Updates replace a row's value with another paragraph drawn at random; inserts insert
//!   one. Paragraphs longer than [`Shape::value_cap`] are split at a word boundary into pieces
//!   that each count as a paragraph: the engine moves values above about a quarter of a page to
//!   overflow chains, and the benchmark measures leaf pages in the pool (where the codecs work),
//!   so every value stays inline.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use rand::Rng;

use crate::datasets;
use crate::db::Result;
use crate::report::{mb, thousands};
use crate::sbtest;

#[derive(Args, Debug, Clone)]
pub struct ShapeArgs {
    /// Row shape: `sbtest` (sysbench rows) or `debian_docs` (an 8-byte id and one paragraph of
    /// real English text from ../shared/datasets/debian_docs.py; needs python3 and that script).
    #[arg(long, value_enum, default_value_t = ShapeKind::Sbtest)]
    pub shape: ShapeKind,
    /// debian_docs: paragraphs to read from the data set [default: smoke 20,000; else 200,000].
    #[arg(long)]
    pub paragraphs: Option<usize>,
    /// debian_docs: the script, run with python3 when --text-file does not exist yet.
    #[arg(long, default_value = datasets::DEBIAN_DOCS_SCRIPT)]
    pub text_script: PathBuf,
    /// debian_docs: its JSON-lines output [default:
    /// target/zipdb-bench-data/debian_docs-<paragraphs>-seed7.jsonl, made when absent].
    #[arg(long)]
    pub text_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShapeKind {
    #[value(name = "sbtest")]
    Sbtest,
    #[value(name = "debian_docs")]
    DebianDocs,
}

/// Paragraphs stored back to back, with their end offsets.
#[derive(Default)]
struct Text {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Text {
    fn push(&mut self, p: &str) {
        if !p.is_empty() {
            self.bytes.extend_from_slice(p.as_bytes());
            self.ends.push(self.bytes.len());
        }
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Pushes `p`, split into pieces of at most `cap` bytes (at a space in the last quarter of a
    /// piece if there is one, else at a character boundary).
    fn push_split(&mut self, mut p: &str, cap: usize) {
        while p.len() > cap {
            let mut cut = cap;
            while !p.is_char_boundary(cut) {
                cut -= 1;
            }
            if let Some(ws) = p[..cut]
                .rfind(char::is_whitespace)
                .filter(|&i| i > cap * 3 / 4)
            {
                cut = ws;
            }
            self.push(p[..cut].trim_end());
            p = p[cut..].trim_start();
        }
        self.push(p);
    }
}

/// A row shape, with its data set loaded.
#[derive(Clone)]
pub struct Shape {
    kind: ShapeKind,
    text: Arc<Text>,
    /// debian_docs: paragraphs read, and how many were split.
    pub paragraphs: usize,
    pub split: usize,
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shape({}, {} values)", self.name(), self.text.ends.len())
    }
}

impl Shape {
    pub fn new(a: &ShapeArgs, smoke: bool, page_size: usize) -> Result<Shape> {
        let mut shape = Shape {
            kind: a.shape,
            text: Arc::new(Text::default()),
            paragraphs: 0,
            split: 0,
        };
        if a.shape == ShapeKind::DebianDocs {
            let n = a.paragraphs.unwrap_or(if smoke { 20_000 } else { 200_000 });
            let cap = Shape::value_cap(page_size);
            let mut text = Text::default();
            let mut split = 0;
            shape.paragraphs =
                datasets::debian_docs(&a.text_script, a.text_file.as_deref(), n, |p| {
                    split += (p.len() > cap) as usize;
                    text.push_split(p, cap);
                })?;
            if text.ends.is_empty() {
                return Err("the debian_docs data set has no non-empty paragraphs".into());
            }
            shape.split = split;
            shape.text = Arc::new(text);
        }
        Ok(shape)
    }

    /// The longest debian_docs value: a quarter of the page less 256 bytes (3,840 bytes on
    /// 16 KiB pages), under the engine's inline limit (about a quarter page, cell header
    /// included) whatever the leaf layout.
    pub fn value_cap(page_size: usize) -> usize {
        (page_size / 4).saturating_sub(256).max(64)
    }

    pub fn name(&self) -> &'static str {
        match self.kind {
            ShapeKind::Sbtest => "sbtest",
            ShapeKind::DebianDocs => "debian_docs",
        }
    }

    /// Values available (debian_docs pieces; 0 for sbtest).
    pub fn values(&self) -> usize {
        self.text.ends.len()
    }

    /// Text bytes of all values (0 for sbtest).
    pub fn text_bytes(&self) -> usize {
        self.text.bytes.len()
    }

    /// A line describing the debian_docs data set as loaded (`None` for sbtest).
    pub fn describe(&self, page_size: usize) -> Option<String> {
        (self.values() > 0).then(|| {
            format!(
                "debian_docs: {} paragraphs ({} split at {} B) -> {} values, {:.1} MB of text",
                thousands(self.paragraphs as u64),
                thousands(self.split as u64),
                Shape::value_cap(page_size),
                thousands(self.values() as u64),
                mb(self.text_bytes() as u64)
            )
        })
    }

    /// Average value length, to size the loading pool.
    pub fn avg_value_len(&self) -> usize {
        match self.kind {
            ShapeKind::Sbtest => sbtest::VALUE_LEN,
            ShapeKind::DebianDocs => self.text.bytes.len().div_ceil(self.values()),
        }
    }

    fn random_paragraph<R: Rng>(&self, rng: &mut R, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.text.get(rng.gen_range(0..self.values())));
    }

    /// The value of row `id` (1-based) of tree `table` when loading `rows` rows per tree.
    pub fn load_value<R: Rng>(
        &self,
        rng: &mut R,
        table: usize,
        id: u64,
        rows: u64,
        out: &mut Vec<u8>,
    ) {
        match self.kind {
            ShapeKind::Sbtest => sbtest::random_value(rng, rows, out),
            ShapeKind::DebianDocs => {
                let i = (table as u64 * rows + id - 1) % self.values() as u64;
                out.clear();
                out.extend_from_slice(self.text.get(i as usize));
            }
        }
    }

    /// A fresh value for an insert.
    pub fn insert_value<R: Rng>(&self, rng: &mut R, rows: u64, out: &mut Vec<u8>) {
        match self.kind {
            ShapeKind::Sbtest => sbtest::random_value(rng, rows, out),
            ShapeKind::DebianDocs => self.random_paragraph(rng, out),
        }
    }

    /// `k = k + 1` in place (sbtest); another paragraph (debian_docs). False if `v` is malformed.
    pub fn bump<R: Rng>(&self, rng: &mut R, v: &mut Vec<u8>) -> bool {
        match self.kind {
            ShapeKind::Sbtest => sbtest::increment_k(v),
            ShapeKind::DebianDocs => {
                self.random_paragraph(rng, v);
                true
            }
        }
    }

    /// A new `c` (sbtest) or another paragraph (debian_docs) for the row `v`, into `out`.
    pub fn new_text<R: Rng>(&self, rng: &mut R, v: &[u8], out: &mut Vec<u8>) -> bool {
        match self.kind {
            ShapeKind::Sbtest => sbtest::with_new_c(rng, v, out),
            ShapeKind::DebianDocs => {
                self.random_paragraph(rng, out);
                true
            }
        }
    }

    /// What a point get reads out of a value (`c` for sbtest, the text for debian_docs).
    pub fn read(&self, v: &[u8]) -> u64 {
        match self.kind {
            ShapeKind::Sbtest => sbtest::RowRef::decode(v).map_or(0, |r| {
                r.c.len() as u64 + r.c.first().copied().unwrap_or(0) as u64
            }),
            ShapeKind::DebianDocs => v.len() as u64 + v.first().copied().unwrap_or(0) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paragraphs_are_split_inline() {
        let mut t = Text::default();
        let word = "héllo wörld ";
        let long = word.repeat(1000);
        t.push_split(&long, 100);
        t.push_split("short", 100);
        let n = t.ends.len();
        assert!(n > 100);
        for i in 0..n {
            let p = std::str::from_utf8(t.get(i)).unwrap();
            assert!(!p.is_empty() && p.len() <= 100, "{p:?}");
        }
        assert_eq!(t.get(n - 1), b"short");
        assert_eq!(Shape::value_cap(16384), 3840);
    }
}
