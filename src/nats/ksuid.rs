//! The a2a wire's message ids: KSUIDs, one minted for every message this crate sends (a reply to each tool call
//! among them), so minting one is on every served call's path.
//!
//! The ids are the ones `svix_ksuid` makes: four bytes counting seconds since the KSUID epoch, then sixteen random
//! bytes, written as 27 base-62 digits. Two things are done for less:
//! - **The random bytes** come from a per-thread pool that one read of the operating system's generator fills for
//!   [`POOL_IDS`] ids, where `svix_ksuid` makes one system call per id. Each pooled byte serves one id only.
//! - **The digits** come from a fixed-width long division on five 32-bit words, where `svix_ksuid` runs a general
//!   big-number encoder that allocates as it goes.
//!
//! Profiled under `benches/a2a.rs` (perf, the served call's own work), minting the reply's id was the largest
//! single part of what a2a serving adds to a command's run.
//!
//! These ids must be unique, not secret: nothing here is for a nonce or a token (approvals draw their own bytes).

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds from the Unix epoch to the KSUID epoch (2014-05-13T16:53:20Z).
const EPOCH: u64 = 1_400_000_000;
/// The base-62 digits, in the order the KSUID format sorts them.
const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Digits in an id: the fewest that hold any 160-bit value (62^27 > 2^160).
const LEN: usize = 27;
/// Random bytes in an id.
const PAYLOAD: usize = 16;
/// Ids one fill of a thread's pool serves.
const POOL_IDS: usize = 32;

/// A thread's random bytes not yet given to an id, from `next` on, drawn in process `pid`.
struct Pool {
    bytes: [u8; PAYLOAD * POOL_IDS],
    next: usize,
    pid: u32,
}

thread_local! {
    // Starts spent, so the first id fills it.
    static POOL: RefCell<Pool> =
        const { RefCell::new(Pool { bytes: [0; PAYLOAD * POOL_IDS], next: PAYLOAD * POOL_IDS, pid: 0 }) };
}

/// A fresh KSUID, dated now.
pub(crate) fn new() -> String {
    at(SystemTime::now())
}

/// A fresh KSUID dated `time` (clamped to the format's range of seconds).
fn at(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()).saturating_sub(EPOCH);
    let mut raw = [0u8; 4 + PAYLOAD];
    raw[..4].copy_from_slice(&u32::try_from(secs).unwrap_or(u32::MAX).to_be_bytes());
    random(&mut raw[4..]);
    encode(&raw)
}

/// Sixteen bytes from this thread's pool, refilled from the operating system's generator when spent.
fn random(out: &mut [u8]) {
    POOL.with_borrow_mut(|pool| take(pool, std::process::id(), out));
}

/// Sixteen bytes of `pool` for an id minted in process `pid`. A pool drawn in another process is refilled first: a
/// host that forks without exec copies this thread's pool into the child, and the two would issue the same ids.
fn take(pool: &mut Pool, pid: u32, out: &mut [u8]) {
    if pool.pid != pid || pool.next + PAYLOAD > pool.bytes.len() {
        if getrandom::fill(&mut pool.bytes).is_err() {
            // No generator (it never fails on a supported kernel).
            fallback(&mut pool.bytes);
        }
        pool.next = 0;
        pool.pid = pid;
    }
    out.copy_from_slice(&pool.bytes[pool.next..pool.next + PAYLOAD]);
    pool.next += PAYLOAD;
}

/// Bytes that differ between every call in every process, for when the operating system's generator fails: a
/// digest of the process, the thread, the time and a counter, with no randomness of its own (std's hasher keys
/// would come from the same generator, and std panics when it fails).
fn fallback(bytes: &mut [u8]) {
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let thread = format!("{:?}", std::thread::current().id());
    for (block, chunk) in (0u64..).zip(bytes.chunks_mut(32)) {
        let mut digest = Sha256::new();
        digest.update(std::process::id().to_le_bytes());
        digest.update(thread.as_bytes());
        digest.update(nanos.to_le_bytes());
        digest.update(call.to_le_bytes());
        digest.update(block.to_le_bytes());
        chunk.copy_from_slice(&digest.finalize()[..chunk.len()]);
    }
}

