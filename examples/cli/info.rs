//! `fisk info` (SPEC INFO-1..13): what a run would expose, offline and without credentials.

use clap::Args;
use comfy_table::{ContentArrangement, ContentLineStyle, LineStyle, Table, TableStyle};
use fisk_ai::builtin::{BuiltinEnv, BuiltinRegistry};
use fisk_ai::config::Mode;
use fisk_ai::exec::ChildEnv;
use fisk_ai::llm::{ProviderRegistry, TOOL_SEARCH_THRESHOLD};
use fisk_ai::memory::FileMemoryStore;
use fisk_ai::operator::NoOperator;
use fisk_ai::select::Toolset;
use fisk_ai::source::fisk::{FiskApp, GlobalFlag};
use fisk_ai::source::mcp::{McpImport, Reachability};
use fisk_ai::source::{LoadContext, SourcePolicy, ToolSource};
use fisk_ai::{Config, Selection, Warning};
use serde_json::{Value, json};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct InfoArgs {
    /// The agent configuration.
    #[arg(long, default_value = "agent.yaml")]
    config: PathBuf,
    /// Never render markdown or colour (also when NO_COLOR is set and non-empty).
    #[arg(long)]
    no_color: bool,
    /// Print the same facts as one JSON document, for scripts.
    #[arg(long)]
    json: bool,
}

/// Everything `info` reports, gathered once and then printed as text or JSON.
struct Report {
    config: Config,
    path: PathBuf,
    identity: String,
    toolset: Toolset,
    globals: Vec<GlobalFlag>,
    warnings: Vec<Warning>,
    /// Each `mcp_servers` entry and whether it could be reached (INFO-9, MCPI-11).
    servers: Vec<(String, String, Reachability)>,
    /// Each `remote_tools` host and whether it could be reached (INFO-9).
    hosts: Vec<crate::remote::HostReport>,
    /// Whether the JetStream memory and session stores could be bound (MEM-28).
    stores: crate::stores::StoreReach,
    /// Each imported tool's pin state (PIN-8).
    pins: crate::pins::PinSection,
    /// What every child gets: its variables and its confinement (ENV-4, SBX-1).
    children: ChildEnv,
}

pub(crate) async fn run(args: InfoArgs) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::load(&args.config)?;
    // INFO-1: lenient validation, so MCP-only configurations work.
    let mut warnings = config.validate(Mode::Lenient)?;
    config.check_supported()?;
    config.check_application()?;
    let identity = config.identity()?;
    // MCPI-4: the bearer variables stay out of introspection too; harness.env and harness.sandbox apply to it.
    let (children, child_warnings) = fisk_ai::harness::child_env(&config)?;
    warnings.extend(child_warnings);
    let (tools, globals) = match FiskApp::from_config(&config) {
        Some(app) => {
            let app = app.with_env(children.clone());
            let model = app.introspect().await?;
            let globals = app.describe_globals(&model)?;
            let loaded = app.tools_from_model(model)?;
            warnings.extend(loaded.warnings);
            (loaded.tools, globals)
        }
        None => (Vec::new(), Vec::new()),
    };
    let mut tools = tools;
    // INFO-3: imported tools after the local ones; the hosts first, as INFO-2 lists their section first.
    let hosts = crate::remote::hosts(&config, &identity, &mut tools, &mut warnings).await;
    let servers = imports(&config, &mut tools, &mut warnings).await;
    // PIN-8: read without pinning; what a run would not offer leaves the table.
    let pins = crate::pins::review(&config, &mut tools).await;
    // Built-ins are listed as a run would have them; nobody is asked anything by `info`.
    let env = BuiltinEnv::new(&config, Arc::new(NoOperator))?;
    let harness = &config.harness;
    if harness.human_in_the_loop.enabled {
        tools.extend(fisk_ai::operator::hitl_tools(Arc::new(NoOperator)));
    }
    if harness.memory.enabled {
        // Building the file store touches no disk; info only needs the tools' descriptions.
        let store = FileMemoryStore::from_config(&harness.memory.options, &identity, None, &env.working_dir);
        tools.extend(fisk_ai::memory::memory_tools(Arc::new(store)));
    }
    tools.extend(BuiltinRegistry::with_defaults().build_enabled(&config, &env)?);
    let toolset = Selection::from_config(&config)?.apply(tools)?;
    warnings.extend(toolset.warnings().iter().cloned());
    // Imported names and descriptions are whatever a server sent (GATE-8).
    for w in &warnings {
        eprintln!("warning: {}", fisk_ai::gate::sanitize(&w.to_string(), usize::MAX));
    }
    if let Err(e) = toolset.ensure_not_empty(config.application_path.is_some()) {
        eprintln!("warning: {e}");
    }
    let stores = crate::stores::probe(&config).await;
    let report = Report {
        config,
        path: args.config,
        identity,
        toolset,
        globals,
        warnings,
        servers,
        hosts,
        stores,
        pins,
        children,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        let no_color = args.no_color || std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let markdown = !no_color && std::io::stdout().is_terminal();
        print!("{}", report.to_text(markdown));
    }
    Ok(())
}

