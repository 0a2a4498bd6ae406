//! `zipdb serve` as a real process: it starts on its defaults in a fresh folder, serves the
//! stock `mariadb` client, and shuts down cleanly on SIGTERM and SIGINT.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `zipdb serve`, on a port it chose itself (`--port 0`: no race with other tests
/// for a "free" port), with its stderr.
struct Proc {
    child: Child,
    stderr: BufReader<ChildStderr>,
    /// Everything read from stderr so far.
    log: String,
    port: u16,
}

fn spawn(dir: &Path) -> Proc {
    spawn_with(dir, &[])
}

/// [`spawn`] with more arguments.
fn spawn_with(dir: &Path, extra: &[&str]) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zipdb"))
        .args(["serve", "--port", "0", "--pool-mb", "16", "--data-dir"])
        .arg(dir)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    // The server announces its address once it is listening and its signal handler is set.
    let port = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "server exited before listening: {log}"
        );
        log.push_str(&line);
        if let Some(rest) = line
            .split("listening on 127.0.0.1:")
            .nth(1)
            .or_else(|| line.split("listening on 0.0.0.0:").nth(1))
        {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            break digits.parse().unwrap();
        }
    };
    Proc {
        child,
        stderr,
        log,
        port,
    }
}

impl Drop for Proc {
    /// A test that fails while the server runs must not leave it behind (a no-op after
    /// [`stop`], which has waited for it).
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0);
}

const SIGINT: i32 = libc::SIGINT;
const SIGTERM: i32 = libc::SIGTERM;

/// Signals the server, waits for it to exit successfully, returns all it printed.
fn stop(mut p: Proc, sig: i32) -> String {
    signal(&p.child, sig);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = p.child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    for line in (&mut p.stderr).lines() {
        p.log.push_str(&line.unwrap());
        p.log.push('\n');
    }
    assert!(status.success(), "exit {status:?}: {}", p.log);
    std::mem::take(&mut p.log)
}

