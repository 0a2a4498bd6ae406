//! `CREATE TABLE t [(keys)] [options] [AS] SELECT ...`: the query is compiled first, its result
//! columns (names, types, whether they can be NULL) become the table's, and its rows go in
//! through `INSERT ... SELECT`. A failure while inserting drops the new table again, as in
//! MariaDB; IF NOT EXISTS on an existing table is a note and inserts nothing.

use sqlparser::ast;

use crate::bind::compile::Compiler;
use crate::ddl;
use crate::instance::session::Session;
use crate::plan::dml::Plan;
use crate::session::sink::Collect;
use crate::session::{Out, Reply};
use crate::types::result::{col_flags, Outcome};
use crate::SqlError;

impl Session {
    pub(crate) fn create_table_as(
        &mut self,
        ct: &ast::CreateTable,
        query: &ast::Query,
    ) -> Result<Outcome, SqlError> {
        // DDL commits the open transaction first, as MySQL does.
        self.commit()?;
        let select = ast::Statement::Query(Box::new(query.clone()));
        let root = self.compile(&select, &mut Compiler::new())?;
        let Plan::Select(p) = &root.plan else {
            return Err(SqlError::internal("a query compiled to DML"));
        };
        let result: Vec<_> = p
            .columns
            .iter()
            .zip(&p.types)
            .map(|(c, ty)| (c.name.clone(), *ty, c.flags & col_flags::NOT_NULL == 0))
            .collect();
        let Some((db, name)) = ddl::create_table_as(self, ct, &result)? else {
            return Ok(Outcome::done(0));
        };
        let insert = format!(
            "INSERT INTO `{}`.`{}` {query}",
            db.replace('`', "``"),
            name.replace('`', "``")
        );
        match self.insert_all(&insert) {
            Ok(done) => Ok(done),
            Err(e) => {
                // The error is the statement's answer; a failure to drop too would hide it.
                let _ = ddl::drop_created(self, &db, &name);
                Err(e)
            }
        }
    }

    /// Runs the `INSERT ... SELECT` of a CREATE TABLE ... SELECT in its own transaction.
    fn insert_all(&mut self, text: &str) -> Result<Outcome, SqlError> {
        let mut stmts = crate::front::parse::parse_ast(text)?;
        let (Some(stmt), None) = (stmts.pop(), stmts.pop()) else {
            return Err(SqlError::internal(
                "CREATE TABLE ... SELECT is not one INSERT",
            ));
        };
        let root = self.compile(&stmt, &mut Compiler::new())?;
        let mut sink = Collect::default();
        let mut out = Out {
            sink: &mut sink,
            more: false,
        };
        let r = self.execute_plan(&root, &[], &mut out);
        // Under autocommit=0 the INSERT opened a transaction: the table's rows are committed
        // with the statement, as MariaDB's CREATE ... SELECT is (DDL commits).
        let r = r.and_then(|reply| self.commit().map(|()| reply));
        if r.is_err() {
            self.rollback();
        }
        match r? {
            Reply::Whole(o @ Outcome::Done { .. }) => Ok(o),
            _ => Err(SqlError::internal(
                "CREATE TABLE ... SELECT's INSERT returned rows",
            )),
        }
    }
}
