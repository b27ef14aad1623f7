//! The file's shape: the serde types a TOML assembly deserializes into, one per section.
//!
//! Every table denies unknown keys, so a misspelt key is an error at its line and column, not
//! a silently ignored setting. Names that refer to something (a group, a process type) are
//! kept [`Spanned`] so that the checks after parsing can point at them too. Enumerations of
//! kinds (predicates, controllers, schedulers) are externally tagged: the kind is the one key
//! of an inline table (`{ queue_length = { max = 100 } }`), which keeps every nested value's
//! position exact in errors.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSpec {
    /// `[runtime]`: the default group.
    #[serde(default)]
    pub runtime: RuntimeSpec,
    /// `[groups.NAME]`.
    #[serde(default)]
    pub groups: BTreeMap<String, Spanned<GroupSpec>>,
    /// `[supervisors.NAME]`: root supervisors.
    #[serde(default)]
    pub supervisors: BTreeMap<String, Spanned<SupervisorSpecToml>>,
}

/// `[runtime]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuntimeSpec {
    #[serde(default, deserialize_with = "at_least_one_thread")]
    pub threads: Option<usize>,
    #[serde(default, deserialize_with = "at_least_one_message")]
    pub budget: Option<usize>,
    pub slow_turn_threshold: Option<Dur>,
}

/// `[groups.NAME]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct GroupSpec {
    /// Threads of the group's own (a dedicated group).
    pub threads: Option<Spanned<Threads>>,
    /// On the shared workers: how many may run the group's turns at once.
    pub concurrency: Option<Spanned<Threads>>,
    /// On the shared workers: the group's weight.
    #[serde(default, deserialize_with = "at_least_one_share")]
    pub share: Option<u32>,
    #[serde(default, deserialize_with = "at_least_one_message")]
    pub budget: Option<usize>,
    pub slow_turn_threshold: Option<Dur>,
    pub lifo_slot: Option<bool>,
    pub scheduler: Option<Spanned<SchedulerSpec>>,
    pub predicate: Option<Spanned<PredicateSpec>>,
    pub controller: Option<Spanned<ControllerSpec>>,
    pub batching: Option<Spanned<SedaBatchingSpec>>,
    pub cpu_budget: Option<Spanned<CpuBudgetSpec>>,
}

/// `threads = N` of `[runtime]`: at least 1 (0 would silently mean 1).
fn at_least_one_thread<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    match usize::deserialize(d)? {
        0 => Err(de::Error::custom("expected at least 1 thread, found 0")),
        n => Ok(Some(n)),
    }
}

/// `share = N`: a weight of at least 1 (0 would silently mean 1).
fn at_least_one_share<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match u32::deserialize(d)? {
        0 => Err(de::Error::custom("expected a share of at least 1, found 0")),
        n => Ok(Some(n)),
    }
}

/// `budget = N`: at least 1 message per turn (0 would silently mean 1).
fn at_least_one_message<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    match usize::deserialize(d)? {
        0 => Err(de::Error::custom(
            "expected a budget of at least 1 message per turn, found 0",
        )),
        n => Ok(Some(n)),
    }
}

/// A group's threads: `4` or `{ min = 1, max = 4 }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Threads {
    pub min: usize,
    pub max: usize,
}

