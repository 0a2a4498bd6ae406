//! Plans built by hand as the binder will build them (D1b–D3), their printed trees and
//! schemas, and the constructors' refusals.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use zipdb_engine::storage::io::SimStorage;
use zipdb_engine::{Codec, Database, Options, TableFormat};

use crate::catalog::{ColumnDef, Table, TableDef, TableOptions};
use crate::error::{ErrorKind, SqlError};
use crate::expr::{lookup, Cmp, Expr, SubKind, SubqueryId, SubqueryRef};
use crate::plan::dml::InsertMode;
use crate::plan::logical::node::{Field, JoinKind, LogicalPlan, Schema, SetKind, SortKey};
use crate::plan::logical::root::LogicalRoot;
use crate::plan::select::{AggFn, AggSpec};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

const INT: SqlType = SqlType::Int {
    bytes: 4,
    unsigned: false,
};
const BIGINT: SqlType = SqlType::Int {
    bytes: 8,
    unsigned: false,
};
const STR: SqlType = SqlType::Varchar {
    len: 10,
    binary: false,
};
const DEC: SqlType = SqlType::Decimal {
    precision: 32,
    scale: 0,
};

/// `d.t (a INT NOT NULL, b VARCHAR(10), c INT)` and `d.u (x INT, y VARCHAR(10))`, on a tree
/// of an in-memory database (a plan never reads it); `dt (p INT NOT NULL, q VARCHAR(10))`
/// describes a derived table's rows.
struct Fixture {
    _db: Database,
    t: Arc<Table>,
    u: Arc<Table>,
    dt: Arc<Table>,
}

fn fixture() -> Fixture {
    let db = Database::open_storage(
        Box::new(SimStorage::new("data")),
        Box::new(SimStorage::new("wal")),
        Options {
            pool_bytes: 4 << 20,
            wal_bytes: 4 << 20,
            recovery_progress: false,
            warm_restart: false,
            ..Default::default()
        },
    )
    .expect("open an in-memory database");
    let tree = db.create_tree("p", None).expect("create a tree");
    let table = |name: &str, cols: &[(&str, SqlType, bool)]| {
        let columns: Vec<ColumnDef> = cols
            .iter()
            .map(|&(n, ty, nullable)| ColumnDef {
                name: n.to_string(),
                ty,
                nullable,
                default: None,
                default_now: false,
                auto_increment: false,
                display_width: None,
            })
            .collect();
        Arc::new(Table {
            types: columns.iter().map(|c| c.ty).collect(),
            def: TableDef {
                id: 1,
                db: "d".into(),
                name: name.into(),
                columns,
                pk: Vec::new(),
                indexes: Vec::new(),
                format: TableFormat::Codec(Codec::None),
                options: TableOptions::default(),
                primary_tree: "p".into(),
            },
            primary: tree.clone(),
            indexes: Vec::new(),
            next_id: AtomicU64::new(0),
            auto_inc: None,
            virt: None,
        })
    };
    let t = table(
        "t",
        &[("a", INT, false), ("b", STR, true), ("c", INT, true)],
    );
    let u = table("u", &[("x", INT, true), ("y", STR, true)]);
    let dt = table("dt", &[("p", INT, false), ("q", STR, true)]);
    Fixture { _db: db, t, u, dt }
}

fn col(i: usize) -> Box<Expr> {
    Box::new(Expr::Col(i))
}

fn int(v: i64) -> Box<Expr> {
    Box::new(Expr::Const(Value::Int(v)))
}

fn cmp(c: Cmp, a: Box<Expr>, b: Box<Expr>) -> Expr {
    Expr::Cmp(c, a, b)
}

fn field(q: Option<&str>, name: &str, ty: SqlType, nullable: bool) -> Field {
    Field::new(q, name, ty, nullable)
}

/// A Project of columns of the input, each keeping its field.
fn keep(input: LogicalPlan, cols: &[usize]) -> LogicalPlan {
    let exprs = cols
        .iter()
        .map(|&c| (Expr::Col(c), input.schema().fields[c].clone()))
        .collect();
    LogicalPlan::project(input, exprs, cols.len()).unwrap()
}

