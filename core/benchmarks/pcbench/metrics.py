"""PCBench numbers, per variant × error type × difficulty ('all' rows aggregate):

- rate: the premise-critique rate, percent of ok verdicts whose `critique` label is true (the
  paper's "recognition rate": proactive = its "active", assisted = its "passive"), with `n`
  (ok verdicts) and a Wilson 95% interval `ci_low`, `ci_high` (core.stats.wilson_percent);
- the answer-length cost: `mean_len_chars` / `mean_len_tokens`, the mean length of those
  responses (characters; completion tokens where the server reported them — the paper reports
  tokens), and `len_vs_proactive`, an assisted row's mean length over the proactive row's of the
  same cell (tokens when both have them, else characters; 1 on proactive rows).

Every row names the judging it comes from: `judging` (a run's judging name; 'paper' for the
published table) and `judge_template`. A run is read under its current judging unless
`--judging NAME` names another; failed and unparsable verdicts are left out of `n`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.benchmarks.pcbench import MODES, VARIANTS
from core.benchmarks.pcbench.items import DIFFICULTIES, ERROR_TYPES
from core.stats import wilson_percent
from core.store import Store, runs_without_judging

ALL = "all"
PAPER_JUDGING = "paper (o3-mini judge)"
PAPER_TEMPLATE = "pcbench/judge.v2"
COLUMNS = [
    "source",
    "model",
    "judging",
    "judge_template",
    "variant",
    "mode",
    "error_type",
    "difficulty",
    "n",
    "critiqued",
    "rate",
    "ci_low",
    "ci_high",
    "mean_len_chars",
    "mean_len_tokens",
    "len_vs_proactive",
]


class UnknownSource(ValueError):
    """`--source` names neither `published` nor a PCBench run (or a judging it lacks)."""


def _mean(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.astype(float).mean()) if len(values) else float("nan")


def cell_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The metrics of item rows (variant, error_type, difficulty, critique: bool, chars,
    tokens: float or NaN), one row per variant × (type | all) × (difficulty | all) that has
    rows. Columns: variant … len_vs_proactive of COLUMNS."""
    out = []
    for variant in [v for v in VARIANTS if v in set(rows["variant"])]:
        part = rows[rows["variant"] == variant]
        for error_type in [ALL, *ERROR_TYPES]:
            by_type = part if error_type == ALL else part[part["error_type"] == error_type]
            for difficulty in [ALL, *DIFFICULTIES]:
                cell = (
                    by_type if difficulty == ALL else by_type[by_type["difficulty"] == difficulty]
                )
                if not len(cell):
                    continue
                # a run asked K times: n counts problems, `critiqued` the problems' shares
                # (Σ per-problem share of critiqued answers), so the rate is the pooled one and
                # its Wilson interval rests on the problems, not on K answers each (issue 29)
                per_item = cell.groupby("item_id")["critique"].mean()
                out.append(
                    {
                        "variant": variant,
                        "mode": MODES[variant],
                        "error_type": error_type,
                        "difficulty": difficulty,
                        "n": len(per_item),
                        "critiqued": _count(float(per_item.sum())),
                        "mean_len_chars": _mean(cell["chars"]),
                        "mean_len_tokens": _mean(cell["tokens"]),
                    }
                )
    return finish(pd.DataFrame(out, columns=[*COLUMNS[4:10], "mean_len_chars", "mean_len_tokens"]))


def _count(value: float) -> float | int:
    """A whole count as an int (a run asked once); a run asked K times may give a fraction."""
    return int(round(value)) if abs(value - round(value)) < 1e-9 else value


def finish(table: pd.DataFrame) -> pd.DataFrame:
    """Adds rate, ci_low, ci_high (percent) and len_vs_proactive to rows with n, critiqued and
    mean lengths."""
    table = table.copy()
    n = table["n"].astype(float).to_numpy()
    k = table["critiqued"].astype(float).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        table["rate"] = np.where(n > 0, 100 * k / n, np.nan)
    low, high = wilson_percent(k, n)
    table["ci_low"], table["ci_high"] = low, high
    key = ["error_type", "difficulty"]
    pro = table[table["variant"] == "proactive"].set_index(key)
    ratios = []
    for r in table.to_dict("records"):
        if r["variant"] == "proactive":
            ratios.append(1.0 if r["n"] else float("nan"))
            continue
        base = (
            pro.loc[[(r["error_type"], r["difficulty"])]].iloc[0]
            if (r["error_type"], r["difficulty"]) in pro.index
            else None
        )
        if base is None:
            ratios.append(float("nan"))
        elif pd.notna(r["mean_len_tokens"]) and pd.notna(base["mean_len_tokens"]):
            ratios.append(float(r["mean_len_tokens"]) / float(base["mean_len_tokens"]))
        else:
            ratios.append(float(r["mean_len_chars"]) / float(base["mean_len_chars"]))
    table["len_vs_proactive"] = ratios
    return table


