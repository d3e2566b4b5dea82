//! The two text expositions: OpenMetrics 1.0 (what `prometheus-client`
//! writes, and what Prometheus asks for first) and the classic Prometheus
//! text format 0.0.4 (what everything else reads).

use std::collections::HashSet;

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`.
    Text,
}

impl Format {
    /// OpenMetrics when `Accept` names it (Prometheus does), else classic text.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a)
                if a.to_ascii_lowercase()
                    .contains("application/openmetrics-text") =>
            {
                Format::OpenMetrics
            }
            _ => Format::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// OpenMetrics as classic text (`prometheus-client` writes only the former):
/// for this registry they differ only in counters' `_total` in `# HELP`/`# TYPE`
/// and in `# EOF`/`# UNIT` lines.
pub(super) fn classic(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].into_iter().find_map(|tag| {
            let (name, rest) = line.strip_prefix(tag)?.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{tag}{name}_total {rest}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_gain_their_suffix_and_eof_goes() {
        let om = "# HELP a_requests Requests.\n# TYPE a_requests counter\na_requests_total{route=\"/x\"} 2\n\
                  # HELP a_in_flight In flight.\n# TYPE a_in_flight gauge\na_in_flight 1\n# EOF\n";
        assert_eq!(
            classic(om),
            "# HELP a_requests_total Requests.\n# TYPE a_requests_total counter\na_requests_total{route=\"/x\"} 2\n\
             # HELP a_in_flight In flight.\n# TYPE a_in_flight gauge\na_in_flight 1\n"
        );
    }

    #[test]
    fn openmetrics_only_when_asked_for() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
        assert_eq!(Format::negotiate(None), Format::Text);
    }
}
