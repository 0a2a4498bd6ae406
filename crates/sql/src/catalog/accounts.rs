//! User accounts: who may log in, from where, and how the password is checked.
//!
//! An account is a user name and a host pattern (`'bob'@'%'`), an authentication plugin and
//! the plugin's stored *verifier* (what the password check needs; never the password). There
//! is no privilege system: every account may do everything (GRANT ALL is accepted because it
//! grants nothing an account does not already have).
//!
//! # Plugins and verifiers
//! - `mysql_native_password`: verifier SHA1(SHA1(password)), 20 bytes, as MySQL stores it.
//!   The client answers the 20-byte scramble with
//!   SHA1(password) XOR SHA1(scramble || SHA1(SHA1(password))).
//! - `caching_sha2_password`: verifier SHA256(SHA256(password)), 32 bytes. The client answers
//!   with SHA256(password) XOR SHA256(SHA256(SHA256(password)) || scramble) (note the order is
//!   the reverse of native's). MySQL stores a salted SHA256-crypt string and keeps
//!   SHA256(SHA256(password)) only in a memory cache, falling back to a full authentication
//!   over TLS or RSA on a cache miss; zipdb stores the cache's value durably, so every login
//!   takes the fast path and no TLS or RSA is needed. The stored verifier is therefore
//!   hash-equivalent to native's (an unsalted double hash): whoever reads it can log in as
//!   that account with a modified client, exactly as with `mysql_native_password`.
//!
//! An empty password has an empty verifier with either plugin; such an account is let in
//! only from a loopback address (see [`Accounts::login`]).
//!
//! # Host matching
//! Peers are matched by IP address only (no DNS lookups, like MySQL's `skip_name_resolve`):
//! - `localhost` matches loopback peers (127.0.0.0/8 and ::1);
//! - a pattern with `%` (any run of characters) or `_` (one character) matches the peer's
//!   address as text, e.g. `'192.168.1.%'`; `%` alone matches every peer;
//! - anything else matches a peer whose address equals it (`127.0.0.1`, `::1`, `10.0.0.7`);
//!   a host name other than `localhost` never matches.
//!
//! When several accounts of the user match, the most specific wins: patterns without
//! wildcards first, then the pattern with the most literal characters, `%` last; ties go to
//! the account that sorts first by host. (MySQL sorts the same way, roughly.) User names are
//! compared exactly (case-sensitive), host patterns are stored lower-case.
//!
//! # Storage
//! Accounts live in the catalog tree (see [`crate::catalog`]) under
//! `U\0<user>\0<host>` → `[1][plugin name length u8][plugin name][verifier length u8]
//! [verifier]` (the leading 1 is the format version). Changes are written in one synchronous
//! engine transaction, like other DDL. A catalog without any `U` key (a new data directory,
//! or one from before accounts existed) has the single account `'root'@'localhost'` without a
//! password; it is written out with the first change to the accounts.

use std::fmt;
use std::net::IpAddr;

use sha1::Sha1;
use sha2::{Digest, Sha256};

/// Key prefix of accounts in the catalog tree.
pub const KEY_PREFIX: u8 = b'U';

/// Format version of an account's stored value.
const VALUE_VERSION: u8 = 1;

/// Longest user name (MySQL 8's limit).
pub const USER_NAME_MAX: usize = 32;
/// Longest host pattern (MySQL 8's limit).
pub const HOST_NAME_MAX: usize = 255;

/// An authentication plugin zipdb implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plugin {
    Native,
    CachingSha2,
}

impl Plugin {
    /// What `IDENTIFIED BY` without `WITH` uses: the plugin every client speaks and the one
    /// the server's handshake announces, so that a login needs no plugin switch.
    pub const DEFAULT: Plugin = Plugin::Native;

