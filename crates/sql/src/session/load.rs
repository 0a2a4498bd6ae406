//! Runs `LOAD DATA LOCAL INFILE`: the client's file, lent by the sink as a `Read`, cut into
//! rows by exec/load.rs and inserted in batches through multi-row INSERT, so that conversions,
//! defaults, duplicates and their warnings are INSERT's.
//!
//! As in MariaDB, a LOCAL load treats duplicates and bad values as INSERT IGNORE does (the
//! server cannot stop the client's stream), unless REPLACE is named; the whole load is one
//! transaction, so a load that fails (the client goes away mid-file) leaves nothing behind.
//! Memory: one batch of rows, at most [`BATCH_ROWS`] rows or [`BATCH_BYTES`] bytes of text.

use crate::error::ErrorKind;
use crate::exec::load::{Reader, Spec};
use crate::expr::Expr;
use crate::front::load::{Load, OnDuplicate, Target};
use crate::instance::session::Session;
use crate::plan::dml::{Plan, PlanRoot};
use crate::session::sink::Collect;
use crate::session::{Out, Reply};
use crate::types::diag::{Warning, STORED_MAX};
use crate::types::result::Outcome;
use crate::types::value::Value;
use crate::SqlError;
use sqlparser::ast;

/// Rows per INSERT.
const BATCH_ROWS: usize = 1000;
/// Bytes of INSERT text per batch, past which a batch ends early.
const BATCH_BYTES: usize = 1 << 20;
/// A row's bound when `max_allowed_packet` cannot be read.
const LINE_MAX_DEFAULT: u64 = 16 << 20;

/// What the load did, for the OK packet.
#[derive(Default)]
struct Counts {
    records: u64,
    deleted: u64,
    skipped: u64,
    affected: u64,
}

