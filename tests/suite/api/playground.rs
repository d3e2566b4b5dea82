//! The playground's routes: the page and its files are served with a strict
//! content security policy, and the examples are the repository's fixtures,
//! byte for byte. What the page shows is checked in a real browser by
//! `tests/suite/playground.rs`.

use crate::support::common::{app, get};

#[tokio::test]
async fn root_redirects_to_the_playground() {
    let r = get(&app(), "/").await;
    assert_eq!(r.status.as_u16(), 307);
    assert_eq!(r.headers["location"], "/playground");
    // A shared link keeps the example it names.
    let r = get(&app(), "/?example=large-04.openai").await;
    assert_eq!(r.status.as_u16(), 307);
    assert_eq!(r.headers["location"], "/playground?example=large-04.openai");
}

#[tokio::test]
async fn page_and_files_are_served_with_their_types_and_a_strict_policy() {
    let app = app();
    for (path, content_type, marker) in [
        (
            "/playground",
            "text/html; charset=utf-8",
            "<title>condense playground</title>",
        ),
        (
            "/playground/app.js",
            "text/javascript; charset=utf-8",
            "'use strict';",
        ),
        ("/playground/style.css", "text/css; charset=utf-8", ":root"),
    ] {
        let r = get(&app, path).await;
        assert_eq!(r.status.as_u16(), 200, "{path}");
        assert_eq!(r.content_type(), content_type, "{path}");
        assert!(r.text().contains(marker), "{path} is not the expected file");
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
            "{csp}"
        );
        assert_eq!(r.headers["x-content-type-options"], "nosniff");
    }
    // The page loads nothing from anywhere else (no CDN: the host may have no internet).
    let page = get(&app, "/playground").await.text();
    for attr in ["src=\"", "href=\""] {
        for link in page.split(attr).skip(1) {
            let target = &link[..link.find('"').unwrap()];
            assert!(
                target.starts_with('/') || target.starts_with("data:"),
                "{target}"
            );
        }
    }
    // Before its script runs (a screenshot at load), the page says what will appear.
    assert!(page.contains("Nothing analysed yet"), "no empty state");
    assert!(
        !page.contains("Loading"),
        "the page opens on a loading message"
    );
}

#[tokio::test]
async fn examples_are_the_fixtures_byte_for_byte() {
    let app = app();
    let list = get(&app, "/playground/examples").await.json();
    let examples = list["examples"].as_array().unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/threads");
    let on_disk = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".json").map(str::to_string)
        })
        .count();
    assert_eq!(
        examples.len(),
        on_disk,
        "every fixture thread is an example"
    );
    for x in examples {
        let name = x["name"].as_str().unwrap();
        let r = get(&app, &format!("/playground/examples/{name}")).await;
        assert_eq!(r.status.as_u16(), 200);
        assert_eq!(r.content_type(), "application/json");
        let file = std::fs::read(dir.join(format!("{name}.json"))).unwrap();
        assert_eq!(r.bytes.as_ref(), file.as_slice(), "{name}");
        assert_eq!(x["bytes"], file.len());
        assert!(name.ends_with(x["format"].as_str().unwrap()));
    }
}

#[tokio::test]
async fn an_unknown_example_is_a_404_problem_with_a_clipped_name() {
    let long = "x".repeat(5000);
    let r = get(&app(), &format!("/playground/examples/{long}")).await;
    let p = r.problem(404);
    assert!(p["detail"].as_str().unwrap().len() < 200, "{p}");
}
