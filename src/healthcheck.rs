//! `condense healthcheck`: one `GET /healthz`, for a container image without
//! curl. Over `std::net`: reqwest would need a runtime and would honour
//! `HTTP_PROXY`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Seconds the whole check may take.
pub const DEFAULT_TIMEOUT_SECS: u64 = 3;

const PATH: &str = "/healthz";

/// Longest status line read; a real one is about 20 bytes.
const MAX_STATUS_LINE: u64 = 256;

/// The address to probe for `listen`: `0.0.0.0`/`[::]` through the loopback.
pub fn target(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// `Ok(200)`, or why the server is judged unhealthy, within `timeout` in all.
pub fn check(listen: SocketAddr, timeout: Duration) -> Result<u16, String> {
    let addr = target(listen);
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let left = || {
        let left = deadline.saturating_duration_since(Instant::now());
        Some(left.max(Duration::from_millis(1)))
    };
    let mut line = String::new();
    let mut talk = || {
        stream.set_write_timeout(left())?;
        // One write: a server may answer (and close) on the first bytes it reads.
        let head = format!("GET {PATH} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        stream.write_all(format!("{head}Accept: */*\r\n\r\n").as_bytes())?;
        stream.set_read_timeout(left())?;
        BufReader::new((&stream).take(MAX_STATUS_LINE)).read_line(&mut line)
    };
    talk().map_err(|e| format!("talking to {addr}: {e}"))?;
    let line = line.trim_end();
    match parse_status(line) {
        Some(200) => Ok(200),
        Some(status) => Err(format!("{addr} answered {PATH} with status {status}")),
        None => Err(format!("{addr} did not answer with HTTP: {line:?}")),
    }
}

/// The status code of an `HTTP/1.x NNN reason` line.
fn parse_status(line: &str) -> Option<u16> {
    let mut parts = line.split(' ');
    let (version, code) = (parts.next()?, parts.next()?);
    let ok = version.starts_with("HTTP/1.") && code.len() == 3;
    ok.then(|| code.parse().ok()).flatten()
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