impl Session {
    pub(super) fn load(&mut self, load: &Load, out: &mut Out<'_>) -> Result<Outcome, SqlError> {
        let spec = Spec::new(&load.format)?;
        if !load.local {
            return Err(crate::exec::load::server_file_refused());
        }
        if !self
            .inst
            .local_infile
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(local_disabled());
        }
        let db = match (&load.table.db, &self.db) {
            (Some(d), _) | (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(SqlError::of(ErrorKind::NoDbError, "No database selected"));
            }
        };
        let table = (self.env_lookup())(&db, &load.table.table)?;
        let targets: Vec<Target> = if load.targets.is_empty() {
            let cols = table.def.columns.iter();
            cols.map(|c| Target::Column(c.name.clone())).collect()
        } else {
            load.targets.clone()
        };
        let charset = Charset::named(load.charset.as_deref())?;
        let shape = Shape::new(&targets, &load.set, &table.def.columns, charset)?;
        let head = insert_head(load.duplicates, &db, &load.table.table, &shape.columns);
        let line_max = self
            .sysvar_u64("max_allowed_packet")
            .unwrap_or(LINE_MAX_DEFAULT)
            .min(usize::MAX as u64) as usize;
        // A client that did not offer CLIENT_LOCAL_FILES: MariaDB answers it as it answers
        // `local_infile` OFF.
        let Some(src) = out.sink.local_infile(&load.file) else {
            return Err(local_disabled());
        };
        let mut reader = Reader::new(src, spec, line_max)?;
        // Autocommit: the load is its own transaction. Otherwise it joins the open one (or
        // opens it, as any statement under autocommit=0 does) behind a savepoint, so that a
        // load that fails takes back its earlier batches and nothing else: statement
        // atomicity, as for any failed statement in a transaction.
        let own_txn = self.txn.is_none() && self.autocommit;
        if self.txn.is_none() {
            self.begin(self.isolation);
            if own_txn {
                if let Some(open) = self.txn.as_mut() {
                    // Not an explicit transaction: no IN_TRANS flag while it runs.
                    open.explicit = false;
                }
            }
        }
        let sp = match (own_txn, self.txn.as_mut()) {
            (false, Some(open)) => Some(open.txn.savepoint()),
            _ => None,
        };
        let r = self.load_rows(&mut reader, load, &head, &shape);
        // The rest of the client's file is read (and dropped) here, before the answer.
        drop(reader);
        match r {
            Ok(n) => {
                match (own_txn, sp) {
                    (true, _) => {
                        if let Some(t) = self.txn.take() {
                            t.txn.commit().map_err(SqlError::engine)?;
                        }
                    }
                    (false, Some(sp)) => {
                        if let Some(open) = self.txn.as_mut() {
                            open.txn.release(sp);
                        }
                    }
                    (false, None) => {}
                }
                let warnings = self.condition_count();
                Ok(Outcome::Done {
                    affected_rows: n.affected,
                    last_insert_id: 0,
                    info: format!(
                        "Records: {}  Deleted: {}  Skipped: {}  Warnings: {}",
                        n.records, n.deleted, n.skipped, warnings
                    ),
                })
            }
            Err(e) => {
                if own_txn {
                    if let Some(t) = self.txn.take() {
                        t.txn.rollback();
                    }
                } else if let (Some(sp), Some(open)) = (sp, self.txn.as_mut()) {
                    // (A conflict error rolled the whole transaction back already: no
                    // transaction is left to undo the statement in.)
                    open.txn.rollback_to(sp);
                }
                Err(e)
            }
        }
    }

    fn load_rows(
        &mut self,
        reader: &mut Reader<Box<dyn std::io::Read + '_>>,
        load: &Load,
        head: &str,
        shape: &Shape,
    ) -> Result<Counts, SqlError> {
        reader.skip_rows(load.ignore_lines)?;
        let mut n = Counts::default();
        let mut row = Vec::new();
        // The last row's fields, for the user variables it sets (MariaDB leaves them holding
        // the last row's values).
        let mut last: Option<Vec<Option<Vec<u8>>>> = None;
        let mut text = String::new();
        let mut zeroed = Vec::new();
        // Without SET expressions the rows go to the INSERT's plan as values: the plan is
        // compiled once from the head and one row of DEFAULTs, and each batch replaces its
        // rows (no text printed and parsed again).
        let mut direct = match shape.direct() {
            true => Some(self.insert_template(head, shape.columns.len())?),
            false => None,
        };
        let mut values: Vec<Vec<Expr>> = Vec::new();
        // REPLACE: strict mode applies to a LOCAL load that does not IGNORE (MariaDB).
        let strict = load.duplicates == OnDuplicate::Replace;
        let mut more = true;
        while more {
            text.clear();
            text.push_str(head);
            values.clear();
            let mut bytes = 0usize;
            let mut rows = 0u64;
            while rows < BATCH_ROWS as u64 && text.len().max(bytes) < BATCH_BYTES {
                if !reader.next_row(&mut row)? {
                    more = false;
                    break;
                }
                n.records += 1;
                rows += 1;
                // A short row warns once per column it misses: a variable it does not reach
                // is NULL without a word, as in MariaDB.
                self.width_warning(row.len(), shape, n.records, strict)?;
                zeroed.clear();
                if direct.is_some() {
                    bytes += row
                        .iter()
                        .map(|f| f.as_ref().map_or(8, |b| b.len() + 8))
                        .sum::<usize>();
                    values.push(shape.values(&row, &mut zeroed));
                } else {
                    text.push_str(if rows == 1 { "(" } else { ",(" });
                    shape.tuple(&row, &mut text, &mut zeroed);
                    text.push(')');
                }
                for &k in &zeroed {
                    let column = &shape.columns[k];
                    let message = format!(
                        "Column set to default value; NULL supplied to NOT NULL column \
                         '{column}' at row {}",
                        n.records
                    );
                    self.load_warning(ErrorKind::WarnNullToNotnull, message, 1, strict)?;
                }
                if !shape.vars.is_empty() {
                    last.get_or_insert_with(Vec::new).clone_from(&row);
                }
            }
            if rows == 0 {
                break;
            }
            // KILL QUERY or the deadline while the rows were read (the batch's own run checks
            // again after it).
            if self.process.interrupt.is_set() {
                return Err(self.process.interrupt.error());
            }
            let affected = match direct.as_mut() {
                Some(root) => self.insert_values(root, &mut values)?,
                None => self.insert_batch(&text)?,
            };
            n.affected += affected;
            match load.duplicates {
                OnDuplicate::Replace => n.deleted += affected.saturating_sub(rows),
                _ => n.skipped += rows.saturating_sub(affected),
            }
        }
        if let Some(row) = last {
            for (name, i) in &shape.vars {
                let v = match row.get(*i) {
                    Some(Some(b)) => Value::Str(shape.charset.text(b)),
                    _ => Value::Null,
                };
                self.user_vars.insert(name.clone(), v);
            }
        }
        Ok(n)
    }

    /// 1261 for each column a row of `got` fields misses, 1262 for a row of more fields
    /// than targets; kept within the stored warnings' bound, counted beyond it. `strict`
    /// (REPLACE: strict mode applies to a LOCAL load that does not IGNORE) makes the first
    /// one the statement's error, as in MariaDB.
    fn width_warning(
        &mut self,
        got: usize,
        shape: &Shape,
        row: u64,
        strict: bool,
    ) -> Result<(), SqlError> {
        let (kind, message, times) = if got > shape.width {
            (
                ErrorKind::WarnTooManyRecords,
                format!(
                    "Row {row} was truncated; it contained more data than there were input \
                     columns"
                ),
                1,
            )
        } else {
            let missing = shape.column_at[got.min(shape.column_at.len())..]
                .iter()
                .filter(|c| **c)
                .count();
            if missing == 0 {
                return Ok(());
            }
            (
                ErrorKind::WarnTooFewRecords,
                format!("Row {row} doesn't contain data for all columns"),
                missing,
            )
        };
        self.load_warning(kind, message, times, strict)
    }

    /// A warning of the load's own, `times` over (or its error when `strict`).
    fn load_warning(
        &mut self,
        kind: ErrorKind,
        message: String,
        times: usize,
        strict: bool,
    ) -> Result<(), SqlError> {
        if strict {
            return Err(SqlError::of(kind, message));
        }
        self.fresh_diag();
        for _ in 0..times {
            if self.warnings.len() < STORED_MAX {
                self.warnings.push(Warning {
                    level: "Warning",
                    code: kind.code(),
                    message: message.clone(),
                });
            } else {
                self.warnings_dropped += 1;
            }
        }
        Ok(())
    }

    /// The INSERT's plan for `head` and one row of DEFAULTs, whose rows each batch replaces.
    fn insert_template(&mut self, head: &str, width: usize) -> Result<PlanRoot, SqlError> {
        let mut text = String::from(head);
        text.push('(');
        for i in 0..width {
            text.push_str(if i == 0 { "DEFAULT" } else { ",DEFAULT" });
        }
        text.push(')');
        let mut stmts = crate::front::parse::parse_ast(&text)?;
        let (Some(stmt), None) = (stmts.pop(), stmts.pop()) else {
            return Err(SqlError::internal(
                "LOAD DATA's INSERT is not one statement",
            ));
        };
        let mut c = crate::bind::compile::Compiler::new();
        let root = self.compile(&stmt, &mut c)?;
        match &root.plan {
            Plan::Insert(p) if p.rows.len() == 1 && p.rows[0].len() == width => Ok(root),
            _ => Err(SqlError::internal("LOAD DATA's INSERT plan")),
        }
    }

    /// Runs the template's INSERT over `values` (taken); the rows it changed.
    fn insert_values(
        &mut self,
        root: &mut PlanRoot,
        values: &mut Vec<Vec<Expr>>,
    ) -> Result<u64, SqlError> {
        if let Plan::Insert(p) = &mut root.plan {
            std::mem::swap(&mut p.rows, values);
        }
        let r = self.run_insert(root);
        if let Plan::Insert(p) = &mut root.plan {
            std::mem::swap(&mut p.rows, values);
        }
        r
    }

    /// Runs one INSERT of the load's; the rows it changed.
    fn insert_batch(&mut self, text: &str) -> Result<u64, SqlError> {
        let mut stmts = crate::front::parse::parse_ast(text)?;
        let (Some(stmt), None) = (stmts.pop(), stmts.pop()) else {
            return Err(SqlError::internal(
                "LOAD DATA's INSERT is not one statement",
            ));
        };
        let mut c = crate::bind::compile::Compiler::new();
        let root = self.compile(&stmt, &mut c)?;
        self.run_insert(&root)
    }

    fn run_insert(&mut self, root: &PlanRoot) -> Result<u64, SqlError> {
        let mut sink = Collect::default();
        let mut out = Out {
            sink: &mut sink,
            more: false,
        };
        match self.execute_plan(root, &[], &mut out)? {
            Reply::Whole(Outcome::Done { affected_rows, .. }) => Ok(affected_rows),
            _ => Err(SqlError::internal("LOAD DATA's INSERT returned rows")),
        }
    }
}

