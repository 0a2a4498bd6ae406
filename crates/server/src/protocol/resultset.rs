//! Text-protocol result sets: column count, column definitions, EOF, rows, EOF (classic EOF
//! framing: libmariadb never asks for CLIENT_DEPRECATE_EOF, see FIELD-NOTES).

use super::packet::PacketIo;
use super::{put_lenenc, put_lenenc_bytes, reply};

/// Column types (`MYSQL_TYPE_*`) that zipdb's columns map to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ColumnType {
    Tiny = 0x01,
    Short = 0x02,
    Long = 0x03,
    Float = 0x04,
    Double = 0x05,
    Null = 0x06,
    Timestamp = 0x07,
    LongLong = 0x08,
    Int24 = 0x09,
    Date = 0x0a,
    DateTime = 0x0c,
    NewDecimal = 0xf6,
    Blob = 0xfc,
    VarString = 0xfd,
    String = 0xfe,
}

/// Column flags.
pub mod flags {
    pub const NOT_NULL: u16 = 1;
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const AUTO_INCREMENT: u16 = 512;
}

/// One column of a result set.
#[derive(Debug, Clone)]
pub struct Column {
    pub schema: String,
    pub table: String,
    pub name: String,
    pub charset: u16,
    /// Maximum display length.
    pub length: u32,
    pub ty: ColumnType,
    pub flags: u16,
    pub decimals: u8,
}

impl Column {
    /// A computed column (no table), e.g. `SELECT @@version_comment`.
    pub fn expr(name: &str, ty: ColumnType, length: u32) -> Column {
        Column {
            schema: String::new(),
            table: String::new(),
            name: name.to_string(),
            // utf8mb4_general_ci for text, binary (63) for numbers, as MySQL reports them.
            charset: if matches!(
                ty,
                ColumnType::VarString | ColumnType::String | ColumnType::Blob
            ) {
                45
            } else {
                63
            },
            length,
            ty,
            flags: 0,
            decimals: if matches!(ty, ColumnType::Float | ColumnType::Double) {
                31
            } else {
                0
            },
        }
    }

    /// The ColumnDefinition41 packet.
    pub fn definition(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(48 + self.name.len() * 2 + self.table.len() * 2);
        put_lenenc_bytes(&mut p, b"def");
        put_lenenc_bytes(&mut p, self.schema.as_bytes());
        put_lenenc_bytes(&mut p, self.table.as_bytes());
        put_lenenc_bytes(&mut p, self.table.as_bytes());
        put_lenenc_bytes(&mut p, self.name.as_bytes());
        put_lenenc_bytes(&mut p, self.name.as_bytes());
        p.push(0x0c);
        p.extend_from_slice(&self.charset.to_le_bytes());
        p.extend_from_slice(&self.length.to_le_bytes());
        p.push(self.ty as u8);
        p.extend_from_slice(&self.flags.to_le_bytes());
        p.push(self.decimals);
        p.extend_from_slice(&[0, 0]);
        p
    }
}

/// Writes a text result set: `rows` hold each value as its text form, `None` for NULL. Nothing
/// is sent until the caller flushes (one write for the whole response).
pub fn write_text<S: std::io::Read + std::io::Write>(
    io: &mut PacketIo<S>,
    columns: &[Column],
    rows: impl IntoIterator<Item = Vec<Option<Vec<u8>>>>,
    status: u16,
) {
    let mut p = Vec::new();
    put_lenenc(&mut p, columns.len() as u64);
    io.write(&p);
    for c in columns {
        io.write(&c.definition());
    }
    io.write(&reply::eof(0, status));
    for row in rows {
        debug_assert_eq!(row.len(), columns.len());
        p.clear();
        for v in &row {
            match v {
                // 0xfb is NULL in a text row.
                None => p.push(0xfb),
                Some(b) => put_lenenc_bytes(&mut p, b),
            }
        }
        io.write(&p);
    }
    io.write(&reply::eof(0, status));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Reader;
    use std::io::Cursor;

    struct Sink(Vec<u8>);
    impl std::io::Read for Sink {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Ok(0)
        }
    }
    impl std::io::Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Splits the wire bytes back into (sequence id, payload) packets.
    fn packets(wire: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        let mut c = Cursor::new(wire);
        while (c.position() as usize) < wire.len() {
            let at = c.position() as usize;
            let n = usize::from(wire[at])
                | usize::from(wire[at + 1]) << 8
                | usize::from(wire[at + 2]) << 16;
            out.push((wire[at + 3], wire[at + 4..at + 4 + n].to_vec()));
            c.set_position((at + 4 + n) as u64);
        }
        out
    }

    #[test]
    fn a_result_set_is_count_definitions_eof_rows_eof_in_sequence() {
        let mut io = PacketIo::new(Sink(Vec::new()), 1024);
        let cols = [
            Column::expr("@@version_comment", ColumnType::VarString, 80),
            Column::expr("n", ColumnType::LongLong, 21),
        ];
        let rows = vec![
            vec![Some(b"zipdb".to_vec()), Some(b"42".to_vec())],
            vec![None, Some(Vec::new())],
        ];
        write_text(&mut io, &cols, rows, 2);
        io.flush().unwrap();
        let wire = std::mem::take(&mut io.stream_mut().0);
        let p = packets(&wire);
        assert_eq!(p.len(), 1 + 2 + 1 + 2 + 1);
        assert!(p
            .iter()
            .enumerate()
            .all(|(i, (seq, _))| usize::from(*seq) == i));
        assert_eq!(p[0].1, [2]);
        // Column definition: catalog "def", empty schema and tables, name twice, then the
        // fixed 12-byte block.
        let mut r = Reader::new(&p[1].1, "coldef");
        assert_eq!(r.lenenc_bytes().unwrap(), b"def");
        for _ in 0..3 {
            assert_eq!(r.lenenc_bytes().unwrap(), b"");
        }
        assert_eq!(r.lenenc_bytes().unwrap(), b"@@version_comment");
        assert_eq!(r.lenenc_bytes().unwrap(), b"@@version_comment");
        assert_eq!(r.u8().unwrap(), 0x0c);
        assert_eq!(r.u16().unwrap(), 45);
        assert_eq!(r.u32().unwrap(), 80);
        assert_eq!(r.u8().unwrap(), ColumnType::VarString as u8);
        // The fixed block is the last 13 bytes; the charset follows its 0x0c length byte.
        assert_eq!(
            p[2].1[p[2].1.len() - 12],
            63,
            "numbers report the binary charset"
        );
        assert_eq!(p[3].1, reply::eof(0, 2));
        assert_eq!(p[4].1, [5, b'z', b'i', b'p', b'd', b'b', 2, b'4', b'2']);
        assert_eq!(p[5].1, [0xfb, 0], "NULL, then an empty string");
        assert_eq!(p[6].1, reply::eof(0, 2));
    }
}
