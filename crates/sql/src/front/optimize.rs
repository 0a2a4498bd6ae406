//! The grammar of `OPTIMIZE [NO_WRITE_TO_BINLOG | LOCAL] TABLE|TABLES t [, t2 ...]`
//! (admin/optimize.rs runs it), read from sqlparser's tokens: the parser has no MySQL form of
//! the statement. Table names are identifiers, plain or in backticks, as MariaDB reads them: a
//! string literal, or a quote or backtick left open, is a syntax error (1064) quoting the text
//! from it.

use sqlparser::dialect::MySqlDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::SqlError;

/// The most tables one OPTIMIZE may name. MariaDB sets no number (only the packet size
/// bounds the list), but a packet-size list would hold gigabytes of tokens before the
/// statement's memory budget could see it. mysqlcheck names one database's tables per
/// statement; this is far above what a database holds in practice.
pub(crate) const OPTIMIZE_TABLES_MAX: usize = 65_536;

/// A table an OPTIMIZE names: `db.table`, or `table` in the current database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableName {
    pub db: Option<String>,
    pub table: String,
}

/// The tables of an OPTIMIZE statement, when `sql` is one (decided on its first word).
pub(crate) fn parse(sql: &str) -> Option<Result<Vec<TableName>, SqlError>> {
    let text = sql.trim_start();
    let head = text.get(..8)?;
    let word_goes_on = text[8..]
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if !head.eq_ignore_ascii_case("OPTIMIZE") || word_goes_on {
        return None;
    }
    // Counted on the bytes, before any token is made: a comma in a comment or a string counts.
    if sql.bytes().filter(|&b| b == b',').count() >= OPTIMIZE_TABLES_MAX {
        return Some(Err(too_many()));
    }
    // Comments go first: MariaDB ends a comment left open at the end of the text, where the
    // tokenizer refuses it.
    let sql = &*crate::front::lex::without_comments(sql);
    let tokens = match Tokenizer::new(&MySqlDialect {}, sql)
        .with_unescape(true)
        .tokenize_with_location()
    {
        Ok(t) => t,
        Err(e) => {
            return Some(Err(crate::front::parse::syntax_error(
                sql,
                &sqlparser::parser::ParserError::TokenizerError(e.to_string()),
            )))
        }
    };
    let t: Vec<TokenWithSpan> = tokens
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let kw = |i: usize, k: &str| {
        matches!(t.get(i).map(|x| &x.token),
            Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
    };
    if !kw(0, "OPTIMIZE") {
        return None;
    }
    Some(tables(sql, &t, &kw))
}

fn tables(
    sql: &str,
    t: &[TokenWithSpan],
    kw: &dyn Fn(usize, &str) -> bool,
) -> Result<Vec<TableName>, SqlError> {
    // Errors quote the whole statement, as they did before this reader used tokens; a string
    // where a name belongs is quoted from the string, as MariaDB does.
    let whole = || SqlError::syntax(sql.trim_start(), 1);
    let name = |i: usize| -> Result<String, SqlError> {
        match t.get(i) {
            Some(TokenWithSpan {
                token: Token::Word(w),
                ..
            }) if matches!(w.quote_style, None | Some('`')) => Ok(w.value.clone()),
            Some(
                x @ TokenWithSpan {
                    token: Token::SingleQuotedString(_) | Token::DoubleQuotedString(_),
                    ..
                },
            ) => Err(near(sql, x)),
            _ => Err(whole()),
        }
    };
    let mut i = 1;
    if kw(i, "NO_WRITE_TO_BINLOG") || kw(i, "LOCAL") {
        i += 1;
    }
    if !(kw(i, "TABLE") || kw(i, "TABLES")) {
        return Err(whole());
    }
    i += 1;
    let mut names = Vec::new();
    loop {
        let first = name(i)?;
        let (db, table) = if t.get(i + 1).is_some_and(|x| x.token == Token::Period) {
            let table = name(i + 2)?;
            i += 3;
            (Some(first), table)
        } else {
            i += 1;
            (None, first)
        };
        names.push(TableName { db, table });
        match t.get(i).map(|x| &x.token) {
            None => break,
            Some(Token::Comma) => i += 1,
            Some(Token::SemiColon) if i + 1 == t.len() => break,
            Some(_) => return Err(whole()),
        }
    }
    Ok(names)
}

fn too_many() -> SqlError {
    SqlError::unsupported(&format!(
        "OPTIMIZE TABLE of more than {OPTIMIZE_TABLES_MAX} tables"
    ))
}

/// 1064 quoting `sql` from token `x` on.
fn near(sql: &str, x: &TokenWithSpan) -> SqlError {
    let at = x.span.start;
    let offset: usize = sql
        .split_inclusive('\n')
        .take(at.line.saturating_sub(1) as usize)
        .map(str::len)
        .sum();
    let line = &sql[offset..];
    let col = line
        .char_indices()
        .nth(at.column.saturating_sub(1) as usize)
        .map_or(line.len(), |(c, _)| c);
    SqlError::syntax(&line[col..], at.line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(sql: &str) -> Vec<TableName> {
        match parse(sql) {
            Some(Ok(v)) => v,
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn n(db: Option<&str>, table: &str) -> TableName {
        TableName {
            db: db.map(str::to_string),
            table: table.to_string(),
        }
    }

    fn err(sql: &str) -> SqlError {
        match parse(sql) {
            Some(Err(e)) => e,
            other => panic!("{sql}: expected an error, got {other:?}"),
        }
    }

    #[test]
    fn names_plain_quoted_and_qualified() {
        assert_eq!(
            ok("optimize local tables t, `a``b`, d.`x y`;"),
            [n(None, "t"), n(None, "a`b"), n(Some("d"), "x y")]
        );
        assert_eq!(ok("OPTIMIZE /* c */ TABLE\n t -- done\n"), [n(None, "t")]);
        // MariaDB ends an unclosed comment at the end of the text.
        assert_eq!(ok("OPTIMIZE TABLE t /* c"), [n(None, "t")]);
        assert!(parse("OPTIMIZER").is_none());
        assert!(parse(&format!("OPTIMIZER {}", ",".repeat(OPTIMIZE_TABLES_MAX))).is_none());
        assert!(parse("SELECT 1").is_none());
    }

    #[test]
    fn open_quotes_and_strings_are_syntax_errors_quoted_from_there() {
        // MariaDB 10.11: ... near '`t' at line 1, near ''t' at line 1, near ''t'' at line 1.
        for (sql, near) in [
            ("OPTIMIZE TABLE `t", "`t"),
            ("OPTIMIZE TABLE 't", "'t"),
            ("OPTIMIZE TABLE \"t", "\"t"),
            ("OPTIMIZE TABLE 't'", "'t'"),
            ("OPTIMIZE TABLE t, \"u\"", "\"u\""),
            ("OPTIMIZE TABLE d.'t'", "'t'"),
            ("OPTIMIZE TABLE t `u", "`u"),
        ] {
            let e = err(sql);
            assert_eq!(e.code(), 1064, "{sql}");
            assert!(
                e.message().contains(&format!("near '{near}' at line 1")),
                "{sql}: {}",
                e.message()
            );
        }
        for sql in [
            "OPTIMIZE TABLE",
            "OPTIMIZE TABLE t,",
            "OPTIMIZE TABLE t u",
            "OPTIMIZE TABLE d.",
            "OPTIMIZE t",
            "OPTIMIZE TABLE t; x",
        ] {
            assert_eq!(err(sql).code(), 1064, "{sql}");
        }
    }

    #[test]
    fn a_list_is_bounded_before_it_is_tokenized() {
        let list = |n: usize| {
            let names: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
            format!("OPTIMIZE TABLE {}", names.join(","))
        };
        assert_eq!(ok(&list(OPTIMIZE_TABLES_MAX)).len(), OPTIMIZE_TABLES_MAX);
        assert_eq!(err(&list(OPTIMIZE_TABLES_MAX + 1)).code(), 1235);
        // A packet-size list is refused without tokens: a 16 MB text, one comma a byte.
        let huge = format!("OPTIMIZE TABLE t{}", ",".repeat(16 << 20));
        let t0 = std::time::Instant::now();
        assert_eq!(err(&huge).code(), 1235);
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    }
}