const DESCRIPTION_WIDTH: usize = 50;

/// The version of the `info --json` document's shape, so scripts can tell what they read. 2: `children.environment`
/// is a list under `inherit: all` too (it was null), and `children.inherits_all` is new.
const INFO_SCHEMA_VERSION: u32 = 2;
const XDG_DEFAULT: &str = "(XDG default)";

/// Rounded box drawing, as in the product brief.
pub(crate) const ROUNDED: TableStyle = TableStyle::new()
    .top_border(LineStyle::new('╭', '─', '┬', '╮'))
    .header_lines(ContentLineStyle::new('│', '│', '│'))
    .header_separator(LineStyle::new('├', '─', '┼', '┤'))
    .content_lines(ContentLineStyle::new('│', '│', '│'))
    .bottom_border(LineStyle::new('╰', '─', '┴', '╯'));

/// MCPI-11: lenient. Each `mcp_servers` entry is connected and listed like a run would (the same scrubbed child
/// environment); an unreachable one is reported, not fatal.
async fn imports(
    config: &Config,
    tools: &mut Vec<Arc<dyn fisk_ai::tool::Tool>>,
    warnings: &mut Vec<Warning>,
) -> Vec<(String, String, Reachability)> {
    // The same source and policy (the entry's include/exclude) a run's pipeline builds for each entry.
    let imports: Vec<Result<(McpImport, SourcePolicy), String>> = (config.mcp_servers.iter().enumerate())
        .map(|(i, e)| {
            let import = McpImport::from_entry(i, e, config.llm.budget.call_timeout())?;
            let key = format!("mcp_servers[{i}]");
            Ok((import, SourcePolicy::from_filters(&key, e.include.as_ref(), e.exclude.as_ref())?))
        })
        .map(|made: fisk_ai::Result<_>| made.map_err(|e| e.to_string()))
        .collect();
    let ctx = LoadContext::new(ChildEnv::new().with_scrubbed_all(config.bearer_token_envs()));
    let mut servers = Vec::new();
    for (entry, import) in config.mcp_servers.iter().zip(imports) {
        let reach = match import {
            Err(reason) => Reachability::Unreachable { reason },
            Ok((import, policy)) => match ToolSource::load(&import, &ctx.clone().with_policy(policy)).await {
                Ok(loaded) => {
                    let count = loaded.tools.len();
                    tools.extend(loaded.tools);
                    warnings.extend(loaded.warnings);
                    Reachability::Reachable { tools: count }
                }
                Err(e) => Reachability::Unreachable { reason: e.to_string() },
            },
        };
        servers.push((entry.name.clone(), entry.alias().to_owned(), reach));
    }
    servers
}

