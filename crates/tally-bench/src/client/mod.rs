//! The HTTP client: the endpoint, a pool of HTTP/1.1 connections with `TCP_NODELAY`, and one
//! request's exchange, stamped on the run clock as each frame arrives ([`exchange`]).
//!
//! Our own pool over `hyper::client::conn::http1` rather than a generic pooled client, so that
//! each failure is classified by where it happened (connect → `unreachable`; lost before the
//! status line → `delivery_unknown`) and each record names its connection and whether it was
//! reused. No TLS, no proxies from the environment, no redirects, no retries.

pub mod exchange;
mod pool;

use std::net::SocketAddr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use pool::Pool;

use crate::error::SpecError;

/// The endpoint, parsed from an OpenAI base URL such as `http://127.0.0.1:8000/v1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port` as written (the `Host` header).
    pub authority: String,
    /// The base path (`/v1`), no trailing slash.
    pub base_path: String,
    /// The URL with any credentials removed (for messages and records).
    pub display: String,
}

impl Endpoint {
    /// Parses `http://HOST[:PORT][/PATH]`; refuses other schemes.
    pub fn parse(url: &str) -> Result<Self, SpecError> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            SpecError::new(
                &scrub_userinfo(url),
                "only http:// URLs are supported (no TLS)",
            )
        })?;
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        let authority = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        if authority.is_empty() {
            return Err(SpecError::new(&scrub_userinfo(url), "no host"));
        }
        let authority = if authority.contains(':') && !authority.ends_with(']') {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let base_path = format!("/{}", path.trim_end_matches('/')).replace("//", "/");
        let base_path = if base_path == "/" {
            String::new()
        } else {
            base_path
        };
        Ok(Self {
            display: format!("http://{authority}{base_path}"),
            authority,
            base_path,
        })
    }

    /// Resolves the host once (every connection goes to the same address).
    pub async fn resolve(&self) -> Result<SocketAddr, String> {
        tokio::net::lookup_host(&self.authority)
            .await
            .map_err(|err| format!("cannot resolve {}: {err}", self.authority))?
            .next()
            .ok_or_else(|| format!("{} resolves to no address", self.authority))
    }
}

/// Removes `user:password@` from a URL.
pub fn scrub_userinfo(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Removes a secret from a text and caps it at 512 bytes (on a character boundary).
pub fn scrub(text: &str, secret: Option<&str>) -> String {
    let mut text = match secret.filter(|s| !s.is_empty()) {
        Some(secret) => text.replace(secret, "***"),
        None => text.to_owned(),
    };
    if text.len() > 512 {
        let mut cut = 512;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

/// The run's clock: one monotonic anchor, and the wall time read around it.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    /// The monotonic anchor.
    pub anchor: Instant,
    /// Wall-clock ns since the Unix epoch at the anchor (midpoint of two reads).
    pub wall_anchor_ns: u64,
    /// Half the spread of the two wall reads, ns.
    pub uncertainty_ns: u64,
}

impl RunClock {
    /// Takes the anchor now.
    pub fn start() -> Self {
        let wall = || {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        };
        let before = wall();
        let anchor = Instant::now();
        let after = wall();
        Self {
            anchor,
            wall_anchor_ns: before / 2 + after / 2,
            uncertainty_ns: after.saturating_sub(before).div_ceil(2),
        }
    }

    /// ns since the anchor.
    pub fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.anchor).as_nanos() as u64
    }

    /// ns since the anchor, now.
    pub fn now_ns(&self) -> u64 {
        self.ns(Instant::now())
    }

    /// The instant of a run-clock value.
    pub fn instant(&self, ns: u64) -> Instant {
        self.anchor + std::time::Duration::from_nanos(ns)
    }

    /// Wall-clock ns of a run-clock value.
    pub fn wall_ns(&self, ns: u64) -> u64 {
        self.wall_anchor_ns + ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_base_urls_and_strips_credentials() {
        let e = Endpoint::parse("http://user:secret@127.0.0.1:8000/v1/").unwrap();
        assert_eq!(e.authority, "127.0.0.1:8000");
        assert_eq!(e.base_path, "/v1");
        assert_eq!(e.display, "http://127.0.0.1:8000/v1");
        assert_eq!(
            Endpoint::parse("http://localhost").unwrap().authority,
            "localhost:80"
        );
        assert_eq!(Endpoint::parse("http://localhost:9").unwrap().base_path, "");
        let err = Endpoint::parse("https://u:secret@h/v1")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn scrubs_secrets_and_caps() {
        assert_eq!(scrub("key sk-123 leaked", Some("sk-123")), "key *** leaked");
        let long = "é".repeat(400);
        let capped = scrub(&long, None);
        assert!(capped.len() <= 512 && capped.len() >= 510);
    }
}