/// Each column as `qualifier.name type nullability`.
fn columns(s: &Schema) -> Vec<String> {
    s.fields
        .iter()
        .map(|f| {
            let q = f
                .qualifier
                .as_deref()
                .map(|q| format!("{q}."))
                .unwrap_or_default();
            let null = if f.nullable { "null" } else { "not null" };
            format!("{q}{} {} {null}", f.name, f.ty.sql_name())
        })
        .collect()
}

fn root(plan: LogicalPlan) -> LogicalRoot {
    LogicalRoot::new(plan, Vec::new()).unwrap()
}

fn tree(plan: LogicalPlan) -> String {
    root(plan).tree()
}

fn refused<T: std::fmt::Debug>(r: Result<T, SqlError>, what: &str) {
    let e = r.expect_err(what);
    assert_eq!(e.kind(), ErrorKind::UnknownError, "{what}: {e:?}");
    assert!(
        e.message()
            .starts_with(&format!("invalid logical plan: {what}")),
        "{what}: {}",
        e.message()
    );
}

#[test]
fn single_table_select_with_where_order_and_limit() {
    // SELECT a, b FROM t WHERE a > 5 ORDER BY b DESC LIMIT 10 OFFSET 2
    let f = fixture();
    let scan = LogicalPlan::scan(f.t.clone(), None, vec![0, 1]).unwrap();
    let filter = LogicalPlan::filter(scan, cmp(Cmp::Gt, col(0), int(5))).unwrap();
    let project = LogicalPlan::project(
        filter,
        vec![
            (Expr::Col(0), field(None, "a", INT, false)),
            (Expr::Col(1), field(None, "b", STR, true)),
        ],
        2,
    )
    .unwrap();
    let sort = LogicalPlan::sort(
        project,
        vec![SortKey {
            expr: Expr::Col(1),
            desc: true,
        }],
    )
    .unwrap();
    let plan = LogicalPlan::limit(sort, Some(*int(2)), Some(*int(10))).unwrap();
    assert_eq!(
        columns(plan.schema()),
        ["a int not null", "b varchar(10) null"]
    );
    assert_eq!(
        tree(plan),
        "-> Limit: 10 offset 2\n\
         \x20   -> Sort: b DESC\n\
         \x20       -> Project: t.a, t.b\n\
         \x20           -> Filter: t.a > 5\n\
         \x20               -> Scan: d.t (a, b)\n"
    );
}

#[test]
fn left_join_makes_the_right_side_nullable() {
    // SELECT t.a, u.y FROM t LEFT JOIN u AS v ON t.a = v.x WHERE v.y IS NULL
    let f = fixture();
    let t = LogicalPlan::scan(f.t.clone(), None, vec![0]).unwrap();
    let u = LogicalPlan::scan(f.u.clone(), Some("v"), vec![0, 1]).unwrap();
    let join = LogicalPlan::join(t, u, JoinKind::Left, Some(cmp(Cmp::Eq, col(0), col(3)))).unwrap();
    assert_eq!(
        columns(join.schema()),
        [
            "t.a int not null",
            "t.b varchar(10) null",
            "t.c int null",
            "v.x int null",
            "v.y varchar(10) null"
        ]
    );
    let filter = LogicalPlan::filter(join, Expr::IsNull(col(4), false)).unwrap();
    let plan = keep(filter, &[0, 4]);
    assert_eq!(
        columns(plan.schema()),
        ["t.a int not null", "v.y varchar(10) null"]
    );
    assert_eq!(
        tree(plan),
        "-> Project: t.a, v.y\n\
         \x20   -> Filter: v.y IS NULL\n\
         \x20       -> Left join on t.a = v.x\n\
         \x20           -> Scan: d.t (a)\n\
         \x20           -> Scan: d.u AS v (x, y)\n"
    );
    // An inner join keeps the right side's nullability; without ON it is a cross join.
    let t = LogicalPlan::scan(f.t.clone(), None, vec![0, 1, 2]).unwrap();
    let u = LogicalPlan::scan(f.t.clone(), Some("t2"), vec![0]).unwrap();
    let cross = LogicalPlan::join(t, u, JoinKind::Inner, None).unwrap();
    assert_eq!(columns(cross.schema())[3], "t2.a int not null");
    assert!(tree(cross).starts_with("-> Cross join\n"));
}

