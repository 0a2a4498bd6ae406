//! The grammar of the SHOW statements zipdb runs (admin/show.rs), written on sqlparser's
//! `Parser` over the statement's tokens: the parser itself reads most MySQL SHOW forms as one
//! opaque name, or not at all.
//!
//! What bounds it: the text (at most a packet) is tokenized once; the grammar reads a fixed
//! number of tokens per form, in loops that always advance, with no list of names; the only
//! recursion is `WHERE`'s expression, under the parser's recursion limit
//! ([`crate::front::depth::PARSE_DEPTH_MAX`]) and on a stack sized for the text, as every
//! other statement is parsed ([`crate::front::parse::on_parse_stack`]).

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use crate::front::grammar::{self, syntax, Grammar};
use crate::SqlError;

/// `LIKE 'pattern'` or `WHERE expr` after a SHOW form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Filter {
    None,
    Like(String),
    /// Evaluated over the SHOW's result rows, its names naming the result's columns
    /// (admin/show.rs), as MySQL does.
    Where(Box<sqlparser::ast::Expr>),
}

/// `FROM|IN [db.]table [FROM|IN db]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRef {
    pub db: Option<String>,
    pub table: String,
}

/// A SHOW statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Show {
    /// DATABASES | SCHEMAS.
    Databases(Filter),
    /// [FULL] TABLES [FROM|IN db].
    Tables {
        full: bool,
        db: Option<String>,
        filter: Filter,
    },
    /// [FULL] COLUMNS | FIELDS.
    Columns {
        full: bool,
        table: TableRef,
        filter: Filter,
    },
    /// INDEX | INDEXES | KEYS [FROM|IN db] [WHERE expr].
    Index(TableRef, Filter),
    CreateTable(TableRef),
    /// CREATE DATABASE | SCHEMA [IF NOT EXISTS].
    CreateDatabase(String),
    /// [GLOBAL | SESSION | LOCAL] VARIABLES: one value per variable whatever the scope.
    Variables(Filter),
    /// [GLOBAL | SESSION | LOCAL] STATUS.
    Status(Filter),
    /// WARNINGS | ERRORS [LIMIT [offset,] count]: the last statement's conditions, or only
    /// its errors.
    Warnings {
        errors_only: bool,
        offset: u64,
        count: Option<u64>,
    },
    /// COUNT(*) WARNINGS | ERRORS.
    WarningCount {
        errors_only: bool,
    },
    /// TABLE STATUS [FROM|IN db].
    TableStatus {
        db: Option<String>,
        filter: Filter,
    },
    /// FUNCTION | PROCEDURE STATUS: zipdb has no stored routines.
    RoutineStatus,
    /// TRIGGERS [FROM|IN db]: none.
    Triggers,
    /// EVENTS [FROM|IN db]: none.
    Events,
    /// [FULL] PROCESSLIST.
    Processlist {
        full: bool,
    },
    /// [STORAGE] ENGINES.
    Engines,
    Collation(Filter),
    /// CHARACTER SET | CHARSET.
    Charset(Filter),
}

/// The SHOW statement `sql` holds, when it is one (decided on its first word); an error when
/// it is malformed (1064, quoted from where reading stopped) or a form zipdb lacks (1235).
/// `DESCRIBE`, `DESC` and `EXPLAIN` followed by a table name are `SHOW COLUMNS` (MySQL's
/// `DESCRIBE t [column | 'pattern']`); followed by a statement they are left to the parser.
pub(crate) fn parse(sql: &str) -> Option<Result<Show, SqlError>> {
    // Most statements are neither: decided on the first word, before any token is made.
    let text = sql.trim_start();
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    let head = &text[..end];
    if head.eq_ignore_ascii_case("SHOW") {
        return Some(crate::front::parse::on_parse_stack(sql.len(), || read(sql)));
    }
    if ["DESCRIBE", "DESC", "EXPLAIN"]
        .iter()
        .any(|w| head.eq_ignore_ascii_case(w))
    {
        return crate::front::parse::on_parse_stack(sql.len(), || describe(sql)).transpose();
    }
    None
}

