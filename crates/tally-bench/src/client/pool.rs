//! A pool of HTTP/1.1 connections to one address: idle connections are reused (LIFO) when
//! keep-alive is on; a new one is dialled with `TCP_NODELAY` and kernel receive stamps
//! ([`crate::rx_stamp`]) when none is idle. Each phase fills
//! the pool before it starts ([`Pool::dial_idle`]) so that dials do not land on its hot path
//! (docs/bench.md#connections).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use crate::rx_stamp::{RxStamp, StampedStream};

/// One connection.
#[derive(Debug)]
pub struct Conn {
    /// The request sender.
    pub sender: SendRequest<Full<Bytes>>,
    /// The local port (names the connection in records).
    pub id: u32,
    /// Requests it has carried before this one.
    pub uses: u32,
    /// The kernel's receive time of the connection's latest read.
    pub rx: Arc<RxStamp>,
}

/// The pool.
#[derive(Debug)]
pub struct Pool {
    addr: SocketAddr,
    keepalive: bool,
    connect_timeout: Duration,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    /// A pool for `addr`.
    pub fn new(addr: SocketAddr, keepalive: bool, connect_timeout: Duration) -> Self {
        Self {
            addr,
            keepalive,
            connect_timeout,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Whether connections are reused.
    pub fn keepalive(&self) -> bool {
        self.keepalive
    }

    /// An idle connection that is still usable, or a new one.
    pub async fn take(&self) -> std::io::Result<Conn> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let Some(mut conn) = idle else { break };
            if !conn.sender.is_closed() && conn.sender.ready().await.is_ok() {
                return Ok(conn);
            }
        }
        self.connect().await
    }

    async fn connect(&self) -> std::io::Result<Conn> {
        let stream = tokio::time::timeout(
            self.connect_timeout,
            tokio::net::TcpStream::connect(self.addr),
        )
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
        stream.set_nodelay(true)?;
        let id = u32::from(stream.local_addr()?.port());
        let stream = StampedStream::new(stream);
        let rx = stream.stamp();
        let (sender, connection) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Conn {
            sender,
            id,
            uses: 0,
            rx,
        })
    }

    /// Connections idle now.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Dials one connection and leaves it idle (keep-alive only), for a warm pool.
    pub async fn dial_idle(&self) -> std::io::Result<()> {
        if self.keepalive {
            let conn = self.connect().await?;
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
        Ok(())
    }

    /// Returns a connection whose exchange completed (dropped without keep-alive).
    pub fn give_back(&self, mut conn: Conn) {
        if self.keepalive && !conn.sender.is_closed() {
            conn.uses += 1;
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
    }
}
