//! A TCP relay between condense and a real server, that counts what clients
//! send through it and can be cut: what a test needs to see how often
//! condense talks to its database, and how it behaves when the database is
//! gone.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub struct Relay {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

struct Shared {
    /// Whether connections are relayed; when false, open ones are cut and
    /// new ones closed at once (a stopped server).
    up: watch::Sender<bool>,
    /// Chunks clients sent towards the server: each query is at least one.
    chunks: AtomicU64,
}

impl Relay {
    /// A relay on a free loopback port to `upstream`, up.
    pub async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            up: watch::channel(true).0,
            chunks: AtomicU64::new(0),
        });
        let s = shared.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *s.up.borrow() {
                    tokio::spawn(pipe(client, upstream, s.clone()));
                }
            }
        });
        Relay {
            addr,
            shared,
            accept,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Chunks sent towards the server so far.
    pub fn chunks(&self) -> u64 {
        self.shared.chunks.load(Ordering::SeqCst)
    }

    pub fn set_up(&self, up: bool) {
        self.shared.up.send_replace(up);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
        self.set_up(false);
    }
}

async fn pipe(client: TcpStream, upstream: SocketAddr, shared: Arc<Shared>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let mut down = shared.up.subscribe();
    let (cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let counted = async {
        let mut cr = cr;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match cr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    shared.chunks.fetch_add(1, Ordering::SeqCst);
                    if sw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::select! {
        _ = async { tokio::join!(counted, tokio::io::copy(&mut sr, &mut cw)) } => {}
        _ = down.wait_for(|up| !*up) => {}
    }
}
