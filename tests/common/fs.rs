//! File-tree helpers shared by tests and benches (`benches/knowledge.rs` includes this file by path).

use std::path::Path;

/// Copy the tree at `from` to `to` (created), files and directories only.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
