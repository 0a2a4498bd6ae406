//! The indented tree of a logical plan, the text `EXPLAIN FORMAT=TREE` will print (D4): one
//! line per node, `-> ` and four spaces a level as MySQL 8 writes it, inputs below their node,
//! then the subqueries the node's expressions run, each above its own plan. Columns print by
//! name (`t.a`), from the schema of the row the expression reads.

use std::fmt::Write as _;

use crate::catalog::Table;
use crate::expr::{Arith, CastTo, Cmp, Expr, SubKind};
use crate::plan::access::Access;
use crate::plan::dml::InsertMode;
use crate::plan::logical::node::{Field, JoinKind, LogicalPlan, Schema, SetKind};
use crate::plan::logical::root::{subqueries_of, LogicalRoot};
use crate::plan::select::{AggFn, AggSpec, JoinMethod};
use crate::types::value::Value;

impl LogicalRoot {
    pub fn tree(&self) -> String {
        let mut out = String::new();
        node(&mut out, &self.subqueries, &self.plan, 0, None);
        out
    }
}

/// Where an expression's column numbers point: the row it reads, and for `Expr::Outer` the
/// enclosing query's row (in a correlated subquery).
#[derive(Clone, Copy)]
struct Names<'a> {
    row: &'a Schema,
    outer: Option<&'a Schema>,
}

fn node(
    out: &mut String,
    subs: &[LogicalPlan],
    p: &LogicalPlan,
    depth: usize,
    outer: Option<&Schema>,
) {
    let row = expr_row(p);
    let n = Names { row: &row, outer };
    let _ = writeln!(out, "{}-> {}", "    ".repeat(depth), label(p, n));
    for i in p.inputs() {
        node(out, subs, i, depth + 1, outer);
    }
    let mut ids = Vec::new();
    p.exprs()
        .into_iter()
        .for_each(|e| subqueries_of(e, &mut ids));
    let mut seen = Vec::new();
    for id in ids {
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let correlated = p.exprs().iter().any(|e| {
            let mut c = false;
            e.visit(&mut |x| {
                if let Expr::Subquery(s, _) = x {
                    c |= s.id == id && !s.outer_cols.is_empty();
                }
            });
            c
        });
        let tag = if correlated { " (correlated)" } else { "" };
        let _ = writeln!(
            out,
            "{}-> Subquery #{}{tag}",
            "    ".repeat(depth + 1),
            id.0
        );
        if let Some(s) = subs.get(id.0) {
            node(out, subs, s, depth + 2, Some(&row));
        }
    }
}

/// The row a node's own expressions read.
fn expr_row(p: &LogicalPlan) -> Schema {
    match p {
        LogicalPlan::Join { schema, .. } => schema.clone(),
        LogicalPlan::Insert { table, .. } => {
            // ON DUPLICATE KEY UPDATE reads the old row, then the new one (`VALUES(c)`).
            let mut fields = table_row(table);
            fields.extend(
                table
                    .def
                    .columns
                    .iter()
                    .map(|c| Field::new(None, &format!("values({})", c.name), c.ty, true)),
            );
            Schema { fields }
        }
        _ => match p.inputs().first() {
            Some(i) => i.schema().clone(),
            None => Schema::default(),
        },
    }
}

fn table_row(t: &Table) -> Vec<Field> {
    t.def
        .columns
        .iter()
        .map(|c| Field::new(Some(&t.def.name), &c.name, c.ty, c.nullable))
        .collect()
}

fn list<T>(items: impl IntoIterator<Item = T>, f: impl Fn(T) -> String) -> String {
    items.into_iter().map(f).collect::<Vec<_>>().join(", ")
}

fn field_name(f: &Field) -> String {
    match &f.qualifier {
        Some(q) => format!("{q}.{}", f.name),
        None => f.name.clone(),
    }
}

fn table_name(t: &Table) -> String {
    format!("{}.{}", t.def.db, t.def.name)
}

fn column_names(t: &Table, cols: &[usize]) -> String {
    list(cols, |&c| t.def.columns[c].name.clone())
}

