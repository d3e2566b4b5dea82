//! Clients that hold connections without using them, on real sockets:
//! silent, slow, idle, not reading, too many, or announcing a body too
//! large. Every wait here is bounded generously (a minute): what is asserted
//! is what happens, never how fast.
use crate::support::server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Notify;
use tokio::time::timeout;

/// Longest wait for anything the server is expected to do.
const GENEROUS: Duration = Duration::from_secs(120);

fn config(header_secs: u64, idle_secs: u64, max_connections: usize) -> condense::Config {
    condense::Config {
        server: condense::config::ServerSettings {
            header_read_timeout: Duration::from_secs(header_secs),
            idle_timeout: Duration::from_secs(idle_secs),
            max_connections,
            ..Default::default()
        },
        cache: condense::config::CacheSettings {
            database_url: Some("off".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

async fn start(config: condense::Config) -> SocketAddr {
    let url = server::serve(config).await;
    url.trim_start_matches("http://").parse().unwrap()
}

async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.expect("connects")
}

/// A connection to `addr` from another loopback address (Linux routes all
/// of 127.0.0.0/8 to the loopback interface): a second client host.
async fn connect_from(source: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::from((source, 0)))
        .expect("binds a loopback source address");
    socket.connect(addr).await.expect("connects")
}

/// Waits for the server to close `s`, reading (and discarding) whatever it
/// sends first; panics if it is still open after [`GENEROUS`].
async fn closed_by_server(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let outcome = timeout(GENEROUS, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(
        outcome.is_ok(),
        "the server kept the connection open for {GENEROUS:?}"
    );
    got
}

/// One full response (head and `Content-Length` body) from `s`.
async fn response(s: &mut TcpStream) -> String {
    response_within(s, GENEROUS).await
}

async fn response_within(s: &mut TcpStream, limit: Duration) -> String {
    server::read_response(s, limit).await
}

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_timeout() {
    let addr = start(config(1, 300, 64)).await;
    let mut s = connect(addr).await;
    let got = closed_by_server(&mut s).await;
    assert!(got.is_empty(), "nothing is answered to nothing: {got:?}");
}

#[tokio::test]
async fn a_head_sent_a_byte_at_a_time_is_cut() {
    let addr = start(config(1, 300, 64)).await;
    let mut s = connect(addr).await;
    s.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let trickle = timeout(GENEROUS, async {
        let mut buf = [0u8; 1024];
        loop {
            // A header that never ends, one byte every 100 ms.
            if s.write_all(b"x").await.is_err() {
                return;
            }
            match timeout(Duration::from_millis(100), s.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => return,
                Ok(Ok(n)) => panic!("answered a head that never ended: {:?}", &buf[..n]),
                Err(_) => {}
            }
        }
    })
    .await;
    assert!(trickle.is_ok(), "a slowloris head kept the connection open");
}

#[tokio::test]
async fn a_kept_alive_connection_idles_for_the_idle_timeout_not_the_header_timeout() {
    // The header timeout (1 s) does not close a connection between requests;
    // the idle timeout (15 s, ten times the pause below plus room) does.
    let addr = start(config(1, 15, 64)).await;
    let mut s = connect(addr).await;
    s.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut s).await.starts_with("HTTP/1.1 200"));
    // Longer than the header timeout (a stalled machine only makes it
    // longer), a tenth of the idle one.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.write_all(HEALTHZ).await.unwrap();
    assert!(
        response(&mut s).await.starts_with("HTTP/1.1 200"),
        "still open after the header timeout"
    );
    let got = closed_by_server(&mut s).await;
    assert!(got.is_empty(), "{got:?}");
}

#[tokio::test]
async fn past_the_cap_a_connection_waits_until_one_closes() {
    let addr = start(config(300, 300, 2)).await;
    let first = connect(addr).await;
    let _second = connect(addr).await;
    let mut third = connect(addr).await;
    third.write_all(HEALTHZ).await.unwrap();
    let mut buf = [0u8; 64];
    // Not answered while both slots are held. (A wait, not a deadline: a
    // slower machine only makes this easier to pass.)
    let early = timeout(Duration::from_millis(1500), third.read(&mut buf)).await;
    assert!(early.is_err(), "served past the cap: {early:?}");
    drop(first);
    assert!(response(&mut third).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn silent_clients_at_the_cap_time_out_and_healthz_answers() {
    let addr = start(config(1, 300, 3)).await;
    let mut silent = Vec::new();
    for _ in 0..12 {
        silent.push(connect(addr).await);
    }
    let mut probe = connect(addr).await;
    probe.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut probe).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_after_the_idle_timeout() {
    // One slot: the probe is served only once the reader is cut.
    let addr = start(config(300, 1, 1)).await;
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut reader = socket.connect(addr).await.unwrap();
    // Some 20 MB of answers, far more than the socket buffers hold.
    let one = b"GET /playground/examples/large-04.openai HTTP/1.1\r\nHost: localhost\r\n\r\n";
    for _ in 0..40 {
        reader.write_all(one).await.unwrap();
    }
    let mut probe = connect(addr).await;
    probe.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut probe).await.starts_with("HTTP/1.1 200"));
    let got = closed_by_server(&mut reader).await;
    let answers = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200")
        .count();
    assert!(answers < 40, "all {answers} answers were written");
}

#[tokio::test]
async fn an_oversized_upload_is_refused_from_its_headers_with_no_100_continue() {
    let limit = 1024 * 1024;
    let addr = start({
        let mut config = config(30, 30, 64);
        config.limits.body_limit = limit;
        config
    })
    .await;
    for path in ["/v1/tokens", "/v1/compress", "/v1/messages"] {
        let mut s = connect(addr).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
            limit + 1
        );
        s.write_all(head.as_bytes()).await.unwrap();
        // No byte of the body is sent: the answer must come from the head.
        let answer = response(&mut s).await;
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{path}: {}",
            answer.lines().next().unwrap_or_default()
        );
        assert!(!answer.contains("100 Continue"), "{path}: {answer}");
        assert!(answer.contains("application/problem+json"), "{answer}");
    }
}