fn local_disabled() -> SqlError {
    SqlError::of(
        ErrorKind::LoadInfileCapabilityDisabled,
        "The used command is not allowed because the zipdb server or client has disabled the \
         local infile capability",
    )
}

/// How a row of the file becomes one VALUES tuple: the INSERT's columns, what each gets,
/// and the user variables the row sets.
struct Shape {
    columns: Vec<String>,
    slots: Vec<Slot>,
    /// Fields a row should have: one per target.
    width: usize,
    /// `@name` targets (lower case) and their field.
    vars: Vec<(String, usize)>,
    /// Per target: whether it is a column (a row that misses it warns).
    column_at: Vec<bool>,
    charset: Charset,
}

/// The file's character set (`CHARACTER SET`): how its bytes become the statement's text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Charset {
    /// utf8mb4 (the default: the database's) and its subsets: invalid bytes are replaced.
    Utf8,
    /// MariaDB's latin1 (Windows-1252): every byte is a character.
    Latin1,
    /// Bytes as they are: a field that is not UTF-8 goes as a hex literal.
    Binary,
}

impl Charset {
    fn named(name: Option<&str>) -> Result<Charset, SqlError> {
        let Some(name) = name else {
            return Ok(Charset::Utf8);
        };
        match name.to_ascii_lowercase().as_str() {
            "utf8mb4" | "utf8" | "utf8mb3" | "ascii" | "default" => Ok(Charset::Utf8),
            "latin1" => Ok(Charset::Latin1),
            "binary" => Ok(Charset::Binary),
            _ => Err(SqlError::of(
                ErrorKind::UnknownCharacterSet,
                format!("Unknown character set: '{name}'"),
            )),
        }
    }