#[test]
fn serve_starts_announces_itself_and_stops_cleanly_on_sigterm_and_sigint() {
    let dir = std::env::temp_dir().join(format!("zipdb-serve-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for sig in [SIGTERM, SIGINT] {
        let p = spawn(&dir);
        let port = p.port;
        TcpStream::connect(("127.0.0.1", port)).unwrap();
        let err = stop(p, sig);
        assert!(
            err.contains(&format!("listening on 127.0.0.1:{port}")),
            "{err}"
        );
        assert!(err.contains("clean shutdown"), "{err}");
        // A clean shutdown leaves nothing to replay.
        assert!(!err.contains("replayed"), "{err}");
    }
    assert!(dir.join("zipdb.data").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn limits_come_from_the_flags_and_failed_logins_are_logged() {
    let dir = std::env::temp_dir().join(format!("zipdb-limits-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let p = spawn_with(
        &dir,
        &[
            "--wait-timeout",
            "1",
            "--connect-timeout",
            "3",
            "--interactive-timeout",
            "5",
            "--net-read-timeout",
            "7",
            "--net-write-timeout",
            "9",
            "--extra-max-connections",
            "2",
        ],
    );
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", p.port).parse().unwrap();
    let plugin = zipdb_server::protocol::handshake::NATIVE_PASSWORD;
    let (mut c, ok) = common::login_to(addr, "root", b"", None, plugin);
    assert_eq!(ok[0], 0);
    let vars = common::rows(
        &mut c,
        "SELECT @@wait_timeout, @@connect_timeout, @@interactive_timeout, @@net_read_timeout, \
         @@net_write_timeout, @@extra_max_connections",
    )
    .unwrap();
    let vars: Vec<&str> = vars[0].iter().map(|v| v.as_deref().unwrap()).collect();
    assert_eq!(vars, ["1", "3", "5", "7", "9", "2"]);
    // wait_timeout 1: closed once idle.
    c.s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(c.recv(), None);
    // A failed login: refused, and logged with the user, the host and the reason.
    let (_c, e) = common::login_to(addr, "mallory", b"pw", None, plugin);
    assert_eq!(common::err_code(&e), Some(1045));
    let log = stop(p, SIGTERM);
    assert!(
        log.contains(
            "failed login: user \"mallory\" from 127.0.0.1: no such account (using password: YES)"
        ),
        "{log}"
    );
    assert!(
        log.contains("connect_timeout=3 wait_timeout=1 interactive_timeout=5"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether the stock client is installed (CI installs it and sets ZIPDB_REQUIRE_MARIADB=1,
/// which turns a missing client into a failure).
fn have_mariadb() -> bool {
    let have = Command::new("mariadb").arg("--version").output().is_ok();
    if !have {
        assert!(
            std::env::var_os("ZIPDB_REQUIRE_MARIADB").is_none(),
            "the mariadb client is required but not installed"
        );
        eprintln!("skipped: the mariadb client is not installed");
    }
    have
}

/// Runs the `mariadb` client against 127.0.0.1:`port`: (exit code, stdout, stderr).
fn mariadb(port: u16, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new("mariadb")
        .args(["-h", "127.0.0.1", "-P", &port.to_string()])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn the_mariadb_client_logs_in_to_accounts_of_both_plugins_across_a_restart() {
    if !have_mariadb() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("zipdb-accounts-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let p = spawn(&dir);
    let port = p.port;
    let (code, _, err) = mariadb(
        port,
        &[
            "-u",
            "root",
            "-e",
            "CREATE USER nat IDENTIFIED BY 'n-pw'; \
             CREATE USER 'sha'@'localhost' IDENTIFIED WITH caching_sha2_password BY 'sha pw'",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    // Logs in as `user` with `pw`, the client starting with `plugin`; Ok(CURRENT_USER()).
    let login = |port: u16, user: &str, pw: &str, plugin: &str| {
        let (code, out, err) = mariadb(
            port,
            &[
                "-u",
                user,
                &format!("-p{pw}"),
                &format!("--default-auth={plugin}"),
                "-N",
                "-e",
                "select current_user()",
            ],
        );
        if code == Some(0) {
            Ok(out.trim().to_string())
        } else {
            Err(err)
        }
    };
    let check = |port: u16| {
        for plugin in ["mysql_native_password", "caching_sha2_password"] {
            assert_eq!(login(port, "nat", "n-pw", plugin), Ok("nat@%".to_string()));
            assert_eq!(
                login(port, "sha", "sha pw", plugin),
                Ok("sha@localhost".to_string())
            );
            for (user, pw) in [("nat", "wrong"), ("sha", "wrong"), ("nobody", "x")] {
                let e = login(port, user, pw, plugin).expect_err("a wrong password");
                assert!(e.contains("ERROR 1045 (28000)"), "{e}");
                assert!(e.contains("(using password: YES)"), "{e}");
            }
        }
    };
    check(port);
    stop(p, SIGTERM);
    // The accounts are in the data directory.
    let p = spawn(&dir);
    let port = p.port;
    check(port);
    let (code, _, err) = mariadb(port, &["-u", "root", "-e", "DROP USER nat"]);
    assert_eq!(code, Some(0), "{err}");
    let e = login(port, "nat", "n-pw", "mysql_native_password").expect_err("dropped");
    assert!(e.contains("ERROR 1045 (28000)"), "{e}");
    stop(p, SIGTERM);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_refuses_a_non_loopback_address_while_an_account_has_no_password() {
    let dir = std::env::temp_dir().join(format!("zipdb-listen-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_zipdb"))
        .args([
            "serve",
            "--port",
            "0",
            "--pool-mb",
            "16",
            "--listen",
            "0.0.0.0",
        ])
        .arg("--data-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to listen on 0.0.0.0:") && err.contains("'root'@'localhost'"),
        "{err}"
    );
    if !have_mariadb() {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // Give root a password on loopback; then the address is served.
    let p = spawn(&dir);
    let (code, _, err) = mariadb(
        p.port,
        &[
            "-u",
            "root",
            "-e",
            "ALTER USER root@localhost IDENTIFIED BY 'r'",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    stop(p, SIGTERM);
    let p = spawn_with(&dir, &["--listen", "0.0.0.0"]);
    let (code, out, err) = mariadb(p.port, &["-u", "root", "-pr", "-N", "-e", "select 1"]);
    assert_eq!((code, out.trim()), (Some(0), "1"), "{err}");
    stop(p, SIGTERM);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The stock client, when installed.
#[test]
fn the_mariadb_client_connects_and_sees_mysql_error_codes() {
    if !have_mariadb() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("zipdb-client-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let p = spawn(&dir);
    let port = p.port;
    let run = |args: &[&str]| {
        let out = Command::new("mariadb")
            .args(["-h", "127.0.0.1", "-P", &port.to_string(), "-u", "root"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // Logging in and sending nothing succeeds.
    assert_eq!(run(&["-e", ""]).0, Some(0));
    let (code, err) = run(&["-e", "select 1"]);
    assert_eq!(code, Some(0), "{err}");
    let (_, err) = run(&["-e", "create view v as select 1"]);
    assert!(err.contains("ERROR 1235 (42000)"), "{err}");
    let (_, err) = run(&["-e", "selec 1"]);
    assert!(err.contains("ERROR 1064 (42000)"), "{err}");
    let (_, err) = run(&["sbtest", "-e", "select 1"]);
    assert!(err.contains("ERROR 1049 (42000)"), "{err}");
    let (_, err) = run(&["-psecret", "-e", "select 1"]);
    assert!(err.contains("ERROR 1045 (28000)"), "{err}");
    let ping = Command::new("mariadb-admin")
        .args([
            "-h",
            "127.0.0.1",
            "-P",
            &port.to_string(),
            "-u",
            "root",
            "ping",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&ping.stdout).contains("alive"));
    stop(p, SIGTERM);
    let _ = std::fs::remove_dir_all(&dir);
}
