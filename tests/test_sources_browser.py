"""Results from other tools in a real browser: upload an Inspect AI log and an lm-evaluation-
harness samples file (as the tools wrote them, tests/data/tools) on the Import page, import
them, and find the runs on the Runs page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import *  # noqa: F401,F403  (fixtures: browser, app_server, page)
from tests.browser import POLL_MS, shot, wait_for_app

TOOLS = Path(__file__).parent / "data" / "tools"
PC_INSPECT = TOOLS / "inspect" / "pcbench_a.eval"
LME_SAMPLES = next((TOOLS / "lm_eval" / "out" / "fixtures__fixture-model-a").glob("samples_*"))


def _body_has(page, text: str, timeout: int = 60_000) -> None:
    page.wait_for_function(
        "(t) => document.body.innerText.includes(t)", arg=text, timeout=timeout, polling=POLL_MS
    )


def _upload(page, path: Path) -> None:
    box = page.locator('[data-testid="stFileUploader"]').filter(has_text="Results file")
    box.locator('input[type="file"]').set_input_files(str(path))
    _body_has(page, path.name)
    wait_for_app(page)


@pytest.mark.browser
def test_upload_results_and_see_the_runs(app_server, page, initialised_store) -> None:
    url = app_server()
    page.goto(url + "/import_data")
    wait_for_app(page)

    # an Inspect log whose sample ids are PCBench pids: matched to pcbench-sample by id
    _upload(page, PC_INSPECT)
    page.get_by_role("button", name="Import results").click()
    _body_has(page, "Imported 6 responses as run(s) insp-openai-fixture-model-a-")
    shot(page, "import-results-inspect")

    # lm-eval's samples file: 3 of its 15 documents are in no stored set, so it is refused
    # as it is; a new item set built from the file takes all 15
    _upload(page, LME_SAMPLES)
    _body_has(page, "This file would be refused as it is:")
    _body_has(page, "3 sample item(s) match no item")
    new_set = page.get_by_label("…or build a new item set named")
    new_set.fill("lme-browser")
    new_set.press("Enter")
    page.locator('[data-testid="stSelectbox"]').filter(has_text="of benchmark").click()
    page.get_by_role("option", name="processbench").click()
    page.wait_for_function(
        "() => !document.body.innerText.includes('This file would be refused')",
        polling=POLL_MS,
    )
    wait_for_app(page)
    page.get_by_role("button", name="Import results").click()
    _body_has(page, "Imported 15 responses as run(s) lme-")
    shot(page, "import-results-lm-eval")

    runs = dict(initialised_store.rows("SELECT run_id, model FROM runs"))
    assert len(runs) == 2
    for run_id, count in [
        (next(r for r in runs if r.startswith("insp-")), 6),
        (next(r for r in runs if r.startswith("lme-")), 15),
    ]:
        page.goto(f"{url}/runs?run={run_id}")
        wait_for_app(page)
        _body_has(page, f"done: {count} of {count} done, 0 failed")
        page.locator('[data-testid="stText"]').filter(has_text=runs[run_id]).first.wait_for()
    shot(page, "import-results-runs")
