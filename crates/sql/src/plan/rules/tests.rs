//! Each pass on plans built by hand as the binder builds them: what it decides, and where it
//! must not fire.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use zipdb_engine::storage::io::SimStorage;
use zipdb_engine::{Codec, Database, Options, TableFormat};

use crate::catalog::{ColumnDef, IndexDef, Table, TableDef, TableOptions};
use crate::expr::{Cmp, Expr};
use crate::plan::access::{Access, ColBound};
use crate::plan::logical::node::{JoinKind, LogicalPlan, SortKey};
use crate::plan::logical::root::LogicalRoot;
use crate::plan::rules::{
    access_path::{choose_access, choose_access_paths},
    join_method::choose_join_methods,
    pipeline::optimize,
    prune::prune_columns,
    push_down::push_down_filters,
    sort::eliminate_sort,
    zero_dates::zero_dates_are_null,
};
use crate::plan::select::{AggFn, AggSpec, JoinMethod};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;

const INT: SqlType = SqlType::Int {
    bytes: 4,
    unsigned: false,
};
const STR: SqlType = SqlType::Varchar {
    len: 10,
    binary: false,
};

/// `t (id INT PK, a INT, d DATE NOT NULL, s VARCHAR)` with an index on `a`;
/// `u (id INT PK, x INT, y VARCHAR, z INT)` with an index on `x`;
/// `w (p INT, q INT, v INT)` with the primary key `(p, q)`; `txt (k VARCHAR PK, v INT)`.
struct Fixture {
    _db: Database,
    t: Arc<Table>,
    u: Arc<Table>,
    w: Arc<Table>,
    txt: Arc<Table>,
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
    let table = |name: &str, cols: &[(&str, SqlType, bool)], pk: Vec<usize>, idx: &[usize]| {
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
        let indexes: Vec<IndexDef> = idx
            .iter()
            .map(|&c| IndexDef {
                name: format!("i{c}"),
                columns: vec![c],
                unique: false,
                tree: "p".into(),
            })
            .collect();
        Arc::new(Table {
            types: columns.iter().map(|c| c.ty).collect(),
            def: TableDef {
                id: 1,
                db: "d".into(),
                name: name.into(),
                columns,
                pk,
                indexes,
                format: TableFormat::Codec(Codec::None),
                options: TableOptions::default(),
                primary_tree: "p".into(),
            },
            primary: tree.clone(),
            indexes: idx.iter().map(|_| tree.clone()).collect(),
            next_id: AtomicU64::new(0),
            auto_inc: None,
            virt: None,
        })
    };
    let t = table(
        "t",
        &[
            ("id", INT, false),
            ("a", INT, true),
            ("d", SqlType::Date, false),
            ("s", STR, true),
        ],
        vec![0],
        &[1],
    );
    let u = table(
        "u",
        &[
            ("id", INT, false),
            ("x", INT, true),
            ("y", STR, true),
            ("z", INT, true),
        ],
        vec![0],
        &[1],
    );
    let w = table(
        "w",
        &[("p", INT, false), ("q", INT, false), ("v", INT, true)],
        vec![0, 1],
        &[],
    );
    let txt = table("txt", &[("k", STR, false), ("v", INT, true)], vec![0], &[]);
    Fixture {
        _db: db,
        t,
        u,
        w,
        txt,
    }
}

fn col(i: usize) -> Box<Expr> {
    Box::new(Expr::Col(i))
}

fn int(v: i64) -> Box<Expr> {
    Box::new(Expr::Const(Value::Int(v)))
}

fn eq(a: Box<Expr>, b: Box<Expr>) -> Expr {
    Expr::Cmp(Cmp::Eq, a, b)
}

fn and(a: Expr, b: Expr) -> Expr {
    Expr::And(Box::new(a), Box::new(b))
}

fn scan(t: &Arc<Table>) -> LogicalPlan {
    let all = (0..t.types.len()).collect();
    LogicalPlan::scan(t.clone(), None, all).unwrap()
}

