//! One client connection: the handshake, then the command loop. Each connection runs on its
//! own OS thread (FIELD-NOTES: one thread per connection beat a work-stealing runtime by 4x on
//! this machine).

use std::net::{IpAddr, TcpStream};

use crate::protocol::handshake::{self, HandshakeResponse, NATIVE_PASSWORD, SCRAMBLE_LEN};
use crate::protocol::packet::PacketIo;
use crate::protocol::{command, reply, status, ProtoError};
use crate::server::Shared;

/// Error codes used here (MySQL's numbers and SQLSTATEs).
mod code {
    pub const ACCESS_DENIED: (u16, &str) = (1045, "28000");
    pub const UNKNOWN_DB: (u16, &str) = (1049, "42000");
    pub const UNKNOWN_COM: (u16, &str) = (1047, "08S01");
    pub const NET_PACKET_TOO_LARGE: (u16, &str) = (1153, "08S01");
    pub const HANDSHAKE: (u16, &str) = (1043, "08S01");
}

fn send_err(io: &mut PacketIo<TcpStream>, (c, state): (u16, &str), msg: &str) {
    io.write(&reply::err(c, state, msg));
    let _ = io.flush();
}

/// Serves one connection until the client quits or breaks the protocol.
pub(crate) fn serve(stream: TcpStream, shared: &Shared, id: u32) {
    let peer = stream.peer_addr().ok();
    let _ = stream.set_nodelay(true);
    let mut io = PacketIo::new(stream, shared.config.max_allowed_packet);
    let session = match connect(&mut io, shared, id, peer.map(|p| p.ip())) {
        Ok(Some(s)) => s,
        Ok(None) => return,
        Err(e) => {
            if let ProtoError::Malformed { .. } = e {
                send_err(&mut io, code::HANDSHAKE, &format!("Bad handshake: {e}"));
            }
            return;
        }
    };
    if let Err(ProtoError::TooLarge { .. }) = command_loop(&mut io, &session) {
        send_err(
            &mut io,
            code::NET_PACKET_TOO_LARGE,
            "Got a packet bigger than 'max_allowed_packet' bytes",
        );
    }
}

/// What a connection knows about its client once authenticated.
pub(crate) struct Session {
    #[allow(dead_code)]
    user: String,
}

/// The connection phase. `Ok(None)`: the client was refused (an error was sent).
fn connect(
    io: &mut PacketIo<TcpStream>,
    shared: &Shared,
    id: u32,
    peer: Option<IpAddr>,
) -> Result<Option<Session>, ProtoError> {
    let scramble = handshake::new_scramble(&mut rand::thread_rng());
    io.write(&handshake::handshake_v10(
        &shared.config.server_version,
        id,
        &scramble,
        status::AUTOCOMMIT,
    ));
    io.flush()?;
    let mut buf = Vec::new();
    if !io.read(&mut buf)? {
        return Ok(None);
    }
    let resp = handshake::parse_response(&buf)?;
    let auth = auth_data(io, &resp, &scramble, &mut buf)?;
    let host = peer.map_or_else(|| "unknown".to_string(), |p| p.to_string());
    // The only account until CREATE USER exists: root without a password, from loopback only.
    let loopback = peer.is_some_and(|p| p.is_loopback());
    if resp.user != "root" || !loopback || !handshake::native_password_ok(&scramble, None, &auth) {
        send_err(
            io,
            code::ACCESS_DENIED,
            &format!(
                "Access denied for user '{}'@'{host}' (using password: {})",
                resp.user,
                if auth.is_empty() { "NO" } else { "YES" }
            ),
        );
        return Ok(None);
    }
    if let Some(db) = &resp.database {
        // No SQL layer yet, so no databases exist.
        send_err(io, code::UNKNOWN_DB, &format!("Unknown database '{db}'"));
        return Ok(None);
    }
    io.write(&reply::ok(0, 0, status::AUTOCOMMIT, 0));
    io.flush()?;
    Ok(Some(Session { user: resp.user }))
}

/// The client's `mysql_native_password` response, switching the client to that plugin first
/// when it started with another (MySQL 8 clients default to `caching_sha2_password`).
fn auth_data(
    io: &mut PacketIo<TcpStream>,
    resp: &HandshakeResponse,
    scramble: &[u8; SCRAMBLE_LEN],
    buf: &mut Vec<u8>,
) -> Result<Vec<u8>, ProtoError> {
    match resp.auth_plugin.as_deref() {
        None | Some(NATIVE_PASSWORD) => Ok(resp.auth_response.clone()),
        Some(_) => {
            let mut p = vec![0xfe];
            p.extend_from_slice(NATIVE_PASSWORD.as_bytes());
            p.push(0);
            p.extend_from_slice(scramble);
            p.push(0);
            io.write(&p);
            io.flush()?;
            if !io.read(buf)? {
                return Err(ProtoError::Truncated("authentication switch"));
            }
            Ok(buf.clone())
        }
    }
}

fn command_loop(io: &mut PacketIo<TcpStream>, _session: &Session) -> Result<(), ProtoError> {
    let mut buf = Vec::new();
    loop {
        io.reset_seq();
        if !io.read(&mut buf)? {
            return Ok(());
        }
        let Some((&cmd, arg)) = buf.split_first() else {
            send_err(io, code::UNKNOWN_COM, "Empty command packet");
            continue;
        };
        match cmd {
            command::QUIT => return Ok(()),
            command::PING => {
                io.write(&reply::ok(0, 0, status::AUTOCOMMIT, 0));
                io.flush()?;
            }
            command::INIT_DB => {
                let name = String::from_utf8_lossy(arg);
                send_err(io, code::UNKNOWN_DB, &format!("Unknown database '{name}'"));
            }
            command::QUERY => {
                let sql = String::from_utf8_lossy(arg);
                // Parsed for real, so that bad SQL gets 1064 (with MySQL's "near '...'"); there
                // is no executor yet, so valid SQL gets 1235 naming the statement.
                let e = match zipdb_sql::parse(&sql) {
                    Err(e) => e,
                    Ok(stmts) => zipdb_sql::SqlError::unsupported(&stmts[0].kind()),
                };
                send_err(io, (e.code, e.sqlstate), &e.message);
            }
            other => {
                send_err(
                    io,
                    code::UNKNOWN_COM,
                    &format!("Unknown command {other:#04x}"),
                );
            }
        }
    }
}
