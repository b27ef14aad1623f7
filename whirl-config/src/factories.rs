//! Process factories: how a file names a Rust process type.
//!
//! Process types are Rust types, so the file cannot create them; the program registers, under
//! a name, a plain function from an argument type to the process
//! ([`Factories::process`]). A child `{ id = "cache", process = "cache", args = { ... } }`
//! then becomes [`ChildSpec::worker_with`]`(id, args, start)`: the arguments are deserialized
//! from the file into the factory's argument type (an error points at them), kept by the
//! supervisor as `Isolated` data, and every (re)start runs `start(args.clone())`, so no
//! incarnation shares state with the program or with another incarnation.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;
use whirl::supervision::ChildSpec;
use whirl::{Isolated, Process};

type Make = Box<dyn Fn(&str, toml::Value) -> Result<ChildSpec, String> + Send + Sync>;

/// The process types a configuration may name, each with its factory.
///
/// ```
/// use serde::Deserialize;
/// use whirl::prelude::*;
/// use whirl_config::Factories;
///
/// #[derive(Message)]
/// struct Get;
///
/// #[process]
/// struct Cache {
///     capacity: usize,
/// }
///
/// #[process]
/// impl Cache {
///     #[handle]
///     fn get(&mut self, _: Get) {}
/// }
///
/// #[derive(Clone, Deserialize, Isolated)]
/// struct CacheArgs {
///     capacity: usize,
/// }
///
/// let factories = Factories::new().process("cache", |args: CacheArgs| Cache {
///     capacity: args.capacity,
/// });
/// assert_eq!(factories.names().collect::<Vec<_>>(), ["cache"]);
/// ```
#[derive(Default)]
pub struct Factories {
    makers: BTreeMap<String, Make>,
}

impl Factories {
    /// No process types.
    pub fn new() -> Self {
        Factories::default()
    }

    /// Registers `name`: a child with `process = "name"` is started with
    /// `start(args)`, `args` deserialized from the child's `args` table (an empty table when
    /// absent). A later registration of the same name replaces the earlier one.
    ///
    /// `start` is a plain function pointer (a closure capturing nothing), as in
    /// [`ChildSpec::worker_with`]: whatever the process needs comes through `args`.
    pub fn process<A, P>(mut self, name: impl Into<String>, start: fn(A) -> P) -> Self
    where
        A: DeserializeOwned + Isolated + Clone,
        P: Process,
    {
        let make: Make = Box::new(move |id: &str, args: toml::Value| {
            let args: A = args
                .try_into()
                .map_err(|e: toml::de::Error| format!("arguments of `{id}`: {}", e.message()))?;
            Ok(ChildSpec::worker_with(id.to_string(), args, start))
        });
        self.makers.insert(name.into(), make);
        self
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.makers.keys().map(String::as_str)
    }

    pub(crate) fn make(
        &self,
        name: &str,
        id: &str,
        args: toml::Value,
    ) -> Option<Result<ChildSpec, String>> {
        self.makers.get(name).map(|make| make(id, args))
    }

    pub(crate) fn known(&self) -> String {
        let names: Vec<&str> = self.names().collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    }
}

impl fmt::Debug for Factories {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Factories")
            .field("names", &self.makers.keys().collect::<Vec<_>>())
            .finish()
    }
}
