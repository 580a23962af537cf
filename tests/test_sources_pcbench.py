"""The PCBench authors' released verdicts imported as runs (core.benchmarks.pcbench.verdicts).

The files are the authors' own (../shared/data/pcbench_authors, MIT, SOURCE.md), read by path;
the expected rates come from their all_models_overall_summary.csv, read here independently."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from core.benchmarks.pcbench.metrics import metrics
from core.sources import SourceError
from core.sources.service import Options, import_file, plan_file
from tests.core_cli import run_core

AUTHORS = Path("/work/shared/data/pcbench_authors")
MODELS = ("gpt-4o", "Qwen3-8B", "DeepSeek-V3")
pytestmark = pytest.mark.skipif(not AUTHORS.is_dir(), reason="shared data not present")


def summary() -> dict[str, dict[str, str]]:
    with open(AUTHORS / "all_models_overall_summary.csv", newline="") as handle:
        return {row["Model"]: row for row in csv.DictReader(handle)}


@pytest.mark.parametrize("model", MODELS)
def test_rates_equal_the_authors_summary(initialised_store, model) -> None:
    path = AUTHORS / f"{model}_eval_result.jsonl"
    plans, written = import_file(initialised_store, path, Options())
    assert written == 2400 and plans[0].run_id == f"pca-{model}"
    table = metrics(initialised_store, plans[0].run_id)
    overall = table[(table["error_type"] == "all") & (table["difficulty"] == "all")]
    by_variant = overall.set_index("variant")
    theirs = summary()[model]
    for variant, column in (("proactive", "active"), ("assisted", "passive")):
        row = by_variant.loc[[variant]].iloc[0]
        assert int(row["n"]) == int(theirs["total_evaluated"]) == 1200
        assert int(row["critiqued"]) == int(theirs[f"{column}_recognition_count"])
        assert round(row["rate"] / 100, 4) == pytest.approx(
            float(theirs[f"{column}_recognition_rate"])
        )


def test_gpt4o_through_the_cli_and_the_published_table(initialised_store, db_path) -> None:
    done = run_core(
        "import", "results", str(AUTHORS / "gpt-4o_eval_result.jsonl"), "--db", str(db_path)
    )
    assert done.returncode == 0, done.stderr
    assert "1200 items: 0 matched, 1200 new" in done.stdout
    out = run_core(
        "metrics", "pcbench", "--source", "pca-gpt-4o", "--format", "json", "--db", str(db_path)
    )
    rows = {(r["variant"], r["error_type"], r["difficulty"]): r for r in json.loads(out.stdout)}
    assert rows[("proactive", "all", "all")]["critiqued"] == 132
    assert rows[("assisted", "all", "all")]["critiqued"] == 689
    assert rows[("proactive", "all", "all")]["rate"] == pytest.approx(11.0)
    assert rows[("assisted", "all", "all")]["rate"] == pytest.approx(57.41666, abs=1e-4)
    # the published statistics (a different file of the authors') agree: counts and lengths
    pub = metrics(initialised_store, "published")
    pub = pub[(pub["model"] == "gpt-4o") & (pub["error_type"] == "all")]
    for variant in ("proactive", "assisted"):
        mine = rows[(variant, "all", "all")]
        theirs = pub[(pub["variant"] == variant) & (pub["difficulty"] == "all")].iloc[0]
        assert mine["critiqued"] == theirs["critiqued"]
        assert mine["mean_len_tokens"] == pytest.approx(theirs["mean_len_tokens"])


def test_same_file_again_changes_nothing_and_another_under_the_name_is_refused(
    initialised_store, tmp_path
) -> None:
    path = AUTHORS / "gpt-4o_eval_result.jsonl"
    import_file(initialised_store, path, Options())
    version = initialised_store.data_version()
    plans, written = import_file(initialised_store, path, Options())
    assert written == 0 and plans[0].unchanged
    assert initialised_store.data_version() == version
    other = tmp_path / "gpt-4o_eval_result.jsonl"
    shutil.copyfile(AUTHORS / "Qwen3-8B_eval_result.jsonl", other)
    with pytest.raises(SourceError, match="already has a run 'pca-gpt-4o'"):
        import_file(initialised_store, other, Options())
    assert (
        initialised_store.scalar("SELECT count(*) FROM results WHERE run_id = 'pca-gpt-4o'") == 2400
    )
    assert (
        initialised_store.scalar(
            "SELECT params->>'$.source.file' FROM runs WHERE run_id = 'pca-gpt-4o'"
        )
        == "gpt-4o_eval_result.jsonl"
    )


def test_verdicts_link_to_items_imported_later(initialised_store, tmp_path) -> None:
    """The run names item set 'pcbench' before it exists; importing problems under that name
    later links them (error type and difficulty rows appear)."""
    import_file(initialised_store, AUTHORS / "gpt-4o_eval_result.jsonl", Options())
    pids = [
        json.loads(line)["pid"]
        for line in (AUTHORS / "gpt-4o_eval_result.jsonl").read_text().splitlines()
    ][:40]
    sample = [
        json.loads(line)
        for line in Path("data/samples/pcbench_sample.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    records = []
    for pid, rec in zip(pids, sample * 10):
        records.append({**rec, "pid": pid})
    items = tmp_path / "problems.jsonl"
    items.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    done = run_core("import", "pcbench", str(items), "--name", "pcbench")
    assert done.returncode == 0, done.stderr
    table = metrics(initialised_store, "pca-gpt-4o")
    typed = table[(table["error_type"] != "all") & (table["difficulty"] == "all")]
    assert typed["n"].sum() == 2 * 40  # 40 linked problems, both variants
    overall = table[(table["error_type"] == "all") & (table["difficulty"] == "all")]
    assert set(overall["n"]) == {1200}


def test_dry_run_writes_nothing(initialised_store, db_path) -> None:
    before = initialised_store.data_version()
    done = run_core("import", "results", str(AUTHORS / "Qwen3-8B_eval_result.jsonl"), "--dry-run")
    assert done.returncode == 0 and "dry run" in done.stdout
    assert "2400 samples of 1200 items" in done.stdout
    assert initialised_store.data_version() == before
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            '{"pid": "1", "GPT_eval_result": {}}\n{"pid": "1", "GPT_eval_result": {}}\n',
            "repeats line 1",
        ),
        ('{"pid": "1", "GPT_eval_result": {}}\nnot json\n', ":2: not JSON"),
        ('{"pid": "", "GPT_eval_result": {}}\n', ":1: a verdict needs"),
        ('{"pid": "3"}\n', "no 'GPT_eval_result'"),
    ],
)
def test_bad_verdict_files_name_the_line_and_write_nothing(
    initialised_store, tmp_path, text, why
) -> None:
    path = tmp_path / "m_eval_result.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError, match=why) as err:
        import_file(initialised_store, path, Options())
    assert str(path) in str(err.value)
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0
    assert initialised_store.scalar("SELECT count(*) FROM responses") == 0


def test_plan_counts_matched_ids_of_a_stored_set(initialised_store, tmp_path) -> None:
    """Ids are PCBench pids: with --item-set naming the shipped sample, its pids count as
    matched, the others as new."""
    sample_pids = {
        r[0]
        for r in initialised_store.rows(
            "SELECT item_id FROM items WHERE item_set = 'pcbench-sample'"
        )
    }
    lines = [
        json.loads(x) for x in (AUTHORS / "gpt-4o_eval_result.jsonl").read_text().splitlines()
    ][:5]
    renamed = sorted(sample_pids)[:3]
    keep = [{**x, "pid": pid} for x, pid in zip(lines, renamed)] + lines[3:]
    path = tmp_path / "gpt-4o_eval_result.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in keep), encoding="utf-8")
    plans = plan_file(initialised_store, path, Options(item_set="pcbench-sample"))
    assert (plans[0].matched, plans[0].new) == (3, 2)


def test_consistency_beside_the_published_table(initialised_store) -> None:
    from core.benchmarks.pcbench.queries import authors_consistency

    for model in MODELS:
        import_file(initialised_store, AUTHORS / f"{model}_eval_result.jsonl", Options())
    checks = authors_consistency(initialised_store)
    assert len(checks) == 6 and checks["match"].all()
    row = checks[(checks["model"] == "gpt-4o") & (checks["variant"] == "assisted")].iloc[0]
    assert (row["published_critiqued"], row["recomputed_critiqued"]) == (689, 689)
    assert row["recomputed_len_tokens"] == pytest.approx(row["published_len_tokens"])


def test_pcbench_page_shows_the_check(initialised_store) -> None:
    from streamlit.testing.v1 import AppTest

    import_file(initialised_store, AUTHORS / "gpt-4o_eval_result.jsonl", Options())
    at = AppTest.from_file(str(Path(__file__).parents[1] / "app.py"), default_timeout=90)
    at.switch_page("pages/pcbench_results.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("the authors' own verdicts" in s.value for s in at.subheader)
    frames = [d.value for d in at.dataframe]
    assert any(
        "recomputed_critiqued" in f.columns and 689 in set(f["recomputed_critiqued"])
        for f in frames
    )


def test_rescore_asks_nothing_of_verdicts_without_answers(initialised_store, tmp_path) -> None:
    """The released verdicts have no answer texts: our judge has nothing to judge, and says
    so, even where the problems are stored."""
    from tests.fake_openai import FakeOpenAI

    lines = (AUTHORS / "gpt-4o_eval_result.jsonl").read_text().splitlines()[:3]
    path = tmp_path / "gpt-4o_eval_result.jsonl"
    path.write_text("\n".join(lines) + "\n")
    import_file(initialised_store, path, Options())
    sample = Path("data/samples/pcbench_sample.jsonl").read_text(encoding="utf-8").splitlines()
    problems = tmp_path / "problems.jsonl"
    problems.write_text(
        "\n".join(
            json.dumps({**json.loads(rec), "pid": json.loads(line)["pid"]})
            for rec, line in zip(sample, lines)
        )
    )
    assert run_core("import", "pcbench", str(problems), "--name", "pcbench").returncode == 0
    assert initialised_store.scalar("SELECT count(*) FROM items WHERE item_set = 'pcbench'") == 3
    with FakeOpenAI() as judge:
        done = run_core(
            "rescore", "--source", "pca-gpt-4o", "--as", "ours", "--judge-base-url", judge.url,
            "--judge-model", "j", "--quiet",
        )  # fmt: skip
        assert judge.chat_requests == []
    assert (
        initialised_store.scalar(
            "SELECT count(*) FROM results WHERE run_id = 'pca-gpt-4o' AND judging = 'ours'"
        )
        == 0
    )
    assert done.returncode == 0 and "0/0 done" in done.stdout
