//! The stdio server's stdout as the protocol layer reads it: whole lines, at most [`LINE_LIMIT`] bytes of one
//! message held at a time. Read in place (rmcp polls this reader directly; no task or pipe in between, so a reply
//! costs no extra wake-up).

use super::oversize::Oversize;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};

/// A message longer than this is not handed to the protocol layer whole: a `tools/call` result is reduced to its
/// EXEC-12 head and tail while it streams in ([`Oversize`]), anything else is answered with an error.
pub(crate) const LINE_LIMIT: usize = 8 << 20;
const READ_CHUNK: usize = 64 * 1024;

/// Line-bounded reads of `R`. Only complete lines are passed on; an unterminated last line is dropped at EOF,
/// as the protocol layer would drop it.
pub(crate) struct BoundedLines<R> {
    inner: R,
    buf: Box<[u8]>,
    /// The unread part of `buf`.
    start: usize,
    end: usize,
    /// The current line, while it spans reads.
    line: Vec<u8>,
    /// The current line, once it is over the limit.
    big: Option<Oversize>,
    /// A complete line waiting to be handed out, and how much of it was.
    ready: Vec<u8>,
    given: usize,
    eof: bool,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R) -> Self {
        BoundedLines {
            inner,
            buf: vec![0u8; READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line: Vec::new(),
            big: None,
            ready: Vec::new(),
            given: 0,
            eof: false,
        }
    }

    /// Take what the window holds of the current line; true when the line is complete (then in `ready`).
    fn take_window(&mut self) -> bool {
        let window = &self.buf[self.start..self.end];
        let (chunk, complete) = match memchr::memchr(b'\n', window) {
            Some(i) => (&window[..i], true),
            None => (window, false),
        };
        let used = chunk.len() + usize::from(complete);
        match &mut self.big {
            Some(o) => o.feed(chunk),
            None if self.line.len() + chunk.len() > LINE_LIMIT => {
                let mut o = Oversize::new();
                o.feed(&self.line);
                o.feed(chunk);
                self.line = Vec::new();
                self.big = Some(o);
            }
            None => self.line.extend_from_slice(chunk),
        }
        self.start += used;
        if complete {
            self.ready.clear();
            match self.big.take() {
                Some(o) => self.ready.extend_from_slice(o.finish().as_bytes()),
                None => std::mem::swap(&mut self.ready, &mut self.line),
            }
            self.line.clear();
            self.ready.push(b'\n');
            self.given = 0;
        }
        complete
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.given < this.ready.len() {
                let n = out.remaining().min(this.ready.len() - this.given);
                out.put_slice(&this.ready[this.given..this.given + n]);
                this.given += n;
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                let mut rb = ReadBuf::new(&mut this.buf);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
                let n = rb.filled().len();
                (this.start, this.end) = (0, n);
                this.eof = n == 0;
                continue;
            }
            this.take_window();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_pass_whole_whatever_the_chunking_and_an_unterminated_tail_is_dropped() {
        let (mut tx, rx) = tokio::io::duplex(7);
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            tx.write_all(b"{\"a\":1}\n{\"b\":").await.unwrap();
            tx.write_all(b"2}\n\npartial").await.unwrap();
        });
        let mut got = String::new();
        BoundedLines::new(rx).read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "{\"a\":1}\n{\"b\":2}\n\n");
    }
}
