//! The checksums and encodings: MD5, SHA1, SHA2, CRC32, TO_BASE64 / FROM_BASE64 and
//! INET_ATON / INET_NTOA.

use crate::expr::builtins as bi;
use crate::expr::func::args::count_arg;
use crate::expr::node::{Args, Arity, ScalarFunction, Typing};
use crate::expr::typing::{BIGINT, BINARY_TEXT, TEXT};
use crate::types::sqltype::SqlType;
use crate::types::value::Value;
use crate::SqlError;

/// A digest of the argument's bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Digest {
    Md5,
    Sha1,
}

/// MD5 and SHA1 / SHA: the digest in lower-case hex.
pub struct Hash(pub Digest);

impl ScalarFunction for Hash {
    fn name(&self) -> &'static str {
        match self.0 {
            Digest::Md5 => "md5",
            Digest::Sha1 => "sha1",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let Some(b) = a.value(0)?.to_text() else {
            return Ok(Value::Null);
        };
        Ok(Value::Str(match self.0 {
            Digest::Md5 => bi::hex_lower(&bi::md5(&b)),
            Digest::Sha1 => {
                use sha1::Digest;
                bi::hex_lower(&sha1::Sha1::digest(&b))
            }
        }))
    }
}

/// SHA2(x, bits): SHA-224, -256, -384 or -512; NULL for another length.
pub struct Sha2;

impl ScalarFunction for Sha2 {
    fn name(&self) -> &'static str {
        "sha2"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        let Some(b) = a.value(0)?.to_text() else {
            return Ok(Value::Null);
        };
        // A NULL length reads as 0, which means 256.
        let n = count_arg(&a.value(1)?).unwrap_or(0);
        use sha2::Digest;
        Ok(Value::Str(match n {
            0 | 256 => bi::hex_lower(&sha2::Sha256::digest(&b)),
            224 => bi::hex_lower(&sha2::Sha224::digest(&b)),
            384 => bi::hex_lower(&sha2::Sha384::digest(&b)),
            512 => bi::hex_lower(&sha2::Sha512::digest(&b)),
            _ => return Ok(Value::Null),
        }))
    }
}

/// CRC32(x): INT UNSIGNED in MariaDB (`CRC32(x) * -1` is out of range there too).
pub struct Crc32;

impl ScalarFunction for Crc32 {
    fn name(&self) -> &'static str {
        "crc32"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(SqlType::Int {
            bytes: 4,
            unsigned: true,
        })
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)?.to_text() {
            None => Value::Null,
            Some(b) => Value::UInt(u64::from(bi::crc32(&b))),
        })
    }
}

/// TO_BASE64(x).
pub struct ToBase64;

impl ScalarFunction for ToBase64 {
    fn name(&self) -> &'static str {
        "to_base64"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)?.to_text() {
            None => Value::Null,
            Some(b) => Value::Str(bi::to_base64(&b)),
        })
    }
}

/// FROM_BASE64(text): bytes, NULL for text that is not base64.
pub struct FromBase64;

impl ScalarFunction for FromBase64 {
    fn name(&self) -> &'static str {
        "from_base64"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(BINARY_TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)?.to_text() {
            None => Value::Null,
            Some(b) => bi::from_base64(&b).map_or(Value::Null, Value::Bytes),
        })
    }
}

/// INET_ATON('a.b.c.d'): the address as a number.
pub struct InetAton;

impl ScalarFunction for InetAton {
    fn name(&self) -> &'static str {
        "inet_aton"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(BIGINT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.text(0)? {
            None => Value::Null,
            Some(x) => bi::inet_aton(&x).map_or(Value::Null, |n| Value::Int(n as i64)),
        })
    }
}

/// INET_NTOA(n): the dotted address.
pub struct InetNtoa;

impl ScalarFunction for InetNtoa {
    fn name(&self) -> &'static str {
        "inet_ntoa"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn return_type(&self, _: &Typing<'_>) -> Option<SqlType> {
        Some(TEXT)
    }
    fn eval(&self, a: &Args<'_>) -> Result<Value, SqlError> {
        Ok(match a.value(0)? {
            Value::Null => Value::Null,
            v => match count_arg(&v) {
                Some(n) if n >= 0 => bi::inet_ntoa(n as u64).map_or(Value::Null, Value::Str),
                _ => Value::Null,
            },
        })
    }
}
