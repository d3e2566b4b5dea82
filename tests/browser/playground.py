"""The playground in a real browser: headless Chromium (Debian's chromium and
chromium-driver) driven by selenium, against a running condense.

Every number the page renders is checked against the API's own answer for the
same input, asked here independently (the request is built from the fixture
and the page's documented defaults, not read back from the page).

Usage: playground.py BASE_URL OUT_DIR [DEGRADED_BASE_URL [KEYED_BASE_URL API_KEY
[LEDGER_BASE_URL CONVERSATION]]]
(DEGRADED: a condense whose upstream LLM is down, to see a degraded summary;
KEYED: a condense that needs API_KEY, to see the page ask for it; LEDGER: a
condense with a summary cache whose ledger holds CONVERSATION's turns)
Prints one JSON object (the page weight, the screenshots) and exits 0, or
fails with an AssertionError that says what differed.
"""

import json
import os
import pathlib
import sys
import tempfile
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE = sys.argv[1].rstrip("/")
OUT = pathlib.Path(sys.argv[2])
DEGRADED = sys.argv[3].rstrip("/") if len(sys.argv) > 3 else None
KEYED, KEY = (sys.argv[4].rstrip("/"), sys.argv[5]) if len(sys.argv) > 5 else (None, None)
LEDGER, CONVERSATION = (sys.argv[6].rstrip("/"), sys.argv[7]) if len(sys.argv) > 7 else (None, None)
INPUT_KINDS = ["input", "cache_read", "cache_write_5m", "cache_write_1h"]
FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "data" / "threads"
# Generous: a loaded 2-core CI machine; nothing here measures time.
WAIT = 300


def api(method, path, body=None, base=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {} if body is None else {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    req = urllib.request.Request((base or BASE) + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,800",
        f"--user-data-dir={tempfile.mkdtemp(prefix='condense-chromium-')}",
    ]:
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=opts)


def number(driver, element_id):
    text = driver.find_element(By.ID, element_id).text
    return float(text.replace(",", "").rstrip("%"))


def settle(driver, trigger):
    """Runs `trigger` and waits until the page has finished what it started."""
    driver.execute_script("document.getElementById('status').dataset.state = 'waiting'")
    trigger()
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "status").get_attribute("data-state") in ("done", "error", "idle")
    )
    return driver.find_element(By.ID, "status").get_attribute("data-state")


