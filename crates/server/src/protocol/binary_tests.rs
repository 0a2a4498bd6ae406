//! Tests of the binary protocol: a model of what libmariadb sends, and the rows it reads back.

use super::*;
use proptest::prelude::*;

// ---- A model of what libmariadb sends ----

/// How a bound parameter travels in COM_STMT_EXECUTE.
#[derive(Clone)]
enum Data {
    /// Its value bytes.
    Bytes(Vec<u8>),
    /// NULL: a bit in the bitmap, no bytes.
    Null,
    /// Sent before with COM_STMT_SEND_LONG_DATA: no bit, no bytes.
    Long,
}

#[derive(Clone)]
struct Bind {
    ty: u8,
    unsigned: bool,
    data: Data,
}

fn bind(ty: u8, data: Vec<u8>) -> Bind {
    Bind {
        ty,
        unsigned: false,
        data: Data::Bytes(data),
    }
}

fn unsigned(ty: u8, data: Vec<u8>) -> Bind {
    Bind {
        unsigned: true,
        ..bind(ty, data)
    }
}

fn null(ty: u8) -> Bind {
    Bind {
        ty,
        unsigned: false,
        data: Data::Null,
    }
}

fn long(ty: u8) -> Bind {
    Bind {
        ty,
        unsigned: false,
        data: Data::Long,
    }
}

fn lenenc(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_lenenc_bytes(&mut out, b);
    out
}

/// A MYSQL_TIME for DATE/DATETIME/TIMESTAMP, with libmariadb's choice of length.
fn datetime(y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, us: u32) -> Vec<u8> {
    let len = if us != 0 {
        11
    } else if h != 0 || mi != 0 || s != 0 {
        7
    } else if y != 0 || mo != 0 || d != 0 {
        4
    } else {
        0
    };
    datetime_len(len, y, mo, d, h, mi, s, us)
}

#[allow(clippy::too_many_arguments)]
fn datetime_len(len: u8, y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, us: u32) -> Vec<u8> {
    let mut out = vec![len];
    if len >= 4 {
        out.extend_from_slice(&y.to_le_bytes());
        out.extend_from_slice(&[mo, d]);
    }
    if len >= 7 {
        out.extend_from_slice(&[h, mi, s]);
    }
    if len >= 11 {
        out.extend_from_slice(&us.to_le_bytes());
    }
    out
}

fn time(neg: bool, days: u32, h: u8, m: u8, s: u8, us: Option<u32>) -> Vec<u8> {
    let mut out = vec![if us.is_some() { 12 } else { 8 }, u8::from(neg)];
    out.extend_from_slice(&days.to_le_bytes());
    out.extend_from_slice(&[h, m, s]);
    if let Some(us) = us {
        out.extend_from_slice(&us.to_le_bytes());
    }
    out
}

/// The COM_STMT_EXECUTE payload (after the command byte) libmariadb sends.
fn execute_packet(stmt_id: u32, binds: &[Bind], send_types: bool) -> Vec<u8> {
    let mut p = stmt_id.to_le_bytes().to_vec();
    p.push(0); // CURSOR_TYPE_NO_CURSOR
    p.extend_from_slice(&1u32.to_le_bytes());
    if binds.is_empty() {
        return p;
    }
    let mut bitmap = vec![0u8; binds.len().div_ceil(8)];
    for (i, b) in binds.iter().enumerate() {
        if matches!(b.data, Data::Null) {
            bitmap[i / 8] |= 1 << (i % 8);
        }
    }
    p.extend_from_slice(&bitmap);
    p.push(u8::from(send_types));
    if send_types {
        for b in binds {
            p.push(b.ty);
            p.push(if b.unsigned { 0x80 } else { 0 });
        }
    }
    for b in binds {
        if let Data::Bytes(d) = &b.data {
            p.extend_from_slice(d);
        }
    }
    p
}

fn types_of(binds: &[Bind]) -> ParamTypes {
    binds.iter().map(|b| (b.ty, b.unsigned)).collect()
}

/// Values have no PartialEq (doubles, decimals at different scales); their Debug form is
/// exact enough here.
fn assert_values(got: &[Value], want: &[Value]) {
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
}

fn date(y: u16, m: u8, d: u8) -> Value {
    Value::Date(
        DateTime {
            year: y,
            month: m,
            day: d,
            ..DateTime::default()
        }
        .pack(),
    )
}

#[allow(clippy::too_many_arguments)]
fn dt(y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, us: u32) -> DateTime {
    DateTime {
        year: y,
        month: mo,
        day: d,
        hour: h,
        minute: mi,
        second: s,
        micro: us,
    }
}

fn dec(s: &str) -> Value {
    Value::Decimal(Decimal::parse(s).unwrap())
}

