//! The SQL catalog: databases, tables, columns and indexes, kept in one engine tree
//! (`zipdb.sql.catalog`) and in memory.
//!
//! # Layout in the engine
//! Each table is one engine tree for its rows (the *primary* tree, keyed by the encoded primary
//! key, or by a hidden 8-byte row id when the table has none, as InnoDB does) plus one tree per
//! secondary index (keyed by the encoded index columns followed by the primary key; values are
//! empty). Trees are named `z<object id>` and never reused.
//!
//! # Catalog tree format
//! - `D\0<db>` → empty: a database.
//! - `T\0<db>\0<table>` → a table definition ([`TableDef::encode`]).
//! - `N` → the next object id (u64 LE).
//! - `U\0<user>\0<host>` → an account ([`crate::catalog::accounts`] documents the value).
//!
//! DDL writes the catalog in one synchronous engine transaction after creating its trees; a
//! crash in between leaves trees no definition names, which [`Catalog::load`] drops.

pub mod accounts;
pub mod codec;
pub(crate) mod system;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use zipdb_engine::{Codec, Database, TableFormat, Tree};

use crate::error::{ErrorKind, SqlError};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

/// Name of the engine tree holding the catalog.
pub const CATALOG_TREE: &str = "zipdb.sql.catalog";

/// A column as declared.
#[derive(Debug, Clone)]
pub struct ColumnDef {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// The declared default (`None`: no DEFAULT clause).
    pub default: Option<Value>,
    /// `DEFAULT CURRENT_TIMESTAMP`.
    pub default_now: bool,
    pub auto_increment: bool,
    /// An integer column's display width when declared with one other than its type's
    /// default (`INT(5)`, `BOOLEAN` as `tinyint(1)`). It changes only how the column is
    /// shown (SHOW CREATE TABLE, SHOW COLUMNS, `COLUMN_TYPE`, the result column's length),
    /// which applications read: Rails and Connector/J take `tinyint(1)` for a boolean.
    pub display_width: Option<u8>,
}

impl ColumnDef {
    /// The column's type as SHOW CREATE TABLE and SHOW COLUMNS print it.
    pub fn type_text(&self) -> String {
        self.ty.column_type(self.display_width)
    }
}

/// A secondary index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub name: String,
    pub columns: Vec<usize>,
    pub unique: bool,
    pub tree: String,
}

/// Table options as given (`ROW_FORMAT`, `KEY_BLOCK_SIZE`, `COMPRESSION`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableOptions {
    pub engine: Option<String>,
    pub row_format: Option<String>,
    pub key_block_size: Option<u32>,
    pub compression: Option<String>,
    pub comment: Option<String>,
}

/// A table's definition, as stored.
#[derive(Debug, Clone)]
pub struct TableDef {
    pub id: u64,
    pub db: String,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// Columns of the primary key; empty: a hidden row id.
    pub pk: Vec<usize>,
    pub indexes: Vec<IndexDef>,
    /// How the table's trees are stored; `TableFormat::primary`/`index` give each tree's
    /// format, for every tree made for the table (CREATE, CREATE INDEX, TRUNCATE).
    pub format: TableFormat,
    pub options: TableOptions,
    pub primary_tree: String,
}

/// An open table: its definition and engine trees.
pub struct Table {
    pub def: TableDef,
    pub types: Vec<SqlType>,
    pub primary: Tree,
    pub indexes: Vec<Tree>,
    /// Next AUTO_INCREMENT value (or hidden row id).
    pub next_id: AtomicU64,
    /// Index of the AUTO_INCREMENT column.
    pub auto_inc: Option<usize>,
    /// An `information_schema` table: rows come from the session, not from `primary`.
    pub virt: Option<system::SystemTable>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table({}.{})", self.def.db, self.def.name)
    }
}

