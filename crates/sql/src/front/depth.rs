//! Bounds on how deep a statement nests, checked right after parsing, so that no recursion
//! whose depth a client controls can overflow a thread's stack.
//!
//! Everything after the parser (name resolution, compilation, evaluation, cloning and
//! dropping trees) recurses over the expression tree. The parser itself grows its stack on
//! the heap as it recurses (sqlparser's `recursive-protection`), and counts its nesting; but
//! a chain of left-associative operators (`a OR b OR c ...`, `1+1+1...`, `x IS NULL IS NULL`)
//! is parsed by a loop and comes out as a tree as deep as the chain is long. So:
//!
//! - chains of operators that are exactly associative (AND, OR, XOR, `||`, and the bitwise
//!   ones) are rebalanced into trees of logarithmic depth. Their operands keep their order,
//!   so evaluation (including short-circuits and the warnings operands raise) happens in the
//!   order it did: a 10,000-term `OR` list, which ORMs send, nests 14 deep;
//! - an expression nested deeper than [`EXPR_DEPTH_MAX`] is refused with MySQL's error 1436
//!   (thread stack overrun), and SELECTs nested deeper than [`SELECT_NESTING_MAX`] with
//!   1473, MySQL's own limit;
//! - a refused statement's tree is taken apart without recursion
//!   ([`drop_iteratively`]): dropping a 100,000-deep chain the ordinary way would itself
//!   overflow the stack.
//!
//! Statements run with [`crate::STATEMENT_STACK_NEEDED`] of stack at least (see
//! [`with_statement_stack`]), enough for the depth allowed here; `tests/hostile.rs` runs the
//! deepest accepted shapes.

use std::ops::ControlFlow;

use sqlparser::ast::{self, BinaryOperator, Expr, VisitMut, VisitorMut};

use crate::error::{ErrorKind, SqlError};

/// Deepest expression tree accepted (levels of expressions, counted from a statement's
/// outermost expression). MySQL accepts at least 1,000 nested parentheses; so does zipdb.
pub(crate) const EXPR_DEPTH_MAX: usize = 2_000;

/// Nesting limit handed to the parser (its own count of recursive descents).
pub(crate) const PARSE_DEPTH_MAX: usize = 2_100;

/// MySQL's limit on nested SELECTs (subqueries and derived tables): 63.
pub(crate) const SELECT_NESTING_MAX: usize = 63;

/// Most operands of one chain of set operations (`SELECT ... UNION SELECT ... UNION ...`).
/// The parser builds a chain as a tree as deep as it is long, which every later pass walks
/// by recursion (100,000 operands overflowed a 32 MiB statement stack); a longer chain is
/// refused with 1436 and taken apart without recursion.
pub const SET_OPERANDS_MAX: usize = 10_000;

/// Chains shorter than this are left as the parser built them (nothing to gain).
const CHAIN_REBALANCE_MIN: usize = 16;

/// Rebalances associative chains in `stmts`, then checks their nesting against the limits.
/// On failure the statements are dropped here (without recursion) and the error returned.
pub(crate) fn shape(stmts: &mut Vec<ast::Statement>) -> Result<(), SqlError> {
    let mut measure = Measure {
        expr_depth: 0,
        select_depth: 0,
        chain_depth: 0,
        chains: Vec::new(),
        error: None,
    };
    for s in stmts.iter_mut() {
        if s.visit(&mut measure).is_break() {
            break;
        }
    }
    match measure.error {
        None => Ok(()),
        Some(e) => {
            drop_iteratively(std::mem::take(stmts));
            Err(e)
        }
    }
}

fn is_associative(op: &BinaryOperator) -> bool {
    use BinaryOperator as B;
    matches!(
        op,
        B::And | B::Or | B::Xor | B::StringConcat | B::BitwiseOr | B::BitwiseAnd | B::BitwiseXor
    )
}

/// If `e` heads a left-deep chain of one associative operator, rebuilds it as a balanced
/// tree over the same operands in the same order.
fn rebalance(e: &mut Expr) {
    let op = match e {
        Expr::BinaryOp { op, .. } if is_associative(op) => op.clone(),
        _ => return,
    };
    let mut len = 1;
    let mut cur = &*e;
    while let Expr::BinaryOp { left, op: o, .. } = cur {
        if *o != op {
            break;
        }
        len += 1;
        cur = left;
    }
    if len < CHAIN_REBALANCE_MIN {
        return;
    }
    let mut operands = Vec::with_capacity(len);
    let mut cur = std::mem::replace(e, placeholder());
    loop {
        match cur {
            Expr::BinaryOp { left, op: o, right } if o == op => {
                operands.push(*right);
                cur = *left;
            }
            other => {
                operands.push(other);
                break;
            }
        }
    }
    operands.reverse();
    *e = balanced(operands, &op);
}