/// Every parameter type, with what it should decode to.
fn every_type() -> Vec<(Bind, Value)> {
    use ty::*;
    let long_text = "x".repeat(300);
    vec![
        (bind(TINY, vec![0xfb]), Value::Int(-5)),
        (unsigned(TINY, vec![250]), Value::Int(250)),
        (
            bind(SHORT, (-300i16).to_le_bytes().to_vec()),
            Value::Int(-300),
        ),
        (
            unsigned(SHORT, 65535u16.to_le_bytes().to_vec()),
            Value::Int(65535),
        ),
        (bind(YEAR, 2024u16.to_le_bytes().to_vec()), Value::Int(2024)),
        (
            bind(LONG, (-70000i32).to_le_bytes().to_vec()),
            Value::Int(-70000),
        ),
        (
            unsigned(LONG, 4_000_000_000u32.to_le_bytes().to_vec()),
            Value::Int(4_000_000_000),
        ),
        (
            bind(INT24, (-8_000_000i32).to_le_bytes().to_vec()),
            Value::Int(-8_000_000),
        ),
        (
            bind(LONGLONG, i64::MIN.to_le_bytes().to_vec()),
            Value::Int(i64::MIN),
        ),
        (bind(LONGLONG, 42i64.to_le_bytes().to_vec()), Value::Int(42)),
        (
            unsigned(LONGLONG, 7u64.to_le_bytes().to_vec()),
            Value::Int(7),
        ),
        (
            unsigned(LONGLONG, u64::MAX.to_le_bytes().to_vec()),
            Value::UInt(u64::MAX),
        ),
        (
            bind(FLOAT, 1.5f32.to_le_bytes().to_vec()),
            Value::Double(1.5),
        ),
        (
            bind(DOUBLE, (-2.25f64).to_le_bytes().to_vec()),
            Value::Double(-2.25),
        ),
        (bind(NEWDECIMAL, lenenc(b"123.450")), dec("123.450")),
        (bind(DECIMAL, lenenc(b"-0.5")), dec("-0.5")),
        (
            bind(VARCHAR, lenenc("héllo".as_bytes())),
            Value::Str("héllo".into()),
        ),
        (bind(VAR_STRING, lenenc(b"abc")), Value::Str("abc".into())),
        (
            bind(VAR_STRING, lenenc(&[0xff, 0xfe])),
            Value::Bytes(vec![0xff, 0xfe]),
        ),
        (
            bind(STRING, lenenc(long_text.as_bytes())),
            Value::Str(long_text),
        ),
        (bind(STRING, lenenc(b"")), Value::Str(String::new())),
        (bind(ENUM, lenenc(b"a")), Value::Str("a".into())),
        (bind(SET, lenenc(b"a,b")), Value::Str("a,b".into())),
        (bind(JSON, lenenc(b"{}")), Value::Str("{}".into())),
        (bind(TINY_BLOB, lenenc(b"t")), Value::Bytes(b"t".to_vec())),
        (bind(MEDIUM_BLOB, lenenc(b"m")), Value::Bytes(b"m".to_vec())),
        (bind(LONG_BLOB, lenenc(b"l")), Value::Bytes(b"l".to_vec())),
        (
            bind(BLOB, lenenc(&[0, 1, 0xff])),
            Value::Bytes(vec![0, 1, 0xff]),
        ),
        (bind(BIT, lenenc(&[5])), Value::Bytes(vec![5])),
        (bind(GEOMETRY, lenenc(b"g")), Value::Bytes(b"g".to_vec())),
        (
            bind(DATE, datetime(2024, 2, 29, 0, 0, 0, 0)),
            date(2024, 2, 29),
        ),
        (bind(DATE, datetime(0, 0, 0, 0, 0, 0, 0)), date(0, 0, 0)),
        // A time part sent with a DATE is dropped.
        (
            bind(DATE, datetime(2024, 1, 2, 3, 4, 5, 0)),
            date(2024, 1, 2),
        ),
        (
            bind(DATETIME, datetime(0, 0, 0, 0, 0, 0, 0)),
            Value::DateTime(0),
        ),
        (
            bind(DATETIME, datetime(2024, 1, 2, 0, 0, 0, 0)),
            Value::DateTime(dt(2024, 1, 2, 0, 0, 0, 0).pack()),
        ),
        (
            bind(DATETIME, datetime(2024, 1, 2, 3, 4, 5, 0)),
            Value::DateTime(dt(2024, 1, 2, 3, 4, 5, 0).pack()),
        ),
        (
            bind(DATETIME, datetime(9999, 12, 31, 23, 59, 59, 999_999)),
            Value::DateTime(dt(9999, 12, 31, 23, 59, 59, 999_999).pack()),
        ),
        (
            bind(TIMESTAMP, datetime(2038, 1, 19, 3, 14, 7, 1)),
            Value::DateTime(dt(2038, 1, 19, 3, 14, 7, 1).pack()),
        ),
        (bind(TIME, vec![0]), Value::Str("00:00:00".into())),
        (
            bind(TIME, time(false, 0, 12, 34, 56, None)),
            Value::Str("12:34:56".into()),
        ),
        (
            bind(TIME, time(true, 34, 22, 59, 59, Some(0))),
            Value::Str("-838:59:59.000000".into()),
        ),
        (
            bind(TIME, time(false, 1, 1, 2, 3, Some(500))),
            Value::Str("25:02:03.000500".into()),
        ),
        (bind(NULL, vec![]), Value::Null),
        (null(LONGLONG), Value::Null),
        (null(STRING), Value::Null),
        (null(DATETIME), Value::Null),
    ]
}