    pub const fn name(self) -> &'static str {
        match self {
            Plugin::Native => "mysql_native_password",
            Plugin::CachingSha2 => "caching_sha2_password",
        }
    }

    /// The plugin of that name (case-insensitive, as MySQL's plugin names are).
    pub fn from_name(name: &str) -> Option<Plugin> {
        [Plugin::Native, Plugin::CachingSha2]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// The stored verifier of `password`; empty for an empty password.
    pub fn verifier(self, password: &[u8]) -> Vec<u8> {
        if password.is_empty() {
            return Vec::new();
        }
        match self {
            Plugin::Native => Sha1::digest(Sha1::digest(password)).to_vec(),
            Plugin::CachingSha2 => Sha256::digest(Sha256::digest(password)).to_vec(),
        }
    }

    /// Whether `response` answers `scramble` for an account with `verifier`.
    ///
    /// An account without a password takes an empty response (or a single NUL, which some
    /// clients send for an empty password) and nothing else.
    pub fn check(self, scramble: &[u8], verifier: &[u8], response: &[u8]) -> bool {
        if verifier.is_empty() {
            return response.is_empty() || response == [0];
        }
        // Both plugins: response = stage1 XOR mask, where SHA(stage1) is the verifier and the
        // mask is computed from the verifier and the scramble. Recover stage1, hash it, compare.
        match self {
            Plugin::Native => {
                let mut h = Sha1::new();
                h.update(scramble);
                h.update(verifier);
                let mask = h.finalize();
                unmasked_hash_is::<Sha1>(response, &mask, verifier)
            }
            Plugin::CachingSha2 => {
                let mut h = Sha256::new();
                h.update(verifier);
                h.update(scramble);
                let mask = h.finalize();
                unmasked_hash_is::<Sha256>(response, &mask, verifier)
            }
        }
    }

    /// What a client sends for `password` (tests and tools); empty for an empty password.
    pub fn client_response(self, scramble: &[u8], password: &[u8]) -> Vec<u8> {
        if password.is_empty() {
            return Vec::new();
        }
        match self {
            Plugin::Native => {
                let stage1 = Sha1::digest(password);
                let mut h = Sha1::new();
                h.update(scramble);
                h.update(Sha1::digest(stage1));
                xor(&stage1, &h.finalize())
            }
            Plugin::CachingSha2 => {
                let stage1 = Sha256::digest(password);
                let mut h = Sha256::new();
                h.update(Sha256::digest(stage1));
                h.update(scramble);
                xor(&stage1, &h.finalize())
            }
        }
    }
}

impl fmt::Display for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// `D(response XOR mask) == expected`, for responses of the digest's length only.
fn unmasked_hash_is<D: Digest>(response: &[u8], mask: &[u8], expected: &[u8]) -> bool {
    if response.len() != mask.len() {
        return false;
    }
    // Not constant-time: the scramble is fresh per connection, so what timing could reveal
    // is of no use for the next attempt.
    D::digest(xor(response, mask)).as_slice() == expected
}

/// One account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub user: String,
    /// Host pattern, lower-case.
    pub host: String,
    pub plugin: Plugin,
    /// See the module documentation; empty: no password.
    pub verifier: Vec<u8>,
}

impl Account {
    pub fn new(user: &str, host: &str, plugin: Plugin, password: &[u8]) -> Account {
        Account {
            user: user.to_string(),
            host: normalize_host(host),
            plugin,
            verifier: plugin.verifier(password),
        }
    }

    pub fn has_password(&self) -> bool {
        !self.verifier.is_empty()
    }

    /// The catalog key: `U\0<user>\0<host>`.
    pub fn key(&self) -> Vec<u8> {
        key(&self.user, &self.host)
    }

    /// The catalog value (see the module documentation).
    pub fn encode_value(&self) -> Vec<u8> {
        let name = self.plugin.name().as_bytes();
        let mut v = Vec::with_capacity(3 + name.len() + self.verifier.len());
        v.push(VALUE_VERSION);
        // Plugin names and verifiers are short constants (at most 21 and 32 bytes).
        v.push(name.len() as u8);
        v.extend_from_slice(name);
        v.push(self.verifier.len() as u8);
        v.extend_from_slice(&self.verifier);
        v
    }

