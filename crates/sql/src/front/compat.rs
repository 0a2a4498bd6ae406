//! The grammar of the compatibility statements dump tools and clients send (session/ runs
//! them as [`Compat`]), read on sqlparser's `Parser` over the statement's tokens as SHOW's is
//! (front/grammar.rs). sqlparser reads none of these forms as MySQL means them:
//!
//! ```text
//! START TRANSACTION characteristic [[,] characteristic] ...   (one is WITH CONSISTENT SNAPSHOT)
//!   characteristic: WITH CONSISTENT SNAPSHOT | READ ONLY | READ WRITE
//! LOCK {TABLE | TABLES} [db.]t [[AS] alias] lock_type [, ...]
//!   lock_type: READ [LOCAL] | [LOW_PRIORITY] WRITE | WRITE CONCURRENT
//! UNLOCK {TABLE | TABLES}
//! ALTER TABLE [db.]t {DISABLE | ENABLE} KEYS
//! ```
//!
//! A `START TRANSACTION` or `ALTER TABLE` of another form is left to sqlparser (`None`); a
//! malformed `LOCK`/`UNLOCK` is a 1064 quoted from where reading stopped, as MariaDB's.
//!
//! What bounds it: the text is tokenized once (only after its first word named one of these
//! statements, so a bulk INSERT is never tokenized here), and every loop consumes a token.

use sqlparser::tokenizer::Token;

use crate::front::grammar::{self, Grammar};
use crate::SqlError;

/// Statements clients and dump files send that change nothing here, or only commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compat {
    /// `START TRANSACTION WITH CONSISTENT SNAPSHOT [READ ONLY|READ WRITE]`
    /// (mysqldump --single-transaction): every zipdb transaction reads one snapshot taken
    /// when it begins.
    ConsistentSnapshot,
    /// `LOCK TABLES ...`, accepted without taking table locks: it commits an open
    /// transaction first, as in MySQL, and row locks and snapshots keep each statement
    /// consistent.
    LockTables,
    /// `UNLOCK TABLES`.
    UnlockTables,
    /// `ALTER TABLE t DISABLE|ENABLE KEYS`: dump files wrap each table's INSERTs in these (a
    /// MyISAM speed-up); every index here is maintained as rows go in, as InnoDB does.
    Keys,
}

/// The compatibility statement `sql` is; `None` when it is none of them.
pub(crate) fn parse(sql: &str) -> Option<Result<Compat, SqlError>> {
    let text = sql.trim_start();
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    let head = &text[..end];
    if !["START", "LOCK", "UNLOCK", "ALTER"]
        .iter()
        .any(|k| head.eq_ignore_ascii_case(k))
    {
        return None;
    }
    // A text the tokenizer refuses (an unclosed quote) is not one of these forms: the SQL
    // parser reports it.
    let tokens = grammar::tokens(sql).ok()?;
    let mut p = grammar::parser(tokens);
    let mut g = Grammar::new(&mut p, sql);
    g.compat()
}

impl Grammar<'_, '_> {
    fn compat(&mut self) -> Option<Result<Compat, SqlError>> {
        let first = self.peek_word()?;
        self.p.next_token();
        match first.as_str() {
            "START" => self.consistent_snapshot(),
            "LOCK" => Some(self.lock_tables()),
            "UNLOCK" => Some(self.unlock_tables()),
            "ALTER" => self.keys(),
            _ => None,
        }
    }

    /// After `START`: `Some` only when the characteristics name a consistent snapshot.
    fn consistent_snapshot(&mut self) -> Option<Result<Compat, SqlError>> {
        if !self.word("TRANSACTION") {
            return None;
        }
        let mut snapshot = false;
        loop {
            if self.word("WITH") {
                if !(self.word("CONSISTENT") && self.word("SNAPSHOT")) {
                    return None;
                }
                snapshot = true;
            } else if self.word("READ") {
                if !(self.word("ONLY") || self.word("WRITE")) {
                    return None;
                }
            } else {
                return None;
            }
            let _ = self.p.consume_token(&Token::Comma);
            if self.p.peek_token_ref().token == Token::EOF {
                return snapshot.then_some(Ok(Compat::ConsistentSnapshot));
            }
        }
    }

