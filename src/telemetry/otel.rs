//! OTLP export of this crate's spans (feature `otel`; OTEL-1..4).
//!
//! One call, [`install`], sends every span and event of the [module docs](super) to an OpenTelemetry collector
//! over OTLP/HTTP with protobuf bodies, configured by the standard variables:
//!
//! | variable | effect |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the full URL spans are posted to, used as written |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the base URL; `/v1/traces` is appended (default `http://localhost:4318`) |
//! | `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` | `http/protobuf` or unset; anything else is refused |
//! | `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`, `..._TIMEOUT` | read by the exporter (`opentelemetry-otlp`) |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource (`service.name` and the rest) |
//! | `OTEL_BSP_*` | the batch processor's delay and queue sizes |
//!
//! Only HTTP/protobuf is built in: gRPC would add `tonic` and a second HTTP stack to every build with the feature.
//!
//! What is exported is this crate's telemetry (target `fisk_ai`, `INFO` and above) and nothing else, so rmcp's
//! `TRACE` events, which log whole MCP messages, never reach a collector through it. Content (prompts, arguments,
//! results) is exported only when a host turned it on with
//! [`AgentBuilder::trace_content`](crate::agent::AgentBuilder::trace_content), as for any subscriber.
//!
//! A host that has its own subscriber adds [`OtlpExport::layer`] to it instead of calling [`install`].
//!
//! With the feature on, the MCP server also continues a caller's W3C trace context (`traceparent` and
//! `tracestate` in a request's `_meta`, or as HTTP headers) and calls to imported MCP servers carry ours in
//! `_meta` (OTEL-5..7). Both need an OpenTelemetry layer in the subscriber; without one they do nothing.
//!
//! # Requirements
//!
//! - OTEL-1: one call exports the crate's spans over OTLP/HTTP (protobuf), configured by the standard variables.
//! - OTEL-2: an unusable setting is an [`ErrorKind::Telemetry`](crate::ErrorKind::Telemetry) naming the variable;
//!   nothing panics.
//! - OTEL-3: [`OtlpExport::shutdown`] (or dropping the export) exports what is queued.
//! - OTEL-4: only target `fisk_ai` at `INFO` and above is exported, with no content unless the host turned it on;
//!   counts are integer attributes.
//! - OTEL-5: a served MCP request continues the caller's trace from `_meta` (SEP-414 keys), else from a single
//!   `traceparent` header.
//! - OTEL-6: a malformed or oversize trace context is ignored (a malformed `_meta` falls back to the header); never
//!   an error.
//! - OTEL-7: a call to an imported MCP server carries the calling span's trace context in `_meta`.
//! - OTEL-8: the example CLI exports when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces variable) is set.