fn label(p: &LogicalPlan, n: Names) -> String {
    let x = |e: &Expr| expr(e, n);
    match p {
        LogicalPlan::Scan {
            table,
            alias,
            columns,
            access,
            for_update,
            ..
        } => {
            let mut s = format!("Scan: {}", table_name(table));
            if let Some(a) = alias {
                let _ = write!(s, " AS {a}");
            }
            let _ = write!(s, " ({})", column_names(table, columns));
            if !matches!(access, Access::Full) {
                let (kind, key) = access.describe(Some(table));
                let _ = write!(s, " using {kind} {}", key.unwrap_or_default());
            }
            if *for_update {
                s.push_str(" FOR UPDATE");
            }
            s
        }
        LogicalPlan::OneRow => "One row".into(),
        LogicalPlan::Values { rows, .. } => {
            let value = |e: &Expr| x(e);
            format!(
                "Values: {}",
                list(rows, |r| format!("({})", list(r, value)))
            )
        }
        LogicalPlan::Derived { alias, schema, .. } => {
            format!(
                "Derived: {alias} ({})",
                list(&schema.fields, |f| f.name.clone())
            )
        }
        LogicalPlan::Compiled { schema, .. } => format!(
            "Compiled query ({})",
            list(&schema.fields, |f| f.name.clone())
        ),
        LogicalPlan::Filter { predicate, .. } => format!("Filter: {}", x(predicate)),
        LogicalPlan::Project {
            exprs,
            visible,
            schema,
            ..
        } => {
            let col = |(e, f): (&Expr, &Field)| {
                let t = x(e);
                if t == f.name || t.ends_with(&format!(".{}", f.name)) {
                    t
                } else {
                    format!("{t} AS {}", f.name)
                }
            };
            let cols = exprs.iter().zip(&schema.fields);
            let mut s = format!("Project: {}", list(cols.clone().take(*visible), col));
            if exprs.len() > *visible {
                let _ = write!(s, " (hidden: {})", list(cols.skip(*visible), col));
            }
            s
        }
        LogicalPlan::Join {
            kind,
            on,
            method,
            right,
            ..
        } => {
            // A cross join whose terms the method took is still an inner join.
            let keyed = matches!(
                method.as_deref(),
                Some(JoinMethod::Hash { .. } | JoinMethod::Lookup(_))
            );
            let mut s = match (kind, on) {
                (JoinKind::Inner, None) if !keyed => "Cross join".into(),
                (JoinKind::Inner, None) => "Inner join".into(),
                (JoinKind::Inner, Some(on)) => format!("Inner join on {}", x(on)),
                (JoinKind::Left, None) => "Left join".into(),
                (JoinKind::Left, Some(on)) => format!("Left join on {}", x(on)),
            };
            if let Some(m) = method {
                let _ = write!(s, " ({})", join_method(m, right.schema(), n));
            }
            s
        }
        LogicalPlan::Aggregate { group, aggs, .. } => {
            let mut parts = Vec::new();
            if !group.is_empty() {
                parts.push(format!("group by {}", list(group, x)));
            }
            if !aggs.is_empty() {
                parts.push(list(aggs, |a| agg(a, n)));
            }
            format!("Aggregate: {}", parts.join("; "))
        }
        LogicalPlan::Distinct { input, width } => {
            if *width < input.schema().width() {
                format!("Distinct: first {width} columns")
            } else {
                "Distinct".into()
            }
        }
        LogicalPlan::Sort { keys, by_scan, .. } => {
            let mut s = format!(
                "Sort: {}",
                list(keys, |k| format!(
                    "{}{}",
                    x(&k.expr),
                    if k.desc { " DESC" } else { "" }
                ))
            );
            match by_scan {
                Some(false) => s.push_str(" (by the scan's key order)"),
                Some(true) => s.push_str(" (by the scan's reverse key order)"),
                None => {}
            }
            s
        }
        LogicalPlan::Limit { offset, fetch, .. } => {
            let mut s = String::from("Limit:");
            if let Some(f) = fetch {
                let _ = write!(s, " {}", x(f));
            }
            if let Some(o) = offset {
                let _ = write!(s, " offset {}", x(o));
            }
            s
        }
        LogicalPlan::SetOp { kind, all, .. } => {
            let k = match kind {
                SetKind::Union => "Union",
                SetKind::Intersect => "Intersect",
                SetKind::Except => "Except",
            };
            format!("{k}{}", if *all { " all" } else { "" })
        }
        LogicalPlan::Insert {
            table,
            columns,
            mode,
            on_dup,
            ..
        } => {
            let mut s = format!(
                "Insert: {} ({})",
                table_name(table),
                column_names(table, columns)
            );
            match mode {
                InsertMode::Insert => {}
                InsertMode::Ignore => s.push_str(" ignore"),
                InsertMode::Replace => s.push_str(" replace"),
            }
            if !on_dup.is_empty() {
                let _ = write!(
                    s,
                    " on duplicate key update {}",
                    assignments(table, on_dup, n)
                );
            }
            s
        }
        LogicalPlan::Update {
            table, set, ignore, ..
        } => format!(
            "Update: {} set {}{}",
            table_name(table),
            assignments(table, set, n),
            if *ignore { " ignore" } else { "" }
        ),
        LogicalPlan::Delete { table, .. } => format!("Delete: {}", table_name(table)),
    }
}

