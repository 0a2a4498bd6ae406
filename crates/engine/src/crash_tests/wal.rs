//! A torn or corrupt WAL.

use super::faults::{expect_s0_or, reference};
use super::*;
use crate::error::StorageError;

// ---------------------------------------------------------------------------------------------
// 4. A torn WAL tail, and damage before it.

/// The file offset of log byte `lsn`.
fn wal_offset(lsn: u64, cap: u64) -> u64 {
    WAL_HEADER + lsn % cap
}

#[test]
fn torn_wal_tail_loses_only_the_unacknowledged_commit() {
    const TEST: &str = "torn_wal_tail_loses_only_the_unacknowledged_commit";
    for seed in seeds(&[6, 7]) {
        case(TEST, seed, None, || {
            let s = shape(seed);
            let steps = workload(seed, &s);
            let o = options(&s);
            let cap = s.wal_bytes;
            let marks = reference(seed, &s, &steps, Ckpt::Forced);
            // A step in the second half that changes the state and whose record is one write
            // that does not wrap.
            let mut r = SmallRng::seed_from_u64(mix(seed, 0x7a11));
            let mut model = Model::new();
            let mut candidates = Vec::new();
            for (i, step) in steps.iter().enumerate() {
                let was = model.clone();
                apply(&mut model, step);
                let (a, b) = (marks[i], marks[i + 1]);
                let lsn = WAL_START + a.log_bytes;
                if i >= steps.len() / 2
                    && model != was
                    && b.wal_writes - a.wal_writes == 1
                    && lsn % cap + (b.log_bytes - a.log_bytes) <= cap
                {
                    candidates.push(i);
                }
            }
            let step = candidates[r.gen_range(0..candidates.len())];
            let lsn = WAL_START + marks[step].log_bytes;
            let size = marks[step + 1].log_bytes - marks[step].log_bytes;
            let ctx = format!(
                "{TEST} seed {seed} (step {step}: {:?}, record at LSN {lsn}, {size} bytes)",
                steps[step]
            );
            let crashed = |fault: Fault| {
                let disks = Disks::new();
                let run = run(&disks, &s, &steps, Ckpt::Forced, |d| {
                    d.wal.fault_write_after(marks[step].wal_writes, fault)
                });
                match &run.failed {
                    Some((i, e)) if *i == step && injected(e) => {}
                    other => panic!("{ctx}: expected step {step} to fail with the injected torn write, got {other:?}"),
                }
                let before = run.model.clone();
                let mut after = before.clone();
                apply(&mut after, &steps[step]);
                let image = disks.crash();
                drop(run);
                (image, before, after)
            };
            let recover = |d: Disks, what: &str, before: &Model, after: &Model| {
                let ctx = format!("{ctx}: {what}");
                let db = d
                    .open(o)
                    .unwrap_or_else(|e| panic!("{ctx}: recovery failed: {}", chain(&e)));
                let report = db.recovery_report().cloned().expect("recovered");
                let end = report.end_lsn.0;
                assert!(
                    end == lsn || end == lsn + size,
                    "{ctx}: the log ends at LSN {end}: {report:?}"
                );
                let replayed = end == lsn + size;
                let want = if replayed { after } else { before };
                let got = read_state(&db).expect("state");
                assert!(
                    got == *want,
                    "{ctx}: replayed: {replayed}: {}",
                    diff(&got, want)
                );
                db.verify()
                    .unwrap_or_else(|e| panic!("{ctx}: verify: {}", chain(&e)));
                (db, report, replayed, ctx)
            };

            // The record reached the media whole, but its commit reported an error.
            let (image, before, after) = crashed(Fault::Tear(usize::MAX));
            let (db, report, survived, c) =
                recover(image.crash(), "record intact", &before, &after);
            assert!(
                survived && !report.torn_tail,
                "{c}: the intact record must replay: {report:?}"
            );
            drop(db);

            // The same record with damage: checksum, length, payload, LSN field.
            let variants = [
                ("checksum byte", r.gen_range(0..4)),
                ("length byte", r.gen_range(4..8)),
                ("payload byte", r.gen_range(RECORD_HEADER..size - 7)),
                ("LSN byte", r.gen_range(8..16)),
            ];
            for (what, at) in variants {
                let d = image.crash();
                d.wal
                    .corrupt(wal_offset(lsn + at, cap), r.gen_range(1..=255));
                let (db, report, survived, c) =
                    recover(d.clone(), &format!("{what} {at} damaged"), &before, &after);
                assert!(!survived, "{c}: a damaged record was replayed");
                // A header whose LSN field is wrong reads as the clean end of the log.
                assert_eq!(report.torn_tail, what != "LSN byte", "{c}: {report:?}");
                assert_eq!(report.discarded_after_tail, 0, "{c}: {report:?}");
                // Recovery erased the torn record: after another crash it is not reported again.
                let again = d.crash();
                drop(db);
                let (db, report, _, c) = recover(
                    again.clone(),
                    &format!("{what} {at} damaged, crashed again"),
                    &before,
                    &before,
                );
                assert!(
                    !report.torn_tail,
                    "{c}: the torn tail was not erased: {report:?}"
                );
                check_writes_after_recovery(db, &again, o, before.clone(), &c);
            }

            // A torn write that keeps the header and part of the payload.
            let keep = r.gen_range(RECORD_HEADER as usize..size as usize - 8);
            let (image, before, after) = crashed(Fault::Tear(keep));
            let d = image.crash();
            let (db, report, survived, c) = recover(
                d.clone(),
                &format!("torn after {keep} bytes"),
                &before,
                &after,
            );
            assert!(!survived && report.torn_tail, "{c}: {report:?}");
            check_writes_after_recovery(db, &d, o, before, &c);
        });
    }
}

