//! UNION, INTERSECT and EXCEPT: each operand compiled as a plan of its own, under an outer
//! stage for the ORDER BY and LIMIT of the whole, as a LogicalPlan (`plan_union`: SetOp
//! nodes over the operands, D1d).

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::compile::{Compiler, Scope};
use crate::bind::env::Env;
use crate::bind::select::clauses::{limit_items, order_items};
use crate::error::ErrorKind;
use crate::expr::Expr;
use crate::plan::logical::node::{Field, LogicalPlan, SetKind, SortKey};
use crate::plan::select::{SelectPlan, SetOp};
use crate::types::result::ColumnMeta;
use crate::types::sqltype::SqlType;
use crate::SqlError;

/// The operands of a chain of set operations, left to right, each with whether the
/// operation before it removes duplicates (UNION [DISTINCT]); the first operand's flag is
/// meaningless.
fn set_operands<'a>(
    e: &'a ast::SetExpr,
    op_before: SetOp,
    out: &mut Vec<(&'a ast::SetExpr, SetOp)>,
) -> Result<(), SqlError> {
    match e {
        ast::SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            let distinct = match set_quantifier {
                ast::SetQuantifier::All => false,
                ast::SetQuantifier::Distinct | ast::SetQuantifier::None => true,
                other => return Err(SqlError::unsupported(&format!("{op} {other}"))),
            };
            let this = match op {
                ast::SetOperator::Union => SetOp::Union { distinct },
                ast::SetOperator::Intersect => SetOp::Intersect { distinct },
                ast::SetOperator::Except | ast::SetOperator::Minus => SetOp::Except { distinct },
            };
            set_operands(left, op_before, out)?;
            // A set operation on the right binds tighter (INTERSECT over UNION, or
            // parentheses): it is one operand, compiled as a plan of its own.
            out.push((right, this));
            Ok(())
        }
        other => {
            out.push((other, op_before));
            Ok(())
        }
    }
}

/// A set operation's operands, compiled, and its outer stage, bound.
struct Parts {
    parts: Vec<(SelectPlan, SetOp)>,
    metas: Vec<ColumnMeta>,
    types: Vec<SqlType>,
    /// The result's columns (`Col(i)` of the combined row), then the ORDER BY keys.
    outputs: Vec<Expr>,
    order: Vec<bool>,
    limit: Option<Expr>,
    offset: Option<Expr>,
}

/// `SELECT ... UNION [ALL|DISTINCT] SELECT ... [ORDER BY ...] [LIMIT ...]`: each operand is a
/// plan of its own; the union's rows then go through an outer stage whose ORDER BY and LIMIT
/// name the first operand's columns.
fn bind_parts(q: &ast::Query, env: &Env, c: &mut Compiler) -> Result<Parts, SqlError> {
    let mut operands = Vec::new();
    let first = SetOp::Union { distinct: false };
    match &*q.body {
        ast::SetExpr::Query(inner) => operands.push((&*inner.body, first)),
        body => set_operands(body, first, &mut operands)?,
    }
    let mut parts: Vec<(SelectPlan, SetOp)> = Vec::with_capacity(operands.len());
    for (e, op) in operands {
        let sub = match e {
            ast::SetExpr::Query(inner) => (**inner).clone(),
            other => ast::Query {
                body: Box::new(other.clone()),
                with: None,
                order_by: None,
                limit_clause: None,
                fetch: None,
                locks: Vec::new(),
                for_clause: None,
                settings: None,
                format_clause: None,
                pipe_operators: Vec::new(),
            },
        };
        let p = (env.compile_query)(&sub, env, c)?;
        if let Some((first, _)) = parts.first() {
            if first.visible != p.visible {
                return Err(SqlError::of(
                    ErrorKind::WrongNumberOfColumnsInSelect,
                    "The used SELECT statements have a different number of columns",
                ));
            }
        }
        parts.push((p, op));
    }
    let first = &parts[0].0;
    let n = first.visible;
    let labels: Vec<String> = first.columns.iter().map(|m| m.name.clone()).collect();
    let (metas, types): (Vec<ColumnMeta>, Vec<SqlType>) = (0..n)
        .map(|i| union_meta(parts.iter().map(|(p, _)| (&p.columns[i], p.types[i]))))
        .unzip();
    // An operand's values of another type than the column's are converted in the operand, so
    // that DISTINCT, INTERSECT, EXCEPT and ORDER BY compare them as the column's type (`'abc'`
    // and 0 are distinct strings) and they print as it.
    for (p, _) in parts.iter_mut() {
        for (i, &ty) in types.iter().enumerate() {
            let own = (p.columns[i].wire_type != crate::types::result::wire_type::NULL)
                .then_some(p.types[i]);
            if crate::types::typeagg::needs_conversion(own, ty) {
                let x = std::mem::replace(&mut p.outputs[i], Expr::Col(0));
                p.outputs[i] = Expr::Coerce(Box::new(x), ty);
                p.types[i] = ty;
            }
        }
    }
    let mut outputs: Vec<Expr> = (0..n).map(Expr::Col).collect();
    let vars = env.vars;
    let mut scope = UnionScope {
        labels: &labels,
        types: &types,
        vars,
        clause: "order clause",
    };
    let order = order_items(q)?;
    for (e, _) in &order {
        let pos = match e {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(s, _) => s.parse::<usize>().ok(),
                _ => None,
            },
            _ => None,
        };
        outputs.push(match pos {
            Some(p) if p >= 1 && p <= n => Expr::Col(p - 1),
            Some(_) => {
                return Err(SqlError::unknown_column(&e.to_string(), "order clause"));
            }
            None => c.compile(e, &mut scope)?,
        });
    }
    let (limit, offset) = limit_items(&q.limit_clause);
    let mut none = UnionScope {
        labels: &[],
        types: &[],
        vars,
        clause: "limit",
    };
    let limit = limit.map(|e| c.compile(e, &mut none)).transpose()?;
    let offset = offset.map(|e| c.compile(e, &mut none)).transpose()?;
    Ok(Parts {
        parts,
        metas,
        types,
        outputs,
        order: order.iter().map(|(_, d)| *d).collect(),
        limit,
        offset,
    })
}

