//! The `read_file` built-in (BUILTIN-1..13) and DESIGN §6 invariant 7: `read_file` never leaves its root.
//!
//! Every fixture puts a secret file OUTSIDE the root (`outside/secret.txt`, holding `TOP-SECRET`); every escape
//! attempt must be refused AND no output may ever contain the secret. The tests run as whatever user runs the
//! suite (often root in CI), so nothing here relies on file permissions: confinement alone must hold.

mod common;

use fisk_ai::Config;
use fisk_ai::builtin::{BuiltinEnv, BuiltinRegistry};
use fisk_ai::operator::NoOperator;
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolOutput};
use serde_json::{Value, json};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const SECRET: &str = "TOP-SECRET";

/// `base/root/` (the root) and `base/outside/secret.txt` (the secret), plus a few files inside the root.
struct Fixture {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::write(root.join("hello.txt"), "hello\n").unwrap();
        std::fs::write(root.join("a/b/deep.txt"), "deep\n").unwrap();
        Fixture { _tmp: tmp, base, root }
    }

    /// A symlink at `root/<at>` pointing to `target`.
    fn link(&self, target: impl AsRef<Path>, at: &str) {
        symlink(target, self.root.join(at)).unwrap();
    }

    fn tool(&self) -> Arc<dyn Tool> {
        tool_for(&self.root, "")
    }
}

/// Quote a path for a YAML flow value (a JSON string is a valid YAML double-quoted scalar).
fn quoted(path: &Path) -> String {
    Value::String(path.to_str().unwrap().to_owned()).to_string()
}

fn config(yaml: &str) -> fisk_ai::Result<Arc<dyn Tool>> {
    let config = Config::from_yaml_str(yaml)?;
    let env = BuiltinEnv::new(&config, Arc::new(NoOperator))?;
    let mut tools = BuiltinRegistry::with_defaults().build_enabled(&config, &env)?;
    assert_eq!(tools.len(), 1);
    Ok(tools.remove(0))
}

/// A `read_file` tool over `root`; `extra` is more flow-map options such as `, max_bytes: 16`.
fn tool_for(root: &Path, extra: &str) -> Arc<dyn Tool> {
    config(&format!("harness:\n  tools:\n    - name: read_file\n      options: {{root: {}{extra}}}\n", quoted(root)))
        .unwrap()
}

fn build_err(yaml: &str) -> fisk_ai::Error {
    match config(yaml) {
        Ok(_) => panic!("expected a configuration error for:\n{yaml}"),
        Err(e) => e,
    }
}

async fn read(tool: &Arc<dyn Tool>, path: &str) -> ToolOutput {
    tool.call(&ToolInput::from_value(&json!({ "path": path })), &CallContext::new()).await
}

/// The read succeeded: returns the result object, after checking it never carries the secret.
fn ok(out: &ToolOutput) -> Value {
    assert!(!out.content().contains(SECRET), "secret leaked: {}", out.content());
    assert!(!out.is_error(), "expected success, got: {}", out.content());
    serde_json::from_str(out.content()).unwrap()
}

/// The read was refused, the text names the requested path and contains `reason`, and the secret never shows.
fn refused(out: &ToolOutput, path: &str, reason: &str) {
    assert!(!out.content().contains(SECRET), "secret leaked for {path:?}: {}", out.content());
    assert!(out.is_error(), "expected {path:?} to be refused, got: {}", out.content());
    let named = format!("read_file {}: ", Value::String(path.to_owned()));
    assert!(out.content().starts_with(&named), "{path:?}: the error must name the path: {}", out.content());
    assert!(out.content().contains(reason), "{path:?}: expected {reason:?} in: {}", out.content());
}

// ---- invariant 7 / BUILTIN-8: lexical confinement -----------------------------------------------------------