#[test]
fn group_by_with_having() {
    // SELECT c, COUNT(*) AS n, SUM(a) AS total FROM t GROUP BY c HAVING SUM(a) > 10
    let f = fixture();
    let scan = LogicalPlan::scan(f.t.clone(), None, vec![0, 2]).unwrap();
    let agg = LogicalPlan::aggregate(
        scan,
        vec![(Expr::Col(2), field(Some("t"), "c", INT, true))],
        vec![
            (
                AggSpec {
                    func: AggFn::CountStar,
                    arg: None,
                    distinct: false,
                    ty: BIGINT,
                },
                "count(*)".into(),
            ),
            (
                AggSpec {
                    func: AggFn::Sum,
                    arg: Some(Expr::Col(0)),
                    distinct: false,
                    ty: DEC,
                },
                "sum(a)".into(),
            ),
        ],
    )
    .unwrap();
    assert_eq!(
        columns(agg.schema()),
        [
            "t.c int null",
            "count(*) bigint not null",
            "sum(a) decimal(32,0) null"
        ]
    );
    let having = LogicalPlan::filter(agg, cmp(Cmp::Gt, col(2), int(10))).unwrap();
    let plan = LogicalPlan::project(
        having,
        vec![
            (Expr::Col(0), field(None, "c", INT, true)),
            (Expr::Col(1), field(None, "n", BIGINT, false)),
            (Expr::Col(2), field(None, "total", DEC, true)),
        ],
        3,
    )
    .unwrap();
    assert_eq!(
        tree(plan),
        "-> Project: t.c, count(*) AS n, sum(a) AS total\n\
         \x20   -> Filter: sum(a) > 10\n\
         \x20       -> Aggregate: group by t.c; count(*), sum(t.a)\n\
         \x20           -> Scan: d.t (a, c)\n"
    );
}

#[test]
fn union_chains_left_deep_and_names_from_the_left() {
    // SELECT a FROM t UNION ALL SELECT x FROM u UNION SELECT 1 ORDER BY 1
    let f = fixture();
    let t = keep(LogicalPlan::scan(f.t.clone(), None, vec![0]).unwrap(), &[0]);
    let u = keep(LogicalPlan::scan(f.u.clone(), None, vec![0]).unwrap(), &[0]);
    let all = LogicalPlan::set_op(SetKind::Union, true, t, u, vec![INT]).unwrap();
    let one = LogicalPlan::project(
        LogicalPlan::OneRow,
        vec![(*int(1), field(None, "1", INT, false))],
        1,
    )
    .unwrap();
    let union = LogicalPlan::set_op(SetKind::Union, false, all, one, vec![BIGINT]).unwrap();
    assert_eq!(columns(union.schema()), ["a bigint null"]);
    let plan = LogicalPlan::sort(
        union,
        vec![SortKey {
            expr: Expr::Col(0),
            desc: false,
        }],
    )
    .unwrap();
    assert_eq!(
        tree(plan),
        "-> Sort: a\n\
         \x20   -> Union\n\
         \x20       -> Union all\n\
         \x20           -> Project: t.a\n\
         \x20               -> Scan: d.t (a)\n\
         \x20           -> Project: u.x\n\
         \x20               -> Scan: d.u (x)\n\
         \x20       -> Project: 1\n\
         \x20           -> One row\n"
    );
    let two = keep(
        LogicalPlan::scan(f.u.clone(), None, vec![0, 1]).unwrap(),
        &[0, 1],
    );
    let one = keep(LogicalPlan::scan(f.t.clone(), None, vec![0]).unwrap(), &[0]);
    refused(
        LogicalPlan::set_op(SetKind::Except, false, one, two, vec![INT]),
        "SetOp",
    );
}

