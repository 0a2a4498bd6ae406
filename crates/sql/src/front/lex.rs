//! The text passes that come before a statement is read, on sqlparser's tokenizer: opening
//! executable comments (`/*! … */`), dropping comments, and splitting a multi-statement text
//! at its `;`s ([`split_statements`]). No byte scanner of its own: where a quote, an
//! identifier or a comment ends is the tokenizer's word, as it is for the parser.
//!
//! sqlparser's MySQL dialect opens every `/*! … */` itself, whatever its version, and leaves
//! no trace of where it did; MySQL skips those newer than the server. The tokenizer here runs
//! [`Lexing`], the MySQL dialect with that one switch off, so that executable comments come
//! out as comment tokens and [`executable_comments`] decides on each.
//!
//! A text without `;` is not tokenized here at all: its one statement's reader tokenizes it
//! (or, for a bulk INSERT of literals, reads its rows without tokens: front/values.rs). A
//! text with `;` is tokenized once, and the statements in it that are long keep their tokens
//! ([`Piece`]), which the parser reads instead of tokenizing them again.
//!
//! What bounds it: each pass tokenizes its text a window at a time ([`stream`]), so it holds
//! a window's tokens, not the text's; what it keeps is one entry per comment it rewrites or
//! statement it cuts out, and the tokens of the long statements (those their parse would
//! hold anyway).

use std::borrow::Cow;

use sqlparser::dialect::{Dialect, MySqlDialect};
use sqlparser::tokenizer::{
    Location, Span, Token, TokenWithSpan, Tokenizer, TokenizerError, Whitespace,
};

/// sqlparser's MySQL dialect for tokenizing, executable comments left as comments. It is the
/// MySQL dialect to every `dialect_of!` test, and forwards each method the tokenizer asks
/// that the MySQL dialect answers differently from the default.
#[derive(Debug)]
pub(crate) struct Lexing;

impl Dialect for Lexing {
    fn dialect(&self) -> std::any::TypeId {
        MySqlDialect {}.dialect()
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        MySqlDialect {}.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        MySqlDialect {}.is_identifier_part(ch)
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        MySqlDialect {}.is_delimited_identifier_start(ch)
    }
    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        MySqlDialect {}.identifier_quote_style(identifier)
    }
    fn supports_string_literal_backslash_escape(&self) -> bool {
        MySqlDialect {}.supports_string_literal_backslash_escape()
    }
    fn supports_string_literal_concatenation(&self) -> bool {
        MySqlDialect {}.supports_string_literal_concatenation()
    }
    fn ignores_wildcard_escapes(&self) -> bool {
        MySqlDialect {}.ignores_wildcard_escapes()
    }
    fn supports_numeric_prefix(&self) -> bool {
        MySqlDialect {}.supports_numeric_prefix()
    }
    fn supports_bitwise_shift_operators(&self) -> bool {
        MySqlDialect {}.supports_bitwise_shift_operators()
    }
    fn requires_single_line_comment_whitespace(&self) -> bool {
        MySqlDialect {}.requires_single_line_comment_whitespace()
    }
    fn supports_nested_comments(&self) -> bool {
        MySqlDialect {}.supports_nested_comments()
    }
    fn supports_multiline_comment_hints(&self) -> bool {
        false
    }
}

/// The tokenizer reads a window of about this many bytes at a time.
const WINDOW_BYTES: usize = 64 << 10;

/// Where the tokenizer stopped early: its error, and the byte offset where what it did not
/// read starts (the token it refused).
struct Stop {
    error: TokenizerError,
    at: usize,
}

/// Where the tokens [`stream`] hands out are in the text (their locations are the window's).
struct Place<'a> {
    offsets: Offsets<'a>,
    /// The window's first byte, and its location in the text.
    base: usize,
    line: u64,
    column: u64,
}

impl Place<'_> {
    /// The byte offset of `loc`. Asked in order, each costs the characters walked since the
    /// last.
    fn of(&mut self, loc: Location) -> usize {
        self.base + self.offsets.of(loc)
    }

    /// `loc`'s location in the text.
    fn global(&self, loc: Location) -> Location {
        if loc.line == 1 {
            Location::new(self.line, self.column + loc.column - 1)
        } else {
            Location::new(self.line + loc.line - 1, loc.column)
        }
    }
}

