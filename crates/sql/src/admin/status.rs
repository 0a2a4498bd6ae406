//! SHOW STATUS's rows (also `information_schema.GLOBAL_STATUS`'s and `SESSION_STATUS`'s).

use std::sync::atomic::Ordering;

use crate::instance::session::Session;

/// SHOW STATUS: server counters and every pool/store/codec counter of the storage core.
pub(crate) fn status_rows(sess: &Session) -> Vec<(String, String)> {
    let inst = &sess.inst;
    let c = &inst.counters;
    let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed).to_string();
    let mut v: Vec<(String, String)> = vec![
        (
            "Uptime".into(),
            inst.started.elapsed().as_secs().to_string(),
        ),
        ("Questions".into(), ld(&c.questions)),
        ("Com_select".into(), ld(&c.com_select)),
        ("Com_insert".into(), ld(&c.com_insert)),
        ("Com_update".into(), ld(&c.com_update)),
        ("Com_delete".into(), ld(&c.com_delete)),
        ("Com_load".into(), ld(&c.com_load)),
        ("Com_commit".into(), ld(&c.com_commit)),
        ("Com_rollback".into(), ld(&c.com_rollback)),
        ("Connections".into(), ld(&c.connections)),
        ("Threads_connected".into(), ld(&c.threads_connected)),
        ("Prepared_stmt_count".into(), ld(&c.prepared_count)),
        (
            "Zipdb_transactions_rolled_back_on_conflict".into(),
            ld(&c.rolled_back_on_conflict),
        ),
    ];
    let st = inst.db.stats();
    // The storage core's counters, by their Debug field names (every one of them, so a new
    // counter shows up without touching this list). A nested struct's fields are named after
    // the field that holds it: `views: ViewStats { hits: 3 }` in the pool is
    // `Zipdb_pool_views_hits`.
    let mut push_debug = |prefix: &str, dbg: String| {
        let mut path = vec![prefix.to_string()];
        for part in dbg.split_inclusive([',', '{', '}']) {
            let body = part.trim_end_matches([',', '{', '}']);
            if let Some((k, val)) = body.split_once(':') {
                let k = k.trim();
                let val = val.trim();
                if part.ends_with('{') {
                    path.push(format!("{}_{k}", path.last().map_or("", String::as_str)));
                } else if !k.is_empty()
                    && val.chars().all(|ch| ch.is_ascii_digit() || ch == '.')
                    && !val.is_empty()
                {
                    let at = path.last().map_or(prefix, String::as_str);
                    v.push((format!("Zipdb_{at}_{k}"), val.to_string()));
                }
            }
            if part.ends_with('}') && path.len() > 1 {
                path.pop();
            }
        }
    };
    push_debug("pool", format!("{:?}", st.pool));
    push_debug("store", format!("{:?}", st.store));
    push_debug("wal", format!("{:?}", st.wal));
    push_debug("mvcc", format!("{:?}", st.mvcc));
    push_debug("locks", format!("{:?}", st.locks));
    // Record codec (FSST tables), summed over trees; per table in
    // information_schema.ZIPDB_TABLE_COMPRESSION.
    let mut rec = [0u64; 10];
    for r in st.trees.iter().filter_map(|t| t.records.as_ref()) {
        let each = [
            r.records_encoded,
            r.records_raw,
            r.bytes_in,
            r.bytes_out,
            r.records_decoded,
            r.decode_ns,
            r.encode_ns,
            r.retrains,
            r.retrains_skipped,
            r.leaves_reencoded,
        ];
        for (sum, x) in rec.iter_mut().zip(each) {
            *sum = sum.saturating_add(x);
        }
    }
    let names = [
        "Zipdb_records_encoded",
        "Zipdb_records_raw",
        "Zipdb_record_bytes_in",
        "Zipdb_record_bytes_out",
        "Zipdb_records_decoded",
        "Zipdb_record_decode_ns",
        "Zipdb_record_encode_ns",
        "Zipdb_record_retrains",
        "Zipdb_record_retrains_skipped",
        "Zipdb_record_leaves_reencoded",
    ];
    v.extend(
        names
            .iter()
            .zip(rec)
            .map(|(n, x)| (n.to_string(), x.to_string())),
    );
    v.push(("Zipdb_file_bytes".into(), st.file_bytes.to_string()));
    v.push(("Zipdb_free_bytes".into(), st.free_bytes.to_string()));
    v.push(("Zipdb_page_size".into(), st.page_size.to_string()));
    v
}