fn read(sql: &str) -> Result<Show, SqlError> {
    let mut p = grammar::parser(grammar::tokens(sql)?);
    let mut g = Grammar::new(&mut p, sql);
    let show = g.statement()?;
    g.end()?;
    Ok(show)
}

/// What follows `EXPLAIN`/`DESCRIBE` when it explains a statement rather than naming a table.
const EXPLAINED: [&str; 11] = [
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "REPLACE",
    "WITH",
    "FORMAT",
    "EXTENDED",
    "PARTITIONS",
    "ANALYZE",
    "VALUES",
];

/// `DESCRIBE [db.]table [column | 'pattern']` as SHOW COLUMNS; `Ok(None)` when the statement
/// explains a query instead.
fn describe(sql: &str) -> Result<Option<Show>, SqlError> {
    let mut p = grammar::parser(grammar::tokens(sql)?);
    let mut g = Grammar::new(&mut p, sql);
    g.p.next_token(); // DESCRIBE | DESC | EXPLAIN
    let explains = match &g.p.peek_token_ref().token {
        Token::Word(w) if w.quote_style.is_none() => {
            EXPLAINED.contains(&w.value.to_ascii_uppercase().as_str())
        }
        Token::Word(_) => false,
        _ => true,
    };
    if explains {
        return Ok(None);
    }
    let table = g.qualified()?;
    let filter = match &g.p.peek_token_ref().token {
        // A column name matches as a LIKE pattern too, as in MySQL (`DESCRIBE t a%` is not
        // valid, `DESCRIBE t 'a%'` is).
        Token::Word(_) => Filter::Like(g.name()?),
        Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) => Filter::Like(g.string()?),
        _ => Filter::None,
    };
    g.end()?;
    Ok(Some(Show::Columns {
        full: false,
        table,
        filter,
    }))
}

/// The SHOW forms, on the shared grammar's helpers.
impl Grammar<'_, '_> {
    fn kw_from_or_in(&mut self) -> bool {
        self.p.parse_keyword(Keyword::FROM) || self.p.parse_keyword(Keyword::IN)
    }

    /// `[FROM|IN db]`.
    fn opt_db(&mut self) -> Result<Option<String>, SqlError> {
        if self.kw_from_or_in() {
            self.name().map(Some)
        } else {
            Ok(None)
        }
    }

    /// `FROM|IN [db.]table [FROM|IN db]`; the last FROM names the database, as in MySQL.
    fn table_in(&mut self) -> Result<TableRef, SqlError> {
        if !self.kw_from_or_in() {
            return self.fail("FROM");
        }
        let mut t = self.qualified()?;
        if let Some(db) = self.opt_db()? {
            t.db = Some(db);
        }
        Ok(t)
    }

