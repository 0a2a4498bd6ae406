use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::io::{Fault, FileStorage, IoOp, SimStorage};

const DB: u64 = 0x5eed_0123_4567_89ab;
/// `(start, end, payload)` of a record.
type Rec = (u64, u64, Vec<u8>);

fn cfg(capacity: u64, buffer: usize, window: u64) -> WalConfig {
    WalConfig {
        capacity_bytes: capacity,
        buffer_bytes: buffer,
        max_unsynced_bytes: window,
        // Tests drive every sync themselves unless they test the background thread.
        background_sync_interval: Duration::from_secs(3600),
    }
}

/// Deterministic bytes that differ between records, so a replayed record is checkable.
fn payload(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn quiet(salvage: bool) -> RecoveryOptions {
    RecoveryOptions {
        salvage,
        progress_interval: None,
    }
}

fn reopen_with<S: Storage + 'static>(
    disk: S,
    config: &WalConfig,
    from: u64,
    options: &RecoveryOptions,
) -> Result<(Wal, RecoveryReport, Vec<Rec>), WalError> {
    let mut got = Vec::new();
    let (wal, report) = Wal::open(
        Box::new(disk),
        config.clone(),
        DB,
        Lsn(from),
        options,
        &mut |s, e, p| {
            got.push((s.0, e.0, p.to_vec()));
            Ok(())
        },
    )?;
    Ok((wal, report, got))
}

fn reopen<S: Storage + 'static>(
    disk: S,
    config: &WalConfig,
    from: u64,
    salvage: bool,
) -> Result<(Wal, RecoveryReport, Vec<Rec>), WalError> {
    reopen_with(disk, config, from, &quiet(salvage))
}

/// Appends `n` records of `len` bytes (payload seeds from `seed`), committing each with `policy`.
fn append_n(wal: &Wal, n: usize, len: usize, seed: u64, policy: FlushPolicy) -> Vec<Rec> {
    (0..n)
        .map(|i| {
            let p = payload(seed + i as u64, len);
            let end = wal.append(&p).expect("append");
            wal.commit(end, policy).expect("commit");
            (end.0 - record_size(len as u64), end.0, p)
        })
        .collect()
}

/// Storage whose sync takes a while, like a real disk, so that committers pile up.
#[derive(Debug)]
struct SlowSync {
    inner: SimStorage,
    delay: Duration,
}

impl Storage for SlowSync {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        self.inner.write_at(buf, offset)
    }
    fn sync(&self) -> Result<(), IoError> {
        std::thread::sleep(self.delay);
        self.inner.sync()
    }
    fn len(&self) -> Result<u64, IoError> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> Result<(), IoError> {
        self.inner.set_len(len)
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
}

/// A disk whose power cut keeps a random subset of the 512-byte sectors written since the last
/// sync, as page-cache writeback interrupted by a crash does: a later sector may survive while an
/// earlier one is lost. (SimStorage drops all unsynced writes, which never leaves a hole.)
#[derive(Debug, Clone)]
struct ChaosDisk {
    state: Arc<Mutex<ChaosState>>,
}

#[derive(Debug, Default)]
struct ChaosState {
    volatile: Vec<u8>,
    durable: Vec<u8>,
    unsynced: Vec<(u64, Vec<u8>)>,
}

impl ChaosDisk {
    fn new() -> ChaosDisk {
        ChaosDisk {
            state: Arc::new(Mutex::new(ChaosState::default())),
        }
    }

    fn crash(&self, rng: &mut SmallRng) -> ChaosDisk {
        let s = self.state.lock();
        let mut img = s.durable.clone();
        img.resize(s.volatile.len(), 0);
        let keep = rng.gen::<f64>();
        for (off, data) in &s.unsynced {
            let (start, end) = (*off as usize, *off as usize + data.len());
            let mut at = start;
            while at < end {
                let sector_end = ((at / 512 + 1) * 512).min(end);
                if rng.gen_bool(keep) {
                    img[at..sector_end].copy_from_slice(&data[at - start..sector_end - start]);
                }
                at = sector_end;
            }
        }
        ChaosDisk {
            state: Arc::new(Mutex::new(ChaosState {
                volatile: img.clone(),
                durable: img,
                unsynced: Vec::new(),
            })),
        }
    }
}

