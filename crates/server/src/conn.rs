//! One client connection: the handshake, then the command loop. Each connection runs on its
//! own OS thread (FIELD-NOTES: one thread per connection beat a work-stealing runtime by 4x on
//! this machine).

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use std::collections::HashMap;

use zipdb_sql::{ColumnMeta, Outcome, Session, SqlError};

use crate::protocol::binary::{self, ParamTypes};
use zipdb_sql::accounts::{LoginRefusal, Plugin};

use crate::limits;
use crate::protocol::handshake::{self, HandshakeResponse, NATIVE_PASSWORD, SCRAMBLE_LEN};
use crate::protocol::packet::{PacketIo, Wait};
use crate::protocol::{caps, command, reply, status, ProtoError};
use crate::results::{column_definition, WireSink};
use crate::server::{Shared, ADMIN_USER};
use crate::watchdog::Watch;

/// Error codes used here (MySQL's numbers and SQLSTATEs).
mod code {
    pub const ACCESS_DENIED: (u16, &str) = (1045, "28000");
    pub const UNKNOWN_COM: (u16, &str) = (1047, "08S01");
    pub const NET_PACKET_TOO_LARGE: (u16, &str) = (1153, "08S01");
    pub const HANDSHAKE: (u16, &str) = (1043, "08S01");
    pub const MALFORMED: (u16, &str) = (1835, "HY000");
    pub const CON_COUNT: (u16, &str) = (1040, "08004");
    /// ER_NET_READ_INTERRUPTED: net_read_timeout passed in the middle of a packet.
    pub const NET_READ_INTERRUPTED: (u16, &str) = (1159, "08S01");
    /// What MySQL answers, at the next COM_STMT_EXECUTE, to long data past
    /// max_allowed_packet (Item_param::set_longdata in MySQL's sql/item.cc).
    pub const LONG_DATA_TOO_LARGE: (u16, &str, &str) = (
        1105,
        "HY000",
        "Parameter of prepared statement which is set through mysql_send_long_data() is \
         longer than 'max_allowed_packet' bytes",
    );
}

fn send_err(io: &mut PacketIo<TcpStream>, (c, state): (u16, &str), msg: &str) {
    io.write(&reply::err(c, state, msg));
    let _ = io.flush();
}

