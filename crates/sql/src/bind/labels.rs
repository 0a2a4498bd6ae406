//! Labels of unnamed result columns: a select item's text as written.

use sqlparser::ast;

/// A select item's text as written in `sql` (MySQL labels an unnamed result column so).
/// The parser's position for an expression can start inside it (at `x` in `-x` or
/// `CAST(x AS CHAR)`), so the item is found in the tokens around that position: back to the
/// comma or SELECT keyword before it, forward to the comma, keyword or parenthesis that ends
/// it at its nesting level. `None` when the parser gave no position.
#[cfg(test)]
fn source_label(sql: &str, e: &ast::Expr) -> Option<String> {
    SourceLabels::new(sql)?.label(e)
}

/// A statement's text, as compiling sees it: tokenized at most once, when the first unnamed
/// select item needs its label, and then shared by every query block of the statement (a
/// UNION of thousands of SELECTs costs one tokenization, not one per operand).
pub struct StatementText<'a> {
    text: &'a str,
    labels: std::cell::OnceCell<Option<SourceLabels<'a>>>,
}

impl<'a> StatementText<'a> {
    pub fn new(text: &'a str) -> StatementText<'a> {
        StatementText {
            text,
            labels: std::cell::OnceCell::new(),
        }
    }
}

/// Labels of unnamed select items from a statement's text ([`StatementText`]); a trait
/// object in `Env`, whose lifetime stays covariant (a `OnceCell` in it would not be).
pub trait ItemLabels {
    /// The select item `e`'s text as written, if the parser gave its position.
    fn label(&self, e: &ast::Expr) -> Option<String>;
}

impl ItemLabels for StatementText<'_> {
    fn label(&self, e: &ast::Expr) -> Option<String> {
        self.labels
            .get_or_init(|| SourceLabels::new(self.text))
            .as_ref()?
            .label(e)
    }
}

/// The text of a statement, tokenized once, for labelling its unnamed select items: a
/// statement with thousands of them (generated SQL) costs one tokenization, not one each.
pub(crate) struct SourceLabels<'a> {
    sql: &'a str,
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
    /// Byte offset of each line's start, and whether the line is ASCII (columns are bytes).
    lines: Vec<(usize, bool)>,
}

impl<'a> SourceLabels<'a> {
    pub(crate) fn new(sql: &'a str) -> Option<SourceLabels<'a>> {
        let dialect = sqlparser::dialect::MySqlDialect {};
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql)
            .tokenize_with_location()
            .ok()?;
        let mut lines = Vec::new();
        let mut at = 0;
        for l in sql.split_inclusive('\n') {
            lines.push((at, l.is_ascii()));
            at += l.len();
        }
        Some(SourceLabels { sql, tokens, lines })
    }

    /// Byte offset of a location (lines and columns count characters from 1).
    fn offset(&self, loc: sqlparser::tokenizer::Location) -> Option<usize> {
        let sql = self.sql;
        let &(line_at, ascii) = self.lines.get(loc.line.checked_sub(1)? as usize)?;
        let col = loc.column.checked_sub(1)? as usize;
        if ascii {
            return Some((line_at + col).min(sql.len()));
        }
        Some(
            line_at
                + sql[line_at..]
                    .char_indices()
                    .nth(col)
                    .map_or(sql.len() - line_at, |(i, _)| i),
        )
    }