/// Tokenizes `sql`, handing each token to `see` in order, with what turns its locations into
/// byte offsets.
///
/// sqlparser's tokenizer keeps every token of its text, some 90 bytes each (a megabyte of
/// `;` would be 90 MB), so the text goes to it a window at a time, and only the window's
/// tokens are held. A window ends just after a `\n` or a `;` at least [`WINDOW_BYTES`] in.
/// Its tokens are taken as they are when it ends between two tokens: the tokenizer read it
/// without error and its last token is that `;` or ends at that newline (a `;` inside a
/// quote or a comment leaves one open: an error, or a line comment last). Else the tokens
/// before the last one (or before the one refused) are taken and the next window starts at
/// that token; when that is no token at all (one token longer than the window), the window is
/// read again twice as long, so a long string costs at most about twice its reading. The
/// tokenizer looks back only to see whether the last token was a word or a period, so a
/// window never starts right after one.
fn stream(
    sql: &str,
    unescape: bool,
    mut see: impl FnMut(TokenWithSpan, &mut Place<'_>),
) -> Option<Stop> {
    let mut at: usize = 0;
    // The window's location in the text.
    let (mut line, mut column) = (1, 1);
    let mut size = WINDOW_BYTES;
    let mut buf = Vec::new();
    loop {
        // Both bytes are whole characters in UTF-8.
        let end = sql
            .as_bytes()
            .get(at.saturating_add(size)..)
            .and_then(|rest| rest.iter().position(|&b| b == b'\n' || b == b';'))
            .map_or(sql.len(), |p| at + size + p + 1);
        let window = &sql[at..end];
        buf.clear();
        let r = Tokenizer::new(&Lexing, window)
            .with_unescape(unescape)
            .tokenize_with_location_into_buf(&mut buf);
        let last = end == sql.len();
        let whole = last
            || (r.is_ok()
                && (window.ends_with('\n')
                    || buf.last().is_some_and(|t| t.token == Token::SemiColon)));
        let mut keep = buf.len();
        if !whole {
            if r.is_ok() {
                keep = keep.saturating_sub(1);
            }
            while keep > 0 && matches!(buf[keep - 1].token, Token::Word(_) | Token::Period) {
                keep = keep.saturating_sub(1);
            }
            if keep == 0 {
                size = size.saturating_mul(2);
                continue;
            }
        }
        let mut place = Place {
            offsets: Offsets::new(window),
            base: at,
            line,
            column,
        };
        let stop_loc = keep.checked_sub(1).map(|k| buf[k].span.end);
        for t in buf.drain(..keep) {
            see(t, &mut place);
        }
        let stop = stop_loc.map_or(at, |l| place.of(l));
        if last {
            return r.err().map(|error| Stop { error, at: stop });
        }
        let next = if whole { end } else { stop };
        let read = &sql[at..next];
        match read.rfind('\n') {
            Some(p) => {
                line += read.bytes().filter(|&b| b == b'\n').count() as u64;
                column = read[p + 1..].chars().count() as u64 + 1;
            }
            None => column += read.chars().count() as u64,
        }
        at = next;
        size = WINDOW_BYTES;
    }
}

/// Whether the tokenizer stopped in a `/* … */` left open: MariaDB reads it to the end of the
/// text, where the tokenizer refuses it.
fn open_comment(e: &Stop) -> bool {
    e.error.message.contains("multi-line comment")
}

/// Byte offsets of the tokenizer's locations (lines, and columns counted in characters),
/// asked in order: one walk over the text in all.
struct Offsets<'a> {
    sql: &'a str,
    line: u64,
    column: u64,
    at: usize,
}

impl<'a> Offsets<'a> {
    fn new(sql: &'a str) -> Self {
        Offsets {
            sql,
            line: 1,
            column: 1,
            at: 0,
        }
    }

    fn of(&mut self, loc: Location) -> usize {
        if (loc.line, loc.column) < (self.line, self.column) {
            *self = Offsets::new(self.sql);
        }
        while self.line < loc.line {
            match self.sql[self.at..].find('\n') {
                Some(p) => {
                    self.at += p + 1;
                    self.line += 1;
                    self.column = 1;
                }
                None => return self.sql.len(),
            }
        }
        let rest = &self.sql[self.at..];
        let ahead = (loc.column - self.column) as usize;
        let step = rest
            .char_indices()
            .nth(ahead)
            .map_or(rest.len(), |(i, _)| i);
        self.at += step;
        self.column = loc.column;
        self.at
    }
}