def judging_of(store: Store, run_id: str, judging: str | None) -> tuple[str, str | None]:
    """(judging name, its judge template) of a run: the named one or the current one."""
    if judging is not None and runs_without_judging(store, [run_id], judging):
        raise UnknownSource(f"run {run_id!r} has no judging {judging!r} (see `rescore`)")
    name = judging or store.scalar(
        "SELECT judging FROM current_judgings WHERE run_id = ?", [run_id]
    )
    template = store.scalar(
        "SELECT template_id FROM all_judgings WHERE run_id = ? AND judging = ?", [run_id, name]
    )
    return str(name), (str(template) if template else None)


def item_rows(store: Store, run_id: str, judging: str) -> pd.DataFrame:
    """One row per ok verdict of the judging: item, variant, type, difficulty, critique, the
    response's length in characters and completion tokens, the response and the verdict.
    Items not in the store (an imported run whose item set comes later, core.sources) count
    in the 'all' rows only."""
    return store.df(
        "SELECT v.item_id, v.variant, i.primary_category AS error_type, "
        "i.secondary_category AS difficulty, v.critique, length(x.response) AS chars, "
        "x.completion_tokens AS tokens FROM pcbench_verdicts v "
        "JOIN runs r USING (run_id) "
        "LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id "
        "JOIN responses x ON x.run_id = v.run_id AND x.item_id = v.item_id "
        "AND x.variant = v.variant AND x.epoch = v.epoch "
        "WHERE v.run_id = ? AND v.judging = ? AND v.status = 'ok' AND v.critique IS NOT NULL "
        "ORDER BY v.item_id, v.variant, v.epoch",
        [run_id, judging],
    )


def run_metrics(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """COLUMNS for one run under its current judging (or `judging`)."""
    run = store.df("SELECT model FROM runs WHERE run_id = ? AND benchmark = 'pcbench'", [run_id])
    if run.empty:
        raise UnknownSource(f"no PCBench run {run_id!r} (`python -m core runs`)")
    name, template = judging_of(store, run_id, judging)
    table = cell_table(item_rows(store, run_id, name))
    table.insert(0, "source", run_id)
    table.insert(1, "model", run["model"].iloc[0])
    table.insert(2, "judging", name)
    table.insert(3, "judge_template", template)
    return table[COLUMNS]


def published_metrics(store: Store) -> pd.DataFrame:
    """COLUMNS of the paper's per-model tables (counts and token lengths as published)."""
    pub = store.df(
        "SELECT source, model, variant, error_type, difficulty, n, critiqued, "
        "mean_len_tokens FROM published_pcbench ORDER BY position"
    )
    pub["mode"] = pub["variant"].map(MODES)
    pub["mean_len_chars"] = float("nan")
    frames = [finish(part) for _, part in pub.groupby("model", sort=False)]
    table = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pub.assign(rate=[], ci_low=[], ci_high=[], len_vs_proactive=[])
    )
    table["judging"] = PAPER_JUDGING
    table["judge_template"] = PAPER_TEMPLATE
    return table[COLUMNS]


def metrics(store: Store, source: str, judging: str | None = None) -> pd.DataFrame:
    """`metrics pcbench --source published|RUN`."""
    if source == "published":
        if judging is not None:
            raise UnknownSource("--judging applies to a run, not to the published table")
        return published_metrics(store)
    return run_metrics(store, source, judging)


def heatmap(table: pd.DataFrame, variant: str, value: str = "rate") -> pd.DataFrame:
    """error type × difficulty of one variant's `value` (the results page's heatmap)."""
    part = table[
        (table["variant"] == variant) & (table["error_type"] != ALL) & (table["difficulty"] != ALL)
    ]
    grid = part.pivot(index="error_type", columns="difficulty", values=value)
    return grid.reindex(
        index=[t for t in ERROR_TYPES if t in grid.index],
        columns=[d for d in DIFFICULTIES if d in grid.columns],
    )
