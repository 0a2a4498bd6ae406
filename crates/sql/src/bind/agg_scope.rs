//! The aggregate stage's scope ([`AggScope`]): expressions over the group row.

use sqlparser::ast;

use crate::bind::compile::{Compiler, Scope};
use crate::bind::env::{Env, FromItem};
use crate::bind::scope::{joined_type, joined_types, FromScope};
use crate::expr::{Expr, SubqueryRef};
use crate::plan::select::{AggFn, AggSpec};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

/// The aggregate stage's scope: aggregate calls and GROUP BY expressions become slots of the
/// group row (`[group values..., aggregate values...]`).
pub struct AggScope<'a> {
    pub from: &'a [FromItem<'a>],
    /// For uncorrelated subqueries (`None`: subqueries are refused).
    pub env: Option<&'a Env<'a>>,
    pub vars: &'a dyn Fn(&str) -> Result<Value, SqlError>,
    pub group_by: Vec<(String, Expr)>,
    pub aggs: Vec<AggSpec>,
    pub aliases: Vec<(String, ast::Expr)>,
    pub clause: &'static str,
}

impl AggScope<'_> {
    fn source_scope(&self) -> FromScope<'_> {
        FromScope {
            items: self.from,
            visible: self.from.len(),
            clause: self.clause,
            vars: self.vars,
            env: None,
        }
    }

    fn source_types(&self) -> Vec<SqlType> {
        joined_types(self.from)
    }

    fn agg_slot(&mut self, spec: AggSpec) -> Expr {
        let n = self.group_by.len();
        self.aggs.push(spec);
        Expr::Col(n + self.aggs.len() - 1)
    }
}

impl Scope for AggScope<'_> {
    fn subquery(&mut self, c: &mut Compiler, q: &ast::Query) -> Result<SubqueryRef, SqlError> {
        // Expressions here are over the group row, not the source row: outer references
        // would read the wrong columns, so only uncorrelated subqueries compile.
        let Some(env) = self.env else {
            return Err(SqlError::unsupported("subqueries here"));
        };
        let inner = Env {
            db: env.db,
            lookup: env.lookup,
            vars: env.vars,
            outer: None,
            sql: env.sql,
            ctes: env.ctes,
            compile_query: env.compile_query,
        };
        let plan = (env.compile_query)(q, &inner, c)?;
        Ok(c.add_subquery(plan, Vec::new()))
    }

    fn column(&mut self, q: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        let e = self.source_scope().column(q, name)?;
        let types = self.source_types();
        let ty = match &e {
            Expr::Col(i) => types.get(*i).copied(),
            _ => None,
        }
        .unwrap_or(SqlType::Varchar {
            len: 255,
            binary: false,
        });
        Ok(self.agg_slot(AggSpec {
            func: AggFn::Any,
            arg: Some(e),
            distinct: false,
            ty,
        }))
    }

    fn intercept(&mut self, c: &mut Compiler, e: &ast::Expr) -> Result<Option<Expr>, SqlError> {
        let text = e.to_string();
        if let Some(i) = self
            .group_by
            .iter()
            .position(|(g, _)| g.eq_ignore_ascii_case(&text))
        {
            return Ok(Some(Expr::Col(i)));
        }
        // A select-list alias (what `Compiler::compile` would hand `column` unqualified):
        // compiled here, where the statement's compiler is at hand, so that its subqueries
        // join the statement's table.
        let unqualified = match e {
            ast::Expr::Identifier(id) if !id.value.starts_with('@') => Some(&id.value),
            ast::Expr::CompoundIdentifier(ids)
                if ids.len() == 1 && !ids[0].value.starts_with("@@") =>
            {
                Some(&ids[0].value)
            }
            _ => None,
        };
        if let Some(name) = unqualified {
            if let Some((_, ast)) = self
                .aliases
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(name))
                .cloned()
            {
                return c.compile_apart(&ast, self).map(Some);
            }
        }
        let ast::Expr::Function(f) = e else {
            return Ok(None);
        };
        let name = f.name.to_string().to_ascii_uppercase();
        let func = match name.as_str() {
            "COUNT" => AggFn::Count,
            "SUM" => AggFn::Sum,
            "AVG" => AggFn::Avg,
            "MIN" => AggFn::Min,
            "MAX" => AggFn::Max,
            _ => return Ok(None),
        };
        let ast::FunctionArguments::List(l) = &f.args else {
            return Err(SqlError::wrong_args(&name));
        };
        let distinct = matches!(
            l.duplicate_treatment,
            Some(ast::DuplicateTreatment::Distinct)
        );
        if l.args.len() != 1 {
            return Err(SqlError::wrong_args(&name));
        }
        let (func, arg) = match &l.args[0] {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) if func == AggFn::Count => {
                (AggFn::CountStar, None)
            }
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                let mut src = self.source_scope();
                (func, Some(c.compile(x, &mut src)?))
            }
            _ => return Err(SqlError::wrong_args(&name)),
        };
        let types = self.source_types();
        let arg_ty = arg
            .as_ref()
            .map(|a| a.result_type(&|i| types.get(i).copied()));
        let ty = match (func, arg_ty) {
            (AggFn::CountStar | AggFn::Count, _) => SqlType::Int {
                bytes: 8,
                unsigned: false,
            },
            (AggFn::Sum, Some(t)) if t.is_integer() => SqlType::Decimal {
                precision: 38,
                scale: 0,
            },
            (AggFn::Sum, Some(SqlType::Decimal { scale, .. })) => SqlType::Decimal {
                precision: 38,
                scale,
            },
            (AggFn::Avg, Some(t)) if t.is_integer() => SqlType::Decimal {
                precision: 38,
                scale: 4,
            },
            (AggFn::Avg, Some(SqlType::Decimal { scale, .. })) => SqlType::Decimal {
                precision: 38,
                scale: (scale + 4).min(30),
            },
            (AggFn::Sum | AggFn::Avg, _) => SqlType::Double,
            (_, Some(t)) => t,
            (_, None) => SqlType::Double,
        };
        Ok(Some(self.agg_slot(AggSpec {
            func,
            arg,
            distinct,
            ty,
        })))
    }

    fn sysvar(&mut self, name: &str) -> Result<Value, SqlError> {
        (self.vars)(name)
    }

    /// A group row's column: a GROUP BY expression's value or an aggregate's.
    fn col_type(&self, i: usize) -> Option<SqlType> {
        match self.group_by.get(i) {
            Some((_, g)) => Some(g.result_type(&|j| joined_type(self.from, j))),
            None => self.aggs.get(i - self.group_by.len()).map(|a| a.ty),
        }
    }
}
