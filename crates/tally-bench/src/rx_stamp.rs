//! Kernel receive stamps: a TCP stream whose every read also asks the kernel when the bytes it
//! returns reached the host (`SO_TIMESTAMPNS`, the software receive time of the last segment the
//! read consumed). A process that shares busy cores reads its sockets late; the kernel stamps
//! the segment when it arrives, so an arrival stamped this way does not carry the reader's own
//! scheduling delay (docs/bench.md#kernel-stamps).
//!
//! The kernel's stamp is on the real-time clock; each read converts it to an [`Instant`] by the
//! clocks' offset at that read, so a step of the wall clock shifts at most the reads around it,
//! and a stamp that is in the future or more than [`MAX_AGE`] old is ignored (the read's own
//! time stands instead). Where the kernel gives no stamp (not Linux, or the option refused) the
//! stream behaves as a plain one and [`RxStamp::latest`] stays empty.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A kernel stamp older than this at its read is not trusted (a stepped wall clock).
pub const MAX_AGE: Duration = Duration::from_secs(10);

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The kernel receive time of the last bytes a stream read, shared with whoever handles them.
#[derive(Debug, Default)]
pub struct RxStamp {
    /// Nanoseconds after [`origin`] plus one; 0 = none yet.
    ns: AtomicU64,
}

impl RxStamp {
    /// The kernel receive time of the bytes of the latest read, if the kernel gave one.
    pub fn latest(&self) -> Option<Instant> {
        match self.ns.load(Ordering::Acquire) {
            0 => None,
            ns => Some(origin() + Duration::from_nanos(ns - 1)),
        }
    }

    fn set(&self, at: Option<Instant>) {
        let ns = at.map_or(0, |at| {
            (at.saturating_duration_since(origin()).as_nanos() as u64).saturating_add(1)
        });
        self.ns.store(ns, Ordering::Release);
    }
}

/// A TCP stream that records the kernel receive time of what each read returned.
#[derive(Debug)]
pub struct StampedStream {
    inner: TcpStream,
    stamp: Arc<RxStamp>,
    /// Whether the kernel was asked to stamp (the option was accepted).
    stamping: bool,
    control: Vec<u8>,
}

impl StampedStream {
    /// Wraps `inner`, asking the kernel to stamp received segments.
    pub fn new(inner: TcpStream) -> Self {
        origin();
        let stamping = sys::enable(&inner);
        Self {
            inner,
            stamp: Arc::new(RxStamp::default()),
            stamping,
            control: sys::control_buffer(),
        }
    }

    /// The stamp this stream updates at every read.
    pub fn stamp(&self) -> Arc<RxStamp> {
        self.stamp.clone()
    }

    /// The stream underneath.
    pub fn get_ref(&self) -> &TcpStream {
        &self.inner
    }
}

/// Converts a kernel real-time stamp to the monotonic clock by the clocks' offset now.
fn to_instant(since_epoch: Duration) -> Option<Instant> {
    let now = Instant::now();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    let age = wall.checked_sub(since_epoch)?;
    if age > MAX_AGE {
        return None;
    }
    now.checked_sub(age)
}

impl AsyncRead for StampedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.stamping {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        loop {
            std::task::ready!(this.inner.poll_read_ready(cx))?;
            let (inner, control) = (&this.inner, &mut this.control);
            let unfilled = buf.initialize_unfilled();
            match inner.try_io(tokio::io::Interest::READABLE, || {
                sys::recv(inner, unfilled, control)
            }) {
                Ok((n, kernel)) => {
                    // A read without a usable stamp clears it: never a stale one.
                    this.stamp.set(kernel.and_then(to_instant));
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
                Err(err) => return Poll::Ready(Err(err)),
            }
        }
    }
}

impl AsyncWrite for StampedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(target_os = "linux")]
mod sys {
    //! `SO_TIMESTAMPNS` and `recvmsg` through nix.
    use std::io::{self, IoSliceMut};
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use nix::sys::socket::{
        ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt::ReceiveTimestampns,
    };
    use nix::sys::time::TimeSpec;
    use tokio::net::TcpStream;

