//! The memory store kit (being written).
