//! The grammar of account statements: CREATE USER, ALTER USER, DROP USER, SET PASSWORD,
//! GRANT ALL, and the no-op FLUSH (admin/user.rs runs them).
//!
//! The parser's MySQL grammar does not have them, so they are a grammar here on sqlparser's
//! `Parser` over the statement's tokens ([`crate::front::grammar`], shared with SHOW).
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
//! Syntax errors are 1064, quoted from where reading stopped and naming the construct;
//! over-long names 1470. Account options MySQL
//! has and zipdb does not (REQUIRE, PASSWORD EXPIRE, ACCOUNT LOCK, ...), every GRANT but
//! GRANT ALL, and REVOKE are refused with 1235 rather than ignored.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan};

use crate::catalog::accounts::{self, HOST_NAME_MAX, USER_NAME_MAX};
use crate::error::{ErrorKind, SqlError};
use crate::front::grammar::{self, Grammar};

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

/// The statement's tokens with each account name's `@host` as MySQL's lexer reads it: the
/// MySQL dialect reads `@` as a part of a word (`bob@localhost` is one word, `'bob'@localhost`
/// a string then the word `@localhost`), and an unquoted host is several tokens
/// (`127.0.0.1`, `db-1.example.com`). Here `@` is always its own token, and an unquoted host
/// right after it one backticked word; an unquoted word later is not a host
/// (`'bob'@ IDENTIFIED BY 'x'` names no host IDENTIFIED).
fn split_hosts(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut it = tokens.into_iter().peekable();
    while let Some(t) = it.next() {
        // The host's text so far (the word's end after `@`) and where that text ends.
        let (mut host, end) = match &t.token {
            Token::Word(w) if w.quote_style.is_none() && w.value.contains('@') => {
                // Each piece keeps its own place in the text, so that an error quotes from
                // it (`u@a@b` is wrong from the second `@`).
                let mut at = t.span.start;
                let mut pieces = w.value.split('@').peekable();
                let user = pieces.next().unwrap_or_default();
                if !user.is_empty() {
                    out.push(piece(Token::make_word(user, None), at));
                }
                at.column += user.chars().count() as u64;
                let mut last = String::new();
                while let Some(p) = pieces.next() {
                    out.push(piece(Token::AtSign, at));
                    at.column += 1;
                    if pieces.peek().is_none() {
                        last = p.to_string();
                    } else if !p.is_empty() {
                        out.push(piece(Token::make_word(p, Some('`')), at));
                    }
                    at.column += p.chars().count() as u64;
                }
                (last, at)
            }
            Token::AtSign => {
                let mut at = t.span.start;
                out.push(t);
                at.column += 1;
                (String::new(), at)
            }
            _ => {
                out.push(t);
                continue;
            }
        };
        // The host's first piece may start before `at` (`u@db-1`: `db` is in the word).
        let start = Location {
            line: end.line,
            column: end.column - host.chars().count() as u64,
        };
        while let Some(next) = it.next_if(|n| match &n.token {
            Token::Word(w) => w.quote_style.is_none() && !w.value.contains('@'),
            Token::Number(..) | Token::Period | Token::Minus => true,
            _ => false,
        }) {
            host.push_str(&next.token.to_string());
        }
        if !host.is_empty() {
            out.push(piece(Token::make_word(&host, Some('`')), start));
        }
    }
    out
}

/// A token that starts at `at`.
fn piece(token: Token, at: Location) -> TokenWithSpan {
    TokenWithSpan {
        token,
        span: Span::new(at, at),
    }
}

// ---- Parsing -------------------------------------------------------------------------------