    /// The text of the select item `e`, as written.
    pub(crate) fn label(&self, e: &ast::Expr) -> Option<String> {
        use sqlparser::ast::Spanned;
        use sqlparser::tokenizer::Token;
        let sql = self.sql;
        let tokens = &self.tokens;
        let start = e.span().start;
        if start.line == 0 || start.column == 0 {
            return None;
        }
        // Tokens are in text order.
        let key =
            |t: &sqlparser::tokenizer::TokenWithSpan| (t.span.start.line, t.span.start.column);
        let mut at = tokens.partition_point(|t| key(t) < (start.line, start.column));
        // Empty tokens (EOF) share a place with others: the first real one at `start`.
        while tokens
            .get(at)
            .is_some_and(|t| t.span.start == start && matches!(t.token, Token::Whitespace(_)))
        {
            at += 1;
        }
        if tokens.get(at).is_none_or(|t| t.span.start != start) {
            return None;
        }
        let word = |t: &Token, set: &[&str]| match t {
            Token::Word(w) if w.quote_style.is_none() => {
                set.contains(&w.value.to_ascii_uppercase().as_str())
            }
            _ => false,
        };
        const BEFORE: &[&str] = &[
            "SELECT",
            "DISTINCT",
            "DISTINCTROW",
            "ALL",
            "HIGH_PRIORITY",
            "STRAIGHT_JOIN",
            "SQL_SMALL_RESULT",
            "SQL_BIG_RESULT",
            "SQL_BUFFER_RESULT",
            "SQL_CACHE",
            "SQL_NO_CACHE",
            "SQL_CALC_FOUND_ROWS",
        ];
        const AFTER: &[&str] = &[
            "FROM",
            "INTO",
            "WHERE",
            "GROUP",
            "HAVING",
            "ORDER",
            "LIMIT",
            "UNION",
            "INTERSECT",
            "EXCEPT",
            "FOR",
            "LOCK",
            "WINDOW",
        ];
        let mut first = at;
        while first > 0 {
            let t = &tokens[first - 1].token;
            if matches!(t, Token::Comma) || word(t, BEFORE) {
                break;
            }
            first -= 1;
        }
        while matches!(tokens[first].token, Token::Whitespace(_)) && first < at {
            first += 1;
        }
        let mut depth = 0usize;
        let mut last = tokens.len();
        for (i, t) in tokens.iter().enumerate().skip(first) {
            let stop = match &t.token {
                Token::LParen => {
                    depth += 1;
                    false
                }
                Token::RParen if depth == 0 => true,
                Token::RParen => {
                    depth -= 1;
                    false
                }
                Token::Comma | Token::SemiColon | Token::EOF => depth == 0,
                t => depth == 0 && word(t, AFTER),
            };
            if stop {
                last = i;
                break;
            }
        }
        let from = self.offset(tokens[first].span.start)?;
        let to = match tokens.get(last) {
            Some(t) => self.offset(t.span.start)?,
            None => sql.len(),
        };
        let label = sql.get(from..to)?.trim_end();
        (!label.is_empty()).then(|| label.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels of a statement's unnamed select items, as `source_label` finds them.
    fn labels(sql: &str) -> Vec<String> {
        let stmts = crate::front::parse::parse_ast(sql).expect("parses");
        let ast::Statement::Query(q) = &stmts[0] else {
            panic!("not a query: {sql}");
        };
        let ast::SetExpr::Select(sel) = &*q.body else {
            panic!("not a plain SELECT: {sql}");
        };
        sel.projection
            .iter()
            .map(|it| match it {
                ast::SelectItem::UnnamedExpr(e) => {
                    source_label(sql, e).unwrap_or_else(|| format!("<none: {e}>"))
                }
                other => format!("<{other}>"),
            })
            .collect()
    }

    #[test]
    fn unnamed_columns_are_labelled_with_their_text_as_written() {
        assert_eq!(
            labels("select x+1, -x, - x ,count(*), CAST(x as char), (select 1), not x from t"),
            [
                "x+1",
                "-x",
                "- x",
                "count(*)",
                "CAST(x as char)",
                "(select 1)",
                "not x"
            ]
        );
        // Modifiers before the first item, strings with commas and parentheses, comments,
        // several lines, a trailing ORDER BY and a nested subquery's own FROM.
        assert_eq!(
            labels(
                "SELECT DISTINCT concat(s, ',)'),\n  y  *  2 /* c */ , (SELECT a FROM u WHERE b)\n\
                 FROM t ORDER BY 1"
            ),
            [
                "concat(s, ',)')",
                "y  *  2 /* c */",
                "(SELECT a FROM u WHERE b)"
            ]
        );
        // Multi-byte characters before the item: positions count characters.
        assert_eq!(labels("select 'é', upper('ü')"), ["'é'", "upper('ü')"]);
        // The second statement of a multi-statement text.
        let sql = "select 1; select a  +  b from t";
        let stmts = crate::front::parse::parse_ast(sql).expect("parses");
        let ast::Statement::Query(q) = &stmts[1] else {
            panic!("query");
        };
        let ast::SetExpr::Select(sel) = &*q.body else {
            panic!("select");
        };
        let ast::SelectItem::UnnamedExpr(e) = &sel.projection[0] else {
            panic!("item");
        };
        assert_eq!(source_label(sql, e).as_deref(), Some("a  +  b"));
    }
}
