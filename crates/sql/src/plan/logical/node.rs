//! The logical plan (docs/design/issue20-sql-engine.md §4.1): what a statement computes, as a
//! tree of relational operators, each with the schema of the rows it yields. Rows are
//! positional: an expression's `Expr::Col(i)` is column `i` of the row its node reads (the
//! input's, or for a join's ON the joined row, left ++ right), as in today's `SelectPlan`, so
//! expressions compile once and rewrites that move nodes need not renumber them.
//!
//! Nodes are built through the constructors, which refuse a plan whose expressions read
//! columns its input lacks or whose arities do not match (a binder bug: an internal error,
//! not a user's). The fields stay public to the crate for the rewrite passes of D2.

use std::sync::Arc;

use crate::catalog::Table;
use crate::error::SqlError;
use crate::expr::Expr;
use crate::plan::access::Access;
use crate::plan::dml::InsertMode;
use crate::plan::select::{AggFn, AggSpec, JoinMethod, SelectPlan};
use crate::types::result::ColumnMeta;
use crate::types::sqltype::SqlType;

/// One output column: its name as the binder resolves it (and prints it), the table or alias
/// it belongs to, and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub qualifier: Option<String>,
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
}

impl Field {
    pub fn new(qualifier: Option<&str>, name: &str, ty: SqlType, nullable: bool) -> Field {
        Field {
            qualifier: qualifier.map(str::to_string),
            name: name.to_string(),
            ty,
            nullable,
        }
    }
}

/// The columns a node yields, in row order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schema {
    pub fields: Vec<Field>,
}

impl Schema {
    pub fn width(&self) -> usize {
        self.fields.len()
    }
}

/// The schema of nodes that yield no rows to a client (INSERT, UPDATE, DELETE).
static NO_COLUMNS: Schema = Schema { fields: Vec::new() };

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Comma joins and CROSS JOIN are inner joins without ON.
    Inner,
    /// The binder turns RIGHT JOIN into LEFT JOIN with the inputs swapped.
    Left,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    Union,
    Intersect,
    Except,
}

/// What a query block's `SelectPlan` carries beside what its plan says, until §4.1's
/// `PlanRoot` holds it: the result's wire metadata (origin table, flags, charset, which a
/// `Field` lacks), and whether the block's own clauses compiled a subquery.
#[derive(Debug, Clone)]
pub struct BlockMeta {
    pub columns: Arc<Vec<ColumnMeta>>,
    pub has_sub: bool,
}

#[derive(Debug, Clone)]
pub struct SortKey {
    pub expr: Expr,
    pub desc: bool,
}