/// The block above a FROM side: WHERE, then a Project of `cols` and, after them, the ORDER BY
/// keys `order` (column, desc) as hidden columns sorted on.
fn block(
    from: LogicalPlan,
    filter: Option<Expr>,
    cols: &[usize],
    order: &[(usize, bool)],
) -> LogicalPlan {
    let mut p = from;
    if let Some(f) = filter {
        p = LogicalPlan::filter(p, f).unwrap();
    }
    let fields = p.schema().fields.clone();
    let exprs = cols
        .iter()
        .chain(order.iter().map(|(c, _)| c))
        .map(|&c| (Expr::Col(c), fields[c].clone()))
        .collect();
    p = LogicalPlan::project(p, exprs, cols.len()).unwrap();
    if !order.is_empty() {
        let keys = order
            .iter()
            .enumerate()
            .map(|(k, &(_, desc))| SortKey {
                expr: Expr::Col(cols.len() + k),
                desc,
            })
            .collect();
        p = LogicalPlan::sort(p, keys).unwrap();
    }
    p
}

/// The node under the block's Project.
fn from_side(p: &LogicalPlan) -> &LogicalPlan {
    match p {
        LogicalPlan::Sort { input, .. } | LogicalPlan::Limit { input, .. } => from_side(input),
        LogicalPlan::Project { input, .. } => input,
        other => panic!("no block: {other:?}"),
    }
}

fn by_scan(p: &LogicalPlan) -> Option<bool> {
    match p {
        LogicalPlan::Sort { by_scan, .. } => *by_scan,
        other => panic!("no Sort: {other:?}"),
    }
}

fn text(e: &Expr) -> String {
    format!("{e:?}")
}

#[test]
fn push_down_places_where_terms_at_the_last_table_they_read() {
    let f = fixture();
    // t JOIN u ON t.id = u.x AND 1 = 1 WHERE t.a = 5 AND u.z = 7 AND 2 = 2
    let on = and(eq(col(0), col(5)), eq(int(1), int(1)));
    let j = LogicalPlan::join(scan(&f.t), scan(&f.u), JoinKind::Inner, Some(on)).unwrap();
    let w = and(
        and(eq(col(1), int(5)), eq(col(7), int(7))),
        eq(int(2), int(2)),
    );
    let mut p = block(j, Some(w), &[0], &[]);
    push_down_filters(&mut p).unwrap();
    let LogicalPlan::Join {
        left, on: Some(on), ..
    } = from_side(&p)
    else {
        panic!("the WHERE stayed above the join: {p:?}");
    };
    // The first table's terms and both constant terms (the ON's after the WHERE's).
    let LogicalPlan::Filter { input, predicate } = &**left else {
        panic!("no Filter over the first table: {left:?}");
    };
    assert!(matches!(**input, LogicalPlan::Scan { .. }));
    let expected = and(
        and(eq(col(1), int(5)), eq(int(2), int(2))),
        eq(int(1), int(1)),
    );
    assert_eq!(text(predicate), text(&expected));
    // The ON keeps its own row term, then the WHERE's term on u.
    assert_eq!(text(on), text(&and(eq(col(0), col(5)), eq(col(7), int(7)))));
    // Idempotent: a second run changes nothing.
    let before = format!("{p:?}");
    push_down_filters(&mut p).unwrap();
    assert_eq!(before, format!("{p:?}"));
}

#[test]
fn push_down_keeps_where_terms_on_the_nullable_side_above_a_left_join() {
    let f = fixture();
    // t LEFT JOIN u ON t.id = u.x AND 1 = 1 WHERE u.y IS NULL AND t.a = 5
    let on = and(eq(col(0), col(5)), eq(int(1), int(1)));
    let j = LogicalPlan::join(scan(&f.t), scan(&f.u), JoinKind::Left, Some(on.clone())).unwrap();
    let is_null = Expr::IsNull(col(6), false);
    let mut p = block(j, Some(and(is_null.clone(), eq(col(1), int(5)))), &[0], &[]);
    push_down_filters(&mut p).unwrap();
    let LogicalPlan::Filter { input, predicate } = from_side(&p) else {
        panic!("the term on u went below the LEFT JOIN: {p:?}");
    };
    assert_eq!(text(predicate), text(&is_null));
    let LogicalPlan::Join {
        left, on: Some(o), ..
    } = &**input
    else {
        panic!("{input:?}");
    };
    // A LEFT JOIN's ON keeps even its constant term: it decides the match, not the row.
    assert_eq!(text(o), text(&on));
    assert!(
        matches!(&**left, LogicalPlan::Filter { predicate, .. } if text(predicate) == text(&eq(col(1), int(5))))
    );
}

