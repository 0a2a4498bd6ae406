//! What a blocking operator holds, charged to its statement's memory budget
//! (`max_session_mem_used`, docs/design/issue20-sql-engine.md §4.4).
//!
//! A [`Reservation`] is one holder's share of the statement's charge: it grows as the holder
//! keeps rows, shrinks as it lets them go, and gives back whatever is left when it is dropped,
//! so that a sort that has sent its rows no longer counts against what the rest of the
//! statement may hold.

use crate::error::SqlError;
use crate::runtime::limits::Interrupt;

/// Bytes held by one operator, charged to its statement's [`Interrupt`].
#[derive(Debug)]
pub(crate) struct Reservation<'a> {
    /// `None`: an evaluation outside any statement (nothing is charged).
    intr: Option<&'a Interrupt>,
    held: u64,
}

impl<'a> Reservation<'a> {
    pub(crate) fn new(intr: Option<&'a Interrupt>) -> Reservation<'a> {
        Reservation { intr, held: 0 }
    }

    /// Charges `bytes` more; past the budget nothing is charged and the statement fails with
    /// MariaDB's error for `max_session_mem_used` (1290).
    pub(crate) fn grow(&mut self, bytes: u64) -> Result<(), SqlError> {
        if let Some(i) = self.intr {
            if !i.try_charge(bytes) {
                return Err(i.over_budget());
            }
        }
        self.held += bytes;
        Ok(())
    }

    /// Charges `bytes` more if they fit in the budget; `false` (nothing charged) past it, for
    /// a holder that can let go of something instead (a sort writes a run).
    pub(crate) fn try_grow(&mut self, bytes: u64) -> bool {
        if let Some(i) = self.intr {
            if !i.try_charge(bytes) {
                return false;
            }
        }
        self.held += bytes;
        true
    }

    /// Gives back `bytes` of what was charged (at most what is held).
    pub(crate) fn shrink(&mut self, bytes: u64) {
        let n = bytes.min(self.held);
        self.held -= n;
        if let Some(i) = self.intr {
            i.release(n);
        }
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> u64 {
        self.held
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let all = self.held;
        self.shrink(all);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_charges_its_statement_and_gives_everything_back() {
        let i = Interrupt::default();
        i.begin_statement(1000);
        i.charge(100).expect("fits");
        {
            let mut r = Reservation::new(Some(&i));
            r.grow(500).expect("fits");
            assert_eq!(i.used(), 600);
            // Past the budget: 1290, and the failed amount is not charged.
            assert_eq!(r.grow(401).unwrap_err().code(), 1290);
            assert_eq!((i.used(), r.held()), (600, 500));
            assert!(!r.try_grow(401), "past the budget");
            assert_eq!((i.used(), r.held()), (600, 500));
            r.grow(400).expect("exactly the budget fits");
            r.shrink(300);
            assert_eq!((i.used(), r.held()), (700, 600));
            // Shrinking more than is held gives back only what is held.
            let mut other = Reservation::new(Some(&i));
            other.grow(50).expect("fits");
            other.shrink(80);
            assert_eq!((i.used(), other.held()), (700, 0));
        }
        // Dropped: only the statement's own charge is left.
        assert_eq!(i.used(), 100);
        // Without a statement nothing is charged and nothing fails.
        let mut free = Reservation::new(None);
        free.grow(u64::MAX / 2).expect("no budget");
        free.shrink(1);
        assert_eq!(free.held(), u64::MAX / 2 - 1);
    }
}