#[test]
fn every_parameter_type_round_trips() {
    let cases = every_type();
    // One at a time, then all in one statement.
    for (b, want) in &cases {
        let binds = std::slice::from_ref(b);
        let mut types = ParamTypes::new();
        let e = parse_execute(&execute_packet(9, binds, true), 1, &mut types, &[]).unwrap();
        assert_eq!(e.stmt_id, 9);
        assert_eq!(e.flags, 0);
        assert_values(&e.params, std::slice::from_ref(want));
        assert_eq!(types, types_of(binds));
    }
    let binds: Vec<Bind> = cases.iter().map(|(b, _)| b.clone()).collect();
    let want: Vec<Value> = cases.iter().map(|(_, v)| v.clone()).collect();
    let packet = execute_packet(7, &binds, true);
    assert_eq!(execute_stmt_id(&packet).unwrap(), 7);
    let mut types = ParamTypes::new();
    let e = parse_execute(&packet, binds.len(), &mut types, &[]).unwrap();
    assert_values(&e.params, &want);
    assert_eq!(types, types_of(&binds));
    // The same values again without types (what libmariadb sends from the second
    // execution on): the remembered ones apply.
    let again = execute_packet(7, &binds, false);
    let e = parse_execute(&again, binds.len(), &mut types, &[]).unwrap();
    assert_values(&e.params, &want);
    assert_eq!(types, types_of(&binds));
}

#[test]
fn types_are_remembered_and_rebound() {
    use ty::*;
    let first = [
        bind(LONGLONG, 5i64.to_le_bytes().to_vec()),
        bind(STRING, lenenc(b"a")),
    ];
    let mut types = ParamTypes::new();
    // No types ever bound: malformed.
    assert!(parse_execute(&execute_packet(1, &first, false), 2, &mut types, &[]).is_err());
    let e = parse_execute(&execute_packet(1, &first, true), 2, &mut types, &[]).unwrap();
    assert_values(&e.params, &[Value::Int(5), Value::Str("a".into())]);
    assert_eq!(types, vec![(LONGLONG, false), (STRING, false)]);
    // Second execution: values only, one of them NULL now.
    let second = [bind(LONGLONG, (-6i64).to_le_bytes().to_vec()), null(STRING)];
    let e = parse_execute(&execute_packet(1, &second, false), 2, &mut types, &[]).unwrap();
    assert_values(&e.params, &[Value::Int(-6), Value::Null]);
    // A later execution binds new types; they replace the old ones.
    let third = [
        bind(DOUBLE, 0.5f64.to_le_bytes().to_vec()),
        bind(BLOB, lenenc(b"b")),
    ];
    let e = parse_execute(&execute_packet(1, &third, true), 2, &mut types, &[]).unwrap();
    assert_values(
        &e.params,
        &[Value::Double(0.5), Value::Bytes(b"b".to_vec())],
    );
    assert_eq!(types, vec![(DOUBLE, false), (BLOB, false)]);
    let e = parse_execute(&execute_packet(1, &third, false), 2, &mut types, &[]).unwrap();
    assert_values(
        &e.params,
        &[Value::Double(0.5), Value::Bytes(b"b".to_vec())],
    );
    // A malformed packet that binds types leaves the remembered ones alone.
    let bad = execute_packet(1, &first, true);
    assert!(parse_execute(&bad[..bad.len() - 1], 2, &mut types, &[]).is_err());
    assert_eq!(types, vec![(DOUBLE, false), (BLOB, false)]);
    // Remembered types for another parameter count, or an unknown flag: malformed.
    assert!(parse_execute(&execute_packet(1, &first[..1], false), 1, &mut types, &[]).is_err());
    let mut flag2 = execute_packet(1, &third, false);
    flag2[10] = 2;
    assert!(parse_execute(&flag2, 2, &mut types, &[]).is_err());
    // No parameters: nothing after the iteration count is needed.
    let e = parse_execute(
        &execute_packet(3, &[], false),
        0,
        &mut ParamTypes::new(),
        &[],
    )
    .unwrap();
    assert_eq!(e.stmt_id, 3);
    assert!(e.params.is_empty());
}

