//! Generic server replies: OK, ERR and EOF packets (protocol 4.1 forms).

use super::put_lenenc;

/// An OK packet.
pub fn ok(affected_rows: u64, last_insert_id: u64, status: u16, warnings: u16) -> Vec<u8> {
    let mut p = Vec::with_capacity(16);
    p.push(0x00);
    put_lenenc(&mut p, affected_rows);
    put_lenenc(&mut p, last_insert_id);
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&warnings.to_le_bytes());
    p
}

/// An ERR packet: MySQL error code, five-character SQLSTATE and message.
pub fn err(code: u16, sqlstate: &str, message: &str) -> Vec<u8> {
    debug_assert_eq!(sqlstate.len(), 5, "SQLSTATE {sqlstate:?}");
    let mut p = Vec::with_capacity(9 + message.len());
    p.push(0xff);
    p.extend_from_slice(&code.to_le_bytes());
    p.push(b'#');
    p.extend_from_slice(sqlstate.as_bytes());
    // Error messages are capped like MySQL's (MYSQL_ERRMSG_SIZE = 512), on a char boundary.
    let mut end = message.len().min(512);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    p.extend_from_slice(&message.as_bytes()[..end]);
    p
}

/// An EOF packet (classic, without CLIENT_DEPRECATE_EOF).
pub fn eof(warnings: u16, status: u16) -> Vec<u8> {
    let mut p = vec![0xfe];
    p.extend_from_slice(&warnings.to_le_bytes());
    p.extend_from_slice(&status.to_le_bytes());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_have_the_documented_layout() {
        assert_eq!(ok(1, 300, 2, 0), [0, 1, 0xfc, 0x2c, 0x01, 2, 0, 0, 0]);
        assert_eq!(eof(0, 2), [0xfe, 0, 0, 2, 0]);
        let e = err(1064, "42000", "syntax");
        assert_eq!(
            &e[..9],
            &[0xff, 0x28, 0x04, b'#', b'4', b'2', b'0', b'0', b'0']
        );
        assert_eq!(&e[9..], b"syntax");
        // A long message is cut on a character boundary.
        let long = "é".repeat(400);
        let e = err(1105, "HY000", &long);
        assert!(std::str::from_utf8(&e[9..]).is_ok());
        assert!(e.len() - 9 <= 512);
    }
}