/// INFO-4: newlines as spaces, at most 50 characters then `...`; control and invisible characters escaped
/// (GATE-8), since an imported description is whatever its server sent.
fn short(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = fisk_ai::gate::sanitize(&flat, usize::MAX);
    if flat.chars().count() <= DESCRIPTION_WIDTH {
        flat
    } else {
        format!("{}...", flat.chars().take(DESCRIPTION_WIDTH).collect::<String>())
    }
}

/// The provider's tool search, as its factory declares it (PROV-4, SEARCH-2): no key is needed to ask.
fn tool_search(config: &Config) -> (String, bool) {
    let provider = &config.llm.provider;
    let registry = ProviderRegistry::with_defaults();
    let Some(factory) = registry.get(provider) else {
        return (format!("unknown (provider {provider} is not available)"), false);
    };
    // INFO-6 wording for server-side search (Anthropic); a provider without it gets the agent's own
    // (search_tools + call_tool), at the same threshold.
    match factory.capabilities().tool_search {
        _ if config.llm.no_tool_search => ("disabled (no_tool_search)".to_owned(), false),
        true => (format!("enabled (used at {TOOL_SEARCH_THRESHOLD} or more tools)"), true),
        false => {
            // The hybrid tier sends the tools' paths, descriptions and queries to the embeddings endpoint: say so.
            let hybrid = config
                .harness
                .knowledge
                .embeddings
                .as_ref()
                .filter(|e| e.tool_search)
                .and_then(|e| e.model.as_deref())
                .map(|model| format!(", fused with {model} embeddings"))
                .unwrap_or_default();
            (
                format!(
                    "enabled, client-side (used at {TOOL_SEARCH_THRESHOLD} or more tools: search_tools and \
                     call_tool){hybrid}"
                ),
                true,
            )
        }
    }
}

impl Report {
    fn model(&self) -> Option<Vec<(&'static str, String)>> {
        let llm = &self.config.llm;
        let model = llm.model.as_ref()?;
        Some(vec![
            ("Model", model.clone()),
            ("Provider", llm.provider.clone()),
            ("Thinking", if llm.thinking.enabled { "enabled" } else { "disabled" }.to_owned()),
            ("Tool search", tool_search(&self.config).0),
        ])
    }

    fn memory(&self) -> Option<Vec<(&'static str, String)>> {
        let mem = &self.config.harness.memory;
        if !mem.enabled {
            return None;
        }
        let mut rows = vec![("Backend", mem.backend.clone())];
        if mem.backend == "jetstream" {
            let o = &mem.options;
            rows.push(("Bucket", o.bucket.clone().unwrap_or_else(|| "(not set)".into())));
            rows.push(("Context", self.config.nats_context.clone().unwrap_or_else(|| "(default)".into())));
            rows.push((
                "Prefix",
                match o.prefix.as_deref() {
                    Some("") => "(none: keys are flat and shared with every agent using the bucket)".into(),
                    Some(p) => p.to_owned(),
                    None => self.identity.clone(),
                },
            ));
            rows.push(("Reachability", self.stores.memory.clone().unwrap_or_else(|| "not checked".into())));
        } else if mem.backend == "file" {
            let dir = mem.options.directory.clone().unwrap_or_else(|| PathBuf::from("memory").join(&self.identity));
            rows.push(("Directory", dir.display().to_string()));
        } else {
            // A host backend: its options as written, which its factory validates (harness issue, item 3).
            rows.push(("Options", host_options(&mem.backend_options)));
        }
        rows.push(("Limits", "64 KB per entry, 1024 entries".into()));
        Some(rows)
    }

    fn sessions(&self) -> Option<Vec<(&'static str, String)>> {
        self.config.llm.model.as_ref()?;
        let s = &self.config.harness.sessions;
        let mut rows = vec![("Backend", s.backend.clone())];
        if s.backend == "jetstream" {
            rows.push(("Stream", s.options.stream.clone().unwrap_or_else(|| "(not set)".into())));
            rows.push(("Context", self.config.nats_context.clone().unwrap_or_else(|| "(default)".into())));
            rows.push(("Prefix", "derived from the stream's subject at connect time".into()));
            rows.push(("Reachability", self.stores.sessions.clone().unwrap_or_else(|| "not checked".into())));
        } else if s.backend == "file" {
            let dir = s.options.directory.as_ref().map_or_else(|| XDG_DEFAULT.into(), |d| d.display().to_string());
            rows.push(("Directory", dir));
        } else {
            rows.push(("Options", host_options(&s.backend_options)));
        }
        Some(rows)
    }

