//! This process's peak memory, for tests that bound it (EXEC-12, MCPI-8, MCPI-13). Linux only. A test measuring
//! it must be alone in its test binary, so the peak is its own.

/// This process's peak resident set (`VmHWM`), in bytes.
pub fn peak() -> u64 {
    peak_at("/proc/self/status")
}

/// The peak resident set of process `pid` (a child the test started), in bytes.
pub fn peak_of(pid: u32) -> u64 {
    peak_at(&format!("/proc/{pid}/status"))
}

fn peak_at(status: &str) -> u64 {
    let status = std::fs::read_to_string(status).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Reset the peak to the current resident set (Linux: `5` to `clear_refs`), so each phase measures its own peak.
pub fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}
