//! Account statements: CREATE USER, ALTER USER, DROP USER, SET PASSWORD, GRANT ALL, and
//! the no-op FLUSH.
//!
//! The statements are parsed by front/account.rs, since the parser's MySQL grammar does not
//! have them; they run here.
//!
//! Errors and notes are MySQL 8's: 1396 (`Operation CREATE USER failed for 'u'@'h'`, naming
//! every account it failed for; nothing changes then), 1524 for an unknown plugin, 1064 for
//! anything else that does not parse, and with IF [NOT] EXISTS the notes 3163 (`Authorization
//! ID 'u'@'h' already exists.`) and 3162 (`... does not exist.`). Account options MySQL has
//! and zipdb does not (REQUIRE, PASSWORD EXPIRE, ACCOUNT LOCK, ...) are refused with 1235
//! rather than ignored, since ignoring them would leave an account more open than asked.
//!
//! There is no privilege system, so GRANT ALL grants nothing an account lacks; it is accepted
//! for existing accounts so that setup scripts run. Every other GRANT, and REVOKE, is refused
//! with 1235: pretending to restrict an account would be worse than saying it cannot.

use crate::catalog::accounts::{self, Account, Accounts, Plugin};
use crate::error::{ErrorKind, SqlError};
use crate::front::account::{UserName, UserStmt};
use crate::instance::session::Session;
use crate::types::result::Outcome;

/// Runs an account statement (front/account.rs parsed it).
pub(crate) fn run(s: &mut Session, stmt: UserStmt) -> Result<Outcome, SqlError> {
    s.clear_diag();
    execute(s, stmt)
}

fn plugin_named(name: &str) -> Result<Plugin, SqlError> {
    Plugin::from_name(name).ok_or_else(|| {
        SqlError::of(
            ErrorKind::PluginIsNotLoaded,
            format!("Plugin '{name}' is not loaded"),
        )
    })
}

fn resolve(s: &Session, u: &UserName) -> (String, String) {
    match u {
        UserName::Named { user, host } => (user.clone(), host.clone()),
        UserName::Current => (s.user.clone(), s.host.clone()),
    }
}

fn cannot_user(op: &str, failed: &[String]) -> SqlError {
    SqlError::of(
        ErrorKind::CannotUser,
        format!("Operation {op} failed for {}", failed.join(",")),
    )
}

/// 1819 (ER_NOT_VALID_PASSWORD) for an empty password while the server listens on a
/// non-loopback address: the account would be refused at the next start.
fn check_password_policy(s: &Session, user: &str, host: &str, pw: &str) -> Result<(), SqlError> {
    if pw.is_empty()
        && s.inst
            .network_exposed
            .load(std::sync::atomic::Ordering::Acquire)
    {
        return Err(SqlError::of(
            ErrorKind::NotValidPassword,
            format!(
                "Your password does not satisfy the current policy requirements: the server \
                 listens on a non-loopback address, so {} needs a password",
                accounts::quoted(user, host)
            ),
        ));
    }
    Ok(())
}