// The binder builds every node: Scan, OneRow, Derived, Compiled, Join, Filter, Project,
// Aggregate, Distinct, Sort, Limit and SetOp (D1b–D1d), Update and Delete (D3), Insert and
// Values (D3's rest). Some fields are read by the printer only.
#[derive(Debug, Clone)]
pub enum LogicalPlan {
    /// A table's rows. The row is the table's full row: `columns` are those read (the others
    /// are NULL), so pruning columns does not renumber the expressions above.
    Scan {
        table: Arc<Table>,
        alias: Option<String>,
        columns: Vec<usize>,
        /// How the rows are found: `Full` until `rules::choose_access_paths` decides (for a
        /// join's right input its bounds may read the outer row: then it is looked up).
        access: Access,
        for_update: bool,
        schema: Schema,
    },
    /// SELECT without FROM: one row of no columns.
    OneRow,
    /// INSERT … VALUES, one expression per column per row.
    Values {
        rows: Vec<Vec<Expr>>,
        schema: Schema,
    },
    /// A derived table, CTE use or (next issue) view: the input's visible columns under a
    /// name of its own. `table` describes them as a table without trees, the form in which
    /// the `SelectPlan` that runs the query reads them; `columns` are those read, as Scan's.
    Derived {
        input: Box<LogicalPlan>,
        alias: String,
        table: Arc<Table>,
        columns: Vec<usize>,
        /// The input block's metadata when it is a block (not Compiled), for lowering.
        meta: Option<BlockMeta>,
        schema: Schema,
    },
    /// A query compiled to a `SelectPlan` of its own: a set operation's operand (a block
    /// compiled through the LogicalPlan path, or a nested set operation), or a derived
    /// table's or CTE's set operation. Its rows are the plan's visible columns.
    Compiled {
        plan: Box<SelectPlan>,
        schema: Schema,
    },
    Filter {
        input: Box<LogicalPlan>,
        predicate: Expr,
    },
    /// The first `visible` columns are the statement's result; the rest are ORDER BY keys the
    /// select list lacks, which a Sort above reads.
    Project {
        input: Box<LogicalPlan>,
        exprs: Vec<Expr>,
        visible: usize,
        schema: Schema,
    },
    /// Yields left ++ right; `on` reads that joined row. A Filter directly above a Join,
    /// after `rules::push_down_filters`, holds the WHERE terms checked after a LEFT JOIN's
    /// NULL extension.
    Join {
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
        kind: JoinKind,
        on: Option<Expr>,
        /// How the right input's rows are matched: `None` until `rules::choose_join_methods`,
        /// which moves the ON terms that read only the right input into its build filter.
        /// Boxed: a hash join's keys would make every node as large.
        method: Option<Box<JoinMethod>>,
        schema: Schema,
    },
    /// Yields the group's values then the aggregates' (what `AggScope` compiles HAVING,
    /// ORDER BY and the select list against). HAVING is a Filter above it.
    Aggregate {
        input: Box<LogicalPlan>,
        group: Vec<Expr>,
        aggs: Vec<AggSpec>,
        schema: Schema,
    },
    /// Rows equal on the first `width` columns are yielded once (the hidden sort keys after
    /// them do not count).
    Distinct {
        input: Box<LogicalPlan>,
        width: usize,
    },
    Sort {
        input: Box<LogicalPlan>,
        keys: Vec<SortKey>,
        /// `Some(desc)`: the block's first table is scanned in key order (reversed when
        /// `desc`), which is already this order, so no sort runs (`rules::eliminate_sort`).
        by_scan: Option<bool>,
    },
    /// Expressions, not numbers: `LIMIT ?` is known at execution only.
    Limit {
        input: Box<LogicalPlan>,
        offset: Option<Expr>,
        fetch: Option<Expr>,
    },
    /// Binary and left-deep: `a UNION b EXCEPT c` is Except(Union(a, b), c).
    SetOp {
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
        kind: SetKind,
        all: bool,
        schema: Schema,
    },
    /// `columns`: the table column each of the source's visible columns goes to. The source
    /// is a Values node (INSERT … VALUES/SET), a query block (INSERT … SELECT, optimized with
    /// the statement: `source_meta` is its metadata, for lowering) or a Compiled query (a set
    /// operation, lowered on its own). `on_dup` reads `[old row…, new row…]`, as `DupScope`
    /// compiles it.
    Insert {
        table: Arc<Table>,
        columns: Vec<usize>,
        source: Box<LogicalPlan>,
        source_meta: Option<BlockMeta>,
        mode: InsertMode,
        on_dup: Vec<(usize, Expr)>,
    },
    /// `source` yields the table's rows to change (a Scan of `table`, filtered, sorted,
    /// limited); `set` reads the source's row.
    Update {
        table: Arc<Table>,
        source: Box<LogicalPlan>,
        set: Vec<(usize, Expr)>,
        ignore: bool,
    },
    Delete {
        table: Arc<Table>,
        source: Box<LogicalPlan>,
    },
}

fn invalid(what: &str, detail: String) -> SqlError {
    SqlError::internal(format!("invalid logical plan: {what}: {detail}"))
}

