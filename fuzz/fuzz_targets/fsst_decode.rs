//! Loads an FSST symbol table from the front of the input and decodes the rest with it, as a
//! page decoder would decode a record with a table from the catalog. Loading must return a
//! table or an error, decoding the bytes or an error: never a panic, never a read or write out
//! of bounds. Whatever decodes must re-encode and decode back to itself, and a loaded table
//! must serialize back to the bytes it came from.
//!
//! The first byte picks how the table is made, so the fuzzer reaches the decoder often:
//! - even: the serialized form, with its CRC patched in (else nearly every input would stop at
//!   the checksum); the structural checks of `parse_prefix` still run;
//! - odd: symbol lengths and bytes straight from the input through `from_symbols`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipdb_storage::fsst::{max_decoded_len, DecodeError, SymbolTable};
use zipdb_storage::page::crc32c;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (table, codes) = if mode & 1 == 0 {
        let mut buf = rest.to_vec();
        if buf.len() >= 6 {
            let n = usize::from(buf[5]);
            let syms: usize = buf.iter().skip(6).take(n).map(|&l| usize::from(l)).sum();
            let end = (6 + n + syms).min(buf.len());
            let crc = crc32c(&buf[4..end]);
            buf[..4].copy_from_slice(&crc.to_le_bytes());
        }
        match SymbolTable::parse_prefix(&buf) {
            Ok((t, used)) => {
                assert_eq!(
                    t.to_bytes(),
                    &buf[..used],
                    "a loaded table re-serializes to its bytes"
                );
                (t, rest[used..].to_vec())
            }
            Err(_) => return,
        }
    } else {
        let Some((&n, mut at)) = rest.split_first() else {
            return;
        };
        let mut symbols = Vec::new();
        for _ in 0..n {
            let Some((&len, tail)) = at.split_first() else {
                return;
            };
            let len = usize::from(len % 10); // 0 and 9 are invalid lengths on purpose
            let Some(sym) = tail.get(..len) else { return };
            symbols.push(sym);
            at = &tail[len..];
        }
        match SymbolTable::from_symbols(&symbols) {
            Ok(t) => (t, at.to_vec()),
            Err(_) => return,
        }
    };
    assert!(table.validate().is_ok());
    assert_eq!(
        SymbolTable::from_bytes(&table.to_bytes()).as_ref(),
        Ok(&table)
    );

    let mut out = Vec::new();
    let result = table.decode(&codes, &mut out);
    // The exact-slice decoder agrees, whatever the destination size.
    let mut big = vec![0u8; max_decoded_len(codes.len())];
    assert_eq!(table.decode_into(&codes, &mut big), result);
    match result {
        Ok(n) => {
            assert_eq!(n, out.len());
            assert!(n <= max_decoded_len(codes.len()));
            assert_eq!(&big[..n], &out[..]);
            let mut exact = vec![0u8; n];
            assert_eq!(table.decode_into(&codes, &mut exact), Ok(n));
            if n > 0 {
                assert!(matches!(
                    table.decode_into(&codes, &mut exact[..n - 1]),
                    Err(DecodeError::OutputFull { .. })
                ));
            }
            let mut again = Vec::new();
            table.encode(&out, &mut again);
            let mut back = Vec::new();
            assert_eq!(table.decode(&again, &mut back), Ok(out.len()));
            assert_eq!(back, out);
        }
        Err(_) => assert!(out.is_empty()),
    }
});
