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

/// [`parse_ast`] of a statement front/lex.rs cut out of a longer text, from the tokens it
/// made of it when it kept them (so that a long statement is tokenized once).
pub(crate) fn parse_piece(
    piece: crate::front::lex::Piece<'_>,
) -> Result<Vec<sqlparser::ast::Statement>, SqlError> {
    let Some(tokens) = piece.tokens else {
        return parse_ast(piece.text);
    };
    // A piece has a token besides whitespace and comments, so it is not empty.
    parse_bounded(piece.text, Some(tokens))
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
    let v = parse_bounded(sql, None)?;
    if v.is_empty() {
        return Err(SqlError::empty());
    }
    Ok(v.into_iter().map(|ast| Statement { ast }).collect())
}

/// Texts up to this long are parsed on the caller's stack; see [`parse_stack_bytes`].
const INLINE_PARSE_BYTES_MAX: usize = 8 << 10;

/// The stack that parsing `len` bytes may need. An operator chain is parsed by a loop but
/// comes out as a tree as deep as the chain is long (2 bytes of text a level: `1+1+...`),
/// and a tree the parser gives up on half-way is dropped recursively, before
/// [`crate::front::depth::shape`] can refuse it without recursion. Dropping costs well under
/// 128 bytes of stack a level; the parser's own recursion (at most
/// [`crate::front::depth::PARSE_DEPTH_MAX`] levels) grows its stack on the heap.
fn parse_stack_bytes(len: usize) -> usize {
    (len / 2).saturating_mul(128).saturating_add(8 << 20)
}

/// Parses, then rebalances and bounds the statements' nesting ([`crate::front::depth`]). A long text
/// is parsed on a stack of its own, reserved for its size and only touched as deep as used.
/// `tokens`: the text's, when the caller has them.
fn parse_bounded(
    sql: &str,
    tokens: Option<Vec<sqlparser::tokenizer::TokenWithSpan>>,
) -> Result<Vec<sqlparser::ast::Statement>, SqlError> {
    let run = || {
        // Only the head of a literal INSERT is shaped: its rows are literals, at most two
        // levels deep (`-1`), and walking a bulk INSERT's thousands of them cost a few per
        // cent of a load. A head that fails either step declines the fast path, and the
        // whole text is parsed and shaped below, which reports the error.
        let head = |h: &str| -> Result<Vec<sqlparser::ast::Statement>, ()> {
            let mut v = parse_mysql(h).map_err(|_| ())?;
            crate::front::depth::shape(&mut v).map_err(|_| ())?;
            Ok(v)
        };
        if let Some(v) = crate::front::values::literal_insert(sql, head) {
            return Ok(v);
        }
        let parsed = match tokens {
            Some(tokens) => parse_tokens(tokens),
            None => parse_mysql(sql),
        };
        let mut v = parsed.map_err(|e| match e {
            ParserError::RecursionLimitExceeded => crate::front::depth::too_deep(),
            e => syntax_error(sql, &e),
        })?;
        crate::front::depth::shape(&mut v)?;
        Ok(v)
    };
    on_parse_stack(sql.len(), run)
}

/// Runs `f`, which parses a text `len` bytes long: on the caller's stack when the text is
/// short, else on a stack of its own reserved for its size ([`parse_stack_bytes`]).
pub(crate) fn on_parse_stack<T>(len: usize, f: impl FnOnce() -> T) -> T {
    if len <= INLINE_PARSE_BYTES_MAX {
        f()
    } else {
        stacker::grow(parse_stack_bytes(len), f)
    }
}

/// The parser on MySQL text, with `UPDATE [LOW_PRIORITY] IGNORE` (which the parser reads as
/// an update of a table named IGNORE) handed to it as `UPDATE OR IGNORE`, its SQLite spelling:
/// [`crate::bind::dml::compile_update`] reads that as IGNORE. Tokens keep their places in the text,
/// so errors still quote it as written.
pub(super) fn parse_mysql(sql: &str) -> Result<Vec<sqlparser::ast::Statement>, ParserError> {
    let tokens = sqlparser::tokenizer::Tokenizer::new(&MySqlDialect {}, sql)
        .with_unescape(true)
        .tokenize_with_location()?;
    parse_tokens(tokens)
}

