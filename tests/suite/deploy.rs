//! The Kubernetes manifests in `deploy/`, checked offline: every document is
//! validated against the Kubernetes 1.32.2 JSON schemas (standalone-strict,
//! as kubeconform uses them: unknown fields are errors), vendored in
//! `tests/fixtures/kubernetes/` for the four kinds used; and the pieces must
//! fit together (selectors, ports, the Secret's keys, the image's user and
//! port, the settings condense actually reads).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use serde::Deserialize;
use serde_json::{Value, json};

const KUBERNETES: &str = "v1.32.2-standalone-strict";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every YAML document under `deploy/`, with the file it came from.
fn manifests() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("deploy"))
        .expect("deploy/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let value =
                Value::deserialize(doc).unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"));
            if !value.is_null() {
                out.push((name.clone(), value));
            }
        }
    }
    out
}

/// The vendored schema file for a kind, named as kubeconform names them:
/// `{kind}-{group}-{version}.json`, or `{kind}-{version}.json` for the core group.
fn schema_path(kind: &str, api_version: &str) -> PathBuf {
    let kind = kind.to_ascii_lowercase();
    let file = match api_version.split_once('/') {
        Some((group, version)) => {
            let group = group.split('.').next().unwrap();
            format!("{kind}-{group}-{version}.json")
        }
        None => format!("{kind}-{api_version}.json"),
    };
    root()
        .join("tests/fixtures/kubernetes")
        .join(KUBERNETES)
        .join(file)
}

/// The schema errors of one document (`kind`/`apiVersion` pick the schema).
fn schema_errors(doc: &Value) -> Vec<String> {
    let kind = doc["kind"].as_str().expect("a manifest names its kind");
    let api = doc["apiVersion"]
        .as_str()
        .expect("a manifest names its apiVersion");
    let path = schema_path(kind, api);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no vendored schema for {kind} {api} ({}): add it from the Kubernetes JSON schemas \
             ({KUBERNETES}) to tests/fixtures/kubernetes/",
            path.display()
        )
    });
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn by_kind(docs: &[(String, Value)], kind: &str) -> Value {
    let found: Vec<&Value> = docs
        .iter()
        .map(|(_, d)| d)
        .filter(|d| d["kind"] == kind)
        .collect();
    assert_eq!(found.len(), 1, "exactly one {kind} in deploy/");
    found[0].clone()
}

#[test]
fn every_manifest_is_valid_kubernetes() {
    let docs = manifests();
    let kinds: BTreeSet<&str> = docs
        .iter()
        .filter_map(|(_, d)| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["Deployment", "PodDisruptionBudget", "Secret", "Service"])
    );
    let mut failures = Vec::new();
    for (file, doc) in &docs {
        for e in schema_errors(doc) {
            failures.push(format!("{file} ({}): {e}", doc["kind"]));
        }
    }
    assert!(
        failures.is_empty(),
        "schema errors:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_schema_check_rejects_what_kubernetes_would() {
    let docs = manifests();
    let good = by_kind(&docs, "Deployment");
    assert!(schema_errors(&good).is_empty());
    let mut typo = good.clone();
    typo["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] =
        typo["spec"]["template"]["spec"]["containers"][0]["readinessProbe"].take();
    assert!(
        !schema_errors(&typo).is_empty(),
        "an unknown field is an error (strict)"
    );
    let mut wrong_type = good.clone();
    wrong_type["spec"]["replicas"] = json!("two");
    assert!(
        !schema_errors(&wrong_type).is_empty(),
        "a wrong type is an error"
    );
    let mut service = by_kind(&docs, "Service");
    assert!(schema_errors(&service).is_empty());
    service["spec"]["ports"][0]["port"] = json!("eighty");
    assert!(!schema_errors(&service).is_empty(), "a port is a number");
}

/// The `CONDENSE_*` variables condense reads (its flags' `env`).
fn settings() -> BTreeSet<String> {
    condense::cli::Cli::command()
        .get_arguments()
        .filter_map(|a| a.get_env())
        .map(|e| e.to_string_lossy().into_owned())
        .collect()
}

/// The Dockerfile's runtime stage's `USER` uid and `EXPOSE` port.
fn image_user_and_port() -> (i64, i64) {
    let text = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let last = |keyword: &str| {
        text.lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix(keyword))
            .unwrap_or_else(|| panic!("the Dockerfile has {keyword}"))
            .trim()
            .to_string()
    };
    let user = last("USER ");
    let uid = user
        .split(':')
        .next()
        .unwrap()
        .parse()
        .expect("USER is numeric");
    let port = last("EXPOSE ").parse().expect("one EXPOSE port");
    (uid, port)
}