impl Storage for ChaosDisk {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        let s = self.state.lock();
        let o = offset as usize;
        if o + buf.len() > s.volatile.len() {
            return Err(IoError {
                op: IoOp::Read,
                path: "chaos".to_string(),
                offset,
                len: buf.len(),
                source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past end"),
            });
        }
        buf.copy_from_slice(&s.volatile[o..o + buf.len()]);
        Ok(())
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        let mut s = self.state.lock();
        let o = offset as usize;
        if s.volatile.len() < o + buf.len() {
            s.volatile.resize(o + buf.len(), 0);
        }
        s.volatile[o..o + buf.len()].copy_from_slice(buf);
        s.unsynced.push((offset, buf.to_vec()));
        Ok(())
    }
    fn sync(&self) -> Result<(), IoError> {
        let mut s = self.state.lock();
        let pending = std::mem::take(&mut s.unsynced);
        let len = s.volatile.len();
        s.durable.resize(len, 0);
        for (off, data) in pending {
            let o = off as usize;
            s.durable[o..o + data.len()].copy_from_slice(&data);
        }
        Ok(())
    }
    fn len(&self) -> Result<u64, IoError> {
        Ok(self.state.lock().volatile.len() as u64)
    }
    fn set_len(&self, len: u64) -> Result<(), IoError> {
        self.state.lock().volatile.resize(len as usize, 0);
        Ok(())
    }
    fn name(&self) -> &str {
        "chaos"
    }
}

#[test]
fn wal_format_header_and_record_sizes() {
    assert_eq!(record_size(0), 16);
    assert_eq!(record_size(1), 24);
    assert_eq!(record_size(8), 24);
    assert_eq!(record_size(9), 32);
    let h = format::FileHeader {
        capacity: 1 << 20,
        db_id: DB,
        max_unsynced: 8192,
    };
    let b = h.encode();
    assert_eq!(b.len(), 4096);
    assert_eq!(&b[4..8], b"ZWAL");
    assert_eq!(format::FileHeader::decode(&b), Ok(h));
    for at in [0usize, 5, 9, 13, 21, 29, 40, 63] {
        let mut bad = b.clone();
        bad[at] ^= 0x10;
        assert!(format::FileHeader::decode(&bad).is_err(), "flip at {at}");
    }
    // Bytes past 64 are not part of the header.
    let mut ok = b.clone();
    ok[100] = 1;
    assert_eq!(format::FileHeader::decode(&ok), Ok(h));
}

#[test]
fn wal_round_trip_random_sizes_across_wraps() {
    let cap = 64u64 << 10;
    let config = cfg(cap, 4096, 8192);
    let disk = SimStorage::new("wal");
    let mut wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut ckpt = 4096u64;
    let mut expected: Vec<Rec> = Vec::new();
    let (mut wrapped, mut headers_wrapped, mut big) = (0, 0, 0);
    for round in 0..6u64 {
        for i in 0..300u64 {
            // Some payloads are larger than the buffer (4 KiB) and the unsynced window (8 KiB).
            let len = if rng.gen_ratio(1, 40) {
                rng.gen_range(5000..20000)
            } else {
                rng.gen_range(0..700)
            };
            let size = record_size(len as u64);
            if wal.used_bytes() + size > cap {
                let end = wal.end_lsn();
                wal.sync_to(end).unwrap();
                wal.checkpointed(end);
                ckpt = end.0;
                expected.clear();
            }
            let p = payload(round * 1000 + i, len);
            let end = wal.append(&p).unwrap().0;
            let start = end - size;
            wrapped += usize::from(start % cap + size > cap);
            headers_wrapped += usize::from(start % cap + 16 > cap);
            big += usize::from(len > 4096);
            expected.push((start, end, p));
            let policy =
                [FlushPolicy::Sync, FlushPolicy::Write, FlushPolicy::None][rng.gen_range(0..3)];
            wal.commit(Lsn(end), policy).unwrap();
        }
        let end = wal.end_lsn();
        wal.shutdown().unwrap();
        drop(wal);
        // One reopen prints progress lines, to exercise that path.
        let options = RecoveryOptions {
            salvage: false,
            progress_interval: (round == 0).then_some(Duration::ZERO),
        };
        let (w, report, got) = reopen_with(disk.clone(), &config, ckpt, &options).unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "round {round}: replay differs");
        assert!(!report.torn_tail);
        assert_eq!(report.end_lsn, end);
        assert_eq!(report.records, expected.len() as u64);
        assert_eq!(report.bytes, end.0 - ckpt);
        wal = w;
    }
    assert!(
        wal.end_lsn().0 - 4096 > 5 * cap,
        "the log went round several times"
    );
    // Stats count from open: give the reopened log some work.
    let _ = append_n(&wal, 5, 100, 1, FlushPolicy::Sync);
    assert!(
        wrapped >= 3,
        "records wrapped the end of the area: {wrapped}"
    );
    assert!(
        headers_wrapped >= 1 || wrapped >= 10,
        "wraps: {headers_wrapped}"
    );
    assert!(big >= 5, "records larger than the buffer: {big}");
    let s = wal.stats();
    assert!(s.writes > 0 && s.syncs > 0 && s.log_bytes > 0);
}