#[tokio::test]
async fn invariant_7_dotdot_in_every_position_never_escapes() {
    let fx = Fixture::new();
    let tool = fx.tool();
    for path in [
        "..",
        "../",
        "../outside/secret.txt",
        "/../outside/secret.txt",
        "//../outside/secret.txt",
        "./..",
        "./../outside/secret.txt",
        ".././../outside/secret.txt",
        "a/../../outside/secret.txt",
        "a/./../../outside/secret.txt",
        "a/b/../../../outside/secret.txt",
        "a/b/../../..",
        "a/b/../../../",
        "a/b/../../../root/hello.txt",
        "../root/hello.txt",
        "hello.txt/../../outside/secret.txt",
        "missing/../../outside/secret.txt",
    ] {
        refused(&read(&tool, path).await, path, "leaves the root");
    }
}

#[tokio::test]
async fn invariant_7_dotdot_lookalikes_are_literal_names_inside_the_root() {
    let fx = Fixture::new();
    let tool = fx.tool();
    // Nothing by these names exists inside the root, so they are simply not found.
    for path in
        ["....//outside/secret.txt", "%2e%2e/outside/secret.txt", "..%2f..%2foutside/secret.txt", "...", ".. /x"]
    {
        refused(&read(&tool, path).await, path, "not found");
    }
    // And when they exist, they are ordinary names: the file inside the root is what gets read.
    for dir in ["....", "%2e%2e", "..."] {
        std::fs::create_dir(fx.root.join(dir)).unwrap();
        std::fs::write(fx.root.join(dir).join("x.txt"), format!("inside {dir}")).unwrap();
        let path = format!("{dir}/x.txt");
        let v = ok(&read(&tool, &path).await);
        assert_eq!(v["content"], format!("inside {dir}"));
        assert_eq!(v["path"], path);
    }
}

#[tokio::test]
async fn builtin_8_leading_slashes_are_ignored_and_lookups_stay_inside_the_root() {
    let fx = Fixture::new();
    let tool = fx.tool();
    // An absolute path names a file inside the root: /etc/passwd is root/etc/passwd, which does not exist.
    for path in ["/etc/passwd", "//etc/passwd", "///etc//passwd"] {
        let out = read(&tool, path).await;
        refused(&out, path, "not found");
        assert!(!out.content().contains("root:x:0"), "{}", out.content());
    }
    std::fs::create_dir(fx.root.join("etc")).unwrap();
    std::fs::write(fx.root.join("etc/passwd"), "the root's own passwd").unwrap();
    for path in ["/etc/passwd", "//etc/passwd", "etc/passwd", "./etc/./passwd"] {
        let v = ok(&read(&tool, path).await);
        assert_eq!(v["content"], "the root's own passwd");
        assert_eq!(v["path"], "etc/passwd");
    }
    let v = ok(&read(&tool, "/hello.txt").await);
    assert_eq!(v["path"], "hello.txt");
}

// ---- BUILTIN-9: symlinks ---------------------------------------------------------------------------------------

#[tokio::test]
async fn builtin_9_relative_symlink_inside_the_root_is_followed() {
    let fx = Fixture::new();
    fx.link("hello.txt", "link.txt");
    fx.link("../hello.txt", "a/up.txt");
    fx.link("./b/../b/deep.txt", "a/down.txt");
    let tool = fx.tool();
    let v = ok(&read(&tool, "link.txt").await);
    assert_eq!(v, json!({"path": "link.txt", "size": 6, "content": "hello\n"}));
    assert_eq!(ok(&read(&tool, "a/up.txt").await)["content"], "hello\n");
    assert_eq!(ok(&read(&tool, "a/down.txt").await)["content"], "deep\n");
}