    /// A field's text (a user variable's value).
    fn text(self, bytes: &[u8]) -> String {
        match self {
            Charset::Latin1 => bytes.iter().map(|&b| latin1(b)).collect(),
            Charset::Utf8 | Charset::Binary => String::from_utf8_lossy(bytes).into_owned(),
        }
    }

    /// A field as the value its literal (below) compiles to.
    fn value(self, bytes: &[u8]) -> Value {
        match (self, std::str::from_utf8(bytes)) {
            (Charset::Latin1, _) => Value::Str(self.text(bytes)),
            (Charset::Binary, Err(_)) => Value::Bytes(bytes.to_vec()),
            (_, Ok(s)) => Value::Str(s.to_string()),
            (Charset::Utf8, Err(_)) => Value::Str(String::from_utf8_lossy(bytes).into_owned()),
        }
    }

    /// A field as a literal of the INSERT.
    fn literal(self, out: &mut String, bytes: &[u8]) {
        match (self, std::str::from_utf8(bytes)) {
            (Charset::Latin1, _) => quote(out, &self.text(bytes)),
            (Charset::Binary, Err(_)) => {
                out.push_str("X'");
                for b in bytes {
                    out.push_str(&format!("{b:02X}"));
                }
                out.push('\'');
            }
            (_, Ok(s)) => quote(out, s),
            (Charset::Utf8, Err(_)) => quote(out, &String::from_utf8_lossy(bytes)),
        }
    }
}

