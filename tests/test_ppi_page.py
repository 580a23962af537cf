"""AppTest: the Judge audit page's judge-corrected estimates (issue 18, point 4) — judge-only
beside PPI with n_human, n_judge, interval and effective n; the judge judged again; the
same-family flag."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.services import audit
from core.services import judge_trust as jt
from tests.conftest import ROOT
from tests.test_ppi import LABEL, add_repeat, biased_run, label_sample

APP = str(ROOT / "app.py")
AUDIT = "pages/judge_audit.py"


def _open(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(AUDIT)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    return "\n".join(parts + [w.value for w in at.warning])


def _ppi_frame(at: AppTest):
    frames = [d.value for d in at.dataframe if "PPI [95% CI]" in d.value.columns]
    assert len(frames) == 1
    return frames[0]


@pytest.fixture
def labelled(store):
    truth, _ = biased_run(store)
    audit.create_audit(store, "p", ["run-a"], fraction=0.3, seed=1)
    label_sample(store, "p", truth)
    with store.session():
        yield store


def test_results_show_judge_only_beside_ppi(labelled):
    at = _open(audit="p", annotator="ann1", au_view="Results")
    shown = _ppi_frame(at)
    expected = jt.run_ppi(labelled, "run-a", "p")
    assert list(shown["label"]) == list(expected["label"])
    row = shown[(shown["label"] == LABEL) & (shown["metric"] == "rate")].iloc[0]
    want = expected[(expected["label"] == LABEL) & (expected["metric"] == "rate")].iloc[0]
    assert row["judge only"] == f"{want['judge_only'] * 100:.1f}%"
    assert row["PPI [95% CI]"] == jt.interval_text(want["ppi"], want["ci_low"], want["ci_high"])
    assert (row["n_human"], row["n_judge"]) == (want["n_human"], want["n_judge"])
    assert row["effective n"] == f"{want['n_effective']:.0f}"
    assert set(shown["metric"]) == {"rate", "F1"}
    texts = _texts(at)
    assert "Judge-corrected estimates" in texts
    assert jt.NOT_MEASURED in texts
    assert "Same model family" not in texts


def test_results_flag_one_family_and_show_rejudging(labelled):
    labelled.execute("UPDATE runs SET model = 'gpt-4o-mini', judge_model = 'gpt-4.1'")
    items = sorted(labelled.df("SELECT item_id FROM items")["item_id"])
    add_repeat(labelled, "run-a", "default@r2", items[:4])
    labelled.execute("UPDATE judgings SET created_at = TIMESTAMP '2000-01-01'")  # stays current
    at = _open(audit="p", annotator="ann1", au_view="Results")
    texts = _texts(at)
    assert "Same model family" in texts and "OpenAI" in texts
    assert jt.NOT_MEASURED not in texts
    changed = [d.value for d in at.dataframe if "share_changed" in d.value.columns]
    assert len(changed) == 1
    assert changed[0].set_index("label").loc[LABEL, "changed"] == 4