#[test]
fn push_down_leaves_a_single_table_alone() {
    let f = fixture();
    let w = and(eq(col(1), int(5)), eq(int(1), int(1)));
    let mut p = block(scan(&f.t), Some(w), &[0], &[]);
    let before = format!("{p:?}");
    push_down_filters(&mut p).unwrap();
    assert_eq!(before, format!("{p:?}"));
}

fn columns(p: &LogicalPlan) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    p.walk(&mut |n| {
        if let LogicalPlan::Scan { columns, .. } = n {
            out.push(columns.clone());
        }
    });
    out
}

#[test]
fn prune_columns_keeps_what_the_block_reads() {
    let f = fixture();
    // SELECT t.s FROM t JOIN u ON t.id = u.x WHERE u.z > 1 (the WHERE above the join)
    let on = eq(col(0), col(5));
    let j = LogicalPlan::join(scan(&f.t), scan(&f.u), JoinKind::Inner, Some(on)).unwrap();
    let w = Expr::Cmp(Cmp::Gt, col(7), int(1));
    let mut p = block(j, Some(w), &[3], &[]);
    prune_columns(&mut p);
    assert_eq!(columns(&p), vec![vec![0, 3], vec![1, 3]]);
    // The same after push-down: terms read the same columns wherever they are.
    let mut q = p.clone();
    push_down_filters(&mut q).unwrap();
    prune_columns(&mut q);
    assert_eq!(columns(&q), vec![vec![0, 3], vec![1, 3]]);
    // Under GROUP BY the select list reads the group row, not the table's.
    let agg = LogicalPlan::aggregate(
        scan(&f.t),
        vec![(Expr::Col(1), f.t_field(1))],
        vec![(
            AggSpec {
                func: AggFn::CountStar,
                arg: None,
                distinct: false,
                ty: INT,
            },
            "count".into(),
        )],
    )
    .unwrap();
    let fields = agg.schema().fields.clone();
    let mut g = LogicalPlan::project(
        agg,
        vec![
            (Expr::Col(0), fields[0].clone()),
            (Expr::Col(1), fields[1].clone()),
        ],
        2,
    )
    .unwrap();
    prune_columns(&mut g);
    assert_eq!(columns(&g), vec![vec![1]]);
}

impl Fixture {
    fn t_field(&self, c: usize) -> crate::plan::logical::node::Field {
        scan(&self.t).schema().fields[c].clone()
    }
}

#[test]
fn zero_dates_rewrites_is_null_over_one_table_only() {
    let f = fixture();
    let is_null = || Expr::IsNull(col(2), false);
    let mut p = block(scan(&f.t), Some(is_null()), &[0], &[]);
    zero_dates_are_null(&mut p);
    let LogicalPlan::Filter { predicate, .. } = from_side(&p) else {
        panic!("{p:?}");
    };
    assert!(matches!(predicate, Expr::Cmp(Cmp::Eq, c, z)
        if matches!(**c, Expr::Col(2)) && matches!(**z, Expr::Const(Value::Date(0)))));
    // Over a LEFT JOIN the missing rows' NULLs must still match: no rewrite.
    let j = LogicalPlan::join(scan(&f.t), scan(&f.u), JoinKind::Left, None).unwrap();
    let mut p = block(j, Some(is_null()), &[0], &[]);
    zero_dates_are_null(&mut p);
    let LogicalPlan::Filter { predicate, .. } = from_side(&p) else {
        panic!("{p:?}");
    };
    assert!(matches!(predicate, Expr::IsNull(..)));
}

fn scan_access(p: &LogicalPlan) -> Vec<Access> {
    let mut out = Vec::new();
    p.walk(&mut |n| {
        if let LogicalPlan::Scan { access, .. } = n {
            out.push(access.clone());
        }
    });
    out
}