impl<'de> Deserialize<'de> for Threads {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Threads;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a thread count (`4`) or a range (`{ min = 1, max = 4 }`)")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Threads, E> {
                match usize::try_from(n) {
                    Ok(n) if n > 0 => Ok(Threads { min: n, max: n }),
                    _ => Err(E::custom(format!("expected at least 1 thread, found {n}"))),
                }
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Threads, E> {
                self.visit_i64(i64::try_from(n).unwrap_or(-1))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Threads, A::Error> {
                let (mut min, mut max) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => min = Some(map.next_value::<usize>()?),
                        "max" => max = Some(map.next_value::<usize>()?),
                        other => return Err(de::Error::unknown_field(other, &["min", "max"])),
                    }
                }
                let min = min.ok_or_else(|| de::Error::missing_field("min"))?;
                let max = max.ok_or_else(|| de::Error::missing_field("max"))?;
                if min == 0 || max < min {
                    return Err(de::Error::custom(format!(
                        "expected 1 <= min <= max, found min = {min}, max = {max}"
                    )));
                }
                Ok(Threads { min, max })
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A duration written with its unit: `"250ms"`, `"2s"`, `"1.5s"`, `"100us"`, `"1m"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_duration(&text).map(Dur).ok_or_else(|| {
            de::Error::custom(format!(
                "expected a duration with a unit (\"250ms\", \"2s\", \"100us\", \"1m\"), found {text:?}"
            ))
        })
    }
}

/// Parses `"250ms"`-style durations; `None` if malformed.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.trim().parse().ok()?;
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(value * scale).ok()
}

/// `scheduler = "fifo"` or `{ cohort = { batch = 8 } }`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum SchedulerSpec {
    /// The default work-stealing FIFO: no scheduler.
    FifoStealing,
    Fifo,
    Cohort {
        batch: Option<u32>,
    },
    Stride {
        #[serde(default)]
        tickets: Vec<(u16, u32)>,
        unassigned: Option<u16>,
    },
    PrincipalPriority {
        #[serde(default)]
        quota: Vec<(u8, u32)>,
        unassigned: Option<u8>,
        inheritance: Option<bool>,
    },
}

/// A predicate of the admission library, or a combination of them.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum PredicateSpec {
    QueueLength {
        max: u64,
    },
    PriorityThresholds {
        max: u64,
        #[serde(default)]
        at_least: Vec<(u8, u64)>,
    },
    CostBudget {
        budget: u64,
    },
    TokenBucket {
        rate: f64,
        depth: u64,
        #[serde(default)]
        charge_cost: bool,
    },
    ResponseTime {
        target: Dur,
    },
    UtilityPerCost {
        capacity: u64,
        lowest: f64,
        highest: f64,
    },
    SessionConsistent {
        hold: Dur,
        ceiling: Option<u64>,
        max_sessions: Option<usize>,
        inner: Box<PredicateSpec>,
    },
    /// `overload = { target = "50ms", inner = { ... } }`: `inner` sheds only while the
    /// group's 90th-percentile response time is over `target`; the first priority thresholds
    /// in `inner` are scaled to the target (AIMD).
    Overload {
        target: Dur,
        /// Completions per measurement window (SEDA's `nreq`, default 100).
        window: Option<usize>,
        /// How long the group must keep up before it is no longer overloaded (default 3 s).
        calm: Option<Dur>,
        inner: Box<PredicateSpec>,
    },
    All(Vec<PredicateSpec>),
    Any(Vec<PredicateSpec>),
    Not(Box<PredicateSpec>),
}

/// A concurrency controller of the library.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ControllerSpec {
    Adaptive {
        period: Option<Dur>,
        idle_threshold: Option<f64>,
        queue_latency_threshold: Option<Dur>,
        lock_latency_threshold: Option<Dur>,
        queue_length_threshold: Option<u64>,
    },
    Fixed {
        period: Option<Dur>,
    },
    SedaPool {
        period: Option<Dur>,
        queue_threshold: Option<u64>,
        idle_timeout: Option<Dur>,
        margin: Option<f64>,
        max_random_drop: Option<usize>,
        smoothing: Option<f64>,
        seed: Option<u64>,
        thrashing_detection: Option<bool>,
    },
    SedaBatching(SedaBatchingSpec),
}

/// SEDA's batching controller (`batching = { ... }`, or `controller = { seda_batching = ... }`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SedaBatchingSpec {
    pub period: Option<Dur>,
    pub window: Option<usize>,
    pub step: Option<f64>,
    pub margin: Option<f64>,
    pub sudden_drop: Option<f64>,
    pub min_budget: Option<usize>,
    pub max_budget: Option<usize>,
}

/// `cpu_budget = { share = 0.5, period = "100ms" }`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct CpuBudgetSpec {
    pub share: f64,
    pub period: Dur,
    pub cores: Option<usize>,
    pub virtual_ticks: Option<bool>,
}

/// `[supervisors.NAME]` or a child's `supervisor = { ... }`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SupervisorSpecToml {
    pub strategy: Option<StrategySpec>,
    pub intensity: Option<IntensitySpec>,
    /// The group the (root) supervisor runs in.
    pub group: Option<Spanned<String>>,
    /// The name a root supervisor is registered under.
    pub name: Option<String>,
    #[serde(default)]
    pub children: Vec<Spanned<ChildSpecToml>>,
}

/// OTP's strategies.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StrategySpec {
    OneForOne,
    OneForAll,
    RestForOne,
}

/// `intensity = { max_restarts = 3, period = "5s" }`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct IntensitySpec {
    pub max_restarts: u32,
    pub period: Dur,
}

/// OTP's restart types.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RestartSpec {
    Permanent,
    Transient,
    Temporary,
}

/// One child: a process made by a registered factory, or a nested supervisor.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChildSpecToml {
    pub id: String,
    /// The registered process type.
    pub process: Option<Spanned<String>>,
    /// The factory's arguments.
    pub args: Option<Spanned<toml::Value>>,
    /// A nested supervisor instead of a process.
    pub supervisor: Option<Box<SupervisorSpecToml>>,
    pub group: Option<Spanned<String>>,
    pub name: Option<String>,
    pub restart: Option<RestartSpec>,
    /// `"infinity"` or a duration.
    pub shutdown: Option<Spanned<String>>,
    pub significant: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("100us"), Some(Duration::from_micros(100)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("250"), None);
        assert_eq!(parse_duration("ms"), None);
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("3 weeks"), None);
    }
}
