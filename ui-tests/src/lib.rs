//! Compile-pass and compile-fail tests of whirl's macros live in `tests/`; see `README.md`.
