//! The Markdown-aware chunker (KNOW-3): headings carry into each chunk's title, fenced code blocks are never split,
//! and a chunk holds at most [`MAX_CHUNK_TOKENS`] estimated tokens unless one code block alone is larger.

/// The chunker's version, pinned in every index: a change to how text is cut changes this, so an old index asks
/// for `--reindex` instead of mixing two chunkings.
pub const CHUNKER_VERSION: &str = "md-3";
/// How tokens are estimated (pinned in the index with the chunker).
pub const TOKENIZER: &str = "chars/4";
/// The token bound of one chunk.
pub const MAX_CHUNK_TOKENS: usize = 400;
/// The most characters of one heading kept in a title: a document could otherwise make every passage's title (and
/// so every search result and embedder request) as long as the file.
pub const MAX_HEADING_CHARS: usize = 200;
/// The largest fenced code block kept whole, in estimated tokens. Above it (an unclosed fence runs to the end of
/// the file) the block is cut at line boundaries like prose, so no passage can swamp a result or an embedder request.
pub const MAX_CODE_BLOCK_TOKENS: usize = 4 * MAX_CHUNK_TOKENS;

/// Estimated tokens of `text`: a quarter of its characters, rounded up. Model tokenizers differ; this errs on the
/// long side for prose and is the same on every machine.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// One passage of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The headings above the passage, outermost first.
    pub headings: Vec<String>,
    /// The first line, 1-based.
    pub line_start: usize,
    /// The last line, 1-based and inclusive.
    pub line_end: usize,
    /// The passage as written.
    pub text: String,
}

impl Chunk {
    /// The heading path joined with ` > `, or `fallback` (the file's name) when the passage has no heading.
    pub fn title(&self, fallback: &str) -> String {
        if self.headings.is_empty() { fallback.to_owned() } else { self.headings.join(" > ") }
    }
}

/// A run of lines that is kept together where it can be: a paragraph, or a whole fenced code block.
struct Block {
    start: usize,
    lines: Vec<String>,
    code: bool,
}

/// Cuts `text` into chunks. Lines are numbered from 1; blank-only passages are dropped.
pub fn chunk_markdown(text: &str) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut section = Section::default();
    let mut block: Option<Block> = None;
    let mut fence: Option<(char, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some((ch, len)) = fence {
            push_line(&mut block, n, line, true);
            if closes_fence(line, ch, len) {
                fence = None;
                section.add(block.take(), &mut out);
            }
            continue;
        }
        if let Some(open) = opens_fence(line) {
            section.add(block.take(), &mut out);
            fence = Some(open);
            push_line(&mut block, n, line, true);
        } else if let Some((level, title)) = heading(line) {
            section.add(block.take(), &mut out);
            section.flush(&mut out);
            section.enter(level, title);
            push_line(&mut block, n, line, false);
        } else if line.trim().is_empty() {
            section.add(block.take(), &mut out);
        } else {
            push_line(&mut block, n, line, false);
        }
    }
    // An unclosed fence runs to the end of the file, as CommonMark reads it.
    section.add(block.take(), &mut out);
    section.flush(&mut out);
    out
}

fn push_line(block: &mut Option<Block>, n: usize, line: &str, code: bool) {
    let b = block.get_or_insert_with(|| Block { start: n, lines: Vec::new(), code });
    b.code |= code;
    b.lines.push(line.to_owned());
}

/// An ATX heading (`#` to `######`, then a space or the end), up to three spaces indented.
fn heading(line: &str) -> Option<(usize, String)> {
    let t = line.strip_prefix("   ").or_else(|| line.strip_prefix("  ")).or_else(|| line.strip_prefix(' '));
    let t = t.unwrap_or(line);
    let level = t.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    Some((level, title.chars().take(MAX_HEADING_CHARS).collect()))
}

/// A fence opening: three or more backticks or tildes, up to three spaces indented.
fn opens_fence(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.chars().take_while(|&c| c == ch).count();
    // A backtick fence's info string may not contain a backtick (CommonMark 4.5).
    (len >= 3 && !(ch == '`' && t[len..].contains('`'))).then_some((ch, len))
}

fn closes_fence(line: &str, ch: char, len: usize) -> bool {
    let t = line.trim_start_matches(' ');
    let run = t.chars().take_while(|&c| c == ch).count();
    line.len() - t.len() <= 3 && run >= len && t[run..].trim().is_empty()
}

/// The blocks of the current section, gathered until the bound.
#[derive(Default)]
struct Section {
    headings: Vec<(usize, String)>,
    blocks: Vec<Block>,
    tokens: usize,
}

impl Section {
    fn enter(&mut self, level: usize, title: String) {
        self.headings.retain(|(l, _)| *l < level);
        self.headings.push((level, title));
    }

    fn add(&mut self, block: Option<Block>, out: &mut Vec<Chunk>) {
        let Some(block) = block else { return };
        let tokens = estimate_tokens(&block.lines.join("\n"));
        if tokens > MAX_CHUNK_TOKENS && (!block.code || tokens > MAX_CODE_BLOCK_TOKENS) {
            // A paragraph too long for one chunk goes out in line-sized pieces; so does a code block too long to
            // be a passage at all.
            self.flush(out);
            for piece in split_lines(block) {
                self.add_fitting(piece, out);
            }
            return;
        }
        self.add_fitting(block, out);
    }

