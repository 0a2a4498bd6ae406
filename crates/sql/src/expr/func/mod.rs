//! The scalar functions ([`Func`](crate::expr::Func)): `func` evaluates a call, the first ones
//! itself (`basic`) and the rest in `more`; `args` reads their arguments.

mod args;
mod basic;
mod more;

pub(crate) use self::basic::func;