#[test]
fn wal_reopen_replays_exactly_from_given_lsn() {
    let config = cfg(256 << 10, 8192, 16384);
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
    let recs = append_n(&wal, 100, 77, 1, FlushPolicy::Write);
    wal.shutdown().unwrap();
    // Further use after shutdown is refused.
    assert!(matches!(wal.append(b"late"), Err(WalError::Closed)));
    drop(wal);

    let (wal, report, got) = reopen(disk.clone(), &config, recs[40].1, false).unwrap();
    assert_eq!(got, recs[41..].to_vec());
    assert_eq!(report.start_lsn, Lsn(recs[40].1));
    assert_eq!(report.end_lsn, Lsn(recs[99].1));
    assert_eq!(wal.end_lsn(), Lsn(recs[99].1));
    assert_eq!(wal.durable_lsn(), wal.end_lsn());
    assert_eq!(wal.used_bytes(), recs[99].1 - recs[40].1);
    let more = append_n(&wal, 10, 300, 500, FlushPolicy::None);
    drop(wal);

    let (_wal, report, got) = reopen(disk, &config, 4096, false).unwrap();
    let all: Vec<Rec> = recs.into_iter().chain(more).collect();
    assert_eq!(got, all);
    assert!(!report.torn_tail && report.salvaged.is_none());
}

#[test]
fn wal_crash_replays_every_synced_record_and_no_partial_one() {
    for unsynced_policy in [FlushPolicy::Write, FlushPolicy::None] {
        let config = cfg(128 << 10, 4096, 8192);
        let disk = SimStorage::new("wal");
        let wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
        let mut recs = append_n(&wal, 50, 123, 1, FlushPolicy::Sync);
        recs.extend(append_n(&wal, 30, 200, 100, unsynced_policy));
        let survivor = disk.crash();
        drop(wal);
        let (_w, report, got) = reopen(survivor, &config, 4096, false).unwrap();
        assert!(got.len() >= 50, "synced records lost: {}", got.len());
        assert!(got.len() <= recs.len());
        assert_eq!(got, recs[..got.len()].to_vec());
        assert_eq!(report.end_lsn.0, got.last().map_or(4096, |r| r.1));
    }
}

#[test]
fn wal_torn_last_write_is_reported_and_discarded() {
    let config = cfg(64 << 10, 8192, 8192);
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
    let mut recs = append_n(&wal, 20, 100, 1, FlushPolicy::Sync);
    // Five records of 320 bytes in one write; the tear keeps the first and 180 bytes of the second.
    let tail = append_n(&wal, 5, 300, 100, FlushPolicy::None);
    disk.fault_write_after(0, Fault::Tear(500));
    let err = wal.commit(Lsn(tail[4].1), FlushPolicy::Sync).unwrap_err();
    assert!(
        matches!(err, WalError::Io(ref e) if e.op == IoOp::Write),
        "{err}"
    );
    assert!(matches!(
        wal.append(b"after"),
        Err(WalError::ReadOnlyAfterIoError(_))
    ));
    let survivor = disk.crash();
    drop(wal);

    let (wal, report, got) = reopen(survivor.clone(), &config, 4096, false).unwrap();
    assert!(report.torn_tail);
    recs.push(tail[0].clone());
    assert_eq!(got, recs);
    assert_eq!(report.end_lsn, Lsn(tail[0].1));
    // Appends continue over the torn record, which never comes back.
    let next = append_n(&wal, 1, 10, 900, FlushPolicy::Sync);
    drop(wal);
    let (_w, report, got) = reopen(survivor, &config, 4096, false).unwrap();
    assert!(!report.torn_tail);
    recs.extend(next);
    assert_eq!(got, recs);
}

/// Writes 200 records of 520 bytes into a log with a 4 KiB unsynced window and closes it.
fn log_of_200(name: &str) -> (SimStorage, WalConfig, Vec<Rec>) {
    let config = cfg(256 << 10, 4096, 4096);
    let disk = SimStorage::new(name);
    let wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
    let recs = append_n(&wal, 200, 500, 1, FlushPolicy::None);
    wal.shutdown().unwrap();
    (disk, config, recs)
}

