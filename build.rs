//! Builds the confinement step (`src/sandbox/confine.c`, SBX-9): a small program without libc that a confined
//! child runs first, so confined children start with `posix_spawn` instead of a `fork` of the agent.
//!
//! Only for x86_64 and aarch64 Linux. Where it cannot be built (no C compiler), the crate still builds and confines
//! every child through the post-fork hook instead; the build says so in a warning, never silently.

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=src/sandbox/confine.c");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(fisk_confine)");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os != "linux" || !matches!(arch.as_str(), "x86_64" | "aarch64") {
        return;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return };
    let exe = out.join("fisk-ai-confine");
    // The C compiler the `cc` crate finds for this target (honouring `CC`, `CC_<target>` and cross setups), but
    // none of its default flags: this is a freestanding static executable, not an object for Rust to link.
    let compiler = match cc::Build::new().cargo_metadata(false).try_get_compiler() {
        Ok(c) => c,
        Err(e) => return fallback(&format!("no C compiler: {e}")),
    };
    let status = std::process::Command::new(compiler.path())
        .args(["-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-builtin"])
        .args(["-fno-asynchronous-unwind-tables", "-fno-pie", "-no-pie", "-Wall", "-Wextra", "-o"])
        .arg(&exe)
        .arg("src/sandbox/confine.c")
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo::rustc-cfg=fisk_confine"),
        Ok(s) => fallback(&format!("{} exited with {s}", compiler.path().display())),
        Err(e) => fallback(&format!("cannot run {}: {e}", compiler.path().display())),
    }
}

fn fallback(why: &str) {
    println!(
        "cargo::warning=fisk-ai: the confinement step was not built ({why}); confined children will be started \
         through a post-fork hook, which is slower"
    );
}