    fn to_text(&self, markdown: bool) -> String {
        let mut out = String::new();
        let section = |out: &mut String, title: &str, rows: &[(&str, String)]| {
            out.push_str(&format!("{title}:\n\n"));
            let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            for (k, v) in rows {
                out.push_str(&format!("  {k:<width$}  {v}\n"));
            }
            out.push('\n');
        };
        if let Some(rows) = self.model() {
            section(&mut out, "Model", &rows);
        }
        if let Some(rows) = self.memory() {
            section(&mut out, "Memory", &rows);
        }
        if let Some(rows) = self.sessions() {
            section(&mut out, "Sessions", &rows);
        }
        let app = self.config.application_path.as_deref();
        section(&mut out, "Children", &crate::info_children::rows(&self.children, app));
        if !self.toolset.is_empty() {
            out.push_str(&self.tools_table());
            out.push('\n');
            let gated: Vec<String> = self
                .toolset
                .iter()
                .filter_map(|t| t.gate_trigger().map(|tag| format!("{} ({tag})", t.spec().name())))
                .collect();
            if !gated.is_empty() {
                out.push_str(&format!(
                    "\nA run asks the operator before calling {} tool(s): {}\n",
                    gated.len(),
                    gated.join(", ")
                ));
            }
            out.push('\n');
        }
        let hosts: Vec<String> = self.hosts.iter().map(crate::remote::HostReport::line).collect();
        if !hosts.is_empty() {
            out.push_str(&format!("Remote tool hosts:\n\n{}\n\n", hosts.join("\n")));
        }
        let servers: Vec<String> = (self.servers.iter())
            .map(|(name, alias, reach)| match reach {
                Reachability::Reachable { tools } => format!("  {name} (alias {alias}): reachable, {tools} tool(s)"),
                Reachability::Unreachable { reason } => {
                    format!("  {name} (alias {alias}): unreachable: {}", fisk_ai::gate::sanitize(reason, 400))
                }
                _ => format!("  {name} (alias {alias})"),
            })
            .collect();
        if !servers.is_empty() {
            out.push_str(&format!("MCP servers:\n\n{}\n\n", servers.join("\n")));
        }
        let pins = self.pins.text();
        if !pins.is_empty() {
            out.push_str(&format!("Pins:\n\n{pins}\n"));
        }
        if !self.globals.is_empty() {
            out.push_str("Global flags:\n\n");
            let width = self.globals.iter().map(|g| g.name.len() + 2).max().unwrap_or(0);
            for g in &self.globals {
                let mark = match (g.exposed, g.required) {
                    (true, true) => " [exposed, required]",
                    (true, false) => " [exposed]",
                    _ => "",
                };
                let name = format!("--{}", g.name);
                out.push_str(&format!("  {name:<width$}  {}{mark}\n", g.help));
            }
            out.push('\n');
        }
        match self.config.system_prompt.as_deref() {
            Some(prompt) => {
                out.push_str("Prompt:\n\n");
                if markdown {
                    out.push_str(&termimad::MadSkin::default().term_text(prompt).to_string());
                } else {
                    for line in prompt.lines() {
                        out.push_str(&format!("  {line}\n"));
                    }
                }
            }
            None => out.push_str("Prompt:\n\n  No system prompt is defined.\n"),
        }
        // INFO-2: the closing line.
        out.push_str(&format!(
            "\nServe these tools over MCP: {} mcp --config {}\n",
            crate::program(),
            self.path.display()
        ));
        out
    }

