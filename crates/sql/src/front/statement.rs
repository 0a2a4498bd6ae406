//! One statement's text to zipdb's typed [`Statement`], the one thing session/ dispatches on.
//!
//! The grammars of the MySQL statements sqlparser lacks run first, in this order, each on
//! sqlparser's `Parser` over the statement's tokens (front/grammar.rs) and each deciding on
//! the statement's first word before it makes a token: SHOW (front/show.rs), account
//! statements (front/account.rs), the compatibility statements dump tools send
//! (front/compat.rs), OPTIMIZE TABLE (front/optimize.rs), LOAD DATA (front/load.rs);
//! everything else is sqlparser's.

use sqlparser::ast;

use crate::front::account::UserStmt;
use crate::front::compat::Compat;
use crate::front::optimize::TableName;
use crate::front::show::{Filter, Show, TableRef};
use crate::SqlError;

/// A parsed statement.
#[derive(Debug, Clone)]
pub(crate) enum Statement {
    /// SELECT, INSERT, UPDATE or DELETE, compiled to a plan; the binder reads the AST whole.
    Dml(ast::Statement),
    /// Any other statement of sqlparser's: CREATE, DROP, TRUNCATE, ... (ddl/ runs it, or
    /// refuses it).
    Ddl(ast::Statement),
    /// SHOW (front/show.rs).
    Show(Show),
    /// CREATE/ALTER/DROP USER, SET PASSWORD, GRANT, FLUSH.
    Account(UserStmt),
    Txn(Txn),
    Set(ast::Set),
    Use(String),
    /// KILL [CONNECTION | QUERY] id.
    Kill {
        connection: bool,
        id: u64,
    },
    /// EXPLAIN of a DML statement, with the `FORMAT=` it names (session/explain.rs reads it).
    Explain {
        statement: Box<ast::Statement>,
        format: Option<ast::AnalyzeFormatKind>,
    },
    Optimize(Vec<TableName>),
    Compat(Compat),
    /// LOAD DATA [LOCAL] INFILE (front/load.rs).
    Load(Box<crate::front::load::Load>),
    /// A form zipdb recognises and does not run: it fails when run (1235), after the
    /// statement's start has cleared the warnings, as any failed statement does.
    Unsupported(&'static str),
}

/// Transaction control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Txn {
    /// START TRANSACTION / BEGIN, with the isolation level it names, if any.
    Start(Option<ast::TransactionIsolationLevel>),
    Commit,
    Rollback,
    Savepoint(String),
    RollbackTo(String),
    Release(String),
}

impl Statement {
    /// Sorts a statement of sqlparser's.
    pub(crate) fn from_ast(stmt: ast::Statement) -> Statement {
        use ast::Statement as S;
        match stmt {
            S::Query(_) | S::Insert(_) | S::Update(_) | S::Delete(_) => Statement::Dml(stmt),
            S::StartTransaction { modes, .. } => {
                Statement::Txn(Txn::Start(modes.into_iter().find_map(|m| match m {
                    ast::TransactionMode::IsolationLevel(l) => Some(l),
                    _ => None,
                })))
            }
            S::Commit { .. } => Statement::Txn(Txn::Commit),
            S::Rollback {
                savepoint: None, ..
            } => Statement::Txn(Txn::Rollback),
            S::Rollback {
                savepoint: Some(name),
                ..
            } => Statement::Txn(Txn::RollbackTo(name.value)),
            S::Savepoint { name } => Statement::Txn(Txn::Savepoint(name.value)),
            S::ReleaseSavepoint { name } => Statement::Txn(Txn::Release(name.value)),
            S::Set(set) => Statement::Set(set),
            S::Use(u) => match u {
                ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) => {
                    Statement::Use(n.to_string().trim_matches('`').to_string())
                }
                _ => Statement::Unsupported("this USE"),
            },
            S::Explain { analyze: true, .. } => Statement::Unsupported("EXPLAIN ANALYZE"),
            S::Explain {
                statement, format, ..
            } => Statement::Explain { statement, format },
            // `DESCRIBE t` that front/show.rs did not read first (a comment before it).
            S::ExplainTable {
                hive_format: None,
                table_name,
                ..
            } => {
                let mut parts = table_name.0.iter().map(|p| match p.as_ident() {
                    Some(i) => i.value.clone(),
                    None => p.to_string(),
                });
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(table), None, None) => Statement::Show(Show::Columns {
                        full: false,
                        table: TableRef { db: None, table },
                        filter: Filter::None,
                    }),
                    (Some(db), Some(table), None) => Statement::Show(Show::Columns {
                        full: false,
                        table: TableRef {
                            db: Some(db),
                            table,
                        },
                        filter: Filter::None,
                    }),
                    _ => Statement::Unsupported("this DESCRIBE"),
                }
            }
            S::Kill { modifier, id } => Statement::Kill {
                connection: !matches!(modifier, Some(ast::KillType::Query)),
                id,
            },
            other => Statement::Ddl(other),
        }
    }

    /// Whether `max_execution_time` applies (it does to SELECTs only).
    pub(crate) fn is_select(&self) -> bool {
        matches!(self, Statement::Dml(ast::Statement::Query(_)))
    }
}