/// `raw` (big-endian) as 27 base-62 digits, most significant first, padded with `0`.
fn encode(raw: &[u8; 4 + PAYLOAD]) -> String {
    let mut words = [0u32; 5];
    for (word, bytes) in words.iter_mut().zip(raw.chunks_exact(4)) {
        *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    let mut digits = [DIGITS[0]; LEN];
    for digit in digits.iter_mut().rev() {
        if words.iter().all(|&w| w == 0) {
            break;
        }
        // One step of long division by 62, most significant word first; the remainder is the next digit.
        let mut rem = 0u64;
        for word in &mut words {
            let acc = (rem << 32) | u64::from(*word);
            *word = (acc / 62) as u32;
            rem = acc % 62;
        }
        *digit = DIGITS[rem as usize];
    }
    digits.iter().map(|&d| char::from(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::str::FromStr;
    use svix_ksuid::{Ksuid, KsuidLike};

    /// The same digits `svix_ksuid` writes for the same bytes: at the extremes, and for many random ids.
    #[test]
    fn a2a_ids_encode_as_svix_ksuid_does() {
        let mut cases = vec![[0u8; 20], [0xff; 20], [0x80; 20]];
        let mut one = [0u8; 20];
        one[19] = 1;
        cases.push(one);
        for _ in 0..2000 {
            let mut raw = [0u8; 20];
            getrandom::fill(&mut raw).unwrap();
            cases.push(raw);
        }
        for raw in cases {
            assert_eq!(encode(&raw), Ksuid::from_bytes(raw).to_string(), "{raw:?}");
        }
        assert_eq!(encode(&[0xff; 20]), "aWgEPTl1tmebfsQzFP4bxwgy80V");
    }

    /// An id reads back, with `svix_ksuid`, as the time it was dated and the bytes the pool gave it.
    #[test]
    fn a2a_ids_carry_their_time() {
        let time = UNIX_EPOCH + std::time::Duration::from_secs(1_765_000_000);
        let id = at(time);
        assert_eq!(id.len(), LEN);
        let parsed = Ksuid::from_str(&id).unwrap();
        assert_eq!(parsed.timestamp_seconds(), 1_765_000_000);
        assert_eq!(parsed.to_string(), id);
        // Dated before the KSUID epoch: second zero, as the format cannot go earlier.
        assert_eq!(Ksuid::from_str(&at(UNIX_EPOCH)).unwrap().bytes()[..4], [0; 4]);
    }

    /// Across many refills of the pool, on several threads, no id repeats and no pooled bytes serve twice.
    #[test]
    fn a2a_ids_are_unique_across_refills_and_threads() {
        let per_thread = POOL_IDS * 20 + 3;
        let ids: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> =
                (0..4).map(|_| s.spawn(|| (0..per_thread).map(|_| new()).collect::<Vec<_>>())).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let payloads: HashSet<[u8; PAYLOAD]> =
            ids.iter().map(|id| Ksuid::from_str(id).unwrap().payload().try_into().unwrap()).collect();
        assert_eq!(payloads.len(), ids.len());
    }

    /// The fallback's bytes differ from call to call, and from block to block within one.
    #[test]
    fn a2a_id_fallback_bytes_differ() {
        let (mut a, mut b) = ([0u8; 80], [0u8; 80]);
        fallback(&mut a);
        fallback(&mut b);
        assert_ne!(a, b);
        assert_ne!(a[..32], a[32..64]);
        assert_ne!(a[64..], [0; 16]);
    }

    /// A pool drawn in another process (a fork's copy) is refilled before it gives a byte; in its own process it
    /// gives each byte once, then refills when spent.
    #[test]
    fn a2a_id_pool_is_refilled_in_a_forked_child() {
        let mut pool = Pool { bytes: [0; PAYLOAD * POOL_IDS], next: PAYLOAD * POOL_IDS, pid: 0 };
        let (mut first, mut second) = ([0u8; PAYLOAD], [0u8; PAYLOAD]);
        take(&mut pool, 100, &mut first);
        let copy = Pool { bytes: pool.bytes, next: pool.next, pid: pool.pid };
        take(&mut pool, 100, &mut second);
        assert_eq!((pool.next, pool.pid), (2 * PAYLOAD, 100));
        assert_ne!(first, second);
        // The child's copy, in process 101, would give `second` again; it refills instead.
        let mut child = copy;
        let mut in_child = [0u8; PAYLOAD];
        take(&mut child, 101, &mut in_child);
        assert_eq!((child.next, child.pid), (PAYLOAD, 101));
        assert_ne!(in_child, second);
        // Spent, in its own process: refilled.
        pool.next = pool.bytes.len();
        take(&mut pool, 100, &mut first);
        assert_eq!(pool.next, PAYLOAD);
    }
}