#[tokio::test]
async fn invariant_7_relative_symlink_pointing_outside_is_refused() {
    let fx = Fixture::new();
    fx.link("../outside/secret.txt", "leak.txt");
    fx.link("../../outside/secret.txt", "a/leak.txt");
    fx.link("../../../../../../../../outside/secret.txt", "a/b/leak.txt");
    // Out of the root and back in is still out (the target climbs above the root).
    fx.link("../root/hello.txt", "sneaky.txt");
    fx.link("..", "parent");
    let tool = fx.tool();
    for path in ["leak.txt", "a/leak.txt", "a/b/leak.txt", "sneaky.txt", "parent/outside/secret.txt", "parent"] {
        refused(&read(&tool, path).await, path, "points outside the root");
    }
}

#[tokio::test]
async fn invariant_7_absolute_symlink_is_refused_even_when_it_points_inside() {
    let fx = Fixture::new();
    fx.link(fx.root.join("hello.txt"), "abs_inside.txt");
    fx.link(fx.base.join("outside/secret.txt"), "abs_secret.txt");
    fx.link(fx.base.join("outside"), "abs_dir");
    fx.link("/dev/null", "devnull");
    fx.link("/", "slash");
    let tool = fx.tool();
    for path in ["abs_inside.txt", "abs_secret.txt", "abs_dir/secret.txt", "devnull", "slash/etc/passwd"] {
        refused(&read(&tool, path).await, path, "absolute target");
    }
}

#[tokio::test]
async fn builtin_9_chains_of_relative_symlinks_inside_are_followed() {
    let fx = Fixture::new();
    fx.link("c2", "c1");
    fx.link("a/c3", "c2");
    fx.link("b/c4", "a/c3");
    fx.link("deep.txt", "a/b/c4");
    let tool = fx.tool();
    let v = ok(&read(&tool, "c1").await);
    assert_eq!(v, json!({"path": "c1", "size": 5, "content": "deep\n"}));
}

#[tokio::test]
async fn invariant_7_symlink_chain_that_eventually_leaves_is_refused() {
    let fx = Fixture::new();
    fx.link("a/e2", "e1");
    fx.link("b/e3", "a/e2");
    fx.link("../../e4", "a/b/e3");
    fx.link("../outside/secret.txt", "e4");
    // A chain whose last hop is absolute.
    fx.link("f2", "f1");
    fx.link(fx.base.join("outside/secret.txt"), "f2");
    let tool = fx.tool();
    // The refusal names the hop that fails, by its physical path inside the root.
    refused(&read(&tool, "e1").await, "e1", "the symlink e4 points outside the root");
    refused(&read(&tool, "f1").await, "f1", "the symlink f2 has an absolute target");
    refused(&read(&tool, "a/b/e3").await, "a/b/e3", "the symlink e4 points outside the root");
}

#[tokio::test]
async fn builtin_9_symlink_loops_are_refused_without_hanging() {
    let fx = Fixture::new();
    fx.link("loop_b", "loop_a");
    fx.link("loop_a", "loop_b");
    fx.link("self", "self");
    fx.link("x/y", "x");
    let tool = fx.tool();
    for path in ["loop_a", "loop_b", "self", "self/z", "x"] {
        let out = tokio::time::timeout(Duration::from_secs(10), read(&tool, path)).await.expect("a loop must not hang");
        refused(&out, path, "more than 40 symlinks");
    }
}

#[tokio::test]
async fn builtin_9_at_most_40_symlinks_are_followed_per_call() {
    let fx = Fixture::new();
    fx.link(".", "here");
    let tool = fx.tool();
    let forty = format!("{}hello.txt", "here/".repeat(40));
    assert_eq!(ok(&read(&tool, &forty).await)["content"], "hello\n");
    let forty_one = format!("{}hello.txt", "here/".repeat(41));
    refused(&read(&tool, &forty_one).await, &forty_one, "more than 40 symlinks");
}