/// A balanced tree of `operands` joined by `op`, left to right (depth log2 of their count).
fn balanced(mut operands: Vec<Expr>, op: &BinaryOperator) -> Expr {
    if operands.len() == 1 {
        return operands.pop().expect("one operand");
    }
    let right = operands.split_off(operands.len() / 2);
    Expr::BinaryOp {
        left: Box::new(balanced(operands, op)),
        op: op.clone(),
        right: Box::new(balanced(right, op)),
    }
}

fn placeholder() -> Expr {
    Expr::value(ast::Value::Null)
}

/// Rebalances associative chains, outermost first (before their operands are visited, so
/// that the visit never goes down a long chain), and measures nesting; stops (without going
/// deeper) at the first limit passed.
struct Measure {
    expr_depth: usize,
    select_depth: usize,
    /// Set operations on the path from the statement down to here, and per query on it.
    chain_depth: usize,
    chains: Vec<usize>,
    error: Option<SqlError>,
}

impl VisitorMut for Measure {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        rebalance(e);
        self.expr_depth += 1;
        if self.expr_depth > EXPR_DEPTH_MAX {
            self.error = Some(too_deep());
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _e: &mut Expr) -> ControlFlow<()> {
        self.expr_depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
        // Before the visit goes down the body's chain of set operations: the chains on one
        // path down the statement (a chain in an operand of a chain) add up.
        let chain = set_operands(&q.body) - 1;
        self.chains.push(chain);
        self.chain_depth += chain;
        if self.chain_depth >= SET_OPERANDS_MAX {
            self.error = Some(SqlError::of(
                ErrorKind::StackOverrunNeedMore,
                format!(
                    "Thread stack overrun: the statement chains more than {SET_OPERANDS_MAX} \
                     SELECTs with UNION, INTERSECT or EXCEPT; split it"
                ),
            ));
            return ControlFlow::Break(());
        }
        self.select_depth += 1;
        // The statement's own SELECT is level 1; MySQL counts the subqueries below it.
        if self.select_depth > SELECT_NESTING_MAX + 1 {
            self.error = Some(SqlError::of(
                ErrorKind::TooHighLevelOfNestingForSelect,
                format!("Too high level of nesting for select (more than {SELECT_NESTING_MAX})"),
            ));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut ast::Query) -> ControlFlow<()> {
        self.select_depth -= 1;
        self.chain_depth -= self.chains.pop().unwrap_or(0);
        ControlFlow::Continue(())
    }
}

/// The operands of the chain of set operations heading `body` (1 for a plain SELECT),
/// counted along the chain without recursion.
fn set_operands(body: &ast::SetExpr) -> usize {
    let mut n = 1;
    let mut cur = body;
    while let ast::SetExpr::SetOperation { left, .. } = cur {
        n += 1;
        cur = left;
    }
    n
}

/// ER_STACK_OVERRUN_NEED_MORE, worded for an expression: MySQL reports a statement too deep
/// for its thread stack with this code.
pub(crate) fn too_deep() -> SqlError {
    SqlError::of(
        ErrorKind::StackOverrunNeedMore,
        format!(
            "Thread stack overrun: the statement nests expressions more than {EXPR_DEPTH_MAX} \
             deep; simplify it (long AND/OR/XOR chains and IN lists are not limited)"
        ),
    )
}

/// Runs `f` (a whole statement: compile, execute, drop) with at least
/// [`crate::STATEMENT_STACK_NEEDED`] of stack: on the caller's when it has that much left,
/// else on a fresh [`crate::STATEMENT_STACK_BYTES`] one.
pub(crate) fn with_statement_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(
        crate::STATEMENT_STACK_NEEDED,
        crate::STATEMENT_STACK_BYTES,
        f,
    )
}

/// Drops statements however deep their expressions and chains of set operations nest, with
/// work lists instead of recursion: each expression is emptied of its sub-expressions, and
/// each query of its chain of set operations (moved to the lists), before it is dropped.
/// What remains recursive is the nesting of queries in FROM, which the parser bounds.
pub(crate) fn drop_iteratively(stmts: Vec<ast::Statement>) {
    let mut rest = Pieces::default();
    for mut s in stmts {
        let _ = s.visit(&mut TakeParts {
            out: &mut rest,
            keep_first: false,
        });
        drop(s);
        rest.drop_all();
    }
}

/// Parts of a statement taken out to be dropped one level at a time.
#[derive(Default)]
struct Pieces {
    exprs: Vec<Expr>,
    sets: Vec<ast::SetExpr>,
}

