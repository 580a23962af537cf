"""One label per (run, judging), the same on every page, and page caches that follow the store.

After a `rescore` (here: in-process CLI, as another terminal would), the next rerun of a page
that has already rendered shows the new judging's numbers and label (the caches are keyed on
the store's version), and the Runs tab names the judging it shows in its selector and title.
"""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.benchmarks.misprompt import metrics as mm
from core.benchmarks.misprompt import queries
from core.services.labels import judging_label, short_labels
from core.store import Store
from tests.test_rescore import _judged_template, _rejudge, _varying, judged_run  # noqa: F401, F811

ROOT = Path(__file__).resolve().parent.parent


def _page(**params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/misprompt_results.py")
    for key, value in params.items():
        at.query_params[key] = value
    return at


def _figures(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def _run_rows(fig: dict) -> list[str]:
    """The full run labels of a run heatmap (hover data), whatever its axis shows."""
    return list(fig["data"][0]["y"])


def test_judging_label_names_the_judging_shown() -> None:
    own = judging_label("r1", "m", "SmolLM2", "misprompt/judge.v1", "proactive", "default")
    again = judging_label("r1", "m", "j2", "misprompt/judge.v2", "proactive", "j2")
    assert own == "r1 · m (judge SmolLM2, misprompt/judge.v1, proactive)"
    assert again == "r1 · m (judge j2, misprompt/judge.v2, proactive, judging j2)"
    assert judging_label("b1", "m", None, None) == "b1 · m"  # a code-scored run


def test_short_labels_are_short_and_unique() -> None:
    long = ["x" * 60 + " (judge a)", "x" * 60 + " (judge b)", "short", "short"]
    out = short_labels(long)
    assert all(len(s) <= 24 for s in out) and len(set(out)) == len(out)
    assert out[2] == "short"


def test_a_rescore_in_another_process_shows_on_the_next_rerun(judged_run) -> None:  # noqa: F811
    store, _rows = judged_run
    at = _page(view="Categories", label="detection")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    before = [r for f in _figures(at) if f["data"][0].get("name") == "runs" for r in _run_rows(f)]
    assert before and all("judging j2" not in r for r in before)

    _rejudge(Store.open(store.path), "j2", "j2", _varying)  # another process's rescore
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    runs = queries.misprompt_runs(store)
    label = str(runs.set_index("run_id").at["r1", "row_label"])
    assert "judging j2" in label and "judge j2" in label
    figs = [f for f in _figures(at) if f["data"][0].get("name") == "runs"]
    assert figs and all(set(_run_rows(f)) == {label} for f in figs)
    want = mm.run_metrics(store, ["r1"], ci=False)
    want = want[(want["metric"] == "detection") & (want["category_level"] == "primary")]
    main = figs[0]["data"][0]  # every cell's value is in its hover data (grey ones too)
    shown = {x: c[0] for x, c in zip(main["x"], main["customdata"][0]) if c[0] is not None}
    expected = {c: round(v, 2) for c, v in zip(want["category"], want["f1"]) if v == v}
    assert shown and all(abs(shown[c] - expected[c]) < 1e-9 for c in shown)
    captions = " ".join(c.value for c in at.caption)
    assert "judge: j2" in captions


def test_runs_tab_labels_follow_the_picked_judging(judged_run) -> None:  # noqa: F811
    store, _rows = judged_run
    _rejudge(store, "j2", "j2", _varying)  # j2 is now the current judging
    at = _page(view="Runs", run="r1", judging="default")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    judgings = queries.judging_labels(
        __import__("core.benchmarks.misprompt.agreement", fromlist=["x"]).judgings(store),
        queries.misprompt_runs(store),
    )
    own = judgings[("r1", "default")]
    run_box = at.selectbox(key="w_run")
    assert run_box.value == "r1" and own in run_box.options
    title = next(f["layout"]["title"]["text"] for f in _figures(at) if "error_y" in f["data"][0])
    assert title.startswith(own) and "j2" not in title
    # the tiles count the picked judging's verdicts, not the current one's
    picked = queries.judging_diagnostics(store, "r1", "default")
    now = queries.judging_diagnostics(store, "r1", "j2")
    assert picked["inconsistent"] != now["inconsistent"]  # the two judgings differ here
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Inconsistent verdicts"] == f"{picked['inconsistent']:,}"
    assert tiles["Verdicts scored"] == f"{picked['verdicts_ok']:,}"


def test_run_heatmap_ticks_are_short_and_the_hover_full() -> None:
    import pandas as pd

    from core.benchmarks.misprompt import charts

    long = [f"run-{i}-" + "x" * 70 + " (judge j, misprompt/judge.v2, proactive)" for i in (1, 2)]
    frame = pd.DataFrame(
        {
            "row_label": long,
            "category": ["A", "A"],
            "f1": [50.0, 60.0],
            "ci_low": [40.0, 50.0],
            "ci_high": [60.0, 70.0],
            "n_error": [20, 20],
            "n_control": [20, 20],
        }
    )
    fig = charts.run_heatmap(frame, x="category", title="t", x_title="Category")
    ticks = list(fig.layout.yaxis.ticktext)
    assert all(len(t) <= 24 for t in ticks) and len(set(ticks)) == 2
    assert list(fig.data[0].y) == long and "%{y}" in fig.data[0].hovertemplate


def test_proactive_passive_shows_missing_values_as_a_dash_and_cites_no_spec(
    initialised_store,
) -> None:
    from tests.misprompt_fixtures import insert_run, random_verdicts

    insert_run(initialised_store, "pp-run", random_verdicts(20, 20, seed=1), model="tiny")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/proactive_passive.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    wide = at.dataframe[0].value
    # a missing value reads "–" (pages/ui/formats.py: Streamlit draws an empty cell "None"
    # whatever a Styler says); the CSV download keeps the NaN
    assert not wide.isna().to_numpy().any()
    assert (wide == "–").to_numpy().any()
    texts = [c.value for c in at.caption] + [m.value for m in at.markdown]
    assert not any("SPEC §" in t for t in texts)


def test_column_names_that_would_collide_on_a_phone_are_angled() -> None:
    """Four primary categories wrapped side by side ran into each other at 390 px (seen in a
    screenshot): names too wide for a phone's plot are angled; short ones stay level."""
    import pandas as pd

    from core.benchmarks.misprompt import charts
    from core.benchmarks.misprompt.taxonomy import PRIMARY

    def fig_for(columns: list[str]):
        frame = pd.DataFrame(
            {"row_label": "GPT-4o", "category": columns, "f1": [50.0] * len(columns)}
        )
        return charts.primary_heatmap(frame, "average", columns)

    assert fig_for(list(PRIMARY)).layout.xaxis.tickangle == -60
    assert fig_for(["A", "B", "C"]).layout.xaxis.tickangle == 0