/// The account forms, on the shared grammar's helpers.
impl Grammar<'_, '_> {
    /// The statement being read; `parse` always sets it.
    fn construct(&self) -> &'static str {
        self.construct.unwrap_or_default()
    }

    fn punct(&mut self, t: Token) -> bool {
        self.p.consume_token(&t)
    }

    /// A name: an unquoted word or a quoted string or identifier.
    fn account_name(&mut self, what: &str) -> Result<String, SqlError> {
        let v = match &self.p.peek_token_ref().token {
            Token::Word(w) => w.value.clone(),
            Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => s.clone(),
            Token::Number(n, _) => n.clone(),
            _ => return self.fail(what),
        };
        self.p.next_token();
        Ok(v)
    }

    fn password(&mut self) -> Result<String, SqlError> {
        match &self.p.peek_token_ref().token {
            Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) => self.string(),
            _ => self.fail("a quoted password"),
        }
    }

    fn user(&mut self) -> Result<UserName, SqlError> {
        if self.word("CURRENT_USER") {
            if self.punct(Token::LParen) && !self.punct(Token::RParen) {
                return self.fail("')'");
            }
            return Ok(UserName::Current);
        }
        if self.p.peek_token_ref().token == Token::AtSign {
            return self.fail("a user name");
        }
        let user = self.account_name("a user name")?;
        let host = if self.punct(Token::AtSign) {
            // split_hosts made an unquoted host right after `@` a backticked word.
            if self.peek_word().is_some() {
                return self.fail("a host name right after '@'");
            }
            self.account_name("a host name after '@'")?
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
        while self.punct(Token::Comma) {
            v.push(self.user()?);
        }
        Ok(v)
    }

    /// `IDENTIFIED BY 'pw' | IDENTIFIED WITH plugin [BY 'pw']`, if present.
    fn auth(&mut self) -> Result<Option<Auth>, SqlError> {
        if !self.word("IDENTIFIED") {
            return Ok(None);
        }
        let plugin = if self.word("WITH") {
            let p = self.account_name("an authentication plugin name")?;
            if self.peek_word().as_deref() != Some("BY") {
                if self.peek_word().as_deref() == Some("AS") {
                    return Err(SqlError::unsupported(&format!(
                        "{} ... IDENTIFIED WITH ... AS (a stored hash); use BY 'password'",
                        self.construct()
                    )));
                }
                return Ok(Some(Auth {
                    plugin: Some(p),
                    password: String::new(),
                }));
            }
            Some(p)
        } else if self.peek_word().as_deref() == Some("BY") {
            None
        } else {
            return self.fail("BY or WITH");
        };
        self.expect_word("BY")?;
        if matches!(self.peek_word().as_deref(), Some("PASSWORD" | "RANDOM")) {
            return Err(SqlError::unsupported(&format!(
                "{} ... IDENTIFIED BY PASSWORD/RANDOM PASSWORD",
                self.construct()
            )));
        }
        let password = self.password()?;
        Ok(Some(Auth { plugin, password }))
    }

    fn users_with_auth(&mut self) -> Result<Vec<(UserName, Option<Auth>)>, SqlError> {
        let mut v = Vec::new();
        loop {
            let u = self.user()?;
            let a = self.auth()?;
            v.push((u, a));
            if !self.punct(Token::Comma) {
                return Ok(v);
            }
        }
    }

    /// The end of the statement. Account options MySQL has get 1235, anything else 1064.
    fn account_end(&mut self) -> Result<(), SqlError> {
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
        if let Some(w) = self.peek_word() {
            if OPTIONS.contains(&w.as_str()) {
                return Err(SqlError::unsupported(&format!(
                    "{} ... {w}",
                    self.construct()
                )));
            }
        }
        // One `;` may end the statement before more text, which is then quoted alone.
        if self.punct(Token::SemiColon) || self.p.peek_token_ref().token != Token::EOF {
            return self.fail("the end of the statement");
        }
        Ok(())
    }

    /// `[IF [NOT] EXISTS]`, as `not` says.
    fn if_exists(&mut self, not: bool) -> Result<bool, SqlError> {
        if !self.p.parse_keyword(Keyword::IF) {
            return Ok(false);
        }
        if not {
            self.expect_word("NOT")?;
        }
        self.expect_word("EXISTS")?;
        Ok(true)
    }

    fn account_statement(&mut self) -> Result<UserStmt, SqlError> {
        let construct = self.construct();
        for w in construct.split(' ') {
            self.expect_word(w)?;
        }
        let stmt = match construct {
            "CREATE USER" => UserStmt::Create {
                if_not_exists: self.if_exists(true)?,
                users: self.users_with_auth()?,
            },
            "ALTER USER" => UserStmt::Alter {
                if_exists: self.if_exists(false)?,
                users: self.users_with_auth()?,
            },
            "DROP USER" => UserStmt::Drop {
                if_exists: self.if_exists(false)?,
                users: self.users()?,
            },
            "SET PASSWORD" => {
                let user = if self.word("FOR") {
                    Some(self.user()?)
                } else {
                    None
                };
                if !self.punct(Token::Eq) {
                    return self.fail("'='");
                }
                // `PASSWORD('pw')`, the pre-8.0 spelling, means the same.
                let password = if self.word("PASSWORD") {
                    if !self.punct(Token::LParen) {
                        return self.fail("'('");
                    }
                    let s = self.password()?;
                    if !self.punct(Token::RParen) {
                        return self.fail("')'");
                    }
                    s
                } else {
                    self.password()?
                };
                UserStmt::SetPassword { user, password }
            }
            _ => {
                // GRANT: only ALL [PRIVILEGES] ON <anything> TO users.
                if !self.word("ALL") {
                    return Err(SqlError::unsupported(
                        "GRANT of anything but ALL PRIVILEGES (zipdb has no privilege system: \
                         every account may do everything)",
                    ));
                }
                self.word("PRIVILEGES");
                self.expect_word("ON")?;
                self.word("TABLE");
                self.grant_target()?;
                self.expect_word("TO")?;
                let users = self.users()?;
                if self.word("WITH") {
                    self.expect_word("GRANT")?;
                    self.expect_word("OPTION")?;
                }
                UserStmt::GrantAll { users }
            }
        };
        self.account_end()?;
        Ok(stmt)
    }

    /// `* | *.* | db.* | db.table | table`.
    fn grant_target(&mut self) -> Result<(), SqlError> {
        let part = |g: &mut Self| -> Result<(), SqlError> {
            if g.punct(Token::Mul) {
                return Ok(());
            }
            g.account_name("'*', a database or a table").map(|_| ())
        };
        part(self)?;
        if self.punct(Token::Period) {
            part(self)?;
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

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Whether `sql` starts with `word` (ASCII, any case) followed by a non-word character.
fn starts_with_word(sql: &str, word: &str) -> bool {
    sql.get(..word.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(word))
        && !sql[word.len()..].starts_with(is_word_char)
}

/// The account statement a text starts with, from its first words (`None`: not one).
fn construct_of(first: &str, second: &str) -> Option<&'static str> {
    Some(match (first, second) {
        ("CREATE", "USER") => "CREATE USER",
        ("ALTER", "USER") => "ALTER USER",
        ("DROP", "USER") => "DROP USER",
        ("SET", "PASSWORD") => "SET PASSWORD",
        ("GRANT", _) => "GRANT",
        ("REVOKE", _) => "REVOKE",
        ("FLUSH", _) => "FLUSH",
        _ => return None,
    })
}

/// Parses an account statement; `None` when `sql` is not one (it goes to the SQL parser).
///
/// What bounds it: the text (at most a packet) is tokenized once, and `@host`s split in one
/// pass; every loop of the grammar consumes a token, and none recurses, so time and memory
/// are linear in the text (a list of 100,000 users is 100,000 names, read once).
pub(crate) fn parse(sql: &str) -> Option<Result<UserStmt, SqlError>> {
    let t = sql.trim_start();
    // Cheap tests first: this runs before every statement, and a second word that is plainly
    // not USER / PASSWORD (`CREATE TABLE`, `SET autocommit`) needs no tokens.
    let first = ["CREATE", "ALTER", "DROP", "SET", "GRANT", "REVOKE", "FLUSH"]
        .into_iter()
        .find(|w| starts_with_word(t, w))?;
    let rest = t[first.len()..].trim_start();
    let second: String = rest.chars().take_while(|c| is_word_char(*c)).collect();
    if !second.is_empty() && construct_of(first, &second.to_ascii_uppercase()).is_none() {
        return None;
    }
    let tokens = match grammar::tokens(sql) {
        Ok(t) => t,
        // An unclosed quote: let the SQL parser report it unless this is ours.
        Err(e) => {
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
            return ours.then_some(Err(e));
        }
    };
    let mut words = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .map(|t| match &t.token {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
            _ => String::new(),
        });
    let (first, second) = (words.next()?, words.next().unwrap_or_default());
    let construct = construct_of(&first, &second)?;
    match construct {
        "REVOKE" => {
            return Some(Err(SqlError::unsupported(
                "REVOKE (zipdb has no privilege system: every account may do everything)",
            )))
        }
        "FLUSH" => return Some(Ok(UserStmt::Flush)),
        _ => {}
    }
    let mut p = grammar::parser(split_hosts(tokens));
    let mut g = Grammar::new(&mut p, sql);
    g.construct = Some(construct);
    Some(g.account_statement())
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

    /// The `near '...'` of a 1064 and its line.
    fn near(sql: &str) -> (String, String) {
        let e = err(sql);
        assert_eq!(e.code(), 1064, "{sql}: {}", e.message());
        let m = e.message();
        let start = m.find("near '").expect("near") + "near '".len();
        let end = m.rfind("' at line ").expect("at line");
        let line: String = m[end + "' at line ".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        (m[start..end].to_string(), line)
    }

    #[test]
    fn malformed_is_1064_quoted_from_the_failure() {
        for (sql, quoted, line) in [
            // Quotes left open: quoted from the quote.
            ("CREATE USER 'bob", "'bob", "1"),
            ("CREATE USER \"bob", "\"bob", "1"),
            ("CREATE USER `bob", "`bob", "1"),
            ("CREATE USER bob IDENTIFIED BY 'x", "'x", "1"),
            ("SET PASSWORD FOR bob@'h = 'x'", "'", "1"),
            // No host after `@`, or no user before it.
            (
                "CREATE USER 'bob'@ IDENTIFIED BY 'x'",
                "IDENTIFIED BY 'x'",
                "1",
            ),
            ("CREATE USER bob@ , c", ", c", "1"),
            ("CREATE USER @h", "@h", "1"),
            ("DROP USER 'a'@", "", "1"),
            ("CREATE USER u@a@b", "@b", "1"),
            ("CREATE USER u@10.0.0.%", "%", "1"),
            // Trailing junk, a second statement, a list that stops.
            ("CREATE USER bob IDENTIFIED BY 'x' garbage", "garbage", "1"),
            ("DROP USER a b", "b", "1"),
            ("DROP USER a,", "", "1"),
            ("DROP USER a,,b", ",b", "1"),
            ("GRANT ALL ON *.* TO a junk", "junk", "1"),
            ("GRANT ALL ON *.* TO a WITH GRANT", "", "1"),
            ("CREATE USER a; SELECT 1", "SELECT 1", "1"),
            ("SET PASSWORD = PASSWORD('pw'", "", "1"),
            ("SET PASSWORD FOR bob = x", "x", "1"),
            (
                "ALTER USER CURRENT_USER( IDENTIFIED BY 'x'",
                "IDENTIFIED BY 'x'",
                "1",
            ),
            ("CREATE USER bob\n  IDENTIFIED BY\n  x", "x", "3"),
        ] {
            assert_eq!(near(sql), (quoted.to_string(), line.to_string()), "{sql}");
        }
        // Not an account statement when the quote is left open before USER is known.
        assert!(parse("CREATE 'x").is_none());
    }

    #[test]
    fn comments_and_spacing_around_names() {
        assert_eq!(
            ok("CREATE /* c */ USER u @h -- trailing\n"),
            UserStmt::Create {
                if_not_exists: false,
                users: vec![(named("u", "h"), None)]
            }
        );
        assert_eq!(
            ok("DROP USER 'u' @ 'h', v@`x-1`, w@h-2.example.com # c"),
            UserStmt::Drop {
                if_exists: false,
                users: vec![
                    named("u", "h"),
                    named("v", "x-1"),
                    named("w", "h-2.example.com")
                ]
            }
        );
        // MySQL keeps the backslash of `\%` and `\_` in a string.
        assert_eq!(
            ok(r"SET PASSWORD = 'a\%b\_c'"),
            UserStmt::SetPassword {
                user: None,
                password: r"a\%b\_c".into()
            }
        );
    }

    #[test]
    fn hostile_texts_are_bounded() {
        // A list is read once, one token at a time: 100,000 users is linear work.
        let names: Vec<String> = (0..100_000).map(|i| format!("u{i}@h{i}")).collect();
        let sql = format!("DROP USER IF EXISTS {}", names.join(", "));
        match ok(&sql) {
            UserStmt::Drop { users, .. } => {
                assert_eq!(users.len(), 100_000);
                assert_eq!(users[99_999], named("u99999", "h99999"));
            }
            other => panic!("{other:?}"),
        }
        // A list broken at its end fails there, after one pass.
        let broken = format!("DROP USER {},", vec!["a"; 100_000].join(","));
        assert_eq!(near(&broken), (String::new(), "1".to_string()));
        // A huge name is refused by its length, not read twice.
        let long = format!("CREATE USER `{}`", "x".repeat(1 << 20));
        assert_eq!(err(&long).code(), 1470);
        let semis = format!("FLUSH PRIVILEGES{}", ";".repeat(100_000));
        assert_eq!(ok(&semis), UserStmt::Flush);
        let ats = format!("CREATE USER u{}", "@".repeat(100_000));
        assert_eq!(err(&ats).code(), 1064);
    }
}