/// Refuses an expression that reads a column outside a row of `width` columns (directly, or
/// through a correlated subquery's outer columns).
fn check_reads(what: &str, e: &Expr, width: usize) -> Result<(), SqlError> {
    let mut bad = None;
    e.visit(&mut |x| match x {
        Expr::Col(i) if *i >= width => bad = Some(*i),
        Expr::Subquery(sub, _) => {
            if let Some(&c) = sub.outer_cols.iter().find(|&&c| c >= width) {
                bad = Some(c);
            }
        }
        _ => {}
    });
    match bad {
        Some(i) => Err(invalid(
            what,
            format!("reads column {i} of a row of {width}"),
        )),
        None => Ok(()),
    }
}

fn table_fields(table: &Table, qualifier: &str) -> Vec<Field> {
    table
        .def
        .columns
        .iter()
        .map(|c| Field::new(Some(qualifier), &c.name, c.ty, c.nullable))
        .collect()
}

fn check_column(what: &str, table: &Table, c: usize) -> Result<(), SqlError> {
    let n = table.def.columns.len();
    if c >= n {
        return Err(invalid(
            what,
            format!("column {c} of table `{}` with {n}", table.def.name),
        ));
    }
    Ok(())
}

/// A Scan's or Derived's `columns`: ascending, each once, each in the table.
fn check_read_list(what: &str, table: &Table, columns: &[usize]) -> Result<(), SqlError> {
    for (k, &c) in columns.iter().enumerate() {
        check_column(what, table, c)?;
        if k > 0 && columns[k - 1] >= c {
            return Err(invalid(what, "columns not ascending".into()));
        }
    }
    Ok(())
}

impl LogicalPlan {
    /// Reads `columns` (ascending, each once) of `table`, named `alias` or the table's name.
    pub fn scan(
        table: Arc<Table>,
        alias: Option<&str>,
        columns: Vec<usize>,
    ) -> Result<LogicalPlan, SqlError> {
        check_read_list("Scan", &table, &columns)?;
        let fields = table_fields(&table, alias.unwrap_or(&table.def.name));
        Ok(LogicalPlan::Scan {
            alias: alias.map(str::to_string),
            columns,
            access: Access::Full,
            for_update: false,
            schema: Schema { fields },
            table,
        })
    }

    /// INSERT's rows, each as long as `fields`. The rows are moved in, never copied: a bulk
    /// INSERT's thousands of rows pass through the plan to the executor as the binder built
    /// them.
    pub fn values(rows: Vec<Vec<Expr>>, fields: Vec<Field>) -> Result<LogicalPlan, SqlError> {
        if let Some(r) = rows.iter().position(|r| r.len() != fields.len()) {
            return Err(invalid(
                "Values",
                format!(
                    "row {r} has {} values for {} columns",
                    rows[r].len(),
                    fields.len()
                ),
            ));
        }
        Ok(LogicalPlan::Values {
            rows,
            schema: Schema { fields },
        })
    }

    /// `table`: the derived table as the binder describes it, one column per visible column
    /// of `input`, named by the alias; `columns`: those read (ascending, each once); `meta`:
    /// the input block's, when it is one.
    pub fn derived(
        input: LogicalPlan,
        table: Arc<Table>,
        columns: Vec<usize>,
        meta: Option<BlockMeta>,
    ) -> Result<LogicalPlan, SqlError> {
        let visible = input.visible_fields().len();
        if table.def.columns.len() != visible {
            return Err(invalid(
                "Derived",
                format!("{} names for {visible} columns", table.def.columns.len()),
            ));
        }
        check_read_list("Derived", &table, &columns)?;
        let alias = table.def.name.clone();
        let fields = table_fields(&table, &alias);
        Ok(LogicalPlan::Derived {
            input: Box::new(input),
            alias,
            table,
            columns,
            meta,
            schema: Schema { fields },
        })
    }

