//! Recovery over a damaged log. The input is split into records that are appended (and
//! synced) to a small WAL, so the log wraps and holds valid records; then bytes of the file,
//! chosen by the input, are overwritten (header included, now and then). Opening the log must
//! return an error or a report, never panic, hang or hand the replay callback a record that
//! was never appended.
#![no_main]

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use zipdb_storage::io::{SimStorage, Storage};
use zipdb_storage::wal::{FlushPolicy, RecoveryOptions, Wal, WalConfig};
use zipdb_storage::Lsn;

fn config() -> WalConfig {
    WalConfig {
        capacity_bytes: 16 << 10,
        buffer_bytes: 4096,
        max_unsynced_bytes: 4096,
        background_sync_interval: Duration::from_secs(3600),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (n_records, rest) = data.split_at(1);
    let disk = SimStorage::new("wal");
    let wal = Wal::create(Box::new(disk.clone()), config(), 7, Lsn(4096)).expect("create");
    let mut appended: HashSet<Vec<u8>> = HashSet::new();
    let mut ends = VecDeque::new();
    let mut checkpoint = Lsn(4096);
    let mut pos = 0;
    for _ in 0..n_records[0] % 64 {
        let Some(&len) = rest.get(pos) else { break };
        let len = (len as usize) * 8 % 1024;
        let end = (pos + 1 + len).min(rest.len());
        let payload = &rest[pos + 1..end];
        pos = end;
        let Ok(lsn) = wal.append(payload) else { break };
        if wal.commit(lsn, FlushPolicy::Sync).is_err() {
            break;
        }
        // Replay hands back payloads; remember them to check it invents none.
        appended.insert(payload.to_vec());
        // Let the log wrap: all but the last three records are "checkpointed".
        ends.push_back(lsn);
        if ends.len() > 3 {
            checkpoint = ends.pop_front().expect("non-empty");
            wal.checkpointed(checkpoint);
        }
    }
    drop(wal);
    // Damage: (offset, byte) pairs from what is left of the input.
    let file_len = disk.len().expect("len");
    for pair in rest[pos..].chunks_exact(3) {
        let off = u64::from(u16::from_le_bytes([pair[0], pair[1]])) % file_len;
        let _ = disk.write_at(&[pair[2]], off);
    }
    for salvage in [false, true] {
        let options = RecoveryOptions {
            salvage,
            progress_interval: None,
        };
        let mut on_record = |_: Lsn, _: Lsn, payload: &[u8]| {
            assert!(
                appended.contains(payload),
                "replay returned a payload that was never appended"
            );
            Ok(())
        };
        if let Ok((wal, _report)) = Wal::open(
            Box::new(disk.clone()),
            config(),
            7,
            checkpoint,
            &options,
            &mut on_record,
        ) {
            let _ = wal.shutdown();
        }
    }
});
