//! ORDER BY and LIMIT of a query, and whether its select list aggregates.

use sqlparser::ast;

use crate::SqlError;

pub(super) fn order_items(q: &ast::Query) -> Result<Vec<(ast::Expr, bool)>, SqlError> {
    match &q.order_by {
        None => Ok(Vec::new()),
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) => Ok(v
                .iter()
                .map(|o| {
                    (
                        o.expr.clone(),
                        matches!(o.options.sort, Some(ast::OrderBySort::Desc)),
                    )
                })
                .collect()),
            ast::OrderByKind::All(_) => Err(SqlError::unsupported("ORDER BY ALL")),
        },
    }
}

pub(super) fn limit_items(
    l: &Option<ast::LimitClause>,
) -> (Option<&ast::Expr>, Option<&ast::Expr>) {
    match l {
        None => (None, None),
        Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
            (limit.as_ref(), offset.as_ref().map(|o| &o.value))
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
    }
}

pub(super) fn is_aggregate_call(e: &ast::Expr) -> bool {
    // Text search is enough to decide whether a query aggregates: aggregate names followed by
    // '(' anywhere in the expression, outside subqueries (which aggregate on their own).
    let s = without_subqueries(&e.to_string().to_ascii_uppercase());
    ["COUNT(", "SUM(", "AVG(", "MIN(", "MAX("]
        .iter()
        .any(|f| s.contains(f))
}

/// `s` (the upper-cased text of an expression) with every parenthesized `(SELECT ...)` cut
/// out. Quoted strings are not parsed: a literal containing "(SELECT" only makes the caller
/// miss an aggregate inside that literal's parentheses, which it cannot contain anyway.
fn without_subqueries(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("(SELECT ") {
        out.push_str(&rest[..at]);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, ch) in rest[at..].char_indices() {
            match ch {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