/// A Windows-1252 byte as a character; the five bytes it leaves undefined map to the C1
/// controls of the same number, as MariaDB's latin1 does.
fn latin1(b: u8) -> char {
    const HIGH: [u16; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    match b {
        0x80..=0x9F => char::from_u32(u32::from(HIGH[usize::from(b - 0x80)])).unwrap_or('?'),
        _ => char::from(b),
    }
}

enum Slot {
    /// The row's field: `DEFAULT` when the row is short. With the column's zero when it is
    /// NOT NULL: `\N` gives it with 1263, as in MariaDB.
    Field(usize, Option<&'static str>),
    /// A SET expression, printed with the row's fields in place of the `@var`s and columns
    /// it reads.
    Expr(Vec<Piece>),
}

enum Piece {
    Text(String),
    /// A field as a literal: NULL when the row is short (MariaDB's value for a variable the
    /// row did not reach).
    Field(usize),
}

/// Marks a field's place in a printed SET expression; never in printed SQL otherwise.
const MARK: char = '\u{1}';

impl Shape {
    fn new(
        targets: &[Target],
        set: &[(String, ast::Expr)],
        defs: &[crate::catalog::ColumnDef],
        charset: Charset,
    ) -> Result<Shape, SqlError> {
        // The last of several targets of one name is the one a SET expression reads.
        let field_of = |name: &str, var: bool| {
            targets.iter().rposition(|t| match t {
                Target::Var(v) => var && v.eq_ignore_ascii_case(name),
                Target::Column(c) => !var && c.eq_ignore_ascii_case(name),
            })
        };
        let mut columns = Vec::new();
        let mut slots = Vec::new();
        let mut vars = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            match t {
                // A column that SET assigns gets SET's value (MariaDB: SET runs after the
                // fields are stored).
                Target::Column(c) if set.iter().any(|(s, _)| s.eq_ignore_ascii_case(c)) => {}
                Target::Column(c) => {
                    let def = defs.iter().find(|d| d.name.eq_ignore_ascii_case(c));
                    columns.push(c.clone());
                    slots.push(Slot::Field(i, def.and_then(zero_of)));
                }
                Target::Var(v) => vars.push((v.trim_matches('`').to_ascii_lowercase(), i)),
            }
        }
        for (col, e) in set {
            columns.push(col.clone());
            slots.push(Slot::Expr(template(e, &field_of)?));
        }
        Ok(Shape {
            columns,
            slots,
            width: targets.len(),
            vars,
            column_at: targets
                .iter()
                .map(|t| matches!(t, Target::Column(_)))
                .collect(),
            charset,
        })
    }

    /// Whether rows can go as values (no SET expression to print per row).
    fn direct(&self) -> bool {
        !self.columns.is_empty() && self.slots.iter().all(|s| matches!(s, Slot::Field(..)))
    }

    /// One row as the INSERT's expressions (constants, DEFAULT for a field the row lacks);
    /// the columns given their zero for `\N` go to `zeroed`.
    fn values(&self, row: &[Option<Vec<u8>>], zeroed: &mut Vec<usize>) -> Vec<Expr> {
        let mut out = Vec::with_capacity(self.slots.len());
        for (k, slot) in self.slots.iter().enumerate() {
            let Slot::Field(i, zero) = slot else {
                // Not reached: `direct` holds only fields.
                out.push(Expr::Const(Value::Null));
                continue;
            };
            out.push(match (row.get(*i), zero) {
                (Some(Some(bytes)), _) => Expr::Const(self.charset.value(bytes)),
                (Some(None), Some(z)) => {
                    zeroed.push(k);
                    Expr::Const(match *z {
                        "0" => Value::Int(0),
                        _ => Value::Str(String::new()),
                    })
                }
                (Some(None), None) => Expr::Const(Value::Null),
                // What the binder makes of DEFAULT in VALUES.
                (None, _) => Expr::column_default(),
            });
        }
        out
    }

    /// One row's values, comma separated; the columns given their zero for `\N` go to
    /// `zeroed`.
    fn tuple(&self, row: &[Option<Vec<u8>>], text: &mut String, zeroed: &mut Vec<usize>) {
        for (k, slot) in self.slots.iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            match slot {
                Slot::Field(i, zero) => match (row.get(*i), zero) {
                    (Some(Some(bytes)), _) => self.charset.literal(text, bytes),
                    (Some(None), Some(z)) => {
                        text.push_str(z);
                        zeroed.push(k);
                    }
                    (Some(None), None) => text.push_str("NULL"),
                    (None, _) => text.push_str("DEFAULT"),
                },
                Slot::Expr(pieces) => {
                    text.push('(');
                    for p in pieces {
                        match p {
                            Piece::Text(t) => text.push_str(t),
                            Piece::Field(i) => match row.get(*i) {
                                Some(Some(bytes)) => self.charset.literal(text, bytes),
                                _ => text.push_str("NULL"),
                            },
                        }
                    }
                    text.push(')');
                }
            }
        }
    }
}

