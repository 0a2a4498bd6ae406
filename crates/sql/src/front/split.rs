//! Splitting a text query into its statements, as MySQL's multi-statement protocol runs them.
//!
//! A client that sets CLIENT_MULTI_STATEMENTS may send `SELECT 1; SELECT 2` as one COM_QUERY;
//! each statement gets its own result. MySQL's parser finds the boundaries; zipdb finds them
//! here, before any other reader sees the text, so that every later step (SHOW, account
//! statements, the parser) reads exactly one statement. The scan knows MySQL's lexical rules
//! for what may hide a `;`: string literals (`'...'`, `"..."`, with backslash escapes and
//! doubled quotes), quoted identifiers (`` `...` ``), and comments (`#`, `-- `, `/* */`).
//! Executable comments (`/*! ... */`) have been opened up before this runs
//! ([`crate::front::parse::executable_comments`]).
//!
//! A stored program (`CREATE TRIGGER`/`PROCEDURE`/`FUNCTION`/`EVENT`) has `;` inside its
//! `BEGIN ... END` body: MySQL reads it as one statement, and so does this scan, to the end of
//! the text (clients send such a statement alone, under `DELIMITER`). zipdb does not run
//! stored programs; the statement then fails as one, with an error.
//!
//! The scan is one pass over the bytes and allocates only the list of pieces.

/// The statements of `sql`, each without its terminating `;`, in order. Pieces that are empty
/// or only whitespace and comments are dropped (`SELECT 1;;` is one statement), so the result
/// is empty for a text with no statement at all.
pub(crate) fn split_statements(sql: &str) -> Vec<&str> {
    // The common case (one statement, no `;`) is decided without a scan.
    if !sql.contains(';') {
        return if has_code(sql) { vec![sql] } else { Vec::new() };
    }
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        i = match b[i] {
            b'\'' | b'"' => skip_quoted(b, i, true),
            b'`' => skip_quoted(b, i, false),
            b'#' => skip_line(b, i),
            b'-' if is_dash_comment(b, i) => skip_line(b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => skip_block_comment(b, i),
            b';' => {
                let piece = &sql[start..i];
                if is_stored_program(piece) {
                    // The body's `;` belong to it: the statement runs to the end.
                    break;
                }
                if has_code(piece) {
                    out.push(piece);
                }
                start = i + 1;
                i + 1
            }
            _ => i + 1,
        };
    }
    let last = &sql[start..];
    let last = if is_stored_program(last) {
        // Only a trailing `;` (and what follows it, if blank) is not part of the program.
        let t = last.trim_end();
        t.strip_suffix(';').unwrap_or(t).trim_end()
    } else {
        last
    };
    if has_code(last) {
        out.push(last);
    }
    out
}

/// Where the quoted run starting at `b[at]` ends (after its closing quote, or at the end of
/// the text when it is not closed). `escapes`: a backslash escapes the next byte (string
/// literals; not quoted identifiers). A doubled quote stands for itself in both.
fn skip_quoted(b: &[u8], at: usize, escapes: bool) -> usize {
    let q = b[at];
    let mut j = at + 1;
    while j < b.len() {
        let c = b[j];
        if escapes && c == b'\\' {
            j += 2;
        } else if c == q {
            if b.get(j + 1) == Some(&q) {
                j += 2;
            } else {
                return j + 1;
            }
        } else {
            j += 1;
        }
    }
    b.len()
}

/// `--` starts a comment only when followed by whitespace, a control character or the end
/// (MySQL's rule: `1--1` is an expression).
fn is_dash_comment(b: &[u8], at: usize) -> bool {
    b.get(at + 1) == Some(&b'-') && b.get(at + 2).is_none_or(|&c| c <= b' ')
}

/// After the line comment starting at `at` (its newline included).
fn skip_line(b: &[u8], at: usize) -> usize {
    b[at..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| at + p + 1)
}

