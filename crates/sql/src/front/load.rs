//! The grammar of MariaDB's `LOAD DATA` (sqlparser's `LoadData` is Hive's form), read on
//! sqlparser's `Parser` over the statement's tokens as SHOW's is (front/show.rs):
//!
//! ```text
//! LOAD DATA [LOW_PRIORITY | CONCURRENT] [LOCAL] INFILE 'file' [REPLACE | IGNORE]
//!   INTO TABLE [db.]t [CHARACTER SET cs]
//!   [{FIELDS | COLUMNS} [TERMINATED BY 's'] [[OPTIONALLY] ENCLOSED BY 'c'] [ESCAPED BY 'c']]
//!   [LINES [STARTING BY 's'] [TERMINATED BY 's']] [IGNORE n {LINES | ROWS}]
//!   [(col_or_@var, ...)] [SET col = expr, ...]
//! ```
//!
//! What bounds it: the text (at most a packet) is tokenized once, every loop consumes a token
//! per turn, and the only recursion is SET's expressions, under the parser's recursion limit
//! and on a stack sized for the text ([`crate::front::parse::on_parse_stack`]).

use sqlparser::ast::Expr;
use sqlparser::tokenizer::Token;

use crate::front::grammar::{self, syntax, Grammar};
use crate::front::show::TableRef;
use crate::SqlError;

/// What a duplicate key does to the row that brings it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnDuplicate {
    /// Neither word: an error, as INSERT's (LOCAL loads behave as IGNORE in MariaDB; the
    /// executor decides, knowing whether the load is LOCAL).
    Error,
    Replace,
    Ignore,
}

/// Where a field of the file goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Column(String),
    /// `@name`: a user variable, read by SET's expressions.
    Var(String),
}

/// How the file is cut into lines and fields, as the statement spells it; defaults are
/// MariaDB's (a tab between fields, nothing around them, `\` escaping, a newline ending each
/// line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Format {
    pub fields_terminated: String,
    /// Empty: fields are not enclosed.
    pub enclosed: String,
    pub optionally: bool,
    /// Empty: no escape character.
    pub escaped: String,
    pub lines_starting: String,
    pub lines_terminated: String,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            fields_terminated: "\t".into(),
            enclosed: String::new(),
            optionally: false,
            escaped: "\\".into(),
            lines_starting: String::new(),
            lines_terminated: "\n".into(),
        }
    }
}

/// A `LOAD DATA` statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Load {
    pub local: bool,
    pub file: String,
    pub duplicates: OnDuplicate,
    pub table: TableRef,
    pub charset: Option<String>,
    pub format: Format,
    /// Lines skipped at the start of the file.
    pub ignore_lines: u64,
    /// Empty: the table's columns, in order.
    pub targets: Vec<Target>,
    pub set: Vec<(String, Expr)>,
}

/// The LOAD DATA statement `sql` holds, when it is one (decided on its first word, `LOAD`);
/// an error (1064, quoted from where reading stopped) when it is malformed.
pub(crate) fn parse(sql: &str) -> Option<Result<Load, SqlError>> {
    let text = sql.trim_start();
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    if !text[..end].eq_ignore_ascii_case("LOAD") {
        return None;
    }
    Some(crate::front::parse::on_parse_stack(sql.len(), || read(sql)))
}

fn read(sql: &str) -> Result<Load, SqlError> {
    let mut p = grammar::parser(grammar::tokens(sql)?);
    let mut g = Grammar::new(&mut p, sql);
    let load = g.load()?;
    g.end()?;
    Ok(load)
}

impl Grammar<'_, '_> {
    fn load(&mut self) -> Result<Load, SqlError> {
        self.expect_word("LOAD")?;
        self.expect_word("DATA")?;
        // Priorities mean nothing to a store with row locks.
        let _ = self.word("LOW_PRIORITY") || self.word("CONCURRENT");
        let local = self.word("LOCAL");
        self.expect_word("INFILE")?;
        let file = self.string()?;
        let duplicates = if self.word("REPLACE") {
            OnDuplicate::Replace
        } else if self.word("IGNORE") {
            OnDuplicate::Ignore
        } else {
            OnDuplicate::Error
        };
        self.expect_word("INTO")?;
        self.expect_word("TABLE")?;
        let table = self.load_table()?;
        let charset = if self.word("CHARACTER") {
            self.expect_word("SET")?;
            Some(self.name_or_string()?)
        } else if self.word("CHARSET") {
            Some(self.name_or_string()?)
        } else {
            None
        };
        let mut format = Format::default();
        if self.word("FIELDS") || self.word("COLUMNS") {
            self.field_options(&mut format)?;
        }
        if self.word("LINES") {
            self.line_options(&mut format)?;
        }
        let ignore_lines = if self.word("IGNORE") {
            let n = self.count()?;
            if !(self.word("LINES") || self.word("ROWS")) {
                return self.fail("LINES or ROWS");
            }
            n
        } else {
            0
        };
        let targets = if self.p.consume_token(&Token::LParen) {
            self.targets()?
        } else {
            Vec::new()
        };
        let set = if self.word("SET") {
            self.assignments()?
        } else {
            Vec::new()
        };
        Ok(Load {
            local,
            file,
            duplicates,
            table,
            charset,
            format,
            ignore_lines,
            targets,
            set,
        })
    }