type Puts = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Writes the changed accounts (all of them while only the bootstrap account existed, which
/// was never written) in one synchronous transaction, then publishes the new set.
fn commit(s: &Session, mut next: Accounts, mut puts: Puts) -> Result<(), SqlError> {
    if !next.stored {
        puts = next
            .iter()
            .map(|a| (a.key(), Some(a.encode_value())))
            .collect();
    }
    if puts.is_empty() {
        return Ok(());
    }
    crate::ddl::write_catalog(s, &puts)?;
    next.stored = true;
    *s.inst.accounts.write() = next;
    Ok(())
}

fn execute(s: &mut Session, stmt: UserStmt) -> Result<Outcome, SqlError> {
    if stmt == UserStmt::Flush {
        return Ok(Outcome::done(0));
    }
    // Account statements commit the open transaction first, as MySQL's do.
    s.commit()?;
    let inst = s.inst.clone();
    let _ddl = inst.ddl.lock();
    let mut next = inst.accounts.read().clone();
    let mut puts: Puts = Vec::new();
    let mut notes = Vec::new();
    let mut failed = Vec::new();
    let put = |puts: &mut Puts, next: &mut Accounts, a: Account| {
        puts.push((a.key(), Some(a.encode_value())));
        next.put(a);
    };
    match stmt {
        UserStmt::Flush => {}
        UserStmt::Create {
            if_not_exists,
            users,
        } => {
            for (u, auth) in &users {
                let (user, host) = resolve(s, u);
                let auth = auth.clone().unwrap_or_default();
                let plugin = match &auth.plugin {
                    Some(n) => plugin_named(n)?,
                    None => Plugin::DEFAULT,
                };
                check_password_policy(s, &user, &host, &auth.password)?;
                if next.get(&user, &host).is_some() {
                    if if_not_exists {
                        notes.push((
                            ErrorKind::UserAlreadyExists,
                            format!(
                                "Authorization ID {} already exists.",
                                accounts::quoted(&user, &host)
                            ),
                        ));
                    } else {
                        failed.push(accounts::quoted(&user, &host));
                    }
                    continue;
                }
                let a = Account::new(&user, &host, plugin, auth.password.as_bytes());
                put(&mut puts, &mut next, a);
            }
            if !failed.is_empty() {
                return Err(cannot_user("CREATE USER", &failed));
            }
        }
        UserStmt::Alter { if_exists, users } => {
            for (u, auth) in &users {
                let (user, host) = resolve(s, u);
                let Some(cur) = next.get(&user, &host).cloned() else {
                    if if_exists {
                        notes.push((
                            ErrorKind::UserDoesNotExist,
                            format!(
                                "Authorization ID {} does not exist.",
                                accounts::quoted(&user, &host)
                            ),
                        ));
                    } else {
                        failed.push(accounts::quoted(&user, &host));
                    }
                    continue;
                };
                // ALTER USER without IDENTIFIED changes nothing zipdb keeps.
                let Some(auth) = auth else { continue };
                let plugin = match &auth.plugin {
                    Some(n) => plugin_named(n)?,
                    // Without WITH the account keeps its plugin, as in MySQL.
                    None => cur.plugin,
                };
                check_password_policy(s, &user, &host, &auth.password)?;
                let a = Account::new(&user, &host, plugin, auth.password.as_bytes());
                put(&mut puts, &mut next, a);
            }
            if !failed.is_empty() {
                return Err(cannot_user("ALTER USER", &failed));
            }
        }
        UserStmt::Drop { if_exists, users } => {
            for u in &users {
                let (user, host) = resolve(s, u);
                if next.remove(&user, &host).is_some() {
                    puts.push((accounts::key(&user, &host), None));
                } else if if_exists {
                    notes.push((
                        ErrorKind::UserDoesNotExist,
                        format!(
                            "Authorization ID {} does not exist.",
                            accounts::quoted(&user, &host)
                        ),
                    ));
                } else {
                    failed.push(accounts::quoted(&user, &host));
                }
            }
            if !failed.is_empty() {
                return Err(cannot_user("DROP USER", &failed));
            }
        }
        UserStmt::SetPassword { user, password } => {
            let (user, host) = resolve(s, user.as_ref().unwrap_or(&UserName::Current));
            let Some(cur) = next.get(&user, &host).cloned() else {
                return Err(SqlError::of(
                    ErrorKind::PasswordNoMatch,
                    "Can't find any matching row in the user table",
                ));
            };
            check_password_policy(s, &user, &host, &password)?;
            let a = Account::new(&user, &host, cur.plugin, password.as_bytes());
            put(&mut puts, &mut next, a);
        }
        UserStmt::GrantAll { users } => {
            for u in &users {
                let (user, host) = resolve(s, u);
                if next.get(&user, &host).is_none() {
                    // MySQL 8's answer: GRANT no longer creates accounts.
                    return Err(SqlError::of(
                        ErrorKind::CantCreateUserWithGrant,
                        "You are not allowed to create a user with GRANT",
                    ));
                }
            }
            // Every account already has every privilege: nothing to write.
            return Ok(Outcome::done(0));
        }
    }
    commit(s, next, puts)?;
    for (kind, msg) in notes {
        s.note(kind, msg);
    }
    Ok(Outcome::done(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    // ---- Executed against an instance -------------------------------------------------

    fn open(dir: &std::path::Path) -> (zipdb_engine::Database, std::sync::Arc<crate::Instance>) {
        crate::Instance::open_for_tests(dir)
    }

    fn run(s: &mut Session, sql: &str) -> Result<Outcome, SqlError> {
        s.query(sql).pop().expect("one result")
    }

    fn code(r: Result<Outcome, SqlError>) -> u16 {
        r.err().map_or(0, |e| e.code())
    }

    #[test]
    fn statements_change_accounts_durably() {
        let dir = std::env::temp_dir().join(format!("zipdb-users-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let peer = Some(std::net::IpAddr::from([10, 0, 0, 9]));
        let local = Some(std::net::IpAddr::from([127, 0, 0, 1]));
        {
            let (db, inst) = open(&dir);
            // A fresh data directory: root@localhost without a password, not yet written.
            assert!(inst.login_account("root", local).is_ok());
            let mut s = inst.session("root", 1);
            run(&mut s, "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw', carol IDENTIFIED WITH caching_sha2_password BY 'c'").unwrap();
            assert_eq!(code(run(&mut s, "CREATE USER bob")), 1396);
            let e = run(&mut s, "CREATE USER dave, bob, carol").unwrap_err();
            assert_eq!(
                e.message(),
                "Operation CREATE USER failed for 'bob'@'%','carol'@'%'"
            );
            // All or nothing: dave was not created.
            assert_eq!(code(run(&mut s, "DROP USER dave")), 1396);
            run(&mut s, "CREATE USER IF NOT EXISTS bob").unwrap();
            assert_eq!(s.warnings.len(), 1);
            assert_eq!(s.warnings[0].code, 3163);
            assert_eq!(
                s.warnings[0].message,
                "Authorization ID 'bob'@'%' already exists."
            );
            assert_eq!(
                code(run(
                    &mut s,
                    "CREATE USER eve IDENTIFIED WITH sha256_password BY 'x'"
                )),
                1524
            );
            let bob = inst.login_account("bob", peer).unwrap();
            assert_eq!(bob.plugin, Plugin::Native);
            assert_eq!(bob.verifier, Plugin::Native.verifier(b"pw"));
            let carol = inst.login_account("carol", peer).unwrap();
            assert_eq!(carol.plugin, Plugin::CachingSha2);
            // ALTER without WITH keeps the plugin; with WITH it changes.
            run(&mut s, "ALTER USER carol IDENTIFIED BY 'c2'").unwrap();
            let carol = inst.login_account("carol", peer).unwrap();
            assert_eq!(carol.plugin, Plugin::CachingSha2);
            assert_eq!(carol.verifier, Plugin::CachingSha2.verifier(b"c2"));
            run(
                &mut s,
                "ALTER USER bob IDENTIFIED WITH caching_sha2_password BY 'pw2'",
            )
            .unwrap();
            assert_eq!(
                inst.login_account("bob", peer).unwrap().plugin,
                Plugin::CachingSha2
            );
            assert_eq!(
                code(run(&mut s, "ALTER USER nobody IDENTIFIED BY 'x'")),
                1396
            );
            run(&mut s, "ALTER USER IF EXISTS nobody IDENTIFIED BY 'x'").unwrap();
            assert_eq!(s.warnings[0].code, 3162);
            run(&mut s, "SET PASSWORD FOR bob = 'pw3'").unwrap();
            assert_eq!(
                inst.login_account("bob", peer).unwrap().verifier,
                Plugin::CachingSha2.verifier(b"pw3")
            );
            // Without FOR: the session's own account (root@localhost here).
            run(&mut s, "SET PASSWORD = 'rootpw'").unwrap();
            assert!(inst.login_account("root", local).unwrap().has_password());
            assert_eq!(code(run(&mut s, "SET PASSWORD FOR nobody = 'x'")), 1133);
            run(&mut s, "GRANT ALL PRIVILEGES ON *.* TO bob").unwrap();
            assert_eq!(code(run(&mut s, "GRANT ALL ON *.* TO nobody")), 1410);
            run(&mut s, "CREATE USER gone@localhost").unwrap();
            run(&mut s, "DROP USER gone@localhost").unwrap();
            assert_eq!(code(run(&mut s, "DROP USER gone@localhost")), 1396);
            run(&mut s, "DROP USER IF EXISTS gone@localhost").unwrap();
            assert_eq!(s.warnings[0].code, 3162);
            // USER() names the session's account.
            s.set_account_host("%");
            match run(&mut s, "SELECT USER()").unwrap() {
                Outcome::Rows { rows, .. } => {
                    assert!(matches!(&rows[0][0], crate::Value::Str(u) if u == "root@%"))
                }
                other => panic!("{other:?}"),
            }
            drop(s);
            drop(inst);
            db.close().expect("close");
        }
        {
            // After a restart: the same accounts, the bootstrap root replaced by the stored one.
            let (db, inst) = open(&dir);
            let all: Vec<String> = inst.accounts().iter().map(|a| a.to_string()).collect();
            assert_eq!(all, ["'bob'@'%'", "'carol'@'%'", "'root'@'localhost'"]);
            let bob = inst.login_account("bob", peer).unwrap();
            assert_eq!(bob.verifier, Plugin::CachingSha2.verifier(b"pw3"));
            assert_eq!(
                inst.login_account("root", local).unwrap().verifier,
                Plugin::Native.verifier(b"rootpw")
            );
            // Exposed to the network: every account has a password, so that is allowed, and
            // from then on an empty password is refused.
            inst.require_passwords()
                .expect("all accounts have passwords");
            let mut s = inst.session("root", 1);
            assert_eq!(code(run(&mut s, "CREATE USER open")), 1819);
            assert_eq!(code(run(&mut s, "ALTER USER bob IDENTIFIED BY ''")), 1819);
            run(&mut s, "CREATE USER closed IDENTIFIED BY 'x'").unwrap();
            drop(s);
            drop(inst);
            db.close().expect("close");
        }
        {
            let (db, inst) = open(&dir);
            let mut s = inst.session("root", 1);
            run(&mut s, "CREATE USER open").unwrap();
            let open: Vec<String> = match inst.require_passwords() {
                Err(v) => v,
                Ok(()) => panic!("an account without a password was accepted"),
            };
            assert_eq!(open, ["'open'@'%'"]);
            drop(s);
            drop(inst);
            db.close().expect("close");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