    /// A query already lowered (a set operand, or a set operation under a Derived), yielding
    /// its visible columns.
    pub fn compiled(plan: SelectPlan) -> LogicalPlan {
        let fields = plan
            .columns
            .iter()
            .zip(&plan.types)
            .take(plan.visible)
            .map(|(m, &ty)| Field::new(None, &m.name, ty, true))
            .collect();
        LogicalPlan::Compiled {
            plan: Box::new(plan),
            schema: Schema { fields },
        }
    }

    /// The columns a query block yields to whoever reads it as a table: a Project's
    /// visible columns (the hidden ORDER BY keys after them are its own).
    pub fn visible_fields(&self) -> &[Field] {
        match self {
            LogicalPlan::Limit { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Distinct { input, .. } => input.visible_fields(),
            LogicalPlan::Project {
                visible, schema, ..
            } => &schema.fields[..*visible],
            other => &other.schema().fields,
        }
    }

    pub fn filter(input: LogicalPlan, predicate: Expr) -> Result<LogicalPlan, SqlError> {
        check_reads("Filter", &predicate, input.schema().width())?;
        Ok(LogicalPlan::Filter {
            input: Box::new(input),
            predicate,
        })
    }

    /// `exprs`: each output column's expression over the input row, and its field.
    pub fn project(
        input: LogicalPlan,
        exprs: Vec<(Expr, Field)>,
        visible: usize,
    ) -> Result<LogicalPlan, SqlError> {
        if visible > exprs.len() {
            return Err(invalid(
                "Project",
                format!("{visible} visible of {} columns", exprs.len()),
            ));
        }
        let width = input.schema().width();
        for (e, _) in &exprs {
            check_reads("Project", e, width)?;
        }
        let (exprs, fields) = exprs.into_iter().unzip();
        Ok(LogicalPlan::Project {
            input: Box::new(input),
            exprs,
            visible,
            schema: Schema { fields },
        })
    }

    pub fn join(
        left: LogicalPlan,
        right: LogicalPlan,
        kind: JoinKind,
        on: Option<Expr>,
    ) -> Result<LogicalPlan, SqlError> {
        let mut fields = left.schema().fields.clone();
        fields.extend(right.schema().fields.iter().map(|f| Field {
            // A LEFT JOIN's unmatched rows carry NULLs for the right side.
            nullable: f.nullable || kind == JoinKind::Left,
            ..f.clone()
        }));
        if let Some(on) = &on {
            check_reads("Join", on, fields.len())?;
        }
        Ok(LogicalPlan::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind,
            on,
            method: None,
            schema: Schema { fields },
        })
    }

    /// `group`: the GROUP BY expressions over the input row and their fields; `aggs`: the
    /// aggregates and their names.
    pub fn aggregate(
        input: LogicalPlan,
        group: Vec<(Expr, Field)>,
        aggs: Vec<(AggSpec, String)>,
    ) -> Result<LogicalPlan, SqlError> {
        let width = input.schema().width();
        for (e, _) in &group {
            check_reads("Aggregate", e, width)?;
        }
        for (a, _) in &aggs {
            match (&a.arg, a.func) {
                (None, AggFn::CountStar) => {}
                (Some(_), AggFn::CountStar) | (None, _) => {
                    return Err(invalid(
                        "Aggregate",
                        format!("{:?} with {:?}", a.func, a.arg),
                    ))
                }
                (Some(e), _) => check_reads("Aggregate", e, width)?,
            }
        }
        let (group, mut fields): (Vec<Expr>, Vec<Field>) = group.into_iter().unzip();
        fields.extend(aggs.iter().map(|(a, name)| {
            let counts = matches!(a.func, AggFn::CountStar | AggFn::Count);
            Field::new(None, name, a.ty, !counts)
        }));
        Ok(LogicalPlan::Aggregate {
            input: Box::new(input),
            group,
            aggs: aggs.into_iter().map(|(a, _)| a).collect(),
            schema: Schema { fields },
        })
    }

