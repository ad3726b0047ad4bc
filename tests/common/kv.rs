//! KV buckets made by hand, as an operator would with `nats kv add`: async-nats's `create_key_value` cannot parse
//! nats-server 2.9's account info (docs/deps.md, gotcha 8), so the stream is created directly.
#![allow(dead_code)]

use async_nats::jetstream::stream::{Config, DiscardPolicy, StorageType};
use std::time::Duration;

/// What `nats kv add <bucket> --history=1 --max-value-size=69600` makes.
pub fn bucket_config(bucket: &str) -> Config {
    Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        max_message_size: 69_600,
        discard: DiscardPolicy::New,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        num_replicas: 1,
        storage: StorageType::File,
        ..Default::default()
    }
}

/// Create `config`'s stream over `client`.
pub async fn create(client: &async_nats::Client, config: Config) {
    let js = async_nats::jetstream::new(client.clone());
    js.create_stream(config).await.unwrap();
}

/// A standard memory bucket `bucket`.
pub async fn create_bucket(client: &async_nats::Client, bucket: &str) {
    create(client, bucket_config(bucket)).await;
}

/// A bucket whose values expire after `ttl`.
pub fn with_ttl(bucket: &str, ttl: Duration) -> Config {
    Config { max_age: ttl, ..bucket_config(bucket) }
}
