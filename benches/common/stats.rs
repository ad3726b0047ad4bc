//! Percentiles of measured durations, the one way every bench that prints p50/p99 computes them.

use std::time::Duration;

/// The `p`-th percentile (0.0..=1.0) of `sorted`, by nearest rank; zero for no samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p.clamp(0.0, 1.0)).round() as usize]
}
