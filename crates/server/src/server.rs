//! The listener: accepts connections and hands each to its own thread or to the pool of
//! threads (`thread_handling`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::conn::{self, Slot};
use crate::loginlog::LoginLog;
use crate::pool::{Pool, PoolConfig, ThreadHandling};
use crate::watchdog::{self, Watchdog};

/// The account that may log in on the slots kept beyond `max_connections`: zipdb has no
/// privileges, so the administrator is the account MySQL and MariaDB create for it.
pub const ADMIN_USER: &str = "root";

/// The default `thread_handling`.
pub const DEFAULT_THREAD_HANDLING: ThreadHandling = ThreadHandling::OneThreadPerConnection;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub max_connections: usize,
    /// Connections accepted beyond `max_connections`, on which only [`ADMIN_USER`] may log in
    /// (MariaDB's `extra_max_connections`; MySQL keeps one such slot).
    pub extra_max_connections: usize,
    pub max_allowed_packet: usize,
    /// The whole connection phase, from the accept to the answer to the login, must end
    /// within this (MySQL's `connect_timeout`), or the socket is closed.
    pub connect_timeout: Duration,
    pub server_version: String,
    /// A thread per connection, or the pool of threads (MariaDB's `thread_handling`).
    pub thread_handling: ThreadHandling,
    /// The pool's settings (`thread_pool_*`), used with [`ThreadHandling::PoolOfThreads`].
    pub pool: PoolConfig,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 3307)),
            max_connections: 1000,
            extra_max_connections: 1,
            max_allowed_packet: 64 << 20,
            connect_timeout: Duration::from_secs(10),
            server_version: format!("8.0.0-zipdb-{}", env!("CARGO_PKG_VERSION")),
            thread_handling: DEFAULT_THREAD_HANDLING,
            pool: PoolConfig::default(),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The listen address is not loopback and some accounts have no password (the rule:
    /// an account without a password is for local use only).
    #[error(
        "refusing to listen on {addr}, which is not a loopback address, while these accounts \
         have no password: {accounts}; give them one first (for example, start on 127.0.0.1 \
         and run ALTER USER 'root'@'localhost' IDENTIFIED BY '...'), or drop them"
    )]
    OpenAccounts { addr: SocketAddr, accounts: String },
    #[error("cannot start the accept, watchdog or thread pool threads: {0}")]
    Spawn(std::io::Error),
}

/// Stack of each connection thread: what a statement needs (see
/// `zipdb_sql::STATEMENT_STACK_BYTES`), so that no statement has to allocate one. Only the
/// pages a connection touches cost memory.
pub(crate) const CONNECTION_STACK_BYTES: usize = zipdb_sql::STATEMENT_STACK_BYTES;

pub(crate) struct Shared {
    pub config: ServerConfig,
    pub instance: Arc<zipdb_sql::Instance>,
    stop: AtomicBool,
    /// Sockets accepted and not closed yet, logged in or not.
    pub(crate) connections: AtomicUsize,
    next_id: AtomicU32,
    pub watchdog: Arc<Watchdog>,
    pub login_log: LoginLog,
}

impl Shared {
    /// Whether `user`, just authenticated, may stay: beyond `max_connections` open sockets
    /// (its own included) only the administrator may, on the extra slots. The count is taken
    /// at login, as MySQL does, so sockets still in their handshake count too.
    pub fn admits(&self, user: &str) -> bool {
        self.connections.load(Ordering::Acquire) <= self.config.max_connections
            || user == ADMIN_USER
    }
}

/// A bound server; [`Server::spawn`] starts accepting.
pub struct Server {
    listener: TcpListener,
    config: ServerConfig,
}