/// A head over the limits (bytes, or header fields) gets condense's 431
/// problem with a request id, not hyper's bare one: on a fresh connection
/// and after a request served on it; a head within them is served.
#[tokio::test]
async fn a_head_over_the_limits_gets_a_431_problem_with_a_request_id() {
    let addr = start(config(30, 30, 64)).await;
    let (bytes, fields) = (condense::serve::HEAD_BYTES, condense::serve::HEAD_FIELDS);
    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nx-big: {}\r\n\r\n",
        "a".repeat(bytes)
    );
    let many = format!(
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\n{}\r\n",
        (0..fields)
            .map(|i| format!("x-{i}: 1\r\n"))
            .collect::<String>()
    );
    for (what, head, served_first) in [
        ("bytes", &big, false),
        ("fields", &many, false),
        ("bytes after a request", &big, true),
    ] {
        let mut s = connect(addr).await;
        if served_first {
            s.write_all(HEALTHZ).await.unwrap();
            assert!(response(&mut s).await.starts_with("HTTP/1.1 200"));
        }
        s.write_all(head.as_bytes()).await.unwrap();
        let answer = response(&mut s).await;
        let (top, body) = answer.split_once("\r\n\r\n").unwrap();
        let top = top.to_ascii_lowercase();
        assert!(top.starts_with("http/1.1 431 "), "{what}: {top}");
        assert!(
            top.contains("content-type: application/problem+json"),
            "{what}: {top}"
        );
        assert!(top.contains("\r\nx-request-id: "), "{what}: {top}");
        let problem: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
        assert_eq!(problem["type"], "urn:condense:problem:head-too-large");
        assert_eq!(problem["status"], 431);
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains(&bytes.to_string()) && detail.contains(&fields.to_string()));
        // The connection is closed after the answer.
        closed_by_server(&mut s).await;
    }
    // Within the limits: served.
    let mut s = connect(addr).await;
    let within = format!(
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nx-big: {}\r\n\r\n",
        "a".repeat(bytes - 1024)
    );
    s.write_all(within.as_bytes()).await.unwrap();
    assert!(response(&mut s).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn a_body_within_the_limit_still_gets_100_continue() {
    let addr = start(config(30, 30, 64)).await;
    let mut s = connect(addr).await;
    let body = br#"{"text": "hello"}"#;
    let head = format!(
        "POST /v1/tokens HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = [0u8; 64];
    let n = timeout(GENEROUS, s.read(&mut buf)).await.unwrap().unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 100 Continue"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    s.write_all(body).await.unwrap();
    assert!(response(&mut s).await.starts_with("HTTP/1.1 200"));
}

use server::held_provider;

#[tokio::test]
async fn shutdown_finishes_the_request_in_flight_and_closes_idle_connections() {
    let (provider, arrived, release) = held_provider().await;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let config = {
        let mut config = config(300, 300, 64);
        config.proxy.anthropic_url = Some(provider);
        config
    };
    let (addr, server) = server::serve_until(config, async {
        let _ = stop_rx.await;
    })
    .await;
    let mut idle = connect(addr).await;
    idle.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut idle).await.starts_with("HTTP/1.1 200"));
    let mut busy = connect(addr).await;
    let body =
        br#"{"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}"#;
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    busy.write_all(head.as_bytes()).await.unwrap();
    busy.write_all(body).await.unwrap();
    timeout(GENEROUS, arrived.notified())
        .await
        .expect("the request reaches the provider");
    stop_tx.send(()).unwrap();
    let got = closed_by_server(&mut idle).await;
    assert!(got.is_empty(), "{got:?}");
    release.notify_one();
    assert!(response(&mut busy).await.starts_with("HTTP/1.1 200"));
    timeout(GENEROUS, server)
        .await
        .expect("the server stops once its connections are done")
        .unwrap()
        .unwrap();
}