fn sub(id: usize, outer_cols: Vec<usize>, ty: SqlType) -> Box<SubqueryRef> {
    Box::new(SubqueryRef {
        id: SubqueryId(id),
        outer_cols,
        ty,
    })
}

#[test]
fn correlated_subquery_by_id() {
    // SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x = t.a)
    //   AND b IN (SELECT y FROM u WHERE x IN (SELECT c FROM t))
    // Ids in compile order: the EXISTS (#0), the innermost IN (#1), the IN holding it (#2).
    let f = fixture();
    let exists = {
        let scan = LogicalPlan::scan(f.u.clone(), None, vec![0]).unwrap();
        let corr = LogicalPlan::filter(scan, cmp(Cmp::Eq, col(0), Box::new(Expr::Outer(0))));
        LogicalPlan::project(
            corr.unwrap(),
            vec![(*int(1), field(None, "1", INT, false))],
            1,
        )
        .unwrap()
    };
    let inner = keep(LogicalPlan::scan(f.t.clone(), None, vec![2]).unwrap(), &[2]);
    let middle = {
        let scan = LogicalPlan::scan(f.u.clone(), None, vec![0, 1]).unwrap();
        let in_inner = Expr::Subquery(sub(1, vec![], INT), SubKind::In(col(0), false));
        keep(LogicalPlan::filter(scan, in_inner).unwrap(), &[1])
    };
    let cond = Expr::And(
        Box::new(Expr::Subquery(sub(0, vec![0], INT), SubKind::Exists(false))),
        Box::new(Expr::Subquery(
            sub(2, vec![], STR),
            SubKind::In(col(1), false),
        )),
    );
    let scan = LogicalPlan::scan(f.t.clone(), None, vec![0, 1]).unwrap();
    let plan = keep(LogicalPlan::filter(scan, cond).unwrap(), &[0]);
    let r = LogicalRoot::new(plan, vec![exists, inner, middle]).unwrap();
    assert_eq!(columns(r.plan.schema()), ["t.a int not null"]);
    assert_eq!(columns(r.subqueries[2].schema()), ["u.y varchar(10) null"]);
    let mut scanned = Vec::new();
    r.walk(&mut |p| {
        if let LogicalPlan::Scan { table, .. } = p {
            scanned.push(table.def.name.clone());
        }
    });
    assert_eq!(scanned, ["t", "u", "t", "u"]);
    assert_eq!(
        r.tree(),
        "-> Project: t.a\n\
         \x20   -> Filter: EXISTS (subquery #0) AND (t.b IN (subquery #2))\n\
         \x20       -> Scan: d.t (a, b)\n\
         \x20       -> Subquery #0 (correlated)\n\
         \x20           -> Project: 1\n\
         \x20               -> Filter: u.x = t.a\n\
         \x20                   -> Scan: d.u (x)\n\
         \x20       -> Subquery #2\n\
         \x20           -> Project: u.y\n\
         \x20               -> Filter: u.x IN (subquery #1)\n\
         \x20                   -> Scan: d.u (x, y)\n\
         \x20                   -> Subquery #1\n\
         \x20                       -> Project: t.c\n\
         \x20                           -> Scan: d.t (c)\n"
    );
}

