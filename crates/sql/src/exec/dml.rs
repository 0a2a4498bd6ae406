//! DML execution: storing values, row writes, and the plans of INSERT/REPLACE, UPDATE and
//! DELETE run against a transaction (compiled by [`crate::bind::dml`]).

use std::cmp::Ordering;
use std::ops::Bound;

use zipdb_engine::Transaction;

use crate::catalog::{needs_value, no_default, Table};
use crate::error::{ErrorKind, SqlError};
use crate::exec::locked::Locked;
use crate::exec::op::materialize::Materialized;
use crate::exec::operator::{self, reads_table};
use crate::exec::scan::scan_rows;
use crate::exec::subquery::SubCtx;
use crate::expr::{Ctx, Expr};
use crate::plan::access::Access;
use crate::plan::dml::{DeletePlan, InsertMode, InsertPlan, UpdatePlan};
use crate::plan::select::{SelectPlan, Subquery};
use crate::types::value::Value;

// ---- Storing values --------------------------------------------------------------------------

/// Stores `v` in column `c` of `t` for the statement's row `row` (MariaDB's `Field::store`, see
/// [`crate::types::store`]): notes always go to `n`; any other loss fails the statement when `strict`,
/// and is a warning beside the clipped value when not (`IGNORE`).
pub fn coerce(
    v: Value,
    t: &Table,
    c: usize,
    row: u64,
    strict: bool,
    n: &mut DmlCount,
) -> Result<Value, SqlError> {
    let col = &t.def.columns[c];
    let (v, issues) = crate::types::convert::store::convert(v, col.ty, col.nullable);
    if issues.is_empty() {
        return Ok(v);
    }
    let dest = crate::types::convert::store::Dest {
        db: &t.def.db,
        table: &t.def.name,
        column: &col.name,
        row,
    };
    if strict {
        if let Some(i) = issues.iter().find(|i| !i.is_note()) {
            return Err(i.error(&dest));
        }
    }
    for i in &issues {
        let (level, kind, message) = i.warning(&dest);
        n.warn(level, kind, message);
    }
    Ok(v)
}

/// Converts a column's DEFAULT for storage: any loss is an error, except the rounding notes
/// MariaDB accepts for numbers and dates (a string cut to the length, even of spaces, is not);
/// `true` with the value when such a note is due.
pub fn coerce_default(
    v: Value,
    col: &crate::catalog::ColumnDef,
) -> Result<(Value, bool), SqlError> {
    let (v, issues) = crate::types::convert::store::convert(v, col.ty, col.nullable);
    let dest = crate::types::convert::store::Dest {
        db: "",
        table: "",
        column: &col.name,
        row: 1,
    };
    match issues.iter().find(|i| !i.is_note() || col.ty.is_string()) {
        Some(i) => Err(i.error(&dest)),
        None => Ok((v, !issues.is_empty())),
    }
}

/// The unique secondary indexes in the order MariaDB keeps keys (after PRIMARY): those over
/// NOT NULL columns first, then the others, each in the order defined. Duplicates are found,
/// and REPLACE's "last unique key" is decided, in this order.
fn unique_order(t: &Table) -> Vec<usize> {
    let nullable = |i: usize| {
        t.def.indexes[i]
            .columns
            .iter()
            .any(|&c| t.def.columns[c].nullable)
    };
    let (mut a, b): (Vec<usize>, Vec<usize>) = (0..t.indexes.len())
        .filter(|&i| t.def.indexes[i].unique)
        .partition(|&i| !nullable(i));
    a.extend(b);
    a
}

/// A DEFAULT whose bytes in MariaDB's record are not those of an emptied field (zero, '',
/// the zero date): see the unchanged case of ON DUPLICATE KEY UPDATE.
fn default_is_not_zero(col: &crate::catalog::ColumnDef) -> bool {
    match &col.default {
        None | Some(Value::Null) => false,
        Some(Value::Str(s)) => !s.trim_end_matches(' ').is_empty(),
        Some(Value::Bytes(b)) => !b.is_empty(),
        Some(Value::Date(p) | Value::DateTime(p)) => *p != 0,
        Some(v) => v.truth() != Some(false),
    }
}

/// Exact equality of stored values (for "rows changed" counts).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        _ => {
            a.sql_cmp(b) == Some(Ordering::Equal)
                && std::mem::discriminant(a) == std::mem::discriminant(b)
        }
    }
}

/// Text of a key for a duplicate-key message.
fn key_text(row: &[Value], cols: &[usize]) -> String {
    cols.iter()
        .map(|&c| row[c].to_string_lossy().unwrap_or_else(|| "NULL".into()))
        .collect::<Vec<_>>()
        .join("-")
}

// ---- Row writes (shared by INSERT, UPDATE, DELETE) ---------------------------------------

pub(super) fn eng(e: zipdb_engine::Error) -> SqlError {
    SqlError::engine(e)
}

