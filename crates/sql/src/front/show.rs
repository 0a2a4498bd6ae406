//! The words of a SHOW statement. SHOW is read from words rather than by the parser, which
//! reads most MySQL SHOW forms as one opaque name; admin/show.rs runs them. (P2 moves this
//! grammar onto sqlparser's `Parser`.)

/// A word of a SHOW statement: its text (identifiers unquoted), and whether it was a string
/// literal.
pub(crate) type Word = (String, bool);

/// The words after `SHOW`, when `sql` is one SHOW statement.
pub(crate) fn parse(sql: &str) -> Option<Vec<Word>> {
    // Most statements are not SHOW: decided on the first word, without splitting the rest.
    let head = sql.trim_start().get(..4)?;
    if !head.eq_ignore_ascii_case("SHOW") {
        return None;
    }
    let sql = &*crate::front::split::without_comments(sql);
    let mut w = words(sql);
    let first = w.first()?;
    if first.1 || !first.0.eq_ignore_ascii_case("SHOW") {
        return None;
    }
    // One statement only: a `;` followed by more text goes to the parser's error path.
    let trimmed = sql.trim().trim_end_matches(';');
    if trimmed.contains(';') {
        return None;
    }
    w.remove(0);
    Some(w)
}

/// Words of a SHOW statement: identifiers unquoted, string literals kept with a marker.
pub(crate) fn words(sql: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut it = sql.trim().trim_end_matches(';').chars().peekable();
    while let Some(&c) = it.peek() {
        if c.is_whitespace() {
            it.next();
        } else if c == '\'' || c == '"' || c == '`' {
            it.next();
            let mut w = String::new();
            while let Some(ch) = it.next() {
                if ch == c {
                    if it.peek() == Some(&c) {
                        it.next();
                        w.push(c);
                        continue;
                    }
                    break;
                }
                if ch == '\\' && c != '`' {
                    if let Some(n) = it.next() {
                        w.push(n);
                    }
                    continue;
                }
                w.push(ch);
            }
            out.push((w, c != '`'));
        } else if c == '.' || c == ',' || c == '(' || c == ')' || c == '*' || c == '=' {
            out.push((c.to_string(), false));
            it.next();
        } else {
            let mut w = String::new();
            while let Some(&ch) = it.peek() {
                if ch.is_whitespace()
                    || matches!(ch, '.' | ',' | '(' | ')' | '\'' | '"' | '`' | '=' | ';')
                {
                    break;
                }
                w.push(ch);
                it.next();
            }
            if w.is_empty() {
                // A `;` (the only character that stops a word before it starts): a word of its
                // own, so that the scan always moves on.
                w.push(c);
                it.next();
            }
            out.push((w, false));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn words_move_past_every_character() {
        // A `;` inside the text once made the scan push empty words forever.
        for sql in [
            "SHOW TABLES; SHOW DATABASES",
            "SHOW x /* a;b */",
            "SHOW ;;;",
            ";",
        ] {
            let w = words(sql);
            assert!(w.len() <= sql.len(), "{sql}: {w:?}");
        }
        let w = words("SHOW TABLES; x");
        let texts: Vec<&str> = w.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(texts, ["SHOW", "TABLES", ";", "x"]);
    }
}
