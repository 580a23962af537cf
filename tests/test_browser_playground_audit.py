"""Real browser (Debian Chromium via Playwright) against `streamlit run app.py`:

- Playground: type a prompt, watch both answers stream in side by side from a scripted local
  server (a separate process, paced token by token), see both verdicts appear as badges.
- Judge audit: label three verdicts and watch Cohen's κ change after each.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect
from sklearn.metrics import cohen_kappa_score

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import audit
from core.store import Store
from tests.audit_fixtures import two_runs
from tests.browser import *  # noqa: F401,F403
from tests.browser import POLL_MS, shot, start_streamlit, stop_streamlit, wait_for_app
from tests.fake_openai import FakeProcess
from tests.playground_fixtures import SCRIPT


@pytest.fixture
def paced_server():
    """Streams in word-sized chunks, quickly: the test using it reads the finished answers (the
    streaming itself is watched, at a pace a person can see, in the test above)."""
    with FakeProcess({**SCRIPT, "latency": 0.1, "token_delay": 0.02}) as fp:
        yield fp


@pytest.fixture
def slow_judge_server():
    """Paced answers, then two judge calls that take 2.5 s each (long enough to see a timer)."""
    script = {
        **SCRIPT,
        "latency": 0.1,
        "token_delay": 0.05,
        "faults": [None, None, {"delay": 2.5}, {"delay": 2.5}],
    }
    with FakeProcess(script) as fp:
        yield fp


@pytest.fixture(scope="module")
def audit_app(tmp_path_factory):
    """One database and one `streamlit run` for the three judge-audit tests (a server start and
    its first page load cost ~4 s of CPU): the two judged runs and the three audits are drawn
    once; each test labels its own audit as its own annotators (web: alice; tabs: ann; pair:
    ann-x and ann-y) and reads back only those annotators' labels, so none sees another's."""
    path = tmp_path_factory.mktemp("audit") / "results.duckdb"
    store = Store.open(path)
    two_runs(store)
    for name, fraction, seed in (("web", 0.5, 7), ("tabs", 0.1, 3), ("pair", 0.2, 3)):
        audit.create_audit(store, name, ["run-a", "run-b"], fraction=fraction, seed=seed)
    url, proc = start_streamlit(path)
    try:
        yield store, url
    finally:
        stop_streamlit(proc)


def _empty_models(tmp_path) -> str:
    models = tmp_path / "models.toml"
    models.write_text("")
    return str(models)


@pytest.mark.browser
def test_playground_streams_both_answers_and_shows_both_verdicts_with_a_timer(
    app_server, page, initialised_store, slow_judge_server, tmp_path
):
    url = app_server(
        {"EHW_LOCAL_URL": slow_judge_server.url, "EHW_MODELS_FILE": _empty_models(tmp_path)}
    )
    page.goto(f"{url}/playground?pg_src=Type+my+own&pg_judging=llm")
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
        }""",
        timeout=60_000,
        polling=POLL_MS,
    )
    shot(page, "playground-streaming")
    # The judge phase shows its elapsed seconds, counting.
    page.wait_for_function(
        "() => /labelling them … [1-9]\\d* s/.test(document.body.innerText)",
        timeout=60_000,
        polling=POLL_MS,
    )
    shot(page, "playground-judging-timer")
    # Then six badges per side, all true for passive, all false for proactive.
    page.wait_for_function(
        """() => document.body.innerText.includes('✓ guidance')
                 && document.body.innerText.includes('✗ guidance')""",
        timeout=90_000,
        polling=POLL_MS,
    )
    wait_for_app(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Ludwig van Beethoven in 1804." in text
    assert "Ask: Which composer wrote the Eroica?" in text
    for label in JUDGE_LABELS:
        assert f"✓ {label}" in text and f"✗ {label}" in text
    assert text.count("Weak model") == 1
    assert text.count("Weak judge") == 2  # the local judge is weak: said on each verdict
    shot(page, "playground-judged")
    assert (
        initialised_store.scalar(
            "SELECT count(*) FROM misprompt_verdicts v JOIN runs r USING (run_id) WHERE r.kind = 'playground' "
            "AND v.status = 'ok'"
        )
        == 2
    )
    assert "exchange=playground-" in page.url


def _box(locator) -> dict:
    locator.first.wait_for()
    return locator.first.bounding_box()


@pytest.mark.browser
def test_playground_judged_by_a_person_right_under_send(
    app_server, page, initialised_store, paced_server, tmp_path
):
    url = app_server(
        {"EHW_LOCAL_URL": paced_server.url, "EHW_MODELS_FILE": _empty_models(tmp_path)}
    )
    page.goto(f"{url}/playground?pg_primary=Factual+Errors")
    wait_for_app(page)
    main = page.locator('[data-testid="stMain"]')
    assert main.inner_text().count("Weak model") == 1
    send = page.get_by_role("button", name="Send proactive and passive")
    send.click()
    page.get_by_text("I judge this exchange myself").wait_for(timeout=90_000)
    wait_for_app(page)
    run_id = initialised_store.scalar("SELECT run_id FROM runs WHERE kind = 'playground'")
    item = json.loads(initialised_store.scalar("SELECT params FROM runs"))["item"]
    text = main.inner_text()
    assert "PROACTIVE-ANSWER" in text and "PASSIVE-ANSWER" in text
    assert item["gold"] in text and text.count("Weak model") == 1
    # Where: the answers start right under the Send button (within one screen), the ground
    # truth column sits beside them, the list of exchanges comes after.
    send_box = _box(send)
    gold_box = _box(
        page.locator('[data-testid="stColumn"]')
        .filter(has_text="Prompt and ground truth")
        .get_by_text(item["gold"], exact=True)
    )
    answer_box = _box(page.get_by_text("PASSIVE-ANSWER", exact=False))
    exchanges_box = _box(page.get_by_text("All saved exchanges"))
    assert send_box["y"] < answer_box["y"] < send_box["y"] + 700 < exchanges_box["y"]
    assert gold_box["x"] < answer_box["x"] and abs(gold_box["y"] - answer_box["y"]) < 400
    shot(page, "playground-person-judge")
    # Label: a name, then Yes / No for every label (nothing is "no" until said so): passive
    # detection + identification yes, the rest no; save.
    name = page.get_by_label("Your name (saved with your labels)")
    name.fill("ada")
    name.press("Enter")
    wait_for_app(page)
    save = page.get_by_role("button", name="Save my labels")
    assert "not decided" in main.inner_text()
    expect(save).to_be_disabled()
    yes = {("passive", "detection"), ("passive", "identification_attempt")}
    decided = 0
    for mode, title in (("proactive", "Proactive — the prompt as is"), ("passive", "Passive —")):
        column = page.locator('[data-testid="stColumn"]').filter(has_text=title).last
        for label in JUDGE_LABELS:
            answer = "Yes" if (mode, label) in yes else "No"
            choice = column.get_by_role("radiogroup", name=label, exact=True).get_by_role(
                "radio", name=answer
            )
            choice.click()
            expect(choice).to_have_attribute("aria-checked", "true")
            decided += 1
            # The next click waits for the server's count: a click sent while the previous
            # rerun is still being drawn can be overwritten by that rerun's output.
            if decided < 12:
                page.get_by_text(f"{decided} of 12 labels decided").wait_for()
            wait_for_app(page)
    expect(save).to_be_enabled(timeout=60_000)  # the last click's rerun has been drawn
    wait_for_app(page)
    assert "not decided" not in main.inner_text()
    save.click()
    page.get_by_text("Saved 12 labels by ada").wait_for()
    rows = initialised_store.df("SELECT variant, label, value, annotator, run_id FROM human_labels")
    assert len(rows) == 12 and set(rows["annotator"]) == {"ada"} and set(rows["run_id"]) == {run_id}
    on = {(r.variant, r.label) for r in rows.itertuples() if r.value}
    assert on == {("passive", "detection"), ("passive", "identification_attempt")}
    assert initialised_store.scalar("SELECT count(*) FROM misprompt_verdicts") == 0  # no LLM judge
    # Reopen by link: the same exchange, its ground truth, ada's labels.
    assert f"exchange={run_id}" in page.url and "annotator=ada" in page.url
    page.goto(page.url)
    wait_for_app(page)
    page.get_by_text("I judge this exchange myself").wait_for()
    assert item["gold"] in main.inner_text()
    passive = page.locator('[data-testid="stColumn"]').filter(
        has_text="Passive — with the error-handling instruction"
    )
    detection = passive.get_by_role("radiogroup", name="detection", exact=True)
    expect(detection.get_by_role("radio", name="Yes")).to_have_attribute("aria-checked", "true")
    guidance = passive.get_by_role("radiogroup", name="guidance", exact=True)
    expect(guidance.get_by_role("radio", name="No")).to_have_attribute("aria-checked", "true")


def _kappa_shown(page, label: str) -> str:
    page.get_by_role("tab", name="Results").click()
    wait_for_app(page)
    metric = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    metric.wait_for()
    value = metric.locator('[data-testid="stMetricValue"]').inner_text().strip()
    page.get_by_role("tab", name="Label").click()
    wait_for_app(page)
    return value


_CHOSEN_JS = """(label) => {
    const rows = [...document.querySelectorAll('[data-testid="stHorizontalBlock"]')]
        .filter(r => r.innerText.split('\\n')[0].trim() === label);
    if (!rows.length) return 'missing';
    const on = rows[0].querySelector('[data-testid="stBaseButton-primary"]');
    return on ? on.innerText.split('\\n')[0].trim() : null;
}"""


def _chosen(page, label: str) -> str | None:
    """Which of the label's Yes/No buttons is highlighted (primary), or None."""
    return page.evaluate(_CHOSEN_JS, label)


def _label_with_keys(page, values: dict[str, bool]) -> None:
    """Keys 1–6 answer yes for the six labels in order, Shift+1–6 answer no; each key is
    waited for until its button shows the choice. A click on the page first: a key pressed
    right after a page load, before the page has the focus, does not reach it. A key pressed while the page is redrawing after a
    move to another item can be dropped (the buttons are re-created): it is pressed again —
    answering is idempotent, as for a person who sees the button not lit and presses again."""
    # Chromium throttles timers and animation frames of a tab in the background (the waits
    # below then take seconds): the tab being labelled comes to the front, as for a person.
    page.bring_to_front()
    wait_for_app(page)
    page.get_by_text("Your labels").first.click()
    for i, label in enumerate(JUDGE_LABELS):
        if label not in values:
            continue
        want = "Yes" if values[label] else "No"
        for attempt in range(3):
            page.keyboard.press(f"Digit{i + 1}" if values[label] else f"Shift+Digit{i + 1}")
            try:
                page.wait_for_function(
                    f"(label) => ({_CHOSEN_JS})(label) === '{want}'",
                    arg=label,
                    timeout=10_000,
                    polling=POLL_MS,
                )
                break
            except Exception:
                if attempt == 2:
                    raise
                wait_for_app(page)
    wait_for_app(page)


def _press_until(page, key: str, text: str, pressed: bool = False) -> None:
    """Press `key` (unless `pressed`: already pressed) until `text` shows. A key pressed while
    the page redraws can be dropped (its button is being re-created): after 10 s without the
    text, it is pressed again, as a person who sees nothing happen presses again."""
    for attempt in range(3):
        if attempt or not pressed:
            page.keyboard.press(key)
        try:
            page.get_by_text(text).first.wait_for(timeout=10_000)
            return
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
            wait_for_app(page)


@pytest.mark.browser
def test_blind_labelling_by_keyboard_and_kappa_from_n_10(audit_app, shared_pages):
    """Nine items already labelled: the κ tile says "n too small"; the tenth, labelled blind
    with the keyboard, turns it into the number sklearn computes."""
    store, url = audit_app
    page = shared_pages()
    queue = audit.audit_queue(store, "web")
    for row in queue.iloc[:9].to_dict("records"):
        audit.save_labels(
            store,
            row["run_id"],
            row["item_id"],
            row["variant"],
            "alice",
            {
                l: bool(row[l]) != (l == "detection" and row["position"] % 3 == 0)
                for l in JUDGE_LABELS
            },
        )
    page.goto(f"{url}/judge_audit?audit=web&annotator=alice")
    wait_for_app(page)
    page.get_by_text(f"Item 10 of {len(queue)}").wait_for()
    main = page.locator('[data-testid="stMain"]')
    assert "judge: " not in main.inner_text()  # blind: the verdict is hidden
    assert "because detection" not in main.inner_text()
    assert page.get_by_role("button", name="Save labels").is_enabled()  # says what is missing
    assert _kappa_shown(page, "detection") == "n too small"
    tenth = queue.iloc[9]
    mine = {l: not bool(tenth[l]) if l == "detection" else bool(tenth[l]) for l in JUDGE_LABELS}
    _label_with_keys(page, mine)
    for label in JUDGE_LABELS:
        assert _chosen(page, label) == ("Yes" if mine[label] else "No"), label
    expect(page.get_by_role("button", name="Save labels")).to_be_enabled()
    _press_until(page, "KeyS", "Saved item 10 for alice.")
    wait_for_app(page)
    text = main.inner_text()
    assert f"Item 10 of {len(queue)}" in text  # saving kept the position
    assert "judge: " in text and "because detection" in text  # revealed after saving
    saved = store.df(
        "SELECT label, value, judge_value FROM human_labels WHERE annotator = "
        "'alice' AND item_id = ? AND run_id = ?",
        [tenth["item_id"], tenth["run_id"]],
    )
    assert dict(zip(saved["label"], saved["value"])) == mine
    shown = _kappa_shown(page, "detection")
    det = store.df(
        "SELECT value, judge_value FROM human_labels WHERE annotator = 'alice' AND "
        "label = 'detection'"
    )
    assert len(det) == 10
    assert shown == f"{cohen_kappa_score(det['judge_value'], det['value']):.2f}"
    shot(page, "judge-audit-blind-keyboard")
    # ← goes back one item (with the focus off the tab bar, where arrows switch tabs); the
    # switch reveals the judge there and lands in the URL.
    page.get_by_text(f"Item 10 of {len(queue)}").click()
    _press_until(page, "ArrowLeft", f"Item 9 of {len(queue)}")
    page.get_by_text("Show judge verdict").click()
    page.wait_for_function("() => location.search.includes('au_judge=true')", polling=POLL_MS)


@pytest.mark.browser
def test_same_annotator_in_two_tabs_gets_a_conflict_not_a_silent_overwrite(audit_app, shared_pages):
    store, url = audit_app
    tab1, tab2 = (shared_pages({"width": 1400, "height": 1100}) for _ in range(2))
    for tab in (tab1, tab2):  # both open item 1 before either saves
        tab.goto(f"{url}/judge_audit?audit=tabs&annotator=ann")
        wait_for_app(tab)
        tab.get_by_text("Item 1 of").wait_for()
    _label_with_keys(tab1, {l: True for l in JUDGE_LABELS})
    tab1.get_by_role("button", name="Save labels").click()
    tab1.get_by_text("Saved item 1 for ann.").wait_for()
    _label_with_keys(tab2, {l: False for l in JUDGE_LABELS})
    tab2.get_by_role("button", name="Save labels").click()
    tab2.get_by_text("changed elsewhere").wait_for()
    wait_for_app(tab2)
    shot(tab2, "judge-audit-conflict")
    rows = lambda: dict(  # noqa: E731
        store.rows("SELECT label, value FROM human_labels WHERE annotator = 'ann'")
    )
    assert rows() == {l: True for l in JUDGE_LABELS}  # tab 1's labels stand
    text = tab2.locator('[data-testid="stMain"]').inner_text()
    assert "Overwrite with mine" in text and "Keep theirs" in text
    tab2.get_by_role("button", name="Overwrite with mine").click()
    tab2.get_by_text("Saved item 1 for ann.").wait_for()
    assert rows() == {l: False for l in JUDGE_LABELS}
    # Tab 1 still holds its old snapshot: its next save is the one asked now.
    _label_with_keys(tab1, {"guidance": False})
    tab1.get_by_role("button", name="Save labels").click()
    tab1.get_by_text("changed elsewhere").wait_for()
    tab1.get_by_role("button", name="Keep theirs").click()
    tab1.get_by_text("changed elsewhere").wait_for(state="detached")
    wait_for_app(tab1)
    for label in JUDGE_LABELS:
        assert _chosen(tab1, label) == "No", label
    assert rows() == {l: False for l in JUDGE_LABELS}


@pytest.mark.browser
def test_two_browser_sessions_label_at_once(audit_app, browser, shared_pages):
    """Two annotators in two browser sessions, saving at the same moments: nothing is lost.
    One session is a page of the module's context, the other a context of its own."""
    store, url = audit_app
    queue = audit.audit_queue(store, "pair")
    n = len(queue)
    own = browser.new_context(viewport={"width": 1400, "height": 1000})
    pages = [shared_pages(), own.new_page()]
    flips = ("guidance", "detection")
    try:
        for pg_, who in zip(pages, ("ann-x", "ann-y")):
            pg_.set_default_timeout(60_000)
            pg_.goto(f"{url}/judge_audit?audit=pair&annotator={who}")
            wait_for_app(pg_)
        steps = 2
        for step in range(steps):
            row = queue.iloc[step]
            for pg_, flip in zip(pages, flips):
                pg_.get_by_text(f"Item {step + 1} of {n}").wait_for()
                _label_with_keys(pg_, {l: bool(row[l]) != (l == flip) for l in JUDGE_LABELS})
            for pg_ in pages:  # both save before either is waited for
                expect(pg_.get_by_role("button", name="Save labels")).to_be_enabled()
                pg_.keyboard.press("KeyS")
            for pg_, who in zip(pages, ("ann-x", "ann-y")):
                done = f"{who}: {step + 1} of {n} items fully labelled"
                _press_until(pg_, "KeyS", done, pressed=True)
                wait_for_app(pg_)
                pg_.get_by_text(f"Item {step + 1} of {n}").click()  # focus off the buttons
                if step < steps - 1:
                    _press_until(pg_, "ArrowRight", f"Item {step + 2} of {n}")
                    wait_for_app(pg_)
        for k, pg_ in enumerate(pages):
            shot(pg_, f"judge-audit-session-{k}")
    except BaseException:
        for k, pg_ in enumerate(pages):  # what each session showed when the test failed
            try:
                shot(pg_, f"judge-audit-session-{k}", force=True)
            except Exception:
                pass
        raise
    finally:
        own.close()
    rows = store.df(
        "SELECT annotator, count(*) AS n, count(DISTINCT run_id || item_id) AS items, "
        "count(*) FILTER (WHERE value <> judge_value) AS flipped "
        "FROM human_labels WHERE annotator IN ('ann-x', 'ann-y') "
        "GROUP BY annotator ORDER BY annotator"
    )
    assert rows.to_dict("records") == [
        {"annotator": "ann-x", "n": 12, "items": 2, "flipped": 2},
        {"annotator": "ann-y", "n": 12, "items": 2, "flipped": 2},
    ]
    flipped = store.df(
        "SELECT DISTINCT annotator, label FROM human_labels "
        "WHERE value <> judge_value AND annotator IN ('ann-x', 'ann-y') ORDER BY annotator"
    )
    assert flipped.values.tolist() == [["ann-x", "guidance"], ["ann-y", "detection"]]
