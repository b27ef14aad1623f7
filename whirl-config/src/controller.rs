//! Controllers from the file: builds the library's concurrency controllers from a
//! [`ControllerSpec`], each behind a [`Swappable`] slot so a reloaded file can put a controller
//! with new parameters in its place while the group runs.
//!
//! The slot is a mutex the runtime's controller thread takes once per sampling period (never
//! on the message path); a reload replaces the controller inside it. The replacement starts
//! afresh (its learned state is that of a new controller). A replacement that would control
//! something else (threads → budget) is a structural change, refused by the caller.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use whirl::control::{
    AdaptiveConcurrency, Adjustment, ConcurrencyController, ControllerState, Controls,
    FixedConcurrency, GroupSample, SedaBatching, SedaThreadPool,
};

use crate::schema::{ControllerSpec, SedaBatchingSpec};

type Boxed = Box<dyn ConcurrencyController>;

/// A controller the configuration can replace while the group runs.
#[derive(Clone)]
pub(crate) struct Swappable {
    slot: Arc<Mutex<Boxed>>,
    controls: Controls,
}

impl Swappable {
    pub(crate) fn new(controller: Boxed) -> Self {
        Swappable {
            controls: controller.controls(),
            slot: Arc::new(Mutex::new(controller)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Boxed> {
        // A controller that panicked in `adjust` is removed by the runtime; the slot stays
        // usable for a replacement.
        self.slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Puts `controller` in the slot; `false` (and nothing changed) if it controls something
    /// else than the one it replaces.
    pub(crate) fn replace(&self, controller: Boxed) -> bool {
        if controller.controls() != self.controls {
            return false;
        }
        *self.lock() = controller;
        true
    }
}

impl ConcurrencyController for Swappable {
    fn controls(&self) -> Controls {
        self.controls
    }

    fn period(&self) -> Duration {
        self.lock().period()
    }

    fn adjust(&mut self, sample: &GroupSample) -> Adjustment {
        self.lock().adjust(sample)
    }

    fn describe(&self) -> ControllerState {
        self.lock().describe()
    }
}

fn check_fraction(name: &str, value: Option<f64>) -> Result<(), String> {
    match value {
        Some(v) if !(0.0..=1.0).contains(&v) => {
            Err(format!("expected `{name}` between 0 and 1, found {v}"))
        }
        _ => Ok(()),
    }
}

/// Builds SEDA's batching controller.
pub(crate) fn batching(spec: &SedaBatchingSpec) -> Result<Boxed, String> {
    check_fraction("step", spec.step)?;
    check_fraction("margin", spec.margin)?;
    check_fraction("sudden_drop", spec.sudden_drop)?;
    let mut c = SedaBatching::new();
    if let Some(p) = spec.period {
        c = c.period(p.0);
    }
    if let Some(w) = spec.window {
        c = c.window(w);
    }
    if let Some(s) = spec.step {
        c = c.step(s);
    }
    if let Some(m) = spec.margin {
        c = c.margin(m);
    }
    if let Some(d) = spec.sudden_drop {
        c = c.sudden_drop(d);
    }
    if let Some(b) = spec.min_budget {
        c = c.min_budget(b);
    }
    if let Some(b) = spec.max_budget {
        c = c.max_budget(b);
    }
    Ok(Box::new(c))
}

/// Builds `spec`; `Err` says which value is refused.
pub(crate) fn build(spec: &ControllerSpec) -> Result<Boxed, String> {
    Ok(match spec {
        ControllerSpec::Adaptive {
            period,
            idle_threshold,
            queue_latency_threshold,
            lock_latency_threshold,
            queue_length_threshold,
        } => {
            check_fraction("idle_threshold", *idle_threshold)?;
            let mut c = AdaptiveConcurrency::new();
            if let Some(p) = period {
                c = c.period(p.0);
            }
            if let Some(f) = idle_threshold {
                c = c.idle_threshold(*f);
            }
            if let Some(l) = queue_latency_threshold {
                c = c.queue_latency_threshold(l.0);
            }
            if let Some(l) = lock_latency_threshold {
                c = c.lock_latency_threshold(l.0);
            }
            if let Some(n) = queue_length_threshold {
                c = c.queue_length_threshold(*n);
            }
            Box::new(c)
        }
        ControllerSpec::Fixed { period } => {
            let mut c = FixedConcurrency::new();
            if let Some(p) = period {
                c = c.period(p.0);
            }
            Box::new(c)
        }
        ControllerSpec::SedaPool {
            period,
            queue_threshold,
            idle_timeout,
            margin,
            max_random_drop,
            smoothing,
            seed,
            thrashing_detection,
        } => {
            check_fraction("margin", *margin)?;
            check_fraction("smoothing", *smoothing)?;
            let mut c = SedaThreadPool::new();
            if let Some(p) = period {
                c = c.period(p.0);
            }
            if let Some(n) = queue_threshold {
                c = c.queue_threshold(*n);
            }
            if let Some(t) = idle_timeout {
                c = c.idle_timeout(t.0);
            }
            if let Some(m) = margin {
                c = c.margin(*m);
            }
            if let Some(n) = max_random_drop {
                c = c.max_random_drop(*n);
            }
            if let Some(w) = smoothing {
                c = c.smoothing(*w);
            }
            if let Some(s) = seed {
                c = c.seed(*s);
            }
            if let Some(on) = thrashing_detection {
                c = c.thrashing_detection(*on);
            }
            Box::new(c)
        }
        ControllerSpec::SedaBatching(spec) => batching(spec)?,
    })
}