use crate::error::{Error, Result};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// The full URL of the traces endpoint, used as written.
pub const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The base URL of every signal; `/v1/traces` is appended.
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The base URL when neither endpoint variable is set (the specification's default for OTLP/HTTP).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
const PROTOCOL_VARS: [&str; 2] = ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"];
/// The instrumentation scope spans are reported under.
const SCOPE: &str = "fisk-ai";

/// A running OTLP export: the tracer provider with its batch processor. Dropping it flushes what is queued and
/// shuts the export down (errors ignored); [`shutdown`](OtlpExport::shutdown) does the same and reports them.
/// Either waits for that last export, at most the SDK's 5 s, so a program whose collector is down exits late by
/// that much, not forever.
///
/// ```no_run
/// # fn main() -> fisk_ai::Result<()> {
/// let export = fisk_ai::telemetry::otel::install()?;
/// // ... runs, MCP serving ...
/// export.shutdown()?; // or let it drop at the end of main
/// # Ok(()) }
/// ```
#[must_use = "dropping it shuts the export down"]
pub struct OtlpExport {
    provider: Option<SdkTracerProvider>,
    endpoint: String,
}

impl std::fmt::Debug for OtlpExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpExport").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

impl OtlpExport {
    /// An export to the endpoint the standard variables name (see the [module docs](self)), with the resource
    /// they describe. Nothing is installed: add [`layer`](Self::layer) to a subscriber.
    ///
    /// ```no_run
    /// # fn main() -> fisk_ai::Result<()> {
    /// let export = fisk_ai::telemetry::otel::OtlpExport::from_env()?;
    /// println!("spans go to {}", export.endpoint());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Telemetry`](crate::ErrorKind::Telemetry), naming the variable, when an endpoint variable is
    /// not an `http` or `https` URL with a host, or a protocol variable names anything but `http/protobuf`.
    pub fn from_env() -> Result<Self> {
        let endpoint = match (env_var(TRACES_ENDPOINT_VAR)?, env_var(ENDPOINT_VAR)?) {
            (Some(url), _) => checked_url(TRACES_ENDPOINT_VAR, &url)?,
            (None, Some(base)) => format!("{}/v1/traces", checked_url(ENDPOINT_VAR, &base)?.trim_end_matches('/')),
            (None, None) => format!("{DEFAULT_ENDPOINT}/v1/traces"),
        };
        Self::build(endpoint)
    }

    /// An export to `traces_url`, the full URL spans are posted to; the other variables are read as
    /// [`from_env`](Self::from_env) reads them.
    ///
    /// ```no_run
    /// # fn main() -> fisk_ai::Result<()> {
    /// let export = fisk_ai::telemetry::otel::OtlpExport::to_url("http://127.0.0.1:4318/v1/traces")?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Telemetry`](crate::ErrorKind::Telemetry) when `traces_url` is not an `http` or `https` URL with
    /// a host, or a protocol variable names anything but `http/protobuf`.
    pub fn to_url(traces_url: &str) -> Result<Self> {
        Self::build(checked_url("the OTLP traces URL", traces_url)?)
    }

    fn build(endpoint: String) -> Result<Self> {
        check_protocol()?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint.clone())
            .build()
            .map_err(|e| Error::telemetry(format!("the OTLP exporter for {endpoint} could not be built: {e}")))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().build())
            .build();
        Ok(OtlpExport { provider: Some(provider), endpoint })
    }

    /// The URL spans are posted to.
    ///
    /// ```no_run
    /// # fn main() -> fisk_ai::Result<()> {
    /// let export = fisk_ai::telemetry::otel::OtlpExport::to_url("http://127.0.0.1:4318/v1/traces")?;
    /// assert_eq!(export.endpoint(), "http://127.0.0.1:4318/v1/traces");
    /// # Ok(()) }
    /// ```
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `tracing` layer that exports this crate's spans and events through this export, filtered to target
    /// `fisk_ai` at `INFO` and above (see the [module docs](self) for why nothing else).
    ///
    /// ```no_run
    /// use tracing_subscriber::layer::SubscriberExt;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let export = fisk_ai::telemetry::otel::OtlpExport::from_env()?;
    /// let subscriber = tracing_subscriber::registry().with(export.layer());
    /// tracing::subscriber::set_global_default(subscriber)?;
    /// # Ok(()) }
    /// ```
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        // `provider` is only None inside shutdown/drop, which take the export by value or end it.
        let tracer = self.provider.as_ref().map(|p| p.tracer(SCOPE));
        let filter = Targets::new().with_target("fisk_ai", LevelFilter::INFO);
        tracer.map(|t| tracing_opentelemetry::layer().with_tracer(t).with_filter(filter))
    }

    /// Export what is queued now, without shutting down.
    ///
    /// ```no_run
    /// # fn main() -> fisk_ai::Result<()> {
    /// let export = fisk_ai::telemetry::otel::install()?;
    /// export.flush()?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Telemetry`](crate::ErrorKind::Telemetry) when the collector could not be reached or refused
    /// the spans.
    pub fn flush(&self) -> Result<()> {
        match &self.provider {
            Some(p) => p.force_flush().map_err(|e| self.failed("flushing", &e)),
            None => Ok(()),
        }
    }

    /// Export what is queued and stop. Spans that end later are dropped.
    ///
    /// ```no_run
    /// # fn main() -> fisk_ai::Result<()> {
    /// fisk_ai::telemetry::otel::install()?.shutdown()?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Telemetry`](crate::ErrorKind::Telemetry) when the last export failed or timed out.
    pub fn shutdown(mut self) -> Result<()> {
        match self.provider.take() {
            Some(p) => p.shutdown().map_err(|e| self.failed("shutting down", &e)),
            None => Ok(()),
        }
    }

    fn failed(&self, what: &str, e: &dyn std::fmt::Display) -> Error {
        Error::telemetry(format!("{what} the OTLP export to {} failed: {e}", self.endpoint))
    }
}