#[test]
fn access_paths_take_the_best_bounded_key() {
    let f = fixture();
    // WHERE id = 3 AND a = 4: the whole primary key beats the index.
    let w = and(eq(col(0), int(3)), eq(col(1), int(4)));
    let mut p = block(scan(&f.t), Some(w), &[0], &[]);
    choose_access_paths(&mut p);
    assert!(
        matches!(&scan_access(&p)[..], [Access::Primary(b)] if matches!(b[..], [ColBound::Eq(_)]))
    );
    // WHERE a > 4: a range on the index.
    let mut p = block(
        scan(&f.t),
        Some(Expr::Cmp(Cmp::Gt, col(1), int(4))),
        &[0],
        &[],
    );
    choose_access_paths(&mut p);
    assert!(
        matches!(&scan_access(&p)[..], [Access::Index(0, b)] if matches!(b[..], [ColBound::Range(..)]))
    );
    // WHERE s = 'x': no key bounded, a full scan.
    let s = Expr::Const(Value::Str("x".into()));
    let mut p = block(scan(&f.t), Some(eq(col(3), Box::new(s))), &[0], &[]);
    choose_access_paths(&mut p);
    assert!(matches!(&scan_access(&p)[..], [Access::Full]));
}

/// `t JOIN u ON <on>` with the passes before the join methods run.
fn joined(f: &Fixture, on: Expr) -> LogicalPlan {
    let j = LogicalPlan::join(scan(&f.t), scan(&f.u), JoinKind::Inner, Some(on)).unwrap();
    let mut p = block(j, None, &[0], &[]);
    push_down_filters(&mut p).unwrap();
    choose_access_paths(&mut p);
    p
}

fn method(p: &LogicalPlan) -> (Option<&JoinMethod>, &Option<Expr>) {
    match from_side(p) {
        LogicalPlan::Join { method, on, .. } => (method.as_deref(), on),
        other => panic!("{other:?}"),
    }
}

#[test]
fn join_methods_look_up_hash_or_loop() {
    let f = fixture();
    // ON u.id = t.a: u's primary key bounded by the outer row: a lookup per row.
    let mut p = joined(&f, eq(col(4), col(1)));
    assert!(matches!(
        &scan_access(&p)[..],
        [Access::Full, Access::Primary(_)]
    ));
    choose_join_methods(&mut p);
    assert!(matches!(
        method(&p),
        (Some(JoinMethod::Lookup(Access::Primary(_))), Some(_))
    ));
    // ON u.z = t.a AND u.y = 'q': no key on z, a hash join; u's own term filters the build.
    let q = Expr::Const(Value::Str("q".into()));
    let mut p = joined(&f, and(eq(col(7), col(1)), eq(col(6), Box::new(q))));
    choose_join_methods(&mut p);
    let (
        Some(JoinMethod::Hash {
            build_filter: Some(bf),
            build_keys,
            probe_keys,
            build_access: Access::Full,
            ..
        }),
        Some(on),
    ) = method(&p)
    else {
        panic!("{p:?}");
    };
    // The key equality stays the match condition (checked on the rows the hash finds).
    assert_eq!(text(on), text(&eq(col(7), col(1))));
    // Build side over u's own row (y is its column 2), probe side over the joined row.
    assert!(matches!(bf, Expr::Cmp(Cmp::Eq, c, _) if matches!(**c, Expr::Col(2))));
    assert!(matches!(build_keys[..], [Expr::Col(3)]));
    assert!(matches!(probe_keys[..], [Expr::Col(1)]));
    // ON u.z > t.a: no equality, a loop, and the term stays the match condition.
    let mut p = joined(&f, Expr::Cmp(Cmp::Gt, col(7), col(1)));
    choose_join_methods(&mut p);
    assert!(matches!(
        method(&p),
        (
            Some(JoinMethod::Loop {
                build_filter: None,
                ..
            }),
            Some(Expr::Cmp(Cmp::Gt, ..))
        )
    ));
    // ON u.id <= 2000: constant bounds are read once (not looked up per row).
    let mut p = joined(&f, Expr::Cmp(Cmp::Le, col(4), int(2000)));
    choose_join_methods(&mut p);
    assert!(matches!(
        method(&p),
        (
            Some(JoinMethod::Loop {
                build_access: Access::Primary(_),
                ..
            }),
            _
        )
    ));
}

