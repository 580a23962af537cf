"""The Import page takes a results file of another tool: it shows the matching counts first,
imports on the button, and says so when the same file comes again (AppTest)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).parents[1]
APP = str(ROOT / "app.py")
LOG = ROOT / "tests" / "data" / "tools" / "inspect" / "misprompt_b.eval"
AUTHORS = Path("/work/shared/data/pcbench_authors")


def _page(name: str, data: bytes) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/import_data.py")
    at.run()
    at.file_uploader(key="upload_results").set_value((name, data, "application/octet-stream"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_an_inspect_log_uploaded_shows_counts_then_imports(initialised_store) -> None:
    at = _page(LOG.name, LOG.read_bytes())
    plan = next(d.value for d in at.dataframe if "matched" in d.value.columns)
    assert plan.iloc[0]["item_set"] == "misprompt-sample" and plan.iloc[0]["matched"] == 10
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0  # nothing yet
    at.button(key="do_results").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Imported 10 responses" in s.value for s in at.success)
    assert initialised_store.rows("SELECT model, item_set FROM runs") == [
        ("openai/fixture-model-b", "misprompt-sample")
    ]
    at.button(key="do_results").click().run()
    assert any("Already imported" in i.value for i in at.info)
    assert initialised_store.scalar("SELECT count(*) FROM responses") == 10


def test_a_file_that_is_no_log_is_refused_by_name(initialised_store) -> None:
    at = _page("notes.json", b'{"hello": 1}')
    assert any("Nothing can be imported" in e.value for e in at.error)
    assert any("notes.json" in c.value for c in at.code) or "notes.json" in str(
        [t.value for t in at.text]
    )
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0
