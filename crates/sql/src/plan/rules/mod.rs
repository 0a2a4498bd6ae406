//! Rewrites of compiled expressions and plans.

pub(crate) mod access_path;
pub(crate) mod zero_dates;
