//! Builds the confinement step (`src/sandbox/confine.c`, SBX-9): a small program without libc that a confined
//! child runs first, so confined children start with `posix_spawn` instead of a `fork` of the agent.
//!
//! Only for x86_64 and aarch64 Linux. Where it cannot be built (no C compiler), the crate still builds and confines
//! every child through the post-fork hook instead; the build says so in a warning, never silently.

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=src/sandbox/confine.c");
    println!("cargo::rerun-if-changed=build.rs");
    for var in ["CC", "CFLAGS", "TARGET_CC", "TARGET_CFLAGS"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rustc-check-cfg=cfg(fisk_confine)");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os != "linux" {
        return;
    }
    // The ELF machine the program must be built for.
    let machine = match arch.as_str() {
        "x86_64" => 62,
        "aarch64" => 183,
        other => return fallback(&format!("it is written for x86_64 and aarch64, not {other}")),
    };
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return };
    let exe = out.join("fisk-ai-confine");
    // The C compiler the `cc` crate finds for this target (honouring `CC`, `CC_<target>` and cross setups) with its
    // flags for the target (`--target`, `-m64`, ...), then ours: a freestanding static executable.
    let compiler = match cc::Build::new().cargo_metadata(false).try_get_compiler() {
        Ok(c) => c,
        Err(e) => return fallback(&format!("no C compiler: {e}")),
    };
    let status = std::process::Command::new(compiler.path())
        .args(compiler.args())
        .args(["-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-builtin"])
        .args(["-fno-asynchronous-unwind-tables", "-fno-pie", "-no-pie", "-Wall", "-Wextra", "-o"])
        .arg(&exe)
        .arg("src/sandbox/confine.c")
        .status();
    match status {
        Ok(s) if s.success() => match elf_machine(&exe) {
            Some(m) if m == machine => println!("cargo::rustc-cfg=fisk_confine"),
            m => fallback(&format!("the compiler made a program for ELF machine {m:?}, not {arch}'s {machine}")),
        },
        Ok(s) => fallback(&format!("{} exited with {s}", compiler.path().display())),
        Err(e) => fallback(&format!("cannot run {}: {e}", compiler.path().display())),
    }
}

/// `e_machine` of a little-endian ELF file (both targets are little-endian).
fn elf_machine(path: &std::path::Path) -> Option<u16> {
    let bytes = std::fs::read(path).ok()?;
    let machine = bytes.get(18..20)?;
    (bytes.get(..4)? == b"\x7fELF").then(|| u16::from_le_bytes([machine[0], machine[1]]))
}

fn fallback(why: &str) {
    println!(
        "cargo::warning=fisk-ai: the confinement step was not built ({why}); confined children will be started \
         through a post-fork hook, which is slower"
    );
}