#[test]
fn subquery_ids_must_name_the_table_without_cycles() {
    let f = fixture();
    let scalar = |id| Expr::Subquery(sub(id, vec![], INT), SubKind::Scalar);
    let over = |e: Expr| {
        let scan = LogicalPlan::scan(f.t.clone(), None, vec![0]).unwrap();
        LogicalPlan::filter(scan, cmp(Cmp::Eq, col(0), Box::new(e))).unwrap()
    };
    let one = || keep(LogicalPlan::scan(f.u.clone(), None, vec![0]).unwrap(), &[0]);
    // The statement names #1 of a table of one.
    let e = LogicalRoot::new(over(scalar(1)), vec![one()]).unwrap_err();
    assert!(
        e.message().contains("the statement names subquery #1"),
        "{}",
        e.message()
    );
    // Subquery #0 names itself.
    let e = LogicalRoot::new(over(scalar(0)), vec![over(scalar(0))]).unwrap_err();
    assert!(
        e.message().contains("subquery #0 names subquery #0"),
        "{}",
        e.message()
    );
    assert_eq!(e.kind(), ErrorKind::UnknownError);
    // A correlated subquery reads a column the row it is evaluated over lacks.
    let scan = LogicalPlan::scan(f.u.clone(), None, vec![0]).unwrap();
    refused(
        LogicalPlan::filter(
            scan,
            Expr::Subquery(sub(0, vec![2], INT), SubKind::Exists(true)),
        ),
        "Filter",
    );
    assert!(LogicalRoot::new(over(scalar(0)), vec![one()]).is_ok());
}

#[test]
fn insert_select_with_on_duplicate_key_update() {
    // INSERT INTO u (x, y) SELECT a, b FROM t WHERE c = 1 ON DUPLICATE KEY UPDATE y = VALUES(y)
    let f = fixture();
    let scan = LogicalPlan::scan(f.t.clone(), None, vec![0, 1, 2]).unwrap();
    let select = keep(
        LogicalPlan::filter(scan, cmp(Cmp::Eq, col(2), int(1))).unwrap(),
        &[0, 1],
    );
    let on_dup = vec![(1, Expr::Col(3))];
    let plan = LogicalPlan::insert(
        f.u.clone(),
        vec![0, 1],
        select,
        None,
        InsertMode::Insert,
        on_dup,
    )
    .unwrap();
    assert!(plan.schema().fields.is_empty());
    assert_eq!(
        tree(plan),
        "-> Insert: d.u (x, y) on duplicate key update y = values(y)\n\
         \x20   -> Project: t.a, t.b\n\
         \x20       -> Filter: t.c = 1\n\
         \x20           -> Scan: d.t (a, b, c)\n"
    );
    // INSERT IGNORE … VALUES: the source is a Values node.
    let values = LogicalPlan::values(
        vec![vec![*int(1)], vec![Expr::Param(0)]],
        vec![field(None, "x", INT, false)],
    )
    .unwrap();
    let plan = LogicalPlan::insert(
        f.u.clone(),
        vec![0],
        values,
        None,
        InsertMode::Ignore,
        vec![],
    );
    assert_eq!(
        tree(plan.unwrap()),
        "-> Insert: d.u (x) ignore\n\
         \x20   -> Values: (1), (?0)\n"
    );
    let two = keep(
        LogicalPlan::scan(f.t.clone(), None, vec![0, 1]).unwrap(),
        &[0, 1],
    );
    refused(
        LogicalPlan::insert(f.u.clone(), vec![0], two, None, InsertMode::Insert, vec![]),
        "Insert",
    );
    let one = keep(LogicalPlan::scan(f.t.clone(), None, vec![0]).unwrap(), &[0]);
    refused(
        LogicalPlan::insert(
            f.u.clone(),
            vec![0],
            one,
            None,
            InsertMode::Replace,
            vec![(0, *col(4))],
        ),
        "Insert",
    );
}

