//! Background checkpoints, crashes while files are created, and the OS image of a data
//! directory.

use super::faults::{expect_s0_or, write_fault};
use super::*;
use crate::error::StorageError;

// ---------------------------------------------------------------------------------------------
// 5. Checkpoints started by the checkpointer thread when the log fills.

/// Runs `f` on its own thread; a hang (a writer blocked forever) fails the test instead of
/// stalling it.
fn with_timeout<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => resume_unwind(p),
        Err(_) => panic!("{what}: still running after {secs} s: a thread is blocked for good (the blocked thread is leaked)"),
    }
}

#[test]
fn crash_points_with_background_checkpoints() {
    const TEST: &str = "crash_points_with_background_checkpoints";
    let mut total_points = 0;
    for seed in seeds(&[10]) {
        // The smallest log: appends often wait for the checkpointer to free space.
        let s = Shape {
            wal_bytes: 64 << 10,
            ..shape(seed)
        };
        let steps = std::sync::Arc::new(workload(seed, &s));
        let o = options(&s);
        let (marks, space_waits, checkpoints) = {
            let steps = steps.clone();
            with_timeout(
                60,
                &format!("{TEST} seed {seed}: reference run"),
                move || {
                    let disks = Disks::new();
                    let r = run(&disks, &s, &steps, Ckpt::Background, |_| {});
                    if let Some((i, e)) = &r.failed {
                        panic!(
                            "seed {seed}: the fault-free run failed at step {i}: {}",
                            chain(e)
                        );
                    }
                    let st = r.db.stats();
                    (r.marks, st.wal.space_waits, st.store.checkpoints)
                },
            )
        };
        let last = *marks.last().expect("marks");
        // Timing moves every point a little from run to run; the invariants hold anyway.
        // Crash points: WAL syncs, then torn or failed WAL writes. Failed data-file syncs (a
        // checkpoint failing on the checkpointer thread) are left out until the hang shown by
        // `failed_checkpoint_wakes_writers_waiting_for_log_space` is fixed: a writer waiting for
        // log space at that moment blocks for good.
        let total = last.wal_syncs + last.wal_writes;
        let pts = points(seed, total, 40);
        total_points += pts.len();
        for k in pts {
            case(TEST, seed, Some(k), || {
                let steps = steps.clone();
                let ctx = format!("{TEST} seed {seed} k {k} (shape {s:?}; timing-dependent)");
                let c = ctx.clone();
                with_timeout(60, &ctx, move || {
                    let ctx = c;
                    let disks = Disks::new();
                    let run = run(&disks, &s, &steps, Ckpt::Background, |d| {
                        if k < last.wal_syncs {
                            d.wal.fail_sync_after(k)
                        } else {
                            d.wal
                                .fault_write_after(k - last.wal_syncs, write_fault(seed, k))
                        }
                    });
                    // The error may come from a checkpoint on the checkpointer thread, seen by the
                    // next step as a refusal: that step then logged nothing.
                    let refused = matches!(
                        run.failed,
                        Some((_, Error::Storage(StorageError::ReadOnlyAfterIoError(_))))
                    );
                    if let Some((_, e)) = &run.failed {
                        assert!(
                            refused || injected(e),
                            "{ctx}: unexpected error: {}",
                            chain(e)
                        );
                        assert_refuses_writes(&run.db, &ctx);
                    }
                    let rec = crash_and_recover(run, &disks, o, &steps, false, &ctx);
                    assert!(
                        !(refused && rec.replayed),
                        "{ctx}: a refused step was recovered"
                    );
                    check_writes_after_recovery(rec.db, &rec.live, o, rec.state, &ctx);
                });
            });
        }
        eprintln!(
            "{TEST} seed {seed}: {} WAL syncs, {} data syncs, {} WAL writes in the reference run; \
             {checkpoints} checkpoints, {space_waits} appends waited for log space",
            last.wal_syncs, last.data_syncs, last.wal_writes
        );
    }
    eprintln!("{TEST}: {total_points} crash points");
}

