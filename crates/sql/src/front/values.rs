//! Bulk INSERT rows of plain literals read without the tokenizer and parser (issue 20, F1).
//!
//! A dump's or a loader's `INSERT INTO t (…) VALUES (1,'a'),(2,'b'),…` spends most of its
//! parse turning each literal into tokens and then into an expression. Here the parser sees
//! only the head, `INSERT INTO t (…) VALUES (NULL)`, and the rows are read by a small literal
//! reader into the very expressions the parser would build, which replace the head's one row.
//! Anything the reader does not know for certain (escapes, comments, `?`, expressions,
//! clauses after the rows, a second statement) makes it decline, and the caller parses the
//! whole text as before. A proptest below holds the two paths to the same AST.

use sqlparser::ast::{Expr, Parens, SetExpr, Statement, UnaryOperator, Value};

/// The statements of `sql` when it is one `INSERT`/`REPLACE … VALUES` whose rows are all
/// plain literals; `None` otherwise. `parse` parses a text as the caller would.
pub(crate) fn literal_insert<E>(
    sql: &str,
    parse: impl FnOnce(&str) -> Result<Vec<Statement>, E>,
) -> Option<Vec<Statement>> {
    let at = values_end(sql)?;
    let rows = read_rows(&sql.as_bytes()[at..])?;
    let head = format!("{} (NULL)", &sql[..at]);
    let mut stmts = parse(&head).ok()?;
    let [Statement::Insert(ins)] = stmts.as_mut_slice() else {
        return None;
    };
    let SetExpr::Values(v) = ins.source.as_mut()?.body.as_mut() else {
        return None;
    };
    if v.explicit_row || v.rows.len() != 1 {
        return None;
    }
    v.rows = rows;
    Some(stmts)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Where the `VALUES` (or `VALUE`) keyword of an `INSERT`/`REPLACE` ends: the first one
/// outside quotes and parentheses. `None` for other statements, or a comment before it.
fn values_end(sql: &str) -> Option<usize> {
    let b = sql.as_bytes();
    let mut i = b.iter().position(|c| !c.is_ascii_whitespace())?;
    let mut first = true;
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => i = skip_quoted(b, i, q)?,
            b'#' | b';' => return None,
            b'-' if b.get(i + 1) == Some(&b'-') => return None,
            b'/' if b.get(i + 1) == Some(&b'*') => return None,
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            c if is_word_byte(c) => {
                let start = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                let w = &sql[start..i];
                if first {
                    if !w.eq_ignore_ascii_case("INSERT") && !w.eq_ignore_ascii_case("REPLACE") {
                        return None;
                    }
                    first = false;
                } else if depth == 0
                    && (w.eq_ignore_ascii_case("VALUES") || w.eq_ignore_ascii_case("VALUE"))
                {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// The index just past the quoted run that opens at `i` (a quote doubled, or, in strings,
/// escaped by a backslash, stays inside).
fn skip_quoted(b: &[u8], mut i: usize, q: u8) -> Option<usize> {
    i += 1;
    while i < b.len() {
        if b[i] == b'\\' && q != b'`' {
            i += 2;
        } else if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
            } else {
                return Some(i + 1);
            }
        } else {
            i += 1;
        }
    }
    None
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `(lit, …), (lit, …) …` to the end of the text.
fn read_rows(b: &[u8]) -> Option<Vec<Parens<Vec<Expr>>>> {
    let mut rows = Vec::new();
    let mut i = skip_ws(b, 0);
    loop {
        if b.get(i) != Some(&b'(') {
            return None;
        }
        let mut row = Vec::new();
        loop {
            i = skip_ws(b, i + 1);
            let (e, next) = literal(b, i)?;
            row.push(e);
            i = skip_ws(b, next);
            match b.get(i) {
                Some(b',') => {}
                Some(b')') => break,
                _ => return None,
            }
        }
        rows.push(Parens::with_empty_span(row));
        i = skip_ws(b, i + 1);
        match b.get(i) {
            None => return Some(rows),
            Some(b',') => i = skip_ws(b, i + 1),
            Some(_) => return None,
        }
    }
}

/// One literal at `i` and the index after it: `NULL`, an unsigned integer or decimal
/// (`12`, `1.5`), one of those negated (`-12`), or a single-quoted string without escapes.
fn literal(b: &[u8], i: usize) -> Option<(Expr, usize)> {
    let value = |v: Value| Expr::Value(v.with_empty_span());
    match *b.get(i)? {
        b'\'' => {
            let len = b[i + 1..].iter().position(|&c| c == b'\'' || c == b'\\')?;
            let end = i + 1 + len;
            // A backslash or a doubled quote: the parser's unescaping decides.
            if b[end] != b'\'' || b.get(end + 1) == Some(&b'\'') {
                return None;
            }
            let s = std::str::from_utf8(&b[i + 1..end]).ok()?;
            Some((value(Value::SingleQuotedString(s.to_string())), end + 1))
        }
        b'-' => {
            let (n, end) = number(b, i + 1)?;
            let e = Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr: Box::new(value(n)),
            };
            Some((e, end))
        }
        b'0'..=b'9' => {
            let (n, end) = number(b, i)?;
            Some((value(n), end))
        }
        _ => {
            let end = i + 4;
            let word = b.get(i..end)?;
            let ends = b.get(end).is_none_or(|&c| !is_word_byte(c));
            (word.eq_ignore_ascii_case(b"NULL") && ends).then(|| (value(Value::Null), end))
        }
    }
}

/// `digits` or `digits.digits` at `i`, not followed by a word character or another `.`.
fn number(b: &[u8], i: usize) -> Option<(Value, usize)> {
    let digits = |from: usize| {
        b[from..]
            .iter()
            .position(|c| !c.is_ascii_digit())
            .map_or(b.len(), |n| from + n)
    };
    let mut end = digits(i);
    if end == i {
        return None;
    }
    if b.get(end) == Some(&b'.') {
        let frac = digits(end + 1);
        if frac == end + 1 {
            return None;
        }
        end = frac;
    }
    if b.get(end).is_some_and(|&c| is_word_byte(c) || c == b'.') {
        return None;
    }
    let text = std::str::from_utf8(&b[i..end]).ok()?;
    Some((Value::Number(text.to_string(), false), end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::front::parse::parse_mysql;

    fn full(sql: &str) -> Vec<Statement> {
        parse_mysql(sql).expect("the parser reads it")
    }

    fn fast(sql: &str) -> Option<Vec<Statement>> {
        literal_insert(sql, parse_mysql)
    }

    /// Literals the reader declines (the whole statement then goes to the parser).
    const DECLINED: [&str; 7] = [
        "'a\\nb'", "'it''s'", "1e3", "-x'00'", "now()", "DEFAULT", "0x1F",
    ];

    #[test]
    fn plain_rows_take_the_fast_path_and_match_the_parser() {
        for sql in [
            "INSERT INTO sbtest1(k, c, pad) VALUES(5014, '6838-9124', '2219-44'),(3, 'x', '')",
            "insert ignore into `t` values (1,-2,3.25,NULL,'é ü'), ( 4 , null , -0.5 , 'a' , 'b' )",
            "REPLACE INTO db.t (a) VALUE (1)",
            "INSERT INTO t VALUES (007, 0.50, -00, '')",
            "  INSERT INTO t VALUES\n(1)\n,\t(2)  ",
        ] {
            let f = fast(sql).unwrap_or_else(|| panic!("declined: {sql}"));
            assert_eq!(f, full(sql), "{sql}");
        }
    }

    #[test]
    fn anything_else_declines() {
        for sql in [
            "INSERT INTO t VALUES (1), (2) ON DUPLICATE KEY UPDATE a = 1",
            "INSERT INTO t VALUES ('a\\'b')",
            "INSERT INTO t VALUES ('a''b')",
            "INSERT INTO t VALUES ('a' 'b')",
            "INSERT INTO t VALUES (1e5)",
            "INSERT INTO t VALUES (1+1)",
            "INSERT INTO t VALUES (?)",
            "INSERT INTO t VALUES (x'41')",
            "INSERT INTO t VALUES (DEFAULT)",
            "INSERT INTO t VALUES (.5)",
            "INSERT INTO t VALUES (- 5)",
            "INSERT INTO t VALUES ()",
            "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
            "INSERT INTO t VALUES (1) /* c */",
            "INSERT /* c */ INTO t VALUES (1)",
            "INSERT INTO t SELECT 1",
            "INSERT INTO t SET a = 1",
            "INSERT INTO t VALUES ROW(1)",
            "SELECT 'VALUES (1)'",
            "INSERT INTO t VALUES (nullx)",
        ] {
            assert!(fast(sql).is_none(), "took the fast path: {sql}");
        }
    }

    fn lit() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            (any::<u32>(), 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
            (any::<u32>(), 0u32..1000).prop_map(|(a, b)| format!("-{a}.{b}")),
            Just("NULL".to_string()),
            Just("null".to_string()),
            "[a-zA-Z0-9 é,()-]{0,12}".prop_map(|s| format!("'{s}'")),
            proptest::sample::select(&DECLINED[..]).prop_map(str::to_string),
        ]
    }

    fn ws() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just(""), Just(" "), Just("\n"), Just(" \t ")]
    }

    proptest! {
        /// Wherever the reader accepts a text, its statements are the parser's.
        #[test]
        fn the_fast_path_equals_the_parser(
            verb in prop_oneof![Just("INSERT"), Just("insert ignore"), Just("REPLACE")],
            cols in prop_oneof![Just(""), Just("(a, b, c)"), Just("(`a`,b,`c`)")],
            kw in prop_oneof![Just("VALUES"), Just("value")],
            rows in proptest::collection::vec(proptest::collection::vec(lit(), 3), 1..6),
            w1 in ws(),
            w2 in ws(),
        ) {
            let body = rows
                .iter()
                .map(|r| format!("({w1}{}{w2})", r.join(&format!("{w2},{w1}"))))
                .collect::<Vec<_>>()
                .join(&format!("{w1},{w2}"));
            let sql = format!("{verb} INTO t {cols} {kw}{w1}{body}{w2}");
            if let Some(f) = fast(&sql) {
                prop_assert_eq!(f, full(&sql), "{}", sql);
            } else {
                // Declined only for a form the reader does not know.
                prop_assert!(
                    rows.iter().flatten().any(|l| DECLINED.contains(&l.as_str())),
                    "declined: {}", sql
                );
            }
        }
    }
}
