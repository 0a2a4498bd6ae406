//! The connection phase: the server's Handshake v10, the client's HandshakeResponse41, the
//! AuthSwitchRequest, and the packets of `mysql_native_password` and `caching_sha2_password`.

use zipdb_sql::accounts::Plugin;

use super::{caps, ProtoError, Reader, DEFAULT_CHARSET};

pub const NATIVE_PASSWORD: &str = Plugin::Native.name();
pub const CACHING_SHA2_PASSWORD: &str = Plugin::CachingSha2.name();

/// Length of the random challenge ("scramble"); printable bytes, no NUL.
pub const SCRAMBLE_LEN: usize = 20;

/// A fresh challenge. Bytes are in 0x21..0x7e, as MySQL's are, so no client mistakes one for
/// a terminator.
pub fn new_scramble(rng: &mut impl rand::Rng) -> [u8; SCRAMBLE_LEN] {
    let mut s = [0u8; SCRAMBLE_LEN];
    for b in &mut s {
        *b = rng.gen_range(0x21..0x7f);
    }
    s
}

/// The server's first packet.
pub fn handshake_v10(
    server_version: &str,
    connection_id: u32,
    scramble: &[u8; SCRAMBLE_LEN],
    status: u16,
) -> Vec<u8> {
    let mut p = Vec::with_capacity(96);
    p.push(10);
    p.extend_from_slice(server_version.as_bytes());
    p.push(0);
    p.extend_from_slice(&connection_id.to_le_bytes());
    p.extend_from_slice(&scramble[..8]);
    p.push(0);
    let c = caps::SERVER;
    p.extend_from_slice(&(c as u16).to_le_bytes());
    p.push(DEFAULT_CHARSET);
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&((c >> 16) as u16).to_le_bytes());
    p.push(SCRAMBLE_LEN as u8 + 1);
    p.extend_from_slice(&[0u8; 10]);
    p.extend_from_slice(&scramble[8..]);
    p.push(0);
    p.extend_from_slice(NATIVE_PASSWORD.as_bytes());
    p.push(0);
    p
}

/// What the client answered to the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse {
    pub caps: u32,
    pub max_packet: u32,
    pub charset: u8,
    pub user: String,
    pub auth_response: Vec<u8>,
    pub database: Option<String>,
    pub auth_plugin: Option<String>,
}

fn text(b: &[u8], what: &'static str) -> Result<String, ProtoError> {
    String::from_utf8(b.to_vec()).map_err(|_| ProtoError::Malformed {
        what,
        why: "not UTF-8".to_string(),
    })
}

/// Parses a HandshakeResponse41. A client asking for SSL (an SSLRequest: the same packet cut
/// after the filler) is refused, since zipdb does not offer it.
pub fn parse_response(payload: &[u8]) -> Result<HandshakeResponse, ProtoError> {
    let mut r = Reader::new(payload, "handshake response");
    let client_caps = r.u32()?;
    if client_caps & caps::PROTOCOL_41 == 0 {
        return Err(ProtoError::Malformed {
            what: "handshake response",
            why: "the client does not speak protocol 4.1".to_string(),
        });
    }
    let max_packet = r.u32()?;
    let charset = r.u8()?;
    r.bytes(23)?;
    if client_caps & caps::SSL != 0 && r.remaining() == 0 {
        return Err(ProtoError::Malformed {
            what: "handshake response",
            why: "the client asks for SSL, which this server does not offer".to_string(),
        });
    }
    // Only what both sides support counts from here on.
    let c = client_caps & caps::SERVER;
    let user = text(r.nul_str()?, "user name")?;
    let auth_response = if c & caps::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        r.lenenc_bytes()?.to_vec()
    } else if c & caps::SECURE_CONNECTION != 0 {
        let n = r.u8()?;
        r.bytes(usize::from(n))?.to_vec()
    } else {
        r.nul_str()?.to_vec()
    };
    let database = if c & caps::CONNECT_WITH_DB != 0 && r.remaining() > 0 {
        Some(text(r.nul_str()?, "database name")?).filter(|d| !d.is_empty())
    } else {
        None
    };
    let auth_plugin = if c & caps::PLUGIN_AUTH != 0 && r.remaining() > 0 {
        Some(text(r.nul_str()?, "auth plugin name")?)
    } else {
        None
    };
    // Connection attributes (CLIENT_CONNECT_ATTRS) are not used; they are not parsed either.
    Ok(HandshakeResponse {
        caps: c,
        max_packet,
        charset,
        user,
        auth_response,
        database,
        auth_plugin,
    })
}

/// The stored form of a `mysql_native_password` password: SHA1(SHA1(password)), what
/// `mysql.user.authentication_string` holds (hex, with a leading `*`).
pub fn native_password_hash(password: &[u8]) -> [u8; 20] {
    let mut h = [0u8; 20];
    h.copy_from_slice(&Plugin::Native.verifier(password));
    h
}

