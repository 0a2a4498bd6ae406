//! Parsing: SQL text to statements.

use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserError};

use crate::SqlError;

/// One parsed statement.
#[derive(Debug, Clone)]
pub struct Statement {
    ast: sqlparser::ast::Statement,
}

impl Statement {
    /// The construct, as a user would name it: `SELECT`, `INSERT`, `CREATE TABLE`, `SHOW
    /// VARIABLES`, ... (the statement's leading keywords).
    pub fn kind(&self) -> String {
        kind_of(&self.ast.to_string())
    }
}

/// Parses to the parser's AST (for the executor).
pub(crate) fn parse_ast(sql: &str) -> Result<Vec<sqlparser::ast::Statement>, SqlError> {
    parse(sql).map(|v| v.into_iter().map(|s| s.ast).collect())
}

/// The construct a statement's text starts with (`CREATE TABLE`, `SHOW VARIABLES`, ...).
pub(crate) fn kind_of(text: &str) -> String {
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or("").to_ascii_uppercase();
    let two_words = matches!(
        first.as_str(),
        "CREATE" | "DROP" | "ALTER" | "SHOW" | "START" | "SET" | "RENAME" | "LOCK"
    );
    match (two_words, words.next()) {
        (true, Some(second)) => format!("{first} {}", second.to_ascii_uppercase()),
        _ => first,
    }
}

/// Parses one or more `;`-separated statements (MySQL dialect, `/*! ... */` hints included).
pub fn parse(sql: &str) -> Result<Vec<Statement>, SqlError> {
    if sql.trim().trim_end_matches(';').trim().is_empty() {
        return Err(SqlError::empty());
    }
    match Parser::parse_sql(&MySqlDialect {}, sql) {
        Ok(v) if v.is_empty() => Err(SqlError::empty()),
        Ok(v) => Ok(v.into_iter().map(|ast| Statement { ast }).collect()),
        Err(e) => Err(syntax_error(sql, &e)),
    }
}

/// Turns the parser's message ("... at Line: L, Column: C") into MySQL's wording, quoting the
/// statement from the place where parsing stopped.
fn syntax_error(sql: &str, e: &ParserError) -> SqlError {
    let msg = e.to_string();
    let Some((line, col)) = location(&msg) else {
        // No position (e.g. nesting too deep): quote the start of the statement.
        return SqlError::syntax(sql.trim_start(), 1);
    };
    let near = sql
        .lines()
        .nth(line.saturating_sub(1) as usize)
        .map(|l| {
            let skip = col.saturating_sub(1) as usize;
            let start = l.char_indices().nth(skip).map_or(l.len(), |(i, _)| i);
            // The rest of the statement from there, lines joined as MySQL shows them.
            let offset = l.as_ptr() as usize - sql.as_ptr() as usize + start;
            &sql[offset..]
        })
        .unwrap_or("");
    SqlError::syntax(near, line)
}

/// "(...) at Line: 3, Column: 14" → (3, 14).
fn location(msg: &str) -> Option<(u64, u64)> {
    let at = msg.rfind("Line: ")?;
    let rest = &msg[at + "Line: ".len()..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let col: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, col.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sql: &str) -> Vec<String> {
        parse(sql).unwrap().iter().map(Statement::kind).collect()
    }

    #[test]
    fn what_sysbench_and_the_client_send_parses() {
        // From FIELD-NOTES: sysbench's prepare, its run statements, and the client's.
        let cases = [
            (
                "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, \
                 c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) \
                 /*! ENGINE = innodb ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 */",
                "CREATE TABLE",
            ),
            ("INSERT INTO sbtest1(k, c, pad) VALUES(1, 'a', 'b'),(2, 'c', 'd')", "INSERT"),
            ("CREATE INDEX k_1 ON sbtest1(k)", "CREATE INDEX"),
            ("SELECT c FROM sbtest1 WHERE id=?", "SELECT"),
            ("SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", "SELECT"),
            ("UPDATE sbtest1 SET k=k+1 WHERE id=?", "UPDATE"),
            ("DELETE FROM sbtest1 WHERE id=?", "DELETE"),
            ("BEGIN", "BEGIN"),
            ("COMMIT", "COMMIT"),
            ("DROP TABLE IF EXISTS sbtest1", "DROP TABLE"),
            ("select @@version_comment limit 1", "SELECT"),
            ("show databases", "SHOW DATABASES"),
        ];
        for (sql, kind) in cases {
            assert_eq!(kinds(sql), [kind], "{sql}");
        }
        assert_eq!(kinds("BEGIN; COMMIT;"), ["BEGIN", "COMMIT"]);
    }

    #[test]
    fn syntax_errors_quote_the_statement_from_the_failure_like_mysql() {
        let e = parse("SELECT * FORM t").unwrap_err();
        assert_eq!(e.code, 1064);
        assert_eq!(e.sqlstate, "42000");
        assert!(
            e.message.contains("near 'FORM t' at line 1"),
            "{}",
            e.message
        );
        let e = parse("SELECT 1;\nSELEC 2").unwrap_err();
        assert!(
            e.message.contains("near 'SELEC 2' at line 2"),
            "{}",
            e.message
        );
        // A long tail is cut.
        let long = format!("SELEC {}", "x".repeat(200));
        let e = parse(&long).unwrap_err();
        assert!(e.message.contains("...' at line 1"), "{}", e.message);
    }

    #[test]
    fn empty_and_hostile_input_is_an_error_not_a_panic() {
        assert_eq!(parse("").unwrap_err().code, 1065);
        assert_eq!(parse("  ;  ").unwrap_err().code, 1065);
        assert_eq!(parse("/* nothing */").unwrap_err().code, 1065);
        // Deep nesting hits the parser's recursion limit: an error, not a stack overflow.
        let deep = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(parse(&deep).unwrap_err().code, 1064);
        assert_eq!(parse("SELECT 'unterminated").unwrap_err().code, 1064);
        assert_eq!(parse("\u{0}\u{1}\u{fffd}").unwrap_err().code, 1064);
    }

    #[test]
    fn location_is_read_from_the_message() {
        assert_eq!(
            location("Expected: x, found: y at Line: 3, Column: 14"),
            Some((3, 14))
        );
        assert_eq!(location("no position"), None);
    }
}
