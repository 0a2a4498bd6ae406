//! The only module that talks to the engine: a thin adapter, so that the benchmark driver does
//! not depend on the exact shape of the embedded API.

use std::ops::Bound;
use std::path::Path;

use zipdb_engine::{Database, FlushPolicy, Options, TableFormat, Tree, TreeFormat};
use zipdb_storage::Codec;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a benchmark tree is stored as: a whole-page codec on classic nodes (`none`, `lz4`,
/// `zstd:1`, ...), or the record formats of issue 19: `compact` (compact leaves, raw values)
/// and `fsst` (compact leaves, FSST values). Both record formats write `Trim` page images.
/// The label is what reports and JSON print, so the classic codecs keep their old names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format(pub TreeFormat);

impl Format {
    pub const NONE: Format = Format(TreeFormat::classic(Codec::None));
    /// The primary tree of an SQL `COMPRESSION='fsst'` table.
    pub const FSST: Format = Format(TableFormat::Fsst.primary());
    /// The index trees of such a table, here holding rows: compact leaves, raw values.
    pub const COMPACT: Format = Format(TableFormat::Fsst.index());
    /// The primary tree of a `COMPRESSION='fsst+zstd'` table: fsst with the zstd cold layer.
    pub const FSST_ZSTD: Format = Format(TableFormat::FsstZstd.primary());
    /// What SQL's `ROW_FORMAT=COMPRESSED` stores rows as; reports mark it as the default.
    pub const DEFAULT: Format = Format(TableFormat::COMPRESSED_DEFAULT.primary());

    pub fn classic(codec: Codec) -> Format {
        Format(TreeFormat::classic(codec))
    }

    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "fsst" => Some(Format::FSST),
            "fsst+zstd" => Some(Format::FSST_ZSTD),
            "compact" => Some(Format::COMPACT),
            _ => Codec::parse(s).map(Format::classic),
        }
    }

    /// Whether pages leaving the pool are written with a cold codec (issue 19 step 8).
    pub fn has_cold_layer(self) -> bool {
        self.0.cold != Codec::None
    }

    /// The classic whole-page codec, if this is a classic tree.
    pub fn classic_codec(self) -> Option<Codec> {
        self.0.is_classic().then_some(self.0.image)
    }

    /// The codec the database is opened with (its default for trees created without one).
    pub fn db_codec(self) -> Codec {
        self.0.image
    }
}

impl From<Codec> for Format {
    fn from(c: Codec) -> Format {
        Format::classic(c)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Format::FSST => f.write_str("fsst"),
            Format::FSST_ZSTD => f.write_str("fsst+zstd"),
            Format::COMPACT => f.write_str("compact"),
            Format(t) if t.is_classic() => write!(f, "{}", t.image),
            Format(t) => write!(f, "{t}"),
        }
    }
}

/// How a benchmark opens a database.
#[derive(Debug, Clone, Copy)]
pub struct DbOptions {
    pub page_size: usize,
    pub pool_bytes: usize,
    pub codec: Codec,
    pub direct_io: bool,
    pub flush: crate::storage::Flush,
    /// Decoded views of compact leaves (see `BufferPool::set_views`).
    pub leaf_views: bool,
}

/// Cumulative counters of an open database (pool and store).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    pub hit_decoded: u64,
    pub hit_compressed: u64,
    pub miss: u64,
    /// Page decodes (decompressions) and their time, where the pool reports them.
    pub decodes: Option<u64>,
    pub decode_ns: Option<u64>,
    pub encodes: u64,
    pub encode_ns: u64,
    /// Decoded frames dropped while the compressed image stayed.
    pub demotions: u64,
    /// Pages dropped from memory entirely.
    pub evictions: u64,
    pub writebacks: u64,
    pub reads: u64,
    pub read_bytes: u64,
    pub read_ns: u64,
    pub writes: u64,
    pub write_bytes: u64,
}

/// Space used by all trees together.
#[derive(Debug, Clone, Copy, Default)]
pub struct Space {
    pub pages: u64,
    pub logical_bytes: u64,
    pub physical_bytes: u64,
}

/// An open database.
pub struct Db {
    db: Database,
}

/// A tree of the database: one sbtest table. Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct Table {
    tree: Tree,
}

impl Db {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(dir: &Path, opts: &DbOptions) -> Result<Db> {
        use crate::storage::Flush;
        let options = Options {
            page_size: opts.page_size,
            pool_bytes: opts.pool_bytes,
            codec: opts.codec,
            direct_io: opts.direct_io,
            flush_policy: match opts.flush {
                Flush::Sync => FlushPolicy::Sync,
                Flush::Write => FlushPolicy::Write,
                Flush::None => FlushPolicy::None,
            },
            recovery_progress: false,
            ..Options::default()
        };
        let db = Database::open(dir, options)?;
        db.pool().set_views(opts.leaf_views);
        Ok(Db { db })
    }

    pub fn create_table(&self, name: &str, format: Format) -> Result<Table> {
        Ok(Table {
            tree: self.db.create_tree_with(name, format.0)?,
        })
    }