/// A join's method; the build side's expressions read the joined table's own row (`own`).
fn join_method(m: &JoinMethod, own: &Schema, n: Names) -> String {
    let b = |e: &Expr| expr(e, Names { row: own, ..n });
    let filter = |f: &Option<Expr>| match f {
        Some(f) => format!(", build filter {}", b(f)),
        None => String::new(),
    };
    match m {
        JoinMethod::Lookup(_) => "lookup per row".into(),
        JoinMethod::Loop { build_filter, .. } => format!("loop{}", filter(build_filter)),
        JoinMethod::Hash {
            build_filter,
            build_keys,
            probe_keys,
            ..
        } => format!(
            "hash {} = {}{}",
            list(probe_keys, |e| expr(e, n)),
            list(build_keys, b),
            filter(build_filter)
        ),
    }
}

fn assignments(t: &Table, set: &[(usize, Expr)], n: Names) -> String {
    list(set, |(c, e)| {
        format!("{} = {}", t.def.columns[*c].name, expr(e, n))
    })
}

fn agg(a: &AggSpec, n: Names) -> String {
    let name = match a.func {
        AggFn::CountStar => return "count(*)".into(),
        AggFn::Count => "count",
        AggFn::Sum => "sum",
        AggFn::Avg => "avg",
        AggFn::Min => "min",
        AggFn::Max => "max",
        AggFn::Any => "any_value",
    };
    let arg = a.arg.as_ref().map(|e| expr(e, n)).unwrap_or_default();
    format!("{name}({}{arg})", if a.distinct { "distinct " } else { "" })
}

fn column(row: Option<&Schema>, i: usize, unknown: &str) -> String {
    match row.and_then(|r| r.fields.get(i)) {
        Some(f) => field_name(f),
        None => format!("{unknown}#{i}"),
    }
}

/// An operand of an operator: in parentheses when it is an operator itself, so the text
/// never depends on precedence.
fn operand(e: &Expr, n: Names) -> String {
    let t = expr(e, n);
    match e {
        Expr::Arith(..)
        | Expr::Cmp(..)
        | Expr::And(..)
        | Expr::Or(..)
        | Expr::Xor(..)
        | Expr::Not(..)
        | Expr::IsNull(..)
        | Expr::Between(..)
        | Expr::InList(..)
        | Expr::Like(..)
        | Expr::Subquery(_, SubKind::In(..) | SubKind::Quantified(..)) => format!("({t})"),
        _ => t,
    }
}

fn not(neg: bool) -> &'static str {
    if neg {
        "NOT "
    } else {
        ""
    }
}

fn cmp_op(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "=",
        Cmp::Ne => "<>",
        Cmp::Lt => "<",
        Cmp::Le => "<=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
        Cmp::NullSafeEq => "<=>",
    }
}