    pub(super) fn enable(stream: &TcpStream) -> bool {
        setsockopt(stream, ReceiveTimestampns, &true).is_ok()
    }

    pub(super) fn control_buffer() -> Vec<u8> {
        nix::cmsg_space!(TimeSpec)
    }

    /// One `recvmsg`: the bytes read and the kernel's stamp (time since the Unix epoch).
    pub(super) fn recv(
        stream: &TcpStream,
        buf: &mut [u8],
        control: &mut [u8],
    ) -> io::Result<(usize, Option<Duration>)> {
        let mut iov = [IoSliceMut::new(buf)];
        let msg = recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(control),
            MsgFlags::MSG_DONTWAIT,
        )
        .map_err(io::Error::from)?;
        let stamp = msg.cmsgs().ok().and_then(|mut cmsgs| {
            cmsgs.find_map(|cmsg| match cmsg {
                ControlMessageOwned::ScmTimestampns(ts) => {
                    let (s, ns) = (ts.tv_sec(), ts.tv_nsec());
                    (s >= 0 && ns >= 0).then(|| Duration::new(s as u64, ns as u32))
                }
                _ => None,
            })
        });
        Ok((msg.bytes, stamp))
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    //! No kernel stamps: the stream reads as a plain one.
    use std::io;
    use std::time::Duration;

    use tokio::net::TcpStream;

    pub(super) fn enable(_stream: &TcpStream) -> bool {
        false
    }

    pub(super) fn control_buffer() -> Vec<u8> {
        Vec::new()
    }

    pub(super) fn recv(
        _stream: &TcpStream,
        _buf: &mut [u8],
        _control: &mut [u8],
    ) -> io::Result<(usize, Option<Duration>)> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_read_carries_the_kernel_receive_time_which_precedes_a_late_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let mut server = StampedStream::new(server);
        let stamp = server.stamp();
        assert!(stamp.latest().is_none());
        let mut got = [0u8; 16];
        if cfg!(target_os = "linux") {
            // The first socket on a machine to ask for stamps turns them on for the whole
            // host through a deferred kernel work item: segments that arrive before it ran are
            // not stamped. Wait (at most 2 s) until they are.
            let mut tries = 0;
            while stamp.latest().is_none() && tries < 200 {
                tries += 1;
                client.write_all(b"x").await.unwrap();
                assert_eq!(server.read(&mut got).await.unwrap(), 1);
                if stamp.latest().is_none() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        let before = Instant::now();
        client.write_all(b"hello").await.unwrap();
        let written = Instant::now();
        // Read late: the kernel's stamp stays at the arrival.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let n = server.read(&mut got).await.unwrap();
        let read = Instant::now();
        assert_eq!(&got[..n], b"hello");
        if cfg!(target_os = "linux") {
            let at = stamp.latest().expect("the kernel stamps loopback segments");
            // Clock conversion error allowance: the two clocks are read a few µs apart.
            let slack = Duration::from_millis(2);
            assert!(
                at + slack >= before,
                "{at:?} before the write at {before:?}"
            );
            assert!(
                at <= written + slack,
                "{at:?} after the write returned at {written:?}"
            );
            assert!(read - at >= Duration::from_millis(45), "{:?}", read - at);
        }
        // Writes pass through; EOF reads as 0.
        server.write_all(b"back").await.unwrap();
        let n = client.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"back");
        drop(client);
        assert_eq!(server.read(&mut got).await.unwrap(), 0);
    }

    #[test]
    fn a_stamp_from_the_future_or_too_old_is_not_trusted() {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        assert!(to_instant(wall + Duration::from_secs(60)).is_none());
        assert!(to_instant(wall - MAX_AGE - Duration::from_secs(1)).is_none());
        let recent = to_instant(wall - Duration::from_millis(5)).unwrap();
        let age = Instant::now() - recent;
        assert!(
            age >= Duration::from_millis(4) && age < Duration::from_millis(500),
            "{age:?}"
        );
    }
}