fn file_offset(lsn: u64, cap: u64) -> u64 {
    HEADER_SIZE + lsn % cap
}

#[test]
fn wal_corruption_before_tail_is_refused_and_salvaged() {
    // A flipped payload byte (checksum) and a flipped LSN field (header no longer matches).
    for at_in_record in [16 + 7, 9] {
        let (disk, config, recs) = log_of_200("wal-c");
        let cap = config.capacity_bytes;
        let bad = &recs[10];
        disk.corrupt(file_offset(bad.0, cap) + at_in_record, 0x04);

        let err = reopen(disk.clone(), &config, 4096, false).unwrap_err();
        match &err {
            WalError::Corrupt {
                file, lsn, offset, ..
            } => {
                assert_eq!(file, "wal-c");
                assert_eq!(*lsn, Lsn(bad.0));
                assert_eq!(*offset, file_offset(bad.0, cap));
            }
            other => panic!("expected Corrupt, got {other}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains("wal-c") && msg.contains(&format!("LSN {}", bad.0)),
            "{msg}"
        );

        let (wal, report, got) = reopen(disk.clone(), &config, 4096, true).unwrap();
        assert_eq!(got, recs[..10].to_vec());
        let s = report.salvaged.clone().expect("salvage reported");
        assert_eq!(s.lsn, Lsn(bad.0));
        assert_eq!(s.offset, file_offset(bad.0, cap));
        assert_eq!(s.records_lost, 189);
        assert_eq!(s.bytes_lost, recs[199].1 - bad.0);
        assert!(!report.torn_tail);
        assert_eq!(wal.end_lsn(), Lsn(bad.0));
        // The log continues after the cut, and the lost records stay lost.
        let next = append_n(&wal, 3, 500, 7000, FlushPolicy::Sync);
        drop(wal);
        let (_w, report, got) = reopen(disk, &config, 4096, false).unwrap();
        assert!(report.salvaged.is_none() && !report.torn_tail);
        let want: Vec<Rec> = recs[..10].iter().cloned().chain(next).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn wal_damage_within_unsynced_window_reads_as_torn_tail() {
    let (disk, config, recs) = log_of_200("wal-t");
    // Record 197: the two records after it end within the 4 KiB window of it.
    disk.corrupt(file_offset(recs[197].0, config.capacity_bytes) + 40, 0x80);
    let (_w, report, got) = reopen(disk, &config, 4096, false).unwrap();
    assert!(report.torn_tail);
    assert_eq!(report.discarded_after_tail, 2);
    assert_eq!(got, recs[..197].to_vec());
}

#[test]
fn wal_abandoned_records_after_a_tail_never_resurface() {
    let config = cfg(64 << 10, 4096, 16384);
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
    let mut recs = append_n(&wal, 10, 100, 1, FlushPolicy::Sync);
    let lost = append_n(&wal, 10, 100, 100, FlushPolicy::Write);
    let survivor = disk.crash();
    drop(wal);
    // Out-of-order writeback: records 11..19 reached the media, record 10 did not.
    let (from, to) = (lost[1].0, lost[9].1);
    let mut bytes = vec![0u8; (to - from) as usize];
    disk.read_at(&mut bytes, file_offset(from, config.capacity_bytes))
        .unwrap();
    survivor
        .write_at(&bytes, file_offset(from, config.capacity_bytes))
        .unwrap();
    survivor.sync().unwrap();

    let (wal, report, got) = reopen(survivor.clone(), &config, 4096, false).unwrap();
    assert_eq!(got, recs);
    assert!(report.torn_tail);
    assert_eq!(report.discarded_after_tail, 9);
    // A new record of the same size ends exactly where the abandoned record 11 starts.
    let next = append_n(&wal, 1, 100, 555, FlushPolicy::Sync);
    assert_eq!(next[0].1, lost[1].0);
    drop(wal);
    let (_w, report, got) = reopen(survivor, &config, 4096, false).unwrap();
    recs.extend(next);
    assert_eq!(got, recs, "abandoned records must not be replayed");
    assert!(!report.torn_tail);
}

#[test]
fn wal_refuses_foreign_or_damaged_files_and_bad_arguments() {
    let config = cfg(64 << 10, 4096, 8192);
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
    assert!(matches!(
        wal.append(&vec![0u8; 64 << 10]),
        Err(WalError::RecordTooLarge { .. })
    ));
    drop(wal);

    let wrong = Wal::open(
        Box::new(disk.clone()),
        config.clone(),
        DB + 1,
        Lsn(4096),
        &quiet(false),
        &mut |_, _, _| Ok(()),
    )
    .unwrap_err();
    assert!(
        matches!(wrong, WalError::WrongDatabase { expected, found, .. } if expected == DB + 1 && found == DB),
        "{wrong}"
    );

    // Another file with its header damaged: magic, then a field under the checksum.
    for (at, what) in [(4u64, "magic"), (13, "checksum")] {
        let d = SimStorage::new("wal2");
        drop(Wal::create(Box::new(d.clone()), config.clone(), DB, Lsn(4096)).unwrap());
        d.corrupt(at, 0x01);
        let err = reopen(d, &config, 4096, false).unwrap_err();
        assert!(
            matches!(err, WalError::BadHeader { .. }) && err.to_string().contains(what),
            "{err}"
        );
    }
    let empty = reopen(SimStorage::new("empty"), &config, 4096, false).unwrap_err();
    assert!(matches!(empty, WalError::BadHeader { .. }), "{empty}");

    // Create needs an empty file, a valid capacity and a usable start LSN.
    let err = Wal::create(Box::new(disk), config.clone(), DB, Lsn(4096)).unwrap_err();
    assert!(matches!(err, WalError::Config(_)), "{err}");
    let mut odd = config.clone();
    odd.capacity_bytes = 70_000;
    let err = Wal::create(Box::new(SimStorage::new("x")), odd, DB, Lsn(4096)).unwrap_err();
    assert!(matches!(err, WalError::Config(_)), "{err}");
    for start in [0u64, 4097] {
        let err = Wal::create(
            Box::new(SimStorage::new("x")),
            config.clone(),
            DB,
            Lsn(start),
        )
        .unwrap_err();
        assert!(matches!(err, WalError::Config(_)), "{err}");
    }
}

#[test]
fn wal_append_blocks_until_checkpoint_frees_space() {
    let cap = MIN_CAPACITY;
    let config = cfg(cap, 4096, 4096);
    let disk = SimStorage::new("wal");
    let wal = Arc::new(Wal::create(Box::new(disk), config, DB, Lsn(4096)).unwrap());
    let size = record_size(1000);
    while wal.used_bytes() + size <= cap {
        wal.append(&[7u8; 1000]).unwrap();
    }
    assert!(wal.needs_checkpoint());
    let (tx, rx) = mpsc::channel();
    let w = Arc::clone(&wal);
    let t = std::thread::spawn(move || {
        let r = w.append(&[8u8; 1000]);
        // The receiver outlives this thread; a send error cannot happen.
        let _ = tx.send(r.map(|l| l.0));
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        rx.try_recv().is_err(),
        "append must block while the log is full"
    );
    let end = wal.end_lsn();
    wal.sync_to(end).unwrap();
    wal.checkpointed(end);
    let got = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("append unblocked")
        .unwrap();
    assert_eq!(got, end.0 + size);
    t.join().unwrap();
    assert_eq!(wal.stats().space_waits, 1);
    assert_eq!(wal.used_bytes(), size);
    assert!(!wal.needs_checkpoint());
}

#[test]
fn wal_failed_sync_or_write_is_fail_stop() {
    let config = cfg(64 << 10, 4096, 8192);
    // A failed sync.
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(4096)).unwrap();
    let ok = append_n(&wal, 3, 10, 1, FlushPolicy::Sync);
    disk.fail_sync_after(0);
    let end = wal.append(b"doomed").unwrap();
    let err = wal.commit(end, FlushPolicy::Sync).unwrap_err();
    assert!(
        matches!(err, WalError::Io(ref e) if e.op == IoOp::Sync),
        "{err}"
    );
    let syncs_after_failure = disk.op_counts().2;
    for _ in 0..3 {
        let e = wal.append(b"more").unwrap_err();
        assert!(
            matches!(e, WalError::ReadOnlyAfterIoError(ref r) if r.contains("sync")),
            "{e}"
        );
    }
    for policy in [FlushPolicy::Sync, FlushPolicy::Write, FlushPolicy::None] {
        assert!(matches!(
            wal.commit(Lsn(ok[0].1), policy),
            Err(WalError::ReadOnlyAfterIoError(_))
        ));
    }
    assert!(matches!(
        wal.sync_to(end),
        Err(WalError::ReadOnlyAfterIoError(_))
    ));
    assert!(wal.shutdown().is_err());
    // A failed fsync is never retried: not by commits, not by shutdown.
    assert_eq!(disk.op_counts().2, syncs_after_failure);
    drop(wal);

    // A failed write.
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk.clone()), config, DB, Lsn(4096)).unwrap();
    disk.fault_write_after(0, Fault::Fail);
    let end = wal.append(b"doomed").unwrap();
    let err = wal.commit(end, FlushPolicy::Write).unwrap_err();
    assert!(
        matches!(err, WalError::Io(ref e) if e.op == IoOp::Write),
        "{err}"
    );
    assert!(matches!(
        wal.append(b"x"),
        Err(WalError::ReadOnlyAfterIoError(_))
    ));
}

#[test]
fn wal_group_commit_batches_concurrent_syncs() {
    let inner = SimStorage::new("wal");
    let storage = SlowSync {
        inner: inner.clone(),
        delay: Duration::from_millis(1),
    };
    let config = cfg(4 << 20, 64 << 10, 1 << 20);
    let wal = Arc::new(Wal::create(Box::new(storage), config.clone(), DB, Lsn(4096)).unwrap());
    let syncs_before = wal.stats().syncs;
    let (threads, per_thread) = (8u64, 200u64);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let p = payload(t * 1000 + i, 64);
                    let end = wal.append(&p).unwrap();
                    wal.commit(end, FlushPolicy::Sync).unwrap();
                    assert!(wal.durable_lsn() >= end);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = wal.stats();
    let commits = threads * per_thread;
    assert_eq!(s.sync_commits, commits);
    let syncs = s.syncs - syncs_before;
    assert!(
        syncs * 2 < commits,
        "group commit should batch: {syncs} syncs for {commits} commits"
    );
    assert!(s.max_flush_records >= 2);
    eprintln!(
        "group commit: {commits} commits, {syncs} syncs, {:.1} commits/sync",
        s.commits_per_sync()
    );
    // Every acknowledged commit survives a power cut.
    let survivor = inner.crash();
    drop(wal);
    let (_w, _r, got) = reopen(survivor, &config, 4096, false).unwrap();
    assert_eq!(got.len() as u64, commits);
}

/// Parked committers (sync and write policies mixed) must all wake when a sync fails: each
/// gets the error or returns success only for a record that really is durable (or written),
/// and none hangs.
#[test]
fn wal_parked_committers_wake_on_failure_and_never_ack_undurable_records() {
    let inner = SimStorage::new("wal");
    let storage = SlowSync {
        inner: inner.clone(),
        delay: Duration::from_micros(300),
    };
    let config = cfg(4 << 20, 64 << 10, 1 << 20);
    let wal = Arc::new(Wal::create(Box::new(storage), config, DB, Lsn(4096)).unwrap());
    inner.fail_sync_after(20);
    let (tx, rx) = std::sync::mpsc::channel();
    let threads = 12u64;
    for t in 0..threads {
        let (wal, tx) = (Arc::clone(&wal), tx.clone());
        std::thread::spawn(move || {
            let policy = if t % 3 == 0 {
                FlushPolicy::Write
            } else {
                FlushPolicy::Sync
            };
            let (mut ok, mut failed) = (0u64, false);
            for i in 0..10_000u64 {
                let Ok(end) = wal.append(&payload(t * 100_000 + i, 48)) else {
                    failed = true;
                    break;
                };
                match wal.commit(end, policy) {
                    Ok(()) => {
                        let reached = match policy {
                            FlushPolicy::Sync => wal.durable_lsn(),
                            _ => wal.written_lsn(),
                        };
                        assert!(reached >= end, "acknowledged {end:?} beyond {reached:?}");
                        ok += 1;
                    }
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            tx.send((t, ok, failed)).unwrap();
        });
    }
    drop(tx);
    let mut sync_failures = 0;
    for _ in 0..threads {
        let (t, ok, failed) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("a committer hung after the sync failure");
        assert!(ok > 0 || failed, "thread {t} did nothing");
        if t % 3 != 0 {
            assert!(failed, "sync committer {t} never saw the failure");
            sync_failures += 1;
        }
    }
    assert_eq!(sync_failures, 8);
    assert!(matches!(
        wal.append(b"x"),
        Err(WalError::ReadOnlyAfterIoError(_))
    ));
    let s = wal.stats();
    assert!(s.sync_commits > 0 && s.write_commits > 0);
}

#[test]
fn wal_background_thread_syncs_lazy_commits() {
    let mut config = cfg(64 << 10, 4096, 8192);
    config.background_sync_interval = Duration::from_millis(20);
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk), config, DB, Lsn(4096)).unwrap();
    for policy in [FlushPolicy::None, FlushPolicy::Write] {
        let end = wal.append(b"lazy").unwrap();
        wal.commit(end, policy).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while wal.durable_lsn() < end {
            assert!(Instant::now() < deadline, "background sync never came");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(wal.written_lsn(), end);
    }
}

/// A disk that can lose power, for the randomized test.
trait Crashable: Storage + Clone + 'static {
    fn crash_now(&self, rng: &mut SmallRng) -> Self;
    /// Maybe arms a fault on an upcoming operation.
    fn arm_fault(&self, _rng: &mut SmallRng) {}
}

impl Crashable for SimStorage {
    fn crash_now(&self, _rng: &mut SmallRng) -> SimStorage {
        self.crash()
    }
    fn arm_fault(&self, rng: &mut SmallRng) {
        if rng.gen_bool(0.5) {
            self.fault_write_after(rng.gen_range(0..20), Fault::Tear(rng.gen_range(0..3000)));
        }
    }
}

impl Crashable for ChaosDisk {
    fn crash_now(&self, rng: &mut SmallRng) -> ChaosDisk {
        self.crash(rng)
    }
}

/// Per seed: a log with random geometry, four generations of random appends and commits, each
/// ended by a power cut at a random point. Replay must be a prefix of what the generation appended
/// and include every record whose Sync commit returned.
/// Returns how many reopens found a torn tail and how many found valid records after one.
fn random_crashes<D: Crashable>(make: impl Fn() -> D, seeds: std::ops::Range<u64>) -> (u64, u64) {
    let (mut torn, mut holes) = (0u64, 0u64);
    for seed in seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        let cap = [16u64 << 10, 64 << 10, 128 << 10][rng.gen_range(0..3)];
        let config = cfg(
            cap,
            rng.gen_range(4096..=16384),
            rng.gen_range(4096..=cap / 4) / 8 * 8,
        );
        // Same-size records make new records end where abandoned ones start, the case the
        // erasing at open is for.
        let fixed = rng.gen_bool(0.5);
        let mut disk = make();
        let mut wal = Wal::create(Box::new(disk.clone()), config.clone(), DB, Lsn(8)).unwrap();
        let mut ckpt = 8u64;
        let mut expected: Vec<Rec> = Vec::new();
        let mut acked = 8u64;
        for gen in 0..4u64 {
            disk.arm_fault(&mut rng);
            for i in 0..rng.gen_range(1..200u64) {
                let len = if fixed {
                    [40usize, 104, 248][rng.gen_range(0..3)]
                } else if rng.gen_ratio(1, 30) {
                    rng.gen_range(1000..5000)
                } else {
                    rng.gen_range(0..300)
                };
                let size = record_size(len as u64);
                if wal.used_bytes() + size > cap || rng.gen_ratio(1, 50) {
                    let end = wal.end_lsn();
                    if wal.sync_to(end).is_err() {
                        break;
                    }
                    wal.checkpointed(end);
                    ckpt = end.0;
                    acked = end.0;
                    expected.clear();
                }
                let p = payload(seed << 32 | gen << 16 | i, len);
                let Ok(end) = wal.append(&p) else { break };
                expected.push((end.0 - size, end.0, p));
                let policy = [
                    FlushPolicy::Sync,
                    FlushPolicy::Write,
                    FlushPolicy::None,
                    FlushPolicy::None,
                ][rng.gen_range(0..4)];
                match wal.commit(end, policy) {
                    Ok(()) if policy == FlushPolicy::Sync => acked = end.0,
                    Ok(()) => {}
                    Err(_) => break,
                }
            }
            let survivor = disk.crash_now(&mut rng);
            drop(wal);
            let (w, report, got) = reopen(survivor.clone(), &config, ckpt, false)
                .unwrap_or_else(|e| panic!("seed {seed} generation {gen}: {e}"));
            assert!(got.len() <= expected.len(), "seed {seed} gen {gen}");
            assert!(
                got[..] == expected[..got.len()],
                "seed {seed} gen {gen}: replay is not a prefix of the appended records"
            );
            let got_end = got.last().map_or(ckpt, |r| r.1);
            assert_eq!(report.end_lsn.0, got_end);
            assert!(
                got_end >= acked,
                "seed {seed} gen {gen}: lost acknowledged records ({got_end} < {acked})"
            );
            torn += u64::from(report.torn_tail);
            holes += u64::from(report.discarded_after_tail > 0);
            // Open synced what it replayed: from now on it must survive.
            expected.truncate(got.len());
            acked = got_end;
            wal = w;
            disk = survivor;
        }
    }
    (torn, holes)
}