/// MySQL's version as the server announces it for executable comments: `/*!80000 ... */` and
/// older run, `/*!80100 ... */` and newer are skipped, as MySQL 8.0.0 would.
const COMMENT_VERSION: u32 = 80000;

/// What an executable comment's body `c` (the text between `/*` and `*/`) becomes: `None`
/// for an ordinary comment (left as it is); `Some(Some(text))` for `/*! text */`, and for
/// `/*!NNNNN text */` when NNNNN is no newer than [`COMMENT_VERSION`]; `Some(None)` (nothing
/// runs) for a newer one and for MariaDB's `/*M!NNNNNN … */`, which MySQL skips.
fn executable(c: &str) -> Option<Option<&str>> {
    if c.starts_with("M!") {
        return Some(None);
    }
    let rest = c.strip_prefix('!')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits < 5 {
        return Some(Some(rest));
    }
    let runs = rest[..5].parse::<u32>().is_ok_and(|v| v <= COMMENT_VERSION);
    Some(runs.then_some(&rest[5..]))
}

/// Executable comments as MySQL runs them: `/*! text */` and `/*!NNNNN text */` become
/// ` text `, those skipped (see [`executable`]) a space. Dump files lean on these
/// (`/*!40101 SET NAMES utf8mb4 */`, `START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */`,
/// `SELECT /*!40001 SQL_NO_CACHE */ *`). `SQL_NO_CACHE` alone is dropped as well: there is no
/// query cache, and the parser does not take the word. Quotes and other comments are left as
/// they are; a comment left open runs to the end of the text.
pub(crate) fn executable_comments(sql: &str) -> Cow<'_, str> {
    // Most texts have none: decided without a token.
    if !sql.contains("/*!") && !sql.contains("/*M!") {
        return Cow::Borrowed(sql);
    }
    rewrite_comments(sql, false, |c| {
        executable(c).map(|text| text.filter(|t| !t.trim().eq_ignore_ascii_case("SQL_NO_CACHE")))
    })
}

/// `sql` with each comment replaced by a space (quoted text is left alone).
pub(crate) fn without_comments(sql: &str) -> Cow<'_, str> {
    if !(sql.contains("/*") || sql.contains('#') || sql.contains("--")) {
        return Cow::Borrowed(sql);
    }
    rewrite_comments(sql, true, |_| Some(None))
}

/// `sql` with each block comment for which `keep` (given what is between `/*` and `*/`)
/// answers `Some(Some(text))` replaced by ` text `, `Some(None)` by a space, and each line
/// comment, its newline included, by a space when `lines`.
fn rewrite_comments<'a>(
    sql: &'a str,
    lines: bool,
    keep: impl Fn(&str) -> Option<Option<&str>>,
) -> Cow<'a, str> {
    // (start, end, replacement), in bytes and in order.
    let mut edits: Vec<(usize, usize, Option<&str>)> = Vec::new();
    let stop = stream(sql, false, |t, place| {
        let (s, e) = match &t.token {
            Token::Whitespace(Whitespace::MultiLineComment(_)) => {
                (place.of(t.span.start), place.of(t.span.end))
            }
            Token::Whitespace(Whitespace::SingleLineComment { .. }) if lines => {
                (place.of(t.span.start), place.of(t.span.end))
            }
            _ => return,
        };
        if sql[s..].starts_with("/*") {
            if let Some(text) = keep(&sql[s + 2..e - 2]) {
                edits.push((s, e, text));
            }
        } else {
            // Its newline, which the token leaves out, goes with it.
            edits.push((s, e + usize::from(sql[e..].starts_with('\n')), None));
        }
    });
    // A comment left open starts where the tokenizer stopped and runs to the end.
    if let Some(stop) = stop.filter(open_comment) {
        if let Some(text) = keep(&sql[stop.at + 2..]) {
            edits.push((stop.at, sql.len(), text));
        }
    }
    if edits.is_empty() {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    for (s, e, text) in edits {
        out.push_str(&sql[copied..s]);
        out.push(' ');
        if let Some(text) = text {
            out.push_str(text);
            out.push(' ');
        }
        copied = e;
    }
    out.push_str(&sql[copied..]);
    Cow::Owned(out)
}