#[test]
fn update_and_delete_read_their_target() {
    // DELETE FROM t WHERE a = 1 ORDER BY a LIMIT 1
    let f = fixture();
    let scan = LogicalPlan::scan(f.t.clone(), None, vec![0, 1, 2]).unwrap();
    let filter = LogicalPlan::filter(scan, cmp(Cmp::Eq, col(0), int(1))).unwrap();
    let key = SortKey {
        expr: Expr::Col(0),
        desc: false,
    };
    let sort = LogicalPlan::sort(filter, vec![key]).unwrap();
    let source = LogicalPlan::limit(sort, None, Some(*int(1))).unwrap();
    let plan = LogicalPlan::delete(f.t.clone(), source.clone()).unwrap();
    assert_eq!(
        tree(plan),
        "-> Delete: d.t\n\
         \x20   -> Limit: 1\n\
         \x20       -> Sort: t.a\n\
         \x20           -> Filter: t.a = 1\n\
         \x20               -> Scan: d.t (a, b, c)\n"
    );
    // UPDATE IGNORE t SET b = CONCAT(b, 'x') WHERE …
    let set = vec![(
        1,
        Expr::Func(
            lookup("CONCAT").unwrap(),
            vec![Expr::Col(1), Expr::Const(Value::Str("x".into()))],
        ),
    )];
    let plan = LogicalPlan::update(f.t.clone(), source.clone(), set, true).unwrap();
    assert!(tree(plan).starts_with("-> Update: d.t set b = concat(t.b, 'x') ignore\n"));
    // The source must scan the target and yield its whole row.
    let other = LogicalPlan::scan(f.u.clone(), None, vec![0]).unwrap();
    let three = LogicalPlan::join(other, LogicalPlan::OneRow, JoinKind::Inner, None).unwrap();
    refused(LogicalPlan::delete(f.t.clone(), three), "Delete");
    let narrow = keep(source.clone(), &[0]);
    refused(LogicalPlan::delete(f.t.clone(), narrow), "Delete");
    refused(
        LogicalPlan::update(f.t.clone(), source, vec![(3, *int(1))], false),
        "Update",
    );
}

#[test]
fn constructors_refuse_broken_invariants() {
    let f = fixture();
    let scan = || LogicalPlan::scan(f.t.clone(), None, vec![0, 1, 2]).unwrap();
    refused(LogicalPlan::scan(f.t.clone(), None, vec![3]), "Scan");
    refused(LogicalPlan::scan(f.t.clone(), None, vec![1, 0]), "Scan");
    refused(LogicalPlan::scan(f.t.clone(), None, vec![1, 1]), "Scan");
    let c3 = field(None, "d", INT, true);
    refused(
        LogicalPlan::project(scan(), vec![(*col(3), c3.clone())], 1),
        "Project",
    );
    refused(
        LogicalPlan::project(scan(), vec![(*col(0), c3.clone())], 2),
        "Project",
    );
    refused(
        LogicalPlan::filter(scan(), cmp(Cmp::Eq, col(0), col(7))),
        "Filter",
    );
    let u = LogicalPlan::scan(f.u.clone(), None, vec![0]).unwrap();
    refused(
        LogicalPlan::join(
            scan(),
            u,
            JoinKind::Left,
            Some(cmp(Cmp::Eq, col(0), col(5))),
        ),
        "Join",
    );
    refused(LogicalPlan::sort(scan(), vec![]), "Sort");
    refused(LogicalPlan::limit(scan(), None, Some(*col(0))), "Limit");
    refused(LogicalPlan::distinct(scan(), 4), "Distinct");
    refused(LogicalPlan::distinct(scan(), 0), "Distinct");
    refused(
        LogicalPlan::values(vec![vec![*int(1)], vec![]], vec![c3.clone()]),
        "Values",
    );
    refused(
        LogicalPlan::derived(scan(), f.dt.clone(), vec![0, 1], None),
        "Derived",
    );
    refused(
        LogicalPlan::derived(keep(scan(), &[0, 1]), f.dt.clone(), vec![2], None),
        "Derived",
    );
    let star_with_arg = AggSpec {
        func: AggFn::CountStar,
        arg: Some(Expr::Col(0)),
        distinct: false,
        ty: BIGINT,
    };
    refused(
        LogicalPlan::aggregate(scan(), vec![], vec![(star_with_arg, "n".into())]),
        "Aggregate",
    );
    let sum_of_nothing = AggSpec {
        func: AggFn::Sum,
        arg: Some(Expr::Col(9)),
        distinct: false,
        ty: DEC,
    };
    refused(
        LogicalPlan::aggregate(scan(), vec![], vec![(sum_of_nothing, "s".into())]),
        "Aggregate",
    );
}

