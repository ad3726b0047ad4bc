//! The stdio server's stdout as the transport reads it: whole lines, at most [`LINE_LIMIT`] bytes of one message
//! held at a time. Read in place (the transport polls this reader directly; no task or pipe in between, so a reply
//! costs no extra wake-up), and a line is parsed where it lies, never copied again.

use super::oversize::Oversize;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};

/// A message longer than this is not handed to the protocol layer whole: a `tools/call` result is reduced to its
/// EXEC-12 head and tail while it streams in ([`Oversize`]), anything else is answered with an error.
pub(crate) const LINE_LIMIT: usize = 8 << 20;
const READ_CHUNK: usize = 64 * 1024;
/// A line buffer grown past this is freed once its line is consumed, so one big reply (a listing page, a large
/// result) is not held for the rest of the session.
const KEEP_CAPACITY: usize = 1 << 20;

/// Bytes of one message: held whole up to [`LINE_LIMIT`], reduced while they stream past it ([`Oversize`]).
#[derive(Default)]
pub(crate) struct Message {
    held: Vec<u8>,
    big: Option<Oversize>,
}

impl Message {
    /// An empty message reusing `buffer`'s memory.
    fn reusing(mut buffer: Vec<u8>) -> Self {
        buffer.clear();
        Message { held: buffer, big: None }
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        match &mut self.big {
            Some(o) => o.feed(bytes),
            None if self.held.len() + bytes.len() > LINE_LIMIT => {
                let mut o = Oversize::new();
                o.feed(&std::mem::take(&mut self.held));
                o.feed(bytes);
                self.big = Some(o);
            }
            None => self.held.extend_from_slice(bytes),
        }
    }

    /// How many bytes are held whole (none once the message is being reduced).
    #[cfg(test)]
    pub(crate) fn held_len(&self) -> usize {
        self.held.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.big.is_none() && self.held.is_empty()
    }

    /// The message: its bytes, or for one over the limit the small message [`Oversize`] reduced it to.
    pub(crate) fn finish(self) -> Vec<u8> {
        match self.big {
            Some(o) => o.finish().into_bytes(),
            None => self.held,
        }
    }
}

/// Line-bounded reads of `R`. Only complete lines are passed on; an unterminated last line is dropped at EOF, as
/// the protocol layer would drop it.
pub(crate) struct BoundedLines<R> {
    inner: R,
    buf: Box<[u8]>,
    /// The unread part of `buf`.
    start: usize,
    end: usize,
    /// The current line, while it spans reads.
    line: Message,
    /// A complete line (without its `\n`) waiting to be consumed.
    ready: Option<Vec<u8>>,
    eof: bool,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R) -> Self {
        BoundedLines {
            inner,
            buf: vec![0u8; READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line: Message::default(),
            ready: None,
            eof: false,
        }
    }

    /// The complete line [`poll_line`](Self::poll_line) announced, without its `\n`.
    pub(crate) fn line(&self) -> &[u8] {
        self.ready.as_deref().unwrap_or_default()
    }

    /// Done with the current line: the next poll reads on. Its buffer is kept for the next line unless it grew big.
    pub(crate) fn consume(&mut self) {
        if let Some(done) = self.ready.take()
            && done.capacity() <= KEEP_CAPACITY
            && self.line.held.capacity() == 0
        {
            self.line = Message::reusing(done);
        }
    }

    /// Take what the window holds of the current line; the line goes to `ready` when it is complete.
    fn take_window(&mut self) {
        let window = &self.buf[self.start..self.end];
        let (chunk, complete) = match memchr::memchr(b'\n', window) {
            Some(i) => (&window[..i], true),
            None => (window, false),
        };
        let used = chunk.len() + usize::from(complete);
        self.line.feed(chunk);
        self.start += used;
        if complete {
            self.ready = Some(std::mem::take(&mut self.line).finish());
        }
    }
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    /// Wait for the next complete line: `true` when [`line`](Self::line) holds it, `false` at the end of the
    /// stream. Cancellation-safe: everything read so far stays here for the next poll.
    pub(crate) fn poll_line(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        loop {
            if self.ready.is_some() {
                return Poll::Ready(Ok(true));
            }
            if self.eof {
                return Poll::Ready(Ok(false));
            }
            if self.start == self.end {
                let mut rb = ReadBuf::new(&mut self.buf);
                ready!(Pin::new(&mut self.inner).poll_read(cx, &mut rb))?;
                let n = rb.filled().len();
                (self.start, self.end) = (0, n);
                self.eof = n == 0;
                continue;
            }
            self.take_window();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_pass_whole_whatever_the_chunking_and_an_unterminated_tail_is_dropped() {
        let (mut tx, rx) = tokio::io::duplex(7);
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            tx.write_all(b"{\"a\":1}\n{\"b\":").await.unwrap();
            tx.write_all(b"2}\n\npartial").await.unwrap();
        });
        let mut lines = BoundedLines::new(rx);
        let mut got = Vec::new();
        while std::future::poll_fn(|cx| lines.poll_line(cx)).await.unwrap() {
            got.push(String::from_utf8(lines.line().to_vec()).unwrap());
            lines.consume();
        }
        assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", ""]);
    }

    /// A line announced but not consumed (the reader was cancelled) is announced again, not lost.
    #[tokio::test]
    async fn an_unconsumed_line_is_announced_again() {
        let mut lines = BoundedLines::new(&b"one\ntwo\n"[..]);
        assert!(std::future::poll_fn(|cx| lines.poll_line(cx)).await.unwrap());
        assert!(std::future::poll_fn(|cx| lines.poll_line(cx)).await.unwrap());
        assert_eq!(lines.line(), b"one");
        lines.consume();
        assert!(std::future::poll_fn(|cx| lines.poll_line(cx)).await.unwrap());
        assert_eq!(lines.line(), b"two");
    }
}