/// The block's Sort after the first table's access path is chosen.
fn sorted(t: &Arc<Table>, filter: Option<Expr>, order: &[(usize, bool)]) -> LogicalPlan {
    let mut p = block(scan(t), filter, &[0], order);
    choose_access_paths(&mut p);
    eliminate_sort(&mut p);
    p
}

#[test]
fn eliminate_sort_only_where_the_scan_gives_the_order() {
    let f = fixture();
    assert_eq!(by_scan(&sorted(&f.t, None, &[(0, false)])), Some(false));
    assert_eq!(by_scan(&sorted(&f.t, None, &[(0, true)])), Some(true));
    // A range on the primary key keeps its order.
    let range = Expr::Cmp(Cmp::Gt, col(0), int(3));
    assert_eq!(
        by_scan(&sorted(&f.t, Some(range), &[(0, true)])),
        Some(true)
    );
    assert_eq!(
        by_scan(&sorted(&f.w, None, &[(0, true), (1, true)])),
        Some(true)
    );
    // Not: a column outside the key, directions that differ, a secondary index's order,
    // a text key (its collation's order), a key that is not a prefix.
    assert_eq!(by_scan(&sorted(&f.t, None, &[(1, false)])), None);
    assert_eq!(by_scan(&sorted(&f.w, None, &[(0, false), (1, true)])), None);
    let on_a = eq(col(1), int(4));
    assert_eq!(by_scan(&sorted(&f.t, Some(on_a), &[(0, false)])), None);
    assert_eq!(by_scan(&sorted(&f.txt, None, &[(0, false)])), None);
    assert_eq!(by_scan(&sorted(&f.w, None, &[(1, false)])), None);
}

#[test]
fn optimize_runs_the_passes_and_the_tree_shows_their_decisions() {
    let f = fixture();
    // SELECT t.id FROM t JOIN u ON u.z = t.a WHERE t.id > 3 ORDER BY t.id
    let j = LogicalPlan::join(
        scan(&f.t),
        scan(&f.u),
        JoinKind::Inner,
        Some(eq(col(7), col(1))),
    )
    .unwrap();
    let p = block(
        j,
        Some(Expr::Cmp(Cmp::Gt, col(0), int(3))),
        &[0],
        &[(0, false)],
    );
    let p = optimize(p).unwrap();
    let tree = LogicalRoot::new(p, Vec::new()).unwrap().tree();
    let lines: Vec<&str> = tree.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        [
            "-> Sort: t.id (by the scan's key order)",
            "-> Project: t.id (hidden: t.id)",
            "-> Inner join on u.z = t.a (hash t.a = u.z)",
            "-> Filter: t.id > 3",
            "-> Scan: d.t (id, a) using range PRIMARY",
            "-> Scan: d.u (z)",
        ],
        "{tree}"
    );
}

/// UPDATE/DELETE `t`'s source as bind/dml.rs builds it: Limit? → Sort? → Filter? → Scan.
fn dml_source(f: &Fixture, filter: Option<Expr>, sorted: bool) -> LogicalPlan {
    let mut p = scan(&f.t);
    if let Some(w) = filter {
        p = LogicalPlan::filter(p, w).unwrap();
    }
    if sorted {
        let keys = vec![SortKey {
            expr: Expr::Col(0),
            desc: false,
        }];
        p = LogicalPlan::sort(p, keys).unwrap();
        p = LogicalPlan::limit(p, None, Some(*int(1))).unwrap();
    }
    p
}