impl Pieces {
    fn drop_all(&mut self) {
        loop {
            if let Some(mut e) = self.exprs.pop() {
                let _ = e.visit(&mut TakeParts {
                    out: self,
                    keep_first: true,
                });
                drop(e);
            } else if let Some(s) = self.sets.pop() {
                match s {
                    ast::SetExpr::SetOperation { left, right, .. } => {
                        self.sets.push(*left);
                        self.sets.push(*right);
                    }
                    mut operand => {
                        let _ = operand.visit(&mut TakeParts {
                            out: self,
                            keep_first: false,
                        });
                        drop(operand);
                    }
                }
            } else {
                return;
            }
        }
    }
}

/// Moves every expression it meets to `out`, leaving a NULL literal in its place, and every
/// query's chain of set operations, leaving an empty VALUES, so that the visit never
/// descends more than one level of either. `keep_first`: the first expression met is the one
/// being emptied; it stays.
struct TakeParts<'a> {
    out: &'a mut Pieces,
    keep_first: bool,
}

impl VisitorMut for TakeParts<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if self.keep_first {
            self.keep_first = false;
        } else {
            self.out.exprs.push(std::mem::replace(e, placeholder()));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
        if matches!(*q.body, ast::SetExpr::SetOperation { .. }) {
            let empty = ast::SetExpr::Values(ast::Values {
                explicit_row: false,
                value_keyword: false,
                rows: Vec::new(),
            });
            self.out.sets.push(std::mem::replace(&mut *q.body, empty));
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::{Visit, Visitor};

    fn parsed(sql: &str) -> Result<Vec<ast::Statement>, SqlError> {
        crate::front::parse::parse_ast(sql)
    }

    fn depth(e: &Expr) -> usize {
        struct D(usize, usize);
        impl Visitor for D {
            type Break = ();
            fn pre_visit_expr(&mut self, _e: &Expr) -> ControlFlow<()> {
                self.0 += 1;
                self.1 = self.1.max(self.0);
                ControlFlow::Continue(())
            }
            fn post_visit_expr(&mut self, _e: &Expr) -> ControlFlow<()> {
                self.0 -= 1;
                ControlFlow::Continue(())
            }
        }
        let mut d = D(0, 0);
        let _ = e.visit(&mut d);
        d.1
    }

    fn where_clause(s: &ast::Statement) -> &Expr {
        let ast::Statement::Query(q) = s else {
            panic!("not a query")
        };
        let ast::SetExpr::Select(sel) = &*q.body else {
            panic!("not a select")
        };
        sel.selection.as_ref().expect("a WHERE")
    }

    #[test]
    fn long_or_chains_become_shallow_and_keep_their_operand_order() {
        let terms: Vec<String> = (0..10_000).map(|i| format!("id = {i}")).collect();
        let sql = format!("SELECT * FROM t WHERE {}", terms.join(" OR "));
        let stmts = parsed(&sql).unwrap();
        let w = where_clause(&stmts[0]);
        assert!(depth(w) <= 20, "depth {}", depth(w));
        // Operands in their original order, left to right.
        let mut seen = Vec::new();
        struct Lits<'a>(&'a mut Vec<String>);
        impl Visitor for Lits<'_> {
            type Break = ();
            fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                if let Expr::Value(v) = e {
                    self.0.push(v.to_string());
                }
                ControlFlow::Continue(())
            }
        }
        let _ = w.visit(&mut Lits(&mut seen));
        let expected: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn short_and_mixed_chains_are_left_as_parsed() {
        let stmts = parsed("SELECT * FROM t WHERE a = 1 OR b = 2 AND c = 3 OR d = 4").unwrap();
        let text = where_clause(&stmts[0]).to_string();
        assert_eq!(text, "a = 1 OR b = 2 AND c = 3 OR d = 4");
    }

    #[test]
    fn too_deep_is_1436_and_too_nested_selects_1473() {
        let chain = format!("SELECT {}1", "1+".repeat(EXPR_DEPTH_MAX + 10));
        assert_eq!(parsed(&chain).unwrap_err().code(), 1436);
        let postfix = format!("SELECT 1{}", " IS NULL".repeat(EXPR_DEPTH_MAX + 10));
        assert_eq!(parsed(&postfix).unwrap_err().code(), 1436);
        let ok = format!("SELECT {}1", "1+".repeat(EXPR_DEPTH_MAX / 2));
        assert!(parsed(&ok).is_ok());
        let nested = |n: usize| format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n));
        assert!(parsed(&nested(SELECT_NESTING_MAX)).is_ok());
        assert_eq!(
            parsed(&nested(SELECT_NESTING_MAX + 1)).unwrap_err().code(),
            1473
        );
    }

    #[test]
    fn a_chain_far_past_the_limit_is_refused_and_dropped_without_recursion() {
        // 300,000 levels: dropped recursively, this would need far more than a test
        // thread's stack.
        let chain = format!("SELECT {}1", "1-".repeat(300_000));
        assert_eq!(parsed(&chain).unwrap_err().code(), 1436);
    }
}
