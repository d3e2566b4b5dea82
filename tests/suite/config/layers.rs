//! Where values come from: flag > environment > file > default,
//! `condense config` showing all of it without a secret, and `--help`
//! grouped as the file is.

use clap::CommandFactory;

use super::{file, run, shown};

fn value<'t>(table: &'t toml::Table, section: &str, key: &str) -> &'t toml::Value {
    &table[section][key]
}

#[test]
fn help_groups_every_setting_under_its_section() {
    let ran = run(&["--help"], &[]);
    assert_eq!(ran.code, Some(0));
    let help = ran.stdout;
    // The settings, read from the command itself (not a copied list).
    for arg in condense::cli::Cli::command().get_arguments() {
        let Some((section, _)) = arg.get_id().as_str().split_once('.') else {
            continue;
        };
        let heading = help
            .find(&format!("[{section}]:\n"))
            .unwrap_or_else(|| panic!("no heading for [{section}] in:\n{help}"));
        let body = heading + section.len() + 4;
        let next = help[body..].find("]:\n").map_or(help.len(), |i| body + i);
        // The flag and its value's name, or a switch's end of line.
        let flag = format!("      --{}", arg.get_long().unwrap());
        let at = [" <", "\n"]
            .iter()
            .find_map(|end| help.find(&format!("{flag}{end}")))
            .unwrap_or_else(|| panic!("{flag} missing from --help"));
        assert!(heading < at && at < next, "{flag} is not under [{section}]");
    }
}

#[test]
fn a_flag_beats_the_environment_which_beats_the_file() {
    let (_dir, path) =
        file("[limits]\nmax_concurrency = 8\nmax_messages = 50\n[cache]\nttl = \"2d\"\n");
    let env = [("CONDENSE_MAX_CONCURRENCY", "9")];
    let (t, _) = shown(&["--config", &path, "--max-concurrency", "10"], &env);
    assert_eq!(
        value(&t, "limits", "max_concurrency").as_integer(),
        Some(10)
    );
    let (t, ran) = shown(&["--config", &path], &env);
    assert_eq!(value(&t, "limits", "max_concurrency").as_integer(), Some(9));
    assert_eq!(value(&t, "limits", "max_messages").as_integer(), Some(50));
    assert_eq!(value(&t, "cache", "ttl").as_str(), Some("2d"));
    assert!(
        ran.stdout
            .contains("max_concurrency = 9  # environment CONDENSE_MAX_CONCURRENCY")
    );
    assert!(
        ran.stdout
            .contains(&format!("max_messages = 50  # file {path}"))
    );
    let (t, _) = shown(&["--config", &path], &[]);
    assert_eq!(value(&t, "limits", "max_concurrency").as_integer(), Some(8));
    // The file may come from the environment too.
    let (t, _) = shown(&[], &[("CONDENSE_CONFIG", &path)]);
    assert_eq!(value(&t, "limits", "max_concurrency").as_integer(), Some(8));
    let (t, _) = shown(&[], &[]);
    assert_eq!(
        value(&t, "limits", "max_concurrency").as_integer(),
        Some(condense::Config::default().limits.max_concurrency as i64)
    );
}

#[test]
fn what_condense_config_prints_reads_back_as_the_same_configuration() {
    let env = [
        ("CONDENSE_LISTEN", "127.0.0.1:0"),
        ("CONDENSE_ALLOWED_HOSTS", "a.example,b.example"),
        ("CONDENSE_PROXY_SHADOW", "true"),
        ("CONDENSE_RATE_LIMIT_PER_SEC", "2.5"),
        ("CONDENSE_UPSTREAM_TIMEOUT", "45"),
    ];
    let (first, ran) = shown(&[], &env);
    let (_dir, path) = file(&ran.stdout);
    let (again, _) = shown(&["--config", &path], &[]);
    assert_eq!(first, again);
    assert_eq!(value(&again, "upstream", "timeout").as_integer(), Some(45));
    assert_eq!(value(&again, "proxy", "shadow").as_bool(), Some(true));
    assert_eq!(
        value(&again, "access", "allowed_hosts")
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn condense_config_hides_every_secret() {
    let env = [
        (
            "CONDENSE_UPSTREAM_URL",
            "https://user:SECRET-1@llm.example/v1",
        ),
        ("CONDENSE_UPSTREAM_API_KEY", "sk-SECRET-2"),
        (
            "CONDENSE_API_KEYS",
            "SECRET-3-abcdefghijkl llm,SECRET-4-abcdefghijkl",
        ),
        ("CONDENSE_PROXY_API_KEY", "SECRET-5"),
        ("CONDENSE_COUNT_API_KEY", "SECRET-6"),
        (
            "CONDENSE_DATABASE_URL",
            "postgres://app:SECRET-7@db/condense?sslmode=require",
        ),
        (
            "CONDENSE_PROXY_OPENAI_URL",
            "https://SECRET-8@api.example/v1",
        ),
    ];
    let (t, ran) = shown(&[], &env);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(!ran.stdout.contains("SECRET"), "{}", ran.stdout);
    assert!(!ran.stderr.contains("SECRET"), "{}", ran.stderr);
    // Hidden, not dropped: each line says where its value came from.
    for line in [
        "# api_key = (hidden)  # environment CONDENSE_UPSTREAM_API_KEY",
        "# api_keys = (2 hidden)  # environment CONDENSE_API_KEYS",
        "# database_url = \"postgres://[redacted]@db/condense?sslmode=require\" (credentials hidden)",
    ] {
        assert!(
            ran.stdout.contains(line),
            "{line} missing from\n{}",
            ran.stdout
        );
    }
    assert!(t["upstream"].get("api_key").is_none());
}

#[test]
fn settings_are_accepted_after_the_subcommand() {
    let (_dir, path) = file("[limits]\nmax_concurrency = 8\n");
    let ran = run(&["config", "--config", &path, "--max-messages", "12"], &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let t: toml::Table = toml::from_str(&ran.stdout).unwrap();
    assert_eq!(value(&t, "limits", "max_concurrency").as_integer(), Some(8));
    assert_eq!(value(&t, "limits", "max_messages").as_integer(), Some(12));
}
