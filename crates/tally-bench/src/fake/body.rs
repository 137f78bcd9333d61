//! The response body type: a whole buffer, or frames pushed through a channel by the task that
//! times them (an `Err` aborts the connection mid-body, which is how a cut stream is made).
//!
//! A frame that carries generated tokens is marked, and the body stamps the server's truth for
//! it when the connection takes it to write (in the connection's own task, just before the
//! write), not when the timing task handed it over: the wait between the two is the server's.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::mpsc;

use super::http::Shared;

/// Which request's token stamps a frame carries.
#[derive(Clone, Copy, Debug)]
pub struct TokenFrame {
    /// The request's slot in the server's stats.
    pub slot: usize,
    /// The frame with the first generated token.
    pub first: bool,
}

/// One frame of a streamed body.
#[derive(Debug)]
pub struct Outgoing {
    /// The bytes.
    pub bytes: Bytes,
    /// Set on the frame whose bytes complete generated tokens.
    pub token: Option<TokenFrame>,
}

/// A response body.
#[derive(Debug)]
pub enum FakeBody {
    /// One buffer (or nothing).
    Full(Option<Bytes>),
    /// Frames as they are sent; marked frames are stamped in `shared` when written.
    Channel {
        /// The frames.
        rx: mpsc::Receiver<Result<Outgoing, std::io::Error>>,
        /// Where the stamps go.
        shared: Arc<Shared>,
    },
}

impl FakeBody {
    /// A whole body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self::Full(Some(bytes.into()))
    }
}

impl Body for FakeBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            Self::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Self::Channel { rx, shared } => rx.poll_recv(cx).map(|item| {
                item.map(|r| {
                    r.map(|out| {
                        if let Some(token) = out.token {
                            shared.stamp(token.slot, Instant::now(), token.first);
                        }
                        Frame::data(out.bytes)
                    })
                })
            }),
        }
    }
}
