//! The stack a statement needs. The front end bounds how deep a statement can nest
//! (`depth.rs`); these say how much stack that depth takes to compile and run.

/// Stack a thread needs to run statements through a [`crate::Session`]: room for the deepest
/// expression the parser accepts (see `depth.rs`) through compilation and evaluation, with
/// about 2.5 times what the deepest shapes measured in a debug build (12 MiB). A statement
/// that starts with less stack than [`STATEMENT_STACK_NEEDED`] left runs on a stack of this
/// size allocated for it, so any thread may call a session; threads of this size never pay
/// for that. Only touched pages cost memory. `tests/hostile.rs` runs the deepest shapes.
pub const STATEMENT_STACK_BYTES: usize = 32 << 20;

/// The stack a statement must find left when it starts, else it gets a fresh one.
pub const STATEMENT_STACK_NEEDED: usize = 24 << 20;
