//! Access paths: how a table is read (full scan, or bounds on a key's columns).

use crate::catalog::Table;
use crate::expr::Expr;

/// Bounds on one key column.
#[derive(Debug, Clone)]
pub enum ColBound {
    Eq(Expr),
    In(Vec<Expr>),
    Range(Option<(Expr, bool)>, Option<(Expr, bool)>),
}

#[derive(Debug, Clone)]
pub enum Access {
    /// No table.
    None,
    Full,
    /// Bounds on a prefix of the primary key's columns.
    Primary(Vec<ColBound>),
    /// Bounds on a prefix of secondary index `i`'s columns.
    Index(usize, Vec<ColBound>),
}

impl Access {
    pub fn describe(&self, t: Option<&Table>) -> (String, Option<String>) {
        match (self, t) {
            (Access::Primary(b), _) if b.iter().all(|x| matches!(x, ColBound::Eq(_))) => {
                ("const".into(), Some("PRIMARY".into()))
            }
            (Access::Primary(_), _) => ("range".into(), Some("PRIMARY".into())),
            (Access::Index(i, b), Some(t)) => (
                if b.iter().all(|x| matches!(x, ColBound::Eq(_))) {
                    "ref".into()
                } else {
                    "range".into()
                },
                Some(t.def.indexes[*i].name.clone()),
            ),
            (Access::None, _) => ("".into(), None),
            _ => ("ALL".into(), None),
        }
    }
}