impl Table {
    /// This table with another definition and index trees (CREATE/DROP INDEX); the rows, the
    /// AUTO_INCREMENT counter and the column types stay.
    pub fn with_indexes(&self, def: TableDef, indexes: Vec<Tree>) -> Table {
        debug_assert_eq!(def.indexes.len(), indexes.len());
        Table {
            def,
            types: self.types.clone(),
            primary: self.primary.clone(),
            indexes,
            next_id: AtomicU64::new(self.next_id.load(Ordering::Relaxed)),
            auto_inc: self.auto_inc,
            virt: self.virt,
        }
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.def
            .columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Encodes the primary key of `row` (or, without one, `hidden_id`).
    pub fn pk_key(&self, row: &[Value], hidden_id: Option<u64>) -> Vec<u8> {
        let mut k = Vec::with_capacity(16);
        if self.def.pk.is_empty() {
            k.push(1);
            k.extend_from_slice(&hidden_id.unwrap_or(0).to_be_bytes());
        } else {
            for &c in &self.def.pk {
                codec::encode_key(&mut k, &row[c], self.types[c]);
            }
        }
        k
    }

    /// The secondary-index key of `row` for index `i`: index columns, then the primary key.
    pub fn index_key(&self, i: usize, row: &[Value], pk: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(pk.len() + 16);
        for &c in &self.def.indexes[i].columns {
            codec::encode_key(&mut k, &row[c], self.types[c]);
        }
        k.extend_from_slice(pk);
        k
    }

    /// Length of the index-column prefix of an index key (the rest is the primary key).
    pub fn index_prefix_len(&self, i: usize, key: &[u8]) -> Result<usize, SqlError> {
        let mut at = 0;
        for &c in &self.def.indexes[i].columns {
            let n = codec::skip_key(&key[at..], self.types[c]).map_err(|e| {
                SqlError::corrupt(format!(
                    "index {} of table {}.{}: {e}",
                    self.def.indexes[i].name, self.def.db, self.def.name
                ))
            })?;
            at += n;
        }
        Ok(at)
    }

    pub fn decode_row(&self, bytes: &[u8]) -> Result<Vec<Value>, SqlError> {
        codec::decode_row(bytes, &self.types).map_err(|e| self.corrupt_row(e))
    }

    pub fn decode_some(&self, bytes: &[u8], wanted: &[bool]) -> Result<Vec<Value>, SqlError> {
        codec::decode_row_some(bytes, &self.types, wanted).map_err(|e| self.corrupt_row(e))
    }

    /// [`Table::decode_some`] into `row`, reusing its allocations (a scan's row buffer).
    pub fn decode_some_into(
        &self,
        bytes: &[u8],
        wanted: &[bool],
        row: &mut Vec<Value>,
    ) -> Result<(), SqlError> {
        codec::decode_row_some_into(bytes, &self.types, wanted, row)
            .map_err(|e| self.corrupt_row(e))
    }

    fn corrupt_row(&self, e: codec::CodecError) -> SqlError {
        SqlError::corrupt(format!(
            "row of table {}.{} (tree {}): {e}",
            self.def.db, self.def.name, self.def.primary_tree
        ))
    }
}

/// The in-memory catalog.
#[derive(Default)]
pub struct Catalog {
    pub dbs: BTreeMap<String, BTreeMap<String, Arc<Table>>>,
    pub next_object_id: u64,
    /// Accounts as stored (moved into the instance's [`crate::catalog::accounts::Accounts`] at open).
    pub accounts: Vec<crate::catalog::accounts::Account>,
}

impl Catalog {
    pub fn table(&self, db: &str, name: &str) -> Option<&Arc<Table>> {
        self.dbs.get(db)?.get(name)
    }