#[test]
fn long_data_replaces_parameter_values() {
    use ty::*;
    let binds = [
        long(STRING),
        bind(LONGLONG, 1i64.to_le_bytes().to_vec()),
        long(BLOB),
        null(LONGLONG),
        long(VAR_STRING),
    ];
    let long_data = [
        Some("ünïcode".as_bytes().to_vec()),
        None,
        Some(b"text but blob".to_vec()),
        None,
        Some(vec![0xc3]),
    ];
    let mut types = ParamTypes::new();
    let e = parse_execute(&execute_packet(2, &binds, true), 5, &mut types, &long_data).unwrap();
    assert_values(
        &e.params,
        &[
            Value::Str("ünïcode".into()),
            Value::Int(1),
            Value::Bytes(b"text but blob".to_vec()),
            Value::Null,
            Value::Bytes(vec![0xc3]),
        ],
    );
    // A shorter long_data slice means no long data for the rest.
    let binds = [long(STRING), bind(LONGLONG, 9i64.to_le_bytes().to_vec())];
    let mut types = ParamTypes::new();
    let e = parse_execute(
        &execute_packet(2, &binds, true),
        2,
        &mut types,
        &long_data[..1],
    )
    .unwrap();
    assert_values(&e.params, &[Value::Str("ünïcode".into()), Value::Int(9)]);

    let mut p = 77u32.to_le_bytes().to_vec();
    p.extend_from_slice(&3u16.to_le_bytes());
    p.extend_from_slice(b"chunk");
    assert_eq!(parse_send_long_data(&p).unwrap(), (77, 3, &b"chunk"[..]));
    assert_eq!(parse_send_long_data(&p[..6]).unwrap(), (77, 3, &b""[..]));
    for cut in 0..6 {
        assert!(parse_send_long_data(&p[..cut]).is_err());
    }
}

#[test]
fn nonsense_values_are_malformed() {
    use ty::*;
    let bad = [
        bind(NEWDECIMAL, lenenc(b"abc")),
        bind(DECIMAL, lenenc(b"")),
        bind(NEWDECIMAL, lenenc(&[0xff])),
        bind(NEWDECIMAL, lenenc("9".repeat(60).as_bytes())),
        bind(DATE, datetime(2023, 2, 29, 0, 0, 0, 0)),
        bind(DATE, datetime(2024, 13, 1, 0, 0, 0, 0)),
        bind(DATETIME, datetime(2024, 4, 31, 0, 0, 0, 0)),
        bind(DATETIME, datetime(10000, 1, 1, 0, 0, 0, 0)),
        bind(DATETIME, datetime(2024, 1, 1, 24, 0, 0, 0)),
        bind(DATETIME, datetime(2024, 1, 1, 0, 60, 0, 0)),
        bind(TIMESTAMP, datetime(2024, 1, 1, 0, 0, 60, 0)),
        bind(TIMESTAMP, datetime(2024, 1, 1, 0, 0, 0, 1_000_000)),
        bind(DATETIME, datetime_len(5, 2024, 1, 1, 0, 0, 0, 0)),
        bind(TIME, time(false, 0, 24, 0, 0, None)),
        bind(TIME, time(false, 0, 0, 60, 0, None)),
        bind(TIME, time(false, 0, 0, 0, 0, Some(1_000_000))),
        bind(TIME, vec![4, 0, 0, 0, 0]),
        bind(0x42, vec![]),
        bind(0x11, vec![]),
        // A lenenc that starts with the NULL marker.
        bind(STRING, vec![0xfb]),
    ];
    for b in bad {
        let binds = [b];
        let mut types = ParamTypes::new();
        let r = parse_execute(&execute_packet(1, &binds, true), 1, &mut types, &[]);
        assert!(r.is_err(), "type {:#x}: {r:?}", binds[0].ty);
        assert!(types.is_empty());
    }
    // Partial zero dates are accepted, as DateTime::parse accepts them.
    let binds = [bind(DATE, datetime(2024, 0, 0, 0, 0, 0, 0))];
    let e = parse_execute(
        &execute_packet(1, &binds, true),
        1,
        &mut ParamTypes::new(),
        &[],
    )
    .unwrap();
    assert_values(&e.params, &[date(2024, 0, 0)]);
}

