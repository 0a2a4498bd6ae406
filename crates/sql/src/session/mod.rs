//! Layer 12 of the SQL engine (docs/design/issue20-sql-engine.md §2.1): a session's statement
//! dispatch, prepared statements and EXPLAIN. The instance and the session's state
//! (transactions, variables) are [`crate::instance`]'s.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use sqlparser::ast;
use zipdb_engine::IsolationLevel;

use crate::admin::show;
use crate::bind::compile::Compiler;
use crate::bind::dml;
use crate::bind::env::Env;
use crate::bind::labels::StatementText;
use crate::bind::select::compile_select;
use crate::catalog::Table;
use crate::error::ErrorKind;
use crate::exec;
use crate::exec::dml::DmlCount;
use crate::expr::Ctx;
use crate::front::{Compat, Statement, Txn};
use crate::instance::session::{now_packed, OpenTxn, Prepared, Session};
use crate::instance::txn::isolation_of;
use crate::plan::dml::{Plan, PlanRoot};
use crate::plan::select::{SelectPlan, Subquery};
use crate::types::diag::Warning;
use crate::types::result::{ColumnMeta, Outcome};
use crate::types::value::Value;
use crate::{ddl, SqlError};

mod create_as;
mod explain;
mod load;
pub(crate) mod sink;

use sink::{Collect, ResultSink, SinkClosed, StatementEnd, Status};

#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod insert_batch_tests;
#[cfg(test)]
mod insert_select_tests;
#[cfg(test)]
mod lock_tests;
#[cfg(test)]
mod stream_tests;

/// What COM_STMT_PREPARE answers.
#[derive(Debug, Clone)]
pub struct PreparedInfo {
    pub id: u32,
    pub params: usize,
    pub columns: Arc<Vec<ColumnMeta>>,
}

impl Session {
    /// Runs a COM_QUERY: each `;`-separated statement in turn, stopping at the first error;
    /// their results whole (see [`Session::query_into`]).
    pub fn query(&mut self, sql: &str) -> Vec<Result<Outcome, SqlError>> {
        let mut c = Collect::default();
        self.query_into(sql, &mut c);
        c.results
    }

    /// Runs a COM_QUERY, handing each statement's result to `sink` as it is produced: one
    /// `end` per statement that ran, the last one an error if a statement failed.
    pub fn query_into(&mut self, sql: &str, sink: &mut dyn ResultSink) {
        self.begin_command("Query", sql);
        crate::front::depth::with_statement_stack(|| self.query_inner(sql, sink));
        self.end_command();
    }

    fn query_inner(&mut self, sql: &str, sink: &mut dyn ResultSink) {
        self.warnings_shown = false;
        let sql = &*crate::front::lex::executable_comments(sql);
        self.inst.counters.questions.fetch_add(1, Ordering::Relaxed);
        let pieces = crate::front::lex::split_statements(sql);
        match pieces.as_slice() {
            [] => {
                let e = SqlError::empty();
                self.note_failure(&e);
                sink.end(StatementEnd::Error(&e));
            }
            [_, second, ..] if !self.multi_statements => {
                // Without CLIENT_MULTI_STATEMENTS, MySQL's parser stops at the `;` and reports
                // what follows as a syntax error; nothing runs.
                let second = second.text;
                let line = 1 + sql[..second.as_ptr() as usize - sql.as_ptr() as usize]
                    .matches('\n')
                    .count();
                let e = SqlError::syntax(second.trim_start(), line as u64);
                self.note_failure(&e);
                sink.end(StatementEnd::Error(&e));
            }
            _ => {
                // Each statement gets its own result; the first error ends the list, as in
                // MySQL. `more` is known before a statement runs: whatever follows it answers
                // (with a result or an error) unless it failed.
                let n = pieces.len();
                for (i, piece) in pieces.into_iter().enumerate() {
                    let mut out = Out {
                        sink: &mut *sink,
                        more: i + 1 < n,
                    };
                    let r = self.statement(piece, &mut out);
                    if !self.finish(r, &mut out) {
                        break;
                    }
                }
            }
        }
    }

