"""Paper-internal consistency of BIG-Bench Mistake's published tables.

Table 9 splits Table 4's accuracy into traces without a mistake (9a) and with one (9b), and says
"the combined scores of 9(a) and 9(b) make up Table 4". With Table 2's trace counts the combination
is a weighted mean: T4 = (9a × n_without + 9b × n_with) / n. Recomputing it from the printed
two-decimal values reproduces almost every cell within rounding (≤ 0.01); the cells that do not
are listed, with the difference, on the Mistake-finding page (as the Mis-prompt page does for
its tables). Cells the paper marks * (`subsampled`: 300 traces, 45/255 correct/incorrect answers)
cannot be checked: how many of those traces hold a mistake is not published.
"""

from __future__ import annotations

from typing import cast

import pandas as pd

from core.benchmarks.bbm.metrics import ACCURACY, OVERALL

# Table 2 of the paper: traces and traces with a mistake (incorrect_mis) per task. Dyck
# languages uses the sampled row (592), which Table 4's † note says every Dyck cell used.
TABLE2_COUNTS: dict[str, tuple[int, int]] = {
    "Word sorting": (300, 266),
    "Tracking shuffled objects": (300, 260),
    "Logical deduction": (300, 294),
    "Multistep arithmetic": (300, 238),
    "Dyck languages": (592, 545),
}
# two printed decimals in 9a, 9b and 4: the recomputed value can be off by up to 0.01
TOLERANCE = 0.015
COLUMNS = [
    "task",
    "model",
    "method",
    "n_traces",
    "n_with_mistake",
    "table_9a",
    "table_9b",
    "recomputed_table_4",
    "published_table_4",
    "difference",
    "consistent",
    "note",
]


def table9_vs_table4(published: pd.DataFrame, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """One row per Table 4 task cell that Table 9 also has: recomputed vs published."""
    acc = published[published["measure"] == ACCURACY]
    key = ["task", "model", "method"]

    def part(table: str) -> pd.DataFrame:
        rows = acc[acc["table_id"].astype(str) == table]
        return (
            rows.set_index(key)[["value", "note"]]
            if len(rows)
            else pd.DataFrame(columns=["value", "note"])
        )

    t4, t9a, t9b = part("4"), part("9a"), part("9b")
    out = []
    for cell, row in t4.iterrows():
        task, model, method = cast(tuple[str, str, str], cell)  # the index is `key`
        if (
            task == OVERALL
            or (task, model, method) not in t9a.index
            or (task, model, method) not in t9b.index
            or task not in TABLE2_COUNTS
        ):
            continue
        n, n_with = TABLE2_COUNTS[task]
        a, b = (
            float(t9a["value"][(task, model, method)]),
            float(t9b["value"][(task, model, method)]),
        )
        shown = float(row["value"])
        note = row["note"] if isinstance(row["note"], str) and row["note"] else ""
        if note == "subsampled":
            out.append(
                {
                    "task": task,
                    "model": model,
                    "method": method,
                    "n_traces": 300,
                    "n_with_mistake": None,
                    "table_9a": a,
                    "table_9b": b,
                    "recomputed_table_4": None,
                    "published_table_4": shown,
                    "difference": None,
                    "consistent": None,
                    "note": "not checkable: * cell, 300 traces whose mistake count is "
                    "not published",
                }
            )
            continue
        recomputed = (a * (n - n_with) + b * n_with) / n
        diff = recomputed - shown
        out.append(
            {
                "task": task,
                "model": model,
                "method": method,
                "n_traces": n,
                "n_with_mistake": n_with,
                "table_9a": a,
                "table_9b": b,
                "recomputed_table_4": round(recomputed, 4),
                "published_table_4": shown,
                "difference": round(diff, 4),
                "consistent": abs(diff) <= tolerance,
                "note": "† Dyck sample (Table 2: 592 traces, 545 with a mistake)"
                if task == "Dyck languages"
                else "",
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def mismatches(check: pd.DataFrame) -> pd.DataFrame:
    """The checkable cells that do not reproduce, largest difference first."""
    bad = check[check["consistent"].eq(False)]
    return bad.reindex(bad["difference"].abs().sort_values(ascending=False).index)
