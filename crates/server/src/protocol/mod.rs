//! The MySQL client/server protocol, as much of it as zipdb speaks: packet framing
//! ([`packet`]), the connection phase ([`handshake`]), generic replies ([`reply`]) and
//! prepared statements' binary protocol ([`binary`]); text result sets are built in `conn.rs`
//! from `zipdb_sql::ColumnMeta`.
//!
//! Written here rather than taken from a crate: the candidates measured in FIELD-NOTES either
//! hang clients that name a database at connect, panic on malformed parameters or lack
//! `caching_sha2_password`, and the wire layer is small. Everything read from the client is
//! bounds-checked and turns into a [`ProtoError`], never a panic.

pub mod binary;
pub mod handshake;
pub mod packet;
pub mod reply;

/// Capability flags (`CLIENT_*`).
pub mod caps {
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 1 << 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const NO_SCHEMA: u32 = 1 << 4;
    pub const ODBC: u32 = 1 << 6;
    /// The client may send a file for LOAD DATA LOCAL INFILE.
    pub const LOCAL_FILES: u32 = 1 << 7;
    pub const IGNORE_SPACE: u32 = 1 << 8;
    pub const PROTOCOL_41: u32 = 1 << 9;
    pub const INTERACTIVE: u32 = 1 << 10;
    pub const SSL: u32 = 1 << 11;
    pub const TRANSACTIONS: u32 = 1 << 13;
    pub const SECURE_CONNECTION: u32 = 1 << 15;
    pub const MULTI_STATEMENTS: u32 = 1 << 16;
    pub const MULTI_RESULTS: u32 = 1 << 17;
    pub const PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const PLUGIN_AUTH: u32 = 1 << 19;
    pub const CONNECT_ATTRS: u32 = 1 << 20;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    pub const DEPRECATE_EOF: u32 = 1 << 24;

    /// What the server offers. No SSL (yet), and no DEPRECATE_EOF: libmariadb never asks for it
    /// (FIELD-NOTES), so classic EOF packets are the one path to keep right.
    pub const SERVER: u32 = LONG_PASSWORD
        | FOUND_ROWS
        | LONG_FLAG
        | CONNECT_WITH_DB
        | NO_SCHEMA
        | ODBC
        | LOCAL_FILES
        | IGNORE_SPACE
        | PROTOCOL_41
        | INTERACTIVE
        | TRANSACTIONS
        | SECURE_CONNECTION
        | MULTI_STATEMENTS
        | MULTI_RESULTS
        | PS_MULTI_RESULTS
        | PLUGIN_AUTH
        | CONNECT_ATTRS
        | PLUGIN_AUTH_LENENC_CLIENT_DATA;
}

/// Command bytes (`COM_*`).
pub mod command {
    pub const QUIT: u8 = 0x01;
    pub const INIT_DB: u8 = 0x02;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const STATISTICS: u8 = 0x09;
    pub const PING: u8 = 0x0e;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_RESET: u8 = 0x1a;
    pub const SET_OPTION: u8 = 0x1b;
}

/// Server status flags.
pub mod status {
    pub const IN_TRANS: u16 = 0x0001;
    pub const AUTOCOMMIT: u16 = 0x0002;
    pub const MORE_RESULTS_EXISTS: u16 = 0x0008;
    pub const NO_INDEX_USED: u16 = 0x0020;
}

/// Charset 45: utf8mb4_general_ci, what sysbench and the mariadb client ask for.
pub const DEFAULT_CHARSET: u8 = 45;

/// A malformed or unacceptable exchange on the wire; the connection is closed after it
/// (with an error packet first, where the protocol still allows one).
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("packet out of order: sequence id {got}, expected {expected}")]
    Sequence { expected: u8, got: u8 },
    #[error("connection closed in the middle of a {0}")]
    Truncated(&'static str),
    #[error("packet of {len} bytes is larger than max_allowed_packet ({max})")]
    TooLarge { len: usize, max: usize },
    #[error("malformed {what}: {why}")]
    Malformed { what: &'static str, why: String },
    /// A wait bounded by [`packet::Timeouts`] ran out.
    #[error("timed out waiting for {0}")]
    Timeout(packet::Wait),
}

/// A little-endian reader over a client payload; every read is bounds-checked.
pub struct Reader<'a> {
    b: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { b, what }
    }

    pub fn remaining(&self) -> usize {
        self.b.len()
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.b)
    }

    fn bad(&self, why: impl Into<String>) -> ProtoError {
        ProtoError::Malformed {
            what: self.what,
            why: why.into(),
        }
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        if self.b.len() < n {
            return Err(self.bad(format!("needs {n} more bytes, has {}", self.b.len())));
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Ok(head)
    }

    pub fn u8(&mut self) -> Result<u8, ProtoError> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, ProtoError> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, ProtoError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length-encoded integer.
    pub fn lenenc(&mut self) -> Result<u64, ProtoError> {
        Ok(match self.u8()? {
            n @ 0..=0xfa => u64::from(n),
            0xfc => u64::from(self.u16()?),
            0xfd => {
                let b = self.bytes(3)?;
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16
            }
            0xfe => {
                let b = self.bytes(8)?;
                u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
            }
            n => return Err(self.bad(format!("length-encoded integer starts with {n:#x}"))),
        })
    }

    pub fn lenenc_bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let n = self.lenenc()?;
        let n = usize::try_from(n).map_err(|_| self.bad("length does not fit in memory"))?;
        self.bytes(n)
    }

    /// Bytes up to (not including) a NUL, which is consumed.
    pub fn nul_str(&mut self) -> Result<&'a [u8], ProtoError> {
        match self.b.iter().position(|&c| c == 0) {
            Some(i) => {
                let s = &self.b[..i];
                self.b = &self.b[i + 1..];
                Ok(s)
            }
            None => Err(self.bad("string without its terminating NUL")),
        }
    }
}

/// Appends a length-encoded integer.
pub fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xfa => out.push(n as u8),
        0xfb..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Appends length-encoded bytes.
pub fn put_lenenc_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_lenenc(out, b.len() as u64);
    out.extend_from_slice(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips_at_every_width_boundary() {
        for n in [
            0u64,
            250,
            251,
            0xffff,
            0x1_0000,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, n);
            let mut r = Reader::new(&out, "test");
            assert_eq!(r.lenenc().unwrap(), n);
            assert_eq!(r.remaining(), 0);
        }
        // 0xfb (NULL in rows) and 0xff are not integers.
        assert!(Reader::new(&[0xfb], "t").lenenc().is_err());
        assert!(Reader::new(&[0xff], "t").lenenc().is_err());
        // Truncated and absurd lengths are errors, not panics or huge allocations.
        assert!(Reader::new(&[0xfd, 1], "t").lenenc().is_err());
        assert!(Reader::new(&[0xfe, 0, 0, 0, 0, 0, 0, 0, 0x80], "t")
            .lenenc_bytes()
            .is_err());
        assert!(Reader::new(b"abc", "t").nul_str().is_err());
    }
}
