//! Packet framing of the MySQL client/server protocol.
//!
//! Every packet is a 3-byte little-endian payload length, a 1-byte sequence id, then the
//! payload. A payload of 2^24 - 1 bytes or more is split into packets of exactly 2^24 - 1
//! bytes followed by a shorter one (possibly empty); the reader joins them. Sequence ids count
//! up from 0 at the start of each command (and of the handshake) and wrap at 256; a packet out
//! of sequence is a protocol error.
//!
//! Reads go through a small buffer, so a command that arrives whole (the usual case) costs one
//! `read`; writes are buffered and sent with one system call per [`PacketIo::flush`], so a
//! result set is one `write` (see FIELD-NOTES: one syscall per response matters on 2 cores).
//! A payload's buffer grows with the bytes that actually arrive, never with the length a
//! header claims, so a client that announces 16 MiB and sends 4 bytes costs nothing.
//!
//! Every blocking read and write is bounded by [`Timeouts`]; the socket's own timeouts
//! (`SO_RCVTIMEO`, `SO_SNDTIMEO`) do the waiting and are changed only when the bound changes,
//! so the fast path (a whole command in one read, its answer in one write) makes no extra
//! system call.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::ProtoError;

/// Largest payload of one physical packet; a payload this long continues in the next one.
pub const MAX_CHUNK: usize = 0xff_ffff;

/// Size of the read buffer: a command that fits arrives with one `read`.
const IN_BUF: usize = 4 << 10;

/// A payload being read grows by at most this much beyond the bytes already received.
const GROW_MAX: usize = 64 << 10;

/// Buffers larger than this are given back after use rather than kept for the connection's
/// lifetime: one large packet or result must not pin its memory while the connection idles.
const KEEP_CAPACITY: usize = 1 << 20;

/// A stream whose blocking calls can be bounded in time.
pub trait TimedStream: Read + Write {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()>;
    fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()>;
}

impl TimedStream for TcpStream {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        TcpStream::set_read_timeout(self, t)
    }
    fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        TcpStream::set_write_timeout(self, t)
    }
}

/// How long one blocking call may wait; `None`: without limit. `crate::limits` computes them
/// for each phase of a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// Waiting for the first byte of a command (`wait_timeout`).
    pub idle: Option<Duration>,
    /// Waiting for more of a packet that has begun to arrive (`net_read_timeout`).
    pub read: Option<Duration>,
    /// A write the client does not drain (`net_write_timeout`).
    pub write: Option<Duration>,
    /// Nothing may wait past this instant, however the bytes trickle in (`connect_timeout`
    /// during the handshake).
    pub deadline: Option<Instant>,
}

/// Which wait timed out, for [`ProtoError::Timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Between commands: the connection was idle too long.
    Idle,
    /// In the middle of a packet.
    Read,
    /// Sending a reply.
    Write,
    /// The overall deadline passed.
    Deadline,
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Wait::Idle => "the next command",
            Wait::Read => "the rest of a packet",
            Wait::Write => "the client to read a reply",
            Wait::Deadline => "the end of the connection phase",
        })
    }
}

/// A connection's packet reader and writer.
pub struct PacketIo<S> {
    stream: S,
    seq: u8,
    /// Largest logical payload accepted from the client (`max_allowed_packet`, less before
    /// authentication).
    max_payload: usize,
    out: Vec<u8>,
    /// Flushes so far: a [`Mark`] is good only until the next one.
    flushes: u64,
    /// Bytes received but not consumed yet: `inb[in_pos..in_end]`.
    inb: Box<[u8]>,
    in_pos: usize,
    in_end: usize,
    timeouts: Timeouts,
    /// The socket's current timeouts; `None` before the first is set.
    read_armed: Option<Option<Duration>>,
    write_armed: Option<Option<Duration>>,
}

impl<S: TimedStream> PacketIo<S> {
    pub fn new(stream: S, max_payload: usize) -> PacketIo<S> {
        PacketIo {
            stream,
            seq: 0,
            max_payload,
            out: Vec::with_capacity(16 << 10),
            flushes: 0,
            inb: vec![0; IN_BUF].into_boxed_slice(),
            in_pos: 0,
            in_end: 0,
            timeouts: Timeouts::default(),
            read_armed: None,
            write_armed: None,
        }
    }

    /// Starts a new command exchange: the next packet read must have sequence id 0.
    pub fn reset_seq(&mut self) {
        self.seq = 0;
    }

    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    pub fn set_max_payload(&mut self, max: usize) {
        self.max_payload = max;
    }

    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Bounds the waits from now on (the socket is changed only when a wait needs it).
    pub fn set_timeouts(&mut self, t: Timeouts) {
        self.timeouts = t;
    }