    pub fn distinct(input: LogicalPlan, width: usize) -> Result<LogicalPlan, SqlError> {
        let n = input.schema().width();
        if width == 0 || width > n {
            return Err(invalid("Distinct", format!("on {width} of {n} columns")));
        }
        Ok(LogicalPlan::Distinct {
            input: Box::new(input),
            width,
        })
    }

    pub fn sort(input: LogicalPlan, keys: Vec<SortKey>) -> Result<LogicalPlan, SqlError> {
        if keys.is_empty() {
            return Err(invalid("Sort", "no keys".into()));
        }
        let width = input.schema().width();
        for k in &keys {
            check_reads("Sort", &k.expr, width)?;
        }
        Ok(LogicalPlan::Sort {
            input: Box::new(input),
            keys,
            by_scan: None,
        })
    }

    /// LIMIT/OFFSET are constants or parameters: they read no column.
    pub fn limit(
        input: LogicalPlan,
        offset: Option<Expr>,
        fetch: Option<Expr>,
    ) -> Result<LogicalPlan, SqlError> {
        for e in offset.iter().chain(&fetch) {
            check_reads("Limit", e, 0)?;
        }
        Ok(LogicalPlan::Limit {
            input: Box::new(input),
            offset,
            fetch,
        })
    }

    /// `types`: the result's column types, which the binder aggregates from both sides
    /// (`types::typeagg`); names come from the left side, as in MySQL.
    pub fn set_op(
        kind: SetKind,
        all: bool,
        left: LogicalPlan,
        right: LogicalPlan,
        types: Vec<SqlType>,
    ) -> Result<LogicalPlan, SqlError> {
        let (l, r) = (left.schema(), right.schema());
        if l.width() != r.width() || types.len() != l.width() {
            return Err(invalid(
                "SetOp",
                format!(
                    "{} and {} columns, {} types",
                    l.width(),
                    r.width(),
                    types.len()
                ),
            ));
        }
        let fields = l
            .fields
            .iter()
            .zip(&r.fields)
            .zip(types)
            .map(|((a, b), ty)| Field::new(None, &a.name, ty, a.nullable || b.nullable))
            .collect();
        Ok(LogicalPlan::SetOp {
            left: Box::new(left),
            right: Box::new(right),
            kind,
            all,
            schema: Schema { fields },
        })
    }

    /// `source_meta`: the source block's metadata when the source is a query block (see the
    /// node); a block's hidden ORDER BY columns are not inserted.
    pub fn insert(
        table: Arc<Table>,
        columns: Vec<usize>,
        source: LogicalPlan,
        source_meta: Option<BlockMeta>,
        mode: InsertMode,
        on_dup: Vec<(usize, Expr)>,
    ) -> Result<LogicalPlan, SqlError> {
        let width = source.visible_fields().len();
        if width != columns.len() {
            return Err(invalid(
                "Insert",
                format!("source of {width} columns into {}", columns.len()),
            ));
        }
        for &c in &columns {
            check_column("Insert", &table, c)?;
        }
        let both = 2 * table.def.columns.len();
        for (c, e) in &on_dup {
            check_column("Insert", &table, *c)?;
            check_reads("Insert", e, both)?;
        }
        Ok(LogicalPlan::Insert {
            table,
            columns,
            source: Box::new(source),
            source_meta,
            mode,
            on_dup,
        })
    }

    pub fn update(
        table: Arc<Table>,
        source: LogicalPlan,
        set: Vec<(usize, Expr)>,
        ignore: bool,
    ) -> Result<LogicalPlan, SqlError> {
        check_target("Update", &table, &source)?;
        for (c, e) in &set {
            check_column("Update", &table, *c)?;
            check_reads("Update", e, source.schema().width())?;
        }
        Ok(LogicalPlan::Update {
            table,
            source: Box::new(source),
            set,
            ignore,
        })
    }

    pub fn delete(table: Arc<Table>, source: LogicalPlan) -> Result<LogicalPlan, SqlError> {
        check_target("Delete", &table, &source)?;
        Ok(LogicalPlan::Delete {
            table,
            source: Box::new(source),
        })
    }