#[test]
fn failed_checkpoint_wakes_writers_waiting_for_log_space() {
    const TEST: &str = "failed_checkpoint_wakes_writers_waiting_for_log_space";
    for seed in seeds(&[1, 3, 4]) {
        case(TEST, seed, None, || {
            let s = Shape {
                page_size: 4096,
                pool_pages: 256,
                wal_bytes: 64 << 10,
                codec: Codec::None,
                steps: 0,
            };
            let o = options(&s);
            let disks = Disks::new();
            let db = disks.open(o).expect("create");
            let t = db.create_tree("t", None).expect("create tree");
            let mut r = SmallRng::seed_from_u64(seed);
            // Many pages, then many of them dirty: the checkpoint takes a while.
            for i in 0..3000u32 {
                t.upsert(&key(i), &[r.gen(); 40]).expect("load");
                if i % 500 == 499 {
                    db.checkpoint().expect("checkpoint");
                }
            }
            db.checkpoint().expect("checkpoint");
            for _ in 0..150 {
                t.upsert(&key(r.gen_range(0..3000)), &[r.gen(); 40])
                    .expect("update");
            }
            // The next checkpoint fails at its first sync of the data file. Each of these commits
            // takes 28 KiB of the 64 KiB log: the second wakes the checkpointer (half full),
            // the third must wait for the space that checkpoint would free.
            disks.data.fail_sync_after(0);
            let ctx = format!("{TEST} seed {seed}");
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for i in 0..100u32 {
                    let v: Vec<u8> = (0..28 << 10).map(|_| r.gen()).collect();
                    if let Err(e) = t.upsert(&key(i), &v) {
                        let _ = tx.send(Some((i, e)));
                        return;
                    }
                }
                let _ = tx.send(None);
            });
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Some((i, e))) => assert!(
                    matches!(e, Error::Storage(StorageError::ReadOnlyAfterIoError(_)))
                        || injected(&e),
                    "{ctx}: commit {i}: {}",
                    chain(&e)
                ),
                Ok(None) => panic!("{ctx}: 100 commits succeeded after the checkpoint failed"),
                Err(_) => {
                    let st = db.stats().wal;
                    panic!(
                        "{ctx}: a commit is still blocked after 10 s (the thread is leaked): {} \
                         log bytes appended, {} appends waited for space, and the database is \
                         fail-stopped (checkpoint() returns {:?})",
                        st.log_bytes,
                        st.space_waits,
                        db.checkpoint().map_err(|e| e.to_string()),
                    );
                }
            }
        });
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Crashes while the database is being created.

/// Crashes at every sync and faulted write of one disk while `Database::open` creates a new
/// database; the next open must then work and hold nothing.
fn creation_crashes(test: &str, on_wal: bool) {
    const FAULTS: [Fault; 4] = [
        Fault::Fail,
        Fault::Tear(0),
        Fault::Tear(3),
        Fault::Tear(usize::MAX),
    ];
    let s = Shape {
        wal_bytes: 64 << 10,
        ..shape(1)
    };
    let o = options(&s);
    let d = Disks::new();
    let db = d.open(o).expect("create");
    let io = counts(&d, 0);
    drop(db);
    let (syncs, writes) = if on_wal {
        (io.wal_syncs, io.wal_writes)
    } else {
        (io.data_syncs, io.data_writes)
    };
    let disk = if on_wal { "WAL" } else { "data file" };
    let n = syncs + writes * FAULTS.len() as u64;
    for k in points(0, n, 0) {
        case(test, 0, Some(k), || {
            let d = Disks::new();
            let target = if on_wal { &d.wal } else { &d.data };
            let what = if k < syncs {
                target.fail_sync_after(k);
                format!("{disk} sync #{k} of {syncs} failed")
            } else {
                let (w, f) = ((k - syncs) / 4, FAULTS[((k - syncs) % 4) as usize]);
                target.fault_write_after(w, f);
                format!("{disk} write #{w} of {writes} faulted with {f:?}")
            };
            let ctx = format!("{test} k {k} ({what}, while creating the database)");
            match d.open(o) {
                Ok(_) => panic!("{ctx}: creating the database succeeded"),
                Err(e) => assert!(injected(&e), "{ctx}: unexpected error {}", chain(&e)),
            }
            // Power fails; the next open must create (or finish creating) the database.
            let after = d.crash();
            let db = after.open(o).unwrap_or_else(|e| {
                panic!(
                    "{ctx}: after the crash the database cannot be opened: {}",
                    chain(&e)
                )
            });
            let got = read_state(&db).expect("state");
            assert!(got.is_empty(), "{ctx}: {got:?}");
            check_writes_after_recovery(db, &after, o, Model::new(), &ctx);
        });
    }
    eprintln!("{test}: {n} crash points");
}

#[test]
fn crash_while_creating_the_wal() {
    creation_crashes("crash_while_creating_the_wal", true);
}

#[test]
fn crash_while_creating_the_data_file() {
    creation_crashes("crash_while_creating_the_data_file", false);
}