#[tokio::test]
async fn builtin_9_symlink_to_a_directory_inside_works_as_an_intermediate_component() {
    let fx = Fixture::new();
    fx.link("a/b", "docs");
    fx.link("a/b/", "docs_slash");
    fx.link("../../a", "a/b/back");
    fx.link("../outside", "out");
    fx.link(fx.root.join("a"), "abs_a");
    let tool = fx.tool();
    let v = ok(&read(&tool, "docs/deep.txt").await);
    assert_eq!(v, json!({"path": "docs/deep.txt", "size": 5, "content": "deep\n"}));
    assert_eq!(ok(&read(&tool, "docs_slash/deep.txt").await)["content"], "deep\n");
    assert_eq!(ok(&read(&tool, "docs/back/b/deep.txt").await)["content"], "deep\n");
    // `docs/..` is lexical: it is the root, whatever docs points to (BUILTIN-8).
    assert_eq!(ok(&read(&tool, "docs/../hello.txt").await)["path"], "hello.txt");
    refused(&read(&tool, "out/secret.txt").await, "out/secret.txt", "points outside the root");
    refused(&read(&tool, "abs_a/b/deep.txt").await, "abs_a/b/deep.txt", "absolute target");
    // A link to a directory as the final component is a directory.
    refused(&read(&tool, "docs").await, "docs", "directory");
}

#[tokio::test]
async fn builtin_6_symlinked_root_confines_reads_to_where_it_points() {
    let fx = Fixture::new();
    let root_link = fx.base.join("root_link");
    symlink(&fx.root, &root_link).unwrap();
    let tool = tool_for(&root_link, "");
    assert_eq!(ok(&read(&tool, "hello.txt").await)["content"], "hello\n");
    assert_eq!(ok(&read(&tool, "a/b/deep.txt").await)["content"], "deep\n");
    refused(&read(&tool, "../outside/secret.txt").await, "../outside/secret.txt", "leaves the root");
    // A relative root link is fine too.
    let rel_link = fx.base.join("rel_root");
    symlink("root", &rel_link).unwrap();
    let tool = tool_for(&rel_link, "");
    assert_eq!(ok(&read(&tool, "/hello.txt").await)["content"], "hello\n");
}

#[tokio::test]
async fn invariant_7_hard_link_inside_the_root_is_read_because_it_is_the_same_inode() {
    // A hard link is not a path that leads outside: it IS a name inside the root for the same inode. Whoever made
    // the link put the file inside the root, so read_file reads it, by design.
    let fx = Fixture::new();
    std::fs::write(fx.base.join("outside/shared.txt"), "SHARED-INODE").unwrap();
    std::fs::hard_link(fx.base.join("outside/shared.txt"), fx.root.join("hard.txt")).unwrap();
    let tool = fx.tool();
    let v = ok(&read(&tool, "hard.txt").await);
    assert_eq!(v, json!({"path": "hard.txt", "size": 12, "content": "SHARED-INODE"}));
    // The outside name of the same inode is still unreachable.
    refused(&read(&tool, "../outside/shared.txt").await, "../outside/shared.txt", "leaves the root");
}

// ---- BUILTIN-10: only regular files -------------------------------------------------------------------------