#[test]
fn derived_tables_and_distinct_print_and_rename() {
    // SELECT DISTINCT p FROM (SELECT a, b FROM t) AS dt(p, q) ORDER BY q
    let f = fixture();
    let inner = keep(
        LogicalPlan::scan(f.t.clone(), None, vec![0, 1]).unwrap(),
        &[0, 1],
    );
    let dt = LogicalPlan::derived(inner, f.dt.clone(), vec![0, 1], None).unwrap();
    assert_eq!(
        columns(dt.schema()),
        ["dt.p int not null", "dt.q varchar(10) null"]
    );
    let outer = LogicalPlan::project(
        dt,
        vec![
            (Expr::Col(0), field(Some("dt"), "p", INT, false)),
            (Expr::Col(1), field(Some("dt"), "q", STR, true)),
        ],
        1,
    )
    .unwrap();
    let distinct = LogicalPlan::distinct(outer, 1).unwrap();
    let key = SortKey {
        expr: Expr::Col(1),
        desc: false,
    };
    let plan = LogicalPlan::sort(distinct, vec![key]).unwrap();
    assert_eq!(
        tree(plan),
        "-> Sort: dt.q\n\
         \x20   -> Distinct: first 1 columns\n\
         \x20       -> Project: dt.p (hidden: dt.q)\n\
         \x20           -> Derived: dt (p, q)\n\
         \x20               -> Project: t.a, t.b\n\
         \x20                   -> Scan: d.t (a, b)\n"
    );
}

#[test]
fn expressions_print_with_explicit_parentheses() {
    let f = fixture();
    let scan = LogicalPlan::scan(f.t.clone(), None, vec![0, 1, 2]).unwrap();
    let exprs = vec![
        Expr::Or(
            Box::new(Expr::Not(Box::new(Expr::Between(
                col(0),
                int(1),
                int(3),
                false,
            )))),
            Box::new(Expr::Like(
                col(1),
                Box::new(Expr::Const(Value::Str("it's%".into()))),
                '\\',
                true,
            )),
        ),
        Expr::Arith(
            crate::expr::Arith::Mul,
            Box::new(Expr::Arith(crate::expr::Arith::Add, col(0), int(1))),
            Box::new(Expr::Neg(col(2))),
        ),
        Expr::Case(
            None,
            vec![(
                Expr::IsNull(col(2), true),
                Expr::Func(lookup("LTRIM").unwrap(), vec![*col(1)]),
            )],
            Some(Box::new(Expr::Func(
                lookup("CHAR_LENGTH").unwrap(),
                vec![*col(1)],
            ))),
        ),
        Expr::InList(col(0), vec![*int(1), Expr::Param(2)], true),
        Expr::Subquery(
            sub(0, vec![], INT),
            SubKind::Quantified(col(2), Cmp::Ge, true),
        ),
        Expr::Const(Value::Null),
        Expr::Const(Value::Bytes(vec![0xab, 0x01])),
    ];
    let fields = (0..exprs.len())
        .map(|i| field(None, &format!("e{i}"), INT, true))
        .collect::<Vec<_>>();
    let n = exprs.len();
    let plan = LogicalPlan::project(scan, exprs.into_iter().zip(fields).collect(), n).unwrap();
    let one = keep(LogicalPlan::scan(f.u.clone(), None, vec![0]).unwrap(), &[0]);
    let r = LogicalRoot::new(plan, vec![one]).unwrap();
    let first = r.tree().lines().next().unwrap().to_string();
    assert_eq!(
        first,
        "-> Project: (NOT (t.a BETWEEN 1 AND 3)) OR (t.b NOT LIKE 'it''s%') AS e0, \
         (t.a + 1) * -t.c AS e1, \
         CASE WHEN t.c IS NOT NULL THEN ltrim(t.b) ELSE char_length(t.b) END AS e2, \
         t.a NOT IN (1, ?2) AS e3, t.c >= ALL (subquery #0) AS e4, NULL AS e5, x'ab01' AS e6"
    );
}
