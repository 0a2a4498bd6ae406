use super::*;
use parking_lot::Mutex;
use proptest::prelude::*;
use zipdb_engine::storage::io::{Fault, SimStorage};

fn sim_space() -> (Arc<TempSpace>, Arc<Mutex<Vec<SimStorage>>>) {
    sim_space_with(None)
}

fn read_all(f: &TempFile<'_>, run: Run) -> Result<Vec<Vec<u8>>, SqlError> {
    let mut r = f.run_reader(run);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(rec.to_vec());
    }
    Ok(out)
}

fn write_run(f: &mut TempFile<'_>, recs: &[Vec<u8>]) -> Result<Run, SqlError> {
    let mut w = f.run_writer();
    for r in recs {
        w.push(r)?;
    }
    w.finish()
}

fn records(n: usize, len: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| (0..len).map(|j| (i * 31 + j) as u8).collect())
        .collect()
}

proptest! {
    #[test]
    fn runs_give_back_exactly_what_was_written(
        runs in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..400), 1..4)
    ) {
        let (space, _) = sim_space();
        let session = SessionTemp::new(space.clone());
        let mut f = session.create().expect("create");
        let mut placed = Vec::new();
        for recs in &runs {
            placed.push(write_run(&mut f, recs).expect("write"));
        }
        // Runs are independent: each reads back alone, in any order.
        for (recs, run) in runs.iter().zip(&placed).rev() {
            prop_assert_eq!(&read_all(&f, *run).expect("read"), recs);
        }
        prop_assert_eq!(session.used(), f.len);
        prop_assert_eq!(space.used(), f.len);
        drop(f);
        prop_assert_eq!((session.used(), space.used()), (0, 0));
    }
}

#[test]
fn a_corrupt_block_is_an_error_naming_the_file_and_offset() {
    let (space, files) = sim_space();
    let session = SessionTemp::new(space);
    let mut f = session.create().expect("create");
    // Several blocks, so that the second block's offset is not 0.
    let recs = records(3000, 100);
    let run = write_run(&mut f, &recs).expect("write");
    let disk = files.lock()[0].clone();
    // The second block starts after the first block's header and payload.
    let mut header = [0u8; 8];
    disk.read_at(&mut header, 0).expect("read");
    let second = 8 + u64::from(u32::from_le_bytes(header[0..4].try_into().unwrap()));
    disk.corrupt(second + 20, 0x40);
    let err = read_all(&f, run).unwrap_err();
    assert_eq!(err.code(), 1024);
    let msg = err.to_string();
    assert!(msg.contains("/sim/tmp/zipdb-spill-"), "{msg}");
    assert!(
        msg.contains(&format!("offset {second}")) && msg.contains("checksum"),
        "{msg}"
    );
    // A length that runs past the run is caught before any allocation.
    disk.corrupt(second + 20, 0x40);
    disk.corrupt(second + 3, 0x7f);
    let err = read_all(&f, run).unwrap_err();
    assert!(err.to_string().contains("runs past its run"), "{err}");
}

#[test]
fn read_and_write_faults_fail_with_the_file_named_and_give_back_the_space() {
    let (space, files) = sim_space();
    let session = SessionTemp::new(space.clone());
    let mut f = session.create().expect("create");
    let recs = records(3000, 100);
    let run = write_run(&mut f, &recs).expect("write");
    let disk = files.lock()[0].clone();
    disk.fail_read_after(1, Fault::Fail);
    let err = read_all(&f, run).unwrap_err();
    assert_eq!(err.code(), 1024);
    assert!(err.to_string().contains("zipdb-spill-"), "{err}");
    // The fault is spent: the run reads back whole.
    assert_eq!(read_all(&f, run).expect("read"), recs);

    let before = f.len;
    disk.fault_write_after(0, Fault::Fail);
    let err = write_run(&mut f, &recs).unwrap_err();
    assert_eq!(err.code(), 1026);
    // A failed write is not charged.
    assert_eq!((session.used(), space.used()), (before, before));
    drop(f);
    assert_eq!((session.used(), space.used()), (0, 0));
}

#[test]
fn the_session_and_total_caps_fail_with_mariadbs_errors() {
    let (space, _) = sim_space();
    let a = SessionTemp::new(space.clone());
    let b = SessionTemp::new(space.clone());
    a.set_max(100_000);
    let recs = records(3000, 100);
    let mut f = a.create().expect("create");
    let err = write_run(&mut f, &recs).unwrap_err();
    assert_eq!(err.code(), 4198);
    assert!(err
        .to_string()
        .contains("max_tmp_session_space_usage=100000"));
    assert!(a.used() <= 100_000);
    drop(f);
    assert_eq!(space.used(), 0);

    // The instance's cap counts every session's files.
    space.set_max(400_000);
    let mut fa = a.create().expect("create");
    a.set_max(u64::MAX);
    write_run(&mut fa, &records(2000, 100)).expect("fits");
    let mut fb = b.create().expect("create");
    let err = write_run(&mut fb, &records(3000, 100)).unwrap_err();
    assert_eq!(err.code(), 4199);
    assert!(space.used() <= 400_000);
    drop((fa, fb));
    assert_eq!((a.used(), b.used(), space.used()), (0, 0, 0));
}

#[test]
fn files_on_disk_have_unique_names_are_deleted_on_drop_and_leftovers_at_open() {
    let dir = std::env::temp_dir().join(format!("zipdb-spill-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let leftover = dir.join(format!("{PREFIX}999-1"));
    let other = dir.join("not-ours");
    std::fs::write(&leftover, b"crash").expect("write");
    std::fs::write(&other, b"keep").expect("write");
    let space = Arc::new(TempSpace::open_dir(&dir).expect("open"));
    assert!(!leftover.exists() && other.exists());
    let session = SessionTemp::new(space);
    let mut f1 = session.create().expect("create");
    let f2 = session.create().expect("create");
    assert_ne!(f1.path, f2.path);
    let recs = records(10, 10);
    let run = write_run(&mut f1, &recs).expect("write");
    assert_eq!(read_all(&f1, run).expect("read"), recs);
    let (p1, p2) = (f1.path.clone(), f2.path.clone());
    assert!(p1.exists() && p2.exists());
    drop((f1, f2));
    assert!(!p1.exists() && !p2.exists());
    std::fs::remove_dir_all(&dir).expect("cleanup");
}