    /// One statement of a text query.
    fn statement(
        &mut self,
        piece: crate::front::lex::Piece<'_>,
        out: &mut Out<'_>,
    ) -> Result<Reply, SqlError> {
        let sql = piece.text;
        match crate::front::parse_piece(piece)? {
            // These run outside a statement's limits (no deadline, no memory charge, warnings
            // left to each), as before the typed front end: P1 changed no behaviour of theirs.
            Statement::Show(stmt) => {
                // SHOW WARNINGS/ERRORS read the diagnostics; every other SHOW reads tables
                // (information_schema's, in MariaDB) and so clears them.
                if !matches!(
                    stmt,
                    crate::front::show::Show::Warnings { .. }
                        | crate::front::show::Show::WarningCount { .. }
                ) {
                    self.clear_diag();
                }
                show::show(self, &stmt).map(Reply::Whole)
            }
            Statement::Account(stmt) => crate::admin::user::run(self, stmt).map(Reply::Whole),
            Statement::Compat(c) => self.compat(c).map(Reply::Whole),
            // It needs the sink (the client's file comes through it), which `run` keeps; it is
            // held to the same limits as `run`'s statements.
            Statement::Load(load) => {
                self.clear_diag();
                self.text.clear();
                self.text.push_str(sql);
                self.inst.counters.com_load.fetch_add(1, Ordering::Relaxed);
                self.limited(false, |s| s.load(&load, out).map(Reply::Whole))
            }
            stmt => {
                self.text.clear();
                self.text.push_str(sql);
                self.run(&stmt, None, &[], out)
            }
        }
    }

    /// Hands a statement's end (and a whole result's rows) to the sink; whether the command
    /// may go on with its next statement.
    fn finish(&mut self, r: Result<Reply, SqlError>, out: &mut Out<'_>) -> bool {
        // `None`: a result set, all sent; `Some`: a statement without one.
        let r = match r {
            Ok(Reply::Sent) => Ok(None),
            // Produced before any row was sent (SHOW, EXPLAIN, ...): nothing to undo if its
            // sending stops.
            Ok(Reply::Whole(Outcome::Rows { columns, rows })) => {
                let head = self.result_status(out.more);
                self.send_rows(&columns, rows, head, out.sink)
                    .map(|()| None)
            }
            Ok(Reply::Whole(Outcome::Done {
                affected_rows,
                last_insert_id,
                info,
            })) => Ok(Some((affected_rows, last_insert_id, info))),
            Err(e) => Err(e),
        };
        let status = self.result_status(out.more);
        match r {
            Ok(None) => out.sink.end(StatementEnd::Rows(status)),
            Ok(Some((affected_rows, last_insert_id, info))) => out.sink.end(StatementEnd::Done {
                affected_rows,
                last_insert_id,
                info: &info,
                status,
            }),
            Err(e) => {
                // A failed statement's error is its diagnostics (SHOW WARNINGS/ERRORS).
                self.note_failure(&e);
                out.sink.end(StatementEnd::Error(&e));
                return false;
            }
        }
        true
    }

    /// The status a result is announced or ended with.
    fn result_status(&self, more: bool) -> Status {
        Status {
            flags: self.status_flags(),
            warnings: self.warning_count(),
            more,
        }
    }

    /// Pushes a result set's columns and rows to `sink`. KILL is looked at every 256 rows, so
    /// that a large result stops early, as MySQL stops sending one.
    fn send_rows(
        &self,
        columns: &Arc<Vec<ColumnMeta>>,
        rows: Vec<Vec<Value>>,
        head: Status,
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        sink.columns(columns, head).map_err(closed)?;
        for (n, row) in rows.into_iter().enumerate() {
            if n % 256 == 255 && self.process.interrupt.is_set() {
                return Err(self.process.interrupt.error());
            }
            sink.row(&row).map_err(closed)?;
        }
        Ok(())
    }

