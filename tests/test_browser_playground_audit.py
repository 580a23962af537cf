"""Real browser (Debian Chromium via Playwright) against `streamlit run app.py`:

- Playground: type a prompt, watch both answers stream in side by side from a scripted local
  server (a separate process, paced token by token), see both verdicts appear as badges.
- Judge audit: label three verdicts and watch Cohen's κ change after each.
"""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from core.misprompt import audit
from core.storage import JUDGE_LABELS
from tests.audit_fixtures import two_runs
from tests.browser import *  # noqa: F401,F403
from tests.browser import shot, wait_for_app
from tests.fake_openai import FakeProcess
from tests.playground_fixtures import SCRIPT


@pytest.fixture
def paced_server():
    with FakeProcess({**SCRIPT, "latency": 0.1, "token_delay": 0.12}) as fp:
        yield fp


@pytest.mark.browser
def test_playground_streams_both_answers_and_shows_both_verdicts(app_server, page,
                                                                  initialised_store,
                                                                  paced_server, tmp_path):
    models = tmp_path / "models.toml"
    models.write_text("")
    url = app_server({"EHW_LOCAL_URL": paced_server.url, "EHW_MODELS_FILE": str(models)})
    page.goto(f"{url}/playground?pg_src=Type+my+own")
    wait_for_app(page)
    box = page.get_by_label("Your prompt")
    box.fill("Wich composser wrote the Eroica?")
    box.press("Control+Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Send proactive and passive").click()
    # Mid-stream: both columns show part of their answer with the typing cursor.
    page.wait_for_function(
        """() => {
            const t = document.body.innerText;
            return t.includes('PROACTIVE-ANSWER') && t.includes('PASSIVE-ANSWER')
                   && t.includes('▌');
        }""", timeout=60_000)
    partial = page.locator('[data-testid="stMain"]').inner_text()
    assert "Beethoven in 1804." not in partial or "Which composer wrote the Eroica?" not in partial
    shot(page, "playground-streaming")
    # Then the judge: six badges per side, all true for passive, all false for proactive.
    page.wait_for_function(
        """() => document.body.innerText.includes('✓ guidance')
                 && document.body.innerText.includes('✗ guidance')""", timeout=90_000)
    wait_for_app(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Ludwig van Beethoven in 1804." in text
    assert "Ask: Which composer wrote the Eroica?" in text
    for label in JUDGE_LABELS:
        assert f"✓ {label}" in text and f"✗ {label}" in text
    assert "Weak model" in text
    shot(page, "playground-judged")
    assert initialised_store.scalar(
        "SELECT count(*) FROM verdicts v JOIN runs r USING (run_id) WHERE r.kind = 'playground' "
        "AND v.status = 'ok'") == 2
    assert "exchange=playground-" in page.url


def _kappa_shown(page, label: str) -> str:
    page.get_by_role("tab", name="Results").click()
    wait_for_app(page)
    metric = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    metric.wait_for()
    value = metric.locator('[data-testid="stMetricValue"]').inner_text().strip()
    page.get_by_role("tab", name="Label").click()
    wait_for_app(page)
    return value


def _kappa_expected(store, label: str) -> str:
    frame = store.df("SELECT h.value, v.{0} AS judge FROM human_labels h JOIN verdicts v USING "
                     "(run_id, item_id, variant) WHERE h.label = ? AND h.annotator = 'alice'"
                     .format(label), [label])
    return f"{audit.cohen_kappa(frame['judge'], frame['value']):.2f}"


@pytest.mark.browser
def test_label_three_verdicts_and_watch_kappa_change(app_server, page, store):
    two_runs(store)
    audit.create_audit(store, "web", ["run-a", "run-b"], fraction=0.5, seed=7)
    queue = audit.audit_queue(store, "web")
    url = app_server()
    page.goto(f"{url}/judge_audit?audit=web&annotator=alice")
    wait_for_app(page)
    label = "detection"
    seen: list[str] = []
    # Item 1: agree with the judge; item 2: override detection; item 3: override it again.
    for step, flip in enumerate([False, True, True]):
        page.get_by_text(f"Item {step + 1} of {len(queue)}").wait_for()
        if flip:
            page.locator('[data-testid="stCheckbox"]').filter(has_text=label).first.click()
        page.get_by_role("button", name="Save labels").click()
        page.get_by_text(f"Item {step + 2} of {len(queue)}").wait_for()
        wait_for_app(page)
        shown = _kappa_shown(page, label)
        assert shown == _kappa_expected(store, label)
        seen.append(shown)
    shot(page, "judge-audit-labelled")
    assert len(set(seen)) >= 2, seen  # κ moved as labels came in
    saved = store.df("SELECT item_id, label, value, judge_value FROM human_labels "
                     "WHERE annotator = 'alice'")
    assert len(saved) == 3 * len(JUDGE_LABELS)
    overrides = saved[saved["value"] != saved["judge_value"]]
    assert overrides["label"].tolist() == [label, label]
    # The final value matches sklearn on the same three pairs where it is defined.
    det = saved[saved["label"] == label]
    if det["value"].nunique() > 1 or det["judge_value"].nunique() > 1:
        assert seen[-1] == f"{cohen_kappa_score(det['judge_value'], det['value']):.2f}"
    # Reload: the queue resumes at item 4.
    page.goto(f"{url}/judge_audit?audit=web&annotator=alice")
    wait_for_app(page)
    page.get_by_text(f"Item 4 of {len(queue)}").wait_for()


@pytest.mark.browser
def test_two_browser_sessions_label_at_once(app_server, browser, store):
    """Two browser sessions on one app, saving at the same moments: nothing is lost."""
    two_runs(store)
    audit.create_audit(store, "pair", ["run-a", "run-b"], fraction=0.2, seed=3)
    n = len(audit.audit_queue(store, "pair"))
    url = app_server()
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    pages = [c.new_page() for c in contexts]
    try:
        for pg_, who in zip(pages, ("ann-x", "ann-y")):
            pg_.set_default_timeout(60_000)
            pg_.goto(f"{url}/judge_audit?audit=pair&annotator={who}")
            wait_for_app(pg_)
        for step in range(3):
            for pg_, flip in zip(pages, ("guidance", "detection")):
                pg_.get_by_text(f"Item {step + 1} of {n}").wait_for()
                pg_.locator('[data-testid="stCheckbox"]').filter(has_text=flip).first.click()
            for pg_ in pages:  # both submit before either is waited for
                pg_.get_by_role("button", name="Save labels").click()
            for pg_ in pages:
                pg_.get_by_text(f"Item {step + 2} of {n}").wait_for()
                wait_for_app(pg_)
        shot(pages[1], "judge-audit-second-session")
    finally:
        for c in contexts:
            c.close()
    rows = store.df("SELECT annotator, count(*) AS n, count(DISTINCT run_id || item_id) AS items, "
                    "count(*) FILTER (WHERE value <> judge_value) AS flipped "
                    "FROM human_labels GROUP BY annotator ORDER BY annotator")
    assert rows.to_dict("records") == [
        {"annotator": "ann-x", "n": 18, "items": 3, "flipped": 3},
        {"annotator": "ann-y", "n": 18, "items": 3, "flipped": 3}]
    flipped = store.df("SELECT DISTINCT annotator, label FROM human_labels "
                       "WHERE value <> judge_value ORDER BY annotator")
    assert flipped.values.tolist() == [["ann-x", "guidance"], ["ann-y", "detection"]]