/// After the `/* ... */` comment starting at `at` (MySQL's block comments do not nest).
fn skip_block_comment(b: &[u8], at: usize) -> usize {
    b[at + 2..]
        .windows(2)
        .position(|w| w == b"*/")
        .map_or(b.len(), |p| at + 2 + p + 2)
}

/// `sql` with each comment replaced by a space (quoted text is left alone).
pub(crate) fn without_comments(sql: &str) -> std::borrow::Cow<'_, str> {
    if !(sql.contains("/*") || sql.contains('#') || sql.contains("--")) {
        return std::borrow::Cow::Borrowed(sql);
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        let end = match b[i] {
            b'\'' | b'"' => {
                i = skip_quoted(b, i, true);
                continue;
            }
            b'`' => {
                i = skip_quoted(b, i, false);
                continue;
            }
            b'#' => skip_line(b, i),
            b'-' if is_dash_comment(b, i) => skip_line(b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => skip_block_comment(b, i),
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&sql[copied..i]);
        out.push(' ');
        copied = end;
        i = end;
    }
    out.push_str(&sql[copied.min(sql.len())..]);
    std::borrow::Cow::Owned(out)
}

/// Whether `piece` holds anything besides whitespace and comments.
fn has_code(piece: &str) -> bool {
    let b = piece.as_bytes();
    let mut i = 0;
    while i < b.len() {
        i = match b[i] {
            c if c.is_ascii_whitespace() => i + 1,
            b'#' => skip_line(b, i),
            b'-' if is_dash_comment(b, i) => skip_line(b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => skip_block_comment(b, i),
            _ => return true,
        };
    }
    false
}

/// Whether the statement that `piece` starts is a stored program definition: `CREATE`, then
/// (after `OR REPLACE`, `DEFINER = user`, `AGGREGATE` and the like) `TRIGGER`, `PROCEDURE`,
/// `FUNCTION` or `EVENT`. Only the first words are looked at: a table with a column named
/// `event` is not one.
fn is_stored_program(piece: &str) -> bool {
    let mut words = Words {
        b: piece.as_bytes(),
        i: 0,
    };
    if !words
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case(b"CREATE"))
    {
        return false;
    }
    for _ in 0..12 {
        let Some(w) = words.next() else { return false };
        let is = |k: &str| w.eq_ignore_ascii_case(k.as_bytes());
        if is("TRIGGER") || is("PROCEDURE") || is("FUNCTION") || is("EVENT") {
            return true;
        }
        // What names another kind of object ends the search; a `(` does too.
        if is("TABLE")
            || is("INDEX")
            || is("UNIQUE")
            || is("VIEW")
            || is("DATABASE")
            || is("SCHEMA")
            || is("USER")
            || is("ROLE")
            || is("TEMPORARY")
            || is("SEQUENCE")
            || is("(")
        {
            return false;
        }
    }
    false
}

/// The words of a statement's head: runs of identifier characters, a quoted run as one word,
/// any other byte alone; whitespace and comments skipped.
struct Words<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let b = self.b;
        loop {
            let at = self.i;
            let c = *b.get(at)?;
            let end = match c {
                c if c.is_ascii_whitespace() => {
                    self.i += 1;
                    continue;
                }
                b'#' => {
                    self.i = skip_line(b, at);
                    continue;
                }
                b'-' if is_dash_comment(b, at) => {
                    self.i = skip_line(b, at);
                    continue;
                }
                b'/' if b.get(at + 1) == Some(&b'*') => {
                    self.i = skip_block_comment(b, at);
                    continue;
                }
                b'\'' | b'"' => skip_quoted(b, at, true),
                b'`' => skip_quoted(b, at, false),
                c if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 => {
                    at + b[at..]
                        .iter()
                        .position(|&x| !(x.is_ascii_alphanumeric() || x == b'_' || x >= 0x80))
                        .unwrap_or(b.len() - at)
                }
                _ => at + 1,
            };
            self.i = end;
            return Some(&b[at..end]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_statements as split;

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
