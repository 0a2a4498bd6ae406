//! [`InlineKey`]: an owned key kept inside its container's entry when short.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

/// Bytes of a key kept inside the entry. Primary keys of integers (9 bytes) and index
/// entries of one or two integer columns plus the row's key fit.
pub(crate) const INLINE: usize = 30;

/// A key, kept inline when short: a search then compares bytes already in the entry it reads,
/// instead of following a pointer to each key (a cache miss per compare in a million-entry
/// write set), and storing one costs no allocation (one per row lock and per buffered write
/// otherwise). Equality, order and hash are those of its bytes, so maps of them are searched
/// with a `&[u8]`.
#[derive(Clone)]
pub(crate) enum InlineKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl InlineKey {
    pub(crate) fn new(k: &[u8]) -> InlineKey {
        if k.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..k.len()].copy_from_slice(k);
            InlineKey::Inline {
                len: k.len() as u8,
                bytes,
            }
        } else {
            InlineKey::Heap(k.into())
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            InlineKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            InlineKey::Heap(b) => b,
        }
    }
}

impl PartialEq for InlineKey {
    fn eq(&self, other: &InlineKey) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for InlineKey {}

impl PartialOrd for InlineKey {
    fn partial_cmp(&self, other: &InlineKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InlineKey {
    fn cmp(&self, other: &InlineKey) -> Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl Hash for InlineKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

// Same equality, order and hash as the bytes, as `Borrow` requires.
impl std::borrow::Borrow<[u8]> for InlineKey {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::fmt::Debug for InlineKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;

    #[test]
    fn inline_and_heap_keys_act_as_their_bytes() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![1, 2, 3],
            vec![7; INLINE],
            vec![7; INLINE + 1],
            vec![8; 200],
        ];
        let s = RandomState::new();
        for a in &keys {
            let ka = InlineKey::new(a);
            assert_eq!(ka.as_slice(), &a[..]);
            assert_eq!(s.hash_one(&ka), s.hash_one(&a[..]), "hash as the bytes");
            assert_eq!(matches!(ka, InlineKey::Heap(_)), a.len() > INLINE);
            for b in &keys {
                let kb = InlineKey::new(b);
                assert_eq!(ka.cmp(&kb), a.cmp(b));
                assert_eq!(ka == kb, a == b);
            }
        }
    }
}
