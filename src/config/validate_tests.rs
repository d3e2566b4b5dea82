//! Tests of `validate`: the ranges and the cross-checks.

use super::*;

#[test]
fn the_defaults_are_valid() {
    assert_eq!(Config::default().validate(), Ok(()));
    for b in bounds(&Config::default()) {
        assert!(
            b.check().is_ok(),
            "{}: {} not in {}",
            b.id,
            b.value,
            b.range()
        );
    }
}

#[test]
fn a_value_out_of_range_names_its_variable_and_the_bound() {
    let mut c = Config::default();
    c.cache.db_acquire_timeout = Duration::from_millis(2_147_483_648);
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "CONDENSE_DB_ACQUIRE_TIMEOUT=2147483648ms is above its maximum of 1m"
    );
    let mut c = Config::default();
    c.limits.max_concurrency = usize::MAX;
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .starts_with("CONDENSE_MAX_CONCURRENCY=")
    );
}

#[test]
fn zero_is_off_for_counts_and_never_for_durations() {
    let mut c = Config::default();
    c.limits.max_concurrency = 0;
    c.limits.max_messages = 0;
    c.access.rate_limit_per_sec = 0.0;
    assert_eq!(c.validate(), Ok(()));
    c.limits.request_timeout = Duration::ZERO;
    let e = c.validate().unwrap_err();
    assert_eq!(e.id, "limits.request_timeout");
    assert!(e.problem.contains("below its minimum"), "{e}");
}

#[test]
fn a_rate_that_is_not_a_number_is_refused() {
    for r in [f64::NAN, f64::INFINITY, -1.0] {
        let mut c = Config::default();
        c.access.rate_limit_per_sec = r;
        assert_eq!(
            c.validate().unwrap_err().id,
            "access.rate_limit_per_sec",
            "{r}"
        );
    }
}

#[test]
fn the_upstream_timeouts_must_fit_in_the_request() {
    let mut c = Config::default();
    c.upstream.timeout = Duration::from_secs(600);
    // Without an upstream its timeouts are not used, so not checked.
    assert_eq!(c.validate(), Ok(()));
    c.upstream.url = Some("http://127.0.0.1:1/v1".into());
    let e = c.validate().unwrap_err();
    assert_eq!(
        (e.id, e.other.as_ref().unwrap().0),
        ("upstream.timeout", "limits.request_timeout")
    );
    assert_eq!(
        e.to_string(),
        "CONDENSE_UPSTREAM_TIMEOUT=10m must be shorter than CONDENSE_REQUEST_TIMEOUT=2m: \
         one upstream call must fit in a request"
    );
    c.upstream.timeout = Duration::from_secs(60);
    c.upstream.retry_budget = Duration::from_secs(121);
    assert_eq!(c.validate().unwrap_err().id, "upstream.retry_budget");
    c.upstream.retry_budget = Duration::from_secs(30);
    assert_eq!(c.validate().unwrap_err().id, "upstream.timeout");
}

#[test]
fn urls_are_checked_and_shown_without_their_password() {
    let mut c = Config::default();
    c.cache.database_url = Some("mysql://u:hunter2@db/x".into());
    let line = c.validate().unwrap_err().to_string();
    assert!(
        line.starts_with("CONDENSE_DATABASE_URL=mysql://[redacted]@db/x is not"),
        "{line}"
    );
    assert!(!line.contains("hunter2"));
    c.cache.database_url = Some("off".into());
    c.proxy.openai_url = Some("api.openai.com/v1".into());
    assert_eq!(c.validate().unwrap_err().id, "proxy.openai_url");
}