    /// Loads the catalog from its tree (creating the tree in a new database) and drops trees
    /// that no definition names (left by a crash in the middle of DDL).
    pub fn load(db: &Database) -> Result<(Catalog, Tree), SqlError> {
        let sys = match db.open_tree(CATALOG_TREE) {
            Ok(t) => t,
            Err(zipdb_engine::Error::Request(zipdb_engine::RequestError::NoSuchTree(_))) => db
                .create_tree(CATALOG_TREE, Some(Codec::None))
                .map_err(SqlError::engine)?,
            Err(e) => return Err(SqlError::engine(e)),
        };
        let mut cat = Catalog {
            next_object_id: 1,
            ..Catalog::default()
        };
        let mut defs = Vec::new();
        for kv in sys
            .range::<std::ops::RangeFull>(..)
            .map_err(SqlError::engine)?
        {
            let (k, v) = kv.map_err(SqlError::engine)?;
            match k.first() {
                Some(b'D') => {
                    let name = String::from_utf8_lossy(&k[2..]).into_owned();
                    cat.dbs.entry(name).or_default();
                }
                Some(b'T') => defs.push(TableDef::decode(&v).map_err(|e| {
                    SqlError::corrupt(format!(
                        "catalog entry {:?}: {e}",
                        String::from_utf8_lossy(&k)
                    ))
                })?),
                Some(&crate::catalog::accounts::KEY_PREFIX) => {
                    cat.accounts
                        .push(
                            crate::catalog::accounts::Account::decode(&k, &v).map_err(|e| {
                                SqlError::corrupt(format!(
                                    "catalog entry {:?}: {e}",
                                    String::from_utf8_lossy(&k)
                                ))
                            })?,
                        )
                }
                Some(b'N') if v.len() == 8 => {
                    cat.next_object_id = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
                }
                _ => {
                    return Err(SqlError::corrupt(format!(
                        "unknown catalog key {:?}",
                        String::from_utf8_lossy(&k)
                    )))
                }
            }
        }
        let mut named = std::collections::HashSet::new();
        for def in defs {
            named.insert(def.primary_tree.clone());
            named.extend(def.indexes.iter().map(|i| i.tree.clone()));
            let t = open_table(db, def)?;
            cat.dbs
                .entry(t.def.db.clone())
                .or_default()
                .insert(t.def.name.clone(), Arc::new(t));
        }
        for name in db.tree_names() {
            let ours = name.len() > 1
                && name.starts_with('z')
                && name[1..].bytes().all(|b| b.is_ascii_digit());
            if ours && !named.contains(&name) {
                db.drop_tree(&name).map_err(SqlError::engine)?;
            }
        }
        Ok((cat, sys))
    }
}

/// Opens the trees of a table and finds its next AUTO_INCREMENT value.
pub fn open_table(db: &Database, def: TableDef) -> Result<Table, SqlError> {
    let primary = db.open_tree(&def.primary_tree).map_err(SqlError::engine)?;
    let indexes = def
        .indexes
        .iter()
        .map(|i| db.open_tree(&i.tree).map_err(SqlError::engine))
        .collect::<Result<Vec<_>, _>>()?;
    let types: Vec<SqlType> = def.columns.iter().map(|c| c.ty).collect();
    let auto_inc = def.columns.iter().position(|c| c.auto_increment);
    let t = Table {
        def,
        types,
        primary,
        indexes,
        next_id: AtomicU64::new(1),
        auto_inc,
        virt: None,
    };
    let next = max_id(&t)?.saturating_add(1).max(1);
    t.next_id.store(next, Ordering::Relaxed);
    Ok(t)
}

/// The largest AUTO_INCREMENT value (or hidden row id) in the table, 0 if empty.
fn max_id(t: &Table) -> Result<u64, SqlError> {
    let last_key = |tree: &Tree| -> Result<Option<Vec<u8>>, SqlError> {
        match tree
            .range_rev::<std::ops::RangeFull>(..)
            .map_err(SqlError::engine)?
            .next()
        {
            None => Ok(None),
            Some(kv) => Ok(Some(kv.map_err(SqlError::engine)?.0)),
        }
    };
    if t.def.pk.is_empty() {
        return Ok(match last_key(&t.primary)? {
            Some(k) if k.len() == 9 => u64::from_be_bytes(k[1..9].try_into().expect("8 bytes")),
            _ => 0,
        });
    }
    let Some(ai) = t.auto_inc else { return Ok(0) };
    let to_u64 = |v: &Value| match v {
        Value::Int(i) => u64::try_from(*i).unwrap_or(0),
        Value::UInt(u) => *u,
        _ => 0,
    };
    if t.def.pk[0] == ai {
        // The first key column: the last key holds the largest value.
        return match t
            .primary
            .range_rev::<std::ops::RangeFull>(..)
            .map_err(SqlError::engine)?
            .next()
        {
            None => Ok(0),
            Some(kv) => {
                let (_, v) = kv.map_err(SqlError::engine)?;
                Ok(to_u64(&t.decode_row(&v)?[ai]))
            }
        };
    }
    // Elsewhere: a scan (only at open).
    let mut max = 0;
    for kv in t
        .primary
        .range::<std::ops::RangeFull>(..)
        .map_err(SqlError::engine)?
    {
        let (_, v) = kv.map_err(SqlError::engine)?;
        max = max.max(to_u64(&t.decode_row(&v)?[ai]));
    }
    Ok(max)
}

/// The table `name` of `information_schema` as a [`Table`] to compile a SELECT against.
/// `placeholder` is any open tree: the table needs a handle, and the executor never uses it
/// for a virtual table.
pub fn system_table(name: &str, placeholder: zipdb_engine::Tree) -> Result<Arc<Table>, SqlError> {
    let Some(&(canonical, kind)) = system::KINDS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
    else {
        return Err(SqlError::no_table(system::DB, name));
    };
    let cols = system::columns(kind);
    let def = TableDef {
        id: 0,
        db: system::DB.to_string(),
        name: canonical.to_string(),
        columns: cols
            .iter()
            .map(|(n, ty)| ColumnDef {
                name: n.to_string(),
                ty: *ty,
                nullable: true,
                default: None,
                default_now: false,
                auto_increment: false,
                display_width: None,
            })
            .collect(),
        pk: Vec::new(),
        indexes: Vec::new(),
        format: TableFormat::Codec(Codec::None),
        options: TableOptions::default(),
        primary_tree: String::new(),
    };
    Ok(Arc::new(Table {
        types: cols.iter().map(|(_, t)| *t).collect(),
        def,
        primary: placeholder,
        indexes: Vec::new(),
        next_id: AtomicU64::new(0),
        auto_inc: None,
        virt: Some(kind),
    }))
}

// ---- Definition encoding -------------------------------------------------------------------

/// Version 2: text keys hold utf8mb4_general_ci weights with accents folded, in the PAD SPACE
/// format of `codec.rs`. Version 1 definitions are otherwise the same; their text keys folded
/// case only and were escaped like binary keys.
const DEF_VERSION: u8 = 2;

struct W(Vec<u8>);

impl W {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn opt_str(&mut self, s: &Option<String>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
}

struct R<'a>(&'a [u8]);

impl<'a> R<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!("truncated: needs {n} bytes, has {}", self.0.len()));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| "name is not UTF-8".to_string())
    }
    fn opt_str(&mut self) -> Result<Option<String>, String> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(self.str()?),
        })
    }
}