#[test]
fn dml_sources_get_the_access_path_a_where_over_the_table_gets() {
    let f = fixture();
    let wheres = [
        ("pk point", Some(eq(col(0), int(3))), "Primary"),
        (
            "pk range",
            Some(Expr::Cmp(Cmp::Gt, col(0), int(3))),
            "Primary",
        ),
        ("index", Some(eq(col(1), int(4))), "Index"),
        ("no key", Some(eq(col(3), int(4))), "Full"),
        ("no WHERE", None, "Full"),
    ];
    for (what, w, kind) in wheres {
        // What bind/dml.rs chose before D3: the access path of the WHERE alone.
        let before = format!("{:?}", choose_access(&f.t, w.as_ref()));
        assert!(before.starts_with(kind), "{what}: {before}");
        for sorted in [false, true] {
            let src = dml_source(&f, w.clone(), sorted);
            let plans = [
                LogicalPlan::update(f.t.clone(), src.clone(), vec![(1, *int(0))], false).unwrap(),
                LogicalPlan::delete(f.t.clone(), src).unwrap(),
            ];
            for p in plans {
                let p = optimize(p).unwrap();
                let got: Vec<String> = scan_access(&p).iter().map(|a| format!("{a:?}")).collect();
                assert_eq!(got, vec![before.clone()], "{what}, sorted {sorted}");
                // The executor sorts DML's rows itself: the Sort stays unsatisfied.
                p.walk(&mut |n| {
                    if let LogicalPlan::Sort { by_scan, .. } = n {
                        assert_eq!(*by_scan, None, "{what}");
                    }
                });
            }
        }
    }
}

#[test]
fn zero_dates_rewrites_a_dml_where() {
    let f = fixture();
    // WHERE d IS NULL AND a = 1: the NOT NULL DATE's IS NULL finds the zero dates.
    let w = and(Expr::IsNull(col(2), false), eq(col(1), int(1)));
    let p = LogicalPlan::delete(f.t.clone(), dml_source(&f, Some(w), true)).unwrap();
    let p = optimize(p).unwrap();
    let mut filters = Vec::new();
    p.walk(&mut |n| {
        if let LogicalPlan::Filter { predicate, .. } = n {
            filters.push(text(predicate));
        }
    });
    assert_eq!(filters.len(), 1);
    assert!(!filters[0].contains("IsNull"), "{}", filters[0]);
    assert!(filters[0].contains("Date(0)"), "{}", filters[0]);
}

#[test]
fn lowering_a_dml_plan_keeps_its_clauses_and_decisions() {
    let f = fixture();
    let src = dml_source(&f, Some(eq(col(0), int(3))), true);
    let u = LogicalPlan::update(f.t.clone(), src.clone(), vec![(1, *int(7))], true).unwrap();
    let u = crate::plan::lower::lower_update(u).unwrap();
    assert!(matches!(u.access, Access::Primary(ref b) if matches!(b[..], [ColBound::Eq(_)])));
    assert!(u.filter.is_some() && u.ignore);
    assert!(matches!(
        &u.assignments[..],
        [(1, Expr::Const(Value::Int(7)))]
    ));
    assert!(matches!(&u.order[..], [(Expr::Col(0), false)]));
    assert!(matches!(u.limit, Some(Expr::Const(Value::Int(1)))));
    let d = crate::plan::lower::lower_delete(LogicalPlan::delete(f.t.clone(), scan(&f.t)).unwrap())
        .unwrap();
    assert!(matches!(d.access, Access::Full));
    assert!(d.filter.is_none() && d.order.is_empty() && d.limit.is_none());
}

/// INSERT INTO u (id, x) SELECT t.id, t.a FROM t `filter`, as bind/dml.rs builds it: the
/// query block under the Insert, with its metadata.
fn insert_select(f: &Fixture, filter: Option<Expr>) -> LogicalPlan {
    use crate::plan::dml::InsertMode;
    use crate::plan::logical::node::BlockMeta;
    use crate::types::result::ColumnMeta;
    let meta = BlockMeta {
        columns: Arc::new(vec![ColumnMeta::bigint("id"), ColumnMeta::bigint("a")]),
        has_sub: false,
    };
    let src = block(scan(&f.t), filter, &[0, 1], &[]);
    LogicalPlan::insert(
        f.u.clone(),
        vec![0, 1],
        src,
        Some(meta),
        InsertMode::Replace,
        vec![],
    )
    .unwrap()
}

