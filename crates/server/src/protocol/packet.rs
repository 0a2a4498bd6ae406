//! Packet framing of the MySQL client/server protocol.
//!
//! Every packet is a 3-byte little-endian payload length, a 1-byte sequence id, then the
//! payload. A payload of 2^24 - 1 bytes or more is split into packets of exactly 2^24 - 1
//! bytes followed by a shorter one (possibly empty); the reader joins them. Sequence ids count
//! up from 0 at the start of each command (and of the handshake) and wrap at 256; a packet out
//! of sequence is a protocol error.
//!
//! Writes are buffered and sent with one system call per [`PacketIo::flush`], so a result set is
//! one `write` (see FIELD-NOTES: one syscall per response matters on 2 cores).

use std::io::{Read, Write};

use super::ProtoError;

/// Largest payload of one physical packet; a payload this long continues in the next one.
pub const MAX_CHUNK: usize = 0xff_ffff;

/// A connection's packet reader and writer.
pub struct PacketIo<S> {
    stream: S,
    seq: u8,
    /// Largest logical payload accepted from the client (`max_allowed_packet`).
    max_payload: usize,
    out: Vec<u8>,
}

impl<S: Read + Write> PacketIo<S> {
    pub fn new(stream: S, max_payload: usize) -> PacketIo<S> {
        PacketIo {
            stream,
            seq: 0,
            max_payload,
            out: Vec::with_capacity(16 << 10),
        }
    }

    /// Starts a new command exchange: the next packet read must have sequence id 0.
    pub fn reset_seq(&mut self) {
        self.seq = 0;
    }

    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    pub fn stream(&self) -> &S {
        &self.stream
    }

    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Reads one logical payload into `buf` (cleared first). `Ok(false)` on a clean end of
    /// stream before the first byte of a packet.
    pub fn read(&mut self, buf: &mut Vec<u8>) -> Result<bool, ProtoError> {
        buf.clear();
        loop {
            let mut head = [0u8; 4];
            match read_full(&mut self.stream, &mut head)? {
                0 if buf.is_empty() => return Ok(false),
                4 => {}
                _ => return Err(ProtoError::Truncated("packet header")),
            }
            let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
            if head[3] != self.seq {
                return Err(ProtoError::Sequence {
                    expected: self.seq,
                    got: head[3],
                });
            }
            self.seq = self.seq.wrapping_add(1);
            if buf.len() + len > self.max_payload {
                return Err(ProtoError::TooLarge {
                    len: buf.len() + len,
                    max: self.max_payload,
                });
            }
            let start = buf.len();
            buf.resize(start + len, 0);
            if read_full(&mut self.stream, &mut buf[start..])? != len {
                return Err(ProtoError::Truncated("packet payload"));
            }
            if len < MAX_CHUNK {
                return Ok(true);
            }
        }
    }

    /// Appends one logical payload to the output buffer, split into packets as needed.
    pub fn write(&mut self, payload: &[u8]) {
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_CHUNK);
            self.out
                .extend_from_slice(&[n as u8, (n >> 8) as u8, (n >> 16) as u8, self.seq]);
            self.out.extend_from_slice(&rest[..n]);
            self.seq = self.seq.wrapping_add(1);
            rest = &rest[n..];
            if n < MAX_CHUNK {
                return;
            }
        }
    }

    /// Sends everything written since the last flush.
    pub fn flush(&mut self) -> Result<(), ProtoError> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out)?;
            self.out.clear();
        }
        self.stream.flush()?;
        Ok(())
    }
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match r.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// An in-memory duplex stream: reads from `input`, writes to `output`.
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
            self.output.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
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

    #[test]
    fn payloads_round_trip_across_the_chunk_boundary() {
        for len in [
            0,
            1,
            250,
            MAX_CHUNK - 1,
            MAX_CHUNK,
            MAX_CHUNK + 1,
            2 * MAX_CHUNK,
        ] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut w = io(Vec::new(), usize::MAX);
            w.write(&payload);
            w.write(b"next");
            w.flush().unwrap();
            let wire = std::mem::take(&mut w.stream.output);
            // A payload of exactly k chunks ends with an empty packet.
            let packets = len / MAX_CHUNK + 1;
            assert_eq!(wire.len(), len + 4 * packets + 4 + 4, "len {len}");
            let mut r = io(wire, usize::MAX);
            let mut buf = Vec::new();
            assert!(r.read(&mut buf).unwrap());
            assert!(buf == payload, "len {len}");
            assert!(r.read(&mut buf).unwrap());
            assert_eq!(buf, b"next");
            assert!(!r.read(&mut buf).unwrap(), "clean end of stream");
        }
    }

    #[test]
    fn out_of_sequence_truncated_and_oversized_packets_are_errors() {
        let mut buf = Vec::new();
        // Sequence id 1 where 0 is expected.
        let mut r = io(vec![1, 0, 0, 1, 0x0e], 1024);
        assert!(matches!(
            r.read(&mut buf),
            Err(ProtoError::Sequence {
                expected: 0,
                got: 1
            })
        ));
        // Header promises 5 bytes, 2 arrive.
        let mut r = io(vec![5, 0, 0, 0, 1, 2], 1024);
        assert!(matches!(r.read(&mut buf), Err(ProtoError::Truncated(_))));
        // Half a header.
        let mut r = io(vec![5, 0], 1024);
        assert!(matches!(r.read(&mut buf), Err(ProtoError::Truncated(_))));
        // Larger than max_allowed_packet: refused before the payload is read or allocated.
        let mut r = io(vec![0xff, 0xff, 0x0f, 0], 1024);
        assert!(matches!(
            r.read(&mut buf),
            Err(ProtoError::TooLarge { max: 1024, .. })
        ));
        assert!(buf.capacity() < 1 << 20);
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let mut r = io(bytes, 4096);
            let mut buf = Vec::new();
            for _ in 0..4 {
                if !matches!(r.read(&mut buf), Ok(true)) {
                    break;
                }
            }
        }
    }
}