/// Checks a `mysql_native_password` response. `None` for an account without a password,
/// which must send an empty response. (The plugins' arithmetic lives with the accounts, in
/// [`zipdb_sql::accounts::Plugin`].)
pub fn native_password_ok(
    scramble: &[u8; SCRAMBLE_LEN],
    stored: Option<&[u8; 20]>,
    response: &[u8],
) -> bool {
    let stored = stored.map_or(&[][..], |s| &s[..]);
    // An account without a password takes only an empty response here (no lone NUL), as
    // mysql_native_password clients send.
    if stored.is_empty() {
        return response.is_empty();
    }
    Plugin::Native.check(scramble, stored, response)
}

/// What a client computes for `mysql_native_password` (tests and tools).
pub fn native_password_response(scramble: &[u8], password: &[u8]) -> Vec<u8> {
    Plugin::Native.client_response(scramble, password)
}

/// What a client computes for `caching_sha2_password`'s fast path (tests and tools).
pub fn caching_sha2_response(scramble: &[u8], password: &[u8]) -> Vec<u8> {
    Plugin::CachingSha2.client_response(scramble, password)
}

/// An AuthSwitchRequest: the client is to answer `scramble` with `plugin` instead.
pub fn auth_switch_request(plugin: &str, scramble: &[u8; SCRAMBLE_LEN]) -> Vec<u8> {
    let mut p = Vec::with_capacity(2 + plugin.len() + SCRAMBLE_LEN + 1);
    p.push(0xfe);
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p.extend_from_slice(scramble);
    // The scramble is sent NUL-terminated, as MySQL does (clients take the first 20 bytes).
    p.push(0);
    p
}

/// `caching_sha2_password`'s AuthMoreData "fast authentication succeeded" (0x01 0x03),
/// sent before the OK packet. zipdb keeps SHA256(SHA256(password)) durably, so the fast path
/// always applies and the full authentication (which needs TLS or RSA) never happens.
pub const CACHING_SHA2_FAST_AUTH_OK: [u8; 2] = [0x01, 0x03];

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn response(user: &str, auth: &[u8], db: Option<&str>) -> Vec<u8> {
        let mut p = Vec::new();
        let c = caps::PROTOCOL_41
            | caps::SECURE_CONNECTION
            | caps::PLUGIN_AUTH
            | caps::PLUGIN_AUTH_LENENC_CLIENT_DATA
            | if db.is_some() {
                caps::CONNECT_WITH_DB
            } else {
                0
            };
        p.extend_from_slice(&c.to_le_bytes());
        p.extend_from_slice(&(1u32 << 24).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(user.as_bytes());
        p.push(0);
        super::super::put_lenenc_bytes(&mut p, auth);
        if let Some(d) = db {
            p.extend_from_slice(d.as_bytes());
            p.push(0);
        }
        p.extend_from_slice(NATIVE_PASSWORD.as_bytes());
        p.push(0);
        p
    }

    #[test]
    fn response_parses_user_auth_database_and_plugin() {
        let r = parse_response(&response("root", b"12345678901234567890", Some("sbtest"))).unwrap();
        assert_eq!(r.user, "root");
        assert_eq!(r.auth_response, b"12345678901234567890");
        assert_eq!(r.database.as_deref(), Some("sbtest"));
        assert_eq!(r.auth_plugin.as_deref(), Some(NATIVE_PASSWORD));
        assert_eq!(r.max_packet, 1 << 24);
        let r = parse_response(&response("u", b"", None)).unwrap();
        assert_eq!(r.database, None);
        assert!(r.auth_response.is_empty());
    }

    #[test]
    fn truncated_responses_are_errors() {
        let full = response("root", b"12345678901234567890", Some("sbtest"));
        // Fixed part 32 bytes, "root\0" 5, auth 1 + 20, "sbtest\0" 7.
        let after_auth = 32 + 5 + 21;
        let after_db = after_auth + 7;
        for cut in 0..after_db {
            let r = parse_response(&full[..cut]);
            if cut == after_auth {
                // The database is optional: a response may end after the auth data.
                assert_eq!(r.unwrap().database, None);
            } else {
                assert!(r.is_err(), "cut at {cut} parsed: {r:?}");
            }
        }
    }

    #[test]
    fn native_password_accepts_the_right_password_only() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let scramble = new_scramble(&mut rng);
        assert!(scramble.iter().all(|&b| (0x21..0x7f).contains(&b)));
        let stored = native_password_hash(b"secret");
        let good = native_password_response(&scramble, b"secret");
        assert!(native_password_ok(&scramble, Some(&stored), &good));
        let bad = native_password_response(&scramble, b"Secret");
        assert!(!native_password_ok(&scramble, Some(&stored), &bad));
        assert!(!native_password_ok(&scramble, Some(&stored), b""));
        assert!(!native_password_ok(&scramble, Some(&stored), &good[..19]));
        // An account without a password takes only an empty response.
        assert!(native_password_ok(&scramble, None, b""));
        assert!(!native_password_ok(&scramble, None, &good));
        // A response computed for another scramble fails.
        let other = new_scramble(&mut rng);
        assert!(!native_password_ok(&other, Some(&stored), &good));
    }

    #[test]
    fn native_password_matches_mysqls_published_hash() {
        // PASSWORD('password') in MySQL 5.7 is *2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19.
        let h = native_password_hash(b"password");
        let hex: String = h.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(hex, "2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19");
    }

    proptest::proptest! {
        #[test]
        fn random_responses_never_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..128)) {
            let _ = parse_response(&b);
        }
    }
}