impl Drop for OtlpExport {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            // Nothing to report to from a drop; `shutdown` is the way to see the error.
            let _ = p.shutdown();
        }
    }
}

/// OTEL-1: export this crate's spans over OTLP/HTTP as the standard variables say, through a global subscriber
/// that has only the export layer. Keep the returned value alive for as long as spans should be exported.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> fisk_ai::Result<()> {
/// let _export = if fisk_ai::telemetry::otel::configured() {
///     Some(fisk_ai::telemetry::otel::install()?)
/// } else {
///     None
/// };
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// [`ErrorKind::Telemetry`](crate::ErrorKind::Telemetry) for a variable [`OtlpExport::from_env`] refuses, or when
/// a global subscriber is installed already (add [`OtlpExport::layer`] to that one instead).
pub fn install() -> Result<OtlpExport> {
    let export = OtlpExport::from_env()?;
    let subscriber = tracing_subscriber::registry().with(export.layer());
    tracing::subscriber::set_global_default(subscriber).map_err(|_| {
        Error::telemetry(
            "a global tracing subscriber is installed already; add OtlpExport::layer to it instead of calling install",
        )
    })?;
    Ok(export)
}

/// Whether an endpoint variable ([`ENDPOINT_VAR`] or [`TRACES_ENDPOINT_VAR`]) is set and not empty: the usual
/// test for turning export on, since [`install`] alone would export to [`DEFAULT_ENDPOINT`].
///
/// ```
/// if fisk_ai::telemetry::otel::configured() {
///     // install()
/// }
/// ```
pub fn configured() -> bool {
    [TRACES_ENDPOINT_VAR, ENDPOINT_VAR].iter().any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// A variable's value, `None` when unset or empty (the specification treats empty as unset).
fn env_var(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v.trim().to_owned())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::telemetry(format!("{name} is not valid UTF-8"))),
    }
}

/// `value` when it is an `http` or `https` URL with a host; else an error naming `what`. The value is quoted only
/// without its user-info, which may hold a password.
fn checked_url(what: &str, value: &str) -> Result<String> {
    let url = reqwest::Url::parse(value).map_err(|e| {
        let shown: String = if value.contains('@') { "(not shown: it has an @)".into() } else { quoted(value) };
        Error::telemetry(format!("{what} is not a URL ({e}): {shown}"))
    })?;
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::telemetry(format!(
            "{what} must be an http or https URL (OTLP is exported over HTTP/protobuf only), not {}",
            quoted(shown.as_str())
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Error::telemetry(format!("{what} has no host: {}", quoted(shown.as_str()))));
    }
    Ok(value.to_owned())
}

/// A value for an error message: quoted, and cut at 200 characters.
fn quoted(value: &str) -> String {
    let cut: String = value.chars().take(200).collect();
    format!("{cut:?}{}", if cut.len() < value.len() { " (cut)" } else { "" })
}

/// OTEL-2: only HTTP/protobuf is built in; a collector set up for gRPC or JSON would get requests it cannot read.
fn check_protocol() -> Result<()> {
    for var in PROTOCOL_VARS {
        if let Some(p) = env_var(var)? {
            if p != "http/protobuf" {
                return Err(Error::telemetry(format!(
                    "{var} is {}, but this build exports OTLP over http/protobuf only",
                    quoted(&p)
                )));
            }
            // The traces variable wins over the general one.
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otel_2_an_endpoint_that_is_not_http_is_refused_naming_what() {
        for (value, says) in [
            ("localhost:4318", "must be an http or https URL"),
            ("grpc://collector:4317", "must be an http or https URL"),
            ("not a url", "is not a URL"),
            ("http://", "not a URL"),
            ("https://user:hunter2@/v1/traces", "not shown"),
        ] {
            let e = checked_url(ENDPOINT_VAR, value).unwrap_err();
            assert!(e.is_telemetry(), "{e}");
            let text = e.to_string();
            assert!(text.contains(ENDPOINT_VAR) && text.contains(says), "{value}: {text}");
            assert!(!text.contains("hunter2"), "{text}");
        }
        assert_eq!(checked_url(ENDPOINT_VAR, "http://127.0.0.1:4318").unwrap(), "http://127.0.0.1:4318");
    }
}
