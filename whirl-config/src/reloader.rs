//! Watching the file: a thread that re-reads the configuration every interval and, when its
//! text changed, parses it and applies it with [`Assembled::reload`].
//!
//! It compares the text, not the modification time, so two writes within one timestamp tick
//! are not missed; configuration files are small. A file that no longer parses changes
//! nothing: the error goes to the callback and the running application keeps the last good
//! parameters. The thread owns no runtime resource; dropping the [`Reloader`] (or
//! [`Reloader::stop`]) stops and joins it.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::assembly::{Assembled, Assembly, Reloaded};
use crate::error::ConfigError;

/// A thread applying a configuration file's changes to an [`Assembled`] application.
#[derive(Debug)]
pub struct Reloader {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Reloader {
    /// Watches `path` every `every` (a text equal to `initial`, the one the application was
    /// built from, is no change); calls `on_change` with the outcome of each reload, or the
    /// error when the file cannot be read or parsed.
    pub fn watch(
        assembled: Arc<Assembled>,
        path: impl Into<PathBuf>,
        initial: &Assembly,
        every: Duration,
        mut on_change: impl FnMut(Result<Reloaded, ConfigError>) + Send + 'static,
    ) -> std::io::Result<Reloader> {
        let path = path.into();
        let mut last = Some(initial.text().to_string());
        let origin = initial.origin().to_string();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("whirl-config-reload".into())
            .spawn(move || loop {
                match stopped.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
                let text = match std::fs::read_to_string(&path) {
                    Ok(text) => text,
                    Err(source) => {
                        if last.take().is_some() {
                            on_change(Err(ConfigError::Io {
                                path: path.clone(),
                                source,
                            }));
                        }
                        continue;
                    }
                };
                if last.as_deref() == Some(text.as_str()) {
                    continue;
                }
                last = Some(text.clone());
                on_change(Assembly::parse(&text, origin.clone()).map(|new| assembled.reload(&new)));
            })?;
        Ok(Reloader {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops watching and waits for the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Reloader {
    fn drop(&mut self) {
        self.shutdown();
    }
}
