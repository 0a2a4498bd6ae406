//! The grammar of account statements: CREATE USER, ALTER USER, DROP USER, SET PASSWORD,
//! GRANT ALL, and the no-op FLUSH (admin/user.rs runs them).
//!
//! They are parsed here by hand because the parser's MySQL grammar does not have them.
//! Accepted forms (keywords in any case; names unquoted, 'quoted', "quoted" or `quoted`; a
//! missing `@host` means `'%'`; `CURRENT_USER[()]` is the session's account):
//!
//! ```text
//! CREATE USER [IF NOT EXISTS] user [auth] [, user [auth]] ...
//! ALTER USER [IF EXISTS] user [auth] [, user [auth]] ...
//! DROP USER [IF EXISTS] user [, user] ...
//! SET PASSWORD [FOR user] = 'password' | PASSWORD('password')
//! GRANT ALL [PRIVILEGES] ON {* | *.* | db.* | db.table} TO user [, user] ... [WITH GRANT OPTION]
//! auth: IDENTIFIED BY 'password' | IDENTIFIED WITH plugin [BY 'password']
//! ```
//!
//! Syntax errors are 1064, naming the construct; over-long names 1470. Account options MySQL
//! has and zipdb does not (REQUIRE, PASSWORD EXPIRE, ACCOUNT LOCK, ...), every GRANT but
//! GRANT ALL, and REVOKE are refused with 1235 rather than ignored.

use crate::catalog::accounts::{self, HOST_NAME_MAX, USER_NAME_MAX};
use crate::error::{ErrorKind, SqlError};

/// A user in a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UserName {
    Named {
        user: String,
        host: String,
    },
    /// CURRENT_USER: the session's account.
    Current,
}

/// An `IDENTIFIED ...` clause: the plugin as written (checked when executed), the password.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Auth {
    pub plugin: Option<String>,
    pub password: String,
}

/// A parsed account statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UserStmt {
    Create {
        if_not_exists: bool,
        users: Vec<(UserName, Option<Auth>)>,
    },
    Alter {
        if_exists: bool,
        users: Vec<(UserName, Option<Auth>)>,
    },
    Drop {
        if_exists: bool,
        users: Vec<UserName>,
    },
    SetPassword {
        user: Option<UserName>,
        password: String,
    },
    GrantAll {
        users: Vec<UserName>,
    },
    Flush,
}

// ---- Tokens --------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// An unquoted word (keyword or name).
    Word(String),
    /// A '...' or "..." string.
    Str(String),
    /// A `...` identifier.
    Ident(String),
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    /// Byte offset in the statement (for error messages).
    at: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Splits a statement into tokens; `Err(offset)` where a quote is not closed.
fn tokenize(sql: &str) -> Result<Vec<Token>, usize> {
    let mut out = Vec::new();
    let mut it = sql.char_indices().peekable();
    // After `@`, an unquoted host name may hold dots and dashes (`bob@db-1.example.com`,
    // `bob@127.0.0.1`), as in MySQL's lexer.
    let mut host_next = false;
    while let Some(&(at, c)) = it.peek() {
        if c.is_whitespace() {
            it.next();
            continue;
        }
        let after_at = std::mem::take(&mut host_next);
        if c == '\'' || c == '"' || c == '`' {
            it.next();
            let mut s = String::new();
            let mut closed = false;
            while let Some((_, ch)) = it.next() {
                if ch == c {
                    // A doubled quote stands for itself.
                    if it.peek().map(|x| x.1) == Some(c) {
                        it.next();
                        s.push(c);
                        continue;
                    }
                    closed = true;
                    break;
                }
                if ch == '\\' && c != '`' {
                    let Some((_, e)) = it.next() else { break };
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        'b' => '\u{8}',
                        'Z' => '\u{1a}',
                        other => other,
                    });
                    continue;
                }
                s.push(ch);
            }
            if !closed {
                return Err(at);
            }
            out.push(Token {
                tok: if c == '`' { Tok::Ident(s) } else { Tok::Str(s) },
                at,
            });
        } else if is_word_char(c) || (after_at && matches!(c, '.' | '-')) {
            let mut w = String::new();
            while let Some(&(_, ch)) = it.peek() {
                if is_word_char(ch) || (after_at && matches!(ch, '.' | '-')) {
                    w.push(ch);
                    it.next();
                } else {
                    break;
                }
            }
            out.push(Token {
                tok: Tok::Word(w),
                at,
            });
        } else {
            it.next();
            host_next = c == '@';
            out.push(Token {
                tok: Tok::Punct(c),
                at,
            });
        }
    }
    Ok(out)
}

