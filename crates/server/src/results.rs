//! Statement results on the wire: [`WireSink`] writes what the session produces as it
//! produces it (docs/design/issue20-sql-engine.md §4.3).
//!
//! Rows are encoded into the connection's output buffer, which is sent whenever it holds
//! [`FLUSH_AT`] bytes: a result never sits in memory whole a second time. A result that fails
//! before anything of it was sent is taken back and only its ERR goes out, so a result under
//! [`FLUSH_AT`] reads exactly as when results were sent whole; one that fails later ends with
//! the ERR after the rows already sent, as in MySQL.

use std::io::Read;
use std::net::TcpStream;
use std::sync::Arc;

use zipdb_sql::value::DateTime;
use zipdb_sql::{ColumnMeta, ResultSink, SinkClosed, StatementEnd, Status, Value};

use crate::protocol::binary;
use crate::protocol::packet::{Mark, PacketIo};
use crate::protocol::{put_lenenc, put_lenenc_bytes, reply, status, ProtoError};

/// Output buffered past this many bytes is sent: big enough that a result costs few system
/// calls, small enough that a large one holds little memory.
pub(crate) const FLUSH_AT: usize = 64 << 10;

/// A ColumnDefinition41 packet.
pub(crate) fn column_definition(c: &ColumnMeta) -> Vec<u8> {
    let mut p = Vec::with_capacity(48 + c.name.len() * 2 + c.table.len() * 2);
    put_lenenc_bytes(&mut p, b"def");
    put_lenenc_bytes(&mut p, c.schema.as_bytes());
    put_lenenc_bytes(&mut p, c.table.as_bytes());
    put_lenenc_bytes(&mut p, c.org_table.as_bytes());
    put_lenenc_bytes(&mut p, c.name.as_bytes());
    put_lenenc_bytes(&mut p, c.org_name.as_bytes());
    p.push(0x0c);
    p.extend_from_slice(&c.charset.to_le_bytes());
    p.extend_from_slice(&c.length.to_le_bytes());
    p.push(c.wire_type);
    p.extend_from_slice(&c.flags.to_le_bytes());
    p.push(c.decimals);
    p.extend_from_slice(&[0, 0]);
    p
}

/// An OK packet with an info string (e.g. "Rows matched: 1  Changed: 1  Warnings: 0"),
/// length-encoded as MariaDB sends it and libmariadb reads it.
pub(crate) fn ok_info(
    affected: u64,
    last_id: u64,
    status: u16,
    warnings: u16,
    info: &str,
) -> Vec<u8> {
    let mut p = reply::ok(affected, last_id, status, warnings);
    if !info.is_empty() {
        put_lenenc_bytes(&mut p, info.as_bytes());
    }
    p
}

/// The status flags of a packet that ends a result (or announces one).
fn flags(s: Status) -> u16 {
    if s.more {
        s.flags | status::MORE_RESULTS_EXISTS
    } else {
        s.flags
    }
}

/// One command's results, written to the connection as the session hands them over.
pub(crate) struct WireSink<'a> {
    io: &'a mut PacketIo<TcpStream>,
    /// Rows in the binary protocol (COM_STMT_EXECUTE), else text.
    binary: bool,
    columns: Option<Arc<Vec<ColumnMeta>>>,
    /// Where the open result set began (an error before anything of it was sent goes back
    /// here), and where its EOF after the column definitions is.
    start: Option<(Mark, Mark)>,
    /// A row's payload, reused.
    row: Vec<u8>,
    /// Sending failed: the connection is dead, and the command's answer ends here.
    failed: Option<ProtoError>,
    /// The client may send files (LOAD DATA LOCAL).
    local_files: bool,
}