/// Parses a text that holds exactly one statement.
#[cfg(test)]
pub(crate) fn parse_one(sql: &str) -> Result<Statement, SqlError> {
    parse_piece(crate::front::lex::Piece {
        text: sql,
        tokens: None,
    })
}

/// Parses a statement front/lex.rs cut out of a text (with its tokens, when it kept them:
/// only sqlparser's statements read them; the grammars before it read short statements).
pub(crate) fn parse_piece(piece: crate::front::lex::Piece<'_>) -> Result<Statement, SqlError> {
    let sql = piece.text;
    if let Some(r) = crate::front::show::parse(sql) {
        return r.map(Statement::Show);
    }
    if let Some(r) = crate::front::account::parse(sql) {
        return r.map(Statement::Account);
    }
    if let Some(r) = crate::front::compat::parse(sql) {
        return r.map(Statement::Compat);
    }
    if let Some(r) = crate::front::optimize::parse(sql) {
        return r.map(Statement::Optimize);
    }
    if let Some(r) = crate::front::load::parse(sql) {
        return r.map(|l| Statement::Load(Box::new(l)));
    }
    let mut stmts = crate::front::parse::parse_piece(piece)?;
    match stmts.len() {
        1 => Ok(Statement::from_ast(stmts.pop().expect("one statement"))),
        // The splitter and the parser disagree on where statements end (a construct the
        // splitter does not know): refused rather than guessed at.
        _ => Err(SqlError::syntax(sql.trim_start(), 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(sql: &str) -> String {
        match parse_one(sql) {
            Ok(s) => format!("{s:?}")
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("")
                .to_string(),
            Err(e) => format!("error {}", e.code()),
        }
    }

    #[test]
    fn each_reader_gets_its_statements() {
        for (sql, want) in [
            ("SELECT 1", "Dml"),
            ("insert into t values (1)", "Dml"),
            ("UPDATE t SET a = 1", "Dml"),
            ("DELETE FROM t", "Dml"),
            ("CREATE TABLE t (a INT)", "Ddl"),
            ("SHOW TABLES", "Show"),
            ("show full processlist;", "Show"),
            ("CREATE USER u", "Account"),
            ("GRANT ALL ON *.* TO u", "Account"),
            ("BEGIN", "Txn"),
            ("SET @a = 1", "Set"),
            ("USE d", "Use"),
            ("KILL QUERY 3", "Kill"),
            ("EXPLAIN SELECT 1", "Explain"),
            ("OPTIMIZE TABLE t", "Optimize"),
            ("LOAD DATA LOCAL INFILE 'f' INTO TABLE t", "Load"),
            ("LOAD DATA INFILE 'f' INTO TABLE", "error 1064"),
            ("LOCK TABLES t WRITE", "Compat"),
            ("start transaction with consistent snapshot", "Compat"),
            ("ALTER TABLE t DISABLE KEYS", "Compat"),
            ("SELECT 1 SELECT 2", "error 1064"),
            ("CREATE USER 'u", "error 1064"),
            ("OPTIMIZE TABLE `t", "error 1064"),
        ] {
            assert_eq!(kind(sql), want, "{sql}");
        }
    }

    #[test]
    fn transaction_forms() {
        let txn = |sql: &str| match parse_one(sql) {
            Ok(Statement::Txn(t)) => t,
            other => panic!("{sql}: {other:?}"),
        };
        assert_eq!(txn("START TRANSACTION"), Txn::Start(None));
        assert_eq!(
            txn("START TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            Txn::Start(Some(ast::TransactionIsolationLevel::Serializable))
        );
        assert_eq!(txn("COMMIT"), Txn::Commit);
        assert_eq!(txn("ROLLBACK"), Txn::Rollback);
        assert_eq!(txn("SAVEPOINT a"), Txn::Savepoint("a".into()));
        assert_eq!(txn("ROLLBACK TO SAVEPOINT a"), Txn::RollbackTo("a".into()));
        assert_eq!(txn("RELEASE SAVEPOINT a"), Txn::Release("a".into()));
        assert!(matches!(
            parse_one("KILL 7"),
            Ok(Statement::Kill {
                connection: true,
                id: 7
            })
        ));
    }
}