/// The binary, run by `sh` under an open-files limit of `nofile`; killed on drop.
struct Limited(std::process::Child);

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary with `ulimit -n nofile` and returns it with its address
/// (read from its "listening" log line).
fn start_limited(nofile: u32, env: &[(&str, &str)]) -> (Limited, SocketAddr) {
    use std::io::BufRead;
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -n {nofile} && exec \"$0\""))
        .arg(env!("CARGO_BIN_EXE_condense"))
        .env("CONDENSE_LISTEN", "127.0.0.1:0")
        .env("CONDENSE_DATABASE_URL", "off")
        .env("CONDENSE_LOG_FORMAT", "text")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = Limited(cmd.spawn().expect("sh runs the binary"));
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let addr = loop {
        let line = rx
            .recv_timeout(GENEROUS)
            .expect("the binary logs its address");
        if let Some(at) = line.find("addr=") {
            let addr = line[at + 5..].split_whitespace().next().unwrap();
            break addr.parse().unwrap();
        }
    };
    (child, addr)
}

#[tokio::test]
async fn more_clients_than_open_files_never_stop_healthz() {
    // 320 open files hold (320 - 60) / 2 = 130 connections (60 kept for
    // the rest: `serve::reserved_fds`): 400 silent clients would exhaust
    // them without the cap.
    let (_server, addr) = start_limited(
        320,
        &[
            ("CONDENSE_HEADER_READ_TIMEOUT", "1s"),
            ("CONDENSE_MAX_CONNECTIONS", "1024"),
        ],
    );
    let mut silent = Vec::new();
    for _ in 0..400 {
        silent.push(connect(addr).await);
    }
    let mut probe = connect(addr).await;
    probe.write_all(HEALTHZ).await.unwrap();
    // Behind 400 silent clients, served 130 a second: some 3 s.
    let answer = response_within(&mut probe, 3 * GENEROUS).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_proxied_body_that_stops_coming_gets_the_request_time_limit() {
    // The provider is never reached: the body never arrives whole.
    let addr = start({
        let mut config = config(300, 300, 64);
        config.limits.request_timeout = Duration::from_secs(1);
        config.proxy.anthropic_url = Some("http://127.0.0.1:9".into());
        config
    })
    .await;
    let mut s = connect(addr).await;
    s.write_all(
        b"POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"model\":",
    )
    .await
    .unwrap();
    let answer = response(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("urn:condense:problem:timeout"), "{answer}");
}

#[tokio::test]
async fn a_request_whose_client_shut_its_write_side_is_answered() {
    // RFC 9112 §9.6: a client may half-close after its request and still
    // expects the answer. A body, so the request is more than a head.
    let addr = start(config(30, 30, 64)).await;
    let mut s = connect(addr).await;
    let body = br#"{"text": "hello"}"#;
    let head = format!(
        "POST /v1/tokens HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    s.shutdown().await.unwrap();
    let got = closed_by_server(&mut s).await;
    let answer = String::from_utf8_lossy(&got);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    // With its length, not chunked: the wrappers that hold a request's
    // marks until its answer is sent keep the body's size.
    assert!(answer.contains("content-length: "), "{answer:?}");
    assert!(answer.ends_with("]}"), "the whole body: {answer:?}");
}

#[tokio::test]
async fn past_its_cap_an_address_is_turned_away_while_another_is_served() {
    let addr = start({
        let mut config = config(300, 300, 64);
        config.server.max_connections_per_address = 2;
        config
    })
    .await;
    let mut first = connect(addr).await;
    first.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut first).await.starts_with("HTTP/1.1 200"));
    let _second = connect(addr).await;
    // The third from 127.0.0.1: answered 503 (or reset) and closed, unserved.
    let mut third = connect(addr).await;
    let got = closed_by_server(&mut third).await;
    let got = String::from_utf8_lossy(&got);
    assert!(
        got.is_empty() || got.starts_with("HTTP/1.1 503"),
        "past the cap: {got:?}"
    );
    let mut other = connect_from([127, 0, 0, 2], addr).await;
    other.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut other).await.starts_with("HTTP/1.1 200"));
    // A connection closed gives its address a place back (once the server
    // has seen the close: retried until then, within the generous bound).
    drop(first);
    let served = timeout(GENEROUS, async {
        loop {
            let mut s = connect(addr).await;
            let _ = s.write_all(HEALTHZ).await;
            let got = closed_or_answered(&mut s).await;
            if got.starts_with("HTTP/1.1 200") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(served.is_ok(), "the address never got its place back");
}

/// What the server sends on `s` until it closes it or a whole response has
/// come, whichever is first.
async fn closed_or_answered(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        if String::from_utf8_lossy(&got).contains("\r\n\r\n{") {
            break;
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn slow_headers_from_one_address_never_stop_healthz_from_another() {
    // Far more slow clients than the whole cap: without a cap per address
    // they would hold every slot for the 300 s header timeout.
    let addr = start({
        let mut config = config(300, 300, 32);
        config.server.max_connections_per_address = 8;
        config
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut s = connect(addr).await;
        // A head begun and never finished; turned-away ones fail quietly.
        let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: c").await;
        slow.push(s);
    }
    for _ in 0..3 {
        let mut probe = connect_from([127, 0, 0, 2], addr).await;
        probe.write_all(HEALTHZ).await.unwrap();
        assert!(response(&mut probe).await.starts_with("HTTP/1.1 200"));
    }
}

/// Four hosts at their per-address cap of a quarter held the whole cap, and
/// every other client waited in the accept queue for the 300 s header
/// timeout. While others hold connections, a host now takes at most what is
/// still free: the fourth and later find less, and a fifth host is served.
#[tokio::test]
async fn a_few_hosts_at_their_cap_never_fill_the_connection_cap() {
    let addr = start({
        let mut config = config(300, 300, 16);
        config.server.max_connections_per_address = 4;
        config
    })
    .await;
    let mut silent = Vec::new();
    for host in 2..=5 {
        for _ in 0..4 {
            // Turned-away ones are answered 503 and closed; kept all the same.
            silent.push(connect_from([127, 0, 0, host], addr).await);
        }
    }
    let mut other = connect_from([127, 0, 0, 9], addr).await;
    other.write_all(HEALTHZ).await.unwrap();
    let answer = response_within(&mut other, GENEROUS).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn the_probe_listener_answers_probes_when_the_main_one_is_full() {
    let app = condense::Application::build({
        let mut config = config(300, 300, 2);
        config.server.listen = "127.0.0.1:0".parse().unwrap();
        config.server.probe_listen = Some("127.0.0.1:0".parse().unwrap());
        config.server.max_connections_per_address = 0;
        config
    })
    .await
    .unwrap();
    let (addr, probes) = (app.local_addr(), app.probe_addr().unwrap());
    tokio::spawn(app.run_until_stopped());
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(connect(addr).await);
    }
    for (path, status) in [
        ("/healthz", "200"),
        ("/readyz", "200"),
        ("/metrics", "200"),
        ("/v1/models", "404"),
    ] {
        let mut s = connect(probes).await;
        let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let answer = response(&mut s).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{path}: {answer}"
        );
    }
    // One address cannot hold the probe listener either: silent clients
    // from 127.0.0.1 as many as its whole cap, and the orchestrator's
    // probe from another address is answered.
    for _ in 0..condense::Config::default().server.probe_max_connections {
        silent.push(connect(probes).await);
    }
    let mut s = connect_from([127, 0, 0, 2], probes).await;
    s.write_all(HEALTHZ).await.unwrap();
    let answer = response(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_low_open_files_limit_still_serves_connections_side_by_side() {
    // `ulimit -n 128`: kept-alive connections each answered while all stay
    // open. A budget of one connection would serve the first only, until
    // its 300 s idle timeout.
    let (_server, addr) = start_limited(128, &[("CONDENSE_IDLE_TIMEOUT", "300s")]);
    let mut open = Vec::new();
    for _ in 0..16 {
        let mut s = connect(addr).await;
        s.write_all(HEALTHZ).await.unwrap();
        assert!(response(&mut s).await.starts_with("HTTP/1.1 200"));
        open.push(s);
    }
}

/// Set when dropped: the provider's side of a call that condense ended.
struct Ended(Arc<Notify>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// A streamed answer that sends one event, then nothing, for ever.
struct Stalled {
    first: Option<axum::body::Bytes>,
    _ended: Ended,
}

impl hyper::body::Body for Stalled {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        match self.first.take() {
            Some(b) => std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(b)))),
            None => std::task::Poll::Pending,
        }
    }
}

/// A provider whose calls never finish: before its answer's head
/// (`streams: false`) or after one event of a stream. Says on `arrived`
/// that a call came in and on `ended` that condense ended it.
async fn stalling_provider(streams: bool) -> (String, Arc<Notify>, Arc<Notify>) {
    stalling_at("/v1/messages", streams).await
}

/// [`stalling_provider`] at `path`.
async fn stalling_at(path: &str, streams: bool) -> (String, Arc<Notify>, Arc<Notify>) {
    let (arrived, ended) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (a, e) = (arrived.clone(), ended.clone());
    let app = axum::Router::new().route(
        path,
        axum::routing::post(move || {
            let (a, e) = (a.clone(), e.clone());
            async move {
                let ended = Ended(e);
                a.notify_one();
                if !streams {
                    std::future::pending::<()>().await;
                }
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(axum::body::Body::new(Stalled {
                        first: Some("event: message_start\ndata: {}\n\n".into()),
                        _ended: ended,
                    }))
                    .unwrap()
            }
        }),
    );
    let url = server::serve_router(app).await;
    (url, arrived, ended)
}

/// A client that leaves a proxied call ends the provider's call at once,
/// whether the provider has answered its head or not: not at the
/// provider's next byte, nor after the idle timeout (300 s here).
#[tokio::test]
async fn a_client_that_leaves_a_proxied_call_ends_the_provider_call() {
    for streams in [false, true] {
        let (provider, arrived, ended) = stalling_provider(streams).await;
        let addr = start({
            let mut config = config(300, 300, 64);
            config.proxy.anthropic_url = Some(provider);
            config.proxy.idle_timeout = Duration::from_secs(300);
            config
        })
        .await;
        let mut s = connect(addr).await;
        let body = br#"{"model": "m", "max_tokens": 1, "stream": true, "messages": [{"role": "user", "content": "hi"}]}"#;
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        timeout(GENEROUS, arrived.notified())
            .await
            .expect("the call reached the provider");
        if streams {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&got).contains("message_start") {
                let n = timeout(GENEROUS, s.read(&mut buf)).await.unwrap().unwrap();
                assert!(n > 0, "closed early: {got:?}");
                got.extend_from_slice(&buf[..n]);
            }
        }
        drop(s);
        assert!(
            timeout(GENEROUS, ended.notified()).await.is_ok(),
            "the provider call outlived its client (streams: {streams})"
        );
    }
}

/// A client whose side closes while its API request is at work: the
/// request is given a grace to answer (a client that only half-closed gets
/// a quick answer), then the connection is closed and the request dropped,
/// not held to the request time limit (300 s here). The work here waits
/// on an upstream LLM that never answers.
#[tokio::test]
async fn a_request_whose_client_left_ends_after_the_grace() {
    let (upstream, arrived, _ended) = stalling_at("/chat/completions", false).await;
    let addr = start({
        let mut config = config(300, 300, 64);
        config.limits.request_timeout = Duration::from_secs(300);
        config.upstream.url = Some(upstream);
        config.upstream.model = "m".into();
        config.upstream.timeout = Duration::from_secs(300);
        config.upstream.max_retries = 0;
        config
    })
    .await;
    let mut s = connect(addr).await;
    let body = serde_json::to_vec(&serde_json::json!({
        "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                     {"role": "user", "content": "c"}],
        "force": true, "summarizer": {"strategy": "llm"},
        "config": {"min_recent_messages": 1, "llm_min_tokens": 0, "llm_min_total_tokens": 0}
    }))
    .unwrap();
    let head = format!(
        "POST /v1/compress HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(&body).await.unwrap();
    timeout(GENEROUS, arrived.notified())
        .await
        .expect("the summary call went out");
    s.shutdown().await.unwrap();
    let got = closed_by_server(&mut s).await;
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
}
