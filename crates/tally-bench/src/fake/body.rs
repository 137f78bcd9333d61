//! The response body type: a whole buffer, or frames pushed through a channel by the task that
//! times them (an `Err` aborts the connection mid-body, which is how a cut stream is made).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::mpsc;

/// A response body.
#[derive(Debug)]
pub enum FakeBody {
    /// One buffer (or nothing).
    Full(Option<Bytes>),
    /// Frames as they are sent.
    Channel(mpsc::Receiver<Result<Bytes, std::io::Error>>),
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
            Self::Channel(rx) => rx
                .poll_recv(cx)
                .map(|item| item.map(|r| r.map(Frame::data))),
        }
    }
}