    fn tools_table(&self) -> String {
        let gating = self.toolset.gated_count() > 0;
        let mut table = Table::new();
        table.load_style(ROUNDED).set_content_arrangement(ContentArrangement::Disabled);
        let mut header = vec!["TOOL", "SOURCE"];
        if gating {
            header.push("CONFIRM");
        }
        header.extend(["DESCRIPTION", "TAGS"]);
        table.set_header(header);
        for t in &self.toolset {
            let spec = t.spec();
            let source = spec.origin().imported_from().unwrap_or_else(|| spec.origin().to_string());
            let mut row = vec![spec.name().to_owned(), source];
            if gating {
                row.push(if t.is_gated() { "Yes".into() } else { String::new() });
            }
            row.push(short(spec.plain_description()));
            row.push(spec.tags().to_string());
            table.add_row(row);
        }
        table.to_string()
    }

    fn to_json(&self) -> Value {
        // Display placeholders such as "(XDG default)" are null in JSON.
        let section = |rows: Option<Vec<(&str, String)>>| {
            rows.map(|rows| {
                Value::Object(
                    rows.into_iter()
                        .map(|(k, v)| {
                            let v = if v == XDG_DEFAULT { Value::Null } else { Value::String(v) };
                            (k.to_lowercase().replace(' ', "_"), v)
                        })
                        .collect(),
                )
            })
        };
        let llm = &self.config.llm;
        let model = llm.model.as_ref().map(|m| {
            json!({
                "model": m,
                "provider": llm.provider,
                "thinking": llm.thinking.enabled,
                "tool_search": tool_search(&self.config).0,
                "tool_search_enabled": tool_search(&self.config).1,
            })
        });
        let tools: Vec<Value> = self
            .toolset
            .iter()
            .map(|t| {
                let spec = t.spec();
                json!({
                    "name": spec.name(),
                    "source": spec.origin().imported_from().unwrap_or_else(|| spec.origin().to_string()),
                    "command": (!spec.command_path().is_empty()).then(|| spec.display_path()),
                    "description": spec.plain_description(),
                    "model_description": spec.description(),
                    "tags": spec.tags().as_slice(),
                    "gated": t.is_gated(),
                    "gate_tag": t.gate_trigger(),
                    "no_defer": spec.no_defer(),
                    "input_schema": spec.input_schema(),
                })
            })
            .collect();
        json!({
            // Bumped whenever a field changes meaning or goes away; adding a field keeps it.
            "schema_version": INFO_SCHEMA_VERSION,
            "config": self.path,
            "identity": self.identity,
            "application": self.config.application_path,
            "model": model,
            "memory": section(self.memory()),
            "sessions": section(self.sessions()),
            "tools": tools,
            "global_flags": self.globals.iter().map(|g| json!({
                "name": g.name, "help": g.help, "exposed": g.exposed, "required": g.required,
            })).collect::<Vec<_>>(),
            "prompt": self.config.system_prompt,
            "remote_tool_hosts": self.hosts.iter().map(crate::remote::HostReport::to_json).collect::<Vec<_>>(),
            "mcp_servers": self.servers.iter().map(|(name, alias, reach)| match reach {
                Reachability::Reachable { tools } => json!({"name": name, "alias": alias, "reachable": true, "tools": tools}),
                Reachability::Unreachable { reason } => json!({"name": name, "alias": alias, "reachable": false, "error": reason}),
                _ => json!({"name": name, "alias": alias}),
            }).collect::<Vec<_>>(),
            "pins": self.pins.json(),
            "children": crate::info_children::json(&self.children, self.config.application_path.as_deref()),
            "warnings": self.warnings.iter().map(|w| json!({"kind": w.kind(), "message": w.to_string()})).collect::<Vec<_>>(),
        })
    }
}

/// A host backend's options, one `key=value` per option in key order; `(none)` when there are none.
fn host_options(options: &serde_json::Map<String, serde_json::Value>) -> String {
    if options.is_empty() {
        return "(none)".to_owned();
    }
    let mut pairs: Vec<String> = options.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    fisk_ai::gate::sanitize(&pairs.join(", "), 400)
}