#[test]
fn wal_corruption_before_the_tail_is_refused_or_salvaged() {
    const TEST: &str = "wal_corruption_before_the_tail_is_refused_or_salvaged";
    for seed in seeds(&[8, 9]) {
        case(TEST, seed, None, || {
            let s = Shape {
                page_size: 4096,
                pool_pages: 64,
                wal_bytes: 256 << 10,
                codec: Codec::Lz4,
                steps: 0,
            };
            let o = options(&s);
            let cap = s.wal_bytes;
            // The unsynced window of a new log: a quarter of it (below the 8 MiB default).
            let window = cap / 4;
            let mut r = SmallRng::seed_from_u64(mix(seed, 0xc0));
            let disks = Disks::new();
            let db = disks.open(o).expect("create");
            let t = db.create_tree("t", None).expect("create tree");
            let mut model = Model::from([("t".to_string(), Rows::new())]);
            // (LSN, size, model after) of every commit.
            let mut recs: Vec<(u64, u64, Model)> = Vec::new();
            let log = |db: &Database| db.stats().wal.log_bytes;
            let mut commit = |model: &mut Model, recs: &mut Vec<(u64, u64, Model)>| {
                let k = key(r.gen_range(0..300));
                let v = value(&mut r, 4096);
                let at = log(&db);
                t.upsert(&k, &v).expect("upsert");
                model.get_mut("t").expect("t").insert(k, v);
                recs.push((WAL_START + at, log(&db) - at, model.clone()));
            };
            // Phase A, then a checkpoint, then phase B: more than the window, less than the
            // half of the log that would start a checkpoint.
            for _ in 0..20 {
                commit(&mut model, &mut recs);
            }
            db.checkpoint().expect("checkpoint");
            let phase_b = recs.len();
            let ckpt_log = log(&db);
            while log(&db) - ckpt_log < cap / 2 - 8192 {
                commit(&mut model, &mut recs);
            }
            let end = WAL_START + log(&db);
            let image = disks.crash();
            drop(t);
            drop(db);

            // Damage before the checkpoint's redo LSN: nothing reads it any more.
            let (a_lsn, a_size, _) = recs[r.gen_range(0..phase_b)];
            let d = image.crash();
            d.wal
                .corrupt(wal_offset(a_lsn + r.gen_range(0..a_size - 7), cap), 0x5a);
            let db = expect_s0_or(&d, o, &model, TEST, "damage before the redo LSN");
            drop(db);

            // Damage to a synced record followed by more than the window of valid records.
            let eligible: Vec<usize> = (phase_b..recs.len())
                .filter(|&i| recs[i].0 + window + 8 < end)
                .collect();
            let victim = eligible[r.gen_range(0..eligible.len())];
            let (lsn, size, _) = recs[victim];
            let at = r.gen_range(0..size - 7);
            let ctx = format!(
                "{TEST} seed {seed} (record {victim} of {} at LSN {lsn}, byte {at}, log end {end})",
                recs.len()
            );
            let d = image.crash();
            d.wal
                .corrupt(wal_offset(lsn + at, cap), r.gen_range(1..=255));
            for attempt in 0..2 {
                // Refused, and refused again: a refused open changes nothing.
                match d.crash().open(o) {
                    Err(Error::Storage(StorageError::Wal(WalError::Corrupt { file, lsn: l, offset, detail }))) => {
                        assert_eq!(l, Lsn(lsn), "{ctx}: attempt {attempt}: {detail}");
                        assert_eq!(offset, wal_offset(lsn, cap), "{ctx}: attempt {attempt}: {detail}");
                        assert_eq!(file, "wal", "{ctx}");
                        let msg = Error::from(WalError::Corrupt { file, lsn: l, offset, detail }).to_string();
                        assert!(msg.contains("corrupt WAL") && msg.contains("salvage"), "{ctx}: unclear message: {msg}");
                    }
                    other => panic!("{ctx}: attempt {attempt}: expected a corrupt-WAL storage error, got {other:?}"),
                }
            }
            // Salvage keeps the records before the damage and drops the rest.
            let live = d.crash();
            let so = Options {
                salvage_wal: true,
                ..o
            };
            let db = live
                .open(so)
                .unwrap_or_else(|e| panic!("{ctx}: salvage failed: {}", chain(&e)));
            let report = db.recovery_report().cloned().expect("recovered");
            let sv = report
                .salvaged
                .clone()
                .unwrap_or_else(|| panic!("{ctx}: no salvage reported: {report:?}"));
            assert_eq!(sv.lsn, Lsn(lsn), "{ctx}: {sv:?}");
            assert_eq!(sv.offset, wal_offset(lsn, cap), "{ctx}: {sv:?}");
            assert_eq!(
                sv.records_lost,
                (recs.len() - victim - 1) as u64,
                "{ctx}: {sv:?}"
            );
            assert!(!report.torn_tail, "{ctx}: {report:?}");
            let want = recs[victim - 1].2.clone();
            let got = read_state(&db).expect("state");
            assert!(got == want, "{ctx}: salvaged state: {}", diff(&got, &want));
            db.verify()
                .unwrap_or_else(|e| panic!("{ctx}: verify: {}", chain(&e)));
            // It then works without salvage: the dropped records were erased.
            check_writes_after_recovery(db, &live, o, want, &ctx);
            eprintln!(
                "{ctx}: refused, then salvaged losing {} records",
                sv.records_lost
            );
        });
    }
}
