//! The program's loader (SBX-1): the ELF interpreter a dynamically linked binary names in `PT_INTERP`, or the
//! interpreter of a `#!` script, which the kernel executes on the child's behalf and Landlock therefore checks.

use std::io::Read;
use std::path::{Path, PathBuf};

/// How much of the file is read: the ELF header, the program headers and the interpreter path of any ordinary
/// binary fit; a binary whose interpreter lies beyond is treated as static (and then fails to start, confined,
/// with a clear `EACCES` rather than silently widening the profile).
const HEAD: usize = 16 * 1024;
const PT_INTERP: u32 = 3;

/// The interpreter `program` needs executed, if any: only an absolute one (a relative `#!` path is resolved by
/// the kernel against the child's directory, not ours, so granting it here could grant something else), and only
/// read from a regular file (opened without blocking, so a FIFO cannot hold the spawn up).
pub(super) fn interpreter(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(program).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut head = Vec::with_capacity(HEAD);
    file.take(HEAD as u64).read_to_end(&mut head).ok()?;
    let found = match head.strip_prefix(b"#!") {
        Some(script) => {
            let line = script.split(|b| *b == b'\n').next()?;
            // The kernel splits the line at the first space or tab.
            let text = std::str::from_utf8(line).ok()?.trim_start_matches([' ', '\t']);
            PathBuf::from(text.split([' ', '\t']).next()?)
        }
        None => elf_interpreter(&head)?,
    };
    found.is_absolute().then_some(found)
}

fn elf_interpreter(head: &[u8]) -> Option<PathBuf> {
    if head.get(..4)? != b"\x7fELF" {
        return None;
    }
    let wide = match head.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let little = *head.get(5)? == 1;
    let word = |at: usize, len: usize| -> Option<u64> {
        let bytes = head.get(at..at.checked_add(len)?)?;
        let mut v = 0u64;
        for (i, b) in bytes.iter().enumerate() {
            let shift = if little { i } else { len - 1 - i } * 8;
            v |= u64::from(*b) << shift;
        }
        Some(v)
    };
    let (phoff, phentsize, phnum) = if wide {
        (word(0x20, 8)?, word(0x36, 2)?, word(0x38, 2)?)
    } else {
        (word(0x1c, 4)?, word(0x2a, 2)?, word(0x2c, 2)?)
    };
    for i in 0..phnum {
        let at = usize::try_from(phoff.checked_add(i.checked_mul(phentsize)?)?).ok()?;
        if word(at, 4)? != u64::from(PT_INTERP) {
            continue;
        }
        let (offset, size) =
            if wide { (word(at + 8, 8)?, word(at + 32, 8)?) } else { (word(at + 4, 4)?, word(at + 16, 4)?) };
        let start = usize::try_from(offset).ok()?;
        let raw = head.get(start..start.checked_add(usize::try_from(size).ok()?)?)?;
        let path = raw.split(|b| *b == 0).next()?;
        return Some(PathBuf::from(std::str::from_utf8(path).ok()?));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbx_1_finds_the_interpreter_of_this_test_binary_and_of_a_script() {
        // The test binary is dynamically linked (glibc), so it names a loader that exists.
        let me = std::env::current_exe().unwrap();
        let interp = interpreter(&me).expect("a PT_INTERP");
        assert!(interp.is_absolute() && interp.exists(), "{}", interp.display());
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!  /bin/sh -e\necho hi\n").unwrap();
        assert_eq!(interpreter(&script), Some(PathBuf::from("/bin/sh")));
        std::fs::write(&script, b"\x7fELF\x02\x01garbage").unwrap();
        assert_eq!(interpreter(&script), None);
    }
}
