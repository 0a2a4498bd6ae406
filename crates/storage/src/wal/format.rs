//! Byte layout of the log file: the file header and the record header. The layout is described
//! byte by byte in the docs of the parent module; this file is its only implementation.

/// Bytes reserved for the file header; the record area starts right after it.
pub const HEADER_SIZE: u64 = 4096;
/// Bytes of the file header that carry data and are covered by its checksum (4..64).
const HEADER_USED: usize = 64;
const MAGIC: &[u8; 4] = b"ZWAL";
/// On-disk format version written by this build.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the header in front of every record payload.
pub const RECORD_HEADER_SIZE: u64 = 16;
/// Records start on multiples of this many bytes (relative to LSN 0).
pub const RECORD_ALIGN: u64 = 8;

/// Rounds `n` up to a multiple of [`RECORD_ALIGN`].
pub fn align8(n: u64) -> u64 {
    n.div_ceil(RECORD_ALIGN) * RECORD_ALIGN
}

/// Bytes that a record with a payload of `payload_len` bytes occupies in the log: header,
/// payload and zero padding to the next multiple of 8.
pub fn record_size(payload_len: u64) -> u64 {
    RECORD_HEADER_SIZE + align8(payload_len)
}

/// The fields of the file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    pub capacity: u64,
    pub db_id: u64,
    pub max_unsynced: u64,
}

impl FileHeader {
    /// The full 4096-byte header block.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_SIZE as usize];
        b[4..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[12..20].copy_from_slice(&self.capacity.to_le_bytes());
        b[20..28].copy_from_slice(&self.db_id.to_le_bytes());
        b[28..36].copy_from_slice(&self.max_unsynced.to_le_bytes());
        let crc = crc32c::crc32c(&b[4..HEADER_USED]);
        b[0..4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses and verifies the first 64 bytes of a header block. The error says what is wrong,
    /// for an error message that also names the file.
    pub fn decode(b: &[u8]) -> Result<FileHeader, String> {
        assert!(
            b.len() >= HEADER_USED,
            "caller reads the whole checksummed part"
        );
        // Magic before checksum: "this is not a WAL at all" is the more useful message.
        if &b[4..8] != MAGIC {
            return Err(format!("bad magic {:02x?} (expected \"ZWAL\")", &b[4..8]));
        }
        let stored = u32_at(b, 0);
        let computed = crc32c::crc32c(&b[4..HEADER_USED]);
        if stored != computed {
            return Err(format!(
                "header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ));
        }
        let version = u32_at(b, 8);
        if version != FORMAT_VERSION {
            return Err(format!(
                "format version {version}, this build reads version {FORMAT_VERSION}"
            ));
        }
        if b[36..HEADER_USED].iter().any(|&x| x != 0) {
            return Err("reserved header bytes 36..64 are not zero".to_string());
        }
        Ok(FileHeader {
            capacity: u64_at(b, 12),
            db_id: u64_at(b, 20),
            max_unsynced: u64_at(b, 28),
        })
    }
}

/// The 16-byte header of a record whose payload is `payload_len` bytes and which starts at
/// `lsn`, with a zero checksum: [`seal_records`] fills the checksum in later, outside the
/// append mutex.
pub fn record_header(payload_len: u32, lsn: u64) -> [u8; RECORD_HEADER_SIZE as usize] {
    let mut h = [0u8; RECORD_HEADER_SIZE as usize];
    h[4..8].copy_from_slice(&payload_len.to_le_bytes());
    h[8..16].copy_from_slice(&lsn.to_le_bytes());
    h
}

/// `(crc, payload_len, lsn)` of a record header.
pub fn parse_record_header(h: &[u8]) -> (u32, u32, u64) {
    (u32_at(h, 0), u32_at(h, 4), u64_at(h, 8))
}

/// The checksum a record must carry: CRC32C of its bytes from offset 4 (length, LSN, payload;
/// the padding is not covered). `rec` starts at the record header and holds at least the payload.
pub fn record_crc(rec: &[u8], payload_len: u32) -> u32 {
    crc32c::crc32c(&rec[4..RECORD_HEADER_SIZE as usize + payload_len as usize])
}

/// Computes and stores the checksum of every record in `batch`, a run of whole records whose
/// first one starts at `start`. Returns the number of records.
///
/// Appenders copy records with a zero checksum and the leader of a flush seals them here, so
/// that the append critical section is only a memcpy.
pub fn seal_records(batch: &mut [u8], start: u64) -> u64 {
    let mut p = 0usize;
    let mut n = 0u64;
    while p < batch.len() {
        let (_, len, lsn) = parse_record_header(&batch[p..]);
        assert_eq!(
            lsn,
            start + p as u64,
            "batch holds whole, contiguous records"
        );
        let crc = record_crc(&batch[p..], len);
        batch[p..p + 4].copy_from_slice(&crc.to_le_bytes());
        p += record_size(u64::from(len)) as usize;
        n += 1;
    }
    assert_eq!(p, batch.len(), "batch ends on a record boundary");
    n
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}
