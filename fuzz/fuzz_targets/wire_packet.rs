//! The server's wire parsers on arbitrary client bytes: packet framing (`PacketIo::read` on an
//! in-memory stream, up to 8 packets with a 64 KiB max_allowed_packet), the handshake response
//! (`handshake::parse_response`) and the binary protocol (`binary::execute_stmt_id`,
//! `parse_execute`, `parse_send_long_data`), fed both the raw input and every payload the framing
//! reader returns. They must return an error or a value, never panic; a payload read is never
//! larger than max_allowed_packet and survives a write/read round trip; a parsed execute has
//! one value per parameter.
#![no_main]

use std::io::{Cursor, Read, Write};

use libfuzzer_sys::fuzz_target;
use zipdb_server::protocol::binary::{self, ParamTypes};
use zipdb_server::protocol::handshake;
use zipdb_server::protocol::packet::{PacketIo, TimedStream};

const MAX_PAYLOAD: usize = 64 << 10;

/// Reads from the fuzzer's bytes, writes into a vector.
struct Duplex {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Duplex {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Duplex {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An in-memory stream never blocks: timeouts have nothing to bound.
impl TimedStream for Duplex {
    fn set_read_timeout(&self, _: Option<std::time::Duration>) -> std::io::Result<()> {
        Ok(())
    }
    fn set_write_timeout(&self, _: Option<std::time::Duration>) -> std::io::Result<()> {
        Ok(())
    }
}

fn io(input: Vec<u8>, max: usize) -> PacketIo<Duplex> {
    PacketIo::new(
        Duplex {
            input: Cursor::new(input),
            output: Vec::new(),
        },
        max,
    )
}

/// Every parser over one payload, as the connection loop would see it.
fn decode(p: &[u8]) {
    let _ = handshake::parse_response(p);
    let _ = binary::execute_stmt_id(p);
    if let Ok((_, _, data)) = binary::parse_send_long_data(p) {
        assert_eq!(data.len() + 6, p.len());
    }
    // COM_STMT_EXECUTE: the first two bytes choose the statement's parameter count and which of
    // the first 8 parameters have long data; the rest is the payload after the command byte.
    if let [n, mask, payload @ ..] = p {
        let n = usize::from(*n);
        let long_data: Vec<Option<Vec<u8>>> = (0..n)
            .map(|i| {
                (i < 8 && mask & (1 << i) != 0).then(|| payload.iter().take(16).copied().collect())
            })
            .collect();
        let mut types: ParamTypes = Vec::new();
        if let Ok(e) = binary::parse_execute(payload, n, &mut types, &long_data) {
            assert_eq!(e.params.len(), n);
            assert!(
                n == 0 || types.len() == n,
                "bound types kept for the next execute"
            );
            // The next execution of the same statement, reusing the bound types.
            if let Ok(e) = binary::parse_execute(payload, n, &mut types, &[]) {
                assert_eq!(e.params.len(), n);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    decode(data);
    let mut r = io(data.to_vec(), MAX_PAYLOAD);
    let mut buf = Vec::new();
    for i in 0..8 {
        if i % 3 == 2 {
            // A new command: sequence ids start over.
            r.reset_seq();
        }
        match r.read(&mut buf) {
            Ok(true) => {
                assert!(buf.len() <= MAX_PAYLOAD);
                decode(&buf);
                // What the writer frames, the reader reads back unchanged.
                let mut w = io(Vec::new(), usize::MAX);
                w.write(&buf);
                w.flush().expect("in-memory flush");
                let wire = std::mem::take(&mut w.stream_mut().output);
                let mut back = io(wire, usize::MAX);
                let mut again = Vec::new();
                assert!(back.read(&mut again).expect("reads its own packet"));
                assert!(again == buf);
            }
            _ => break,
        }
    }
});
