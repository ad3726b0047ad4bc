//! The session store kit (being written).