/// A column's type: `tag u8, a u32, b u32`. An integer's `a` is its byte width, with a
/// declared display width other than the default in bits 8–15 (0: the default), so a
/// definition without one is what builds before display widths wrote, and such a build
/// refuses one with a width ("type parameter out of range") instead of misreading it.
fn put_type(w: &mut W, t: SqlType, display_width: Option<u8>) {
    let (tag, a, b) = match t {
        SqlType::Int { bytes, unsigned } => (
            1,
            u32::from(bytes) | u32::from(display_width.unwrap_or(0)) << 8,
            u32::from(unsigned),
        ),
        SqlType::Float => (2, 0, 0),
        SqlType::Double => (3, 0, 0),
        SqlType::Decimal { precision, scale } => (4, u32::from(precision), u32::from(scale)),
        SqlType::Char { len, binary } => (5, len, u32::from(binary)),
        SqlType::Varchar { len, binary } => (6, len, u32::from(binary)),
        SqlType::Text { max, binary } => (7, max, u32::from(binary)),
        SqlType::Date => (8, 0, 0),
        SqlType::DateTime { fsp } => (9, u32::from(fsp), 0),
        SqlType::Timestamp { fsp } => (10, u32::from(fsp), 0),
    };
    w.u8(tag);
    w.u32(a);
    w.u32(b);
}