/// The statements of `sql`, each without its terminating `;`, in order, as MySQL's
/// multi-statement protocol runs them (CLIENT_MULTI_STATEMENTS: `SELECT 1; SELECT 2` in one
/// COM_QUERY, a result each). Pieces that are empty or only whitespace and comments are
/// dropped (`SELECT 1;;` is one statement), so the result is empty for a text with no
/// statement at all. Executable comments have been opened before this runs
/// ([`executable_comments`]).
///
/// A stored program (`CREATE TRIGGER`/`PROCEDURE`/`FUNCTION`/`EVENT`) has `;` inside its
/// `BEGIN ... END` body: MySQL reads it as one statement, and so does this, to the end of the
/// text (clients send such a statement alone, under `DELIMITER`). zipdb does not run stored
/// programs; the statement then fails as one, with an error.
///
/// A quote left open runs to the end of the text (the reader of that statement reports it);
/// so does a comment.
pub(crate) fn split_statements(sql: &str) -> Vec<Piece<'_>> {
    // The common case (one statement, no `;`, a bulk INSERT among them) is decided without a
    // token: the statement's reader tokenizes it once, or reads its rows without tokens
    // (front/values.rs).
    if !sql.contains(';') {
        return if has_code(sql) {
            vec![Piece::text(sql)]
        } else {
            Vec::new()
        };
    }
    let mut out = Vec::new();
    // The piece being read: where it starts (a byte, and its location in the text), whether
    // it has a token besides whitespace and comments, how its head reads, its tokens.
    let mut start = 0;
    let mut origin = Location::new(1, 1);
    let mut code = false;
    let mut head = Head::Start;
    let mut tokens: Vec<TokenWithSpan> = Vec::new();
    // Bytes of text whose tokens the pieces so far keep.
    let mut kept = 0;
    let stop = stream(sql, true, |t, place| {
        match &t.token {
            _ if head == Head::Program => return,
            Token::SemiColon => {
                if code {
                    let text = &sql[start..place.of(t.span.start)];
                    out.push(Piece::with_tokens(
                        text,
                        std::mem::take(&mut tokens),
                        &mut kept,
                    ));
                }
                tokens.clear();
                start = place.of(t.span.end);
                origin = place.global(t.span.end);
                code = false;
                head = Head::Start;
                return;
            }
            Token::Whitespace(_) => {}
            t => {
                code = true;
                head = head.next(t);
                if head == Head::Program {
                    tokens = Vec::new();
                    return;
                }
            }
        }
        let at = |l: Location| within(origin, place.global(l));
        let span = Span::new(at(t.span.start), at(t.span.end));
        tokens.push(TokenWithSpan::new(t.token, span));
    });
    let last = &sql[start..];
    if head == Head::Program {
        // Only a trailing `;` (and what follows it, if blank) is not part of the program.
        let t = last.trim_end();
        out.push(Piece::text(t.strip_suffix(';').unwrap_or(t).trim_end()));
    } else if let Some(stop) = stop {
        // What the tokenizer did not read is the last piece's: a quote left open is code, a
        // comment is not. Its reader tokenizes it again, and reports it.
        if code || !open_comment(&stop) {
            out.push(Piece::text(last));
        }
    } else if code {
        out.push(Piece::with_tokens(last, tokens, &mut kept));
    }
    out
}

/// A statement [`split_statements`] cut out: its text, and, when it is long, its tokens, so
/// that a long statement of a multi-statement text is not tokenized twice.
#[derive(Debug)]
pub(crate) struct Piece<'a> {
    pub text: &'a str,
    /// The tokens of `text`, placed in it (not in the whole text), as the parser's tokenizer
    /// makes them.
    pub tokens: Option<Vec<TokenWithSpan>>,
}

impl<'a> Piece<'a> {
    /// Statements shorter than this are tokenized again by their reader: it costs little, and
    /// the tokens of a text of many short statements are not all held at once.
    const KEEP_TOKENS_BYTES: usize = 16 << 10;
    /// The pieces of one text keep the tokens of at most this much of it; later ones are
    /// tokenized again. All pieces are cut before the first runs, so this bounds what they
    /// hold together to what the parse of one statement this long holds (a packet of many
    /// long INSERTs would otherwise hold the tokens of all of them at once).
    const KEEP_TOKENS_TOTAL_BYTES: usize = 4 << 20;