    /// Bytes received and not consumed yet (the start of the next command, if any).
    pub fn buffered(&self) -> usize {
        self.in_end - self.in_pos
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
        if buf.capacity() > KEEP_CAPACITY {
            *buf = Vec::new();
        }
        buf.clear();
        let mut first = true;
        loop {
            let mut head = [0u8; 4];
            // Until a command's first byte arrives the connection is idle (wait_timeout);
            // after it, the rest must follow within net_read_timeout.
            let got = self.take(&mut head, !first)?;
            match got {
                0 if first => return Ok(false),
                4 => {}
                _ => return Err(ProtoError::Truncated("packet header")),
            }
            first = false;
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
            self.read_payload(buf, len)?;
            if len < MAX_CHUNK {
                return Ok(true);
            }
        }
    }

    /// Appends `len` payload bytes to `buf`, growing it only as they arrive.
    fn read_payload(&mut self, buf: &mut Vec<u8>, len: usize) -> Result<(), ProtoError> {
        let mut need = len;
        while need > 0 {
            let have = self.in_end - self.in_pos;
            if have > 0 {
                let n = have.min(need);
                buf.extend_from_slice(&self.inb[self.in_pos..self.in_pos + n]);
                self.in_pos += n;
                need -= n;
            } else if need >= IN_BUF {
                // Large: straight into the payload, at most GROW_MAX zeroed bytes ahead of
                // what has arrived.
                let at = buf.len();
                buf.resize(at + need.min(GROW_MAX), 0);
                let n = self.read_some(&mut buf[at..], true);
                let n = match n {
                    Ok(n) => n,
                    Err(e) => {
                        buf.truncate(at);
                        return Err(e);
                    }
                };
                buf.truncate(at + n);
                if n == 0 {
                    return Err(ProtoError::Truncated("packet payload"));
                }
                need -= n;
            } else if self.fill(true)? == 0 {
                return Err(ProtoError::Truncated("packet payload"));
            }
        }
        Ok(())
    }

    /// Fills `out` from the buffer and the stream; returns how much was filled (less only at
    /// the end of the stream). `started`: whether this command has begun arriving.
    fn take(&mut self, out: &mut [u8], mut started: bool) -> Result<usize, ProtoError> {
        let mut done = 0;
        while done < out.len() {
            if self.in_pos == self.in_end && self.fill(started)? == 0 {
                break;
            }
            let n = (self.in_end - self.in_pos).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.inb[self.in_pos..self.in_pos + n]);
            self.in_pos += n;
            done += n;
            started = true;
        }
        Ok(done)
    }

    /// Reads what the stream has into the (empty) buffer; 0 at the end of the stream.
    fn fill(&mut self, started: bool) -> Result<usize, ProtoError> {
        debug_assert_eq!(self.in_pos, self.in_end);
        let mut inb = std::mem::take(&mut self.inb);
        let r = self.read_some(&mut inb, started);
        self.inb = inb;
        let n = r?;
        self.in_pos = 0;
        self.in_end = n;
        Ok(n)
    }

    /// One `read`, bounded by the timeout of the phase.
    fn read_some(&mut self, into: &mut [u8], started: bool) -> Result<usize, ProtoError> {
        let wait = if started { Wait::Read } else { Wait::Idle };
        let limit = if started {
            self.timeouts.read
        } else {
            self.timeouts.idle
        };
        let (limit, wait) = self.within_deadline(limit, wait)?;
        if self.read_armed != Some(limit) {
            self.stream.set_read_timeout(limit)?;
            self.read_armed = Some(limit);
        }
        loop {
            match self.stream.read(into) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => return Err(ProtoError::Timeout(wait)),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// `limit`, shortened to what is left before the deadline (an error once it passed).
    fn within_deadline(
        &self,
        limit: Option<Duration>,
        wait: Wait,
    ) -> Result<(Option<Duration>, Wait), ProtoError> {
        let Some(deadline) = self.timeouts.deadline else {
            return Ok((limit, wait));
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ProtoError::Timeout(Wait::Deadline));
        }
        Ok(match limit {
            Some(l) if l < left => (Some(l), wait),
            _ => (Some(left), Wait::Deadline),
        })
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

    /// Where the next packet will be written: what [`PacketIo::rewind`] goes back to.
    pub fn mark(&self) -> Mark {
        Mark {
            at: self.out.len(),
            seq: self.seq,
            flushes: self.flushes,
        }
    }

    /// Forgets the packets written since `m` (their sequence ids too), if none of them has
    /// been sent; whether it could.
    pub fn rewind(&mut self, m: Mark) -> bool {
        if m.flushes != self.flushes || m.at > self.out.len() {
            return false;
        }
        self.out.truncate(m.at);
        self.seq = m.seq;
        true
    }

    /// Replaces the payload of the packet written at `m` with `payload` of the same length,
    /// if it has not been sent; whether it could.
    pub fn rewrite(&mut self, m: Mark, payload: &[u8]) -> bool {
        let start = m.at + 4;
        let fits = m.flushes == self.flushes
            && start + payload.len() <= self.out.len()
            && self.out[m.at..m.at + 3]
                == [
                    payload.len() as u8,
                    (payload.len() >> 8) as u8,
                    (payload.len() >> 16) as u8,
                ];
        if fits {
            self.out[start..start + payload.len()].copy_from_slice(payload);
        }
        fits
    }

    /// Bytes written and not sent yet.
    pub fn pending(&self) -> usize {
        self.out.len()
    }

    /// Sends everything written since the last flush.
    pub fn flush(&mut self) -> Result<(), ProtoError> {
        if !self.out.is_empty() {
            self.flushes += 1;
            let (limit, wait) = self.within_deadline(self.timeouts.write, Wait::Write)?;
            if self.write_armed != Some(limit) {
                self.stream.set_write_timeout(limit)?;
                self.write_armed = Some(limit);
            }
            let r = self.stream.write_all(&self.out);
            self.out.clear();
            if self.out.capacity() > KEEP_CAPACITY {
                self.out = Vec::with_capacity(16 << 10);
            }
            match r {
                Ok(()) => {}
                Err(e) if timed_out(&e) => return Err(ProtoError::Timeout(wait)),
                Err(e) => return Err(e.into()),
            }
        }
        self.stream.flush()?;
        Ok(())
    }
}

/// A place in the output buffer ([`PacketIo::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    at: usize,
    seq: u8,
    flushes: u64,
}