/// [`parse_mysql`] on the text's tokens.
fn parse_tokens(
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> Result<Vec<sqlparser::ast::Statement>, ParserError> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
    let dialect = MySqlDialect {};
    let is_kw = |t: &TokenWithSpan, k: Keyword| matches!(&t.token, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let parser = Parser::new(&dialect).with_recursion_limit(crate::front::depth::PARSE_DEPTH_MAX);
    // Most statements need none of the rewrites below: their tokens go to the parser as they
    // are (a bulk INSERT's copy of every token cost as much as a tenth of its parse).
    if !tokens.iter().any(|t| {
        matches!(t.token, Token::StringConcat | Token::Overlap) || is_kw(t, Keyword::UPDATE)
    }) {
        return parser.with_tokens_with_locations(tokens).parse_statements();
    }
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len() + 2);
    let mut at_start = true;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if matches!(t.token, Token::Whitespace(_)) {
            out.push(t.clone());
            i += 1;
            continue;
        }
        let starts = at_start;
        at_start = t.token == Token::SemiColon;
        // MySQL's lexer reads `||` as OR (sql_mode has no PIPES_AS_CONCAT here) and `&&` as
        // AND, with their precedence; the parser would read them as other operators.
        let synonym = match t.token {
            Token::StringConcat => Some("OR"),
            Token::Overlap => Some("AND"),
            _ => None,
        };
        if let Some(k) = synonym {
            out.push(TokenWithSpan {
                token: Token::make_keyword(k),
                span: t.span,
            });
            i += 1;
            continue;
        }
        out.push(t.clone());
        i += 1;
        if !(starts && is_kw(t, Keyword::UPDATE)) {
            continue;
        }
        // The next words: LOW_PRIORITY (dropped), then IGNORE.
        let next_word = |mut j: usize| {
            while j < tokens.len() && matches!(tokens[j].token, Token::Whitespace(_)) {
                j += 1;
            }
            j
        };
        let mut j = next_word(i);
        if j < tokens.len() && is_kw(&tokens[j], Keyword::LOW_PRIORITY) {
            out.extend(tokens[i..j].iter().cloned());
            i = j + 1;
            j = next_word(i);
        }
        if j < tokens.len() && is_kw(&tokens[j], Keyword::IGNORE) {
            out.extend(tokens[i..j].iter().cloned());
            let span = tokens[j].span;
            for token in [
                Token::make_keyword("OR"),
                Token::Whitespace(Whitespace::Space),
                Token::make_keyword("IGNORE"),
            ] {
                out.push(TokenWithSpan { token, span });
            }
            i = j + 1;
        }
    }
    parser.with_tokens_with_locations(out).parse_statements()
}