    /// Decodes a catalog entry written by [`Account::key`] and [`Account::encode_value`].
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Account, AccountDecodeError> {
        let rest = key
            .strip_prefix(&[KEY_PREFIX, 0])
            .ok_or(AccountDecodeError::Key)?;
        let sep = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(AccountDecodeError::Key)?;
        let user = std::str::from_utf8(&rest[..sep]).map_err(|_| AccountDecodeError::Key)?;
        let host = std::str::from_utf8(&rest[sep + 1..]).map_err(|_| AccountDecodeError::Key)?;
        let (&version, v) = value.split_first().ok_or(AccountDecodeError::Truncated)?;
        if version != VALUE_VERSION {
            return Err(AccountDecodeError::Version(version));
        }
        let (&n, v) = v.split_first().ok_or(AccountDecodeError::Truncated)?;
        let n = usize::from(n);
        if v.len() < n {
            return Err(AccountDecodeError::Truncated);
        }
        let name = String::from_utf8_lossy(&v[..n]);
        let plugin =
            Plugin::from_name(&name).ok_or_else(|| AccountDecodeError::Plugin(name.to_string()))?;
        let (&m, v) = v[n..].split_first().ok_or(AccountDecodeError::Truncated)?;
        if v.len() != usize::from(m) {
            return Err(AccountDecodeError::Truncated);
        }
        Ok(Account {
            user: user.to_string(),
            host: host.to_string(),
            plugin,
            verifier: v.to_vec(),
        })
    }
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", quoted(&self.user, &self.host))
    }
}

/// `'user'@'host'`, as MySQL's messages show an account.
pub fn quoted(user: &str, host: &str) -> String {
    format!("'{user}'@'{host}'")
}

/// Why a stored account does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccountDecodeError {
    #[error("malformed account key")]
    Key,
    #[error("truncated account value")]
    Truncated,
    #[error("unknown account format version {0}")]
    Version(u8),
    #[error("unknown authentication plugin '{0}'")]
    Plugin(String),
}

/// The catalog key of account `user@host`.
pub fn key(user: &str, host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(3 + user.len() + host.len());
    k.push(KEY_PREFIX);
    k.push(0);
    k.extend_from_slice(user.as_bytes());
    k.push(0);
    k.extend_from_slice(host.as_bytes());
    k
}

/// Host patterns are case-insensitive and stored lower-case; an empty host means `%`, as in
/// MySQL.
pub fn normalize_host(host: &str) -> String {
    if host.is_empty() {
        "%".to_string()
    } else {
        host.to_ascii_lowercase()
    }
}

/// Whether a peer at `peer` may use an account without a password: only from loopback.
pub fn passwordless_allowed_from(peer: Option<IpAddr>) -> bool {
    peer.is_some_and(|p| p.to_canonical().is_loopback())
}

/// Whether host pattern `pattern` (lower-case) matches a peer at `peer`.
pub fn host_matches(pattern: &str, peer: IpAddr) -> bool {
    let peer = peer.to_canonical();
    if pattern == "localhost" {
        return peer.is_loopback();
    }
    if pattern.contains(['%', '_']) {
        return wildcard_match(pattern.as_bytes(), peer.to_string().as_bytes());
    }
    pattern
        .parse::<IpAddr>()
        .is_ok_and(|p| p.to_canonical() == peer)
}