    fn add_fitting(&mut self, block: Block, out: &mut Vec<Chunk>) {
        let tokens = estimate_tokens(&block.lines.join("\n"));
        if self.tokens + tokens > MAX_CHUNK_TOKENS && !self.blocks.is_empty() {
            self.flush(out);
        }
        self.tokens += tokens + 1;
        self.blocks.push(block);
    }

    fn flush(&mut self, out: &mut Vec<Chunk>) {
        let blocks = std::mem::take(&mut self.blocks);
        self.tokens = 0;
        let (Some(first), Some(last)) = (blocks.first(), blocks.last()) else { return };
        let (line_start, line_end) = (first.start, last.start + last.lines.len() - 1);
        let text = blocks.iter().map(|b| b.lines.join("\n")).collect::<Vec<_>>().join("\n\n");
        if text.trim().is_empty() {
            return;
        }
        let headings = self.headings.iter().map(|(_, t)| t.clone()).collect();
        out.push(Chunk { headings, line_start, line_end, text });
    }
}

/// A long paragraph cut into pieces of whole lines under the bound; a single line over the bound is cut at
/// character boundaries.
fn split_lines(block: Block) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut tokens = 0;
    for (i, line) in block.lines.into_iter().enumerate() {
        let n = block.start + i;
        for part in split_long_line(&line) {
            let t = estimate_tokens(&part) + 1;
            match out.last_mut() {
                Some(b) if tokens + t <= MAX_CHUNK_TOKENS => b.lines.push(part),
                _ => {
                    tokens = 0;
                    out.push(Block { start: n, lines: vec![part], code: block.code });
                }
            }
            tokens += t;
        }
    }
    out
}

fn split_long_line(line: &str) -> Vec<String> {
    let max_chars = MAX_CHUNK_TOKENS * 4;
    if line.chars().count() <= max_chars {
        return vec![line.to_owned()];
    }
    let chars: Vec<char> = line.chars().collect();
    chars.chunks(max_chars).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_nest_and_reset_by_level() {
        let text = "# Ops\n\nintro\n\n## Restart\n\nsteps\n\n### Check\n\nlook\n\n## Backup\n\ncopy\n";
        let chunks = chunk_markdown(text);
        let titles: Vec<String> = chunks.iter().map(|c| c.title("f.md")).collect();
        assert_eq!(titles, ["Ops", "Ops > Restart", "Ops > Restart > Check", "Ops > Backup"]);
        assert_eq!((chunks[1].line_start, chunks[1].line_end), (5, 7));
    }

    #[test]
    fn a_hash_in_a_code_block_is_not_a_heading_and_the_block_stays_whole() {
        let body = (0..200).map(|i| format!("echo {i} # not a heading")).collect::<Vec<_>>().join("\n");
        let text = format!("# A\n\n```sh\n# comment\n{body}\n```\n\nafter\n");
        let chunks = chunk_markdown(&text);
        let code = chunks.iter().find(|c| c.text.starts_with("```sh")).expect("the code block is one chunk");
        assert!(code.text.ends_with("```"), "never split: {}", &code.text[code.text.len() - 20..]);
        assert!(chunks.iter().all(|c| c.headings == ["A"]));
    }

    #[test]
    fn an_unclosed_fence_over_the_code_bound_is_cut_into_bounded_passages() {
        let body = (0..20_000).map(|i| format!("line {i} of a runaway fence")).collect::<Vec<_>>().join("\n");
        let text = format!("# A\n\n```\n{body}\n");
        let chunks = chunk_markdown(&text);
        assert!(chunks.len() > 100);
        assert!(chunks.iter().all(|c| estimate_tokens(&c.text) <= MAX_CHUNK_TOKENS + 1));
        assert_eq!(chunks.last().unwrap().line_end, 20_003);
    }

    #[test]
    fn a_huge_heading_is_cut_to_the_title_bound() {
        let text = format!("# {}\n\nbody\n", "h".repeat(100_000));
        let chunks = chunk_markdown(&text);
        assert_eq!(chunks[0].title("f.md").chars().count(), MAX_HEADING_CHARS);
    }

    #[test]
    fn one_huge_line_is_cut_at_character_boundaries() {
        let line = "é".repeat(MAX_CHUNK_TOKENS * 4 * 3 + 7);
        let chunks = chunk_markdown(&line);
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks.iter().map(|c| c.text.chars().count()).sum::<usize>(), line.chars().count());
        assert!(chunks.iter().all(|c| (c.line_start, c.line_end) == (1, 1)));
    }

    #[test]
    fn long_prose_is_cut_under_the_bound() {
        let para = (0..400).map(|i| format!("word{i} and more words here")).collect::<Vec<_>>().join("\n");
        let chunks = chunk_markdown(&para);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| estimate_tokens(&c.text) <= MAX_CHUNK_TOKENS + 1));
        assert_eq!(chunks.last().unwrap().line_end, 400);
    }
}