impl<'a> WireSink<'a> {
    pub(crate) fn new(io: &'a mut PacketIo<TcpStream>, binary: bool) -> WireSink<'a> {
        WireSink {
            io,
            binary,
            columns: None,
            start: None,
            row: Vec::with_capacity(256),
            failed: None,
            local_files: false,
        }
    }

    /// Lets LOAD DATA LOCAL ask the client for files (it offered CLIENT_LOCAL_FILES).
    pub(crate) fn local_files(mut self, yes: bool) -> Self {
        self.local_files = yes;
        self
    }

    /// Why sending failed, if it did (the connection must be closed).
    pub(crate) fn failure(self) -> Option<ProtoError> {
        self.failed
    }

    /// Sends the buffer once it holds [`FLUSH_AT`] bytes.
    fn flush_if_full(&mut self) -> Result<(), SinkClosed> {
        if self.io.pending() < FLUSH_AT {
            return Ok(());
        }
        if let Err(e) = self.io.flush() {
            self.failed = Some(e);
            return Err(SinkClosed);
        }
        Ok(())
    }
}

impl ResultSink for WireSink<'_> {
    fn local_infile(&mut self, name: &str) -> Option<Box<dyn Read + '_>> {
        if !self.local_files || self.failed.is_some() {
            return None;
        }
        // The request: 0xFB and the file's name; the client answers with the file's bytes in
        // packets, then an empty one.
        let mut p = Vec::with_capacity(1 + name.len());
        p.push(0xfb);
        p.extend_from_slice(name.as_bytes());
        self.io.write(&p);
        if let Err(e) = self.io.flush() {
            self.failed = Some(e);
            return None;
        }
        Some(Box::new(LocalFile {
            sink: self,
            buf: Vec::new(),
            pos: 0,
            done: false,
        }))
    }

    fn columns(&mut self, columns: &Arc<Vec<ColumnMeta>>, st: Status) -> Result<(), SinkClosed> {
        if self.failed.is_some() {
            return Err(SinkClosed);
        }
        let start = self.io.mark();
        self.row.clear();
        put_lenenc(&mut self.row, columns.len() as u64);
        self.io.write(&self.row);
        for c in columns.iter() {
            self.io.write(&column_definition(c));
        }
        let eof = self.io.mark();
        self.io.write(&reply::eof(st.warnings, flags(st)));
        self.start = Some((start, eof));
        self.columns = Some(columns.clone());
        self.flush_if_full()
    }

    fn row(&mut self, row: &[Value]) -> Result<(), SinkClosed> {
        if self.failed.is_some() {
            return Err(SinkClosed);
        }
        let p = &mut self.row;
        p.clear();
        if self.binary {
            let columns = self.columns.as_deref().map_or(&[][..], Vec::as_slice);
            binary::write_row(p, row, columns);
        } else {
            let columns = self.columns.as_deref().map_or(&[][..], Vec::as_slice);
            for (i, v) in row.iter().enumerate() {
                match (v, columns.get(i)) {
                    // A DATETIME(n) column shows n fraction digits, zeros included.
                    (Value::DateTime(packed), Some(c)) if c.decimals <= 6 => {
                        let text = DateTime::unpack(*packed).format(c.decimals);
                        put_lenenc_bytes(p, text.as_bytes());
                    }
                    _ => match v.to_text() {
                        // 0xfb is NULL in a text row.
                        None => p.push(0xfb),
                        Some(b) => put_lenenc_bytes(p, &b),
                    },
                }
            }
        }
        self.io.write(&self.row);
        self.flush_if_full()
    }

    fn end(&mut self, end: StatementEnd<'_>) {
        let start = self.start.take();
        self.columns = None;
        if self.failed.is_some() {
            return;
        }
        match end {
            StatementEnd::Rows(st) => {
                let eof = reply::eof(st.warnings, flags(st));
                // While nothing of the result was sent, the first EOF is given the final
                // warning count and status too, as when results went out whole.
                if let Some((_, head)) = start {
                    self.io.rewrite(head, &eof);
                }
                self.io.write(&eof);
            }
            StatementEnd::Done {
                affected_rows,
                last_insert_id,
                info,
                status: st,
            } => self.io.write(&ok_info(
                affected_rows,
                last_insert_id,
                flags(st),
                st.warnings,
                info,
            )),
            StatementEnd::Error(e) => {
                if let Some((m, _)) = start {
                    // Only the ERR, if none of the result was sent yet.
                    self.io.rewind(m);
                }
                self.io
                    .write(&reply::err(e.code(), e.sqlstate(), e.message()));
            }
        }
        // Keeps memory bounded across the statements of one command, too.
        let _ = self.flush_if_full();
    }
}

