//! The container image, without a container engine (none runs on our
//! machines): the Dockerfile's runtime stage is read, and the built binary is
//! started with exactly the environment that stage sets, in a temp dir
//! standing for its working directory. It must serve there, and its
//! `HEALTHCHECK` command must pass against it and fail when nothing listens.
//! `scripts/test.sh` also lints the Dockerfile with hadolint.
use crate::support::process;

use std::net::SocketAddr;
use std::path::Path;

use serde_json::{Value, json};

/// One `FROM` stage: its image and its instructions (keyword, arguments).
struct Stage {
    from: String,
    instructions: Vec<(String, String)>,
}

impl Stage {
    fn all(&self, keyword: &'static str) -> impl Iterator<Item = &str> {
        self.instructions
            .iter()
            .filter(move |(k, _)| k == keyword)
            .map(|(_, a)| a.as_str())
    }

    fn last(&self, keyword: &'static str) -> Option<&str> {
        self.all(keyword).last()
    }

    /// `ENV` as the image sets it, in order (`KEY=value …`, quotes allowed).
    fn env(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for args in self.all("ENV") {
            for word in shell_words(args) {
                let (k, v) = word
                    .split_once('=')
                    .unwrap_or_else(|| panic!("ENV takes KEY=value pairs here: {args}"));
                out.retain(|(old, _)| old != k);
                out.push((k.to_string(), v.to_string()));
            }
        }
        out
    }

    /// An exec-form (JSON array) command.
    fn exec_form(&self, keyword: &'static str) -> Vec<String> {
        let args = self
            .last(keyword)
            .unwrap_or_else(|| panic!("the runtime stage has no {keyword}"));
        exec_array(args, keyword)
    }
}

fn exec_array(args: &str, what: &str) -> Vec<String> {
    serde_json::from_str(args.trim())
        .unwrap_or_else(|e| panic!("{what} must be in exec form (a JSON array), not {args:?}: {e}"))
}

/// The stages of the repository's Dockerfile, continuation lines joined and
/// comments dropped, as Docker reads them.
fn dockerfile() -> Vec<Stage> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile"))
        .expect("the Dockerfile is readable");
    let mut logical = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                logical.push(std::mem::take(&mut current));
            }
        }
    }
    let mut stages: Vec<Stage> = Vec::new();
    for line in logical.into_iter().filter(|l| !l.trim().is_empty()) {
        let (keyword, args) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let keyword = keyword.to_ascii_uppercase();
        let args = args.trim().to_string();
        if keyword == "FROM" {
            stages.push(Stage {
                from: args,
                instructions: Vec::new(),
            });
        } else {
            stages
                .last_mut()
                .expect("instructions come after a FROM")
                .instructions
                .push((keyword, args));
        }
    }
    stages
}

