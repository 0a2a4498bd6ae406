//! Rewrites of compiled expressions and plans.

pub(crate) mod zero_dates;