/// What MariaDB stores for `\N` in a NOT NULL column (it resets the field): numbers 0,
/// strings empty. `None`: the column takes NULL (nullable, or AUTO_INCREMENT, which makes a
/// value of it) or a type whose zero zipdb does not store (dates: INSERT's 1048 then).
fn zero_of(def: &crate::catalog::ColumnDef) -> Option<&'static str> {
    use crate::types::sqltype::SqlType as T;
    if def.nullable || def.auto_increment {
        return None;
    }
    match def.ty {
        T::Int { .. } | T::Float | T::Double | T::Decimal { .. } => Some("0"),
        T::Char { .. } | T::Varchar { .. } | T::Text { .. } => Some("''"),
        T::Date | T::DateTime { .. } | T::Timestamp { .. } => None,
    }
}

/// A SET expression as text with a mark for each `@var` and column that names a target: the
/// row's field goes there. Other `@var`s stay (the user variable's value before the load).
fn template(
    e: &ast::Expr,
    field_of: &dyn Fn(&str, bool) -> Option<usize>,
) -> Result<Vec<Piece>, SqlError> {
    if e.to_string().contains(MARK) {
        return Err(SqlError::unsupported(
            "a LOAD DATA SET expression holding the character U+0001",
        ));
    }
    let mut e = e.clone();
    let _ = ast::visit_expressions_mut(&mut e, |x| {
        if let ast::Expr::Identifier(id) = x {
            let v = &id.value;
            let field = match v.strip_prefix('@') {
                Some(var) if !var.starts_with('@') => field_of(var.trim_matches('`'), true),
                Some(_) => None,
                None => field_of(v, false),
            };
            if let Some(i) = field {
                *x = ast::Expr::Identifier(ast::Ident::new(format!("{MARK}{i}{MARK}")));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let printed = e.to_string();
    let mut pieces = Vec::new();
    for (k, part) in printed.split(MARK).enumerate() {
        if k % 2 == 0 {
            if !part.is_empty() {
                pieces.push(Piece::Text(part.to_string()));
            }
        } else {
            let i = part
                .parse()
                .map_err(|_| SqlError::internal("LOAD DATA's SET expression mark"))?;
            pieces.push(Piece::Field(i));
        }
    }
    Ok(pieces)
}

/// `INSERT IGNORE|REPLACE INTO `db`.`t` (`a`, ...) VALUES `.
fn insert_head(dup: OnDuplicate, db: &str, table: &str, columns: &[String]) -> String {
    let verb = match dup {
        OnDuplicate::Replace => "REPLACE",
        // LOCAL: errors on rows become warnings, as in MariaDB.
        OnDuplicate::Ignore | OnDuplicate::Error => "INSERT IGNORE",
    };
    let mut s = format!("{verb} INTO {}.{} (", ident(db), ident(table));
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&ident(c));
    }
    s.push_str(") VALUES ");
    s
}

fn ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Text as a string literal.
fn quote(out: &mut String, text: &str) {
    out.push('\'');
    for ch in text.chars() {
        match ch {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
