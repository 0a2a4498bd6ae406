//! Walks over compiled expressions: the columns an expression reads, and moving its column
//! references (the rest of evaluation moves here with B10).

use crate::expr::Expr;

/// Column positions an expression reads.
pub fn mark_columns(e: &Expr, out: &mut [bool]) {
    let mut mark = |i: usize| {
        if let Some(w) = out.get_mut(i) {
            *w = true;
        }
    };
    e.visit(&mut |x| match x {
        Expr::Col(i) => mark(*i),
        // A correlated subquery reads these columns of this row.
        Expr::Subquery(p, _) => p.outer_cols().iter().for_each(|&c| mark(c)),
        _ => {}
    });
}

/// The columns an expression reads, as positions in the joined row.
pub fn columns_of(e: &Expr, width: usize) -> Vec<usize> {
    let mut m = vec![false; width];
    mark_columns(e, &mut m);
    m.iter()
        .enumerate()
        .filter_map(|(i, &b)| b.then_some(i))
        .collect()
}

/// `e` with every column reference moved by `-by` (joined row to one table's own row).
pub fn shift_columns(e: &Expr, by: usize) -> Expr {
    let mut x = e.clone();
    x.map_columns(&|i| i - by);
    x
}