/// Turns the parser's message ("... at Line: L, Column: C") into MySQL's wording, quoting the
/// statement from the place where parsing stopped.
pub(crate) fn syntax_error(sql: &str, e: &ParserError) -> SqlError {
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

/// The text of a query that arrived as bytes. Clients send binary strings inside text queries
/// (PyMySQL and mysqlclient send `_binary'...'` with the raw bytes, only quotes, backslashes,
/// NUL, CR, LF and ^Z escaped), so a query need not be valid UTF-8. Each string literal that
/// is not valid UTF-8 becomes a hex literal of its (unescaped) bytes, dropping a charset
/// introducer before it (`_binary'\xff'` is `X'FF'`); anything else invalid outside string
/// literals becomes U+FFFD, as before.
pub fn sql_from_bytes(b: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out: Vec<u8> = Vec::with_capacity(b.len() * 2);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let rest = &b[i..];
        let skip_to = |end: &[u8], from: usize| {
            b[from..]
                .windows(end.len())
                .position(|w| w == end)
                .map_or(b.len(), |p| from + p + end.len())
        };
        let next = if c == b'\'' || c == b'"' {
            let (value, end, closed) = string_literal(b, i);
            if closed && std::str::from_utf8(&b[i..end]).is_err() {
                // Drop an introducer (`_binary`, `_latin1`, ...) right before the literal.
                let mut k = out.len();
                while k > 0 && out[k - 1].is_ascii_whitespace() {
                    k -= 1;
                }
                let word_start = out[..k]
                    .iter()
                    .rposition(|&x| !(x.is_ascii_alphanumeric() || x == b'_'))
                    .map_or(0, |p| p + 1);
                if out.get(word_start) == Some(&b'_') && word_start < k {
                    out.truncate(word_start);
                }
                out.extend_from_slice(b"X'");
                for byte in value {
                    out.extend_from_slice(format!("{byte:02X}").as_bytes());
                }
                out.push(b'\'');
                i = end;
                continue;
            }
            end
        } else if c == b'`' {
            skip_to(&b"`"[..], i + 1)
        } else if c == b'#'
            || (rest.starts_with(b"--") && rest.get(2).is_none_or(|x| x.is_ascii_whitespace()))
        {
            skip_to(&b"\n"[..], i)
        } else if rest.starts_with(b"/*") {
            skip_to(&b"*/"[..], i + 2)
        } else {
            i + 1
        };
        out.extend_from_slice(&b[i..next]);
        i = next;
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The string literal whose opening quote is at `b[start]`: its value with MySQL's escapes
/// undone, where it ends (after the closing quote), and whether it was closed.
fn string_literal(b: &[u8], start: usize) -> (Vec<u8>, usize, bool) {
    let q = b[start];
    let mut v = Vec::new();
    let mut j = start + 1;
    while j < b.len() {
        let c = b[j];
        if c == b'\\' && j + 1 < b.len() {
            match b[j + 1] {
                b'0' => v.push(0),
                b'b' => v.push(8),
                b'n' => v.push(b'\n'),
                b'r' => v.push(b'\r'),
                b't' => v.push(b'\t'),
                b'Z' => v.push(26),
                // LIKE's wildcards keep their backslash.
                x @ (b'%' | b'_') => v.extend_from_slice(&[b'\\', x]),
                x => v.push(x),
            }
            j += 2;
        } else if c == q {
            if b.get(j + 1) == Some(&q) {
                v.push(q);
                j += 2;
            } else {
                return (v, j + 1, true);
            }
        } else {
            v.push(c);
            j += 1;
        }
    }
    (v, b.len(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_string_literals_in_a_query_survive_as_hex() {
        // Valid UTF-8 is passed through untouched.
        assert_eq!(sql_from_bytes("SELECT 'café'".as_bytes()), "SELECT 'café'");
        // What PyMySQL sends for b"\xff\x00'\\\n" and a string around it.
        let q = b"INSERT INTO t VALUES (1, _binary'\xff\\0\\'\\\\\\n', 'a\\'b', `c``d`) # \xfe";
        assert_eq!(
            sql_from_bytes(q),
            "INSERT INTO t VALUES (1, X'FF00275C0A', 'a\\'b', `c``d`) # \u{fffd}"
        );
        assert_eq!(sql_from_bytes(b"SELECT \"\x80\"\"\""), "SELECT X'8022'");
        // Doubled quotes, other introducers, unterminated literals, comments.
        assert_eq!(
            sql_from_bytes(b"SELECT _latin1  'a''\xe9'"),
            "SELECT X'6127E9'"
        );
        assert_eq!(
            sql_from_bytes(b"SELECT 1 /* it's \xff */"),
            "SELECT 1 /* it's \u{fffd} */"
        );
        assert_eq!(sql_from_bytes(b"SELECT '\xff"), "SELECT '\u{fffd}");
        // The LIKE escapes keep their backslash.
        assert_eq!(sql_from_bytes(b"SELECT '\\%\xff'"), "SELECT X'5C25FF'");
    }

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
        assert_eq!(e.code(), 1064);
        assert_eq!(e.sqlstate(), "42000");
        assert!(
            e.message().contains("near 'FORM t' at line 1"),
            "{}",
            e.message()
        );
        let e = parse("SELECT 1;\nSELEC 2").unwrap_err();
        assert!(
            e.message().contains("near 'SELEC 2' at line 2"),
            "{}",
            e.message()
        );
        // A long tail is cut.
        let long = format!("SELEC {}", "x".repeat(200));
        let e = parse(&long).unwrap_err();
        assert!(e.message().contains("...' at line 1"), "{}", e.message());
    }

    #[test]
    fn empty_and_hostile_input_is_an_error_not_a_panic() {
        assert_eq!(parse("").unwrap_err().code(), 1065);
        assert_eq!(parse("  ;  ").unwrap_err().code(), 1065);
        assert_eq!(parse("/* nothing */").unwrap_err().code(), 1065);
        // Deep nesting hits the parser's recursion limit: MySQL's stack overrun error, not a
        // stack overflow.
        let deep = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(parse(&deep).unwrap_err().code(), 1436);
        assert_eq!(parse("SELECT 'unterminated").unwrap_err().code(), 1064);
        assert_eq!(parse("\u{0}\u{1}\u{fffd}").unwrap_err().code(), 1064);
    }

    #[test]
    fn update_ignore_is_not_a_table_named_ignore() {
        use sqlparser::ast::{SqliteOnConflict, Statement as S};
        let or_of = |sql: &str| match parse_ast(sql).unwrap().remove(0) {
            S::Update(u) => (u.or, u.table.relation.to_string()),
            other => panic!("{other:?}"),
        };
        let ignore = Some(SqliteOnConflict::Ignore);
        assert_eq!(or_of("UPDATE IGNORE t SET a = 1"), (ignore, "t".into()));
        assert_eq!(
            or_of("update /* c */ low_priority ignore t x set a = 1"),
            (ignore, "t x".into())
        );
        assert_eq!(or_of("UPDATE t SET a = 1"), (None, "t".into()));
        assert_eq!(
            or_of("UPDATE `ignore` SET a = 1"),
            (None, "`ignore`".into())
        );
        // Only at the start of a statement, and each statement of several.
        let v = parse_ast("SELECT 1; UPDATE IGNORE t SET a = 1").unwrap();
        assert!(matches!(&v[1], S::Update(u) if u.or == ignore));
        // Errors still quote the text as written.
        let e = parse("UPDATE IGNORE t SET").unwrap_err();
        assert_eq!(e.code(), 1064);
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