#[test]
fn an_insert_selects_query_is_optimized_as_a_select() {
    let f = fixture();
    let wheres = [
        ("pk point", Some(eq(col(0), int(5))), "Primary"),
        ("index", Some(eq(col(1), int(4))), "Index"),
        ("no key", Some(eq(col(3), int(4))), "Full"),
        ("no WHERE", None, "Full"),
    ];
    for (what, w, kind) in wheres {
        let before = format!("{:?}", choose_access(&f.t, w.as_ref()));
        assert!(before.starts_with(kind), "{what}: {before}");
        let p = optimize(insert_select(&f, w.clone())).unwrap();
        let got: Vec<String> = scan_access(&p).iter().map(|a| format!("{a:?}")).collect();
        assert_eq!(got, vec![before], "{what}");
        // Pruned as a SELECT's: the Scan reads the selected columns and the WHERE's.
        let mut read = Vec::new();
        p.walk(&mut |n| {
            if let LogicalPlan::Scan { columns, .. } = n {
                read.clone_from(columns);
            }
        });
        let want = match what {
            "no key" => vec![0, 1, 3],
            _ => vec![0, 1],
        };
        assert_eq!(read, want, "{what}");
        // Lowering translates the decisions into the executor's plan.
        let ins = crate::plan::lower::lower_insert(insert_select(&f, w)).unwrap();
        let sel = ins.select.as_ref().expect("INSERT … SELECT");
        assert!(ins.rows.is_empty());
        assert_eq!(format!("{:?}", sel.access), got[0], "{what}");
        assert_eq!(ins.columns, [0, 1]);
        assert_eq!(ins.mode, crate::plan::dml::InsertMode::Replace);
    }
    let tree = LogicalRoot::new(
        optimize(insert_select(&f, Some(eq(col(0), int(5))))).unwrap(),
        Vec::new(),
    )
    .unwrap()
    .tree();
    let lines: Vec<&str> = tree.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        [
            "-> Insert: d.u (id, x) replace",
            "-> Project: t.id, t.a",
            "-> Filter: t.id = 5",
            "-> Scan: d.t (id, a) using const PRIMARY",
        ],
        "{tree}"
    );
}

#[test]
fn insert_values_rows_pass_through_the_passes_unchanged_and_uncopied() {
    use crate::plan::dml::InsertMode;
    use crate::plan::logical::node::Field;
    let f = fixture();
    let rows: Vec<Vec<Expr>> = (0..1000).map(|i| vec![*int(i), Expr::Param(0)]).collect();
    let (at, first_row) = (rows.as_ptr(), rows[0].as_ptr());
    let fields = vec![
        Field::new(None, "id", INT, false),
        Field::new(None, "x", INT, true),
    ];
    let values = LogicalPlan::values(rows, fields).unwrap();
    let on_dup = vec![(1, Expr::Col(4 + 1))];
    let p = LogicalPlan::insert(
        f.u.clone(),
        vec![0, 1],
        values,
        None,
        InsertMode::Insert,
        on_dup,
    )
    .unwrap();
    let before = format!("{p:?}");
    let p = optimize(p).unwrap();
    assert_eq!(format!("{p:?}"), before);
    let ins = crate::plan::lower::lower_insert(p).unwrap();
    // The rows the binder compiled are the rows the executor reads: moved, not copied.
    assert_eq!((ins.rows.as_ptr(), ins.rows[0].as_ptr()), (at, first_row));
    assert_eq!(ins.rows.len(), 1000);
    assert!(ins.select.is_none());
    assert!(matches!(ins.on_dup[..], [(1, Expr::Col(5))]));
}

#[test]
fn an_insert_source_block_without_its_metadata_is_an_internal_error() {
    use crate::plan::dml::InsertMode;
    let f = fixture();
    let src = block(scan(&f.t), None, &[0, 1], &[]);
    let p = LogicalPlan::insert(
        f.u.clone(),
        vec![0, 1],
        src,
        None,
        InsertMode::Insert,
        vec![],
    )
    .unwrap();
    let e = crate::plan::lower::lower_insert(p).unwrap_err();
    assert!(e.message().contains("metadata"), "{}", e.message());
}
