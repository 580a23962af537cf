"""Table 9a/9b with Table 2's counts vs Table 4 (core/benchmarks/bbm/consistency.py), and the published
metrics keeping their `note`. The published cells are read here with the csv module."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest

from core.benchmarks.bbm import published
from core.benchmarks.bbm.consistency import mismatches, table9_vs_table4
from core.cli import main as cli

CSV = (
    Path(__file__).resolve().parent.parent / "data" / "published" / "bigbench_mistake_accuracy.csv"
)


def _cells() -> dict[tuple[str, str, str, str], float]:
    with CSV.open(newline="") as handle:
        return {
            (r["table"], r["task"], r["model"], r["method"]): float(r["value_percent"])
            for r in csv.DictReader(handle)
            if r["measure"] == "mistake_location_accuracy"
        }


def test_hand_case_logical_deduction_gpt4_turbo() -> None:
    c = _cells()
    key = ("Logical deduction", "GPT-4-Turbo", "direct_trace")
    a, b, t4 = c[("9a", *key)], c[("9b", *key)], c[("4", *key)]
    by_hand = (a * 6 + b * 294) / 300  # Table 2: 300 traces, 294 with a mistake
    table = table9_vs_table4(published.read_bbm())
    row = table[
        (table["task"] == key[0]) & (table["model"] == key[1]) & (table["method"] == key[2])
    ].iloc[0]
    assert row["recomputed_table_4"] == pytest.approx(by_hand, abs=1e-4)
    assert row["difference"] == pytest.approx(by_hand - t4, abs=1e-4)
    assert round(by_hand - t4, 2) == 1.06 and not row["consistent"]


def test_five_direct_trace_cells_outside_dyck_do_not_reproduce() -> None:
    check = table9_vs_table4(published.read_bbm())
    bad = mismatches(check)
    outside = bad[bad["task"] != "Dyck languages"]
    assert set(zip(outside["task"], outside["model"])) == {
        ("Word sorting", "GPT-4-Turbo"),
        ("Logical deduction", "GPT-4-Turbo"),
        ("Multistep arithmetic", "GPT-4-Turbo"),
        ("Tracking shuffled objects", "GPT-3.5-Turbo"),
        ("Tracking shuffled objects", "GPT-4"),
    }
    assert set(outside["method"]) == {"direct_trace"}
    assert outside["difference"].abs().max() == pytest.approx(1.0638, abs=1e-4)
    # every other non-Dyck cell reproduces within rounding
    good = check[(check["task"] != "Dyck languages") & check["consistent"].eq(True)]
    assert (good["difference"].abs() <= 0.011).all() and len(good) == 43
    # the * cells cannot be checked (their mistake counts are unpublished)
    starred = check[check["consistent"].isna()]
    assert len(starred) == 4 and set(starred["task"]) == {"Dyck languages"}


def test_synthetic_cells() -> None:
    rows = []
    for table, value in (("4", 50.0), ("9a", 10.0), ("9b", 60.0)):  # (10×34 + 60×266)/300 ≠ 50
        rows.append(
            {
                "table_id": table,
                "task": "Word sorting",
                "model": "M",
                "method": "direct_trace",
                "measure": "mistake_location_accuracy",
                "value": value,
                "note": None,
            }
        )
    frame = pd.DataFrame(rows)
    row = table9_vs_table4(frame).iloc[0]
    expected = (10.0 * 34 + 60.0 * 266) / 300
    assert row["recomputed_table_4"] == pytest.approx(expected, abs=1e-4)
    assert row["difference"] == pytest.approx(expected - 50.0, abs=1e-4)
    frame.loc[frame["table_id"] == "4", "value"] = round(expected, 2)
    assert bool(table9_vs_table4(frame).iloc[0]["consistent"])


def test_metrics_published_keeps_note(initialised_store, capsys) -> None:
    assert cli(["metrics", "bbm", "--source", "published"]) == 0
    out = pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False)
    assert out.columns[-1] == "note"
    noted = out[out["note"] == "subsampled"]
    assert len(noted) == 4 and set(noted["task"]) == {"Dyck languages"}
    assert set(zip(noted["model"], noted["method"])) == {
        ("GPT-4-Turbo", "direct_trace"),
        ("GPT-4-Turbo", "direct_step"),
        ("GPT-4", "direct_step"),
        ("GPT-4", "cot_step"),
    }