// ---- Parsing -------------------------------------------------------------------------------

struct Parser<'a> {
    sql: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// The statement, for error messages (`CREATE USER`).
    construct: &'static str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(w)) if w.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.is_kw(kw);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let yes = self.peek() == Some(&Tok::Punct(c));
        if yes {
            self.pos += 1;
        }
        yes
    }

    /// 1064 quoting the statement from the current token, as MySQL does, followed by what
    /// was expected there.
    fn error(&self, expected: &str) -> SqlError {
        let at = self.toks.get(self.pos).map_or(self.sql.len(), |t| t.at);
        let line = self.sql[..at].matches('\n').count() as u64 + 1;
        let e = SqlError::syntax(&self.sql[at..], line);
        SqlError::of(
            ErrorKind::ParseError,
            format!("{} ({}: expected {expected})", e.message(), self.construct),
        )
    }

    fn expect_kw(&mut self, kw: &str) -> Result<(), SqlError> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.error(kw))
        }
    }

    /// A name: an unquoted word or a quoted string or identifier.
    fn name(&mut self, what: &str) -> Result<String, SqlError> {
        match self.peek() {
            Some(Tok::Word(w) | Tok::Str(w) | Tok::Ident(w)) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => Err(self.error(what)),
        }
    }

    fn string(&mut self, what: &str) -> Result<String, SqlError> {
        match self.peek() {
            Some(Tok::Str(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => Err(self.error(what)),
        }
    }

    fn user(&mut self) -> Result<UserName, SqlError> {
        if self.eat_kw("CURRENT_USER") {
            if self.eat_punct('(') && !self.eat_punct(')') {
                return Err(self.error("')'"));
            }
            return Ok(UserName::Current);
        }
        let user = self.name("a user name")?;
        let host = if self.eat_punct('@') {
            // An unquoted host name follows `@` directly, as in MySQL's lexer; otherwise
            // `'bob'@ IDENTIFIED BY 'x'` would name a host IDENTIFIED.
            let at = self.toks[self.pos - 1].at;
            if matches!(self.peek(), Some(Tok::Word(_)))
                && self.toks.get(self.pos).map(|t| t.at) != Some(at + 1)
            {
                return Err(self.error("a host name right after '@'"));
            }
            self.name("a host name after '@'")?
        } else {
            "%".to_string()
        };
        check_lengths(&user, &host)?;
        Ok(UserName::Named {
            user,
            host: accounts::normalize_host(&host),
        })
    }

    fn users(&mut self) -> Result<Vec<UserName>, SqlError> {
        let mut v = vec![self.user()?];
        while self.eat_punct(',') {
            v.push(self.user()?);
        }
        Ok(v)
    }

    /// `IDENTIFIED BY 'pw' | IDENTIFIED WITH plugin [BY 'pw']`, if present.
    fn auth(&mut self) -> Result<Option<Auth>, SqlError> {
        if !self.eat_kw("IDENTIFIED") {
            return Ok(None);
        }
        let plugin = if self.eat_kw("WITH") {
            let p = self.name("an authentication plugin name")?;
            if !self.is_kw("BY") {
                if self.is_kw("AS") {
                    return Err(SqlError::unsupported(&format!(
                        "{} ... IDENTIFIED WITH ... AS (a stored hash); use BY 'password'",
                        self.construct
                    )));
                }
                return Ok(Some(Auth {
                    plugin: Some(p),
                    password: String::new(),
                }));
            }
            Some(p)
        } else if self.is_kw("BY") {
            None
        } else {
            return Err(self.error("BY or WITH"));
        };
        self.expect_kw("BY")?;
        if self.is_kw("PASSWORD") || self.is_kw("RANDOM") {
            return Err(SqlError::unsupported(&format!(
                "{} ... IDENTIFIED BY PASSWORD/RANDOM PASSWORD",
                self.construct
            )));
        }
        let password = self.string("a quoted password")?;
        Ok(Some(Auth { plugin, password }))
    }

    fn users_with_auth(&mut self) -> Result<Vec<(UserName, Option<Auth>)>, SqlError> {
        let mut v = Vec::new();
        loop {
            let u = self.user()?;
            let a = self.auth()?;
            v.push((u, a));
            if !self.eat_punct(',') {
                return Ok(v);
            }
        }
    }

    /// The end of the statement: nothing, or `;` and nothing. Account options MySQL has
    /// get 1235, anything else 1064.
    fn end(&mut self) -> Result<(), SqlError> {
        const OPTIONS: &[&str] = &[
            "REQUIRE",
            "WITH",
            "PASSWORD",
            "ACCOUNT",
            "DEFAULT",
            "COMMENT",
            "ATTRIBUTE",
            "FAILED_LOGIN_ATTEMPTS",
            "PASSWORD_LOCK_TIME",
        ];
        if let Some(Tok::Word(w)) = self.peek() {
            if OPTIONS.iter().any(|o| w.eq_ignore_ascii_case(o)) {
                return Err(SqlError::unsupported(&format!(
                    "{} ... {}",
                    self.construct,
                    w.to_ascii_uppercase()
                )));
            }
        }
        self.eat_punct(';');
        if self.pos < self.toks.len() {
            return Err(self.error("the end of the statement"));
        }
        Ok(())
    }
}

/// MySQL's ER_WRONG_STRING_LENGTH (1470) for over-long names; NUL is refused too, since it
/// separates user from host in the catalog key.
fn check_lengths(user: &str, host: &str) -> Result<(), SqlError> {
    for (v, what, max) in [
        (user, "user name", USER_NAME_MAX),
        (host, "host name", HOST_NAME_MAX),
    ] {
        if v.chars().count() > max {
            return Err(SqlError::of(
                ErrorKind::WrongStringLength,
                format!("String '{v}' is too long for {what} (should be no longer than {max})"),
            ));
        }
        if v.contains('\0') {
            return Err(SqlError::of(
                ErrorKind::ParseError,
                format!("A {what} cannot contain the NUL character"),
            ));
        }
    }
    Ok(())
}

/// Whether `sql` starts with `word` (ASCII, any case) followed by a non-word character.
fn starts_with_word(sql: &str, word: &str) -> bool {
    sql.get(..word.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(word))
        && !sql[word.len()..].starts_with(is_word_char)
}

/// Parses an account statement; `None` when `sql` is not one (it goes to the SQL parser).
pub(crate) fn parse(sql: &str) -> Option<Result<UserStmt, SqlError>> {
    let t = sql.trim_start();
    // Cheap test first: this runs before every statement.
    if !["CREATE", "ALTER", "DROP", "SET", "GRANT", "REVOKE", "FLUSH"]
        .iter()
        .any(|w| starts_with_word(t, w))
    {
        return None;
    }
    let toks = match tokenize(sql) {
        Ok(t) => t,
        // An unclosed quote: let the SQL parser report it unless this is ours.
        Err(at) => {
            let head: Vec<String> = sql
                .split_whitespace()
                .take(2)
                .map(|w| w.to_ascii_uppercase())
                .collect();
            let ours = matches!(
                head.iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .as_slice(),
                ["CREATE" | "ALTER" | "DROP", "USER"] | ["SET", "PASSWORD"] | ["GRANT", _]
            );
            return ours.then(|| Err(SqlError::syntax(&sql[at..], 1)));
        }
    };
    let word = |i: usize| match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Word(w)) => w.to_ascii_uppercase(),
        _ => String::new(),
    };
    let (first, second) = (word(0), word(1));
    let construct: &'static str = match (first.as_str(), second.as_str()) {
        ("CREATE", "USER") => "CREATE USER",
        ("ALTER", "USER") => "ALTER USER",
        ("DROP", "USER") => "DROP USER",
        ("SET", "PASSWORD") => "SET PASSWORD",
        ("GRANT", _) => "GRANT",
        ("REVOKE", _) => {
            return Some(Err(SqlError::unsupported(
                "REVOKE (zipdb has no privilege system: every account may do everything)",
            )))
        }
        ("FLUSH", _) => return Some(Ok(UserStmt::Flush)),
        _ => return None,
    };
    let mut p = Parser {
        sql,
        toks,
        pos: 2,
        construct,
    };
    Some(parse_body(&mut p))
}