    pub fn open_table(&self, name: &str) -> Result<Table> {
        Ok(Table {
            tree: self.db.open_tree(name)?,
        })
    }

    /// Number of levels of a tree (1 = a lone leaf). Walks the whole tree and blocks writers
    /// meanwhile: for setup only.
    pub fn height(&self, name: &str) -> Result<Option<u32>> {
        Ok(Some(self.db.open_tree(name)?.verify()?.depth as u32))
    }

    pub fn checkpoint(&self) -> Result<()> {
        Ok(self.db.checkpoint()?)
    }

    /// Checkpoints and closes.
    pub fn close(self) -> Result<()> {
        Ok(self.db.close()?)
    }

    pub fn counters(&self) -> Counters {
        let s = self.db.stats();
        Counters {
            hit_decoded: s.pool.hit_decoded,
            hit_compressed: s.pool.hit_compressed,
            miss: s.pool.miss,
            decodes: Some(s.pool.decodes),
            decode_ns: Some(s.pool.decode_ns),
            encodes: s.pool.encodes,
            encode_ns: s.pool.encode_ns,
            demotions: s.pool.demotions,
            evictions: s.pool.evictions,
            writebacks: s.pool.writebacks,
            reads: s.store.reads,
            read_bytes: s.store.read_bytes,
            read_ns: s.store.read_ns,
            writes: s.store.writes,
            write_bytes: s.store.write_bytes,
        }
    }

    /// Every pool counter and the tier split, for debugging the policy (ZIPDB_BENCH_DEBUG=1),
    /// and the FSST trees' retrains and lazy leaf rebuilds (work a write may do besides its own
    /// encode).
    pub fn pool_debug(&self) -> String {
        let s = self.db.stats();
        let (mut retrains, mut rebuilt) = (0, 0);
        for r in s.trees.iter().filter_map(|t| t.records.as_ref()) {
            retrains += r.retrains;
            rebuilt += r.leaves_reencoded;
        }
        format!(
            "{:?}; fsst retrains {retrains}, leaves re-encoded {rebuilt}",
            s.pool
        )
    }

    /// Space of all trees, as of the last checkpoint's page images.
    pub fn space(&self) -> Space {
        let mut sp = Space::default();
        for t in self.db.stats().trees {
            sp.pages += t.pages;
            sp.logical_bytes += t.logical_bytes;
            sp.physical_bytes += t.physical_bytes;
        }
        sp
    }
}

impl Table {
    /// Copies the value of `key` into `out`; false if absent.
    pub fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let found = self.tree.get_with(key, |v| {
            out.clear();
            out.extend_from_slice(v);
        })?;
        Ok(found.is_some())
    }

    /// Inserts a new row; false (and no change) if the key exists.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        Ok(self.tree.insert(key, value)?)
    }

    /// Inserts or replaces a row.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.tree.upsert(key, value)?;
        Ok(())
    }

    /// Deletes a row; false if it was absent.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        Ok(self.tree.delete(key)?)
    }

    /// Visits up to `limit` rows with keys >= `start`, in key order; returns how many. Rows
    /// are borrowed from the cursor (no copy per row) and the cursor copies no more rows out
    /// of a leaf than the limit still wants.
    pub fn scan(
        &self,
        start: &[u8],
        limit: usize,
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut n = 0;
        let mut cursor = self
            .tree
            .range::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Included(start), Bound::Unbounded))?
            .with_limit(limit);
        while let Some(entry) = cursor.next_ref() {
            let (k, v) = entry?;
            f(k, v);
            n += 1;
        }
        Ok(n)
    }
}

/// Counter deltas over the measured interval: the same fields as the cumulative counters.
pub type Delta = Counters;

impl Counters {
    /// The counters that moved from `a` to `b` (a later reading of the same database).
    pub fn between(a: &Counters, b: &Counters) -> Delta {
        let sub = |x: u64, y: u64| y.saturating_sub(x);
        let osub = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
        Delta {
            hit_decoded: sub(a.hit_decoded, b.hit_decoded),
            hit_compressed: sub(a.hit_compressed, b.hit_compressed),
            miss: sub(a.miss, b.miss),
            decodes: osub(a.decodes, b.decodes),
            decode_ns: osub(a.decode_ns, b.decode_ns),
            encodes: sub(a.encodes, b.encodes),
            encode_ns: sub(a.encode_ns, b.encode_ns),
            demotions: sub(a.demotions, b.demotions),
            evictions: sub(a.evictions, b.evictions),
            writebacks: sub(a.writebacks, b.writebacks),
            reads: sub(a.reads, b.reads),
            read_bytes: sub(a.read_bytes, b.read_bytes),
            read_ns: sub(a.read_ns, b.read_ns),
            writes: sub(a.writes, b.writes),
            write_bytes: sub(a.write_bytes, b.write_bytes),
        }
    }

    pub fn accesses(&self) -> u64 {
        self.hit_decoded + self.hit_compressed + self.miss
    }
}
