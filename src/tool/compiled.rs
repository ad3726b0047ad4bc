//! Lazily built input schemas and their compiled validators, kept only for the most recently checked tools.
//!
//! A large application's command tools build their input schema on first use, since most are never called. A
//! called tool used to keep its built schema and compiled validator for the life of the process, some 15 KiB a
//! tool, so a client calling one distinct tool after another grew a server of 10,000 tools by up to 150 MB. Lazy
//! schemas are now checked through one process-wide cache of the [`CAPACITY`] most recently used; a tool whose
//! schema was given up front keeps its validator, as before (hosts build those few and call them often).

use super::schema::{self, InputError};
use super::spec::MakeSchema;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// How many compiled schemas are kept: more than a session's working set of tools (a model calls a handful), and
/// at about 15 KiB each a bound of some 1 MiB.
pub(crate) const CAPACITY: usize = 64;

/// A compiled validator, or why the schema does not compile.
pub(crate) type Validator = Result<jsonschema::Validator, String>;

/// Compile `schema` (formats are not asserted, as everywhere else in this crate).
pub(crate) fn compile(schema: &Value) -> Validator {
    jsonschema::options().should_validate_formats(false).build(schema).map_err(|e| e.to_string())
}

/// Check `input` against tool `tool`'s `schema`, compiled as `validator`.
pub(crate) fn check(tool: &str, schema: &Value, validator: &Validator, input: &Value) -> Result<(), InputError> {
    match validator {
        Ok(v) => schema::check(schema, v, input),
        Err(e) => Err(InputError::new(None, format!("tool \"{tool}\" has an invalid input schema: {e}"))),
    }
}

/// One input schema and its validator.
pub(crate) struct Compiled {
    schema: Value,
    validator: Validator,
}

impl Compiled {
    fn new(schema: Value) -> Self {
        Compiled { validator: compile(&schema), schema }
    }

    /// The schema.
    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// Check `input` against the schema of tool `tool`.
    pub(crate) fn validate(&self, tool: &str, input: &Value) -> Result<(), InputError> {
        check(tool, &self.schema, &self.validator, input)
    }
}

/// Most recently used first. Each entry is keyed by its maker's allocation, which the `Weak` keeps from being
/// reused by another maker while the entry lives, so an address names one maker.
type Entries = VecDeque<(Weak<dyn MakeSchema>, Arc<Compiled>)>;

static RECENT: Mutex<Entries> = Mutex::new(VecDeque::new());

fn lock() -> std::sync::MutexGuard<'static, Entries> {
    RECENT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The address that keys `make`'s entry.
fn key(make: *const dyn MakeSchema) -> *const () {
    make.cast::<()>()
}

/// The compiled schema of `make`: from the cache, or built now and cached (evicting the least recently used).
pub(crate) fn lookup(make: &Arc<dyn MakeSchema>) -> Arc<Compiled> {
    let wanted = key(Arc::as_ptr(make));
    if let Some(found) = take(&mut lock(), wanted) {
        return found;
    }
    // Built without the lock: a schema and its validator take tens of microseconds, and other tools' checks
    // should not wait on them. Two threads may both build one; the second insert finds the first's.
    let built = Arc::new(Compiled::new(make.make()));
    let mut recent = lock();
    if let Some(found) = take(&mut recent, wanted) {
        return found;
    }
    // Entries of dropped tools (a reloaded source) go first, then the least recently used.
    recent.retain(|(maker, _)| maker.strong_count() > 0);
    recent.truncate(CAPACITY - 1);
    recent.push_front((Arc::downgrade(make), built.clone()));
    built
}

/// The entry keyed `wanted`, moved to the front.
fn take(recent: &mut Entries, wanted: *const ()) -> Option<Arc<Compiled>> {
    let i = recent.iter().position(|(maker, _)| key(maker.as_ptr()) == wanted)?;
    let entry = recent.remove(i)?;
    let found = entry.1.clone();
    recent.push_front(entry);
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A maker that counts its builds.
    struct Counting(AtomicUsize, Value);

    impl MakeSchema for Counting {
        fn make(&self) -> Value {
            self.0.fetch_add(1, Ordering::Relaxed);
            self.1.clone()
        }
    }

    fn maker(property: &str) -> (Arc<Counting>, Arc<dyn MakeSchema>) {
        let schema =
            json!({"type": "object", "properties": {property: {"type": "string"}}, "additionalProperties": false});
        let counting = Arc::new(Counting(AtomicUsize::new(0), schema));
        (counting.clone(), counting)
    }

    /// The cache is process-wide: these tests take turns, so one filling it cannot evict another's entry
    /// between two of its lookups (other tests insert only a few entries at a time).
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_cached(make: &Arc<dyn MakeSchema>) -> bool {
        let wanted = key(Arc::as_ptr(make));
        lock().iter().any(|(m, _)| key(m.as_ptr()) == wanted)
    }

    #[test]
    fn exec_3_a_lazy_schema_is_built_once_while_recent_and_checks_input() {
        let _turn = turn();
        let (count, make) = maker("target");
        let first = lookup(&make);
        assert!(first.validate("t", &json!({"target": "x"})).is_ok());
        let refused = first.validate("t", &json!({"other": 1})).expect_err("unknown property");
        assert!(refused.to_string().contains("other"), "{refused}");
        assert!(Arc::ptr_eq(&first, &lookup(&make)), "a recent tool's schema is reused");
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn mcp_25_compiled_schemas_are_bounded_and_the_least_recent_is_rebuilt() {
        let _turn = turn();
        let (count, first) = maker("first");
        lookup(&first);
        // Other tests share the cache: CAPACITY fresh tools push `first` out whatever they do meanwhile.
        let others: Vec<_> = (0..CAPACITY).map(|i| maker(&format!("p{i}")).1).collect();
        for m in &others {
            lookup(m);
        }
        assert!(lock().len() <= CAPACITY);
        assert!(!is_cached(&first), "the least recently used was evicted");
        lookup(&first);
        assert_eq!(count.0.load(Ordering::Relaxed), 2, "rebuilt when needed again");
    }

    #[test]
    fn mcp_25_a_dropped_tool_keeps_no_entry_past_the_next_insert() {
        let _turn = turn();
        let (_, gone) = maker("gone");
        lookup(&gone);
        let weak = Arc::downgrade(&gone);
        drop(gone);
        lookup(&maker("next").1);
        let address = key(weak.as_ptr());
        assert!(!lock().iter().any(|(m, _)| key(m.as_ptr()) == address));
    }
}