/// Finds a row other than those at `own` (primary keys) holding the same values in unique
/// index `i`, as the newest committed state plus this transaction's writes show it. Locks the
/// index prefix so that concurrent inserters of the same value serialise.
fn unique_conflict(
    txn: &mut Transaction,
    t: &Table,
    i: usize,
    row: &[Value],
    own: &[&[u8]],
) -> Result<Option<Vec<u8>>, SqlError> {
    let idx = &t.def.indexes[i];
    if idx.columns.iter().any(|&c| row[c].is_null()) {
        return Ok(None);
    }
    let mut prefix = Vec::new();
    for &c in &idx.columns {
        crate::catalog::codec::encode_key(&mut prefix, &row[c], t.types[c]);
    }
    let tree = &t.indexes[i];
    // A lock on the prefix itself (no entry has that exact key).
    txn.get_for_update(tree, &prefix).map_err(eng)?;
    let mut end = prefix.clone();
    end.push(0xff);
    let mut hi = prefix.clone();
    let hi_b = match prefix_successor(&mut hi) {
        true => Bound::Excluded(hi.as_slice()),
        false => Bound::Unbounded,
    };
    let lo_b = Bound::Excluded(prefix.as_slice());
    for (k, v) in txn.written_range(tree, lo_b, hi_b) {
        if v.is_some() && !own.contains(&&k[prefix.len()..]) {
            return Ok(Some(k[prefix.len()..].to_vec()));
        }
    }
    for kv in tree
        .range::<(Bound<&[u8]>, Bound<&[u8]>)>((lo_b, hi_b))
        .map_err(eng)?
    {
        let (k, _) = kv.map_err(eng)?;
        if own.contains(&&k[prefix.len()..]) {
            continue;
        }
        if txn.written(tree, &k) == Some(None) {
            continue;
        }
        return Ok(Some(k[prefix.len()..].to_vec()));
    }
    Ok(None)
}

fn prefix_successor(v: &mut Vec<u8>) -> bool {
    while let Some(last) = v.pop() {
        if last < 0xff {
            v.push(last + 1);
            return true;
        }
    }
    false
}

pub(super) fn encode_row(t: &Table, row: &[Value]) -> Vec<u8> {
    let mut b = Vec::with_capacity(64);
    crate::catalog::codec::encode_row(&mut b, row, &t.types);
    b
}

/// Deletes a row and its index entries.
fn delete_row(txn: &mut Transaction, t: &Table, pk: &[u8], row: &[Value]) -> Result<(), SqlError> {
    txn.delete(&t.primary, pk).map_err(eng)?;
    for i in 0..t.indexes.len() {
        let k = t.index_key(i, row, pk);
        // The entry ends with the row's key, whose lock the delete above took.
        txn.delete_covered(&t.indexes[i], &k, (&t.primary, pk))
            .map_err(eng)?;
    }
    Ok(())
}

// ---- INSERT ------------------------------------------------------------------------------

