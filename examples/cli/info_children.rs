//! `info`'s "Children" section (ENV-4, SBX-1): the variable names every child gets (never their values) and the
//! confinement, with the paths it adds on its own.

use fisk_ai::exec::ChildEnv;
use serde_json::{Value, json};
use std::path::Path;

/// The section's rows.
pub(crate) fn rows(env: &ChildEnv, application: Option<&Path>) -> Vec<(&'static str, String)> {
    // Under `inherit: all` the list is the operator's whole environment: the text says what is left out instead
    // (the JSON lists every name, for scripts).
    let environment = if env.inherits_all() {
        let mut scrubbed: Vec<&str> = env.scrubbed().collect();
        scrubbed.sort_unstable();
        format!("inherited, without the credentials {}", scrubbed.join(", "))
    } else {
        env.variable_names().join(", ")
    };
    let mut rows = vec![("Environment", environment)];
    let Some(c) = env.confinement() else {
        rows.push(("Sandbox", "off".to_owned()));
        return rows;
    };
    let p = c.profile();
    let abi = match c.landlock_abi() {
        0 => "no Landlock".to_owned(),
        n => format!("Landlock ABI {n}"),
    };
    rows.push(("Sandbox", format!("{abi}, network {}", p.network_setting().as_str())));
    for (title, paths) in [("Readable", p.read_paths()), ("Writable", p.write_paths()), ("Executable", p.exec_paths())]
    {
        if !paths.is_empty() {
            rows.push((title, paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")));
        }
    }
    if let Some(app) = application {
        let added: Vec<String> =
            c.automatic(app).iter().map(|a| format!("{} ({}: {})", a.path.display(), a.grant, a.why)).collect();
        if !added.is_empty() {
            rows.push(("Added", added.join(", ")));
        }
    }
    let limits = limits(env);
    if !limits.is_empty() {
        rows.push(("Limits", limits.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")));
    }
    for u in c.unenforced() {
        rows.push(("Unenforced", format!("{} ({})", u.setting, u.why)));
    }
    rows
}

fn limits(env: &ChildEnv) -> Vec<(&'static str, String)> {
    let Some(c) = env.confinement() else { return Vec::new() };
    let l = c.profile().limit_settings();
    [
        ("memory", l.memory.map(|v| format!("{v} bytes"))),
        ("cpu", l.cpu.map(|v| format!("{v}s"))),
        ("files", l.files.map(|v| v.to_string())),
        ("processes", l.processes.map(|v| v.to_string())),
        ("file_size", l.file_size.map(|v| format!("{v} bytes"))),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect()
}

/// The section as JSON: `inherits_all` (whether children get this process's whole environment, `inherit: all`),
/// `environment` (every name a command tool gets, never a value), `scrubbed` (the credential names always removed)
/// and `sandbox` (null when off).
pub(crate) fn json(env: &ChildEnv, application: Option<&Path>) -> Value {
    let sandbox = env.confinement().map(|c| {
        let p = c.profile();
        let paths = |ps: &[std::path::PathBuf]| ps.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
        let automatic: Vec<Value> = application
            .map(|app| c.automatic(app))
            .unwrap_or_default()
            .iter()
            .map(|a| json!({"path": a.path, "grant": a.grant, "why": a.why}))
            .collect();
        json!({
            "landlock_abi": c.landlock_abi(),
            "network": p.network_setting().as_str(),
            "read": paths(p.read_paths()),
            "write": paths(p.write_paths()),
            "exec": paths(p.exec_paths()),
            "automatic": automatic,
            "limits": limits(env).into_iter().map(|(k, v)| (k.to_owned(), Value::String(v))).collect::<serde_json::Map<_, _>>(),
            "unenforced": c.unenforced().iter().map(|u| json!({"setting": u.setting, "why": u.why})).collect::<Vec<_>>(),
        })
    });
    let mut scrubbed: Vec<&str> = env.scrubbed().collect();
    scrubbed.sort_unstable();
    json!({
        "inherits_all": env.inherits_all(),
        "environment": env.variable_names(),
        "scrubbed": scrubbed,
        "sandbox": sandbox,
    })
}