def severe(driver, allowed=()):
    """Console errors, except the network lines of API answers a step provoked on purpose."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and not any(a in entry["message"] for a in allowed)
    ]


def requests_for(example, **settings):
    """The requests the page documents for a thread and its form settings."""
    thread = {"messages": example["messages"]}
    for key in ("system", "tools"):
        if key in example:
            thread[key] = example[key]
    thread["model"] = example["model"]
    decide = dict(thread, profile="default")
    if settings.get("config"):
        decide["config"] = settings["config"]
    compress = dict(
        decide,
        summarizer={"strategy": settings.get("strategy", "auto")},
        force=settings.get("force", False),
    )
    return thread, decide, compress


def text_of(message):
    """A message's text: its content, or its first text block."""
    content = message.get("content")
    if isinstance(content, list):
        return next((b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"), "")
    return content or ""


def kind_of(message):
    """The overview's kind of a message: the first of these that fits."""
    if message is None or message["role"] in ("system", "developer"):
        return "instructions"
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    if message["role"] == "tool" or (blocks and all(b.get("type") == "tool_result" for b in blocks)):
        return "tool-results"
    if message.get("tool_calls") or any(b.get("type") == "tool_use" for b in blocks):
        return "tool-calls"
    if message.get("reasoning_content") or any(b.get("type") in ("thinking", "redacted_thinking") for b in blocks):
        return "thinking"
    return "text"


def check_overview(driver, name, messages, tokens):
    """The overview above the per-message list: the API's counts summed by role and by kind."""
    extra = {"tool-definitions": tokens["tools_tokens"], "reply-priming": tokens["reply_priming_tokens"]}
    by_role, by_kind = dict(extra), dict(extra)
    for counted in tokens["messages"]:
        role = counted["role"]
        by_role[role] = by_role.get(role, 0) + counted["tokens"]
        kind = kind_of(None if counted["index"] is None else messages[counted["index"]])
        by_kind[kind] = by_kind.get(kind, 0) + counted["tokens"]
    assert number(driver, "o-total") == tokens["total_tokens"], f"{name}: the overview's total"
    assert number(driver, "o-messages") == len(tokens["messages"])
    for group, expected in (("role", by_role), ("kind", by_kind)):
        assert sum(expected.values()) == tokens["total_tokens"], (group, expected)
        for part, value in expected.items():
            element_id = f"o-{group}-{part}"
            if value == 0:
                assert not driver.find_elements(By.ID, element_id), f"{name}: an empty #{element_id}"
                continue
            got = number(driver, element_id)
            assert got == value, f"{name}: #{element_id} shows {got}, the API's counts sum to {value}"
        shown = driver.find_elements(By.CSS_SELECTOR, f"[id^='o-{group}-']")
        assert len(shown) == len([v for v in expected.values() if v]), f"{name}: parts by {group}"
    title = driver.find_element(By.ID, "chart-title").text
    assert f"{len(tokens['messages']):,} rows" in title, title


def check_against_api(driver, name, **settings):
    """The numbers on the page are the API's for the same input."""
    status, example = api("GET", f"/playground/examples/{name}")
    assert status == 200, example
    thread, decide, compress_req = requests_for(example, **settings)
    _, tokens = api("POST", "/v1/tokens", thread)
    _, verdict = api("POST", "/v1/verdict", decide)
    status, compress = api("POST", "/v1/compress", compress_req)
    assert status == 200, compress

    shown = {
        "v-total": verdict["total_tokens"],
        "v-window": verdict["context_window"],
        "v-available": verdict["available_tokens"],
        "v-since": verdict["messages_since_summary"],
        "v-messages-threshold": verdict["messages_threshold"],
        "v-messages-percent": verdict["messages_percent"],
        "v-tokens": verdict["total_tokens"],
        "v-tokens-threshold": verdict["tokens_threshold"],
        "v-tokens-percent": verdict["tokens_percent"],
        "c-total": tokens["total_tokens"],
        "c-tools": tokens["tools_tokens"],
        "x-before": compress["tokens_before"],
        "x-after": compress["tokens_after"],
        "x-window": compress["context_window"],
    }
    if verdict["iterations_threshold"] is not None:
        shown["v-iterations"] = verdict["iterations_since_summary"]
        shown["v-iterations-threshold"] = verdict["iterations_threshold"]
        shown["v-iterations-percent"] = verdict["iterations_percent"]
    elif driver.find_elements(By.ID, "v-iterations"):
        raise AssertionError(f"{name}: an iterations bar without an iteration rule")
    if compress["summary"]:
        shown["x-summary-tokens"] = compress["summary"]["token_count"]
        shown["x-summarized"] = compress["summary"]["messages_summarized"]
    # What is left is the window less the thread and the reply reserve, and says so.
    _, profiles = api("GET", "/v1/profiles")
    reserve = settings.get("config", {}).get("response_reserve", profiles["profiles"]["default"]["response_reserve"])
    assert verdict["context_window"] - verdict["total_tokens"] - verdict["available_tokens"] == reserve
    shown["v-reserve"] = reserve
    assert "reply reserve" in driver.find_element(By.ID, "v-reserve").find_element(By.XPATH, "..").text
    for element_id, expected in shown.items():
        got = number(driver, element_id)
        assert got == expected, f"{name}: #{element_id} shows {got}, the API says {expected}"
    verdict_text = driver.find_element(By.ID, "verdict").text
    assert "null" not in verdict_text and "undefined" not in verdict_text, verdict_text
    should = driver.find_element(By.ID, "v-should").text
    assert should == ("Summarize now" if verdict["should_summarize"] else "Not due yet"), should

    check_overview(driver, name, example["messages"], tokens)

    # One chart row per counted message, with the API's count, in order.
    rows = driver.find_elements(By.CSS_SELECTOR, "#chart li.msg:not(.extra)")
    assert len(rows) == len(tokens["messages"]), (len(rows), len(tokens["messages"]))
    for row, counted in zip(rows, tokens["messages"]):
        index = row.get_attribute("data-index")
        assert index == ("system" if counted["index"] is None else str(counted["index"])), index
        got = int(row.find_element(By.CLASS_NAME, "tokens").get_attribute("textContent").replace(",", ""))
        assert got == counted["tokens"], f"{name}: row {index} shows {got}, the API says {counted['tokens']}"

    # The compressed thread beside the original, its marks from the API's answer.
    original = driver.find_elements(By.CSS_SELECTOR, "#original > li")
    returned = driver.find_elements(By.CSS_SELECTOR, "#compressed > li")
    assert len(original) == len(example["messages"]), len(original)
    assert len(returned) == len(compress["messages"]), (len(returned), len(compress["messages"]))
    marked = lambda cls: len(driver.find_elements(By.CSS_SELECTOR, f"#original > li.{cls}"))
    assert marked("dropped") == len(compress["messages_dropped"]), marked("dropped")
    summary = compress["summary"]
    if summary:
        assert marked("span") == summary["last_message_idx"] - summary["first_message_idx"] + 1
        highlighted = driver.find_elements(By.CSS_SELECTOR, "#compressed > li.summary")
        assert len(highlighted) == 1, len(highlighted)
        preview = highlighted[0].find_element(By.CLASS_NAME, "preview").get_attribute("textContent")
        assert preview.startswith("[Context Summary"), preview
        # Cached or newly written, said alike above and on the row; the row's
        # figure is the summary message's count, and the text says which is which.
        source = "from the cache" if summary["cached"] else "newly written"
        assert driver.find_element(By.ID, "x-summary-source").text == source
        label = highlighted[0].find_element(By.CLASS_NAME, "idx").get_attribute("textContent")
        assert label == f"summary, {source}", label
        at = next(j for j, m in enumerate(compress["messages"]) if text_of(m).startswith("[Context Summary"))
        _, after = api("POST", "/v1/tokens", {
            "messages": compress["messages"], "system": compress.get("system"), "tools": thread.get("tools"),
            "format": compress["format"], "model": thread["model"],
        })
        counted = next(m["tokens"] for m in after["messages"] if m["index"] == at)
        row = int(highlighted[0].find_element(By.CLASS_NAME, "tokens").get_attribute("textContent").replace(",", ""))
        assert row == counted == number(driver, "x-summary-message-tokens"), (row, counted)
        assert "with its header and framing" in driver.find_element(By.ID, "x-summary").text
    return verdict, compress


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    shots = []
    driver = browser()
    try:
        # Before its script runs, the page says what will appear (a screenshot at load).
        with urllib.request.urlopen(BASE + "/playground", timeout=WAIT) as res:
            html = res.read().decode()
        assert 'id="empty"' in html and "Nothing analysed yet" in html and "Loading" not in html

        # First load: the first example's verdict, and what a person's browser transfers for it.
        driver.set_window_size(1400, 1100)
        driver.get(BASE + "/playground")
        WebDriverWait(driver, WAIT).until(
            lambda d: d.find_element(By.ID, "status").get_attribute("data-state") in ("done", "error")
        )
        assert driver.find_element(By.ID, "status").get_attribute("data-state") == "done", (
            driver.find_element(By.ID, "status").text
        )
        _, examples = api("GET", "/playground/examples")
        check_against_api(driver, examples["examples"][0]["name"])
        assert driver.find_element(By.ID, "results").is_displayed() and not driver.find_element(By.ID, "empty").is_displayed()
        assert "Loading" not in driver.find_element(By.TAG_NAME, "body").text
        weight = driver.execute_script(
            "const nav = performance.getEntriesByType('navigation')[0];"
            "return nav.transferSize + performance.getEntriesByType('resource')"
            ".reduce((sum, r) => sum + r.transferSize, 0);"
        )
        assert 0 < weight < 200_000, f"first load transferred {weight} bytes"

        # The placeholders of the overrides: the profile's value, else what its absence means.
        _, profiles = api("GET", "/v1/profiles")
        default = profiles["profiles"]["default"]
        absent = {"context_window": "the model’s", "max_iterations_before_summary": "off"}
        for key in ["max_messages_before_summary", "min_recent_messages", "response_reserve", *absent]:
            placeholder = driver.find_element(By.ID, f"config-{key}").get_attribute("placeholder")
            assert placeholder == (str(default[key]) if key in default else absent[key]), (key, placeholder)

        # At 1400 px, every model's name fits its select; the legend's dashed
        # mark is a left edge like the others, not a box.
        clipped = driver.execute_script(
            "const s = document.getElementById('model'); const style = getComputedStyle(s);"
            "const ctx = document.createElement('canvas').getContext('2d'); ctx.font = style.font;"
            "const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;"
            "return [...s.options].map(o => o.text).filter(t => ctx.measureText(t).width > room);"
        )
        assert clipped == [], f"clipped in the Model select at 1400 px: {clipped}"
        key = driver.find_element(By.CSS_SELECTOR, ".key.instruction")
        sides = [key.value_of_css_property(f"border-{side}-style") for side in ("top", "right", "bottom", "left")]
        assert sides == ["none", "none", "none", "dashed"], sides
        driver.set_window_size(1280, 800)

        # Every control has a label, and the keyboard reaches the Analyse button.
        unlabeled = driver.execute_script(
            "return [...document.querySelectorAll('input, select, textarea')]"
            ".filter(e => !e.labels || e.labels.length === 0).map(e => e.id);"
        )
        assert unlabeled == [], f"controls without a label: {unlabeled}"
        body = driver.find_element(By.TAG_NAME, "body")
        body.click()
        for _ in range(60):
            if driver.switch_to.active_element.get_attribute("id") == "analyse":
                break
            ActionChains(driver).send_keys(Keys.TAB).perform()
        else:
            raise AssertionError("Tab never reached the Analyse button")

        # A large example, linked by ?example=.
        driver.get(BASE + "/playground?example=large-04.openai")
        WebDriverWait(driver, WAIT).until(
            lambda d: d.find_element(By.ID, "status").get_attribute("data-state") in ("done", "error")
        )
        assert driver.find_element(By.ID, "status").get_attribute("data-state") == "done", (
            driver.find_element(By.ID, "status").text
        )
        verdict, compress = check_against_api(driver, "large-04.openai")
        assert verdict["should_summarize"] and compress["compressed"], "large-04 should be compressed"
        shots.append(str(OUT / "large-04-openai-1280x800.png"))
        driver.save_screenshot(shots[-1])
        # The whole page, as tall as it is.
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, min(height + 140, 8000))
        shots.append(str(OUT / "large-04-openai-full.png"))
        driver.save_screenshot(shots[-1])
        driver.set_window_size(1280, 800)
        assert severe(driver) == [], severe(driver)

        # The other wire format, chosen from the menu.
        assert settle(driver, lambda: Select(driver.find_element(By.ID, "example")).select_by_value("large-04.anthropic")) == "done"
        check_against_api(driver, "large-04.anthropic")
        assert driver.find_elements(By.CSS_SELECTOR, "#chart li[data-index='system'].pinned"), "no pinned system row"

        # A forced truncation of a thread that is not due: dropped messages are marked.
        assert settle(driver, lambda: Select(driver.find_element(By.ID, "example")).select_by_value("medium-02.openai")) == "done"
        Select(driver.find_element(By.ID, "strategy")).select_by_value("truncate")
        driver.find_element(By.ID, "force").click()
        driver.find_element(By.ID, "config-max_iterations_before_summary").send_keys("5")
        field = driver.find_element(By.ID, "config-min_recent_messages")
        field.send_keys("4")
        assert settle(driver, lambda: field.send_keys(Keys.ENTER)) == "done"
        _, compress = check_against_api(
            driver,
            "medium-02.openai",
            strategy="truncate",
            force=True,
            config={"min_recent_messages": 4, "max_iterations_before_summary": 5},
        )
        assert driver.find_element(By.ID, "v-iterations-threshold").text == "5"
        assert compress["messages_dropped"], "truncate dropped nothing"
        field.clear()
        driver.find_element(By.ID, "config-max_iterations_before_summary").clear()
        driver.find_element(By.ID, "force").click()
        Select(driver.find_element(By.ID, "strategy")).select_by_value("auto")

        # An invalid setting: the API's message appears next to that field.
        field = driver.find_element(By.ID, "config-max_messages_before_summary")
        field.send_keys("0")
        assert settle(driver, lambda: field.send_keys(Keys.ENTER)) == "error"
        status, problem = api("POST", "/v1/verdict", {"messages": [], "config": {"max_messages_before_summary": 0}})
        assert status == 422, problem
        expected = next(e["message"] for e in problem["errors"] if e["pointer"] == "/config/max_messages_before_summary")
        shown = driver.find_element(By.ID, "error-config-max_messages_before_summary").text
        assert expected in shown, f"shown {shown!r}, the API says {expected!r}"
        assert field.get_attribute("aria-invalid") == "true"
        field.clear()

        # A pasted thread the API rejects: its problem detail shows at the thread.
        invalid = {"messages": [{"role": "wizard", "content": "hello"}]}
        textarea = driver.find_element(By.ID, "thread")
        textarea.clear()
        textarea.send_keys(json.dumps(invalid))
        assert settle(driver, lambda: driver.find_element(By.ID, "analyse").click()) == "error"
        status, problem = api("POST", "/v1/tokens", dict(invalid, model="gpt-4o"))
        assert status == 422, problem
        shown = driver.find_element(By.ID, "error-thread").text
        for e in problem["errors"]:
            assert f"{e['pointer']}: {e['message']}" in shown, f"shown {shown!r}, the API says {e}"
        shots.append(str(OUT / "invalid-thread.png"))
        driver.save_screenshot(shots[-1])

        # Not JSON at all: the page says so before asking anything.
        textarea.clear()
        textarea.send_keys("{not json")
        assert settle(driver, lambda: driver.find_element(By.ID, "analyse").click()) == "error"
        assert "not valid JSON" in driver.find_element(By.ID, "error-thread").text
        assert not driver.find_element(By.ID, "results").is_displayed(), "stale results stay shown"
        assert severe(driver, allowed=["status of 422"]) == [], severe(driver)

        # A mid-conversation system message inside the summarized span: drawn
        # as an instruction, and kept verbatim right after the summary.
        turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(40)]
        turns.insert(9, {"role": "system", "content": "From now on, run the tests before every commit."})
        textarea.clear()
        textarea.send_keys(json.dumps({"system": "You are an agent.", "messages": turns}))
        assert settle(driver, lambda: driver.find_element(By.ID, "analyse").click()) == "done"
        assert driver.find_elements(By.CSS_SELECTOR, "#chart li.instruction[data-index='9']"), "no instruction row"
        assert "kept verbatim" in driver.find_element(By.ID, "x-instructions").text
        shots.append(str(OUT / "instruction.png"))
        driver.save_screenshot(shots[-1])

        # A file opened from disk: the same numbers as the same example.
        opened = FIXTURES / "small-01.anthropic.json"
        assert settle(driver, lambda: driver.find_element(By.ID, "file").send_keys(str(opened))) == "done"
        check_against_api(driver, "small-01.anthropic")

        # The ledger view: without a summary cache there is none, as the API says (501).
        driver.find_element(By.ID, "conversation").send_keys("0" * 32)
        driver.find_element(By.ID, "show-ledger").click()
        WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "error-conversation").is_displayed())
        assert "(501)" in driver.find_element(By.ID, "error-conversation").text
        assert severe(driver, allowed=["status of 501"]) == [], severe(driver)

        if LEDGER:
            # A conversation's turns, as the API answers them; a malformed id refused (400).
            driver.get(LEDGER + "/playground")
            WebDriverWait(driver, WAIT).until(
                lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "done"
            )
            conversation = driver.find_element(By.ID, "conversation")
            conversation.send_keys("not-a-conversation")
            driver.find_element(By.ID, "show-ledger").click()
            WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "error-conversation").is_displayed())
            assert "(400)" in driver.find_element(By.ID, "error-conversation").text
            conversation.clear()
            conversation.send_keys(CONVERSATION)
            driver.find_element(By.ID, "show-ledger").click()
            WebDriverWait(driver, WAIT).until(lambda d: d.find_elements(By.ID, "ledger-table"))
            assert not driver.find_element(By.ID, "error-conversation").is_displayed()
            status, ledger = api("GET", f"/v1/conversations/{CONVERSATION}", base=LEDGER)
            assert status == 200, ledger
            rows = driver.find_elements(By.CSS_SELECTOR, "#ledger-table tbody tr")
            assert len(rows) == len(ledger["turns"]), (len(rows), ledger)
            count = lambda text: int(text.replace(",", ""))
            for row, turn in zip(rows, ledger["turns"]):
                cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
                assert cells[0] == turn["at"] and cells[1] == turn["route"], (cells, turn)
                assert count(cells[2]) == turn["sent_tokens"] and count(cells[3]) == turn["forwarded_tokens"]
                assert count(cells[4]) == sum(turn["billed"][k] for k in INPUT_KINDS), (cells, turn)
                assert count(cells[5]) == sum(turn["without_condense"][k] for k in INPUT_KINDS), (cells, turn)
                assert count(cells[6]) == turn["billed"]["output"]
                assert cells[7] == (turn["reason"] or "–"), (cells, turn)
            totals = ledger["totals"]
            assert number(driver, "l-billed") == sum(totals["billed"][k] for k in INPUT_KINDS)
            assert number(driver, "l-without") == sum(totals["without_condense"][k] for k in INPUT_KINDS)
            assert number(driver, "l-difference") == totals["difference"]["input_total"]
            assert number(driver, "l-summary") == totals["summary_call_tokens"]
            driver.execute_script("document.getElementById('ledger').scrollIntoView()")
            shots.append(str(OUT / "ledger.png"))
            driver.save_screenshot(shots[-1])
            assert severe(driver, allowed=["status of 400"]) == [], severe(driver)
            driver.get(BASE + "/playground?example=small-01.anthropic")
            WebDriverWait(driver, WAIT).until(
                lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "done"
            )

        if DEGRADED:
            # The upstream LLM is down: the page says the summary is degraded, with the API's warnings.
            driver.get(DEGRADED + "/playground?example=small-00.openai")
            WebDriverWait(driver, WAIT).until(
                lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "done"
            )
            Select(driver.find_element(By.ID, "strategy")).select_by_value("llm")
            driver.find_element(By.ID, "force").click()
            assert settle(driver, lambda: driver.find_element(By.ID, "analyse").click()) == "done"
            _, example = api("GET", "/playground/examples/small-00.openai", base=DEGRADED)
            _, _, request = requests_for(example, strategy="llm", force=True)
            status, compress = api("POST", "/v1/compress", request, base=DEGRADED)
            assert status == 200 and compress["degraded"], compress
            assert driver.find_element(By.ID, "x-degraded").is_displayed(), "degraded is not shown"
            shown = driver.find_element(By.ID, "warnings").text
            for warning in compress["warnings"]:
                assert warning in shown, f"warning {warning!r} is not shown: {shown!r}"
            driver.execute_script("document.getElementById('verdict').scrollIntoView()")
            shots.append(str(OUT / "degraded.png"))
            driver.save_screenshot(shots[-1])
            assert severe(driver) == [], severe(driver)

        if KEYED:
            # A service with API keys: the page asks for one, refuses a wrong
            # one, and with the right one shows what the API answers.
            driver.get(KEYED + "/playground?example=small-00.openai")
            WebDriverWait(driver, WAIT).until(
                lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "error"
            )
            key_field = driver.find_element(By.ID, "api-key")
            assert key_field.is_displayed(), "no key field"
            assert "needs an API key" in driver.find_element(By.ID, "error-key").text
            key_field.send_keys("wrong-key-0123456789abcdef")
            assert settle(driver, lambda: key_field.send_keys(Keys.ENTER)) == "error"
            assert "did not accept" in driver.find_element(By.ID, "error-key").text
            key_field.clear()
            key_field.send_keys(KEY)
            assert settle(driver, lambda: key_field.send_keys(Keys.ENTER)) == "done"
            _, example = api("GET", "/playground/examples/small-00.openai", base=KEYED)
            request, _, _ = requests_for(example)
            status, tokens = api("POST", "/v1/tokens", request, base=KEYED, key=KEY)
            assert status == 200, tokens
            assert number(driver, "c-total") == tokens["total_tokens"]
            shots.append(str(OUT / "keyed.png"))
            driver.save_screenshot(shots[-1])
            # Kept for the tab: another page of the same service does not ask again.
            driver.get(KEYED + "/playground?example=small-01.openai")
            WebDriverWait(driver, WAIT).until(
                lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "done"
            )
            assert not driver.find_element(By.ID, "api-key").is_displayed()
            assert severe(driver, allowed=["status of 401"]) == [], severe(driver)

        # A narrow window: nothing wider than the screen.
        driver.set_window_size(390, 844)
        driver.get(BASE + "/playground?example=medium-02.anthropic")
        WebDriverWait(driver, WAIT).until(
            lambda d: d.find_element(By.ID, "status").get_attribute("data-state") == "done"
        )
        check_against_api(driver, "medium-02.anthropic")
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;"
        )
        assert overflow <= 0, f"the page is {overflow}px wider than a 390px window"
        shots.append(str(OUT / "medium-02-anthropic-narrow.png"))
        driver.save_screenshot(shots[-1])
        assert severe(driver) == [], severe(driver)
    finally:
        driver.quit()
    print(json.dumps({"page_weight_bytes": weight, "screenshots": shots}))


if __name__ == "__main__":
    main()