/// Where an inserted row's values come from.
#[derive(Clone, Copy)]
pub(super) enum Source<'a> {
    /// A row of INSERT … SELECT, one value per named column.
    Selected(&'a [Value]),
    /// A VALUES row's expressions.
    Exprs(&'a [Expr]),
}

/// Outcome counters of a DML statement.
#[derive(Debug, Default, Clone)]
pub struct DmlCount {
    pub affected: u64,
    pub matched: u64,
    pub changed: u64,
    /// The info string's "Duplicates": rows INSERT IGNORE skipped, rows REPLACE deleted,
    /// rows ON DUPLICATE KEY UPDATE changed.
    pub duplicates: u64,
    pub records: u64,
    pub warnings: u64,
    /// The warnings themselves (level, kind, message), for SHOW WARNINGS.
    pub warns: Vec<(&'static str, ErrorKind, String)>,
    /// First AUTO_INCREMENT value generated (LAST_INSERT_ID()).
    pub first_id: Option<u64>,
    /// INSERT ... SELECT: MySQL reports its Records/Duplicates info even for one row.
    pub from_select: bool,
}

impl DmlCount {
    pub fn warn(&mut self, level: &'static str, kind: ErrorKind, message: String) {
        self.warnings += 1;
        self.warns.push((level, kind, message));
    }
}

impl InsertPlan {
    /// `reader`: a transaction the SELECT of INSERT … SELECT may read through while rows are
    /// written through `txn` (see [`InsertPlan::insert_selected`]).
    pub fn execute(
        &self,
        txn: &mut Transaction,
        reader: Option<&Transaction>,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<DmlCount, SqlError> {
        let t = &*self.table;
        let strict = self.mode != InsertMode::Ignore;
        let mut n = DmlCount {
            from_select: self.select.is_some(),
            ..DmlCount::default()
        };
        // Columns that must have a value and get none: MariaDB checks once per statement, and
        // counts a column ON DUPLICATE KEY UPDATE assigns as given (it then takes the implicit
        // default, silently). Strict: the first one fails the statement; IGNORE: one warning
        // each, and the implicit default.
        let mut named = vec![false; t.types.len()];
        for &c in self
            .columns
            .iter()
            .chain(self.on_dup.iter().map(|(c, _)| c))
        {
            named[c] = true;
        }
        for (i, col) in t.def.columns.iter().enumerate() {
            if !named[i] && needs_value(col) {
                if strict {
                    return Err(no_default(col));
                }
                let e = no_default(col);
                n.warn("Warning", e.kind(), e.into_message());
            }
        }
        // Rows stored or changed (MariaDB's "copied"): IGNORE's Duplicates are the rest.
        let mut copied = 0u64;
        match &self.select {
            None if self.batches() => {
                copied += self.insert_batched(txn, ctx, &mut n)?;
            }
            None => {
                for (ri, exprs) in self.rows.iter().enumerate() {
                    let rowno = ri as u64 + 1;
                    copied += self.store(txn, ctx, rowno, Source::Exprs(exprs), &mut n)?;
                }
            }
            Some(p) => copied += self.insert_selected(p, txn, reader, ctx, subs, &mut n)?,
        }
        if self.mode == InsertMode::Ignore {
            n.duplicates = n.records - copied;
        }
        Ok(n)
    }

    /// Builds one row from its source (selected values, or the VALUES expressions) with the
    /// table's defaults, AUTO_INCREMENT and coercions, and inserts it; returns how many rows
    /// it stored or changed (0 or 1).
    fn store(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        rowno: u64,
        src: Source<'_>,
        n: &mut DmlCount,
    ) -> Result<u64, SqlError> {
        let (pk, row) = self.build(ctx, rowno, src, n)?;
        let copied = self.insert_one(txn, &self.table, pk, row, rowno, ctx, n)?;
        ctx.check_pending(txn.pending_bytes())?;
        Ok(copied)
    }

    /// The row `store` inserts, and its primary key: values, defaults, AUTO_INCREMENT (taken
    /// from the table's counter here) and coercions, with their warnings in `n`.
    pub(super) fn build(
        &self,
        ctx: &Ctx,
        rowno: u64,
        src: Source<'_>,
        n: &mut DmlCount,
    ) -> Result<(Vec<u8>, Vec<Value>), SqlError> {
        let t = &*self.table;
        let strict = self.mode != InsertMode::Ignore;
        let mut row: Vec<Value> = Vec::with_capacity(t.types.len());
        for col in &t.def.columns {
            row.push(if col.default_now {
                Value::DateTime(ctx.now - ctx.now.rem_euclid(1_000_000))
            } else if needs_value(col) {
                crate::types::convert::store::implicit_default(col.ty)
            } else {
                col.default.clone().unwrap_or(Value::Null)
            });
        }
        match src {
            Source::Selected(vals) => {
                for (v, &c) in vals.iter().zip(&self.columns) {
                    row[c] = v.clone();
                }
            }
            Source::Exprs(exprs) => {
                for (e, &c) in exprs.iter().zip(&self.columns) {
                    // `DEFAULT`: keep the default. A column without one: 1364 (strict), or a
                    // warning for this row.
                    if e.is_column_default() {
                        let col = &t.def.columns[c];
                        if needs_value(col) {
                            if strict {
                                return Err(no_default(col));
                            }
                            let e = no_default(col);
                            n.warn("Warning", e.kind(), e.into_message());
                        }
                        continue;
                    }
                    row[c] = e.eval(&[], ctx)?;
                }
            }
        }
        // Strict mode: a warning the row's expressions raised fails the statement here,
        // before the row is stored (and before a later row's error could come first).
        crate::types::diag::check()?;
        // AUTO_INCREMENT: NULL or 0 takes the next value.
        if let Some(ai) = t.auto_inc {
            let v = &row[ai];
            let next = match v {
                Value::Null => true,
                v => v.to_i64() == Some(0),
            };
            if next {
                let id = t.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                row[ai] = Value::UInt(id);
                n.first_id.get_or_insert(id);
            } else if let Some(v) = v.to_i64().filter(|v| *v > 0) {
                t.next_id
                    .fetch_max(v as u64 + 1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        // Stored in the order the statement names the columns (the order of MariaDB's
        // warnings), then the rest (defaults, which fit).
        let mut done = vec![false; t.types.len()];
        for i in self.columns.iter().copied().chain(0..t.types.len()) {
            if std::mem::replace(&mut done[i], true) {
                continue;
            }
            let v = std::mem::replace(&mut row[i], Value::Null);
            row[i] = coerce(v, t, i, rowno, strict, n)?;
        }
        let hidden = if t.def.pk.is_empty() {
            Some(t.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
        } else {
            None
        };
        let pk = t.pk_key(&row, hidden);
        n.records += 1;
        Ok((pk, row))
    }

    /// INSERT … SELECT's rows, as the SELECT's operator tree yields them. With `reader` (a
    /// transaction that sees what this statement's own would: a fresh read-committed one, for
    /// an autocommit statement) each row is stored as soon as it is produced, so the selected
    /// rows are never held; unless the SELECT reads the target table or locks rows, when it
    /// is read whole first (MySQL reads a SELECT over its own target before the first insert),
    /// within the statement's memory budget.
    fn insert_selected(
        &self,
        p: &SelectPlan,
        txn: &mut Transaction,
        reader: Option<&Transaction>,
        ctx: &Ctx,
        subs: &[Subquery],
        n: &mut DmlCount,
    ) -> Result<u64, SqlError> {
        let mut copied = 0u64;
        let mut rowno = 0u64;
        let own = &self.table.def;
        let streamed = reader.filter(|_| {
            !crate::exec::locked::locks(p) && !reads_table(p, subs, &own.db, &own.name)
        });
        if let Some(r) = streamed {
            let none = Locked::default();
            let sc = SubCtx::new(subs, r);
            let sctx = Ctx {
                sub: Some(&sc),
                ..*ctx
            };
            let mut op = operator::build(p, Some(r), &sctx, subs, &none)?;
            let mut row = Vec::new();
            while op.next(&sctx, &mut row)? {
                rowno += 1;
                copied += self.store(txn, ctx, rowno, Source::Selected(&row), n)?;
            }
            return Ok(copied);
        }
        let mut locked = Locked::default();
        crate::exec::lock::lock_rows(p, txn, ctx, subs, &mut locked)?;
        // Read whole before the first insert (it reads the table written); held in memory up
        // to tmp_memory_table_size, then in a temporary file.
        let mut rows = {
            let sc = SubCtx::new(subs, txn);
            let sctx = Ctx {
                sub: Some(&sc),
                ..*ctx
            };
            let mut held = Materialized::new(ctx);
            let mut op = operator::build(p, Some(&*txn), &sctx, subs, &locked)?;
            let mut row = Vec::new();
            while op.next(&sctx, &mut row)? {
                held.push(std::mem::take(&mut row))?;
            }
            held.into_rows()?
        };
        while let Some(row) = rows.next()? {
            rowno += 1;
            copied += self.store(txn, ctx, rowno, Source::Selected(&row), n)?;
        }
        Ok(copied)
    }

    /// Inserts one row, or resolves its duplicate by the statement's mode; returns how many
    /// rows it stored or changed (0 or 1).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_one(
        &self,
        txn: &mut Transaction,
        t: &Table,
        pk: Vec<u8>,
        row: Vec<Value>,
        rowno: u64,
        ctx: &Ctx,
        n: &mut DmlCount,
    ) -> Result<u64, SqlError> {
        let strict = self.mode != InsertMode::Ignore;
        // Which existing row, if any, the new one collides with.
        let mut conflict: Option<(Vec<u8>, Vec<Value>, String)> = None;
        if let Some(old) = txn.get_for_update(&t.primary, &pk).map_err(eng)? {
            conflict = Some((pk.clone(), t.decode_row(&old)?, "PRIMARY".into()));
        }
        let uniques = unique_order(t);
        if conflict.is_none() {
            for &i in &uniques {
                if let Some(other) = unique_conflict(txn, t, i, &row, &[&pk])? {
                    if let Some(old) = txn.get_for_update(&t.primary, &other).map_err(eng)? {
                        conflict =
                            Some((other, t.decode_row(&old)?, t.def.indexes[i].name.clone()));
                        break;
                    }
                }
            }
        }
        let Some((old_pk, old_row, key_name)) = conflict else {
            txn.put(&t.primary, &pk, &encode_row(t, &row))
                .map_err(eng)?;
            // Index entries end with the row's key, locked by `get_for_update` above.
            for i in 0..t.indexes.len() {
                txn.put_covered(
                    &t.indexes[i],
                    &t.index_key(i, &row, &pk),
                    b"",
                    (&t.primary, &pk),
                )
                .map_err(eng)?;
            }
            n.affected += 1;
            return Ok(1);
        };
        let cols = if key_name == "PRIMARY" {
            t.def.pk.clone()
        } else {
            t.def
                .indexes
                .iter()
                .find(|i| i.name == key_name)
                .map(|i| i.columns.clone())
                .unwrap_or_default()
        };
        if !self.on_dup.is_empty() {
            let mut both = old_row.clone();
            both.extend(row.iter().cloned());
            let mut new = old_row.clone();
            for (c, e) in &self.on_dup {
                let v = e.eval(&both, ctx)?;
                crate::types::diag::check()?;
                new[*c] = coerce(v, t, *c, rowno, strict, n)?;
                both[*c] = new[*c].clone();
            }
            if new.iter().zip(&old_row).all(|(a, b)| same(a, b)) {
                // MariaDB compares the records as bytes, and a NULL it read back holds the
                // column's DEFAULT where NULL assigned anew holds zeros: the row looks changed,
                // the engine finds it the same, and it counts once (not as updated).
                let touched = self
                    .on_dup
                    .iter()
                    .any(|&(c, _)| new[c].is_null() && default_is_not_zero(&t.def.columns[c]));
                if touched {
                    n.affected += 1;
                    return Ok(1);
                }
                return Ok(0);
            }
            match update_row(txn, t, &old_pk, &old_row, new) {
                Ok(()) => {}
                // INSERT IGNORE ... ON DUPLICATE KEY UPDATE: an update that collides in turn
                // is skipped with a warning.
                Err(e) if e.kind() == ErrorKind::DupEntry && !strict => {
                    n.warn("Warning", e.kind(), e.into_message());
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
            n.affected += 2;
            n.duplicates += 1;
            return Ok(1);
        }
        match self.mode {
            InsertMode::Insert => Err(SqlError::duplicate(&key_text(&row, &cols), &key_name)),
            InsertMode::Ignore => {
                n.warn(
                    "Warning",
                    ErrorKind::DupEntry,
                    format!(
                        "Duplicate entry '{}' for key '{key_name}'",
                        key_text(&row, &cols)
                    ),
                );
                Ok(0)
            }
            InsertMode::Replace => {
                // On the last unique key MariaDB overwrites the row in place, and the same row
                // again (say, twice in one statement) counts once, as a plain insert; on an
                // earlier one it deletes and inserts.
                let last = match uniques.last() {
                    Some(&i) => t.def.indexes[i].name == key_name,
                    None => key_name == "PRIMARY",
                };
                if last
                    && old_row.len() == row.len()
                    && old_row.iter().zip(&row).all(|(a, b)| same(a, b))
                {
                    n.affected += 1;
                    return Ok(1);
                }
                delete_row(txn, t, &old_pk, &old_row)?;
                n.affected += 1;
                n.duplicates += 1;
                // Another unique index may still collide: go again.
                self.insert_one(txn, t, pk, row, rowno, ctx, n)
            }
        }
    }
}

/// Replaces `old` (at `pk`) by `new`, moving the row if its primary key changed and keeping
/// the secondary indexes in step.
fn update_row(
    txn: &mut Transaction,
    t: &Table,
    pk: &[u8],
    old: &[Value],
    new: Vec<Value>,
) -> Result<(), SqlError> {
    let new_pk = if t.def.pk.is_empty() {
        pk.to_vec()
    } else {
        t.pk_key(&new, None)
    };
    let moved = new_pk != pk;
    if moved
        && txn
            .get_for_update(&t.primary, &new_pk)
            .map_err(eng)?
            .is_some()
    {
        return Err(SqlError::duplicate(&key_text(&new, &t.def.pk), "PRIMARY"));
    }
    // Every unique index is checked before anything is written, so that a duplicate leaves
    // the row as it was (UPDATE IGNORE and INSERT IGNORE ... ON DUPLICATE KEY UPDATE go on).
    for i in unique_order(t) {
        let idx = &t.def.indexes[i];
        if (moved || idx.columns.iter().any(|&c| !same(&old[c], &new[c])))
            && unique_conflict(txn, t, i, &new, &[&new_pk, pk])?.is_some()
        {
            return Err(SqlError::duplicate(
                &key_text(&new, &idx.columns),
                &idx.name,
            ));
        }
    }
    if moved {
        txn.delete(&t.primary, pk).map_err(eng)?;
    }
    for i in 0..t.indexes.len() {
        let changed = moved
            || t.def.indexes[i]
                .columns
                .iter()
                .any(|&c| !same(&old[c], &new[c]));
        if !changed {
            continue;
        }
        // The row's own entry goes first: when only the primary key changed, the unique
        // check would otherwise find it (under the old key) and report a duplicate.
        // Entries end with their row's key: the old one was locked when the row was read,
        // the new one above (or it is the old one).
        txn.delete_covered(&t.indexes[i], &t.index_key(i, old, pk), (&t.primary, pk))
            .map_err(eng)?;
        if t.def.indexes[i].unique {
            if let Some(_other) = unique_conflict(txn, t, i, &new, &[&new_pk])? {
                return Err(SqlError::duplicate(
                    &key_text(&new, &t.def.indexes[i].columns),
                    &t.def.indexes[i].name,
                ));
            }
        }
        txn.put_covered(
            &t.indexes[i],
            &t.index_key(i, &new, &new_pk),
            b"",
            (&t.primary, &new_pk),
        )
        .map_err(eng)?;
    }
    txn.put(&t.primary, &new_pk, &encode_row(t, &new))
        .map_err(eng)?;
    Ok(())
}

// ---- UPDATE / DELETE ---------------------------------------------------------------------

/// The rows a searched UPDATE/DELETE targets, found in the transaction's snapshot: (primary
/// key, row, how many rows the scan had read when it found it), in ORDER BY order and cut at
/// LIMIT.
fn targets(
    txn: &Transaction,
    t: &Table,
    access: &Access,
    filter: &Option<Expr>,
    order: &[(Expr, bool)],
    limit: &Option<Expr>,
    ctx: &Ctx,
) -> Result<Vec<(Vec<u8>, Vec<Value>, u64)>, SqlError> {
    let all = vec![true; t.types.len()];
    let limit = match limit {
        None => None,
        Some(e) => match e.eval(&[], ctx)?.to_i64() {
            Some(l) if l >= 0 => Some(l as usize),
            _ => return Err(SqlError::wrong_arguments("LIMIT")),
        },
    };
    let mut out: Vec<(Vec<u8>, Vec<Value>, u64)> = Vec::new();
    let mut scanned = 0u64;
    scan_rows(txn, t, access, &all, false, ctx, &mut |k, row| {
        scanned += 1;
        if scanned.is_multiple_of(512) {
            ctx.check_killed()?;
        }
        if let Some(f) = filter {
            if !f.test(&row, ctx)? {
                return Ok(true);
            }
        }
        // Held until the statement has changed them all: charged against its memory budget.
        ctx.charge(crate::runtime::limits::row_bytes(&row) + k.len() as u64)?;
        out.push((k.to_vec(), row, scanned));
        // With ORDER BY every match is needed before the sort; without, LIMIT stops the scan.
        Ok(!order.is_empty() || limit.is_none_or(|l| out.len() < l))
    })?;
    if !order.is_empty() {
        let mut keyed: Vec<(Vec<Value>, (Vec<u8>, Vec<Value>, u64))> =
            Vec::with_capacity(out.len());
        for (k, r, _) in out {
            let ks = order
                .iter()
                .map(|(e, _)| e.eval(&r, ctx))
                .collect::<Result<Vec<_>, _>>()?;
            keyed.push((ks, (k, r, 0)));
        }
        keyed.sort_by(|a, b| {
            for (i, (_, desc)) in order.iter().enumerate() {
                let c = a.0[i].order_cmp(&b.0[i]);
                if c != Ordering::Equal {
                    return if *desc { c.reverse() } else { c };
                }
            }
            Ordering::Equal
        });
        // Sorted first, then read: MariaDB counts rows in the sorted order.
        out = keyed
            .into_iter()
            .enumerate()
            .map(|(i, (_, (k, r, _)))| (k, r, i as u64 + 1))
            .collect();
    }
    if let Some(l) = limit {
        out.truncate(l);
    }
    Ok(out)
}

/// Runs an UPDATE or DELETE with one snapshot for all its reads: its scan, and then
/// `lock_target`'s check that a row it found is still the newest, which spares reading the
/// row again (autocommit statements run under read committed, with no snapshot of their own).
fn with_statement_snapshot<R>(txn: &mut Transaction, f: impl FnOnce(&mut Transaction) -> R) -> R {
    txn.hold_statement_snapshot();
    let r = f(txn);
    txn.release_statement_snapshot();
    r
}

/// Locks a target row and reads its newest version; `None` if it is gone or no longer matches.
/// `seen` is the row as the statement's scan found it: when it is still the newest version
/// (no commit changed it since the transaction's snapshot), it is used as is.
fn lock_target(
    txn: &mut Transaction,
    t: &Table,
    pk: &[u8],
    seen: Vec<Value>,
    filter: &Option<Expr>,
    ctx: &Ctx,
) -> Result<Option<Vec<Value>>, SqlError> {
    let row = if txn.lock_unchanged(&t.primary, pk).map_err(eng)? {
        seen
    } else {
        let Some(v) = txn.get_for_update(&t.primary, pk).map_err(eng)? else {
            return Ok(None);
        };
        t.decode_row(&v)?
    };
    if let Some(f) = filter {
        if !f.test(&row, ctx)? {
            return Ok(None);
        }
    }
    Ok(Some(row))
}

impl UpdatePlan {
    pub fn execute(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<DmlCount, SqlError> {
        with_statement_snapshot(txn, |txn| self.execute_held(txn, ctx, subs))
    }

    fn execute_held(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<DmlCount, SqlError> {
        let exprs: Vec<&Expr> = self
            .filter
            .iter()
            .chain(self.assignments.iter().map(|(_, e)| e))
            .collect();
        let sc = crate::exec::subquery::prefill(&exprs, subs, txn, ctx)?;
        let ctx = &Ctx {
            sub: sc.as_ref().map(|s| s as &dyn crate::expr::SubqueryRunner),
            ..*ctx
        };
        let t = &*self.table;
        let strict = !self.ignore;
        // With an ORDER BY, or when it changes the primary key, MySQL reads every row to
        // change before changing one, and warnings its WHERE raises then are not errors even
        // in strict mode; those of the SET expressions still are. (Otherwise it filters and
        // changes row by row, strictly.)
        let buffered =
            !self.order.is_empty() || self.assignments.iter().any(|(c, _)| t.def.pk.contains(c));
        let lenient_where = strict && buffered;
        if lenient_where {
            crate::types::diag::set_strict(false);
        }
        let mut n = DmlCount::default();
        for (pk, seen, rowno) in targets(
            txn,
            t,
            &self.access,
            &self.filter,
            &self.order,
            &self.limit,
            ctx,
        )? {
            let Some(old) = lock_target(txn, t, &pk, seen, &self.filter, ctx)? else {
                continue;
            };
            n.matched += 1;
            let mut new = old.clone();
            if lenient_where {
                crate::types::diag::set_strict(true);
            }
            for (c, e) in &self.assignments {
                let v = e.eval(&new, ctx)?;
                crate::types::diag::check()?;
                new[*c] = coerce(v, t, *c, rowno, strict, &mut n)?;
            }
            if lenient_where {
                crate::types::diag::set_strict(false);
            }
            if new.iter().zip(&old).all(|(a, b)| same(a, b)) {
                continue;
            }
            match update_row(txn, t, &pk, &old, new.clone()) {
                Ok(()) => {}
                // UPDATE IGNORE: the row stays as it was; MariaDB 10.11 says nothing.
                Err(e) if e.kind() == ErrorKind::DupEntry && self.ignore => continue,
                Err(e) => return Err(e),
            }
            if let Some(ai) = t.auto_inc {
                if let Some(v) = new[ai].to_i64().filter(|v| *v > 0) {
                    t.next_id
                        .fetch_max(v as u64 + 1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            n.changed += 1;
            n.affected += 1;
            ctx.check_pending(txn.pending_bytes())?;
        }
        Ok(n)
    }
}

impl DeletePlan {
    pub fn execute(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<DmlCount, SqlError> {
        with_statement_snapshot(txn, |txn| self.execute_held(txn, ctx, subs))
    }

    fn execute_held(
        &self,
        txn: &mut Transaction,
        ctx: &Ctx,
        subs: &[Subquery],
    ) -> Result<DmlCount, SqlError> {
        let filter: Vec<&Expr> = self.filter.iter().collect();
        let sc = crate::exec::subquery::prefill(&filter, subs, txn, ctx)?;
        let ctx = &Ctx {
            sub: sc.as_ref().map(|s| s as &dyn crate::expr::SubqueryRunner),
            ..*ctx
        };
        let t = &*self.table;
        let mut n = DmlCount::default();
        for (pk, seen, _) in targets(
            txn,
            t,
            &self.access,
            &self.filter,
            &self.order,
            &self.limit,
            ctx,
        )? {
            let Some(old) = lock_target(txn, t, &pk, seen, &self.filter, ctx)? else {
                continue;
            };
            delete_row(txn, t, &pk, &old)?;
            n.affected += 1;
            ctx.check_pending(txn.pending_bytes())?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod dml_tests {
    use crate::SqlError;
    use crate::{Outcome, Session};

    fn run(s: &mut Session, sql: &str) -> Result<Outcome, SqlError> {
        s.query(sql).pop().expect("one result")
    }

    fn done(s: &mut Session, sql: &str) -> (u64, String, Vec<u16>) {
        match run(s, sql) {
            Ok(Outcome::Done {
                affected_rows,
                info,
                ..
            }) => (
                affected_rows,
                info,
                s.warnings.iter().map(|w| w.code).collect(),
            ),
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn with_session(name: &str, f: impl FnOnce(&mut Session)) {
        let dir = std::env::temp_dir().join(format!("zipdb-dml-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let (_db, inst) = crate::Instance::open_for_tests(&dir);
            let mut s = inst.session("root", 1);
            run(&mut s, "CREATE DATABASE d").unwrap();
            run(&mut s, "USE d").unwrap();
            f(&mut s);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn duplicates_in_info_count_replaced_updated_and_skipped_rows() {
        with_session("dups", |s| {
            run(
                s,
                "CREATE TABLE t (a INT PRIMARY KEY, b INT, UNIQUE KEY ub (b))",
            )
            .unwrap();
            run(s, "INSERT INTO t VALUES (1,1),(2,2),(3,3)").unwrap();
            // (1,2) replaces two rows: (1,1) by key and (2,2) by ub.
            let (n, info, _) = done(s, "REPLACE INTO t VALUES (1,2),(5,5)");
            assert_eq!(
                (n, info.as_str()),
                (4, "Records: 2  Duplicates: 2  Warnings: 0")
            );
            let (n, info, _) = done(
                s,
                "INSERT INTO t VALUES (5,9),(6,6) ON DUPLICATE KEY UPDATE b = VALUES(b)",
            );
            assert_eq!(
                (n, info.as_str()),
                (3, "Records: 2  Duplicates: 1  Warnings: 0")
            );
            // A row identical to the one it replaces counts once when the key is the last
            // unique one; here PRIMARY is followed by ub: delete and insert.
            let (n, info, _) = done(s, "REPLACE INTO t VALUES (20,20),(20,20)");
            assert_eq!(
                (n, info.as_str()),
                (3, "Records: 2  Duplicates: 1  Warnings: 0")
            );
            let (n, info, w) = done(s, "INSERT IGNORE INTO t VALUES (5,1),(8,8)");
            assert_eq!(
                (n, info.as_str()),
                (1, "Records: 2  Duplicates: 1  Warnings: 1")
            );
            assert_eq!(w, vec![1062]);
            assert_eq!(
                s.warnings[0].message,
                "Duplicate entry '5' for key 'PRIMARY'"
            );
        });
    }

    #[test]
    fn ignore_clips_values_with_warnings_where_strict_statements_fail() {
        with_session("ignore", |s| {
            run(
                s,
                "CREATE TABLE t (k INT PRIMARY KEY, i INT, d DECIMAL(5,1), c VARCHAR(3), \
                 dt DATE, ti TINYINT NOT NULL DEFAULT 0, u INT UNSIGNED)",
            )
            .unwrap();
            let (n, _, w) = done(
                s,
                "INSERT IGNORE INTO t (k, i, d, c, dt, ti, u) \
                 VALUES (1, 'abc', 123456, 'abcdef', 'xyz', NULL, -5)",
            );
            assert_eq!((n, w), (1, vec![1366, 1264, 1265, 1265, 1048, 1264]));
            assert_eq!(
                s.warnings[0].message,
                "Incorrect integer value: 'abc' for column `d`.`t`.`i` at row 1"
            );
            // Strict: the first loss is the error, with its own code.
            let err = |s: &mut Session, sql: &str| run(s, sql).unwrap_err().code();
            assert_eq!(err(s, "INSERT INTO t (k, i) VALUES (2, '12abc')"), 1265);
            assert_eq!(err(s, "INSERT INTO t (k, c) VALUES (2, 'abcdef')"), 1406);
            assert_eq!(
                err(s, "INSERT INTO t (k, dt) VALUES (2, '2020-02-30')"),
                1292
            );
            assert_eq!(
                err(s, "INSERT INTO t (k, ti) VALUES (2, 1), (3, NULL)"),
                1048
            );
            // Notes do not fail a strict statement.
            let (_, info, w) = done(
                s,
                "INSERT INTO t (k, d, c) VALUES (2, 1.55, 'ab  '), (3, 1, 'a')",
            );
            assert_eq!(
                (info.as_str(), w),
                ("Records: 2  Duplicates: 0  Warnings: 2", vec![1265, 1265])
            );
            assert_eq!(s.warnings[0].level, "Note");
            // A column without a default: once per statement under IGNORE.
            run(s, "CREATE TABLE m (a INT PRIMARY KEY, b INT NOT NULL)").unwrap();
            assert_eq!(err(s, "INSERT INTO m (a) VALUES (1)"), 1364);
            let (_, info, w) = done(s, "INSERT IGNORE INTO m (a) VALUES (1), (2)");
            assert_eq!(
                (info.as_str(), w),
                ("Records: 2  Duplicates: 0  Warnings: 1", vec![1364])
            );
            // UPDATE IGNORE: clipped values, implicit defaults, colliding rows left alone.
            let (n, info, w) = done(s, "UPDATE IGNORE t SET ti = NULL, c = 'wxyz'");
            assert_eq!(
                (n, info.as_str(), w),
                (
                    3,
                    "Rows matched: 3  Changed: 3  Warnings: 6",
                    vec![1048, 1265, 1048, 1265, 1048, 1265]
                )
            );
            let (n, info, w) = done(s, "UPDATE IGNORE t SET k = 3 WHERE k = 1");
            assert_eq!(
                (n, info.as_str(), w),
                (0, "Rows matched: 1  Changed: 0  Warnings: 0", vec![])
            );
            assert_eq!(err(s, "UPDATE t SET k = 3 WHERE k = 1"), 1062);
            assert_eq!(err(s, "UPDATE t SET ti = NULL"), 1048);
        });
    }

    #[test]
    fn moving_a_row_keeps_its_own_unique_entry_out_of_the_duplicate_check() {
        with_session("moved", |s| {
            run(
                s,
                "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b), UNIQUE KEY ua (a))",
            )
            .unwrap();
            run(s, "INSERT INTO t VALUES (1, 100), (2, 7)").unwrap();
            // The primary key changes, ua's column does not: no conflict with itself.
            let (n, _, _) = done(s, "UPDATE t SET b = 5 WHERE a = 1");
            assert_eq!(n, 1);
            // A real conflict on ua is still one.
            assert_eq!(
                run(s, "UPDATE t SET a = 2 WHERE a = 1").unwrap_err().code(),
                1062
            );
        });
    }
}