fn get_type(r: &mut R) -> Result<(SqlType, Option<u8>), String> {
    let tag = r.u8()?;
    let a = r.u32()?;
    let raw_b = r.u32()?;
    let b = raw_b != 0;
    let small = |v: u32| u8::try_from(v).map_err(|_| format!("type parameter {v} out of range"));
    if tag == 1 {
        let width = small(a >> 8)?;
        return Ok((
            SqlType::Int {
                bytes: (a & 0xff) as u8,
                unsigned: b,
            },
            (width != 0).then_some(width),
        ));
    }
    let ty = match tag {
        2 => SqlType::Float,
        3 => SqlType::Double,
        4 => SqlType::Decimal {
            precision: small(a)?,
            scale: small(raw_b)?,
        },
        5 => SqlType::Char { len: a, binary: b },
        6 => SqlType::Varchar { len: a, binary: b },
        7 => SqlType::Text { max: a, binary: b },
        8 => SqlType::Date,
        9 => SqlType::DateTime { fsp: small(a)? },
        10 => SqlType::Timestamp { fsp: small(a)? },
        t => return Err(format!("unknown column type tag {t}")),
    };
    Ok((ty, None))
}

/// The name `COMPRESSION='...'` takes for this format (levels are not part of it).
pub fn format_name(f: TableFormat) -> &'static str {
    match f {
        TableFormat::Codec(Codec::None) => "none",
        TableFormat::Codec(Codec::Lz4) => "lz4",
        TableFormat::Codec(Codec::Zstd(_)) => "zstd",
        TableFormat::Codec(Codec::Zlib(_)) => "zlib",
        TableFormat::Codec(Codec::Trim) => "trim",
        TableFormat::Codec(Codec::ZstdDict) => "zstd-dict",
        TableFormat::Fsst => "fsst",
        TableFormat::FsstZstd => "fsst+zstd",
    }
}

/// The definition's "codec" byte for an fsst table. Whole-page codecs keep the page-image
/// codec ids they always had there (0–5), so a definition written before fsst tables existed
/// decodes unchanged, and a definition of any other table is still byte for byte what older
/// builds wrote (they read it back). An older build refuses an fsst table ("unknown codec").
const FSST_CODE: u8 = 16;
/// The codec byte of an fsst+zstd table (issue 19 step 8). Builds before it refuse the
/// definition ("unknown codec 17") as they refuse its trees' format in the engine catalog.
const FSST_ZSTD_CODE: u8 = 17;

fn format_code(f: TableFormat) -> (u8, i8) {
    match f {
        TableFormat::Codec(Codec::None) => (0, 0),
        TableFormat::Codec(Codec::Lz4) => (1, 0),
        TableFormat::Codec(Codec::Zstd(l)) => (2, l),
        TableFormat::Codec(Codec::Zlib(l)) => (3, l as i8),
        // Not reachable from SQL (COMPRESSION has no 'trim'); kept total and decodable so
        // that the match needs no panic.
        TableFormat::Codec(Codec::Trim) => (4, 0),
        // A cold-layer codec only (storage `dict`), not reachable from SQL either.
        TableFormat::Codec(Codec::ZstdDict) => (5, 0),
        TableFormat::Fsst => (FSST_CODE, 0),
        TableFormat::FsstZstd => (FSST_ZSTD_CODE, 0),
    }
}

fn format_from_code(code: u8, level: i8) -> Result<TableFormat, String> {
    Ok(match code {
        0 => TableFormat::Codec(Codec::None),
        1 => TableFormat::Codec(Codec::Lz4),
        2 => TableFormat::Codec(Codec::Zstd(level)),
        3 => TableFormat::Codec(Codec::Zlib(level as u8)),
        4 => TableFormat::Codec(Codec::Trim),
        5 => TableFormat::Codec(Codec::ZstdDict),
        FSST_CODE => TableFormat::Fsst,
        FSST_ZSTD_CODE => TableFormat::FsstZstd,
        c => return Err(format!("unknown codec {c}")),
    })
}