/// LIKE-style matching: `%` any run, `_` one character (iterative, with one backtrack point,
/// so a hostile pattern cannot make it exponential).
fn wildcard_match(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() && (pat[p] == b'_' || pat[p] == s[i]) {
            p += 1;
            i += 1;
        } else if p < pat.len() && pat[p] == b'%' {
            star = Some((p, i));
            p += 1;
        } else if let Some((sp, si)) = star {
            p = sp + 1;
            i = si + 1;
            star = Some((sp, si + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'%')
}

/// How specific a host pattern is; smaller sorts first (wins).
fn specificity(pattern: &str) -> (bool, std::cmp::Reverse<usize>) {
    let wild = pattern.contains(['%', '_']);
    let literal = pattern.chars().filter(|c| !matches!(c, '%' | '_')).count();
    (wild, std::cmp::Reverse(literal))
}

/// Why a login finds no account to check the password against. The client is told 1045
/// either way, so that it cannot tell which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefusal {
    /// No account of that user matches the peer.
    NoAccount,
    /// The matching account has no password and the peer is not on loopback.
    NoPasswordFromNetwork,
}

/// All accounts, in memory (a copy of the catalog's `U` entries).
#[derive(Debug, Clone)]
pub struct Accounts {
    list: Vec<Account>,
    /// Whether `list` is what the catalog holds; false while only the bootstrap account
    /// exists, which is then written out with the first change.
    pub(crate) stored: bool,
}

impl Accounts {
    /// The accounts of a catalog without any: `'root'@'localhost'` without a password.
    pub fn bootstrap() -> Accounts {
        Accounts {
            list: vec![Account::new("root", "localhost", Plugin::DEFAULT, b"")],
            stored: false,
        }
    }

    /// Accounts as loaded from the catalog (bootstrap if there are none).
    pub fn from_stored(list: Vec<Account>) -> Accounts {
        if list.is_empty() {
            return Accounts::bootstrap();
        }
        let mut a = Accounts { list, stored: true };
        a.sort();
        a
    }

    fn sort(&mut self) {
        self.list
            .sort_by(|a, b| (&a.user, &a.host).cmp(&(&b.user, &b.host)));
    }

    pub fn iter(&self) -> impl Iterator<Item = &Account> {
        self.list.iter()
    }

    pub fn get(&self, user: &str, host: &str) -> Option<&Account> {
        let host = normalize_host(host);
        self.list.iter().find(|a| a.user == user && a.host == host)
    }

    /// Adds or replaces an account.
    pub fn put(&mut self, account: Account) {
        match self
            .list
            .iter_mut()
            .find(|a| a.user == account.user && a.host == account.host)
        {
            Some(a) => *a = account,
            None => {
                self.list.push(account);
                self.sort();
            }
        }
    }

    pub fn remove(&mut self, user: &str, host: &str) -> Option<Account> {
        let host = normalize_host(host);
        let i = self
            .list
            .iter()
            .position(|a| a.user == user && a.host == host)?;
        Some(self.list.remove(i))
    }

    /// Accounts without a password.
    pub fn passwordless(&self) -> impl Iterator<Item = &Account> {
        self.list.iter().filter(|a| !a.has_password())
    }

    /// The account a login as `user` from `peer` is checked against: the most specific
    /// matching one (see the module documentation). One without a password is refused unless
    /// the peer is on loopback, whatever its host pattern says.
    pub fn login(&self, user: &str, peer: Option<IpAddr>) -> Result<&Account, LoginRefusal> {
        let peer = peer.ok_or(LoginRefusal::NoAccount)?;
        let best = self
            .list
            .iter()
            .filter(|a| a.user == user && host_matches(&a.host, peer))
            .min_by_key(|a| specificity(&a.host))
            .ok_or(LoginRefusal::NoAccount)?;
        if !best.has_password() && !passwordless_allowed_from(Some(peer)) {
            return Err(LoginRefusal::NoPasswordFromNetwork);
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    // The expected values below were computed independently with Python's hashlib
    // (hashlib.sha1 / hashlib.sha256 in a throwaway script), not with this code.

    #[test]
    fn native_verifier_and_response_match_known_vectors() {
        assert_eq!(
            hex(&Plugin::Native.verifier(b"password")),
            "2470c0c06dee42fd1618bb99005adca2ec9d1e19"
        );
        let scramble = b"abcdefghijklmnopqrst";
        let r = Plugin::Native.client_response(scramble, b"secret");
        assert_eq!(hex(&r), "8817c50fa779daef010ee7577825b0847df9842e");
        let v = Plugin::Native.verifier(b"secret");
        assert!(Plugin::Native.check(scramble, &v, &r));
        assert!(!Plugin::Native.check(b"abcdefghijklmnopqrsu", &v, &r));
        assert!(!Plugin::Native.check(scramble, &Plugin::Native.verifier(b"Secret"), &r));
        assert!(!Plugin::Native.check(scramble, &v, &r[..19]));
        assert!(!Plugin::Native.check(scramble, &v, b""));
    }

    #[test]
    fn caching_sha2_verifier_and_response_match_known_vectors() {
        assert_eq!(
            hex(&Plugin::CachingSha2.verifier(b"password")),
            "73641c99f7719f57d8f4beb11a303afcd190243a51ced8782ca6d3dbe014d146"
        );
        let scramble = b"abcdefghijklmnopqrst";
        let r = Plugin::CachingSha2.client_response(scramble, b"secret");
        assert_eq!(
            hex(&r),
            "c76e2898612a4cf042c77fa8c4702c4c64c0c2c557c53c4d75595aaa6abae809"
        );
        let v = Plugin::CachingSha2.verifier(b"secret");
        assert!(Plugin::CachingSha2.check(scramble, &v, &r));
        assert!(!Plugin::CachingSha2.check(b"abcdefghijklmnopqrsu", &v, &r));
        assert!(!Plugin::CachingSha2.check(scramble, &v, &r[..31]));
        // A native response never passes a sha2 check, and the other way round.
        let native = Plugin::Native.client_response(scramble, b"secret");
        assert!(!Plugin::CachingSha2.check(scramble, &v, &native));
        assert!(!Plugin::Native.check(scramble, &Plugin::Native.verifier(b"secret"), &r));
    }

    #[test]
    fn empty_passwords_take_only_empty_responses() {
        for p in [Plugin::Native, Plugin::CachingSha2] {
            assert!(p.verifier(b"").is_empty());
            assert!(p.check(b"12345678901234567890", &[], b""));
            assert!(p.check(b"12345678901234567890", &[], b"\0"));
            assert!(!p.check(b"12345678901234567890", &[], b"x"));
            let v = p.verifier(b"pw");
            assert!(!p.check(b"12345678901234567890", &v, b""));
        }
    }

    #[test]
    fn plugins_are_found_by_name_ignoring_case() {
        assert_eq!(
            Plugin::from_name("MYSQL_NATIVE_PASSWORD"),
            Some(Plugin::Native)
        );
        assert_eq!(
            Plugin::from_name("caching_sha2_password"),
            Some(Plugin::CachingSha2)
        );
        assert_eq!(Plugin::from_name("sha256_password"), None);
    }

    #[test]
    fn accounts_round_trip_through_their_catalog_encoding() {
        for a in [
            Account::new("root", "localhost", Plugin::Native, b""),
            Account::new("bob", "%", Plugin::CachingSha2, b"pw"),
            Account::new("ünï", "10.0.0.%", Plugin::Native, b"x"),
        ] {
            assert_eq!(Account::decode(&a.key(), &a.encode_value()), Ok(a.clone()));
        }
        let a = Account::new("bob", "%", Plugin::CachingSha2, b"pw");
        let v = a.encode_value();
        for cut in 0..v.len() {
            assert!(Account::decode(&a.key(), &v[..cut]).is_err(), "cut {cut}");
        }
        let mut bad = v.clone();
        bad[0] = 9;
        assert_eq!(
            Account::decode(&a.key(), &bad),
            Err(AccountDecodeError::Version(9))
        );
        assert_eq!(
            Account::decode(b"U\0nohost", &v),
            Err(AccountDecodeError::Key)
        );
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("test address")
    }

    #[test]
    fn host_patterns_match_as_documented() {
        assert!(host_matches("localhost", ip("127.0.0.1")));
        assert!(host_matches("localhost", ip("127.0.0.2")));
        assert!(host_matches("localhost", ip("::1")));
        assert!(host_matches("localhost", ip("::ffff:127.0.0.1")));
        assert!(!host_matches("localhost", ip("10.0.0.1")));
        assert!(host_matches("%", ip("10.0.0.1")));
        assert!(host_matches("%", ip("::1")));
        assert!(host_matches("10.0.0.1", ip("10.0.0.1")));
        assert!(host_matches("10.0.0.1", ip("::ffff:10.0.0.1")));
        assert!(!host_matches("10.0.0.1", ip("10.0.0.12")));
        assert!(host_matches("10.0.0.%", ip("10.0.0.12")));
        assert!(!host_matches("10.0.0.%", ip("10.0.1.12")));
        assert!(host_matches("10.0.0._", ip("10.0.0.7")));
        assert!(!host_matches("10.0.0._", ip("10.0.0.17")));
        assert!(host_matches("::1", ip("::1")));
        assert!(!host_matches("db.example.com", ip("10.0.0.1")));
        assert!(wildcard_match(b"%a%b%", b"xxaxxbxx"));
        assert!(!wildcard_match(b"%a%b", b"xxaxxbxx"));
    }

    #[test]
    fn the_most_specific_account_wins() {
        let mut a = Accounts::from_stored(vec![
            Account::new("bob", "%", Plugin::Native, b"any"),
            Account::new("bob", "10.0.0.%", Plugin::Native, b"lan"),
            Account::new("bob", "10.0.0.5", Plugin::Native, b"five"),
            Account::new("bob", "localhost", Plugin::CachingSha2, b"local"),
        ]);
        let host_for = |a: &Accounts, p: &str| a.login("bob", Some(ip(p))).map(|x| x.host.clone());
        assert_eq!(host_for(&a, "10.0.0.5"), Ok("10.0.0.5".to_string()));
        assert_eq!(host_for(&a, "10.0.0.6"), Ok("10.0.0.%".to_string()));
        assert_eq!(host_for(&a, "192.168.0.1"), Ok("%".to_string()));
        assert_eq!(host_for(&a, "127.0.0.1"), Ok("localhost".to_string()));
        assert_eq!(
            a.login("alice", Some(ip("127.0.0.1"))),
            Err(LoginRefusal::NoAccount)
        );
        assert!(a.remove("bob", "LOCALHOST").is_some());
        assert_eq!(host_for(&a, "127.0.0.1"), Ok("%".to_string()));
    }

    #[test]
    fn accounts_without_a_password_are_refused_from_the_network() {
        let a = Accounts::from_stored(vec![
            Account::new("root", "localhost", Plugin::Native, b""),
            Account::new("open", "%", Plugin::Native, b""),
            Account::new("locked", "%", Plugin::CachingSha2, b"pw"),
        ]);
        assert!(a.login("root", Some(ip("127.0.0.1"))).is_ok());
        assert!(a.login("root", Some(ip("::1"))).is_ok());
        assert!(a.login("open", Some(ip("127.0.0.1"))).is_ok());
        assert_eq!(
            a.login("open", Some(ip("10.1.2.3"))),
            Err(LoginRefusal::NoPasswordFromNetwork)
        );
        assert_eq!(
            a.login("root", Some(ip("10.1.2.3"))),
            Err(LoginRefusal::NoAccount)
        );
        assert!(a.login("locked", Some(ip("10.1.2.3"))).is_ok());
        assert_eq!(a.login("root", None), Err(LoginRefusal::NoAccount));
        assert!(passwordless_allowed_from(Some(ip("::ffff:127.0.0.1"))));
        assert!(!passwordless_allowed_from(Some(ip("0.0.0.0"))));
        assert!(!passwordless_allowed_from(None));
    }

    #[test]
    fn a_catalog_without_accounts_has_root_at_localhost_without_a_password() {
        let a = Accounts::from_stored(Vec::new());
        assert!(!a.stored);
        let root = a.get("root", "localhost").expect("bootstrap root");
        assert!(!root.has_password());
        assert_eq!(a.iter().count(), 1);
    }
}