fn parse_body(p: &mut Parser<'_>) -> Result<UserStmt, SqlError> {
    let stmt = match p.construct {
        "CREATE USER" => {
            let if_not_exists = if p.eat_kw("IF") {
                p.expect_kw("NOT")?;
                p.expect_kw("EXISTS")?;
                true
            } else {
                false
            };
            UserStmt::Create {
                if_not_exists,
                users: p.users_with_auth()?,
            }
        }
        "ALTER USER" => {
            let if_exists = if p.eat_kw("IF") {
                p.expect_kw("EXISTS")?;
                true
            } else {
                false
            };
            UserStmt::Alter {
                if_exists,
                users: p.users_with_auth()?,
            }
        }
        "DROP USER" => {
            let if_exists = if p.eat_kw("IF") {
                p.expect_kw("EXISTS")?;
                true
            } else {
                false
            };
            UserStmt::Drop {
                if_exists,
                users: p.users()?,
            }
        }
        "SET PASSWORD" => {
            let user = if p.eat_kw("FOR") {
                Some(p.user()?)
            } else {
                None
            };
            if !p.eat_punct('=') {
                return Err(p.error("'='"));
            }
            // `PASSWORD('pw')`, the pre-8.0 spelling, means the same.
            let password = if p.eat_kw("PASSWORD") {
                if !p.eat_punct('(') {
                    return Err(p.error("'('"));
                }
                let s = p.string("a quoted password")?;
                if !p.eat_punct(')') {
                    return Err(p.error("')'"));
                }
                s
            } else {
                p.string("a quoted password")?
            };
            UserStmt::SetPassword { user, password }
        }
        _ => {
            // GRANT: only ALL [PRIVILEGES] ON <anything> TO users.
            p.pos = 1;
            if !p.eat_kw("ALL") {
                return Err(SqlError::unsupported(
                    "GRANT of anything but ALL PRIVILEGES (zipdb has no privilege system: \
                     every account may do everything)",
                ));
            }
            p.eat_kw("PRIVILEGES");
            p.expect_kw("ON")?;
            p.eat_kw("TABLE");
            grant_target(p)?;
            p.expect_kw("TO")?;
            let users = p.users()?;
            if p.eat_kw("WITH") {
                p.expect_kw("GRANT")?;
                p.expect_kw("OPTION")?;
            }
            UserStmt::GrantAll { users }
        }
    };
    p.end()?;
    Ok(stmt)
}

