//! Decorators: a tool that is another tool under a different spec (renamed on import, gated by `confirm: true`).

use super::{CallContext, InputError, Prepared, Tool, ToolInput, ToolOutput, ToolSpec};
use async_trait::async_trait;
use std::sync::Arc;

/// A display rewrite a decorator applies to the inner tool's lines.
type DisplayMap = Arc<dyn Fn(String) -> String + Send + Sync>;

/// Another tool under a different [`ToolSpec`], with every method forwarded to it ([`display`](Tool::display),
/// [`prepare`](Tool::prepare) and [`call`](Tool::call)), so no wrapper can forget one: a wrapped tool's argv
/// mapping, its refusals before the gate and its prepared state all stay the inner tool's. Only the spec and,
/// optionally, the operator's line change.
///
/// ```
/// use fisk_ai::tool::{CallContext, Decorated, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
/// use fisk_ai::async_trait;
/// use serde_json::json;
/// use std::sync::Arc;
///
/// struct Purge(ToolSpec);
///
/// #[async_trait]
/// impl Tool for Purge {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
///         ToolOutput::success("purged")
///     }
/// }
///
/// let inner: Arc<dyn Tool> = Arc::new(Purge(ToolSpec::new("purge", ToolKind::Custom, json!({"type": "object"}))));
/// let gated = Decorated::new(inner.clone(), inner.spec().clone().with_confirm(true));
/// assert!(gated.spec().confirm_opt_in());
/// let shown = gated.prepare(&ToolInput::empty(), &json!({})).unwrap();
/// assert_eq!(shown.display(), inner.display(&ToolInput::empty()));
/// ```
pub struct Decorated {
    inner: Arc<dyn Tool>,
    spec: ToolSpec,
    display: Option<DisplayMap>,
}

impl std::fmt::Debug for Decorated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decorated").field("spec", &self.spec).field("inner", &self.inner.spec().name()).finish()
    }
}

impl Decorated {
    /// `inner` under `spec`.
    pub fn new(inner: Arc<dyn Tool>, spec: ToolSpec) -> Self {
        Decorated { inner, spec, display: None }
    }

    /// Rewrite the inner tool's operator line (and so its trace line) with `map`.
    #[must_use]
    pub fn with_display_map(mut self, map: impl Fn(String) -> String + Send + Sync + 'static) -> Self {
        self.display = Some(Arc::new(map));
        self
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &Arc<dyn Tool> {
        &self.inner
    }

    fn mapped(&self, line: String) -> String {
        match &self.display {
            Some(map) => map(line),
            None => line,
        }
    }
}

#[async_trait]
impl Tool for Decorated {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn display(&self, input: &ToolInput) -> String {
        self.mapped(self.inner.display(input))
    }

    fn prepare(&self, input: &ToolInput, arguments: &serde_json::Value) -> Result<Prepared, InputError> {
        let prepared = self.inner.prepare(input, arguments)?;
        let line = self.mapped(prepared.display().to_owned());
        Ok(prepared.with_display(line))
    }

    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        self.inner.call(input, ctx).await
    }
}
