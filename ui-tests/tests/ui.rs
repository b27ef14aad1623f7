//! The compile-time isolation rules, as trybuild cases.
//!
//! `ui/pass/*.rs` must compile and run; `ui/fail/*.rs` must fail to compile with exactly the
//! message in the `.stderr` beside them. The snapshots belong to the pinned toolchain (see
//! `rust-toolchain.toml`); regenerate them with `TRYBUILD=overwrite` after a toolchain change
//! and review every diff: the `.stderr` files are the specification of the error messages.

#[test]
fn accepted() {
    trybuild::TestCases::new().pass("tests/ui/pass/*.rs");
}

#[test]
fn rejected() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