/// The client's file in a LOAD DATA LOCAL: the packets after the server's request, up to the
/// empty one. Dropped early (the load failed), it reads and discards the rest, so that the
/// next packet read is the client's next command; a broken connection marks the sink failed,
/// which closes it.
struct LocalFile<'s, 'a> {
    sink: &'s mut WireSink<'a>,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Read for LocalFile<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.buf.len() {
            if self.done {
                return Ok(0);
            }
            self.pos = 0;
            match self.sink.io.read(&mut self.buf) {
                Ok(true) if self.buf.is_empty() => self.done = true,
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    self.sink.failed = Some(ProtoError::Truncated("LOAD DATA LOCAL file"));
                    return Err(std::io::Error::other(
                        "the client closed the connection mid-file",
                    ));
                }
                Err(e) => {
                    self.done = true;
                    let why = std::io::Error::other(format!("reading the client's file: {e}"));
                    self.sink.failed = Some(e);
                    return Err(why);
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Drop for LocalFile<'_, '_> {
    fn drop(&mut self) {
        self.pos = self.buf.len();
        let mut skip = [0u8; 4096];
        while !self.done {
            if self.read(&mut skip).is_err() {
                break;
            }
            self.pos = self.buf.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use zipdb_sql::{ErrorKind, SqlError};

    /// A packet writer on one end of a loopback connection, and the other end.
    fn pair() -> (PacketIo<TcpStream>, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        (PacketIo::new(server, 1 << 20), client)
    }

    /// Everything sent, once the writer is gone.
    fn received(io: PacketIo<TcpStream>, mut peer: TcpStream) -> Vec<u8> {
        drop(io);
        let mut all = Vec::new();
        peer.read_to_end(&mut all).unwrap();
        all
    }

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let n = payload.len();
        let mut p = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        p.extend_from_slice(payload);
        p
    }

    fn columns() -> Arc<Vec<ColumnMeta>> {
        Arc::new(vec![ColumnMeta::text("a")])
    }

    fn text_row(s: &str) -> Vec<u8> {
        let mut p = Vec::new();
        put_lenenc_bytes(&mut p, s.as_bytes());
        p
    }

    const AT_START: Status = Status {
        flags: 2,
        warnings: 0,
        more: false,
    };

    /// A result sent whole: what the server wrote before results were streamed.
    fn whole(rows: &[String], st: Status) -> Vec<u8> {
        let cols = columns();
        let eof = reply::eof(st.warnings, flags(st));
        let mut out = [
            packet(0, &[1]),
            packet(1, &column_definition(&cols[0])),
            packet(2, &eof),
        ]
        .concat();
        for (i, r) in rows.iter().enumerate() {
            out.extend(packet(3 + i as u8, &text_row(r)));
        }
        out.extend(packet(3 + rows.len() as u8, &eof));
        out
    }

    #[test]
    fn a_small_result_is_sent_as_when_results_went_whole() {
        let (mut io, peer) = pair();
        let rows: Vec<String> = (0..5).map(|i| format!("row {i}")).collect();
        let end = Status {
            flags: 3,
            warnings: 2,
            more: true,
        };
        let mut s = WireSink::new(&mut io, false);
        s.columns(&columns(), AT_START).unwrap();
        for r in &rows {
            s.row(&[Value::Str(r.clone())]).unwrap();
        }
        s.end(StatementEnd::Rows(end));
        assert!(s.failure().is_none());
        io.flush().unwrap();
        // The first EOF carries the final warnings and status (and the more-results flag).
        assert_eq!(received(io, peer), whole(&rows, end));
    }

    #[test]
    fn an_error_before_anything_was_sent_is_the_only_answer() {
        let (mut io, peer) = pair();
        let e = SqlError::interrupted();
        let mut s = WireSink::new(&mut io, false);
        s.columns(&columns(), AT_START).unwrap();
        for i in 0..300 {
            s.row(&[Value::Str(format!("row {i}"))]).unwrap();
        }
        s.end(StatementEnd::Error(&e));
        io.flush().unwrap();
        assert_eq!(
            received(io, peer),
            packet(0, &reply::err(1317, "70100", e.message()))
        );
    }

    #[test]
    fn an_error_after_a_flush_follows_the_rows_sent() {
        let (mut io, mut peer) = pair();
        // Read on another thread: the writer flushes (and may block) as it goes.
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            peer.read_to_end(&mut all).unwrap();
            all
        });
        let row = "x".repeat(1000);
        let rows: Vec<String> = (0..200).map(|i| format!("{i:04}{row}")).collect();
        let e = SqlError::of(ErrorKind::QueryInterrupted, "stopped");
        let mut s = WireSink::new(&mut io, false);
        s.columns(&columns(), AT_START).unwrap();
        for r in &rows {
            s.row(&[Value::Str(r.clone())]).unwrap();
        }
        s.end(StatementEnd::Error(&e));
        io.flush().unwrap();
        drop(io);
        let got = reader.join().unwrap();
        // Every row, in order, then the ERR in sequence where the final EOF would be.
        let mut want = whole(&rows, AT_START);
        let eof = packet((3 + rows.len()) as u8, &reply::eof(0, 2));
        want.truncate(want.len() - eof.len());
        want.extend(packet(
            (3 + rows.len()) as u8,
            &reply::err(1317, "70100", "stopped"),
        ));
        assert!(want.len() > FLUSH_AT * 2);
        assert_eq!(got, want);
    }

    #[test]
    fn a_client_gone_closes_the_sink() {
        let (mut io, peer) = pair();
        drop(peer);
        let mut s = WireSink::new(&mut io, false);
        s.columns(&columns(), AT_START).unwrap();
        let row = [Value::Str("y".repeat(4096))];
        // The first flush may still land in the socket's buffer; a later one cannot.
        let closed = (0..10_000).any(|_| s.row(&row).is_err());
        assert!(closed, "writes to a closed peer kept succeeding");
        assert_eq!(s.row(&row), Err(SinkClosed), "closed for good");
        s.end(StatementEnd::Rows(AT_START));
        assert!(s.failure().is_some());
    }
}