#[tokio::test]
async fn builtin_10_fifo_is_refused_promptly_and_never_blocks() {
    let fx = Fixture::new();
    nix::unistd::mkfifo(&fx.root.join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    fx.link("pipe", "pipe_link");
    let tool = fx.tool();
    for path in ["pipe", "pipe_link"] {
        let out =
            tokio::time::timeout(Duration::from_secs(10), read(&tool, path)).await.expect("a FIFO must not block");
        refused(&out, path, "is a FIFO, not a regular file");
    }
    // A FIFO used as a directory: opening it to descend must not wait for a writer either.
    let out = tokio::time::timeout(Duration::from_secs(10), read(&tool, "pipe/x")).await.expect("must not block");
    refused(&out, "pipe/x", "pipe is not a directory");
}

#[tokio::test]
async fn builtin_10_unix_socket_is_refused() {
    let fx = Fixture::new();
    let _listener = std::os::unix::net::UnixListener::bind(fx.root.join("sock")).unwrap();
    let tool = fx.tool();
    refused(&read(&tool, "sock").await, "sock", "is a socket, not a regular file");
}

#[tokio::test]
async fn builtin_10_device_is_refused() {
    // A device cannot be placed inside a temporary root without mknod, so use /dev itself as the root.
    let tool = tool_for(Path::new("/dev"), "");
    for path in ["null", "/null", "zero"] {
        refused(&read(&tool, path).await, path, "is a character device, not a regular file");
    }
    // An absolute symlink to a device inside an ordinary root is refused before its type matters.
    let fx = Fixture::new();
    fx.link("/dev/zero", "zero");
    refused(&read(&fx.tool(), "zero").await, "zero", "absolute target");
}

#[tokio::test]
async fn builtin_10_directory_is_refused() {
    let fx = Fixture::new();
    let tool = fx.tool();
    for path in ["a", "a/", "a/b", "", "/", ".", "a/..", "//"] {
        refused(&read(&tool, path).await, path, "directory");
    }
    // An intermediate component that is a file is not a directory to descend into.
    refused(&read(&tool, "hello.txt/x").await, "hello.txt/x", "not found");
}

// ---- BUILTIN-7, 11, 12: size and text ---------------------------------------------------------------------------

#[tokio::test]
async fn builtin_11_files_over_max_bytes_are_refused_not_truncated() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("exact.txt"), "0123456789abcdef").unwrap();
    std::fs::write(fx.root.join("over.txt"), "0123456789abcdefX").unwrap();
    let tool = tool_for(&fx.root, ", max_bytes: 16");
    let v = ok(&read(&tool, "exact.txt").await);
    assert_eq!(v, json!({"path": "exact.txt", "size": 16, "content": "0123456789abcdef"}));
    let out = read(&tool, "over.txt").await;
    refused(&out, "over.txt", "17 bytes");
    assert!(out.content().contains("limit of 16 bytes"), "{}", out.content());
    assert!(!out.content().contains("0123"), "nothing of the file is returned: {}", out.content());
}

#[tokio::test]
async fn builtin_7_max_bytes_zero_or_unset_means_one_mib() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("mib.txt"), "x".repeat(1_048_576)).unwrap();
    std::fs::write(fx.root.join("over.txt"), "x".repeat(1_048_577)).unwrap();
    for tool in [fx.tool(), tool_for(&fx.root, ", max_bytes: 0"), tool_for(&fx.root, ", max_bytes: null")] {
        assert_eq!(ok(&read(&tool, "mib.txt").await)["size"], 1_048_576);
        let out = read(&tool, "over.txt").await;
        refused(&out, "over.txt", "1048577 bytes");
        assert!(out.content().contains("limit of 1048576 bytes"), "{}", out.content());
    }
    assert!(fx.tool().spec().description().contains("1048576 bytes"));
}

#[tokio::test]
async fn builtin_12_empty_file_is_empty_text() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("empty.txt"), "").unwrap();
    let v = ok(&read(&fx.tool(), "empty.txt").await);
    assert_eq!(v, json!({"path": "empty.txt", "size": 0, "content": ""}));
}

#[tokio::test]
async fn builtin_12_success_result_has_normalized_path_size_and_content() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("a/utf8.txt"), "héllo ✓\n").unwrap();
    let tool = fx.tool();
    let v = ok(&read(&tool, "//./a/b/../utf8.txt").await);
    assert_eq!(v, json!({"path": "a/utf8.txt", "size": "héllo ✓\n".len(), "content": "héllo ✓\n"}));
}

#[tokio::test]
async fn builtin_12_non_utf8_file_is_refused_as_not_text() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("binary.bin"), [0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0x00]).unwrap();
    std::fs::write(fx.root.join("latin1.txt"), b"caf\xe9").unwrap();
    let tool = fx.tool();
    refused(&read(&tool, "binary.bin").await, "binary.bin", "not text");
    refused(&read(&tool, "latin1.txt").await, "latin1.txt", "not text");
}