/// Seeds for the randomized tests; `ZIPDB_WAL_SEEDS=n` runs `n` of them (for soak runs).
fn seeds(default: u64) -> std::ops::Range<u64> {
    let n = std::env::var("ZIPDB_WAL_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    0..n
}

#[test]
fn wal_random_crashes_sim_storage_with_torn_writes() {
    let (torn, _) = random_crashes(|| SimStorage::new("wal"), seeds(40));
    assert!(torn > 0, "no generation ended in a torn write");
}

#[test]
fn wal_random_crashes_out_of_order_writeback() {
    let (torn, holes) = random_crashes(ChaosDisk::new, seeds(60));
    assert!(
        torn > 0 && holes > 0,
        "the crashes left no torn tail ({torn}) or no hole before valid records ({holes})"
    );
}

/// Real-disk measurements; run with `--ignored --nocapture`. `ZIPDB_WAL_DIR` picks the directory.
fn bench_dir() -> std::path::PathBuf {
    let dir = std::env::var_os("ZIPDB_WAL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("zipdb-wal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn commits_per_sec(threads: u64, per_thread: u64) -> (f64, WalStats) {
    let dir = bench_dir();
    let path = dir.join(format!("scale-{threads}.wal"));
    let _ = std::fs::remove_file(&path);
    let f = FileStorage::open(&path, false).unwrap();
    let wal =
        Arc::new(Wal::create(Box::new(f), cfg(64 << 20, 1 << 20, 8 << 20), DB, Lsn(4096)).unwrap());
    let t0 = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                let p = payload(t, 120);
                for _ in 0..per_thread {
                    let end = wal.append(&p).unwrap();
                    wal.commit(end, FlushPolicy::Sync).unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let rate = (threads * per_thread) as f64 / t0.elapsed().as_secs_f64();
    let stats = wal.stats();
    drop(wal);
    std::fs::remove_file(&path).unwrap();
    (rate, stats)
}

#[test]
#[ignore = "measures the real disk; run explicitly"]
fn wal_bench_group_commit_scaling_real_file() {
    let ms_per_sync = |s: &WalStats| s.sync_ns_total as f64 / s.syncs.max(1) as f64 / 1e6;
    // 1 thread on both sides of the 16-thread run, so that a drifting disk shows.
    let mut rates = Vec::new();
    for threads in [1u64, 16, 1, 16] {
        let (rate, s) = commits_per_sec(threads, 300);
        eprintln!(
            "{threads:2} threads: {rate:7.0} commits/s, {:.2} ms/sync, {:.1} commits/sync",
            ms_per_sync(&s),
            s.commits_per_sync()
        );
        rates.push(rate);
    }
    let one = (rates[0] + rates[2]) / 2.0;
    let many = (rates[1] + rates[3]) / 2.0;
    eprintln!("speedup {:.1}x", many / one);
    assert!(
        many >= 8.0 * one,
        "16 threads reach {:.1}x of 1 thread",
        many / one
    );
}

#[test]
#[ignore = "measures the real disk; run explicitly"]
fn wal_bench_replay_throughput_real_file() {
    let dir = bench_dir();
    let path = dir.join("replay.wal");
    let _ = std::fs::remove_file(&path);
    let config = cfg(512 << 20, 4 << 20, 8 << 20);
    let f = FileStorage::open(&path, false).unwrap();
    let wal = Wal::create(Box::new(f), config.clone(), DB, Lsn(4096)).unwrap();
    let mut rng = SmallRng::seed_from_u64(1);
    let payloads: Vec<Vec<u8>> = (0..64)
        .map(|i| payload(i, rng.gen_range(50..400)))
        .collect();
    let mut n = 0usize;
    while wal.used_bytes() < 400 << 20 {
        wal.append(&payloads[n % payloads.len()]).unwrap();
        n += 1;
    }
    wal.shutdown().unwrap();
    drop(wal);
    let f = FileStorage::open(&path, false).unwrap();
    let mut sum = 0u64;
    let (_w, report) = Wal::open(
        Box::new(f),
        config,
        DB,
        Lsn(4096),
        &RecoveryOptions::default(),
        &mut |_, _, p| {
            sum += p.len() as u64;
            Ok(())
        },
    )
    .unwrap();
    let mbs = report.bytes as f64 / 1e6 / report.elapsed.as_secs_f64();
    eprintln!(
        "replayed {} records, {} MB in {:?}: {mbs:.0} MB/s",
        report.records,
        report.bytes / 1_000_000,
        report.elapsed
    );
    assert_eq!(report.records, n as u64);
    assert_eq!(sum, report.payload_bytes);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(mbs >= 200.0, "replay at {mbs:.0} MB/s");
}
