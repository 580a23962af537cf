"""Export: one row per response in JSONL, CSV and Parquet, with labels and score fields."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import export
from core.store import Store
from tests.core_cli import run_core
from tests.misprompt_fixtures import insert_verdicts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def filled(initialised_store: Store) -> Store:
    """A Mis-prompt run (2 responses, one verdict inconsistent) and an ErrorBench-like run."""
    s = initialised_store
    ids = [
        r[0]
        for r in s.rows(
            "SELECT item_id FROM items WHERE item_set='misprompt-sample' "
            "ORDER BY is_error DESC, item_id LIMIT 1"
        )
    ]
    ids += [
        r[0]
        for r in s.rows(
            "SELECT item_id FROM items WHERE item_set='misprompt-sample' "
            "AND NOT is_error ORDER BY item_id LIMIT 1"
        )
    ]
    s.execute(
        "INSERT INTO runs (run_id, benchmark, item_set, model, endpoint, setting, mode, "
        "template_id, params, status) VALUES ('mp1', 'misprompt', 'misprompt-sample', "
        "'m-1', 'ep', 'zero-shot', 'proactive', 'misprompt/zero-shot.v1', "
        "'{\"temperature\": 0}', 'done')"
    )
    for n, item in enumerate(ids):
        s.execute(
            "INSERT INTO responses (run_id, item_id, variant, status, messages, response, "
            "attempts, prompt_tokens, completion_tokens, latency_ms, cached, scores) VALUES "
            "('mp1', ?, 'zero-shot', 'ok', ?, ?, 1, 10, 5, 12.5, false, NULL)",
            [
                item,
                json.dumps([{"role": "user", "content": f'q{n}, "quoted"\nline'}]),
                f"answer {n}",
            ],
        )
        labels = [True, n == 0, True, False, False, n == 0]  # n=1: accurate w/o attempt
        verdict = {
            "run_id": "mp1",
            "item_id": item,
            "variant": "zero-shot",
            "judge_model": "judge-1",
            "status": "ok",
            **dict(zip(JUDGE_LABELS, labels)),
            "rationales": json.dumps({k: f"{k} because {n}" for k in JUDGE_LABELS}),
            "raw": "{raw}",
            "parse_note": "schema",
            "inconsistent": n == 1,
        }
        insert_verdicts(s, pd.DataFrame([verdict]))
    s.execute(
        "INSERT INTO runs (run_id, benchmark, item_set, model, setting, status) VALUES "
        "('eb1', 'errorbench', 'none', 'm-2', 'blind,anchored', 'done')"
    )
    for cond, scores in [
        ("blind", {"n_hat": 3, "source": "total", "edits": [[0, 1, 2, "x"]]}),
        ("anchored", {"n_hat": 5, "source": "lines", "extra": 1.5}),
    ]:
        s.execute(
            "INSERT INTO responses (run_id, item_id, variant, status, messages, response, "
            "scores) VALUES ('eb1', 'p1', ?, 'ok', '[]', 'ERROR 1: x', ?)",
            [cond, json.dumps(scores)],
        )
    return s


def test_misprompt_rows_have_labels_rationales_and_flag(filled: Store) -> None:
    frame = export.export_frame(filled, ["mp1"])
    assert len(frame) == 2
    assert set(frame["model"]) == {"m-1"} and set(frame["variant"]) == {"zero-shot"}
    first, second = frame.iloc[0], frame.iloc[1]
    assert first["is_error"] and not second["is_error"]
    assert first["secondary_category"] is not None
    assert [first[k] for k in JUDGE_LABELS] == [True, True, True, False, False, True]
    assert not second["identification_attempt"] and second["identification_accurate"]
    assert bool(second["inconsistent"]) and not bool(first["inconsistent"])
    assert second["guidance_rationale"] == "guidance because 1"
    # the generic record: true labels as letters; correct = detected on error, not on control
    assert (first["answer"], bool(first["correct"])) == ("D IA IC G", True)
    assert (second["answer"], bool(second["correct"])) == ("D IC", False)
    assert first["messages"][0]["content"] == 'q0, "quoted"\nline'
    assert "params" not in frame.columns


def test_three_formats_round_trip(filled: Store, tmp_path: Path) -> None:
    expected = export.export_frame(filled, ["mp1"])
    for fmt in export.FORMATS:
        out = tmp_path / f"x.{fmt}"
        assert export.export(filled, ["mp1"], fmt, out) == 2
        if fmt == "jsonl":
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            assert rows[0]["messages"] == expected["messages"][0]
            assert rows[1]["inconsistent"] is True and rows[1]["detection"] is True
            got = pd.DataFrame(rows)
        elif fmt == "csv":
            got = pd.read_csv(out)
            assert json.loads(got["messages"][0]) == expected["messages"][0]
        else:
            got = pq.read_table(out).to_pandas()
            assert json.loads(got["messages"][0]) == expected["messages"][0]
        assert list(got["item_id"].astype(str)) == list(expected["item_id"])
        assert list(got["response"]) == ["answer 0", "answer 1"]
        assert [bool(v) for v in got["correction_accurate"]] == [False, False]
        assert list(got["detection_rationale"]) == ["detection because 0", "detection because 1"]


def test_other_benchmarks_carry_score_fields(filled: Store, tmp_path: Path) -> None:
    frame = export.export_frame(filled, ["eb1"])
    assert "detection" not in frame.columns  # no judge columns for a judge-less run
    assert sorted(frame["variant"]) == ["anchored", "blind"]
    blind = frame[frame["variant"] == "blind"].iloc[0]
    assert blind["score_n_hat"] == 3 and blind["score_source"] == "total"
    assert json.loads(blind["score_edits"]) == [[0, 1, 2, "x"]]
    assert pd.isna(blind["score_extra"])
    out = tmp_path / "eb.parquet"
    export.export(filled, ["eb1"], "parquet", out)
    table = pq.read_table(out).to_pandas()
    assert sorted(table["score_n_hat"].tolist()) == [3, 5]
    jsonl = export.to_bytes(frame, "jsonl").decode().splitlines()
    assert json.loads(jsonl[0])["scores"]["source"] in ("total", "lines")


def test_several_runs_and_unknown_run(filled: Store) -> None:
    assert len(export.export_frame(filled, export.resolve_runs(filled, ["mp1,run:eb1"]))) == 4
    with pytest.raises(export.ExportError, match="unknown run"):
        export.resolve_runs(filled, ["nope"])


def test_cli_export(filled: Store, tmp_path: Path) -> None:
    out = tmp_path / "o.csv"
    args = ["export", "--source", "mp1", "--format", "csv", "--out", str(out)]
    done = run_core(*args, "--db", str(filled.path))
    assert done.returncode == 0, done.stderr
    assert "wrote 2 rows" in done.stdout and len(pd.read_csv(out)) == 2
    args[args.index("mp1")] = "missing"
    args[args.index(str(out))] = str(tmp_path / "missing.csv")
    done = run_core(*args, "--db", str(filled.path))
    assert done.returncode == 1 and "unknown run(s): missing" in done.stderr
    assert not (tmp_path / "missing.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv", "results.duckdb"]


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised() -> None:
    """OWASP CSV injection: = + - @ tab CR at a cell's start get a leading apostrophe; other
    text and numbers are untouched, and JSONL/Parquet keep the exact text."""
    frame = pd.DataFrame(
        {
            "response": [
                '=HYPERLINK("http://x")',
                "+1+1",
                "-2+3",
                "@SUM(A1)",
                "\tx",
                "\rx",
                "plain = text",
                "it's",
            ],
            "n": [-1, 2, 3, 4, 5, 6, 7, 8],
        }
    )
    frame["messages"] = frame["scores"] = None
    safe = export.safe_csv_frame(frame)
    assert safe["response"].tolist() == [
        '\'=HYPERLINK("http://x")',
        "'+1+1",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "plain = text",
        "it's",
    ]
    assert safe["n"].tolist() == frame["n"].tolist()
    assert frame["response"][0] == '=HYPERLINK("http://x")'  # the input is not modified
    back = pd.read_csv(io.BytesIO(export.to_bytes(frame, "csv")))
    assert back["response"][0] == '\'=HYPERLINK("http://x")' and back["n"][0] == -1
    assert json.loads(export.to_bytes(frame, "jsonl").splitlines()[0])["response"] == (
        '=HYPERLINK("http://x")'
    )
