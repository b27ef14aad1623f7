//! The marker that `#[whirl::allow_shared(reason = "...")]` leaves in a function or a static.
//!
//! Types cannot see a handler reach a `static` with interior mutability; `cargo whirl check`
//! can, by walking the code reachable from every handler. Where such sharing is intended, the
//! attribute puts one call to [`allow_shared`] at the top of the function's body (or of the
//! static's initialiser). The call does nothing and costs nothing; the validator finds it in
//! the compiled code, stops there (the function and what it calls, or every access to the
//! static, are allowed) and lists the reason in its summary.

/// Records, for `cargo whirl check`, that the enclosing function or static shares state on
/// purpose, and why. Does nothing at run time. Written by `#[whirl::allow_shared]`; not meant
/// to be called by hand.
#[doc(hidden)]
#[inline(always)]
pub const fn allow_shared(reason: &'static str) {
    let _ = reason;
}