    fn text(text: &'a str) -> Self {
        Piece { text, tokens: None }
    }

    /// `kept`: the bytes of text whose tokens earlier pieces keep.
    fn with_tokens(text: &'a str, tokens: Vec<TokenWithSpan>, kept: &mut usize) -> Self {
        let keep = text.len() >= Self::KEEP_TOKENS_BYTES
            && kept.saturating_add(text.len()) <= Self::KEEP_TOKENS_TOTAL_BYTES;
        if keep {
            *kept += text.len();
        }
        Piece {
            text,
            tokens: keep.then_some(tokens),
        }
    }
}

/// `loc`, a location in the text, as a location in the piece that starts at `origin`.
fn within(origin: Location, loc: Location) -> Location {
    if loc.line == origin.line {
        Location::new(1, loc.column - origin.column + 1)
    } else {
        Location::new(loc.line - origin.line + 1, loc.column)
    }
}

/// Whether `sql` holds anything besides whitespace and comments.
fn has_code(sql: &str) -> bool {
    // Decided on the first character unless it may start a comment.
    match sql.trim_start().bytes().next() {
        None => false,
        Some(b'#' | b'-' | b'/') => {
            let mut code = false;
            let stop = stream(sql, false, |t, _| {
                code |= !matches!(t.token, Token::Whitespace(_))
            });
            code || stop.is_some_and(|e| !open_comment(&e))
        }
        Some(_) => true,
    }
}

/// How a statement's first tokens read, for whether it defines a stored program: `CREATE`,
/// then (after `OR REPLACE`, `DEFINER = user`, `AGGREGATE` and the like) `TRIGGER`,
/// `PROCEDURE`, `FUNCTION` or `EVENT`. Only the first tokens are looked at: a table with a
/// column named `event` is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    Start,
    /// After `CREATE` and this many tokens.
    Create(u8),
    Program,
    Other,
}

impl Head {
    /// Tokens after `CREATE` looked at before deciding it is another statement.
    const CREATE_TOKENS_MAX: u8 = 12;