    fn lock_tables(&mut self) -> Result<Compat, SqlError> {
        if !(self.word("TABLES") || self.word("TABLE")) {
            return self.fail("TABLES");
        }
        loop {
            self.table_name()?;
            // `[AS] alias`: after AS any name, else a word that is not a lock type.
            if self.word("AS") {
                self.name()?;
            } else if matches!(&self.p.peek_token_ref().token, Token::Word(w)
                if w.quote_style.is_some() || !is_lock_word(&w.value.to_ascii_uppercase()))
            {
                self.p.next_token();
            }
            if self.word("READ") {
                self.word("LOCAL");
            } else if self.word("LOW_PRIORITY") {
                self.expect_word("WRITE")?;
            } else if self.word("WRITE") {
                self.word("CONCURRENT");
            } else {
                return self.fail("READ or WRITE");
            }
            if !self.p.consume_token(&Token::Comma) {
                break;
            }
        }
        self.end()?;
        Ok(Compat::LockTables)
    }

    fn unlock_tables(&mut self) -> Result<Compat, SqlError> {
        if !(self.word("TABLES") || self.word("TABLE")) {
            return self.fail("TABLES");
        }
        self.end()?;
        Ok(Compat::UnlockTables)
    }

    /// After `ALTER`: `TABLE t DISABLE|ENABLE KEYS`, or `None` (another ALTER).
    fn keys(&mut self) -> Option<Result<Compat, SqlError>> {
        if !self.word("TABLE") || self.table_name().is_err() {
            return None;
        }
        if !(self.word("DISABLE") || self.word("ENABLE")) || !self.word("KEYS") {
            return None;
        }
        (self.p.peek_token_ref().token == Token::EOF).then_some(Ok(Compat::Keys))
    }

    /// `[db.]t`, plain or in backticks.
    fn table_name(&mut self) -> Result<(), SqlError> {
        self.name()?;
        if self.p.consume_token(&Token::Period) {
            self.name()?;
        }
        Ok(())
    }
}

fn is_lock_word(w: &str) -> bool {
    matches!(w, "READ" | "WRITE" | "LOW_PRIORITY")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(sql: &str) -> Option<Compat> {
        parse(sql).map(|r| r.unwrap_or_else(|e| panic!("{sql}: {}", e.message())))
    }

    #[test]
    fn dump_forms_are_read() {
        for (sql, want) in [
            (
                "START TRANSACTION WITH CONSISTENT SNAPSHOT",
                Compat::ConsistentSnapshot,
            ),
            (
                "start transaction with consistent snapshot, read only;",
                Compat::ConsistentSnapshot,
            ),
            (
                "START TRANSACTION READ WRITE, WITH CONSISTENT SNAPSHOT",
                Compat::ConsistentSnapshot,
            ),
            (
                "START TRANSACTION   WITH CONSISTENT SNAPSHOT  ",
                Compat::ConsistentSnapshot,
            ),
            ("LOCK TABLES `sbtest1` WRITE;", Compat::LockTables),
            (
                "LOCK TABLES d.t READ  LOCAL , u AS x LOW_PRIORITY WRITE, v y WRITE CONCURRENT",
                Compat::LockTables,
            ),
            ("lock table t write", Compat::LockTables),
            ("UNLOCK TABLES", Compat::UnlockTables),
            ("unlock table /* c */", Compat::UnlockTables),
            ("ALTER TABLE `sbtest1` DISABLE KEYS", Compat::Keys),
            ("  alter table d.`t 1` enable keys ;", Compat::Keys),
        ] {
            assert_eq!(ok(sql), Some(want), "{sql}");
        }
    }

    #[test]
    fn other_forms_are_left_to_the_parser() {
        for sql in [
            "START TRANSACTION",
            "START TRANSACTION READ ONLY",
            "START SLAVE",
            "ALTER TABLE t ADD COLUMN keys INT",
            "ALTER TABLE t DISABLE KEYS; SELECT 1",
            "ALTER USER u",
            "SELECT 1",
            "INSERT INTO t VALUES (';')",
            "LOCK TABLES 'unclosed",
        ] {
            assert!(parse(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn malformed_lock_statements_are_1064() {
        for sql in [
            "LOCK TABLES",
            "LOCK TABLES t",
            "LOCK TABLES t WRITE,",
            "LOCK TABLES t WRITE u READ",
            "LOCK t WRITE",
            "UNLOCK TABLES t",
            "UNLOCK",
        ] {
            let e = parse(sql).expect(sql).unwrap_err();
            assert_eq!(e.code(), 1064, "{sql}");
        }
        let e = parse("LOCK TABLES t WRITE x").unwrap().unwrap_err();
        assert!(e.message().contains("near 'x'"), "{}", e.message());
    }
}