/// `* | *.* | db.* | db.table | table`.
fn grant_target(p: &mut Parser<'_>) -> Result<(), SqlError> {
    let part = |p: &mut Parser<'_>| -> Result<(), SqlError> {
        if p.eat_punct('*') {
            return Ok(());
        }
        p.name("'*', a database or a table").map(|_| ())
    };
    part(p)?;
    if p.eat_punct('.') {
        part(p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(user: &str, host: &str) -> UserName {
        UserName::Named {
            user: user.into(),
            host: host.into(),
        }
    }

    fn ok(sql: &str) -> UserStmt {
        match parse(sql) {
            Some(Ok(s)) => s,
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn err(sql: &str) -> SqlError {
        match parse(sql) {
            Some(Err(e)) => e,
            other => panic!("{sql}: expected an error, got {other:?}"),
        }
    }

    #[test]
    fn create_user_forms_parse() {
        assert_eq!(
            ok("CREATE USER 'bob'@'localhost' IDENTIFIED BY 'pw'"),
            UserStmt::Create {
                if_not_exists: false,
                users: vec![(
                    named("bob", "localhost"),
                    Some(Auth {
                        plugin: None,
                        password: "pw".into()
                    })
                )]
            }
        );
        assert_eq!(
            ok("create user if not exists bob, `al ice`@\"10.0.0.%\" identified with caching_sha2_password by 'it''s', carol@db-1.Example.com identified with 'mysql_native_password';"),
            UserStmt::Create {
                if_not_exists: true,
                users: vec![
                    (named("bob", "%"), None),
                    (
                        named("al ice", "10.0.0.%"),
                        Some(Auth {
                            plugin: Some("caching_sha2_password".into()),
                            password: "it's".into()
                        })
                    ),
                    (
                        named("carol", "db-1.example.com"),
                        Some(Auth {
                            plugin: Some("mysql_native_password".into()),
                            password: String::new()
                        })
                    ),
                ]
            }
        );
        // Escapes in passwords, unquoted IP hosts, an empty host meaning '%'.
        assert_eq!(
            ok(r"CREATE USER u@127.0.0.1 IDENTIFIED BY 'a\\b\'c', v@''"),
            UserStmt::Create {
                if_not_exists: false,
                users: vec![
                    (
                        named("u", "127.0.0.1"),
                        Some(Auth {
                            plugin: None,
                            password: r"a\b'c".into()
                        })
                    ),
                    (named("v", "%"), None),
                ]
            }
        );
    }

    #[test]
    fn alter_drop_set_password_and_grant_parse() {
        assert_eq!(
            ok("ALTER USER IF EXISTS 'bob'@'%' IDENTIFIED WITH caching_sha2_password BY 'x'"),
            UserStmt::Alter {
                if_exists: true,
                users: vec![(
                    named("bob", "%"),
                    Some(Auth {
                        plugin: Some("caching_sha2_password".into()),
                        password: "x".into()
                    })
                )]
            }
        );
        assert_eq!(
            ok("ALTER USER CURRENT_USER() IDENTIFIED BY 'y'"),
            UserStmt::Alter {
                if_exists: false,
                users: vec![(
                    UserName::Current,
                    Some(Auth {
                        plugin: None,
                        password: "y".into()
                    })
                )]
            }
        );
        assert_eq!(
            ok("DROP USER IF EXISTS a, 'b'@'LOCALHOST'"),
            UserStmt::Drop {
                if_exists: true,
                users: vec![named("a", "%"), named("b", "localhost")]
            }
        );
        assert_eq!(
            ok("SET PASSWORD FOR 'a'@'h' = 'pw'"),
            UserStmt::SetPassword {
                user: Some(named("a", "h")),
                password: "pw".into()
            }
        );
        assert_eq!(
            ok("set password = PASSWORD('pw')"),
            UserStmt::SetPassword {
                user: None,
                password: "pw".into()
            }
        );
        assert_eq!(
            ok("GRANT ALL PRIVILEGES ON *.* TO 'a'@'%', b WITH GRANT OPTION"),
            UserStmt::GrantAll {
                users: vec![named("a", "%"), named("b", "%")]
            }
        );
        assert_eq!(
            ok("grant all on sbtest.* to sbtest@localhost"),
            UserStmt::GrantAll {
                users: vec![named("sbtest", "localhost")]
            }
        );
        assert_eq!(ok("FLUSH PRIVILEGES"), UserStmt::Flush);
    }

    #[test]
    fn other_statements_are_left_to_the_sql_parser() {
        for sql in [
            "SELECT 1",
            "CREATE TABLE t (a int)",
            "DROP TABLE users",
            "SET autocommit = 0",
            "SET @password = 1",
            "createuser",
            "ALTER TABLE t ADD c int",
        ] {
            assert!(parse(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn garbage_gets_1064_naming_the_construct() {
        let e = err("CREATE USER 'bob'@ IDENTIFIED BY 'x'");
        assert_eq!(e.code(), 1064);
        assert!(
            e.message().contains("near 'IDENTIFIED BY 'x''"),
            "{}",
            e.message()
        );
        assert!(e.message().contains("CREATE USER"), "{}", e.message());
        for sql in [
            "CREATE USER",
            "CREATE USER bob IDENTIFIED 'x'",
            "CREATE USER bob IDENTIFIED BY x",
            "CREATE USER bob IDENTIFIED BY 'x' garbage",
            "CREATE USER IF EXISTS bob",
            "CREATE USER 'bob",
            "DROP USER",
            "DROP USER a,",
            "ALTER USER IF NOT EXISTS bob",
            "SET PASSWORD 'x'",
            "SET PASSWORD FOR bob = x",
            "GRANT ALL ON *.* bob",
            "CREATE USER a; SELECT 1",
        ] {
            let e = err(sql);
            assert_eq!(e.code(), 1064, "{sql}: {}", e.message());
        }
    }

    #[test]
    fn unsupported_options_and_grants_get_1235() {
        for sql in [
            "CREATE USER bob IDENTIFIED BY 'x' ACCOUNT LOCK",
            "CREATE USER bob REQUIRE SSL",
            "ALTER USER bob PASSWORD EXPIRE",
            "CREATE USER bob IDENTIFIED WITH mysql_native_password AS '*ABC'",
            "CREATE USER bob IDENTIFIED BY RANDOM PASSWORD",
            "GRANT SELECT ON *.* TO bob",
            "REVOKE ALL ON *.* FROM bob",
        ] {
            assert_eq!(err(sql).code(), 1235, "{sql}");
        }
    }

    #[test]
    fn over_long_names_get_1470() {
        let long = "u".repeat(33);
        assert_eq!(err(&format!("CREATE USER '{long}'")).code(), 1470);
        assert!(parse(&format!("CREATE USER '{}'", "u".repeat(32))).is_some_and(|r| r.is_ok()));
        let host = "h".repeat(256);
        assert_eq!(err(&format!("CREATE USER u@'{host}'")).code(), 1470);
    }
}