impl TableDef {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = W(Vec::with_capacity(256));
        w.u8(DEF_VERSION);
        w.u64(self.id);
        w.str(&self.db);
        w.str(&self.name);
        w.str(&self.primary_tree);
        let (c, l) = format_code(self.format);
        w.u8(c);
        w.u8(l as u8);
        w.u32(self.columns.len() as u32);
        for col in &self.columns {
            w.str(&col.name);
            put_type(&mut w, col.ty, col.display_width);
            w.u8(u8::from(col.nullable)
                | u8::from(col.auto_increment) << 1
                | u8::from(col.default_now) << 2);
            match &col.default {
                None => w.u8(0),
                Some(v) => {
                    w.u8(1);
                    let mut b = Vec::new();
                    codec::encode_row(&mut b, std::slice::from_ref(v), &[col.ty]);
                    w.bytes(&b);
                }
            }
        }
        w.u32(self.pk.len() as u32);
        for &c in &self.pk {
            w.u32(c as u32);
        }
        w.u32(self.indexes.len() as u32);
        for i in &self.indexes {
            w.str(&i.name);
            w.str(&i.tree);
            w.u8(u8::from(i.unique));
            w.u32(i.columns.len() as u32);
            for &c in &i.columns {
                w.u32(c as u32);
            }
        }
        w.opt_str(&self.options.engine);
        w.opt_str(&self.options.row_format);
        match self.options.key_block_size {
            None => w.u8(0),
            Some(k) => {
                w.u8(1);
                w.u32(k);
            }
        }
        w.opt_str(&self.options.compression);
        w.opt_str(&self.options.comment);
        w.0
    }

    pub fn decode(b: &[u8]) -> Result<TableDef, String> {
        let mut r = R(b);
        let v = r.u8()?;
        if v != DEF_VERSION && v != 1 {
            return Err(format!(
                "table definition version {v}, expected {DEF_VERSION}"
            ));
        }
        let id = r.u64()?;
        let db = r.str()?;
        let name = r.str()?;
        let primary_tree = r.str()?;
        let format = format_from_code(r.u8()?, r.u8()? as i8)?;
        let n = r.u32()? as usize;
        let mut columns = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            let name = r.str()?;
            let (ty, display_width) = get_type(&mut r)?;
            let flags = r.u8()?;
            let default = match r.u8()? {
                0 => None,
                _ => {
                    let bytes = r.bytes()?;
                    let mut v = codec::decode_row(bytes, &[ty]).map_err(|e| e.to_string())?;
                    Some(v.pop().unwrap_or(Value::Null))
                }
            };
            columns.push(ColumnDef {
                name,
                ty,
                nullable: flags & 1 != 0,
                auto_increment: flags & 2 != 0,
                default_now: flags & 4 != 0,
                default,
                display_width,
            });
        }
        let col = |r: &mut R| -> Result<usize, String> {
            let c = r.u32()? as usize;
            if c >= n {
                return Err(format!("column index {c} out of range"));
            }
            Ok(c)
        };
        let npk = r.u32()? as usize;
        let pk: Vec<usize> = (0..npk.min(n))
            .map(|_| col(&mut r))
            .collect::<Result<_, _>>()?;
        let ni = r.u32()? as usize;
        let mut indexes = Vec::new();
        for _ in 0..ni {
            let name = r.str()?;
            let tree = r.str()?;
            let unique = r.u8()? != 0;
            let nc = r.u32()? as usize;
            let columns = (0..nc.min(n))
                .map(|_| col(&mut r))
                .collect::<Result<_, _>>()?;
            indexes.push(IndexDef {
                name,
                columns,
                unique,
                tree,
            });
        }
        let engine = r.opt_str()?;
        let row_format = r.opt_str()?;
        let key_block_size = match r.u8()? {
            0 => None,
            _ => Some(r.u32()?),
        };
        let compression = r.opt_str()?;
        let comment = r.opt_str()?;
        if !r.0.is_empty() {
            return Err(format!("{} bytes after the definition", r.0.len()));
        }
        // A version 1 table keeps working unless a key holds text: its text keys are in a
        // format this build does not write or look up (and order and deduplicate non-ASCII
        // text by case-only folding), so lookups would miss rows and unique checks miss
        // duplicates silently. Refuse it, with what to do, rather than misread it.
        if v == 1 {
            let mut keyed = pk.iter().chain(indexes.iter().flat_map(|i| &i.columns));
            if let Some(&c) = keyed.find(|&&c| columns[c].ty.is_text()) {
                return Err(format!(
                    "table `{db}`.`{name}` was created by an older zipdb whose text keys fold \
                     case but not accents; its key on column `{}` is in a format this build \
                     does not read (utf8mb4_general_ci with accents folded). Dump the table \
                     with the older build and load it into this one",
                    columns[c].name
                ));
            }
        }
        Ok(TableDef {
            id,
            db,
            name,
            columns,
            pk,
            indexes,
            format,
            options: TableOptions {
                engine,
                row_format,
                key_block_size,
                compression,
                comment,
            },
            primary_tree,
        })
    }
}