    /// Pulls a streamable plan's rows from its operators and pushes each to `sink` at once:
    /// the result is never held, so it is not charged to the statement's memory. The columns
    /// wait for the first row, so that an error found before it (the first rows' filter, a
    /// bad LIMIT) is answered alone, as on the buffered path. KILL is looked at every 256
    /// rows sent, besides the operators' own checks.
    #[allow(clippy::too_many_arguments)]
    fn stream(
        &self,
        plan: &SelectPlan,
        subs: &[Subquery],
        txn: Option<&zipdb_engine::Transaction>,
        ctx: &Ctx,
        head: Status,
        sink: &mut dyn ResultSink,
        locked: &exec::locked::Locked,
    ) -> Result<(), SqlError> {
        // Subqueries (the plan's own, and those of the derived tables and set operands it
        // reads) read through the transaction the operators scan with; their rows are cached
        // per statement run by id.
        let sc;
        let with_subs;
        let ctx = match (txn, plan.has_sub) {
            (Some(t), _) if !subs.is_empty() => {
                sc = exec::subquery::SubCtx::new(subs, t);
                with_subs = Ctx {
                    sub: Some(&sc),
                    ..*ctx
                };
                &with_subs
            }
            (None, true) => return Err(SqlError::internal("no transaction for a subquery")),
            _ => ctx,
        };
        let mut op = exec::operator::build(plan, txn, ctx, subs, locked)?;
        let mut row = Vec::new();
        let mut more = op.next(ctx, &mut row)?;
        sink.columns(&plan.columns, head).map_err(closed)?;
        let mut n = 0u32;
        while more {
            sink.row(&row).map_err(closed)?;
            n = n.wrapping_add(1);
            if n.is_multiple_of(256) && self.process.interrupt.is_set() {
                return Err(self.process.interrupt.error());
            }
            more = op.next(ctx, &mut row)?;
        }
        Ok(())
    }

    /// Whether the client may send several statements in one text query (it set
    /// CLIENT_MULTI_STATEMENTS at connect, or COM_SET_OPTION later). Embedded sessions may.
    pub fn set_multi_statements(&mut self, on: bool) {
        self.multi_statements = on;
    }

    /// Runs one statement; `plan` when already compiled (prepared statements). The statement
    /// is held to the session's limits: its deadline (if any) is armed for its run, and its
    /// memory charge starts at zero.
    fn run(
        &mut self,
        stmt: &Statement,
        plan: Option<(&PlanRoot, &[usize])>,
        params: &[Value],
        out: &mut Out<'_>,
    ) -> Result<Reply, SqlError> {
        self.limited(stmt.is_select(), |s| {
            s.run_statement(stmt, plan, params, out)
        })
    }

    /// Runs `f` as one statement held to the session's limits: KILL QUERY, the deadline
    /// (`max_execution_time` when `is_select`, `max_statement_time`) and the memory budget.
    fn limited<R>(&mut self, is_select: bool, f: impl FnOnce(&mut Self) -> R) -> R {
        let interrupt = &self.process.interrupt;
        let seq = interrupt.begin_statement(self.limits.max_session_mem_used);
        let armed = self
            .limits
            .deadline(is_select)
            .map(|(after, reason)| self.inst.deadlines.arm(interrupt, seq, after, reason));
        let r = f(self);
        self.process.interrupt.end_statement();
        if let Some(a) = armed {
            self.inst.deadlines.disarm(a);
        }
        r
    }