    /// The rows this node yields.
    pub fn schema(&self) -> &Schema {
        match self {
            LogicalPlan::Scan { schema, .. }
            | LogicalPlan::Values { schema, .. }
            | LogicalPlan::Derived { schema, .. }
            | LogicalPlan::Compiled { schema, .. }
            | LogicalPlan::Project { schema, .. }
            | LogicalPlan::Join { schema, .. }
            | LogicalPlan::Aggregate { schema, .. }
            | LogicalPlan::SetOp { schema, .. } => schema,
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Distinct { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. } => input.schema(),
            LogicalPlan::OneRow
            | LogicalPlan::Insert { .. }
            | LogicalPlan::Update { .. }
            | LogicalPlan::Delete { .. } => &NO_COLUMNS,
        }
    }

    /// The nodes this one reads, in order.
    pub fn inputs(&self) -> Vec<&LogicalPlan> {
        match self {
            LogicalPlan::Scan { .. }
            | LogicalPlan::OneRow
            | LogicalPlan::Values { .. }
            | LogicalPlan::Compiled { .. } => Vec::new(),
            LogicalPlan::Derived { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Distinct { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } | LogicalPlan::SetOp { left, right, .. } => {
                vec![left, right]
            }
            LogicalPlan::Insert { source, .. }
            | LogicalPlan::Update { source, .. }
            | LogicalPlan::Delete { source, .. } => vec![source],
        }
    }

    /// This node's own expressions (not its inputs'), in the order the printer shows them.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            LogicalPlan::Scan { .. }
            | LogicalPlan::OneRow
            | LogicalPlan::Derived { .. }
            | LogicalPlan::Compiled { .. }
            | LogicalPlan::Distinct { .. }
            | LogicalPlan::SetOp { .. }
            | LogicalPlan::Delete { .. } => Vec::new(),
            LogicalPlan::Values { rows, .. } => rows.iter().flatten().collect(),
            LogicalPlan::Filter { predicate, .. } => vec![predicate],
            LogicalPlan::Project { exprs, .. } => exprs.iter().collect(),
            LogicalPlan::Join { on, .. } => on.iter().collect(),
            LogicalPlan::Aggregate { group, aggs, .. } => group
                .iter()
                .chain(aggs.iter().filter_map(|a| a.arg.as_ref()))
                .collect(),
            LogicalPlan::Sort { keys, .. } => keys.iter().map(|k| &k.expr).collect(),
            LogicalPlan::Limit { offset, fetch, .. } => offset.iter().chain(fetch).collect(),
            LogicalPlan::Insert { on_dup, .. } => on_dup.iter().map(|(_, e)| e).collect(),
            LogicalPlan::Update { set, .. } => set.iter().map(|(_, e)| e).collect(),
        }
    }

    /// Calls `f` on this node and every node below it, parents first (the walk a privilege
    /// check or a view's expansion makes over the Scans).
    pub fn walk(&self, f: &mut dyn FnMut(&LogicalPlan)) {
        f(self);
        for i in self.inputs() {
            i.walk(f);
        }
    }
}

/// UPDATE and DELETE change the rows their source reads from the target table: the source
/// yields that table's full row and scans it.
fn check_target(what: &str, table: &Arc<Table>, source: &LogicalPlan) -> Result<(), SqlError> {
    let width = table.def.columns.len();
    if source.schema().width() != width {
        return Err(invalid(
            what,
            format!(
                "source of {} columns for a table of {width}",
                source.schema().width()
            ),
        ));
    }
    let mut scans = false;
    source.walk(&mut |p| {
        if let LogicalPlan::Scan { table: t, .. } = p {
            scans |= Arc::ptr_eq(t, table);
        }
    });
    if !scans {
        return Err(invalid(
            what,
            format!("source does not scan `{}`", table.def.name),
        ));
    }
    Ok(())
}
