//! MCPI-13: a tool listing has a memory bound, not only a time bound. A server answering `tools/list` with 7.5 MB
//! pages and a fresh cursor each time used to be held page after page until the timeout (1.7-2.0 GB in 40 s);
//! now the load fails at the listing's bound, naming the server, the pages read and the bound, with this process's
//! peak memory far below what the pages add up to. Over stdio and over streamable HTTP (a separate server process,
//! so its own copies are not in this process). Alone in its own test binary so the peak (`VmHWM`) is this test's.
#![cfg(feature = "mcp")]

mod common;

use common::mcp::{HttpFixture, stdio};
use common::memory::{peak, reset_peak};
use std::time::Duration;

/// Each page: ten tools whose descriptions add up to 7.5 MB, under the 8 MiB line bound.
const PAGE: &str = "7500000";
/// Far above the bound's 32 MiB and one page in flight, far below the gigabytes the pages add up to.
const PEAK_LIMIT: u64 = 128 << 20;

/// The number of pages the error says were read.
fn pages_read(err: &str) -> usize {
    let after = err.split("after ").nth(1).unwrap_or_else(|| panic!("no page count in {err}"));
    after.trim_end_matches(" pages").parse().unwrap_or_else(|_| panic!("no page count in {err}"))
}

#[tokio::test]
async fn mcpi_13_a_listing_of_huge_pages_fails_at_its_memory_bound() {
    let server = HttpFixture::start(&["--huge-pages", PAGE]);
    let imports = [stdio("huge", &["--huge-pages", PAGE]), server.import("huge")];
    for import in imports {
        let import = import.with_timeout(Duration::from_secs(300));
        reset_peak();
        let before = peak();
        let err = import.load().await.unwrap_err().to_string();
        let grown = peak().saturating_sub(before);
        eprintln!("{:?}: peak grew by {} MiB; {err}", import.transport(), grown >> 20);
        let bound = "mcp server huge: cannot list tools: the listing went past the 32 MiB bound on what one listing \
                     may hold, after ";
        assert!(err.starts_with(bound), "{err}");
        // 32 MiB of 7.5 MB pages: the fifth page crosses it, long before the 2000-page cap or any timeout.
        assert_eq!(pages_read(&err), 5, "{err}");
        assert!(grown < PEAK_LIMIT, "peak memory grew by {} MiB while listing", grown >> 20);
    }
}