#[test]
fn every_truncation_is_an_error() {
    let cases = every_type();
    let mut binds: Vec<Bind> = cases.into_iter().map(|(b, _)| b).collect();
    // The packet must end with a value for every cut to miss something.
    binds.push(bind(ty::LONGLONG, 1i64.to_le_bytes().to_vec()));
    let n = binds.len();
    for send_types in [true, false] {
        let packet = execute_packet(5, &binds, send_types);
        let mut types = types_of(&binds);
        assert!(parse_execute(&packet, n, &mut types, &[]).is_ok());
        for cut in 0..packet.len() {
            let mut types = if send_types {
                ParamTypes::new()
            } else {
                types_of(&binds)
            };
            let r = parse_execute(&packet[..cut], n, &mut types, &[]);
            assert!(r.is_err(), "cut at {cut} of {}", packet.len());
            if cut < 4 {
                assert!(execute_stmt_id(&packet[..cut]).is_err());
            }
        }
    }
}

fn any_type() -> impl Strategy<Value = (u8, bool)> {
    (
        prop::sample::select(vec![
            0x00u8, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d,
            0x0f, 0x10, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff, 0x0e,
            0x11, 0x42,
        ]),
        any::<bool>(),
    )
}

proptest! {
    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        param_count in 0usize..12,
        remembered in prop::collection::vec(any::<(u8, bool)>(), 0..12),
        long_data in prop::collection::vec(prop::option::of(prop::collection::vec(any::<u8>(), 0..8)), 0..12),
    ) {
        let mut types = remembered;
        let _ = parse_execute(&bytes, param_count, &mut types, &long_data);
        let _ = execute_stmt_id(&bytes);
        let _ = parse_send_long_data(&bytes);
    }

    /// A well-formed head binding real types, then random value bytes: the value decoders
    /// see arbitrary input.
    #[test]
    fn random_values_never_panic(
        types in prop::collection::vec(any_type(), 1..10),
        bitmap_byte in any::<u8>(),
        tail in prop::collection::vec(any::<u8>(), 0..120),
    ) {
        let n = types.len();
        let mut p = vec![1, 0, 0, 0, 0, 1, 0, 0, 0];
        p.extend(std::iter::repeat_n(bitmap_byte, n.div_ceil(8)));
        p.push(1);
        for (t, u) in &types {
            p.push(*t);
            p.push(if *u { 0x80 } else { 0 });
        }
        p.extend_from_slice(&tail);
        let mut remembered = ParamTypes::new();
        if let Ok(e) = parse_execute(&p, n, &mut remembered, &[]) {
            prop_assert_eq!(e.params.len(), n);
            prop_assert_eq!(remembered.len(), n);
        }
    }
}

#[test]
fn prepare_ok_has_the_documented_layout() {
    assert_eq!(
        prepare_ok(0x0403_0201, 0x0605, 0x0807, 0x0a09),
        [0x00, 1, 2, 3, 4, 5, 6, 7, 8, 0x00, 9, 0x0a]
    );
    assert_eq!(prepare_ok(1, 0, 0, 0), [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}

// ---- A model of how libmariadb reads binary rows ----

#[derive(Debug, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    UInt(u64),
    F32(f32),
    F64(f64),
    Text(Vec<u8>),
    /// Length byte and fields of a DATE/DATETIME/TIMESTAMP.
    Temporal(u8, DateTime),
    /// Length byte, negative, days, h, m, s, micro.
    Time(u8, bool, u32, u8, u8, u8, u32),
}

fn col(wire_type: u8, flags: u16, decimals: u8) -> ColumnMeta {
    ColumnMeta {
        schema: String::new(),
        table: String::new(),
        org_table: String::new(),
        name: "c".into(),
        org_name: String::new(),
        charset: 63,
        length: 20,
        wire_type,
        flags,
        decimals,
    }
}

fn decode_row(p: &[u8], cols: &[ColumnMeta]) -> Vec<Cell> {
    let mut r = Reader::new(p, "row");
    assert_eq!(r.u8().unwrap(), 0x00);
    let bitmap = r.bytes((cols.len() + 9) / 8).unwrap().to_vec();
    let mut out = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        if bitmap[(i + 2) / 8] & (1 << ((i + 2) % 8)) != 0 {
            out.push(Cell::Null);
            continue;
        }
        let uns = c.flags & col_flags::UNSIGNED != 0;
        let cell = match c.wire_type {
            ty::TINY => {
                let b = r.u8().unwrap();
                if uns {
                    Cell::UInt(u64::from(b))
                } else {
                    Cell::Int(i64::from(b as i8))
                }
            }
            ty::SHORT | ty::YEAR => {
                let b = r.u16().unwrap();
                if uns {
                    Cell::UInt(u64::from(b))
                } else {
                    Cell::Int(i64::from(b as i16))
                }
            }
            ty::LONG | ty::INT24 => {
                let b = r.u32().unwrap();
                if uns {
                    Cell::UInt(u64::from(b))
                } else {
                    Cell::Int(i64::from(b as i32))
                }
            }
            ty::LONGLONG => {
                let b = read_u64(&mut r).unwrap();
                if uns {
                    Cell::UInt(b)
                } else {
                    Cell::Int(b as i64)
                }
            }
            ty::FLOAT => Cell::F32(f32::from_bits(r.u32().unwrap())),
            ty::DOUBLE => Cell::F64(f64::from_bits(read_u64(&mut r).unwrap())),
            ty::DATE | ty::DATETIME | ty::TIMESTAMP => {
                let len = r.u8().unwrap();
                let mut d = DateTime::default();
                if len >= 4 {
                    d.year = r.u16().unwrap();
                    d.month = r.u8().unwrap();
                    d.day = r.u8().unwrap();
                }
                if len >= 7 {
                    d.hour = r.u8().unwrap();
                    d.minute = r.u8().unwrap();
                    d.second = r.u8().unwrap();
                }
                if len >= 11 {
                    d.micro = r.u32().unwrap();
                }
                assert!(matches!(len, 0 | 4 | 7 | 11));
                Cell::Temporal(len, d)
            }
            ty::TIME => {
                let len = r.u8().unwrap();
                assert!(matches!(len, 0 | 8 | 12));
                if len == 0 {
                    Cell::Time(0, false, 0, 0, 0, 0, 0)
                } else {
                    let neg = r.u8().unwrap() == 1;
                    let days = r.u32().unwrap();
                    let (h, m, s) = (r.u8().unwrap(), r.u8().unwrap(), r.u8().unwrap());
                    let us = if len == 12 { r.u32().unwrap() } else { 0 };
                    Cell::Time(len, neg, days, h, m, s, us)
                }
            }
            _ => Cell::Text(r.lenenc_bytes().unwrap().to_vec()),
        };
        out.push(cell);
    }
    assert_eq!(r.remaining(), 0, "row has trailing bytes");
    out
}