    fn run_statement(
        &mut self,
        stmt: &Statement,
        plan: Option<(&PlanRoot, &[usize])>,
        params: &[Value],
        out: &mut Out<'_>,
    ) -> Result<Reply, SqlError> {
        // As MariaDB: a statement that uses tables clears the last statement's conditions; one
        // that uses none (`SELECT @@warning_count`, SET, COMMIT) keeps them until it raises
        // one of its own.
        match stmt {
            Statement::Ddl(ast::Statement::ShowVariable { .. }) => {}
            s if uses_tables(s) => self.clear_diag(),
            _ => self.diag_stale = true,
        }
        let outcome = match stmt {
            Statement::Dml(stmt) => {
                let compiled;
                let (plan, order) = match plan {
                    Some(p) => p,
                    None => {
                        let mut c = Compiler::new();
                        compiled = self.compile(stmt, &mut c)?;
                        if c.param_count() > 0 {
                            return Err(SqlError::of(
                                ErrorKind::ParseError,
                                "You have an error in your SQL syntax: '?' outside a prepared \
                                 statement",
                            ));
                        }
                        (&compiled, &[][..])
                    }
                };
                let params: Vec<Value> = order.iter().map(|&i| params[i].clone()).collect();
                return self.execute_plan(plan, &params, out);
            }
            Statement::Txn(t) => self.txn(t),
            Statement::Set(set) => self.set(set),
            Statement::Use(name) => {
                self.use_db(name)?;
                Ok(Outcome::done(0))
            }
            Statement::Explain { statement, format } => {
                self.explain(statement, explain::format_of(format.as_ref())?)
            }
            Statement::Kill { connection, id } => self.kill(*id, *connection),
            Statement::Optimize(tables) => crate::admin::optimize::optimize(self, tables),
            Statement::Unsupported(what) => Err(SqlError::unsupported(what)),
            Statement::Ddl(ast::Statement::CreateTable(ct)) if ct.query.is_some() => {
                let q = ct.query.as_deref().expect("matched");
                self.create_table_as(ct, q)
            }
            Statement::Ddl(stmt) => {
                // DDL commits the open transaction first, as MySQL does.
                self.commit()?;
                ddl::execute(self, stmt)
            }
            // Never reached: `statement` runs these itself, and a prepared statement holds
            // only what sqlparser reads.
            Statement::Show(_)
            | Statement::Account(_)
            | Statement::Compat(_)
            | Statement::Load(_) => {
                Err(SqlError::internal("a text-only statement run as prepared"))
            }
        };
        outcome.map(Reply::Whole)
    }

    fn txn(&mut self, t: &Txn) -> Result<Outcome, SqlError> {
        match t {
            Txn::Start(iso) => {
                self.commit()?;
                let iso = iso.as_ref().map(isolation_of);
                self.begin(iso.unwrap_or(self.isolation));
                Ok(Outcome::done(0))
            }
            Txn::Commit => {
                self.commit()?;
                Ok(Outcome::done(0))
            }
            Txn::Rollback => {
                self.rollback();
                Ok(Outcome::done(0))
            }
            Txn::Savepoint(name) => self.savepoint(name),
            Txn::RollbackTo(name) => self.savepoint_end(name, true),
            Txn::Release(name) => self.savepoint_end(name, false),
        }
    }

    /// The statements dump tools send that sqlparser does not read ([`Compat`]).
    fn compat(&mut self, c: Compat) -> Result<Outcome, SqlError> {
        match c {
            Compat::ConsistentSnapshot => self.commit().map(|()| {
                self.begin(self.isolation);
                Outcome::done(0)
            }),
            Compat::LockTables => self.commit().map(|()| Outcome::done(0)),
            Compat::UnlockTables | Compat::Keys => Ok(Outcome::done(0)),
        }
    }