    /// `[db.]table`.
    fn qualified(&mut self) -> Result<TableRef, SqlError> {
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

    /// `[LIKE 'pattern' | WHERE expr]`.
    fn filter(&mut self) -> Result<Filter, SqlError> {
        if self.p.parse_keyword(Keyword::LIKE) {
            return self.string().map(Filter::Like);
        }
        if self.p.parse_keyword(Keyword::WHERE) {
            let e = self.p.parse_expr().map_err(|e| syntax(self.sql, &e))?;
            return Ok(Filter::Where(Box::new(e)));
        }
        Ok(Filter::None)
    }

    fn statement(&mut self) -> Result<Show, SqlError> {
        self.expect_word("SHOW")?;
        let Some(what) = self.peek_word() else {
            return self.fail("what to show");
        };
        self.p.next_token();
        Ok(match what.as_str() {
            "FULL" => {
                let full = true;
                match self.peek_word().as_deref() {
                    Some("TABLES") => {
                        self.p.next_token();
                        self.tables(full)?
                    }
                    Some("COLUMNS" | "FIELDS") => {
                        self.p.next_token();
                        self.columns(full)?
                    }
                    Some("PROCESSLIST") => {
                        self.p.next_token();
                        Show::Processlist { full }
                    }
                    _ => return self.fail("TABLES, COLUMNS or PROCESSLIST"),
                }
            }
            "GLOBAL" | "SESSION" | "LOCAL" => match self.peek_word().as_deref() {
                Some("VARIABLES") => {
                    self.p.next_token();
                    Show::Variables(self.filter()?)
                }
                Some("STATUS") => {
                    self.p.next_token();
                    Show::Status(self.filter()?)
                }
                _ => return self.fail("VARIABLES or STATUS"),
            },
            "DATABASES" | "SCHEMAS" => Show::Databases(self.filter()?),
            "TABLES" => self.tables(false)?,
            "COLUMNS" | "FIELDS" => self.columns(false)?,
            "INDEX" | "INDEXES" | "KEYS" => {
                let t = self.table_in()?;
                Show::Index(t, self.filter()?)
            }
            "CREATE" => match self.peek_word().as_deref() {
                Some("TABLE") => {
                    self.p.next_token();
                    Show::CreateTable(self.qualified()?)
                }
                Some("DATABASE" | "SCHEMA") => {
                    self.p.next_token();
                    if self.p.parse_keyword(Keyword::IF) {
                        self.expect_word("NOT")?;
                        self.expect_word("EXISTS")?;
                    }
                    Show::CreateDatabase(self.name()?)
                }
                Some(other) => return Err(SqlError::unsupported(&format!("SHOW CREATE {other}"))),
                None => return self.fail("TABLE or DATABASE"),
            },
            "VARIABLES" => Show::Variables(self.filter()?),
            "STATUS" => Show::Status(self.filter()?),
            "WARNINGS" => self.warnings(false)?,
            "ERRORS" => self.warnings(true)?,
            "COUNT" => {
                for t in [Token::LParen, Token::Mul, Token::RParen] {
                    if !self.p.consume_token(&t) {
                        return self.fail(&t.to_string());
                    }
                }
                if self.word("WARNINGS") {
                    Show::WarningCount { errors_only: false }
                } else if self.word("ERRORS") {
                    Show::WarningCount { errors_only: true }
                } else {
                    return self.fail("WARNINGS or ERRORS");
                }
            }
            "TABLE" => {
                self.expect_word("STATUS")?;
                let db = self.opt_db()?;
                Show::TableStatus {
                    db,
                    filter: self.filter()?,
                }
            }
            "FUNCTION" | "PROCEDURE" => {
                self.expect_word("STATUS")?;
                self.filter()?;
                Show::RoutineStatus
            }
            "TRIGGERS" | "EVENTS" => {
                self.opt_db()?;
                self.filter()?;
                if what == "EVENTS" {
                    Show::Events
                } else {
                    Show::Triggers
                }
            }
            "PROCESSLIST" => Show::Processlist { full: false },
            "ENGINES" => Show::Engines,
            "STORAGE" => {
                self.expect_word("ENGINES")?;
                Show::Engines
            }
            "COLLATION" => Show::Collation(self.filter()?),
            "CHARSET" => Show::Charset(self.filter()?),
            "CHARACTER" => {
                self.expect_word("SET")?;
                Show::Charset(self.filter()?)
            }
            other => return Err(SqlError::unsupported(&format!("SHOW {other}"))),
        })
    }

    fn tables(&mut self, full: bool) -> Result<Show, SqlError> {
        let db = self.opt_db()?;
        Ok(Show::Tables {
            full,
            db,
            filter: self.filter()?,
        })
    }

    fn columns(&mut self, full: bool) -> Result<Show, SqlError> {
        let table = self.table_in()?;
        Ok(Show::Columns {
            full,
            table,
            filter: self.filter()?,
        })
    }

    /// `[LIMIT [offset,] count | LIMIT count OFFSET offset]`.
    fn warnings(&mut self, errors_only: bool) -> Result<Show, SqlError> {
        if !self.p.parse_keyword(Keyword::LIMIT) {
            return Ok(Show::Warnings {
                errors_only,
                offset: 0,
                count: None,
            });
        }
        let uint = |g: &mut Self| g.p.parse_literal_uint().map_err(|e| syntax(g.sql, &e));
        let first = uint(self)?;
        let (offset, count) = if self.p.consume_token(&Token::Comma) {
            (first, uint(self)?)
        } else if self.p.parse_keyword(Keyword::OFFSET) {
            (uint(self)?, first)
        } else {
            (0, first)
        };
        Ok(Show::Warnings {
            errors_only,
            offset,
            count: Some(count),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(sql: &str) -> Show {
        match parse(sql) {
            Some(Ok(s)) => s,
            other => panic!("{sql}: {other:?}"),
        }
    }

    /// The error's code and the text its message quotes (after `near '`).
    fn error(sql: &str) -> (u16, String) {
        match parse(sql) {
            Some(Err(e)) => {
                let m = e.message();
                let near = m
                    .split_once("near '")
                    .map(|(_, r)| r.rsplit_once("' at line").map_or(r, |x| x.0))
                    .unwrap_or(m);
                (e.code(), near.to_string())
            }
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn t(db: Option<&str>, table: &str) -> TableRef {
        TableRef {
            db: db.map(String::from),
            table: table.into(),
        }
    }

    fn like(p: &str) -> Filter {
        Filter::Like(p.into())
    }

    fn where_(e: &str) -> Filter {
        let mut p = grammar::parser(grammar::tokens(e).unwrap());
        Filter::Where(Box::new(p.parse_expr().unwrap()))
    }

    #[test]
    fn describe_names_a_table_or_explains_a_statement() {
        let cols = |db: Option<&str>, table: &str, filter| Show::Columns {
            full: false,
            table: t(db, table),
            filter,
        };
        for (sql, want) in [
            ("DESCRIBE t", cols(None, "t", Filter::None)),
            ("desc d.t", cols(Some("d"), "t", Filter::None)),
            ("EXPLAIN `select`", cols(None, "select", Filter::None)),
            ("DESCRIBE t c;", cols(None, "t", like("c"))),
            ("DESC `d`.`t` 'a%'", cols(Some("d"), "t", like("a%"))),
        ] {
            assert_eq!(show(sql), want, "{sql}");
        }
        for sql in [
            "EXPLAIN SELECT 1",
            "explain format=json select 1",
            "DESCRIBE UPDATE t SET a = 1",
            "EXPLAIN (SELECT 1)",
            "EXPLAIN EXTENDED SELECT 1",
            "DESCRIBEx t",
        ] {
            assert!(parse(sql).is_none(), "{sql}");
        }
        assert_eq!(error("DESCRIBE t c d").0, 1064);
        // Nothing after it: left to the parser, which refuses it.
        assert!(parse("DESCRIBE").is_none());
    }

    #[test]
    fn other_statements_are_not_read() {
        for sql in [
            "SELECT 1",
            "SHOWX",
            "show_t",
            "  sho",
            "",
            "/* SHOW */ x",
            "SHO",
        ] {
            assert!(parse(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn each_form() {
        let cases = [
            ("SHOW DATABASES", Show::Databases(Filter::None)),
            ("show schemas like 'a%'", Show::Databases(like("a%"))),
            (
                "SHOW DATABASES WHERE `Database` = 'x'",
                Show::Databases(where_("`Database` = 'x'")),
            ),
            (
                "SHOW TABLES",
                Show::Tables {
                    full: false,
                    db: None,
                    filter: Filter::None,
                },
            ),
            (
                "SHOW FULL TABLES IN `my db` LIKE \"t\\_%\"",
                Show::Tables {
                    full: true,
                    db: Some("my db".into()),
                    filter: like("t\\_%"),
                },
            ),
            (
                "SHOW COLUMNS FROM t",
                Show::Columns {
                    full: false,
                    table: t(None, "t"),
                    filter: Filter::None,
                },
            ),
            (
                "SHOW FULL FIELDS IN d.t LIKE 'a'",
                Show::Columns {
                    full: true,
                    table: t(Some("d"), "t"),
                    filter: like("a"),
                },
            ),
            (
                "SHOW COLUMNS FROM d1.t FROM d2",
                Show::Columns {
                    full: false,
                    table: t(Some("d2"), "t"),
                    filter: Filter::None,
                },
            ),
            ("SHOW INDEX FROM t", Show::Index(t(None, "t"), Filter::None)),
            (
                "SHOW INDEXES IN t IN d",
                Show::Index(t(Some("d"), "t"), Filter::None),
            ),
            (
                "SHOW KEYS FROM `d`.`t` WHERE Key_name = 'PRIMARY'",
                Show::Index(t(Some("d"), "t"), where_("Key_name = 'PRIMARY'")),
            ),
            ("SHOW CREATE TABLE t", Show::CreateTable(t(None, "t"))),
            (
                "SHOW CREATE TABLE `a``b`.`c;d`",
                Show::CreateTable(t(Some("a`b"), "c;d")),
            ),
            ("SHOW CREATE DATABASE d", Show::CreateDatabase("d".into())),
            (
                "SHOW CREATE SCHEMA IF NOT EXISTS `d`",
                Show::CreateDatabase("d".into()),
            ),
            ("SHOW VARIABLES", Show::Variables(Filter::None)),
            (
                "SHOW GLOBAL VARIABLES LIKE 'max%'",
                Show::Variables(like("max%")),
            ),
            ("SHOW SESSION STATUS", Show::Status(Filter::None)),
            (
                "SHOW LOCAL STATUS LIKE 'Com_%'",
                Show::Status(like("Com_%")),
            ),
            (
                "SHOW WARNINGS",
                Show::Warnings {
                    errors_only: false,
                    offset: 0,
                    count: None,
                },
            ),
            (
                "SHOW ERRORS LIMIT 5",
                Show::Warnings {
                    errors_only: true,
                    offset: 0,
                    count: Some(5),
                },
            ),
            (
                "SHOW WARNINGS LIMIT 2, 3",
                Show::Warnings {
                    errors_only: false,
                    offset: 2,
                    count: Some(3),
                },
            ),
            (
                "SHOW WARNINGS LIMIT 3 OFFSET 2",
                Show::Warnings {
                    errors_only: false,
                    offset: 2,
                    count: Some(3),
                },
            ),
            (
                "SHOW COUNT(*) WARNINGS",
                Show::WarningCount { errors_only: false },
            ),
            (
                "show count ( * ) errors",
                Show::WarningCount { errors_only: true },
            ),
            (
                "SHOW TABLE STATUS",
                Show::TableStatus {
                    db: None,
                    filter: Filter::None,
                },
            ),
            (
                "SHOW TABLE STATUS FROM d LIKE 't'",
                Show::TableStatus {
                    db: Some("d".into()),
                    filter: like("t"),
                },
            ),
            ("SHOW FUNCTION STATUS WHERE Db = 'd'", Show::RoutineStatus),
            ("SHOW PROCEDURE STATUS LIKE '%'", Show::RoutineStatus),
            ("SHOW TRIGGERS FROM d LIKE 't'", Show::Triggers),
            ("SHOW EVENTS", Show::Events),
            ("SHOW PROCESSLIST", Show::Processlist { full: false }),
            ("show full processlist;", Show::Processlist { full: true }),
            ("SHOW ENGINES", Show::Engines),
            ("SHOW STORAGE ENGINES", Show::Engines),
            (
                "SHOW COLLATION LIKE 'utf8%'",
                Show::Collation(like("utf8%")),
            ),
            ("SHOW CHARSET", Show::Charset(Filter::None)),
            (
                "SHOW CHARACTER SET WHERE Charset = 'x'",
                Show::Charset(where_("Charset = 'x'")),
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(show(sql), want, "{sql}");
        }
    }

    #[test]
    fn comments_spacing_and_quotes() {
        let tables = |filter| Show::Tables {
            full: false,
            db: None,
            filter,
        };
        for (sql, want) in [
            ("  SHOW\n\tTABLES  ;  ", tables(Filter::None)),
            ("SHOW /* a;b */ TABLES # c", tables(Filter::None)),
            ("SHOW TABLES -- x\n", tables(Filter::None)),
            ("SHOW TABLES /* open to the end", tables(Filter::None)),
            ("SHOW TABLES LIKE 'a;b'", tables(like("a;b"))),
            ("SHOW TABLES LIKE 'it''s'", tables(like("it's"))),
            ("SHOW TABLES LIKE 'a\\'b'", tables(like("a'b"))),
            ("SHOW TABLES;;", tables(Filter::None)),
        ] {
            assert_eq!(show(sql), want, "{sql}");
        }
    }

    #[test]
    fn malformed_is_1064_quoted_from_the_failure() {
        for (sql, near) in [
            ("SHOW", ""),
            ("SHOW;", ""),
            ("SHOW TABLES LIKE", ""),
            ("SHOW TABLES LIKE x", "x"),
            ("SHOW TABLES LIKE 'a", "'a"),
            ("SHOW TABLES FROM `d", "`d"),
            ("SHOW TABLES junk", "junk"),
            ("SHOW TABLES; SHOW DATABASES", "; SHOW DATABASES"),
            ("SHOW DATABASES LIKE 'a' x", "x"),
            ("SHOW COLUMNS t", "t"),
            ("SHOW COLUMNS FROM 't'", "'t'"),
            ("SHOW COLUMNS FROM a.b.c", ".c"),
            ("SHOW INDEX FROM", ""),
            ("SHOW CREATE TABLE", ""),
            ("SHOW CREATE TABLE d.", ""),
            ("SHOW CREATE DATABASE", ""),
            ("SHOW CREATE DATABASE IF d", "d"),
            ("SHOW FULL DATABASES", "DATABASES"),
            ("SHOW GLOBAL TABLES", "TABLES"),
            ("SHOW `TABLES`", "`TABLES`"),
            ("SHOW 'x'", "'x'"),
            ("SHOW WARNINGS LIMIT", ""),
            ("SHOW WARNINGS LIMIT x", "x"),
            ("SHOW COUNT(x) WARNINGS", "x) WARNINGS"),
            ("SHOW COUNT(*) TABLES", "TABLES"),
            ("SHOW PROCESSLIST x", "x"),
            ("SHOW ENGINES x", "x"),
            ("SHOW TABLE x", "x"),
            ("SHOW CHARACTER x", "x"),
            ("SHOW TABLES WHERE", ""),
            ("SHOW TABLES WHERE a = ", ""),
            ("SHOW TABLES\nLIKE\n1", "1"),
        ] {
            assert_eq!(error(sql), (1064, near.to_string()), "{sql}");
        }
    }

    #[test]
    fn forms_zipdb_lacks_are_1235() {
        for (sql, what) in [
            ("SHOW GRANTS", "SHOW GRANTS"),
            ("show grants for u", "SHOW GRANTS"),
            ("SHOW MASTER STATUS", "SHOW MASTER"),
            ("SHOW CREATE VIEW v", "SHOW CREATE VIEW"),
            ("SHOW CREATE PROCEDURE p", "SHOW CREATE PROCEDURE"),
        ] {
            let e = match parse(sql) {
                Some(Err(e)) => e,
                other => panic!("{sql}: {other:?}"),
            };
            assert_eq!(e.code(), 1235, "{sql}");
            assert!(e.message().contains(&format!("'{what}'")), "{sql}: {e:?}");
        }
    }

    #[test]
    fn hostile_texts_are_bounded() {
        // A long dotted name stops at the second dot, whatever follows.
        let long = format!("SHOW COLUMNS FROM {}", vec!["a"; 100_000].join("."));
        assert_eq!(error(&long).0, 1064);
        let names = format!("SHOW TABLES FROM {}", vec!["d"; 100_000].join(", "));
        assert_eq!(error(&names).0, 1064);
        // A deep WHERE is the parser's recursion limit (1436), not a stack overflow.
        let deep = format!(
            "SHOW TABLES WHERE {}1{}",
            "(".repeat(50_000),
            ")".repeat(50_000)
        );
        assert_eq!(parse(&deep).expect("SHOW").unwrap_err().code(), 1436);
        // A long flat chain is a tree as deep as the chain, dropped on a stack sized for it.
        let chain = format!("SHOW FUNCTION STATUS WHERE {}1", "1+".repeat(200_000));
        assert_eq!(show(&chain), Show::RoutineStatus);
        let ident = format!("SHOW CREATE DATABASE `{}`", "x".repeat(1 << 20));
        assert!(matches!(show(&ident), Show::CreateDatabase(n) if n.len() == 1 << 20));
        let semis = format!("SHOW TABLES{}", ";".repeat(100_000));
        assert!(matches!(show(&semis), Show::Tables { .. }));
    }
}
