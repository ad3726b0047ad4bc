//! One registry shape for every plug-in kind a configuration names: built-in tools (`harness.tools`), providers
//! (`llm.provider`), memory backends (`harness.memory.backend`) and session backends (`harness.sessions.backend`).
//! A host registers its own next to the crate's, and the configuration names either the same way.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A plug-in a configuration names. Implemented for each plug-in trait object this crate registers.
pub trait Named: Send + Sync {
    /// The name a configuration uses for it.
    fn registered_name(&self) -> &str;
}

/// Plug-ins of one kind by name, sorted; registering a name again replaces the plug-in.
///
/// ```
/// use fisk_ai::memory::{InMemoryStore, MemoryBackend, MemoryBackends, MemorySettings, MemoryStore};
/// use fisk_ai::async_trait;
/// use std::sync::Arc;
///
/// struct Scratch;
///
/// #[async_trait]
/// impl MemoryBackend for Scratch {
///     fn name(&self) -> &str {
///         "scratch"
///     }
///     async fn open(&self, _: &MemorySettings<'_>) -> fisk_ai::Result<Arc<dyn MemoryStore>> {
///         Ok(Arc::new(InMemoryStore::new()))
///     }
/// }
///
/// // MemoryBackends is a Registry<dyn MemoryBackend>.
/// let mut backends = MemoryBackends::with_defaults();
/// backends.register(Arc::new(Scratch));
/// assert_eq!(backends.names().collect::<Vec<_>>(), ["file", "jetstream", "scratch"]);
/// assert!(backends.get("scratch").is_some());
/// ```
pub struct Registry<T: ?Sized + Named> {
    items: BTreeMap<String, Arc<T>>,
}

impl<T: ?Sized + Named> Clone for Registry<T> {
    fn clone(&self) -> Self {
        Registry { items: self.items.clone() }
    }
}

impl<T: ?Sized + Named> fmt::Debug for Registry<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items.keys()).finish()
    }
}

impl<T: ?Sized + Named> Registry<T> {
    /// No plug-ins.
    pub fn empty() -> Self {
        Registry { items: BTreeMap::new() }
    }

    /// Add `item` under its name, replacing one of the same name.
    pub fn register(&mut self, item: Arc<T>) {
        self.items.insert(item.registered_name().to_owned(), item);
    }

    /// The plug-in registered as `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<T>> {
        self.items.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.items.keys().map(String::as_str)
    }

    /// Every registered plug-in, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<T>> {
        self.items.values()
    }

    /// The registered names joined for an error message: `a, b, c` (or `none`).
    pub(crate) fn listed(&self) -> String {
        if self.items.is_empty() { "none".to_owned() } else { self.names().collect::<Vec<_>>().join(", ") }
    }
}