// ---- races ------------------------------------------------------------------------------------------------------

/// Runs `swap` in a loop on a background thread until the returned guard is dropped.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(mut swap: impl FnMut() + Send + 'static) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !flag.load(Ordering::Relaxed) {
                swap();
                swaps += 1;
            }
            swaps
        });
        Swapper { stop, thread: Some(thread) }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_7_file_swapped_for_a_symlink_between_check_and_open_never_leaks() {
    let fx = Fixture::new();
    let root = fx.root.clone();
    let secret = fx.base.join("outside/secret.txt");
    std::fs::write(root.join("swap.txt"), "SAFE-CONTENT").unwrap();
    let swapper = Swapper::start(move || {
        // rename(2) over the name is atomic: readers see the regular file or a symlink, never nothing.
        std::fs::write(root.join("swap.tmp"), "SAFE-CONTENT").unwrap();
        std::fs::rename(root.join("swap.tmp"), root.join("swap.txt")).unwrap();
        let _ = std::fs::remove_file(root.join("swap.lnk"));
        symlink("../outside/secret.txt", root.join("swap.lnk")).unwrap();
        std::fs::rename(root.join("swap.lnk"), root.join("swap.txt")).unwrap();
        std::fs::write(root.join("swap.tmp"), "SAFE-CONTENT").unwrap();
        std::fs::rename(root.join("swap.tmp"), root.join("swap.txt")).unwrap();
        let _ = std::fs::remove_file(root.join("swap.lnk"));
        symlink(&secret, root.join("swap.lnk")).unwrap();
        std::fs::rename(root.join("swap.lnk"), root.join("swap.txt")).unwrap();
    });
    let tool = fx.tool();
    let (mut read_ok, mut refused_count) = (0, 0);
    for _ in 0..2000 {
        let out = read(&tool, "swap.txt").await;
        assert!(!out.content().contains(SECRET), "secret leaked: {}", out.content());
        if out.is_error() {
            refused_count += 1;
        } else {
            assert_eq!(ok(&out)["content"], "SAFE-CONTENT");
            read_ok += 1;
        }
    }
    let swaps = swapper.finish();
    assert!(swaps > 0);
    eprintln!("swap.txt: {read_ok} read, {refused_count} refused, {swaps} swap rounds");
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_7_directory_swapped_for_a_symlink_mid_walk_never_leaks() {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    let fx = Fixture::new();
    let root = fx.root.clone();
    std::fs::write(fx.base.join("outside/f.txt"), format!("{SECRET} via dir")).unwrap();
    std::fs::create_dir(root.join("swapdir")).unwrap();
    std::fs::write(root.join("swapdir/f.txt"), "SAFE-DIR").unwrap();
    symlink("../outside", root.join("swapdir.alt")).unwrap();
    // RENAME_EXCHANGE atomically trades a real directory and a symlink to the outside under one name.
    let exchange = {
        let root = root.clone();
        move || {
            renameat2(
                AT_FDCWD,
                &root.join("swapdir"),
                AT_FDCWD,
                &root.join("swapdir.alt"),
                RenameFlags::RENAME_EXCHANGE,
            )
        }
    };
    exchange().expect("RENAME_EXCHANGE is supported here");
    exchange().unwrap();
    let swapper = Swapper::start(move || exchange().unwrap());
    let tool = fx.tool();
    let (mut read_ok, mut refused_count) = (0, 0);
    for path in ["swapdir/f.txt", "swapdir.alt/f.txt"].into_iter().cycle().take(2000) {
        let out = read(&tool, path).await;
        assert!(!out.content().contains(SECRET), "secret leaked: {}", out.content());
        if out.is_error() {
            refused_count += 1;
        } else {
            assert_eq!(ok(&out)["content"], "SAFE-DIR");
            read_ok += 1;
        }
    }
    let swaps = swapper.finish();
    assert!(swaps > 0);
    eprintln!("swapdir: {read_ok} read, {refused_count} refused, {swaps} exchanges");
}

// ---- BUILTIN-13: refusals are results, never panics ------------------------------------------------------------

#[tokio::test]
async fn builtin_13_odd_paths_are_error_results_not_panics() {
    let fx = Fixture::new();
    let tool = fx.tool();
    refused(&read(&tool, "hello.txt\0../../outside/secret.txt").await, "hello.txt\0../../outside/secret.txt", "NUL");
    let long = "a".repeat(100_000);
    let out = read(&tool, &long).await;
    assert!(out.is_error(), "{}", &out.content()[..200.min(out.content().len())]);
    let deep = "a/".repeat(50_000);
    refused(&read(&tool, &deep).await, &deep, "not found");
    for path in ["\u{1b}[31m", "..\\..\\outside\\secret.txt", "\u{202e}txt.olleh", "hello.txt\n", " hello.txt"] {
        refused(&read(&tool, path).await, path, "not found");
    }
    // The input is validated against the schema before anything is looked up.
    for input in [json!({}), json!({"path": 5}), json!({"path": "hello.txt", "extra": 1}), json!(["hello.txt"])] {
        let out = common::dispatch::dispatched(tool.clone(), &input.to_string()).await;
        assert!(out.is_error(), "{input}: {}", out.content());
        assert!(out.content().starts_with("tool \"read_file\""), "{}", out.content());
    }
}

// ---- BUILTIN-1..7: configuration ---------------------------------------------------------------------------------

#[test]
fn builtin_1_read_file_is_a_default_built_in_served_over_mcp() {
    let registry = BuiltinRegistry::with_defaults();
    assert!(registry.names().any(|n| n == "read_file"));
    let fx = Fixture::new();
    let tool = tool_for(&fx.root, "");
    assert_eq!(tool.spec().exposure(), fisk_ai::tool::Exposure::Servable, "read_file is served over MCP");
    assert!(registry.names().any(|n| n == "base64_encode"));
}

#[test]
fn builtin_2_unknown_option_is_a_config_error_naming_it() {
    let fx = Fixture::new();
    let e = build_err(&format!(
        "harness:\n  tools:\n    - name: read_file\n      options: {{root: {}, colour: red}}\n",
        quoted(&fx.root)
    ));
    assert!(e.is_config(), "{e}");
    assert_eq!(e.key(), Some("harness.tools.read_file.options.colour"));
    assert!(e.to_string().contains("read_file") && e.to_string().contains("colour"), "{e}");
}

#[test]
fn builtin_7_negative_or_mistyped_max_bytes_is_a_config_error() {
    let fx = Fixture::new();
    for (value, says) in [
        ("-1", "must not be negative"),
        ("1.5", "must be an integer"),
        ("big", "must be an integer, got a string"),
        ("[1]", "must be an integer, got a list"),
    ] {
        let e = build_err(&format!(
            "harness:\n  tools:\n    - name: read_file\n      options: {{root: {}, max_bytes: {value}}}\n",
            quoted(&fx.root)
        ));
        assert!(e.is_config(), "{e}");
        assert_eq!(e.key(), Some("harness.tools.read_file.options.max_bytes"));
        assert!(e.to_string().contains("read_file") && e.to_string().contains(says), "{value}: {e}");
    }
}

#[test]
fn builtin_6_missing_or_mistyped_root_is_a_config_error_naming_it() {
    let fx = Fixture::new();
    let missing = fx.base.join("no-such-dir");
    let e = build_err(&format!(
        "harness:\n  tools:\n    - name: read_file\n      options: {{root: {}}}\n",
        quoted(&missing)
    ));
    assert!(e.is_config(), "{e}");
    assert_eq!(e.key(), Some("harness.tools.read_file.options.root"));
    assert!(e.to_string().contains(missing.to_str().unwrap()) && e.to_string().contains("does not exist"), "{e}");

    let file = fx.root.join("hello.txt");
    let e =
        build_err(&format!("harness:\n  tools:\n    - name: read_file\n      options: {{root: {}}}\n", quoted(&file)));
    assert!(e.to_string().contains(file.to_str().unwrap()) && e.to_string().contains("not a directory"), "{e}");

    for value in ["5", "[a]", "''"] {
        let e = build_err(&format!("harness:\n  tools:\n    - name: read_file\n      options: {{root: {value}}}\n"));
        assert!(e.is_config(), "{e}");
        assert_eq!(e.key(), Some("harness.tools.read_file.options.root"), "{value}: {e}");
    }

    // Unset root falls back to root_directory, which must then exist (CFG-6).
    let e = build_err(&format!("root_directory: {}\nharness:\n  tools:\n    - name: read_file\n", quoted(&missing)));
    assert!(e.is_config(), "{e}");
    assert_eq!(e.key(), Some("root_directory"));
    assert!(e.to_string().contains(missing.to_str().unwrap()), "{e}");
}

#[tokio::test]
async fn builtin_6_root_defaults_to_root_directory_and_a_relative_root_resolves_under_it() {
    let fx = Fixture::new();
    let tool =
        config(&format!("root_directory: {}\nharness:\n  tools:\n    - name: read_file\n", quoted(&fx.root))).unwrap();
    assert_eq!(ok(&read(&tool, "hello.txt").await)["content"], "hello\n");
    refused(&read(&tool, "../outside/secret.txt").await, "../outside/secret.txt", "leaves the root");

    let tool = config(&format!(
        "root_directory: {}\nharness:\n  tools:\n    - name: read_file\n      options: {{root: root/a}}\n",
        quoted(&fx.base)
    ))
    .unwrap();
    assert_eq!(ok(&read(&tool, "b/deep.txt").await)["content"], "deep\n");
    refused(&read(&tool, "../hello.txt").await, "../hello.txt", "leaves the root");
}

#[test]
fn builtin_3_confirm_true_opts_into_the_gate() {
    let fx = Fixture::new();
    let yaml = |confirm: &str| {
        format!(
            "harness:\n  tools:\n    - name: read_file\n      confirm: {confirm}\n      options: {{root: {}}}\n",
            quoted(&fx.root)
        )
    };
    assert!(config(&yaml("true")).unwrap().spec().confirm_opt_in());
    assert!(!config(&yaml("false")).unwrap().spec().confirm_opt_in());
    assert!(!fx.tool().spec().confirm_opt_in());
}

#[test]
fn builtin_4_display_is_read_file_and_the_path_on_one_line() {
    let fx = Fixture::new();
    let tool = fx.tool();
    let display = |path: &str| tool.display(&ToolInput::from_value(&json!({ "path": path })));
    assert_eq!(display("docs/intro.md"), "read_file docs/intro.md");
    assert_eq!(display("../x"), "read_file ../x");
    assert_eq!(display("a\nb\u{1b}[31m\tc\r\n"), "read_file a b c");
    assert_eq!(display(""), "read_file \"\"");
    assert!(!tool.display(&ToolInput::from_value(&json!({"nope": "x\ny"}))).contains('\n'));
}

#[test]
fn builtin_5_schema_requires_a_string_path() {
    let fx = Fixture::new();
    let tool = fx.tool();
    let spec = tool.spec();
    assert_eq!(spec.name(), "read_file");
    let schema = spec.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["path"]));
    assert_eq!(schema["properties"]["path"]["type"], "string");
    assert!(schema["properties"]["path"]["description"].is_string());
    assert_eq!(schema["additionalProperties"], false);
    let description = spec.description();
    for needle in ["root", "..", "symlink", "regular files", "not valid UTF-8", "\"content\""] {
        assert!(description.contains(needle), "{needle:?} missing from: {description}");
    }
}
