//! `condense healthcheck`: asks a running condense whether it is alive.
//!
//! A container's `HEALTHCHECK` runs a program inside the image, and the
//! runtime image has no shell and no curl on purpose. So the binary checks
//! itself: it connects to the address the server is configured to listen on
//! (the same `CONDENSE_LISTEN` the container sets) and sends one
//! `GET /healthz`. It exits 0 when the answer is `200`, 1 otherwise.
//!
//! This is a deliberately tiny HTTP/1.1 client over `std::net`: one request,
//! `Connection: close`, only the status line read. reqwest would need an
//! async runtime for a probe that runs every few seconds, and would route
//! through an `HTTP_PROXY` from the environment unless told not to.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Seconds the whole check may take (connect, send, read the status line).
pub const DEFAULT_TIMEOUT_SECS: u64 = 3;

/// The path that answers `200` for as long as the process serves.
const PATH: &str = "/healthz";

/// Longest status line read; a real one is about 20 bytes.
const MAX_STATUS_LINE: usize = 256;

/// Why the server was judged unhealthy.
#[derive(Debug, thiserror::Error)]
pub enum Unhealthy {
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("talking to {addr}: {source}")]
    Io {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{addr} did not answer with HTTP: {line:?}")]
    NotHttp { addr: SocketAddr, line: String },
    #[error("{addr} answered {PATH} with status {status}")]
    Status { addr: SocketAddr, status: u16 },
}

/// The address to probe for a server that listens on `listen`: an
/// unspecified address (`0.0.0.0`, `[::]`, as in a container) is reached
/// through the loopback of the same family.
pub fn target(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// Sends `GET /healthz` to the server listening on `listen`; `Ok` with the
/// status when it is `200`. The whole exchange is bounded by `timeout`.
pub fn check(listen: SocketAddr, timeout: Duration) -> Result<u16, Unhealthy> {
    let addr = target(listen);
    let deadline = Instant::now() + timeout;
    let io = |source| Unhealthy::Io { addr, source };
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|source| Unhealthy::Connect { addr, source })?;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    stream.set_write_timeout(Some(left())).map_err(io)?;
    let request =
        format!("GET {PATH} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: */*\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(io)?;
    let line = read_status_line(&mut stream, left).map_err(io)?;
    let status = parse_status(&line).ok_or_else(|| Unhealthy::NotHttp {
        addr,
        line: line.clone(),
    })?;
    if status == 200 {
        Ok(status)
    } else {
        Err(Unhealthy::Status { addr, status })
    }
}

/// Reads up to the first CRLF (or [`MAX_STATUS_LINE`] bytes, or the end).
fn read_status_line(
    stream: &mut TcpStream,
    left: impl Fn() -> Duration,
) -> std::io::Result<String> {
    let mut line = Vec::with_capacity(64);
    let mut buf = [0u8; 64];
    while line.len() < MAX_STATUS_LINE && !line.windows(2).any(|w| w == b"\r\n") {
        stream.set_read_timeout(Some(left()))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        line.extend_from_slice(&buf[..n]);
    }
    let end = line
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(line.len());
    Ok(String::from_utf8_lossy(&line[..end.min(MAX_STATUS_LINE)]).into_owned())
}

/// The status code of an `HTTP/1.x NNN reason` line.
fn parse_status(line: &str) -> Option<u16> {
    let mut parts = line.split(' ');
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 {
        return None;
    }
    code.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_addresses_are_reached_over_loopback() {
        assert_eq!(
            target("0.0.0.0:8080".parse().unwrap()),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            target("[::]:9000".parse().unwrap()),
            "[::1]:9000".parse().unwrap()
        );
        assert_eq!(
            target("10.1.2.3:80".parse().unwrap()),
            "10.1.2.3:80".parse().unwrap()
        );
    }

    #[test]
    fn status_lines() {
        assert_eq!(parse_status("HTTP/1.1 200 OK"), Some(200));
        assert_eq!(parse_status("HTTP/1.0 503 Service Unavailable"), Some(503));
        assert_eq!(parse_status("HTTP/1.1 200"), Some(200));
        assert_eq!(parse_status("SSH-2.0-OpenSSH_9.2"), None);
        assert_eq!(parse_status("HTTP/1.1 2000 OK"), None);
        assert_eq!(parse_status(""), None);
    }
}