/// Splits on whitespace outside double quotes, dropping the quotes.
fn shell_words(s: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

fn runtime() -> Stage {
    dockerfile().pop().expect("the Dockerfile has a stage")
}

/// The image's `CONDENSE_LISTEN`, which must be on every interface.
fn listen_of(env: &[(String, String)]) -> SocketAddr {
    let listen = env
        .iter()
        .find(|(k, _)| k == "CONDENSE_LISTEN")
        .map(|(_, v)| v.clone())
        .expect("the image sets CONDENSE_LISTEN");
    listen.parse().expect("CONDENSE_LISTEN is an address")
}

/// `env` with `CONDENSE_LISTEN` moved to `port`, on the same interface.
fn on_port(env: &[(String, String)], port: u16) -> Vec<(String, String)> {
    let ip = listen_of(env).ip();
    env.iter()
        .map(|(k, v)| match k.as_str() {
            "CONDENSE_LISTEN" => (k.clone(), SocketAddr::new(ip, port).to_string()),
            _ => (k.clone(), v.clone()),
        })
        .collect()
}

/// The image's command with its path in the image replaced by the built binary.
fn local_args(command: &[String], installed_at: &str) -> Vec<String> {
    assert_eq!(
        command.first().map(String::as_str),
        Some(installed_at),
        "the command runs the installed binary"
    );
    command[1..].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_with_exactly_the_images_environment() {
    let image = runtime();
    let env = image.env();
    let listen = listen_of(&env);
    assert!(
        listen.ip().is_unspecified(),
        "inside a container condense must listen on every interface, not {listen}"
    );
    let exposed: Vec<u16> = image
        .all("EXPOSE")
        .flat_map(|a| a.split_whitespace())
        .map(|p| {
            p.trim_end_matches("/tcp")
                .parse()
                .expect("EXPOSE takes ports")
        })
        .collect();
    assert_eq!(exposed, [listen.port()], "EXPOSE is the listening port");

    let entrypoint = image.exec_form("ENTRYPOINT");
    let installed_at = entrypoint[0].clone();
    let mut args = local_args(&entrypoint, &installed_at);
    if image.last("CMD").is_some() {
        args.extend(image.exec_form("CMD"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // The one change: port 0 instead of the image's port. Several test runs
    // (and other services) share this machine, so a fixed port may be taken;
    // the interface stays the image's. The working directory is a temp dir
    // standing for the image's WORKDIR, where the SQLite cache goes.
    let workdir = tempfile::tempdir().unwrap();
    let server = process::Process::start(&args, &on_port(&env, 0), workdir.path());
    assert!(
        server.addr.ip().is_unspecified(),
        "listens on every interface: {}",
        server.addr
    );
    let base = server.url();

    let client = reqwest::Client::new();
    let health = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.json::<Value>().await.unwrap()["status"], "ok");
    // A count made by OpenAI's tiktoken (tests/fixtures/golden/tokens.json).
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden/tokens.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let case = &golden["texts"][0];
    let tokens = client
        .post(format!("{base}/v1/tokens"))
        .json(&json!({"text": case["text"], "encoding": "o200k_base"}))
        .send()
        .await
        .unwrap();
    assert_eq!(tokens.status(), 200);
    assert_eq!(
        tokens.json::<Value>().await.unwrap()["total_tokens"],
        case["o200k_base"]
    );
    let logs = server.output();
    assert!(
        logs.lines().any(|l| serde_json::from_str::<Value>(l)
            .is_ok_and(|v| v["message"] == "condense listening")),
        "the image's log format (JSON lines) is in force:\n{logs}"
    );
    assert!(
        workdir.path().join("condense-cache.sqlite3").is_file(),
        "with no database configured, the cache file is in the working directory (the volume)"
    );

    // The HEALTHCHECK, run as the runtime runs it: the same environment,
    // with the port the server really listens on.
    let healthcheck = image
        .last("HEALTHCHECK")
        .expect("the image has a HEALTHCHECK");
    let at = healthcheck
        .find("CMD")
        .expect("HEALTHCHECK … CMD [command]");
    let check = exec_array(&healthcheck[at + 3..], "HEALTHCHECK CMD");
    let check_args = local_args(&check, &installed_at);
    let check_args: Vec<&str> = check_args.iter().map(String::as_str).collect();
    let out = process::run(&check_args, &on_port(&env, server.addr.port()));
    assert!(
        out.status.success(),
        "the health check passes against a serving condense: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = process::run(&check_args, &on_port(&env, process::unused_port()));
    assert_eq!(
        out.status.code(),
        Some(1),
        "the health check fails when nothing listens: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("unhealthy"));
}

#[test]
fn the_healthcheck_fails_against_something_that_is_not_condense() {
    // A port that accepts and answers, but not 200 on /healthz.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in listener.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            let _ =
                conn.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let env = vec![("CONDENSE_LISTEN".to_string(), format!("127.0.0.1:{port}"))];
    let out = process::run(&["healthcheck"], &env);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("status 503"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_dockerfile_builds_in_stages_and_runs_as_a_non_root_user() {
    let stages = dockerfile();
    assert!(stages.len() >= 2, "a build stage and a runtime stage");
    let build = &stages[0];
    // Dependencies are compiled before the sources are copied, so a change
    // to condense's code reuses that layer.
    let copies_src = build
        .instructions
        .iter()
        .position(|(k, a)| k == "COPY" && a.starts_with("src "))
        .expect("the build stage copies src");
    let builds_deps = build
        .instructions
        .iter()
        .position(|(k, a)| k == "RUN" && a.contains("cargo build"))
        .expect("the build stage runs cargo build");
    assert!(
        builds_deps < copies_src,
        "a dependency layer is built before src is copied"
    );
    let image = stages.last().unwrap();
    assert!(
        image.from.contains("distroless") || image.from.contains("slim"),
        "a slim or distroless runtime: {}",
        image.from
    );
    let user = image.last("USER").expect("the runtime stage sets USER");
    let uid = user.split(':').next().unwrap();
    assert!(
        !matches!(uid, "root" | "0"),
        "the runtime user is not root: {user}"
    );
    // Configuration comes from the environment: no config file is copied
    // into the image and the command takes no flags.
    assert!(
        image.exec_form("ENTRYPOINT").len() == 1 && image.last("CMD").is_none(),
        "the command takes no flags"
    );
}

/// `.dockerignore` as Docker applies it (the last matching pattern wins; a
/// pattern also covers what is under the paths it names).
fn ignored(patterns: &[String], path: &str) -> bool {
    let mut out = false;
    for p in patterns {
        let (negated, p) = match p.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, p.as_str()),
        };
        let p = p.trim_matches('/');
        let covers = path.split('/').count() >= p.split('/').count()
            && p.split('/')
                .zip(path.split('/'))
                .all(|(pat, seg)| glob(pat, seg));
        if covers {
            out = !negated;
        }
    }
    out
}

/// `*` within one path segment.
fn glob(pattern: &str, segment: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == segment,
        Some((head, tail)) => {
            segment.starts_with(head)
                && segment.len() >= head.len() + tail.len()
                && segment.ends_with(tail)
        }
    }
}

#[test]
fn the_build_context_holds_everything_the_dockerfile_copies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let patterns: Vec<String> = std::fs::read_to_string(root.join(".dockerignore"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    // The checker itself: it must see an exclusion and an exception.
    assert!(ignored(&patterns, "target/release/condense"));
    assert!(ignored(&patterns, "tests/suite/main.rs"));
    assert!(!ignored(&patterns, "data/threads/small-00.openai.json"));

    let mut checked = 0;
    for stage in dockerfile() {
        for args in stage.all("COPY") {
            if args.starts_with("--from") {
                continue;
            }
            let words: Vec<&str> = args
                .split_whitespace()
                .filter(|w| !w.starts_with("--"))
                .collect();
            for source in &words[..words.len() - 1] {
                assert!(root.join(source).exists(), "COPY {source}: no such path");
                assert!(
                    !ignored(&patterns, source),
                    "COPY {source}: .dockerignore leaves it out of the build context"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 5, "the Dockerfile's COPY lines were found");
}

/// `major.minor` of a version string (`1.88`, `1.85.0`).
fn minor(v: &str) -> (u32, u32) {
    let mut it = v
        .split('.')
        .map(|n| n.parse::<u32>().expect("a version number"));
    (it.next().unwrap(), it.next().unwrap_or(0))
}

/// `rust-version` in Cargo.toml is true: no locked dependency built for
/// this machine needs a newer toolchain, the code's let chains (stable in
/// 1.88) are within it, and the image builds with a toolchain at least that
/// new. (No older toolchain can be installed on our machines to build with;
/// clippy's `incompatible_msrv`, on by default and denied by the test
/// command, checks the standard library's APIs against it.)
#[test]
fn the_declared_rust_version_is_true() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let declared = minor(env!("CARGO_PKG_RUST_VERSION"));
    // The packages built here, for this machine: the others (Windows-only
    // crates) are neither built nor downloaded, and `--offline` would fail
    // on them on a machine that never fetched them.
    let host = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    let host = String::from_utf8(host.stdout).unwrap();
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host");
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", host])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    for p in meta["packages"].as_array().unwrap() {
        if let Some(v) = p["rust_version"].as_str() {
            assert!(
                minor(v) <= declared,
                "{} {} needs Rust {v}, above rust-version {declared:?}",
                p["name"],
                p["version"]
            );
        }
    }
    let chains = rust_files(&root.join("src"))
        .iter()
        .any(|f| std::fs::read_to_string(f).unwrap().contains("&& let "));
    if chains {
        assert!(declared >= (1, 88), "let chains need Rust 1.88");
    }
    let image = dockerfile()[0].from.clone();
    let tag = image
        .split_once("rust:")
        .and_then(|(_, t)| t.split('-').next())
        .expect("the build stage is a rust image");
    assert!(minor(tag) >= declared, "{image} is older than rust-version");
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out
}
