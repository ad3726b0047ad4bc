//! The FAKE embedder the benches report the vector tiers with (knowledge search, `search_tools`' hybrid tier), so
//! they run offline: lower-cased words and their character trigrams hashed (FNV-1a) into 256 dimensions. It knows
//! no meaning, only shared spellings; a real embedding model's figures differ, and no figure it gives is one.

use fisk_ai::async_trait;
use fisk_ai::knowledge::Embedder;

const DIM: usize = 256;

/// The fake embedder (see the module's documentation).
pub struct FakeEmbedder;

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn fake_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1) {
        let w = w.to_lowercase();
        v[(fnv(&w) % DIM as u64) as usize] += 2.0;
        let chars: Vec<char> = format!(" {w} ").chars().collect();
        for t in chars.windows(3) {
            v[(fnv(&t.iter().collect::<String>()) % DIM as u64) as usize] += 0.5;
        }
    }
    v
}

#[async_trait]
impl Embedder for FakeEmbedder {
    fn model(&self) -> &str {
        "fake-trigram-256"
    }
    async fn embed(&self, texts: &[String]) -> fisk_ai::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| fake_vector(t)).collect())
    }
}