/// Catalog keys.
pub fn db_key(db: &str) -> Vec<u8> {
    let mut k = b"D\0".to_vec();
    k.extend_from_slice(db.as_bytes());
    k
}

pub fn table_key(db: &str, table: &str) -> Vec<u8> {
    let mut k = b"T\0".to_vec();
    k.extend_from_slice(db.as_bytes());
    k.push(0);
    k.extend_from_slice(table.as_bytes());
    k
}

pub const NEXT_ID_KEY: &[u8] = b"N";

/// ER_NO_DEFAULT_FOR_FIELD (1364).
pub(crate) fn no_default(col: &ColumnDef) -> SqlError {
    SqlError::of(
        ErrorKind::NoDefaultForField,
        format!("Field '{}' doesn't have a default value", col.name),
    )
}

/// A NOT NULL column a statement must give a value: no DEFAULT, not filled by the server.
pub(crate) fn needs_value(col: &ColumnDef) -> bool {
    !col.nullable && col.default.is_none() && !col.auto_increment && !col.default_now
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(pk_ty: SqlType, index_ty: SqlType) -> TableDef {
        let col = |name: &str, ty| ColumnDef {
            name: name.to_string(),
            ty,
            nullable: false,
            default: None,
            default_now: false,
            auto_increment: false,
            display_width: None,
        };
        TableDef {
            id: 7,
            db: "d".into(),
            name: "t".into(),
            columns: vec![col("a", pk_ty), col("b", index_ty)],
            pk: vec![0],
            indexes: vec![IndexDef {
                name: "ib".into(),
                columns: vec![1],
                unique: true,
                tree: "t.ib".into(),
            }],
            format: TableFormat::Codec(Codec::None),
            options: TableOptions::default(),
            primary_tree: "t".into(),
        }
    }

    /// The definition's storage bytes: a definition written before fsst tables existed (built
    /// here byte by byte, in that layout) decodes to the same codec and re-encodes to the same
    /// bytes; an fsst table round-trips; an unknown code is refused.
    #[test]
    fn storage_formats_round_trip_and_old_definitions_decode() {
        let mut old = vec![2u8];
        old.extend_from_slice(&9u64.to_le_bytes());
        for s in ["d", "t", "z9"] {
            old.extend_from_slice(&(s.len() as u32).to_le_bytes());
            old.extend_from_slice(s.as_bytes());
        }
        old.extend_from_slice(&[2, 3]); // zstd, level 3
        old.extend_from_slice(&1u32.to_le_bytes()); // one column: `a` INT, NOT NULL
        old.extend_from_slice(&1u32.to_le_bytes());
        old.push(b'a');
        old.push(1);
        old.extend_from_slice(&4u32.to_le_bytes());
        old.extend_from_slice(&0u32.to_le_bytes());
        old.extend_from_slice(&[0, 0]); // flags, no default
        old.extend_from_slice(&1u32.to_le_bytes()); // primary key (a)
        old.extend_from_slice(&0u32.to_le_bytes());
        old.extend_from_slice(&0u32.to_le_bytes()); // no indexes
        old.extend_from_slice(&[0, 0, 0]); // engine, row format, key block size
        old.push(1); // COMPRESSION='zstd'
        old.extend_from_slice(&4u32.to_le_bytes());
        old.extend_from_slice(b"zstd");
        old.push(0); // comment
        let d = TableDef::decode(&old).unwrap();
        assert_eq!(d.format, TableFormat::Codec(Codec::Zstd(3)));
        assert_eq!((d.name.as_str(), d.primary_tree.as_str()), ("t", "z9"));
        assert_eq!(d.options.compression.as_deref(), Some("zstd"));
        assert_eq!(d.encode(), old);

        let int = SqlType::Int {
            bytes: 4,
            unsigned: false,
        };
        for f in [
            TableFormat::Fsst,
            TableFormat::FsstZstd,
            TableFormat::Codec(Codec::None),
            TableFormat::Codec(Codec::Lz4),
            TableFormat::Codec(Codec::Zstd(-5)),
            TableFormat::Codec(Codec::Zlib(9)),
        ] {
            let mut d = def(int, int);
            d.format = f;
            assert_eq!(TableDef::decode(&d.encode()).unwrap().format, f);
        }
        let mut d = def(int, int);
        d.format = TableFormat::Fsst;
        let mut b = d.encode();
        let at = 1 + 8 + (4 + 1) + (4 + 1) + (4 + 1);
        assert_eq!(b[at..at + 2], [FSST_CODE, 0]);
        d.format = TableFormat::FsstZstd;
        assert_eq!(d.encode()[at..at + 2], [FSST_ZSTD_CODE, 0]);
        b[at] = FSST_ZSTD_CODE + 1;
        let e = TableDef::decode(&b).unwrap_err();
        assert!(e.contains("unknown codec"), "{e}");
    }

    /// A declared display width round-trips in bits 8–15 of the type's first parameter; a
    /// column without one keeps the bytes older builds wrote (the test above decodes those).
    #[test]
    fn display_widths_round_trip() {
        let tiny = SqlType::Int {
            bytes: 1,
            unsigned: true,
        };
        let mut d = def(tiny, tiny);
        let plain = d.encode();
        d.columns[1].display_width = Some(1);
        d.columns[0].display_width = Some(255);
        let b = d.encode();
        assert_eq!(b.len(), plain.len());
        let back = TableDef::decode(&b).unwrap();
        let widths = |d: &TableDef| {
            d.columns
                .iter()
                .map(|c| c.display_width)
                .collect::<Vec<_>>()
        };
        assert_eq!(widths(&back), [Some(255), Some(1)]);
        assert_eq!(back.columns[1].type_text(), "tinyint(1) unsigned");
        assert_eq!(back.columns[0].type_text(), "tinyint(255) unsigned");
        d.columns[0].display_width = None;
        assert_eq!(
            TableDef::decode(&d.encode()).unwrap().columns[0].type_text(),
            "tinyint(3) unsigned"
        );
    }

    /// A definition written before accent folding (version 1) still loads unless one of its
    /// keys holds text, whose key bytes mean something else now.
    #[test]
    fn version_1_definitions_load_unless_a_key_holds_text() {
        let int = SqlType::Int {
            bytes: 4,
            unsigned: false,
        };
        let text = SqlType::Varchar {
            len: 10,
            binary: false,
        };
        let bin = SqlType::Varchar {
            len: 10,
            binary: true,
        };
        let v1 = |d: &TableDef| {
            let mut b = d.encode();
            assert_eq!(b[0], DEF_VERSION);
            b[0] = 1;
            b
        };
        for d in [def(int, int), def(int, bin), def(bin, int)] {
            assert!(TableDef::decode(&d.encode()).is_ok());
            assert!(TableDef::decode(&v1(&d)).is_ok());
        }
        for (d, col) in [(def(text, int), "a"), (def(int, text), "b")] {
            assert!(TableDef::decode(&d.encode()).is_ok());
            let e = TableDef::decode(&v1(&d)).unwrap_err();
            assert!(
                e.contains("older zipdb") && e.contains(&format!("column `{col}`")),
                "{e}"
            );
        }
        let mut b = def(int, int).encode();
        b[0] = 3;
        assert!(TableDef::decode(&b).is_err());
    }
}
