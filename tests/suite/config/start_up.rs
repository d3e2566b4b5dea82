//! A value that cannot stand stops start-up with one line that names the
//! setting as it was written, and exit status 2: never a panic, never a
//! process that starts and then serves nothing.

use super::{file, run};

/// Starts the server with `env` (and a listen address and no cache, so a
/// configuration that slipped through would serve rather than end), and
/// returns the one line it wrote.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut all = vec![
        ("CONDENSE_LISTEN", "127.0.0.1:0"),
        ("CONDENSE_DATABASE_URL", "off"),
    ];
    all.extend_from_slice(env);
    let ran = run(args, &all);
    assert_eq!(
        ran.code,
        Some(2),
        "{args:?} {env:?}: {}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(ran.stdout.is_empty(), "{}", ran.stdout);
    let lines: Vec<&str> = ran.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, not {:?}", ran.stderr);
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
    let line = lines[0];
    line.strip_prefix("condense: invalid configuration: ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_string()
}

#[test]
fn each_case_of_the_issue_is_one_line_naming_the_setting() {
    // Each of these panicked, wrapped, or started a process that failed
    // every request, before start-up checked the values.
    let cases: &[(&str, &str, &str)] = &[
        (
            "CONDENSE_DB_ACQUIRE_TIMEOUT",
            "2147483648ms",
            "is above its maximum of 1m",
        ),
        (
            "CONDENSE_REQUEST_TIMEOUT",
            "0",
            "is below its minimum of 1s",
        ),
        (
            "CONDENSE_CACHE_TTL",
            "213503982334601d",
            "too long a duration",
        ),
        (
            "CONDENSE_CACHE_TTL",
            "3651d",
            "is above its maximum of 3650d",
        ),
        (
            "CONDENSE_MAX_CONCURRENCY",
            "2305843009213693952",
            "is above its maximum of 4096",
        ),
        (
            "CONDENSE_UPSTREAM_MAX_CONCURRENCY",
            "18446744073709551615",
            "is above its maximum of 4096",
        ),
        (
            "CONDENSE_MAX_CONNECTIONS",
            "18446744073709551615",
            "is above its maximum of 65536",
        ),
        (
            "CONDENSE_HEADER_READ_TIMEOUT",
            "18446744073709551615s",
            "too long a duration",
        ),
        (
            "CONDENSE_HEADER_READ_TIMEOUT",
            "1d",
            "is above its maximum of 10m",
        ),
        (
            "CONDENSE_UPSTREAM_RETRY_BUDGET",
            "18446744073709551615",
            "too long a duration",
        ),
        (
            "CONDENSE_UPSTREAM_RETRY_BUDGET",
            "100000",
            "is above its maximum of 1d",
        ),
        (
            "CONDENSE_DB_MAX_CONNECTIONS",
            "4294967295",
            "is above its maximum of 1000",
        ),
    ];
    for (var, value, problem) in cases {
        let line = refused(&[], &[(var, value)]);
        assert!(
            line.starts_with(&format!("{var}={value}")) && line.ends_with(problem),
            "{var}={value}: {line}"
        );
    }
}

type Env = &'static [(&'static str, &'static str)];

#[test]
fn a_bad_value_of_each_kind_is_one_line() {
    // (environment, the line's start, something the line says)
    let cases: &[(Env, &str, &str)] = &[
        (
            &[("CONDENSE_CACHE_TTL", "30")],
            "CONDENSE_CACHE_TTL=30: ",
            "needs a unit",
        ),
        (
            &[("CONDENSE_IDLE_TIMEOUT", "5 minutes")],
            "CONDENSE_IDLE_TIMEOUT=5 minutes: ",
            "not a unit of time",
        ),
        (
            &[("CONDENSE_MAX_MESSAGES", "-1")],
            "CONDENSE_MAX_MESSAGES=-1: ",
            "expected a whole number",
        ),
        (
            &[("CONDENSE_LOG_FORMAT", "xml")],
            "CONDENSE_LOG_FORMAT=xml: ",
            "text, json",
        ),
        (
            &[("CONDENSE_RATE_LIMIT_PER_SEC", "NaN")],
            "CONDENSE_RATE_LIMIT_PER_SEC=NaN",
            "not a number",
        ),
        (
            &[("CONDENSE_LISTEN", "localhost")],
            "CONDENSE_LISTEN=localhost: ",
            "address",
        ),
        (
            &[
                ("CONDENSE_UPSTREAM_URL", "http://127.0.0.1:9/v1"),
                ("CONDENSE_UPSTREAM_TIMEOUT", "10m"),
            ],
            "CONDENSE_UPSTREAM_TIMEOUT=10m must be shorter than CONDENSE_REQUEST_TIMEOUT=120s (the default)",
            "must fit in a request",
        ),
        (
            &[("CONDENSE_CACHE_CHECK_TIMEOUT", "10s")],
            "CONDENSE_CACHE_CHECK_TIMEOUT=10s must not be longer than CONDENSE_CACHE_CHECK_INTERVAL=5s",
            "before the next",
        ),
    ];
    for (env, start, says) in cases {
        let line = refused(&[], env);
        assert!(
            line.starts_with(start) && line.contains(says),
            "{env:?}: {line}"
        );
    }
}

#[test]
fn a_url_is_checked_and_its_password_not_shown() {
    let line = refused(
        &[],
        &[("CONDENSE_DATABASE_URL", "mysql://app:hunter2@db/x")],
    );
    assert!(
        line.starts_with("CONDENSE_DATABASE_URL=mysql://[redacted]@db/x is not a postgres://"),
        "{line}"
    );
    let line = refused(&[], &[("CONDENSE_PROXY_OPENAI_URL", "api.openai.com/v1")]);
    assert!(
        line.starts_with("CONDENSE_PROXY_OPENAI_URL=api.openai.com/v1 is not"),
        "{line}"
    );
}

#[test]
fn a_bad_flag_or_file_value_is_named_as_written() {
    let line = refused(&["--max-concurrency=100000"], &[]);
    assert_eq!(
        line,
        "--max-concurrency=100000 is above its maximum of 4096"
    );
    let line = refused(&["--db-acquire-timeout", "70000ms"], &[]);
    assert_eq!(
        line,
        "--db-acquire-timeout=70000ms is above its maximum of 1m"
    );

    let (_dir, path) = file("[limits]\nmax_concurrency = 100000\n");
    let line = refused(&["--config", &path], &[]);
    assert_eq!(
        line,
        format!("{path}: [limits] max_concurrency = 100000 is above its maximum of 4096")
    );
    let (_dir, path) = file("[cache]\nttl = 30\n");
    let line = refused(&["--config", &path], &[]);
    assert!(
        line.starts_with(&format!("{path}: [cache] ttl = 30: ")),
        "{line}"
    );
}

#[test]
fn a_file_that_is_not_settings_is_one_line() {
    for (text, says) in [
        (
            "[limits]\nmax_concurency = 8\n",
            "[limits] max_concurency is not a setting",
        ),
        ("[limit]\nmax_concurrency = 8\n", "[limit] is not a section"),
        (
            "[profiles.quick]\nmax_messages_before_summary = 15\n",
            "[models] profiles_file",
        ),
        (
            "[server]\nmax_connections = \"many\"\n",
            "max_connections = many: expected a whole number",
        ),
        (
            "[server]\nidle_timeout = 1.5\n",
            "idle_timeout = 1.5: expected a duration such as 90s or 500ms",
        ),
        ("listen = \"127.0.0.1:0\"\n", "`listen` belongs in [server]"),
        (
            "[proxy]\nshadow = \"yes\"\n",
            "[proxy] shadow: expected true or false",
        ),
        ("[server]\nlisten = \n", ":2: "),
    ] {
        let (_dir, path) = file(text);
        let line = refused(&["--config", &path], &[]);
        assert!(
            line.starts_with(&path) && line.contains(says),
            "{text:?}: {line}"
        );
    }
    let line = refused(&["--config", "/nonexistent/condense.toml"], &[]);
    assert!(
        line.starts_with("--config=/nonexistent/condense.toml: "),
        "{line}"
    );
}

#[test]
fn a_failure_to_start_is_one_line_naming_the_file_field_and_value() {
    let (_dir, path) = file("[profiles.x]\nmax_messages_before_summary = 0\n");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (env, says) in [
        (
            ("CONDENSE_PROFILES_FILE", path.as_str()),
            format!(
                "{path}: profile `x`: max_messages_before_summary must be between 1 and 1000000, got 0"
            ),
        ),
        (
            ("CONDENSE_LISTEN", taken.as_str()),
            format!("binding {taken}: "),
        ),
    ] {
        let ran = run(
            &[],
            &[
                ("CONDENSE_LISTEN", "127.0.0.1:0"),
                ("CONDENSE_DATABASE_URL", "off"),
                ("RUST_BACKTRACE", "1"),
                env,
            ],
        );
        assert_eq!(ran.code, Some(2), "{env:?}: {}", ran.stderr);
        let lines: Vec<&str> = ran.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line, not {:?}", ran.stderr);
        assert!(
            lines[0].starts_with("condense: cannot start: ") && lines[0].contains(&says),
            "{env:?}: {}",
            lines[0]
        );
    }
}

/// `condense config` reads the files the server reads: "valid" means the
/// server would start, and a file it would refuse is one line and exit 2.
#[test]
fn condense_config_checks_the_files_the_server_reads() {
    let (_dir, path) = file("[profiles.x]\nmax_messages_before_summary = 0\n");
    let (_keys_dir, keys) = file("not a key file [");
    for (env, says) in [
        (
            ("CONDENSE_PROFILES_FILE", path.as_str()),
            format!(
                "{path}: profile `x`: max_messages_before_summary must be between 1 and 1000000, got 0"
            ),
        ),
        (("CONDENSE_MODELS_FILE", keys.as_str()), keys.clone()),
    ] {
        let ran = run(&["config"], &[("CONDENSE_DATABASE_URL", "off"), env]);
        assert_eq!(ran.code, Some(2), "{env:?}: {}", ran.stderr);
        let lines: Vec<&str> = ran.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line, not {:?}", ran.stderr);
        assert!(
            lines[0].starts_with("condense: invalid configuration: ") && lines[0].contains(&says),
            "{env:?}: {}",
            lines[0]
        );
    }
    let ran = run(&["config"], &[("CONDENSE_DATABASE_URL", "off")]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
}