    fn load_table(&mut self) -> Result<TableRef, SqlError> {
        let first = self.name()?;
        if self.p.consume_token(&Token::Period) {
            let table = self.name()?;
            return Ok(TableRef {
                db: Some(first),
                table,
            });
        }
        Ok(TableRef {
            db: None,
            table: first,
        })
    }

    fn name_or_string(&mut self) -> Result<String, SqlError> {
        match &self.p.peek_token_ref().token {
            Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) => self.string(),
            _ => self.name(),
        }
    }

    /// `BY 'string'`.
    fn by(&mut self) -> Result<String, SqlError> {
        self.expect_word("BY")?;
        self.string()
    }

    /// `[TERMINATED BY 's'] [[OPTIONALLY] ENCLOSED BY 'c'] [ESCAPED BY 'c']`, in any order
    /// and at least one, as MariaDB's grammar reads them.
    fn field_options(&mut self, f: &mut Format) -> Result<(), SqlError> {
        let mut any = false;
        loop {
            if self.word("TERMINATED") {
                f.fields_terminated = self.by()?;
            } else if self.word("OPTIONALLY") {
                self.expect_word("ENCLOSED")?;
                f.enclosed = self.one_char()?;
                f.optionally = true;
            } else if self.word("ENCLOSED") {
                f.enclosed = self.one_char()?;
            } else if self.word("ESCAPED") {
                f.escaped = self.one_char()?;
            } else if any {
                return Ok(());
            } else {
                return self.fail("TERMINATED, ENCLOSED or ESCAPED");
            }
            any = true;
        }
    }

    /// `BY 'c'` where `c` is at most one character (MariaDB: 1083 otherwise, a syntax error
    /// in the field specification; zipdb reports it as a 1064 at the string).
    fn one_char(&mut self) -> Result<String, SqlError> {
        self.expect_word("BY")?;
        match &self.p.peek_token_ref().token {
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)
                if s.chars().count() > 1 =>
            {
                self.fail("a single character")
            }
            _ => self.string(),
        }
    }

    /// `[STARTING BY 's'] [TERMINATED BY 's']`, in any order and at least one.
    fn line_options(&mut self, f: &mut Format) -> Result<(), SqlError> {
        let mut any = false;
        loop {
            if self.word("STARTING") {
                f.lines_starting = self.by()?;
            } else if self.word("TERMINATED") {
                f.lines_terminated = self.by()?;
            } else if any {
                return Ok(());
            } else {
                return self.fail("STARTING or TERMINATED");
            }
            any = true;
        }
    }

    fn count(&mut self) -> Result<u64, SqlError> {
        match &self.p.peek_token_ref().token {
            Token::Number(n, _) => match n.parse::<u64>() {
                Ok(v) => {
                    self.p.next_token();
                    Ok(v)
                }
                Err(_) => self.fail("a number of lines"),
            },
            _ => self.fail("a number of lines"),
        }
    }

    /// `col_or_@var, ...)`, the `(` already read; `()` is allowed, as in MariaDB (no field
    /// goes anywhere).
    fn targets(&mut self) -> Result<Vec<Target>, SqlError> {
        let mut out = Vec::new();
        if self.p.consume_token(&Token::RParen) {
            return Ok(out);
        }
        loop {
            out.push(self.target()?);
            if self.p.consume_token(&Token::RParen) {
                return Ok(out);
            }
            if !self.p.consume_token(&Token::Comma) {
                return self.fail(", or )");
            }
        }
    }

    fn target(&mut self) -> Result<Target, SqlError> {
        // The MySQL dialect reads `@v` as one word; `@` then a quoted name comes apart.
        if self.p.consume_token(&Token::AtSign) {
            return self.name().map(Target::Var);
        }
        let name = self.name()?;
        match name.strip_prefix('@') {
            Some(v) if !v.is_empty() => Ok(Target::Var(v.to_string())),
            Some(_) => self.fail("a variable name"),
            None => Ok(Target::Column(name)),
        }
    }

    /// `col = expr, ...`.
    fn assignments(&mut self) -> Result<Vec<(String, Expr)>, SqlError> {
        let mut out = Vec::new();
        loop {
            let col = self.name()?;
            // `:=` is MariaDB's other spelling of the assignment.
            if !self.p.consume_token(&Token::Eq) && !self.p.consume_token(&Token::Assignment) {
                return self.fail("=");
            }
            let e = self.p.parse_expr().map_err(|e| syntax(self.sql, &e))?;
            out.push((col, e));
            if !self.p.consume_token(&Token::Comma) {
                return Ok(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(sql: &str) -> Load {
        match parse(sql) {
            Some(Ok(l)) => l,
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn error(sql: &str) -> (u16, String) {
        match parse(sql) {
            Some(Err(e)) => (e.code(), e.message().to_string()),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_mariadb_s() {
        let l = load("LOAD DATA INFILE '/tmp/a.txt' INTO TABLE t");
        assert!(!l.local);
        assert_eq!(l.file, "/tmp/a.txt");
        assert_eq!(l.duplicates, OnDuplicate::Error);
        assert_eq!(
            l.table,
            TableRef {
                db: None,
                table: "t".into()
            }
        );
        assert_eq!(l.format, Format::default());
        assert_eq!(l.format.fields_terminated, "\t");
        assert_eq!(l.format.escaped, "\\");
        assert_eq!(l.ignore_lines, 0);
        assert!(l.targets.is_empty() && l.set.is_empty() && l.charset.is_none());
    }

    #[test]
    fn every_clause() {
        let l = load(
            "load data low_priority local infile 'x.csv' replace into table d.`t 1` \
             character set utf8mb4 fields terminated by ',' optionally enclosed by '\"' \
             escaped by '\\\\' lines starting by 'xx' terminated by '\\r\\n' ignore 2 lines \
             (a, @v, `b`) set c = @v + 1, d = NOW();",
        );
        assert!(l.local);
        assert_eq!(l.duplicates, OnDuplicate::Replace);
        assert_eq!(l.table.db.as_deref(), Some("d"));
        assert_eq!(l.table.table, "t 1");
        assert_eq!(l.charset.as_deref(), Some("utf8mb4"));
        assert_eq!(
            l.format,
            Format {
                fields_terminated: ",".into(),
                enclosed: "\"".into(),
                optionally: true,
                escaped: "\\".into(),
                lines_starting: "xx".into(),
                lines_terminated: "\r\n".into(),
            }
        );
        assert_eq!(l.ignore_lines, 2);
        assert_eq!(
            l.targets,
            vec![
                Target::Column("a".into()),
                Target::Var("v".into()),
                Target::Column("b".into())
            ]
        );
        assert_eq!(l.set.len(), 2);
        assert_eq!(l.set[0].0, "c");
        assert_eq!(l.set[0].1.to_string(), "@v + 1");
    }

    #[test]
    fn options_in_any_order_and_empty_enclosure() {
        let l = load(
            "LOAD DATA INFILE 'f' IGNORE INTO TABLE t COLUMNS ESCAPED BY '' ENCLOSED BY '' \
             TERMINATED BY '||' LINES TERMINATED BY ';' STARTING BY '>' IGNORE 1 ROWS ()",
        );
        assert_eq!(l.duplicates, OnDuplicate::Ignore);
        assert_eq!(l.format.escaped, "");
        assert_eq!(l.format.enclosed, "");
        assert!(!l.format.optionally);
        assert_eq!(l.format.fields_terminated, "||");
        assert_eq!(l.format.lines_terminated, ";");
        assert_eq!(l.format.lines_starting, ">");
        assert_eq!(l.ignore_lines, 1);
        assert!(l.targets.is_empty());
    }

    #[test]
    fn other_statements_are_not_read() {
        assert!(parse("SELECT 1").is_none());
        assert!(parse("LOADED").is_none());
        assert!(parse("  load data infile 'f' into table t").is_some());
    }

    #[test]
    fn malformed_is_1064_quoted_from_the_place() {
        for (sql, near) in [
            ("LOAD DATA INFILE f INTO TABLE t", "f INTO TABLE t"),
            ("LOAD DATA INFILE 'f' TO TABLE t", "TO TABLE t"),
            ("LOAD DATA INFILE 'f' INTO TABLE t FIELDS", ""),
            (
                "LOAD DATA INFILE 'f' INTO TABLE t FIELDS ENCLOSED BY 'ab'",
                "'ab'",
            ),
            (
                "LOAD DATA INFILE 'f' INTO TABLE t IGNORE x LINES",
                "x LINES",
            ),
            ("LOAD DATA INFILE 'f' INTO TABLE t (a b)", "b)"),
            ("LOAD DATA INFILE 'f' INTO TABLE t SET a", ""),
            ("LOAD DATA INFILE 'f' INTO TABLE t garbage", "garbage"),
            ("LOAD XML INFILE 'f' INTO TABLE t", "XML INFILE"),
        ] {
            let (code, msg) = error(sql);
            assert_eq!(code, 1064, "{sql}");
            assert!(msg.contains(&format!("near '{near}")), "{sql}: {msg}");
        }
    }
}
