//! Procedural macros for whirl. Use them through the `whirl` crate.