/// A running server: its address, and a way to stop accepting.
pub struct Running {
    addr: SocketAddr,
    shared: Arc<Shared>,
    pool: Option<Arc<Pool>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds the listen address. Whether it may be served is decided by [`Server::spawn`],
    /// which knows the accounts.
    pub fn bind(config: ServerConfig) -> Result<Server, ServerError> {
        let listener = TcpListener::bind(config.listen).map_err(|source| ServerError::Bind {
            addr: config.listen,
            source,
        })?;
        Ok(Server { listener, config })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Starts the accept loop on its own thread, serving SQL from `instance`.
    ///
    /// On a non-loopback address this fails while any account has no password, and from
    /// then on the instance refuses statements that would leave an account without one
    /// ([`zipdb_sql::Instance::require_passwords`]).
    pub fn spawn(self, instance: Arc<zipdb_sql::Instance>) -> Result<Running, ServerError> {
        let addr = self.listener.local_addr().map_err(ServerError::Spawn)?;
        if !addr.ip().to_canonical().is_loopback() {
            instance
                .require_passwords()
                .map_err(|open| ServerError::OpenAccounts {
                    addr,
                    accounts: open.join(", "),
                })?;
        }
        let shared = Arc::new(Shared {
            config: self.config,
            instance,
            stop: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
            next_id: AtomicU32::new(1),
            watchdog: Arc::default(),
            login_log: LoginLog::stderr(),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("zipdb-watchdog".into())
            .spawn(move || watchdog::run(weak))
            .map_err(ServerError::Spawn)?;
        let pool = match shared.config.thread_handling {
            ThreadHandling::PoolOfThreads => {
                Some(Pool::start(shared.config.pool.clone()).map_err(ServerError::Spawn)?)
            }
            ThreadHandling::OneThreadPerConnection => None,
        };
        let accept_shared = Arc::clone(&shared);
        let accept_pool = pool.clone();
        let listener = self.listener;
        let thread = std::thread::Builder::new()
            .name("zipdb-accept".into())
            .spawn(move || accept_loop(listener, accept_shared, accept_pool))
            .map_err(ServerError::Spawn)?;
        Ok(Running {
            addr,
            shared,
            pool,
            thread: Some(thread),
        })
    }
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections being served now.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Worker threads of the pool of threads alive now (0 with a thread per connection).
    pub fn pool_threads(&self) -> usize {
        self.pool.as_ref().map_or(0, |p| p.threads())
    }

    /// Stops accepting new connections and waits for the accept thread. With a thread per
    /// connection, open connections finish on their own; the pool of threads closes its
    /// idle connections at once and the others after their current command.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    /// Waits until the accept loop ends (it ends only after `stop`).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn stop_inner(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Wake the blocking accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(p) = &self.pool {
            p.stop();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop_inner();
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, pool: Option<Arc<Pool>>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let accepted = Instant::now();
        let stream = match stream {
            Ok(s) => s,
            // Out of file descriptors and similar: keep serving the connections we have.
            Err(_) => continue,
        };
        let n = shared.connections.fetch_add(1, Ordering::AcqRel);
        let slot = Slot(Arc::clone(&shared));
        if n >= shared.config.max_connections + shared.config.extra_max_connections {
            drop(slot);
            refuse_too_many(stream);
            continue;
        }
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(pool) = &pool {
            // The greeting is a few bytes into a fresh socket's buffer: it never blocks.
            if let Some(g) = conn::greet(stream, slot, id, accepted) {
                pool.add(g, accepted + shared.config.connect_timeout);
            }
            continue;
        }
        let spawned = std::thread::Builder::new()
            .name(format!("zipdb-conn-{id}"))
            .stack_size(CONNECTION_STACK_BYTES)
            .spawn(move || {
                // A panic in one session closes that session only (the slot is given back
                // as the stack unwinds).
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    conn::serve(stream, slot, id, accepted)
                }));
                if r.is_err() {
                    eprintln!("zipdb: connection {id} ended by an internal error (panic); the server goes on");
                }
            });
        // A thread that could not start drops its closure, and with it the slot.
        let _ = spawned;
    }
}

/// ER_CON_COUNT_ERROR (1040) in place of the handshake, as MySQL sends it.
fn refuse_too_many(stream: TcpStream) {
    let mut io = crate::protocol::packet::PacketIo::new(stream, 1024);
    // A few bytes into a fresh socket's buffer never block; the bound keeps it certain.
    io.set_timeouts(crate::protocol::packet::Timeouts {
        write: Some(Duration::from_secs(1)),
        ..Default::default()
    });
    io.write(&crate::protocol::reply::err(
        1040,
        "08004",
        "Too many connections",
    ));
    let _ = io.flush();
}