    fn env_lookup(&self) -> impl Fn(&str, &str) -> Result<Arc<Table>, SqlError> + '_ {
        move |d: &str, t: &str| {
            if crate::catalog::system::is_db(d) {
                crate::catalog::system_table(t, self.inst.sys.clone())
            } else {
                self.inst.table(d, t)
            }
        }
    }

    pub(crate) fn compile(
        &self,
        stmt: &ast::Statement,
        c: &mut Compiler,
    ) -> Result<PlanRoot, SqlError> {
        let plan = self.with_env(|env| {
            Ok(match stmt {
                ast::Statement::Query(q) => Plan::Select(Box::new(compile_select(q, env, c)?)),
                ast::Statement::Insert(i) => Plan::Insert(dml::compile_insert(i, env, c)?),
                ast::Statement::Update(u) => Plan::Update(dml::compile_update(u, env, c)?),
                ast::Statement::Delete(d) => Plan::Delete(dml::compile_delete(d, env, c)?),
                _ => return Err(SqlError::internal("not a DML statement")),
            })
        })?;
        Ok(PlanRoot {
            plan,
            subqueries: c.take_subqueries(),
        })
    }

    /// Runs `f` with the name environment statements bind in: the current database, this
    /// session's tables and variables, and the statement's text.
    pub(crate) fn with_env<R>(&self, f: impl FnOnce(&Env) -> R) -> R {
        let lookup = self.env_lookup();
        let vars = |n: &str| self.sysvar(n);
        let text = StatementText::new(&self.text);
        let env = Env {
            db: self.db.as_deref(),
            lookup: &lookup,
            vars: &vars,
            outer: None,
            sql: Some(&text),
            ctes: &[],
            compile_query: &compile_select,
        };
        f(&env)
    }

    /// Runs a compiled statement in the open transaction, or in its own (autocommit), with a
    /// diagnostics area for the warnings its expressions raise.
    fn execute_plan(
        &mut self,
        root: &PlanRoot,
        params: &[Value],
        out: &mut Out<'_>,
    ) -> Result<Reply, SqlError> {
        let plan = &root.plan;
        // Strict mode makes INSERT and UPDATE fail on a warning (not IGNORE; DELETE and
        // queries only warn), as STRICT_TRANS_TABLES does in MySQL.
        let strict = match plan {
            Plan::Insert(p) => p.mode != crate::plan::dml::InsertMode::Ignore,
            Plan::Update(p) => !p.ignore,
            Plan::Select(_) | Plan::Delete(_) => false,
        };
        let scope = crate::types::diag::Scope::begin(strict);
        let r = self.execute_plan_in_scope(root, params, out);
        if r.is_ok() {
            self.take_diag();
        }
        let rest = scope.finish();
        debug_assert!(r.is_err() || (rest.count == 0 && rest.escalated.is_none()));
        r
    }

    fn execute_plan_in_scope(
        &mut self,
        root: &PlanRoot,
        params: &[Value],
        out: &mut Out<'_>,
    ) -> Result<Reply, SqlError> {
        let (plan, subs) = (&root.plan, &root.subqueries[..]);
        let c = &self.inst.counters;
        match plan {
            Plan::Select(_) => &c.com_select,
            Plan::Insert(_) => &c.com_insert,
            Plan::Update(_) => &c.com_update,
            Plan::Delete(_) => &c.com_delete,
        }
        .fetch_add(1, Ordering::Relaxed);
        if let Plan::Select(s) = plan {
            if !s.reads_tables() {
                let ctx = self.ctx(params);
                // Its warnings reach the session's list only after the statement, so the
                // status is the same before and after the rows are computed.
                let head = self.result_status(out.more);
                let none = exec::locked::Locked::default();
                self.stream(s, subs, None, &ctx, head, out.sink, &none)?;
                return Ok(Reply::Sent);
            }
        }
        let implicit = self.txn.is_none();
        if implicit {
            if self.autocommit {
                let gate = self.inst.gate.read_arc();
                self.txn = Some(OpenTxn {
                    // A single statement reads one consistent state either way; read committed
                    // spares it snapshot bookkeeping and write conflicts, as autocommit InnoDB
                    // statements never see them.
                    txn: self.inst.db.begin_with(IsolationLevel::ReadCommitted),
                    explicit: false,
                    _gate: gate,
                    savepoints: Vec::new(),
                });
            } else {
                self.begin(self.isolation);
            }
        }
        let now = now_packed();
        let reads = match plan {
            Plan::Select(s) => Some(&**s),
            Plan::Insert(i) => i.select.as_deref(),
            _ => None,
        };
        let virtual_rows = match reads {
            Some(s) => {
                let mut kinds = Vec::new();
                s.virtual_kinds(subs, &mut kinds);
                let mut all = Vec::with_capacity(kinds.len());
                for k in kinds {
                    all.push((k, crate::admin::infoschema::rows(self, k)?));
                }
                (!all.is_empty()).then_some(all)
            }
            _ => None,
        };
        // Announced before the transaction is taken out below: the flags it will have again
        // once the statement is over.
        let head = self.result_status(out.more);
        let mut open = self.txn.take().expect("a transaction was just ensured");
        let ctx = Ctx {
            params,
            now,
            db: self.db.as_deref(),
            user: &self.user_at,
            conn_id: self.conn_id,
            last_insert_id: self.last_insert_id,
            version: &self.inst.options.server_version,
            virtual_rows: virtual_rows.as_deref(),
            sub: None,
            outer: &[],
            killed: Some(&self.process.interrupt),
        };
        let sp = (!implicit || !self.autocommit).then(|| open.txn.savepoint());
        // `None`: the rows went to the sink as they were produced.
        let r: Result<Option<Outcome>, SqlError> = match plan {
            Plan::Select(s) => {
                // Rows that a locking read takes are locked first, through the exclusive
                // transaction; the tree then reads them through the shared one.
                let mut locked = exec::locked::Locked::default();
                exec::lock::lock_rows(s, &mut open.txn, &ctx, subs, &mut locked)
                    .and_then(|()| {
                        self.stream(s, subs, Some(&open.txn), &ctx, head, out.sink, &locked)
                    })
                    .map(|()| None)
            }
            Plan::Insert(p) => {
                // An autocommit statement's transaction is fresh and read committed: another
                // such transaction reads what it would, so INSERT … SELECT may read through it
                // while writing through this one (rows stored as they are selected).
                let reader = (implicit && self.autocommit && p.select.is_some())
                    .then(|| self.inst.db.begin_with(IsolationLevel::ReadCommitted));
                p.execute(&mut open.txn, reader.as_ref(), &ctx, subs)
                    .map(|n| Some(self.dml_outcome(n, DmlKind::Insert)))
            }
            Plan::Update(p) => p
                .execute(&mut open.txn, &ctx, subs)
                .map(|n| Some(self.dml_outcome(n, DmlKind::Update))),
            Plan::Delete(p) => p
                .execute(&mut open.txn, &ctx, subs)
                .map(|n| Some(self.dml_outcome(n, DmlKind::Delete))),
        };
        // KILL QUERY during the statement: its result is dropped and its changes undone below,
        // as for any failed statement. (The executor does not look at the flag while it runs,
        // so a long scan finishes its work first.)
        let r = match r {
            Ok(_) if self.process.interrupt.is_set() => Err(self.process.interrupt.error()),
            // Strict mode: a warning raised while computing the rows fails the statement.
            Ok(o) => crate::types::diag::check().map(|()| o),
            r => r,
        };
        // Engine errors name trees; the client wants the table.
        let r = r.map_err(|e| {
            if e.kind() == ErrorKind::Checkread {
                let t = match plan {
                    Plan::Select(s) => s.table.as_ref().map(|t| t.def.name.clone()),
                    Plan::Insert(p) => Some(p.table.def.name.clone()),
                    Plan::Update(p) => Some(p.table.def.name.clone()),
                    Plan::Delete(p) => Some(p.table.def.name.clone()),
                };
                return SqlError::of(
                    ErrorKind::Checkread,
                    format!(
                        "Record has changed since last read in table '{}'; try restarting \
                         transaction",
                        t.unwrap_or_default()
                    ),
                );
            }
            e
        });
        // The rows go out while the statement is still open, so that a client gone (or a
        // KILL) while they are sent undoes it below. A streamed plan sent them already.
        let r = match r {
            Ok(None) => Ok(Reply::Sent),
            Ok(Some(Outcome::Rows { columns, rows })) => self
                .send_rows(&columns, rows, head, out.sink)
                .map(|()| Reply::Sent),
            Ok(Some(o)) => Ok(Reply::Whole(o)),
            Err(e) => Err(e),
        };
        if let Ok(Reply::Whole(Outcome::Done { last_insert_id, .. })) = &r {
            if *last_insert_id != 0 {
                self.last_insert_id = *last_insert_id;
            }
        }
        match (&r, sp) {
            (Ok(_), None) => {
                // Autocommit: the statement is the transaction.
                open.txn.commit().map_err(SqlError::engine)?;
            }
            (Ok(_), Some(sp)) => {
                open.txn.release(sp);
                self.txn = Some(open);
            }
            (Err(e), _) if e.rolls_back_transaction() => {
                // Deadlock, lock wait timeout, write conflict: the whole transaction is rolled
                // back (clients retry it without sending ROLLBACK).
                self.inst
                    .counters
                    .rolled_back_on_conflict
                    .fetch_add(1, Ordering::Relaxed);
                open.txn.rollback();
            }
            (Err(_), None) => open.txn.rollback(),
            (Err(_), Some(sp)) => {
                // Statement atomicity: undo this statement only.
                open.txn.rollback_to(sp);
                self.txn = Some(open);
            }
        }
        r
    }

    fn dml_outcome(&mut self, mut n: DmlCount, kind: DmlKind) -> Outcome {
        // The expression warnings come first: MySQL interleaves them with the conversion
        // warnings row by row, but only their number and codes are observable together.
        n.warnings += self.take_diag();
        // MySQL's info strings: multi-row INSERT and INSERT ... SELECT, and every UPDATE (even
        // one that matched nothing); none for DELETE.
        let info = match kind {
            DmlKind::Insert if n.records > 1 || n.from_select => format!(
                "Records: {}  Duplicates: {}  Warnings: {}",
                n.records, n.duplicates, n.warnings
            ),
            DmlKind::Update => format!(
                "Rows matched: {}  Changed: {}  Warnings: {}",
                n.matched, n.changed, n.warnings
            ),
            DmlKind::Insert | DmlKind::Delete => String::new(),
        };
        if !n.warns.is_empty() {
            self.fresh_diag();
        }
        for (level, kind, message) in n.warns {
            self.warnings.push(Warning {
                level,
                code: kind.code(),
                message,
            });
        }
        Outcome::Done {
            affected_rows: n.affected,
            last_insert_id: n.first_id.unwrap_or(0),
            info,
        }
    }

    // ---- Prepared statements ------------------------------------------------------------

    /// COM_STMT_PREPARE.
    pub fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        crate::front::depth::with_statement_stack(|| self.prepare_inner(sql))
    }

    fn prepare_inner(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        let mut stmts =
            crate::front::parse::parse_ast(&crate::front::lex::executable_comments(sql))?;
        if stmts.len() != 1 {
            return Err(SqlError::of(
                ErrorKind::ParseError,
                "You have an error in your SQL syntax: a prepared statement holds one statement",
            ));
        }
        let stmt = Statement::from_ast(stmts.pop().expect("one statement"));
        self.text.clear();
        self.text.push_str(sql);
        let mut c = Compiler::new();
        let plan = match &stmt {
            Statement::Dml(ast) => Some(self.compile(ast, &mut c)?),
            _ => None,
        };
        let columns = match &plan {
            Some(PlanRoot {
                plan: Plan::Select(s),
                ..
            }) => s.columns.clone(),
            _ => Arc::new(Vec::new()),
        };
        // The wire gives a statement's parameter count 16 bits (ER_PS_MANY_PARAM).
        if c.param_count() > usize::from(u16::MAX) {
            return Err(SqlError::of(
                ErrorKind::PsManyParam,
                "Prepared statement contains too many placeholders",
            ));
        }
        // Counted over all sessions before the statement is kept (ER_MAX_PREPARED_STMT_COUNT).
        let max = self
            .inst
            .globals
            .max_prepared_stmt_count
            .load(Ordering::Relaxed);
        let open = self
            .inst
            .counters
            .prepared_count
            .fetch_add(1, Ordering::AcqRel);
        if open >= max {
            self.inst
                .counters
                .prepared_count
                .fetch_sub(1, Ordering::AcqRel);
            return Err(SqlError::of(
                ErrorKind::MaxPreparedStmtCountReached,
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: \
                     {max})"
                ),
            ));
        }
        let id = self.next_stmt_id;
        self.next_stmt_id = self.next_stmt_id.wrapping_add(1).max(1);
        let info = PreparedInfo {
            id,
            params: c.param_count(),
            columns: columns.clone(),
        };
        self.prepared.insert(
            id,
            Box::new(Prepared {
                sql: sql.to_string(),
                stmt,
                plan,
                version: self.inst.schema_version.load(Ordering::Acquire),
                params: c.param_count(),
                order: c.param_order(),
                columns,
            }),
        );
        Ok(info)
    }

    /// Parameter count of a prepared statement.
    pub fn prepared_params(&self, id: u32) -> Option<usize> {
        self.prepared.get(&id).map(|p| p.params)
    }

    /// COM_STMT_EXECUTE, its result whole (see [`Session::execute_into`]).
    pub fn execute(&mut self, id: u32, params: &[Value]) -> Result<Outcome, SqlError> {
        let mut c = Collect::default();
        self.execute_into(id, params, &mut c);
        c.results
            .pop()
            .unwrap_or_else(|| Err(SqlError::internal("an EXECUTE without an end")))
    }

    /// COM_STMT_EXECUTE, its result handed to `sink` as it is produced (one `end`).
    pub fn execute_into(&mut self, id: u32, params: &[Value], sink: &mut dyn ResultSink) {
        self.warnings_shown = false;
        self.inst.counters.questions.fetch_add(1, Ordering::Relaxed);
        let Some(mut p) = self.prepared.remove(&id) else {
            let e = SqlError::unknown_stmt(id);
            self.note_failure(&e);
            sink.end(StatementEnd::Error(&e));
            return;
        };
        self.begin_command("Execute", &p.sql);
        crate::front::depth::with_statement_stack(|| {
            let mut out = Out { sink, more: false };
            let r = self.execute_prepared(&mut p, params, &mut out);
            self.finish(r, &mut out);
        });
        self.end_command();
        self.prepared.insert(id, p);
    }

    fn execute_prepared(
        &mut self,
        p: &mut Prepared,
        params: &[Value],
        out: &mut Out<'_>,
    ) -> Result<Reply, SqlError> {
        if params.len() != p.params {
            return Err(SqlError::wrong_arguments("mysqld_stmt_execute"));
        }
        let version = self.inst.schema_version.load(Ordering::Acquire);
        let stale = p.plan.is_some() && p.version != version;
        if let (true, Statement::Dml(ast)) = (stale, &p.stmt) {
            // A table changed since PREPARE: compile again (columns must not change shape).
            self.text.clear();
            self.text.push_str(&p.sql);
            let mut c = Compiler::new();
            p.plan = Some(self.compile(ast, &mut c)?);
            p.order = c.param_order();
            p.version = version;
            if let Some(PlanRoot {
                plan: Plan::Select(s),
                ..
            }) = &p.plan
            {
                if s.columns.len() != p.columns.len() {
                    return Err(SqlError::of(
                        ErrorKind::NeedReprepare,
                        format!("Prepared statement needs to be re-prepared: {}", p.sql),
                    ));
                }
            }
        }
        // `p` is out of the session's map while it runs, so no copy of the statement is needed.
        match &p.plan {
            Some(plan) => self.run(&p.stmt, Some((plan, &p.order)), params, out),
            None => self.run(&p.stmt, None, params, out),
        }
    }

    /// COM_STMT_CLOSE.
    pub fn close_statement(&mut self, id: u32) {
        if self.prepared.remove(&id).is_some() {
            self.inst
                .counters
                .prepared_count
                .fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub fn has_statement(&self, id: u32) -> bool {
        self.prepared.contains_key(&id)
    }
}

/// Where a statement's result goes, and whether another statement follows it.
struct Out<'s> {
    sink: &'s mut dyn ResultSink,
    more: bool,
}

/// What a statement hands back to dispatch.
enum Reply {
    /// Its result set went to the sink already (within the statement's scope).
    Sent,
    /// Its outcome, for dispatch to hand over.
    Whole(Outcome),
}

fn closed(_: SinkClosed) -> SqlError {
    SqlError::of(
        ErrorKind::NetErrorOnWrite,
        "Got an error writing communication packets",
    )
}

/// Which statement a `DmlCount` came from (for the OK packet's info string).
#[derive(Clone, Copy)]
enum DmlKind {
    Insert,
    Update,
    Delete,
}

/// Whether a statement names a table anywhere (MariaDB's "all_tables"): one that does not
/// leaves the previous statement's diagnostics in place.
fn uses_tables(stmt: &Statement) -> bool {
    fn names_a_table<V: ast::Visit>(v: &V) -> bool {
        ast::visit_relations(v, |_| std::ops::ControlFlow::Break(())).is_break()
    }
    match stmt {
        Statement::Dml(s) => names_a_table(s),
        Statement::Set(s) => names_a_table(s),
        Statement::Txn(_) | Statement::Use(_) | Statement::Kill { .. } => false,
        _ => true,
    }
}