#[test]
fn the_pieces_fit_together() {
    let docs = manifests();
    let deployment = by_kind(&docs, "Deployment");
    let service = by_kind(&docs, "Service");
    let pdb = by_kind(&docs, "PodDisruptionBudget");
    let secret = by_kind(&docs, "Secret");
    let spec = &deployment["spec"];
    let pod = &spec["template"]["spec"];
    let labels = &spec["template"]["metadata"]["labels"];
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];

    // Replicas, and disruptions that leave one serving.
    let replicas = spec["replicas"].as_i64().unwrap();
    assert!(replicas >= 2, "at least two replicas");
    let min_available = pdb["spec"]["minAvailable"].as_i64().unwrap();
    assert!(
        (1..replicas).contains(&min_available),
        "a drain can proceed, one pod stays"
    );

    // Every selector picks the pods.
    for (what, selector) in [
        ("Deployment", &spec["selector"]["matchLabels"]),
        ("Service", &service["spec"]["selector"]),
        (
            "PodDisruptionBudget",
            &pdb["spec"]["selector"]["matchLabels"],
        ),
    ] {
        let selector = selector.as_object().unwrap();
        assert!(!selector.is_empty());
        for (k, v) in selector {
            assert_eq!(
                &labels[k], v,
                "{what}'s selector {k}={v} matches the pod labels"
            );
        }
    }

    // The port: the image's, named, and the Service's target.
    let (uid, image_port) = image_user_and_port();
    let port = &c["ports"][0];
    assert_eq!(
        port["containerPort"].as_i64(),
        Some(image_port),
        "the image's EXPOSE port"
    );
    let name = port["name"].as_str().unwrap();
    assert_eq!(service["spec"]["ports"][0]["targetPort"], name);

    // Probes on the two health routes, on the probe listener's port (so
    // clients holding every connection of the main one cannot fail them),
    // which the Service does not expose.
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    let probe_listen = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "CONDENSE_PROBE_LISTEN")
        .and_then(|e| e["value"].as_str())
        .expect("the deployment gives the probes a listener");
    let probe_port: i64 = probe_listen.rsplit(':').next().unwrap().parse().unwrap();
    let probes = c["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["containerPort"].as_i64() == Some(probe_port))
        .expect("the probe listener's port is declared");
    let probes_name = probes["name"].as_str().unwrap();
    assert_ne!(probes_name, name);
    for probe in ["readinessProbe", "livenessProbe"] {
        assert_eq!(c[probe]["httpGet"]["port"], probes_name, "{probe} port");
    }
    for p in service["spec"]["ports"].as_array().unwrap() {
        assert_ne!(
            p["targetPort"], probes_name,
            "the Service exposes no probe port"
        );
    }

    // Resources: requests and limits for CPU and memory.
    for side in ["requests", "limits"] {
        for r in ["cpu", "memory"] {
            assert!(c["resources"][side][r].is_string(), "resources.{side}.{r}");
        }
    }

    // Non-root (the image's user), read-only root, nothing extra.
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["runAsUser"].as_i64(),
        Some(uid),
        "the image's USER"
    );
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));

    // Secrets come from the Secret, each key of which exists and is used.
    let secret_name = secret["metadata"]["name"].as_str().unwrap();
    let secret_keys: BTreeSet<&str> = secret["stringData"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut used = BTreeSet::new();
    let mut from_secret = BTreeMap::new();
    let mut names = BTreeSet::new();
    for e in c["env"].as_array().unwrap() {
        let var = e["name"].as_str().unwrap();
        names.insert(var.to_string());
        if let Some(r) = e["valueFrom"]["secretKeyRef"].as_object() {
            assert_eq!(r["name"], secret_name, "{var} comes from the Secret");
            let key = r["key"].as_str().unwrap();
            assert!(
                secret_keys.contains(key),
                "{var}: the Secret has no key {key}"
            );
            used.insert(key);
            from_secret.insert(var, key);
        } else {
            assert!(
                e["value"].is_string(),
                "{var} is a plain value or a Secret's"
            );
        }
    }
    for v in pod["volumes"].as_array().into_iter().flatten() {
        if v["secret"]["secretName"] == secret_name {
            for item in v["secret"]["items"].as_array().unwrap() {
                let key = item["key"].as_str().unwrap();
                assert!(
                    secret_keys.contains(key),
                    "volume {}: no key {key}",
                    v["name"]
                );
                used.insert(key);
            }
        }
    }
    assert_eq!(used, secret_keys, "every key of the Secret is used");
    for var in [
        "CONDENSE_API_KEYS",
        "CONDENSE_UPSTREAM_API_KEY",
        "CONDENSE_DATABASE_URL",
    ] {
        assert!(from_secret.contains_key(var), "{var} comes from the Secret");
    }

    // The database URL's CA file is where the Secret's certificate is mounted.
    let db_url = secret["stringData"][from_secret["CONDENSE_DATABASE_URL"]]
        .as_str()
        .unwrap();
    assert!(
        db_url.contains("sslmode=verify-full"),
        "TLS, verified: {db_url}"
    );
    let root_cert = db_url
        .split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("sslrootcert="))
        .expect("the URL names its CA (sslrootcert)");
    let mounted: Vec<String> = c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| {
            let volume = pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == m["name"])
                .unwrap();
            let dir = m["mountPath"].as_str().unwrap().to_string();
            volume["secret"]["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |i| format!("{dir}/{}", i["path"].as_str().unwrap()))
        })
        .collect();
    assert!(
        mounted.iter().any(|m| m == root_cert),
        "sslrootcert={root_cert} is one of the mounted files {mounted:?}"
    );

    // Every variable is one condense reads.
    let known = settings();
    assert!(known.contains("CONDENSE_LISTEN"), "the settings were read");
    for var in &names {
        assert!(
            known.contains(var),
            "{var} is not a setting of condense (see `condense --help`)"
        );
    }

    // The Secret is a template: no value in it could be a real one.
    for (key, value) in secret["stringData"].as_object().unwrap() {
        assert!(
            value.as_str().unwrap().contains("REPLACE_ME"),
            "the Secret's {key} is a placeholder"
        );
    }
}