    fn next(self, t: &Token) -> Head {
        let word = match t {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.as_str()),
            _ => None,
        };
        let is = |k: &str| word.is_some_and(|w| w.eq_ignore_ascii_case(k));
        match self {
            Head::Start if is("CREATE") => Head::Create(0),
            Head::Create(n) => {
                if ["TRIGGER", "PROCEDURE", "FUNCTION", "EVENT"]
                    .iter()
                    .any(|k| is(k))
                {
                    Head::Program
                } else if *t == Token::LParen
                    || [
                        "TABLE",
                        "INDEX",
                        "UNIQUE",
                        "VIEW",
                        "DATABASE",
                        "SCHEMA",
                        "USER",
                        "ROLE",
                        "TEMPORARY",
                        "SEQUENCE",
                    ]
                    .iter()
                    .any(|k| is(k))
                    || n >= Self::CREATE_TOKENS_MAX
                {
                    // What names another kind of object ends the search.
                    Head::Other
                } else {
                    Head::Create(n + 1)
                }
            }
            Head::Program => Head::Program,
            _ => Head::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(sql: &str) -> Vec<&str> {
        split_statements(sql).into_iter().map(|p| p.text).collect()
    }

    #[test]
    fn one_statement_with_or_without_a_trailing_semicolon() {
        assert_eq!(split("SELECT 1"), ["SELECT 1"]);
        assert_eq!(split("SELECT 1;"), ["SELECT 1"]);
        assert_eq!(split("SELECT 1 ;  \n"), ["SELECT 1 "]);
        assert_eq!(split("SELECT 1;;"), ["SELECT 1"]);
        assert!(split("").is_empty());
        assert!(split(" ; ;").is_empty());
        assert!(split("/* only a comment */").is_empty());
        assert!(split("-- x;y").is_empty());
    }

    #[test]
    fn statements_split_at_each_semicolon_outside_quotes_and_comments() {
        assert_eq!(split("SELECT 1; SELECT 2"), ["SELECT 1", " SELECT 2"]);
        assert_eq!(split("SELECT 1;SELECT 2;"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(split("SELECT ';'; SELECT 2"), ["SELECT ';'", " SELECT 2"]);
        assert_eq!(split("SELECT \"a;b\""), ["SELECT \"a;b\""]);
        assert_eq!(split("SELECT 'it''s;'"), ["SELECT 'it''s;'"]);
        assert_eq!(
            split(r"SELECT 'a\';b'; SELECT 2"),
            [r"SELECT 'a\';b'", " SELECT 2"]
        );
        assert_eq!(split("SELECT `a;b` FROM t"), ["SELECT `a;b` FROM t"]);
        assert_eq!(split("SELECT 1 /* a;b */"), ["SELECT 1 /* a;b */"]);
        assert_eq!(split("SELECT 1 -- x;y"), ["SELECT 1 -- x;y"]);
        assert_eq!(
            split("SELECT 1 -- x;y\n; SELECT 2"),
            ["SELECT 1 -- x;y\n", " SELECT 2"]
        );
        assert_eq!(split("SELECT 1 # x;y\nFROM t"), ["SELECT 1 # x;y\nFROM t"]);
        // `--` not followed by a space is two minus signs.
        assert_eq!(split("SELECT 1--1; SELECT 2"), ["SELECT 1--1", " SELECT 2"]);
        // Unclosed quotes and comments run to the end: the parser reports them.
        assert_eq!(split("SELECT 'a; SELECT 2"), ["SELECT 'a; SELECT 2"]);
        assert_eq!(split("SELECT 1 /* ; "), ["SELECT 1 /* ; "]);
    }

    #[test]
    fn a_stored_program_body_is_one_statement() {
        let trigger = "CREATE DEFINER=`root`@`localhost` TRIGGER t BEFORE INSERT ON x \
                       FOR EACH ROW BEGIN SET NEW.a = 1; SET NEW.b = 2; END";
        assert_eq!(split(trigger), [trigger]);
        assert_eq!(split(&format!("{trigger};")), [trigger]);
        let proc = "CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END";
        assert_eq!(split(proc), [proc]);
        assert_eq!(
            split("create or replace function f() returns int begin return 1; end ;"),
            ["create or replace function f() returns int begin return 1; end"]
        );
        // Other CREATE statements are not programs, even when a word inside looks like one.
        assert_eq!(
            split("CREATE TABLE event (trigger INT); SELECT 1"),
            ["CREATE TABLE event (trigger INT)", " SELECT 1"]
        );
        assert_eq!(
            split("CREATE TABLE t (event INT); SELECT 1"),
            ["CREATE TABLE t (event INT)", " SELECT 1"]
        );
    }

    #[test]
    fn comments_are_removed_and_quotes_kept() {
        use super::without_comments as w;
        assert_eq!(w("SHOW TABLES /* ; */"), "SHOW TABLES  ");
        assert_eq!(w("SHOW # x\nTABLES"), "SHOW  TABLES");
        assert_eq!(
            w("SELECT '/* x */', `#`, 1--1"),
            "SELECT '/* x */', `#`, 1--1"
        );
        assert_eq!(w("SELECT 1 -- y"), "SELECT 1  ");
    }

    #[test]
    fn executable_comments_run_as_mysql_8_runs_them() {
        let x = |s: &str| executable_comments(s).into_owned();
        assert_eq!(x("SELECT 1"), "SELECT 1");
        assert_eq!(
            x("/*!40101 SET NAMES utf8mb4 */;"),
            "  SET NAMES utf8mb4  ;"
        );
        assert_eq!(
            x("START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */"),
            "START TRANSACTION   WITH CONSISTENT SNAPSHOT  "
        );
        assert_eq!(
            x("SELECT /*!40001 SQL_NO_CACHE */ * FROM t"),
            "SELECT   * FROM t"
        );
        assert_eq!(x("SELECT 1 /*!90000 + 1 */"), "SELECT 1  ");
        assert_eq!(
            x("/*M!999999\\- enable the sandbox mode */ SELECT 1"),
            "  SELECT 1"
        );
        assert_eq!(x("SELECT 1 /*! + 1*/"), "SELECT 1   + 1 ");
        // Inside strings, identifiers and ordinary comments nothing changes.
        assert_eq!(x("SELECT '/*!1 x */', `/*!`"), "SELECT '/*!1 x */', `/*!`");
        assert_eq!(
            x("SELECT 1 /* /*!40101 no */"),
            "SELECT 1 /* /*!40101 no */"
        );
        // Unterminated: runs to the end, no panic.
        assert_eq!(x("SELECT 1 /*!40101 + 1"), "SELECT 1   + 1 ");
        assert_eq!(x("/*!"), "  ");
        assert_eq!(x("'/*!"), "'/*!");
    }

    #[test]
    fn the_lexing_dialect_tokenizes_as_mysqls_where_there_is_no_executable_comment() {
        let mysql = |s: &str| {
            Tokenizer::new(&MySqlDialect {}, s)
                .with_unescape(false)
                .tokenize_with_location()
        };
        let ours = |s: &str| {
            Tokenizer::new(&Lexing, s)
                .with_unescape(false)
                .tokenize_with_location()
        };
        for sql in [
            "SELECT `a``b`, 'x\\'y', \"q\", b'01', x'0F', 1e3, .5, t._c, @v, @@s, $x # c\n",
            "SELECT 1--1, 2 -- c\n/* block */ <=> << >> && || := ->> :: DIV @`u`@'h'",
            "INSERT INTO t VALUES (_binary'\\0', N'é', 0x1F, 12.5e-3);",
            "SELECT /* not executable */ 1 /*+ hint */",
        ] {
            assert_eq!(ours(sql).unwrap(), mysql(sql).unwrap(), "{sql}");
        }
        // Where the dialects differ: MySQL's opens the comment whatever its version.
        let sql = "SELECT 1 /*!90000 + 1 */";
        assert_ne!(ours(sql).unwrap(), mysql(sql).unwrap());
    }

    #[test]
    fn windows_cut_only_between_whole_tokens() {
        // Quotes, identifiers and comments that run across many windows, and `;` or newlines
        // inside them just past where a window could end.
        let long = "x".repeat(WINDOW_BYTES);
        let texts = [
            format!("SELECT '{long};\n{long}'; SELECT 2"),
            format!("SELECT `{long};{long}`; SELECT 2"),
            format!("SELECT 1 /* {long};\n{long} */; SELECT 2"),
            format!("SELECT 1 -- {long};{long}\n; SELECT 2"),
            format!("SELECT 1 # {long};{long}\n; SELECT 2"),
            format!("SELECT \"{long}\\\";{long}\"; SELECT 2"),
        ];
        for t in &texts {
            let got = split(t);
            assert_eq!(got.len(), 2, "{}", &t[..40]);
            assert_eq!(got[1], " SELECT 2");
            assert_eq!(got[0].len() + got[1].len() + 1, t.len());
        }
        // Many short statements across windows.
        let many = "SELECT 1;\n".repeat(20_000);
        assert_eq!(split(&many).len(), 20_000);
        assert!(split(&";".repeat(1 << 20)).is_empty());
        assert!(split(&" ;\n".repeat(100_000)).is_empty());
        // Comments rewritten across windows keep their places.
        let text = format!("SELECT '{long}' /*!40101 , 2 */ -- x\n");
        assert_eq!(
            executable_comments(&text),
            format!("SELECT '{long}'   , 2   -- x\n")
        );
        assert_eq!(without_comments(&text), format!("SELECT '{long}'    "));
    }

    #[test]
    fn windows_restart_between_tokens() {
        // Strings, identifiers and comments that hold `;` and newlines, so that windows end
        // inside them, and words and periods (which the tokenizer looks back at) everywhere.
        let parts: Vec<String> = (0..5000)
            .map(|i| {
                format!("SELECT 'a;b\nc{i}', t._c, 1.5e3, x.y, `q;\n`, \"d;\" /* e;\n */ -- f;\n")
            })
            .collect();
        let text = parts.join(";");
        assert!(text.len() > 4 * WINDOW_BYTES);
        assert_eq!(split(&text), parts);
        let one = |s: &str| without_comments(s).into_owned();
        let each: Vec<String> = parts.iter().map(|p| one(p)).collect();
        assert_eq!(one(&text), each.join(";"));
        let x = "SELECT 'a;b' /*!40101 , 1;\n */, 2 /*!90000 , 3 */ ";
        let x1 = executable_comments(x).into_owned();
        assert_eq!(
            executable_comments(&[x; 5000].join(";")),
            [x1.as_str(); 5000].join(";")
        );
    }

    #[test]
    fn long_pieces_keep_the_tokens_the_parser_would_make() {
        let insert = |i: usize| {
            let rows: Vec<String> = (0..2000)
                .map(|j| format!("({j}, 'a;\\'b\n{i}', `c;`, x'0F', 1.5e3)"))
                .collect();
            format!("INSERT INTO t VALUES {}", rows.join(",\n"))
        };
        let text = format!(
            "SELECT 1;\n  {} ; /* c */ {};SELECT 'é' ;\t{} oops",
            insert(1),
            insert(2),
            insert(3)
        );
        let pieces = split_statements(&text);
        assert_eq!(pieces.len(), 5);
        assert!(pieces[0].tokens.is_none() && pieces[3].tokens.is_none());
        let placed = |v: &[TokenWithSpan]| -> Vec<(Token, Location, Location)> {
            v.iter()
                .map(|t| (t.token.clone(), t.span.start, t.span.end))
                .collect()
        };
        for p in [&pieces[1], &pieces[2], &pieces[4]] {
            let want = Tokenizer::new(&MySqlDialect {}, p.text)
                .with_unescape(true)
                .tokenize_with_location()
                .unwrap();
            assert_eq!(placed(p.tokens.as_deref().unwrap()), placed(&want));
        }
        // An error in a long piece is quoted from its place in the piece, as when the piece
        // is tokenized alone.
        let last = pieces.into_iter().nth(4).unwrap();
        let alone = crate::front::parse::parse_ast(last.text).unwrap_err();
        let kept = crate::front::parse::parse_piece(last).unwrap_err();
        assert_eq!(kept.message(), alone.message());
        assert!(
            kept.message().contains("near 'oops' at line 4000"),
            "{}",
            kept.message()
        );
    }

    #[test]
    fn the_pieces_of_one_text_keep_a_bounded_share_of_tokens() {
        let long = format!("SELECT '{}'", "z".repeat(Piece::KEEP_TOKENS_BYTES));
        let n = Piece::KEEP_TOKENS_TOTAL_BYTES / long.len() + 3;
        let text = vec![long.as_str(); n].join(";");
        let pieces = split_statements(&text);
        assert_eq!(pieces.len(), n);
        let kept = pieces.iter().filter(|p| p.tokens.is_some()).count();
        assert_eq!(kept, Piece::KEEP_TOKENS_TOTAL_BYTES / long.len());
        assert!(pieces.iter().take(kept).all(|p| p.tokens.is_some()));
    }

    #[test]
    fn hostile_texts_end() {
        // Unterminated quotes and comments after a `;`, on any side of a window.
        let long = "y".repeat(3 * WINDOW_BYTES);
        assert_eq!(split(&format!("SELECT 1; SELECT '{long}")).len(), 2);
        assert_eq!(split(&format!("SELECT 1; /* {long}")), ["SELECT 1"]);
        assert_eq!(split(&format!("SELECT 1; `{long}")).len(), 2);
        assert_eq!(split(&format!("SELECT 1; -- {long}")), ["SELECT 1"]);
        // Deep nesting is one statement to the splitter; the parser bounds it.
        let deep = format!(
            "SELECT {}1{}; SELECT 2",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        assert_eq!(split(&deep).len(), 2);
        assert!(split("\u{0}\u{1}\u{fffd};").len() == 1);
        assert!(split("SELECT ._x; SELECT 2").len() <= 2);
    }

    proptest::proptest! {
        /// Statements joined with `;` split back into themselves, whatever their quoted parts
        /// and comments hold.
        #[test]
        fn joined_statements_split_back(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "SELECT 1", "SELECT ';'", "SELECT \";\"", "SELECT `;`", "SELECT 'a\\';'",
                "SELECT 1 /* ; */", "SELECT 1 -- ;\n", "SELECT 1 # ;\n", "SELECT 'x''y;'",
                "INSERT INTO t VALUES (1, ';')", "SELECT 1--1", "SHOW TABLES",
            ]), 1..8)) {
            let text = parts.join(";");
            let got = split(&text);
            proptest::prop_assert_eq!(got, parts);
        }

        /// Any text: the pieces are disjoint, in order, inside the text, and never panic.
        #[test]
        fn arbitrary_text_never_panics(s in "[ -~\\n]{0,80}") {
            let pieces = split(&s);
            let mut last = 0usize;
            for p in pieces {
                let at = p.as_ptr() as usize - s.as_ptr() as usize;
                proptest::prop_assert!(at >= last && at + p.len() <= s.len());
                last = at + p.len();
            }
        }
    }
}
