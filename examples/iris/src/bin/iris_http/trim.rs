//! Giving freed memory back to the operating system after a burst of connections.
//!
//! A reconnect storm creates and drops hundreds of thousands of connections, sessions and
//! processes. Once they are gone, glibc's allocator keeps the freed memory in its per-thread
//! arenas for reuse, so the resident size stays at the storm's peak. The session store asks
//! for it back with `malloc_trim(0)` when a burst of new sessions has ended
//! ([`TrimAfterBursts`]): at most once per burst, never while one goes on, because trimming
//! walks every arena under its lock.

/// Sessions created since the last trim that make a burst worth trimming after.
pub const BURST_SESSIONS: u64 = 1024;

/// Decides when to trim: after at least [`BURST_SESSIONS`] sessions were created, at the first
/// look (one per sweep of the session table) that finds none created since the one before.
#[derive(Debug, Default, whirl::Isolated)]
pub struct TrimAfterBursts {
    since_trim: u64,
    since_look: u64,
}

impl TrimAfterBursts {
    /// A session was created.
    pub fn created(&mut self) {
        self.since_trim += 1;
        self.since_look += 1;
    }

    /// A periodic look: whether to trim now.
    pub fn look(&mut self) -> bool {
        let quiet = self.since_look == 0;
        self.since_look = 0;
        if quiet && self.since_trim >= BURST_SESSIONS {
            self.since_trim = 0;
            return true;
        }
        false
    }
}

/// Returns the allocator's free memory to the operating system, where the allocator can
/// (glibc); does nothing elsewhere.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` has no precondition: it takes each arena's lock itself and only
    // releases memory no allocation holds (I14).
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_once_after_a_burst_has_ended() {
        let mut trim = TrimAfterBursts::default();
        assert!(!trim.look(), "nothing happened");
        for _ in 0..BURST_SESSIONS {
            trim.created();
        }
        assert!(!trim.look(), "the burst may still be going on");
        trim.created();
        assert!(!trim.look(), "still going on");
        assert!(trim.look(), "quiet since the last look");
        assert!(!trim.look(), "once per burst");
    }

    #[test]
    fn a_trickle_of_sessions_never_trims() {
        let mut trim = TrimAfterBursts::default();
        for _ in 0..100 {
            trim.created();
            assert!(!trim.look());
        }
        assert!(!trim.look(), "100 sessions are no burst");
    }

    #[test]
    fn giving_memory_back_leaves_allocations_intact() {
        let kept: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 4096]).collect();
        drop((0..1024).map(|_| vec![0u8; 1024]).collect::<Vec<_>>());
        give_back_free_memory();
        for (i, v) in kept.iter().enumerate() {
            assert!(v.iter().all(|&b| b == i as u8));
        }
    }
}