/// How a socket timeout shows (EAGAIN on Linux, ETIMEDOUT elsewhere).
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::sync::{Arc, Mutex};

    /// An in-memory duplex stream: reads from `input` (at most `per_read` bytes a call, after
    /// `delay`), writes to `output`, and records the read timeouts it is given.
    struct Duplex {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
        per_read: usize,
        delay: Duration,
        reads: usize,
        armed: Arc<Mutex<Vec<Option<Duration>>>>,
    }

    impl Read for Duplex {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            std::thread::sleep(self.delay);
            self.reads += 1;
            let n = buf.len().min(self.per_read);
            self.input.read(&mut buf[..n])
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

    impl TimedStream for Duplex {
        fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
            self.armed.lock().unwrap().push(t);
            Ok(())
        }
        fn set_write_timeout(&self, _: Option<Duration>) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn io(input: Vec<u8>, max: usize) -> PacketIo<Duplex> {
        PacketIo::new(
            Duplex {
                input: Cursor::new(input),
                output: Vec::new(),
                per_read: usize::MAX,
                delay: Duration::ZERO,
                reads: 0,
                armed: Arc::default(),
            },
            max,
        )
    }

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let n = payload.len();
        let mut p = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn payloads_round_trip_across_the_chunk_boundary() {
        for len in [
            0,
            1,
            250,
            IN_BUF - 5,
            IN_BUF,
            GROW_MAX + 1,
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
            // Whole, and trickling in a few bytes at a time.
            for per_read in [usize::MAX, 7] {
                if per_read == 7 && len > GROW_MAX + 1 {
                    continue;
                }
                let mut r = io(wire.clone(), usize::MAX);
                r.stream.per_read = per_read;
                let mut buf = Vec::new();
                assert!(r.read(&mut buf).unwrap());
                assert!(buf == payload, "len {len}");
                assert!(r.read(&mut buf).unwrap());
                assert_eq!(buf, b"next");
                assert!(!r.read(&mut buf).unwrap(), "clean end of stream");
            }
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

    #[test]
    fn memory_follows_the_bytes_that_arrive_not_the_length_claimed() {
        // A header claiming 16 MiB - 1, then 4 bytes, then nothing.
        let mut wire = vec![0xff, 0xff, 0xff, 0];
        wire.extend_from_slice(b"abcd");
        let mut r = io(wire, usize::MAX);
        let mut buf = Vec::new();
        assert!(matches!(r.read(&mut buf), Err(ProtoError::Truncated(_))));
        assert!(buf.capacity() <= 2 * GROW_MAX, "{}", buf.capacity());
        // 1 MiB of a claimed 16 MiB: the buffer stays within twice what arrived.
        let mut wire = vec![0xff, 0xff, 0xff, 0];
        wire.extend(std::iter::repeat_n(7u8, 1 << 20));
        let mut r = io(wire, usize::MAX);
        r.stream.per_read = 50_000;
        assert!(matches!(r.read(&mut buf), Err(ProtoError::Truncated(_))));
        assert!(
            buf.capacity() <= 2 * ((1 << 20) + GROW_MAX),
            "{}",
            buf.capacity()
        );
    }

    #[test]
    fn a_large_buffer_is_given_back_before_the_next_packet() {
        let big = vec![1u8; 2 << 20];
        let mut wire = packet(0, &big);
        wire.extend(packet(1, b"small"));
        let mut r = io(wire, usize::MAX);
        let mut buf = Vec::new();
        assert!(r.read(&mut buf).unwrap());
        assert_eq!(buf.len(), big.len());
        assert!(r.read(&mut buf).unwrap());
        assert_eq!(buf, b"small");
        assert!(buf.capacity() < KEEP_CAPACITY);
    }

    #[test]
    fn whole_commands_cost_one_read_and_no_timeout_change() {
        let mut wire = Vec::new();
        for _ in 0..10 {
            wire.extend(packet(0, b"\x03SELECT 1"));
        }
        let mut r = io(wire, 1 << 20);
        r.set_timeouts(Timeouts {
            idle: Some(Duration::from_secs(100)),
            read: Some(Duration::from_secs(5)),
            ..Timeouts::default()
        });
        let mut buf = Vec::new();
        for _ in 0..10 {
            r.reset_seq();
            assert!(r.read(&mut buf).unwrap());
            assert_eq!(buf, b"\x03SELECT 1");
        }
        // All ten commands came with one read (they were all there).
        assert_eq!(r.stream.reads, 1);
        assert_eq!(
            *r.stream.armed.lock().unwrap(),
            [Some(Duration::from_secs(100))]
        );
        // A command that arrives in pieces: its rest is awaited with the read timeout, then
        // the next command with the idle one again.
        // (14 bytes in reads of 7: the header and 3 bytes, then the rest.)
        let mut wire = packet(0, b"\x03SELECT 22");
        wire.extend(packet(0, b"\x0e"));
        let mut r = io(wire, 1 << 20);
        r.stream.per_read = 7;
        r.set_timeouts(Timeouts {
            idle: Some(Duration::from_secs(100)),
            read: Some(Duration::from_secs(5)),
            ..Timeouts::default()
        });
        assert!(r.read(&mut buf).unwrap());
        assert_eq!(buf, b"\x03SELECT 22");
        r.reset_seq();
        assert!(r.read(&mut buf).unwrap());
        assert_eq!(buf, b"\x0e");
        let armed = r.stream.armed.lock().unwrap().clone();
        assert_eq!(
            armed,
            [
                Some(Duration::from_secs(100)),
                Some(Duration::from_secs(5)),
                Some(Duration::from_secs(100))
            ]
        );
    }

    #[test]
    fn a_deadline_ends_a_trickle_however_steady() {
        // One byte every 20 ms would take 3 s for this packet; the deadline is 150 ms.
        let wire = packet(0, &[b'x'; 150]);
        let mut r = io(wire, 1 << 20);
        r.stream.per_read = 1;
        r.stream.delay = Duration::from_millis(20);
        let start = Instant::now();
        r.set_timeouts(Timeouts {
            idle: Some(Duration::from_secs(100)),
            read: Some(Duration::from_secs(100)),
            deadline: Some(start + Duration::from_millis(150)),
            ..Timeouts::default()
        });
        let mut buf = Vec::new();
        assert!(matches!(
            r.read(&mut buf),
            Err(ProtoError::Timeout(Wait::Deadline))
        ));
        assert!(start.elapsed() < Duration::from_secs(1));
        // Each read waited at most what was left of the deadline.
        let armed = r.stream.armed.lock().unwrap().clone();
        assert!(armed
            .iter()
            .all(|t| t.is_some_and(|t| t <= Duration::from_millis(150))));
    }

    #[test]
    fn rewind_and_rewrite_reach_only_unsent_packets() {
        let mut w = io(Vec::new(), 4096);
        w.write(b"kept");
        let m = w.mark();
        w.write(b"head");
        w.write(b"row");
        assert_eq!(w.pending(), 8 + 8 + 7);
        assert!(!w.rewrite(m, b"toolong"), "another length");
        assert!(w.rewrite(m, b"HEAD"));
        let sent = w.mark();
        w.flush().unwrap();
        assert_eq!(
            w.stream.output,
            [packet(0, b"kept"), packet(1, b"HEAD"), packet(2, b"row")].concat()
        );
        // Sent: neither can reach it any more.
        assert!(!w.rewind(m) && !w.rewind(sent));
        assert!(!w.rewrite(m, b"head"));
        w.stream.output.clear();
        let m = w.mark();
        w.write(b"row");
        w.write(b"row");
        assert!(w.rewind(m));
        assert_eq!(w.pending(), 0);
        // The sequence goes back too: what follows numbers from the mark.
        w.write(b"err");
        w.flush().unwrap();
        assert_eq!(w.stream.output, packet(3, b"err"));
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