/// A set operation as a LogicalPlan (issue 20, D1d): its operands, compiled each as a query
/// of its own (blocks through the LogicalPlan path), as Compiled nodes
/// combined left-deep by SetOp nodes; then a Project of the combined row and the ORDER BY
/// keys, Sort and Limit. With the result's metadata and `has_sub` (false: the old plan does
/// not count the outer stage's subqueries).
pub(super) fn plan_union(
    q: &ast::Query,
    env: &Env,
    c: &mut Compiler,
) -> Result<(LogicalPlan, Arc<Vec<ColumnMeta>>, bool), SqlError> {
    let p = bind_parts(q, env, c)?;
    let n = p.types.len();
    let mut parts = p.parts.into_iter();
    let Some((first, _)) = parts.next() else {
        return Err(SqlError::internal("a set operation without operands"));
    };
    let mut plan = LogicalPlan::compiled(first);
    for (part, op) in parts {
        let (kind, distinct) = match op {
            SetOp::Union { distinct } => (SetKind::Union, distinct),
            SetOp::Intersect { distinct } => (SetKind::Intersect, distinct),
            SetOp::Except { distinct } => (SetKind::Except, distinct),
        };
        let right = LogicalPlan::compiled(part);
        plan = LogicalPlan::set_op(kind, !distinct, plan, right, p.types.clone())?;
    }
    let input = plan.schema().clone();
    let exprs = p
        .outputs
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let field = match (p.metas.get(i), p.types.get(i)) {
                (Some(m), Some(&ty)) if i < n => Field::new(
                    None,
                    &m.name,
                    ty,
                    m.flags & crate::types::result::col_flags::NOT_NULL == 0,
                ),
                _ => Field::new(
                    None,
                    &format!("order key {}", i - n + 1),
                    e.result_type(&|j| input.fields.get(j).map(|f| f.ty)),
                    true,
                ),
            };
            (e, field)
        })
        .collect();
    plan = LogicalPlan::project(plan, exprs, n)?;
    if !p.order.is_empty() {
        let keys = (0..p.order.len())
            .map(|k| SortKey {
                expr: Expr::Col(n + k),
                desc: p.order[k],
            })
            .collect();
        plan = LogicalPlan::sort(plan, keys)?;
    }
    if p.limit.is_some() || p.offset.is_some() {
        plan = LogicalPlan::limit(plan, p.offset, p.limit)?;
    }
    Ok((plan, Arc::new(p.metas), false))
}

/// A union's column from its operands' columns (metadata and type): its metadata (the first
/// operand's when every operand has the same type) and its type (see [`crate::types::typeagg`]).
fn union_meta<'a>(cols: impl Iterator<Item = (&'a ColumnMeta, SqlType)>) -> (ColumnMeta, SqlType) {
    use crate::types::result::{col_flags, wire_type};
    let cols: Vec<(&ColumnMeta, Option<SqlType>)> = cols
        // A NULL literal's column has MariaDB's NULL type, which takes no part.
        .map(|(m, t)| (m, (m.wire_type != wire_type::NULL).then_some(t)))
        .collect();
    let Some(&(first, first_ty)) = cols.first() else {
        return (
            ColumnMeta::computed("", SqlType::Double, true),
            SqlType::Double,
        );
    };
    let merged = crate::types::typeagg::result_of(cols.iter().map(|(_, t)| *t));
    // A column of NULLs only is an empty binary string.
    let ty = merged.unwrap_or(SqlType::Char {
        len: 0,
        binary: true,
    });
    let same = cols
        .iter()
        .all(|(m, t)| *t == first_ty && m.wire_type == first.wire_type);
    let nullable = cols.iter().any(|(m, _)| m.flags & col_flags::NOT_NULL == 0);
    let mut m = if same && merged.is_some() {
        first.clone()
    } else {
        ColumnMeta::computed(&first.name, ty, nullable)
    };
    if nullable {
        m.flags &= !col_flags::NOT_NULL;
    }
    if same {
        m.length = cols.iter().map(|(c, _)| c.length).max().unwrap_or(m.length);
    }
    (m, ty)
}

/// Names in a union's ORDER BY: the first operand's column labels.
struct UnionScope<'a> {
    labels: &'a [String],
    /// The union's column types.
    types: &'a [SqlType],
    vars: &'a dyn Fn(&str) -> Result<crate::types::value::Value, SqlError>,
    clause: &'static str,
}

impl Scope for UnionScope<'_> {
    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        match (
            q,
            self.labels
                .iter()
                .position(|l| l.eq_ignore_ascii_case(name)),
        ) {
            (None, Some(i)) => Ok(Expr::Col(i)),
            (Some(q), _) => Err(SqlError::of(
                ErrorKind::TablenameNotAllowedHere,
                format!(
                    "Table '{q}' from one of the SELECTs cannot be used in {}",
                    self.clause
                ),
            )),
            (None, None) => Err(SqlError::unknown_column(name, self.clause)),
        }
    }
    fn sysvar(&mut self, name: &str) -> Result<crate::types::value::Value, SqlError> {
        (self.vars)(name)
    }
    fn col_type(&self, i: usize) -> Option<SqlType> {
        self.types.get(i).copied()
    }
}