/// A connection that holds one of the server's connection slots (`max_connections` and the
/// extra ones); dropping it gives the slot back.
pub(crate) struct Slot(pub(crate) Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Shuts a connection's socket down from another thread (KILL CONNECTION), by descriptor:
/// no second descriptor per connection (a pooled server holds ten thousand sockets). The
/// descriptor is forgotten, under the lock, before the socket closes, so a late KILL can never
/// reach another socket that reused the number.
#[derive(Clone)]
struct Shutter(Arc<parking_lot::Mutex<RawFd>>);

impl Shutter {
    fn shut(&self) {
        let fd = self.0.lock();
        if *fd >= 0 {
            // SAFETY: shutdown(2) takes no pointers; `fd` is the connection's socket, still
            // open: it is set to -1 under this lock before the socket is closed.
            unsafe { libc::shutdown(*fd, libc::SHUT_RDWR) };
        }
    }
}

/// Forgets the descriptor when the connection ends (see [`Shutter`]).
struct ShutterGuard(Shutter);

impl Drop for ShutterGuard {
    fn drop(&mut self) {
        *self.0 .0.lock() = -1;
    }
}

/// A socket whose greeting (Handshake v10) has been sent, waiting for the client's login.
pub(crate) struct Greeted {
    pub(crate) io: PacketIo<TcpStream>,
    scramble: [u8; SCRAMBLE_LEN],
    pub(crate) id: u32,
    peer: Option<SocketAddr>,
    host: String,
    /// The server's settings; dropped last (it gives the connection slot back).
    slot: Slot,
}

/// An authenticated connection between two commands: everything its next command needs, so
/// that any thread can run it (a thread of its own, or a worker of the thread pool).
pub(crate) struct Conn {
    /// Dropped before the socket closes (see `Watch`).
    watch: Watch,
    session: Session,
    /// Before `io`: the socket's number is forgotten before it closes.
    _shutter: ShutterGuard,
    pub(crate) io: PacketIo<TcpStream>,
    stmts: HashMap<u32, StmtWire>,
    buf: Vec<u8>,
    /// The client offered CLIENT_LOCAL_FILES: LOAD DATA LOCAL may ask it for a file.
    local_files: bool,
    pub(crate) id: u32,
    /// Dropped last: the slot is free only once the socket is closed.
    _slot: Slot,
}

/// Serves one connection, accepted at `accepted`, on the calling thread until the client
/// quits or breaks the protocol (`thread_handling=one-thread-per-connection`).
pub(crate) fn serve(stream: TcpStream, slot: Slot, id: u32, accepted: Instant) {
    let Some(g) = greet(stream, slot, id, accepted) else {
        return;
    };
    let Some(mut c) = login(g) else {
        return;
    };
    let r = loop {
        match c.command() {
            Ok(true) => {}
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    c.finish(r);
}

/// Sends the greeting on a fresh socket; `None` if it could not be sent (the socket is
/// closed).
pub(crate) fn greet(stream: TcpStream, slot: Slot, id: u32, accepted: Instant) -> Option<Greeted> {
    let peer = stream.peer_addr().ok();
    let _ = stream.set_nodelay(true);
    let shared = &slot.0;
    let max_packet = shared.config.max_allowed_packet;
    let mut io = PacketIo::new(stream, max_packet.min(limits::PRE_AUTH_MAX_PACKET));
    io.set_timeouts(limits::handshake(accepted, shared.config.connect_timeout));
    let host = peer.map_or_else(
        || "unknown".to_string(),
        |p| p.ip().to_canonical().to_string(),
    );
    let scramble = handshake::new_scramble(&mut rand::thread_rng());
    io.write(&handshake::handshake_v10(
        &shared.config.server_version,
        id,
        &scramble,
        status::AUTOCOMMIT,
    ));
    if let Err(e) = io.flush() {
        handshake_failed(&mut io, shared, &host, &e);
        return None;
    }
    Some(Greeted {
        io,
        scramble,
        id,
        peer,
        host,
        slot,
    })
}

/// Reads the client's login and authenticates it (within `connect_timeout` of the accept);
/// `None` if the client was refused or failed (answered and logged, and the socket closed).
pub(crate) fn login(g: Greeted) -> Option<Conn> {
    let Greeted {
        mut io,
        scramble,
        id,
        peer,
        host,
        slot,
    } = g;
    let shared = &*slot.0;
    let max_packet = shared.config.max_allowed_packet;
    // KILL CONNECTION from another session shuts the socket down: a blocked read here ends,
    // and so does a client's wait for a reply (and a pooled connection's socket becomes
    // readable, which hands it to a worker that sees the end).
    let shutter = Shutter(Arc::new(parking_lot::Mutex::new(io.stream().as_raw_fd())));
    let (mut session, caps) =
        match connect(&mut io, shared, id, peer.map(|p| p.ip()), &host, &scramble) {
            Ok(Some(s)) => s,
            Ok(None) => return None,
            Err(e) => {
                handshake_failed(&mut io, shared, &host, &e);
                return None;
            }
        };
    io.set_max_payload(max_packet);
    io.set_timeouts(limits::session(&session));
    if let Some(p) = peer {
        session.set_peer(&p.to_string());
    }
    let closer = shutter.clone();
    session.set_closer(Box::new(move || closer.shut()));
    let watch = shared.watchdog.watch(id, io.stream(), session.process());
    Some(Conn {
        watch,
        session,
        _shutter: ShutterGuard(shutter),
        io,
        stmts: HashMap::new(),
        buf: Vec::new(),
        local_files: caps & caps::LOCAL_FILES != 0,
        id,
        _slot: slot,
    })
}

impl Greeted {
    /// `connect_timeout` passed before the login arrived: logged, and the socket closed.
    pub(crate) fn timed_out(mut self) {
        let e = ProtoError::Timeout(Wait::Deadline);
        handshake_failed(&mut self.io, &self.slot.0, &self.host, &e);
    }
}

impl Conn {
    /// Ends the connection after `r`, the end of its command loop: the closing answer, if
    /// any, then the socket is closed.
    pub(crate) fn finish(mut self, r: Result<(), ProtoError>) {
        let io = &mut self.io;
        match r {
            // MariaDB's way: the connection is just closed. MySQL 8 first sends error 4031,
            // which libmariadb and PyMySQL read as a packet out of sequence, while a closed
            // socket is the "server has gone away" (2006/2013) that their pools know to
            // reconnect after.
            Err(ProtoError::Timeout(Wait::Idle)) => {}
            Err(ProtoError::Timeout(Wait::Read)) => send_err(
                io,
                code::NET_READ_INTERRUPTED,
                "Got timeout reading communication packets",
            ),
            Err(ProtoError::TooLarge { .. }) => send_err(
                io,
                code::NET_PACKET_TOO_LARGE,
                "Got a packet bigger than 'max_allowed_packet' bytes",
            ),
            Err(ProtoError::Malformed { what, why }) => send_err(
                io,
                code::MALFORMED,
                &format!("Malformed packet: {what}: {why}"),
            ),
            _ => {}
        }
    }

    /// Whether the session is inside an explicit transaction (holding its row locks).
    pub(crate) fn in_transaction(&self) -> bool {
        self.session.in_transaction()
    }

    /// The session's `wait_timeout` (how long the connection may stay idle).
    pub(crate) fn wait_timeout(&self) -> Option<std::time::Duration> {
        self.io.timeouts().idle
    }

    /// Reads and answers one command, blocking until it arrives. `Ok(false)`: the client
    /// quit (or closed), or the connection was killed.
    pub(crate) fn command(&mut self) -> Result<bool, ProtoError> {
        let r = self.command_inner();
        // Answered: a client that closes its socket now is seen by its read.
        self.watch.busy(false);
        r
    }
}

/// A connection phase that ended in a protocol error or ran out of time: logged, and
/// answered where the client can still read an answer. A client that closed before it said
/// anything (a port probe, a load balancer's health check) is not a failed login.
fn handshake_failed(io: &mut PacketIo<TcpStream>, shared: &Shared, host: &str, e: &ProtoError) {
    let log = |reason: &str| shared.login_log.failed("-", host, reason);
    match e {
        ProtoError::Malformed { .. } => {
            log(&e.to_string());
            send_err(io, code::HANDSHAKE, &format!("Bad handshake: {e}"));
        }
        ProtoError::TooLarge { len, max } => {
            log(&e.to_string());
            send_err(
                io,
                code::HANDSHAKE,
                &format!(
                    "Bad handshake: a packet of {len} bytes is larger than the {max} allowed \
                     before authentication"
                ),
            );
        }
        ProtoError::Timeout(_) => log(&format!(
            "connect_timeout ({} s) passed before the login completed",
            shared.config.connect_timeout.as_secs_f64()
        )),
        ProtoError::Io(_) | ProtoError::Truncated(_) | ProtoError::Sequence { .. } => {}
    }
}

/// The connection phase after the greeting. `Ok(None)`: the client was refused (an error was sent, and the
/// failure logged).
fn connect(
    io: &mut PacketIo<TcpStream>,
    shared: &Shared,
    id: u32,
    peer: Option<IpAddr>,
    host: &str,
    scramble: &[u8; SCRAMBLE_LEN],
) -> Result<Option<(Session, u32)>, ProtoError> {
    let mut buf = Vec::new();
    if !io.read(&mut buf)? {
        return Ok(None);
    }
    let resp = handshake::parse_response(&buf)?;
    let log = |reason: &str| shared.login_log.failed(&resp.user, host, reason);
    let deny = |io: &mut PacketIo<TcpStream>, auth: &[u8], reason: &str| {
        // Clients send nothing (or a lone NUL) for an empty password.
        let used = !(auth.is_empty() || auth == [0]);
        log(&format!(
            "{reason} (using password: {})",
            if used { "YES" } else { "NO" }
        ));
        send_err(
            io,
            code::ACCESS_DENIED,
            &format!(
                "Access denied for user '{}'@'{host}' (using password: {})",
                resp.user,
                if used { "YES" } else { "NO" }
            ),
        );
    };
    // An unknown user, and an account without a password reached from the network, get the
    // same answer as a wrong password.
    let account = match shared.instance.login_account(&resp.user, peer) {
        Ok(a) => a,
        Err(refusal) => {
            // Go through the same exchange as for an account with a password in the client's
            // plugin, so that the answer says truly whether a password was used (a client may
            // hold it back until asked) and does not reveal that the user does not exist.
            let plugin = resp
                .auth_plugin
                .as_deref()
                .and_then(Plugin::from_name)
                .unwrap_or(Plugin::Native);
            let auth = auth_data(io, &resp, plugin, true, scramble, &mut buf)?;
            deny(
                io,
                &auth,
                match refusal {
                    LoginRefusal::NoAccount => "no such account",
                    LoginRefusal::NoPasswordFromNetwork => {
                        "an account without a password, from the network"
                    }
                },
            );
            return Ok(None);
        }
    };
    let auth = auth_data(
        io,
        &resp,
        account.plugin,
        account.has_password(),
        scramble,
        &mut buf,
    )?;
    if !account.plugin.check(scramble, &account.verifier, &auth) {
        deny(io, &auth, "wrong password");
        return Ok(None);
    }
    if !shared.admits(&resp.user) {
        log(&format!(
            "too many connections (max_connections {}; the {} beyond are for {ADMIN_USER})",
            shared.config.max_connections, shared.config.extra_max_connections
        ));
        send_err(io, code::CON_COUNT, "Too many connections");
        return Ok(None);
    }
    if account.plugin == Plugin::CachingSha2 && account.has_password() {
        // The fast path's success marker; the client then waits for the OK below.
        io.write(&handshake::CACHING_SHA2_FAST_AUTH_OK);
    }
    let mut session = shared.instance.session(&resp.user, u64::from(id));
    session.set_account_host(&account.host);
    session.set_multi_statements(resp.caps & caps::MULTI_STATEMENTS != 0);
    limits::start_session(&mut session, resp.caps & caps::INTERACTIVE != 0);
    if let Some(db) = resp.database.as_deref().filter(|d| !d.is_empty()) {
        if let Err(e) = session.use_db(db) {
            log(e.message());
            send_sql_err(io, &e);
            return Ok(None);
        }
    }
    io.write(&reply::ok(0, 0, session.status_flags(), 0));
    io.flush()?;
    Ok(Some((session, resp.caps)))
}

/// The client's response for the account's plugin, switching the client to that plugin
/// first when it answered the handshake with another (MySQL 8 clients start with
/// `caching_sha2_password`, MariaDB's with `mysql_native_password`; the handshake announces
/// the latter). The scramble stays the same across the switch.
fn auth_data(
    io: &mut PacketIo<TcpStream>,
    resp: &HandshakeResponse,
    plugin: Plugin,
    has_password: bool,
    scramble: &[u8; SCRAMBLE_LEN],
    buf: &mut Vec<u8>,
) -> Result<Vec<u8>, ProtoError> {
    // A client without CLIENT_PLUGIN_AUTH names no plugin and speaks native only.
    let client_plugin = resp.auth_plugin.as_deref().unwrap_or(NATIVE_PASSWORD);
    // A client whose plugin is not the one the handshake announced may hold its answer back
    // (libmariadb with --default-auth=caching_sha2_password sends nothing): for an account
    // with a password, an empty first answer is asked again, switching to the same plugin,
    // as MySQL's server does.
    let withheld = client_plugin != NATIVE_PASSWORD
        && has_password
        && (resp.auth_response.is_empty() || resp.auth_response == [0]);
    if client_plugin == plugin.name() && !withheld {
        return Ok(resp.auth_response.clone());
    }
    if resp.caps & caps::PLUGIN_AUTH == 0 {
        // It cannot switch: its native response is checked as it is, and fails unless the
        // account has no password and the client sent none.
        return Ok(resp.auth_response.clone());
    }
    io.write(&handshake::auth_switch_request(plugin.name(), scramble));
    io.flush()?;
    if !io.read(buf)? {
        return Err(ProtoError::Truncated("authentication switch"));
    }
    Ok(buf.clone())
}

fn send_sql_err(io: &mut PacketIo<TcpStream>, e: &SqlError) {
    io.write(&reply::err(e.code(), e.sqlstate(), e.message()));
    let _ = io.flush();
}

/// Per-statement state the wire keeps: parameter types (sent only with the first EXECUTE)
/// and long data.
#[derive(Default)]
struct StmtWire {
    types: ParamTypes,
    long_data: Vec<Option<Vec<u8>>>,
    /// Bytes in `long_data`, all parameters together.
    long_data_bytes: usize,
    /// Long data went past max_allowed_packet: what had arrived was dropped, further long
    /// data is ignored, and EXECUTE fails until COM_STMT_RESET, as in MySQL.
    long_data_refused: bool,
    /// Running the statement may change the connection's timeouts (it names one).
    sets_timeouts: bool,
}

impl StmtWire {
    fn clear_long_data(&mut self) {
        self.long_data.iter_mut().for_each(|d| *d = None);
        self.long_data_bytes = 0;
    }

    /// Appends long data to parameter `param`; past `max` bytes, for the parameter or for
    /// the statement (MySQL bounds the parameter only), it refuses and drops everything.
    fn add_long_data(&mut self, param: usize, data: &[u8], max: usize) {
        if self.long_data_refused {
            return;
        }
        let Some(slot) = self.long_data.get_mut(param) else {
            return;
        };
        let had = slot.as_ref().map_or(0, Vec::len);
        if had + data.len() > max || self.long_data_bytes + data.len() > max {
            self.clear_long_data();
            self.long_data_refused = true;
            return;
        }
        slot.get_or_insert_with(Vec::new).extend_from_slice(data);
        self.long_data_bytes += data.len();
    }
}

impl Conn {
    fn command_inner(&mut self) -> Result<bool, ProtoError> {
        let Conn {
            io,
            session,
            stmts,
            buf,
            watch,
            local_files,
            ..
        } = self;
        io.reset_seq();
        if !io.read(buf)? {
            return Ok(false);
        }
        // From here until the answer is sent, a client that closes its socket gets its
        // statement killed by the watchdog.
        watch.busy(true);
        let Some((&cmd, arg)) = buf.split_first() else {
            send_err(io, code::UNKNOWN_COM, "Empty command packet");
            return Ok(true);
        };
        match cmd {
            command::QUIT => return Ok(false),
            command::PING => {
                io.write(&reply::ok(0, 0, session.status_flags(), 0));
            }
            command::INIT_DB => {
                let name = String::from_utf8_lossy(arg);
                match session.use_db(&name) {
                    Ok(()) => io.write(&reply::ok(0, 0, session.status_flags(), 0)),
                    Err(e) => io.write(&reply::err(e.code(), e.sqlstate(), e.message())),
                }
            }
            command::QUERY => {
                let sql = zipdb_sql::sql_from_bytes(arg);
                let mut sink = WireSink::new(io, false).local_files(*local_files);
                session.query_into(&sql, &mut sink);
                if let Some(e) = sink.failure() {
                    return Err(e);
                }
                if limits::may_change_timeouts(arg) {
                    io.set_timeouts(limits::session(session));
                }
            }
            command::FIELD_LIST => {
                // The interactive client asks for each table's columns (unless -A).
                let table = arg.split(|&b| b == 0).next().unwrap_or_default();
                let table = String::from_utf8_lossy(table);
                let sql = format!("SELECT * FROM `{}` LIMIT 0", table.replace('`', "``"));
                match session.query(&sql).pop() {
                    Some(Ok(Outcome::Rows { columns, .. })) => {
                        for c in columns.iter() {
                            let mut d = column_definition(c);
                            // COM_FIELD_LIST definitions end with the default value (none).
                            d.push(0xfb);
                            io.write(&d);
                        }
                        io.write(&reply::eof(0, session.status_flags()));
                    }
                    Some(Err(e)) => io.write(&reply::err(e.code(), e.sqlstate(), e.message())),
                    _ => io.write(&reply::eof(0, session.status_flags())),
                }
            }
            command::STATISTICS => {
                let c = &session.instance().counters;
                let text = format!(
                    "Uptime: {}  Threads: {}  Questions: {}  Open tables: 0",
                    session.instance().uptime_secs(),
                    c.threads_connected
                        .load(std::sync::atomic::Ordering::Relaxed),
                    c.questions.load(std::sync::atomic::Ordering::Relaxed),
                );
                // A bare string, not an OK packet.
                io.write(text.as_bytes());
            }
            command::STMT_PREPARE => {
                let sql = zipdb_sql::sql_from_bytes(arg);
                match session.prepare(&sql) {
                    Err(e) => io.write(&reply::err(e.code(), e.sqlstate(), e.message())),
                    Ok(info) => {
                        stmts.insert(
                            info.id,
                            StmtWire {
                                long_data: vec![None; info.params],
                                sets_timeouts: limits::may_change_timeouts(arg),
                                ..StmtWire::default()
                            },
                        );
                        io.write(&binary::prepare_ok(
                            info.id,
                            info.columns.len() as u16,
                            info.params as u16,
                            0,
                        ));
                        if info.params > 0 {
                            let param = ColumnMeta::text("?");
                            for _ in 0..info.params {
                                io.write(&column_definition(&param));
                            }
                            io.write(&reply::eof(0, session.status_flags()));
                        }
                        if !info.columns.is_empty() {
                            for c in info.columns.iter() {
                                io.write(&column_definition(c));
                            }
                            io.write(&reply::eof(0, session.status_flags()));
                        }
                    }
                }
            }
            command::STMT_EXECUTE => {
                let id = binary::execute_stmt_id(arg)?;
                let (Some(n), Some(w)) = (session.prepared_params(id), stmts.get_mut(&id)) else {
                    send_sql_err(io, &SqlError::unknown_stmt(id));
                    return Ok(true);
                };
                if w.long_data_refused {
                    let (c, state, msg) = code::LONG_DATA_TOO_LARGE;
                    send_err(io, (c, state), msg);
                    return Ok(true);
                }
                let exec = binary::parse_execute(arg, n, &mut w.types, &w.long_data)?;
                w.clear_long_data();
                let sets_timeouts = w.sets_timeouts;
                let mut sink = WireSink::new(io, true);
                session.execute_into(id, &exec.params, &mut sink);
                if let Some(e) = sink.failure() {
                    return Err(e);
                }
                if sets_timeouts {
                    io.set_timeouts(limits::session(session));
                }
            }
            command::STMT_SEND_LONG_DATA => {
                // No reply, by the protocol.
                let (id, param, data) = binary::parse_send_long_data(arg)?;
                if let Some(w) = stmts.get_mut(&id) {
                    w.add_long_data(usize::from(param), data, io.max_payload());
                }
                return Ok(true);
            }
            command::STMT_CLOSE => {
                // No reply, by the protocol.
                if arg.len() >= 4 {
                    let id = u32::from_le_bytes([arg[0], arg[1], arg[2], arg[3]]);
                    session.close_statement(id);
                    stmts.remove(&id);
                }
                return Ok(true);
            }
            command::STMT_RESET => {
                if arg.len() < 4 {
                    send_err(io, code::MALFORMED, "Malformed COM_STMT_RESET");
                    return Ok(true);
                }
                let id = u32::from_le_bytes([arg[0], arg[1], arg[2], arg[3]]);
                match stmts.get_mut(&id) {
                    Some(w) => {
                        w.clear_long_data();
                        w.long_data_refused = false;
                        io.write(&reply::ok(0, 0, session.status_flags(), 0));
                    }
                    None => send_sql_err(io, &SqlError::unknown_stmt(id)),
                }
            }
            command::SET_OPTION => {
                // MYSQL_OPTION_MULTI_STATEMENTS_ON (0) / _OFF (1); MySQL answers with EOF.
                match arg {
                    [0, 0] | [1, 0] => {
                        session.set_multi_statements(arg[0] == 0);
                        io.write(&reply::eof(0, session.status_flags()));
                    }
                    _ => send_err(io, code::UNKNOWN_COM, "Unknown COM_SET_OPTION value"),
                }
            }
            other => {
                send_err(
                    io,
                    code::UNKNOWN_COM,
                    &format!("Unknown command {other:#04x}"),
                );
                return Ok(true);
            }
        }
        io.flush()?;
        Ok(!session.connection_killed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_data_past_the_limit_is_dropped_at_once_and_refused_until_reset() {
        let mut w = StmtWire {
            long_data: vec![None, None],
            ..StmtWire::default()
        };
        w.add_long_data(0, &[1; 600], 1000);
        w.add_long_data(1, &[2; 300], 1000);
        assert_eq!(w.long_data_bytes, 900);
        assert!(!w.long_data_refused);
        // Each parameter is within 1000, the two together are not.
        w.add_long_data(1, &[3; 200], 1000);
        assert!(w.long_data_refused);
        assert_eq!(w.long_data_bytes, 0);
        assert!(w.long_data.iter().all(Option::is_none), "memory given back");
        // Ignored from then on.
        w.add_long_data(0, b"x", 1000);
        assert!(w.long_data.iter().all(Option::is_none));
        // One parameter alone past the limit; an unknown parameter is ignored.
        let mut w = StmtWire {
            long_data: vec![None],
            ..StmtWire::default()
        };
        w.add_long_data(5, &[0; 2000], 1000);
        assert!(!w.long_data_refused);
        w.add_long_data(0, &[0; 1000], 1000);
        assert!(!w.long_data_refused, "the bound is inclusive");
        w.add_long_data(0, b"y", 1000);
        assert!(w.long_data_refused);
        assert!(w.long_data[0].is_none());
    }
}