#[test]
fn rows_encode_every_wire_type() {
    use ty::*;
    let u = col_flags::UNSIGNED;
    let d = |y, mo, da, h, mi, s, us| dt(y, mo, da, h, mi, s, us);
    let dtv = |x: DateTime| Value::DateTime(x.pack());
    let cases: Vec<(ColumnMeta, Value, Cell)> = vec![
        (col(TINY, 0, 0), Value::Int(-5), Cell::Int(-5)),
        (col(TINY, u, 0), Value::Int(200), Cell::UInt(200)),
        (col(TINY, 0, 0), Value::Int(1000), Cell::Int(127)),
        (col(TINY, 0, 0), Value::Int(-1000), Cell::Int(-128)),
        (col(TINY, u, 0), Value::Int(-3), Cell::UInt(0)),
        (col(SHORT, 0, 0), Value::Int(-300), Cell::Int(-300)),
        (col(SHORT, u, 0), Value::UInt(65535), Cell::UInt(65535)),
        (col(YEAR, u, 0), Value::Int(2024), Cell::UInt(2024)),
        (
            col(INT24, 0, 0),
            Value::Int(-8_000_000),
            Cell::Int(-8_000_000),
        ),
        (col(LONG, 0, 0), Value::Int(-70000), Cell::Int(-70000)),
        (
            col(LONG, u, 0),
            Value::Int(4_000_000_000),
            Cell::UInt(4_000_000_000),
        ),
        (
            col(LONGLONG, 0, 0),
            Value::Int(i64::MIN),
            Cell::Int(i64::MIN),
        ),
        (
            col(LONGLONG, u, 0),
            Value::UInt(u64::MAX),
            Cell::UInt(u64::MAX),
        ),
        (
            col(LONGLONG, 0, 0),
            Value::UInt(u64::MAX),
            Cell::Int(i64::MAX),
        ),
        (col(LONGLONG, 0, 0), Value::Str("12".into()), Cell::Int(12)),
        (
            col(LONGLONG, u, 0),
            Value::Str("18446744073709551615".into()),
            Cell::UInt(u64::MAX),
        ),
        (col(LONGLONG, 0, 0), Value::Double(2.5), Cell::Int(3)),
        (col(LONGLONG, 0, 0), dec("-7.5"), Cell::Int(-8)),
        (col(LONGLONG, u, 0), dec("7.5"), Cell::UInt(8)),
        (
            col(LONGLONG, u, 0),
            Value::Double(1e30),
            Cell::UInt(u64::MAX),
        ),
        (col(FLOAT, 0, 31), Value::Double(1.5), Cell::F32(1.5)),
        (col(FLOAT, 0, 31), Value::Int(3), Cell::F32(3.0)),
        (col(DOUBLE, 0, 31), Value::Double(-2.25), Cell::F64(-2.25)),
        (col(DOUBLE, 0, 31), Value::Str("3.5".into()), Cell::F64(3.5)),
        (col(DOUBLE, 0, 31), dec("0.125"), Cell::F64(0.125)),
        (
            col(NEWDECIMAL, 0, 2),
            dec("1.5"),
            Cell::Text(b"1.50".to_vec()),
        ),
        (
            col(NEWDECIMAL, 0, 2),
            Value::Int(3),
            Cell::Text(b"3.00".to_vec()),
        ),
        (
            col(NEWDECIMAL, 0, 2),
            Value::Str("-2.345".into()),
            Cell::Text(b"-2.35".to_vec()),
        ),
        (col(NEWDECIMAL, 0, 0), dec("2.5"), Cell::Text(b"3".to_vec())),
        (
            col(NEWDECIMAL, 0, 31),
            dec("2.5"),
            Cell::Text(b"2.5".to_vec()),
        ),
        (
            col(STRING, 0, 0),
            Value::Str("abc".into()),
            Cell::Text(b"abc".to_vec()),
        ),
        (
            col(VAR_STRING, 0, 0),
            Value::Int(42),
            Cell::Text(b"42".to_vec()),
        ),
        (
            col(VAR_STRING, 0, 0),
            Value::Double(0.5),
            Cell::Text(b"0.5".to_vec()),
        ),
        (
            col(VAR_STRING, 0, 0),
            date(2024, 1, 2),
            Cell::Text(b"2024-01-02".to_vec()),
        ),
        (
            col(BLOB, 0, 0),
            Value::Bytes(vec![0, 0xff]),
            Cell::Text(vec![0, 0xff]),
        ),
        (
            col(BLOB, 0, 0),
            Value::Str("y".repeat(300)),
            Cell::Text(b"y".repeat(300)),
        ),
        (
            col(DATE, 0, 0),
            date(2024, 2, 29),
            Cell::Temporal(4, d(2024, 2, 29, 0, 0, 0, 0)),
        ),
        (
            col(DATE, 0, 0),
            date(0, 0, 0),
            Cell::Temporal(0, DateTime::default()),
        ),
        (
            col(DATE, 0, 0),
            Value::Str("2024-01-02".into()),
            Cell::Temporal(4, d(2024, 1, 2, 0, 0, 0, 0)),
        ),
        (
            col(DATE, 0, 0),
            Value::Int(20240102),
            Cell::Temporal(4, d(2024, 1, 2, 0, 0, 0, 0)),
        ),
        (
            col(DATE, 0, 0),
            Value::Str("nope".into()),
            Cell::Temporal(0, DateTime::default()),
        ),
        (
            col(DATETIME, 0, 0),
            Value::DateTime(0),
            Cell::Temporal(0, DateTime::default()),
        ),
        (
            col(DATETIME, 0, 0),
            dtv(d(2024, 1, 2, 0, 0, 0, 0)),
            Cell::Temporal(4, d(2024, 1, 2, 0, 0, 0, 0)),
        ),
        (
            col(DATETIME, 0, 0),
            dtv(d(2024, 1, 2, 3, 4, 5, 0)),
            Cell::Temporal(7, d(2024, 1, 2, 3, 4, 5, 0)),
        ),
        (
            col(DATETIME, 0, 6),
            dtv(d(2024, 1, 2, 3, 4, 5, 6)),
            Cell::Temporal(11, d(2024, 1, 2, 3, 4, 5, 6)),
        ),
        (
            col(TIMESTAMP, 0, 0),
            Value::Str("2024-01-02 03:04:05".into()),
            Cell::Temporal(7, d(2024, 1, 2, 3, 4, 5, 0)),
        ),
        (
            col(TIMESTAMP, 0, 0),
            date(2024, 1, 2),
            Cell::Temporal(4, d(2024, 1, 2, 0, 0, 0, 0)),
        ),
        (
            col(DATETIME, 0, 0),
            Value::Int(20240102030405),
            Cell::Temporal(7, d(2024, 1, 2, 3, 4, 5, 0)),
        ),
        // Text and numbers read as the SQL layer reads dates (MariaDB's rules): a two-digit
        // year, a compact run, and 700100 (between 2069 and 1970: no date).
        (
            col(DATETIME, 0, 0),
            Value::Str("24-3-1 1:2:3".into()),
            Cell::Temporal(7, d(2024, 3, 1, 1, 2, 3, 0)),
        ),
        (
            col(DATE, 0, 0),
            Value::Str("240310".into()),
            Cell::Temporal(4, d(2024, 3, 10, 0, 0, 0, 0)),
        ),
        (
            col(DATETIME, 0, 0),
            Value::Int(700100),
            Cell::Temporal(0, d(0, 0, 0, 0, 0, 0, 0)),
        ),
        (
            col(TIME, 0, 0),
            Value::Str("-838:59:59".into()),
            Cell::Time(8, true, 34, 22, 59, 59, 0),
        ),
        (
            col(TIME, 0, 6),
            Value::Str("12:34:56.5".into()),
            Cell::Time(12, false, 0, 12, 34, 56, 500_000),
        ),
        (
            col(TIME, 0, 0),
            Value::Str("00:00:00".into()),
            Cell::Time(0, false, 0, 0, 0, 0, 0),
        ),
        (
            col(TIME, 0, 0),
            Value::Str("junk".into()),
            Cell::Time(0, false, 0, 0, 0, 0, 0),
        ),
        (col(NULL, 0, 0), Value::Int(1), Cell::Null),
        (col(LONGLONG, 0, 0), Value::Null, Cell::Null),
        (col(STRING, 0, 0), Value::Null, Cell::Null),
    ];
    // Each alone, then all in one row.
    for (c, v, want) in &cases {
        let mut out = Vec::new();
        write_row(&mut out, std::slice::from_ref(v), std::slice::from_ref(c));
        let got = decode_row(&out, std::slice::from_ref(c));
        assert_eq!(got.len(), 1);
        assert_eq!(
            &got[0], want,
            "{v:?} in a column of type {:#x}",
            c.wire_type
        );
    }
    let cols: Vec<ColumnMeta> = cases.iter().map(|(c, _, _)| c.clone()).collect();
    let row: Vec<Value> = cases.iter().map(|(_, v, _)| v.clone()).collect();
    let want: Vec<&Cell> = cases.iter().map(|(_, _, w)| w).collect();
    // write_row appends.
    let mut out = vec![0xaa];
    write_row(&mut out, &row, &cols);
    assert_eq!(out[0], 0xaa);
    let got = decode_row(&out[1..], &cols);
    assert_eq!(got.iter().collect::<Vec<_>>(), want);
}

