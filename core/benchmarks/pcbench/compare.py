"""PCBench's part of the proactive-vs-passive comparison (core.services.compare): the
premise-critique rate of the same model on the same problems, proactive (as is) and assisted
(told to check the premises) — the paper's "active" and "passive" recognition rates.

Sources: the paper's per-model statistics (published_pcbench, all error types and difficulties)
and runs in this database (their current judging, `core.benchmarks.pcbench.metrics`, so the
results page and this view show one number). A run that asked both variants pairs each problem's
two verdicts: b = problems critiqued proactively but not when assisted, c = the reverse, and
McNemar's exact test of b against c (core.services.compare_runs.mcnemar_exact).
"""

from __future__ import annotations

import pandas as pd

from core.benchmarks.pcbench import MODES, NAME
from core.benchmarks.pcbench.metrics import ALL, item_rows, judging_of, run_metrics
from core.engine import templates
from core.services.compare import LONG_COLUMNS, PAIRED_COLUMNS, Contribution
from core.services.compare_runs import mcnemar_exact
from core.store import Store

PAPER = "PCBench paper, per-model statistics (o3-mini judge; repository evaluation/statistics)"
PAPER_JUDGE = "o3-mini (paper)"
LABELS = {
    "proactive": "PCBench premise-critique rate — proactive",
    "assisted": "PCBench premise-critique rate — assisted (passive)",
}
NOTE = (
    "PCBench asks every problem both ways, so its published columns give the same models "
    "proactive and assisted (passive): the premise-critique rate over all 1,200 flawed "
    "problems, judged by o3-mini with the paper's prompt."
)


def judge_name(judge_model: object, template: object) -> str:
    model = judge_model if isinstance(judge_model, str) else "?"  # None or NaN: not recorded
    return f"{model} ({templates.shown_id(template) or 'judge template unknown'})"


def published_rows(store: Store) -> pd.DataFrame:
    pub = store.df(
        "SELECT model, variant, rate AS value, source FROM published_pcbench "
        "WHERE error_type = ? AND difficulty = ? ORDER BY position",
        [ALL, ALL],
    )
    pub = pub.assign(
        measure_label=pub["variant"].map(LABELS),
        kind="published",
        mode=pub["variant"].map(MODES),
        judge=PAPER_JUDGE,
        recall=False,
        note="",
    )
    return pub[LONG_COLUMNS]


def _runs(store: Store) -> pd.DataFrame:
    return store.df(
        "SELECT r.run_id, r.model, r.created_at, coalesce(r.weak_model, false) AS weak_model, "
        "coalesce(a.judge_model, r.judge_model) AS judge_model, a.template_id "
        "FROM runs r LEFT JOIN current_judgings c ON c.run_id = r.run_id "
        "LEFT JOIN all_judgings a ON a.run_id = c.run_id AND a.judging = c.judging "
        "WHERE r.benchmark = ? AND coalesce(r.kind, 'eval') = 'eval' ORDER BY r.created_at",
        [NAME],
    )


def run_rows(store: Store) -> pd.DataFrame | None:
    """One row per run and variant with a rate over all its problems; None without one."""
    rows = []
    for r in _runs(store).to_dict("records"):
        table = run_metrics(store, r["run_id"])
        overall = table[(table["error_type"] == ALL) & (table["difficulty"] == ALL)]
        for row in overall.to_dict("records"):
            rows.append(
                {
                    "model": r["model"] or "",
                    "measure_label": LABELS[row["variant"]],
                    "kind": "run",
                    "mode": row["mode"],
                    "judge": judge_name(r["judge_model"], r["template_id"]),
                    "source": r["run_id"],
                    "value": row["rate"],
                    "n": row["n"],
                    "ci_low": row["ci_low"],
                    "ci_high": row["ci_high"],
                    "recall": False,
                    "note": f"n = {row['n']} problems",
                    "created_at": r["created_at"],
                    "weak_model": bool(r["weak_model"]),
                }
            )
    return pd.DataFrame(rows) if rows else None


def pair_counts(rows: pd.DataFrame) -> dict[str, float]:
    """Paired counts of item rows (item_id, variant, critique): n problems judged both ways,
    both rates (percent), b (critiqued proactive only), c (assisted only), McNemar's p."""
    wide = rows.pivot_table(index="item_id", columns="variant", values="critique", aggfunc="first")
    if not {"proactive", "assisted"} <= set(wide.columns):
        return {"n": 0}
    wide = wide[["proactive", "assisted"]].dropna().astype(bool)
    n = len(wide)
    b = int((wide["proactive"] & ~wide["assisted"]).sum())
    c = int((~wide["proactive"] & wide["assisted"]).sum())
    return {
        "n": n,
        "proactive": 100 * float(wide["proactive"].mean()) if n else float("nan"),
        "passive": 100 * float(wide["assisted"].mean()) if n else float("nan"),
        "b": b,
        "c": c,
        "p_value": mcnemar_exact(b, c),
    }


def paired_rows(store: Store) -> pd.DataFrame | None:
    """PAIRED_COLUMNS (without benchmark) per run that asked both variants on the same
    problems, under its current judging; None when no run did."""
    out = []
    for r in _runs(store).to_dict("records"):
        judging, _ = judging_of(store, r["run_id"], None)
        counts = pair_counts(item_rows(store, r["run_id"], judging))
        if counts["n"]:
            out.append(
                {
                    "model": r["model"] or "",
                    "source": r["run_id"],
                    "judge": judge_name(r["judge_model"], r["template_id"]),
                    **counts,
                }
            )
    cols = [c for c in PAIRED_COLUMNS if c != "benchmark"]
    return pd.DataFrame(out, columns=cols) if out else None


COMPARISON: Contribution = Contribution(
    published=published_rows,
    runs=run_rows,
    measures=tuple(LABELS.values()),
    paper=PAPER,
    paired=paired_rows,
    note=NOTE,
)