fn constant(v: &Value) -> String {
    let text = || String::from_utf8_lossy(&v.to_text().unwrap_or_default()).into_owned();
    match v {
        Value::Null => "NULL".into(),
        Value::Str(s) => format!("'{}'", s.replace('\'', "''")),
        Value::Bytes(b) => format!(
            "x'{}'",
            b.iter().map(|x| format!("{x:02x}")).collect::<String>()
        ),
        Value::Date(_) => format!("DATE'{}'", text()),
        Value::DateTime(_) => format!("TIMESTAMP'{}'", text()),
        _ => text(),
    }
}

fn expr(e: &Expr, n: Names) -> String {
    let x = |e: &Expr| expr(e, n);
    let o = |e: &Expr| operand(e, n);
    match e {
        Expr::Const(v) => constant(v),
        Expr::Param(i) => format!("?{i}"),
        Expr::Col(i) => column(Some(n.row), *i, "col"),
        Expr::Outer(i) => column(n.outer, *i, "outer"),
        Expr::Neg(a) => format!("-{}", o(a)),
        Expr::Not(a) => format!("NOT {}", o(a)),
        Expr::Arith(op, a, b) => {
            let op = match op {
                Arith::Add => "+",
                Arith::Sub => "-",
                Arith::Mul => "*",
                Arith::Div => "/",
                Arith::IntDiv => "DIV",
                Arith::Mod => "%",
            };
            format!("{} {op} {}", o(a), o(b))
        }
        Expr::Cmp(c, a, b) => format!("{} {} {}", o(a), cmp_op(*c), o(b)),
        Expr::And(a, b) => format!("{} AND {}", o(a), o(b)),
        Expr::Or(a, b) => format!("{} OR {}", o(a), o(b)),
        Expr::Xor(a, b) => format!("{} XOR {}", o(a), o(b)),
        Expr::IsNull(a, neg) => format!("{} IS {}NULL", o(a), not(*neg)),
        Expr::Between(a, lo, hi, neg) => {
            format!("{} {}BETWEEN {} AND {}", o(a), not(*neg), o(lo), o(hi))
        }
        Expr::InList(a, l, neg) => format!("{} {}IN ({})", o(a), not(*neg), list(l, x)),
        Expr::Like(a, b, esc, neg) => {
            let mut s = format!("{} {}LIKE {}", o(a), not(*neg), o(b));
            if *esc != '\\' {
                let _ = write!(s, " ESCAPE '{esc}'");
            }
            s
        }
        Expr::Case(base, arms, other) => {
            let mut s = String::from("CASE");
            if let Some(b) = base {
                let _ = write!(s, " {}", x(b));
            }
            for (w, t) in arms {
                let _ = write!(s, " WHEN {} THEN {}", x(w), x(t));
            }
            if let Some(e) = other {
                let _ = write!(s, " ELSE {}", x(e));
            }
            s + " END"
        }
        Expr::Func(f, args) => f.explain(&args.iter().map(x).collect::<Vec<_>>()),
        Expr::Cast(a, to) => {
            let ty = match to {
                CastTo::Decimal {
                    precision, scale, ..
                } => format!("decimal({precision},{scale})"),
                other => format!("{other:?}").to_lowercase(),
            };
            format!("cast({} as {ty})", x(a))
        }
        // A value converted to the type of the IF/CASE/COALESCE it is an operand of: not a
        // CAST the user wrote, and MySQL's tree shows none.
        Expr::Coerce(a, _) => x(a),
        Expr::Subquery(sub, kind) => {
            let s = format!("(subquery #{})", sub.id.0);
            match kind {
                SubKind::Scalar => s,
                SubKind::Exists(neg) => format!("{}EXISTS {s}", not(*neg)),
                SubKind::In(a, neg) => format!("{} {}IN {s}", o(a), not(*neg)),
                SubKind::Quantified(a, c, all) => format!(
                    "{} {} {} {s}",
                    o(a),
                    cmp_op(*c),
                    if *all { "ALL" } else { "ANY" }
                ),
            }
        }
    }
}