#[test]
fn null_bitmap_starts_at_bit_two() {
    for n in [1usize, 7, 8, 9] {
        let cols = vec![col(ty::LONGLONG, 0, 0); n];
        let bitmap_len = (n + 7 + 2) / 8;
        // All NULL: bits 2..n+2, nothing after the bitmap.
        let mut out = Vec::new();
        write_row(&mut out, &vec![Value::Null; n], &cols);
        assert_eq!(out.len(), 1 + bitmap_len, "{n} columns");
        for bit in 0..bitmap_len * 8 {
            let set = out[1 + bit / 8] & (1 << (bit % 8)) != 0;
            assert_eq!(set, (2..n + 2).contains(&bit), "{n} columns, bit {bit}");
        }
        // Only the last one NULL.
        let mut row: Vec<Value> = (0..n as i64).map(Value::Int).collect();
        row[n - 1] = Value::Null;
        let mut out = Vec::new();
        write_row(&mut out, &row, &cols);
        assert_eq!(out.len(), 1 + bitmap_len + 8 * (n - 1));
        let bit = n - 1 + 2;
        let mut want = vec![0u8; bitmap_len];
        want[bit / 8] = 1 << (bit % 8);
        assert_eq!(&out[1..1 + bitmap_len], &want[..]);
        let got = decode_row(&out, &cols);
        assert_eq!(got[n - 1], Cell::Null);
        for (i, c) in got.iter().enumerate().take(n - 1) {
            assert_eq!(*c, Cell::Int(i as i64));
        }
    }
}

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::Int),
        any::<u64>().prop_map(Value::UInt),
        any::<f64>().prop_map(Value::Double),
        // Decimals hold at most 30 fraction digits (Decimal::parse, mul and div keep to it).
        (any::<i64>(), 0u8..=30).prop_map(|(m, s)| Value::Decimal(Decimal {
            mant: i128::from(m) * 1_000_000,
            scale: s
        })),
        ".{0,12}".prop_map(Value::Str),
        prop::collection::vec(any::<u8>(), 0..12).prop_map(Value::Bytes),
        any::<i64>().prop_map(Value::Date),
        any::<i64>().prop_map(Value::DateTime),
    ]
}

proptest! {
    /// Any value in any column type encodes to something the row model decodes.
    #[test]
    fn any_value_in_any_column_encodes(
        cells in prop::collection::vec((any_value(), any_type(), any::<bool>(), 0u8..40), 1..12),
    ) {
        let cols: Vec<ColumnMeta> = cells
            .iter()
            .map(|(_, (t, _), u, dec)| col(*t, if *u { col_flags::UNSIGNED } else { 0 }, *dec))
            .collect();
        let row: Vec<Value> = cells.iter().map(|(v, _, _, _)| v.clone()).collect();
        let mut out = Vec::new();
        write_row(&mut out, &row, &cols);
        let got = decode_row(&out, &cols);
        prop_assert_eq!(got.len(), cols.len());
    }
}