/// Kubernetes' quantity (`1Gi`, `896Mi`, `1G`, `512M`, plain bytes) in bytes.
fn quantity(q: &str) -> u64 {
    let units = [
        ("Gi", 1u64 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
        ("G", 1_000_000_000),
        ("M", 1_000_000),
        ("k", 1000),
    ];
    for (suffix, factor) in units {
        if let Some(n) = q.strip_suffix(suffix) {
            return n.parse::<u64>().expect("a whole quantity") * factor;
        }
    }
    q.parse().expect("a quantity in bytes")
}

/// The memory limit follows from one documented worst case (docs/operations.md, "Memory
/// sizing"): no request may need more than the budget (so none is admitted
/// beyond it), and the idle process plus the budget plus its margin fit
/// the limit. A default changed on one side only turns this red.
#[test]
fn the_memory_limit_holds_the_budget() {
    use condense::admission::memory::{IDLE_RSS_BYTES, limit_for, worst_parsed_bytes};

    let docs = manifests();
    let c = by_kind(&docs, "Deployment")["spec"]["template"]["spec"]["containers"][0].clone();
    let env = |name: &str| {
        c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .map(|e| {
                e["value"]
                    .as_str()
                    .expect("a plain value")
                    .parse::<u64>()
                    .unwrap()
            })
    };
    let limits = condense::Config::default().limits;
    let budget = env("CONDENSE_MEMORY_BUDGET_BYTES").unwrap_or(limits.memory_budget_bytes);
    let body_limit = env("CONDENSE_BODY_LIMIT").unwrap_or(limits.body_limit as u64);
    let limit = quantity(c["resources"]["limits"]["memory"].as_str().unwrap());
    let request = quantity(c["resources"]["requests"]["memory"].as_str().unwrap());

    assert!(budget > 0, "the budget is on");
    assert!(
        worst_parsed_bytes(body_limit) <= budget,
        "the costliest body parsed ({} bytes) fits the budget ({budget})",
        worst_parsed_bytes(body_limit)
    );
    let quoted = format!("{} MiB", worst_parsed_bytes(body_limit) >> 20);
    let sizing = std::fs::read_to_string("docs/operations.md").unwrap();
    assert!(
        sizing.matches(&quoted).count() >= 2,
        "docs/operations.md quotes the costliest body's reservation, {quoted}"
    );
    assert!(
        limit_for(budget) <= limit,
        "idle + budget + margin = {} bytes exceeds the memory limit of {limit}",
        limit_for(budget)
    );
    assert!(
        request >= IDLE_RSS_BYTES,
        "the memory request holds an idle replica"
    );
    assert_eq!(quantity("1Gi"), 1 << 30);
}
