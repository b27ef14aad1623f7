//! Runnable whirl programs: see `src/bin/`.