#[test]
fn reopen_right_after_drop_shares_no_files_with_the_old_instance() {
    const TEST: &str = "reopen_right_after_drop_shares_no_files_with_the_old_instance";
    for seed in seeds(&[1, 2, 3, 4, 5, 6, 7, 8]) {
        case(TEST, seed, None, || {
            let s = Shape {
                page_size: 4096,
                pool_pages: 64,
                wal_bytes: 64 << 10,
                codec: Codec::None,
                steps: 0,
            };
            // Checkpoints whenever the checkpointer wakes and something changed.
            let o = Options {
                checkpoint_interval: Duration::from_millis(1),
                ..options(&s)
            };
            let ctx = format!("{TEST} seed {seed}");
            let mut r = SmallRng::seed_from_u64(seed);
            let disks = Disks::new();
            let mut model = Rows::new();
            let mut db = disks.open(o).expect("create");
            db.create_tree("t", None).expect("create tree");
            for round in 0..4 {
                let t = db.open_tree("t").expect("tree");
                let start = std::time::Instant::now();
                while start.elapsed() < Duration::from_millis(120) {
                    let k = key(r.gen_range(0..400));
                    let v = value(&mut r, 4096);
                    t.upsert(&k, &v)
                        .unwrap_or_else(|e| panic!("{ctx}: round {round}: {}", chain(&e)));
                    model.insert(k, v);
                }
                drop(t);
                drop(db);
                // What an application does to reopen its database: the same files, at once.
                db = disks
                    .open(o)
                    .unwrap_or_else(|e| panic!("{ctx}: reopen {round}: {}", chain(&e)));
            }
            db.close()
                .unwrap_or_else(|e| panic!("{ctx}: close: {}", chain(&e)));
            // Let every old instance finish, then check what the files hold.
            std::thread::sleep(Duration::from_millis(300));
            let want = Model::from([("t".to_string(), model)]);
            let db = expect_s0_or(&disks.crash(), o, &want, &ctx, "after the reopens");
            drop(db);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// 7. The data file as the OS holds it (every write, synced or not), with the checkpointer thread.

/// The disk as the OS sees it: every write kept, synced or not. A crash may leave exactly this
/// (the page cache was written back just before the power failed, or only the process died).
fn os_image(d: &SimStorage) -> SimStorage {
    let out = SimStorage::new(d.name());
    // One read is atomic, but the length is read separately: retry until it did not change
    // around the read, so the image is the file at one instant (a background checkpoint may
    // be growing it).
    let buf = loop {
        let len = d.len().expect("len") as usize;
        let mut buf = vec![0u8; len];
        if len > 0 {
            d.read_at(&mut buf, 0).expect("read");
        }
        if d.len().expect("len") as usize == len {
            break buf;
        }
    };
    if !buf.is_empty() {
        out.write_at(&buf, 0).expect("write");
    }
    out.sync().expect("sync");
    out
}

#[test]
#[ignore = "slow (about 90 s): run with --ignored. Its earlier failures came from the test taking the data image (length and bytes at different instants) and the WAL image in an order no single crash produces; fixed in the test"]
fn os_flushed_data_file_with_background_checkpoints_recovers() {
    const TEST: &str = "os_flushed_data_file_with_background_checkpoints_recovers";
    for seed in seeds(&(1..=150).collect::<Vec<_>>()) {
        case(TEST, seed, None, || {
            let s = shape(seed);
            let steps = workload(seed, &s);
            let o = options(&s);
            let disks = Disks::new();
            let db = disks.open(o).expect("create");
            let mut model = Model::new();
            let mut r = SmallRng::seed_from_u64(mix(seed, 0x05));
            for (i, step) in steps.iter().enumerate() {
                exec(&db, step).unwrap_or_else(|e| panic!("seed {seed} step {i}: {}", chain(&e)));
                apply(&mut model, step);
                if r.gen_range(0..4) != 0 {
                    continue;
                }
                // A few images while the checkpointer thread may be writing.
                let mut images = Vec::new();
                for j in 0..4 {
                    // The WAL first: no commit runs now, so a data image taken after it may
                    // only hold a newer checkpoint, whose redo LSN the WAL image covers. (The
                    // other order can pair an old checkpoint with a WAL that a newer
                    // checkpoint has already let wrap over that checkpoint's records: a state
                    // no single crash produces.)
                    let wal = disks.wal.crash();
                    images.push(Disks {
                        data: os_image(&disks.data),
                        wal,
                    });
                    std::thread::sleep(Duration::from_micros(100 * j));
                }
                for (j, image) in images.iter().enumerate() {
                    let ctx = format!("{TEST} seed {seed} step {i} image {j}");
                    drop(expect_s0_or(image, o, &model, &ctx, "recovery"));
                }
            }
        });
    }
}
