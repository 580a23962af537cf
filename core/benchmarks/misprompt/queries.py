"""Data access for the Overview and Mis-prompt pages: each function takes a Store first.

The pages call these through `pages.ui.common.cached`, so arguments are plain hashable values and
results are DataFrames/dicts. Functions named `view_*` are pure (frame -> frame) slices of the
combined published + run table that the page turns into charts.
"""

from __future__ import annotations

import json
from typing import Any, cast

import duckdb
import numpy as np
import pandas as pd

from core.benchmarks.misprompt import consistency as consistency
from core.benchmarks.misprompt import metrics as mm
from core.benchmarks.misprompt.published import SETTING_ORDER
from core.benchmarks.misprompt.published import (
    source_title as source_title,  # the page reads it here
)
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, PRIMARY, SECONDARY
from core.engine import templates
from core.services.labels import judging_label
from core.store import Store

COMBINED_COLUMNS = [
    "origin",
    "source",
    "row_label",
    "model",
    "setting",
    "evaluator",
    "category_level",
    "category",
    "metric",
    "f1",
    "ci_low",
    "ci_high",
]
# what a run cell carries besides its value, so it never passes for a published number
RUN_CELL_COLUMNS = [
    "mode",
    "judge_model",
    "judge_template",
    "judging",
    "n_error",
    "n_control",
    "low_n",
]
MIN_CELL_N = 10  # run cells with fewer erroneous items are marked (greyed, "n<10")
PAGE_BOOTSTRAP = 500  # bootstrap draws for the intervals the page shows on run cells
PRIMARY_TABLES = ("misprompt:T7", "misprompt:T8", "misprompt:T9", "misprompt:T10")


# -- Overview -----------------------------------------------------------------------------------


# -- Published + runs, one long table -------------------------------------------------------------


def published_f1(store: Store) -> pd.DataFrame:
    return store.df(
        "SELECT source, table_id, evaluator, model, setting, category_level, category, "
        "metric, f1 FROM published_misprompt ORDER BY position"
    )


def misprompt_page_data(store: Store) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(combined published + run F1, runs with diagnostics) from one pass over the verdicts."""
    f1_rows, diag = mm.f1_and_diagnostics(store)
    runs = _label_runs(diag)
    run_rows = f1_rows.assign(ci_low=np.nan, ci_high=np.nan)
    return combine(published_f1(store), run_rows, runs), runs


def template_name(template_id: Any) -> str:
    """How a stored judge template id is shown: the full id ('misprompt/judge.v1', old
    spellings normalised), the one spelling flags and forms accept too; none stored (older
    runs) -> 'judge template unknown'."""
    return templates.shown_id(template_id) or "judge template unknown"


def run_label(
    run_id: str,
    model: Any,
    judge_model: Any,
    judge_template: Any,
    mode: Any = None,
    judging: Any = None,
) -> str:
    """'my-run · SmolLM2 (judge SmolLM2, misprompt/judge.v1, proactive)': which model, judge,
    template and mode produced a run's numbers, wherever they are shown — pass the judge and
    template of the judging shown (core.services.labels.judging_label, the one spelling)."""
    return judging_label(
        run_id, model, judge_model, judge_template, "proactive" if mode is None else mode, judging
    )


def judging_diagnostics(store: Store, run_id: str, judging: str) -> dict[str, int]:
    """A run's verdict counts (ok, failed, inconsistent, erroneous / control items) under one
    named judging: the Runs tab's tiles follow the judging picked, not only the current one."""
    diag = mm.run_diagnostics(store, [run_id], judging=judging)
    cols = ["verdicts_ok", "verdicts_failed", "inconsistent", "n_error", "n_control"]
    if diag.empty:
        return dict.fromkeys(cols, 0)
    row = diag.iloc[0]
    return {c: int(row[c]) if pd.notna(row[c]) else 0 for c in cols}


def judging_labels(judgings: pd.DataFrame, runs: pd.DataFrame) -> dict[tuple[str, str], str]:
    """The label of every (run, judging) listed in `judgings` (agreement.judgings: run_id,
    judging, judge_model, template_id), the run's model and mode from `runs`: the same text
    heatmap rows give a run's current judging (pure)."""
    info = runs.set_index("run_id") if len(runs) else pd.DataFrame(columns=["model", "mode"])

    def field(run: str, col: str) -> Any:
        return info.at[run, col] if run in info.index and col in info else None

    return {
        (r, j): run_label(r, field(r, "model"), jm, t, field(r, "mode"), j)
        for r, j, jm, t in zip(
            judgings["run_id"],
            judgings["judging"],
            judgings["judge_model"],
            judgings["template_id"],
        )
    }


def _label_runs(diag: pd.DataFrame) -> pd.DataFrame:
    if "judge_template" not in diag:
        diag["judge_template"] = None
    diag["row_label"] = [
        run_label(r, m, j, t, mo, g)
        for r, m, j, t, mo, g in zip(
            diag["run_id"],
            diag["model"],
            diag["judge_model"],
            diag["judge_template"],
            diag["mode"],
            diag["judging"] if "judging" in diag else [None] * len(diag),
        )
    ]
    diag["recall_only"] = diag["n_control"] == 0
    return diag


def run_cells(store: Store, run_ids: tuple[str, ...], draws: int = PAGE_BOOTSTRAP) -> pd.DataFrame:
    """Every F1/recall cell of the given runs with its bootstrap 95% interval, its n (erroneous
    items in the cell, controls of the run), low_n (n < MIN_CELL_N), mode, judge model and
    judge template: COMBINED_COLUMNS + RUN_CELL_COLUMNS + recall. Each run's intervals come
    from its own seeded draws (`mm.cell_intervals`): showing another run never moves them."""
    if not run_ids:
        return pd.DataFrame(columns=COMBINED_COLUMNS + RUN_CELL_COLUMNS + ["recall"])
    # F1 and n from the counts (cached per finished run), intervals drawn per run (kept per
    # finished run): a server's first visit no longer draws 40 runs' bootstraps
    f1, _ = mm.f1_and_diagnostics(store, list(run_ids))
    intervals = mm.cell_intervals(store, run_ids, draws)
    cells = f1.merge(intervals.drop_duplicates(mm._INTERVAL_KEYS), on=mm._INTERVAL_KEYS, how="left")
    info = run_label_info(store, run_ids).set_index("run_id")
    cells["origin"] = "run"
    for col in ("row_label", "mode", "judge_model", "judge_template", "judging"):
        cells[col] = cells["source"].map(info[col]) if len(info) else None
    cells["row_label"] = cells["row_label"].fillna(cells["source"]).astype(str)
    cells["recall"] = cells["metric"].astype(str).str.endswith(mm.RECALL_SUFFIX)
    cells.loc[cells["recall"], "row_label"] = (
        cells.loc[cells["recall"], "row_label"] + " — recall, no controls"
    )
    cells["low_n"] = cells["n_error"].fillna(0) < MIN_CELL_N
    return cells[COMBINED_COLUMNS + RUN_CELL_COLUMNS + ["recall"]].reset_index(drop=True)


def keep_page_intervals(store: Store, *run_ids: str) -> None:
    """Draw and keep (in run_counts) the page's intervals of finished runs, as the page's first
    visit would: where a run finishes (the task's after_run) rather than on that visit."""
    mm.cell_intervals(store, run_ids, PAGE_BOOTSTRAP)


def with_run_cells(combined: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """The published rows of `combined` and the run `cells` (with n and CI) in one frame."""
    pub = combined[combined["origin"] == "published"]
    frames = [f for f in (pub, cells.drop(columns=["recall"], errors="ignore")) if len(f)]
    if not frames:
        return combined.iloc[0:0]
    return pd.concat(frames, ignore_index=True)


def run_label_info(store: Store, run_ids: tuple[str, ...] | None = None) -> pd.DataFrame:
    """misprompt_runs' label columns (row_label, model, mode, judge_model, judge_template,
    judging) without counting a verdict: the same diagnostics statement around no counts (the
    counts and the F1 pass of misprompt_runs cost a pass over every run's verdicts)."""
    where, params = mm._run_filter(run_ids)
    no_counts = (
        "SELECT NULL::VARCHAR AS run_id, 0 AS verdicts_ok, 0 AS verdicts_failed, "
        "0 AS inconsistent, 0 AS n_control WHERE false"
    )
    return _label_runs(store.df(mm._diagnostics_sql(no_counts, where, ("n_control",)), params))


def misprompt_runs(store: Store) -> pd.DataFrame:
    """Mis-prompt runs with diagnostics (failed, inconsistent, controls) and a display label."""
    return _label_runs(mm.run_diagnostics(store))


def run_f1(store: Store) -> pd.DataFrame:
    """Point F1 of every Mis-prompt run (judge and human), no intervals (one GROUP BY)."""
    return mm.run_metrics(store, ci=False)


def run_f1_ci(
    store: Store,
    run_id: str,
    levels: tuple[str, ...] = mm.LEVELS,
    draws: int = mm.DEFAULT_BOOTSTRAP,
    seed: int = 0,
    judging: str | None = None,
) -> pd.DataFrame:
    """One run's F1 with bootstrap 95% intervals (for the category levels asked for), from its
    current judging or the one named."""
    return mm.run_metrics(
        store, [run_id], ci=True, draws=draws, seed=seed, levels=levels, judging=judging
    )


def judgings_side_by_side(
    store: Store, run_id: str, judging_a: str, judging_b: str
) -> pd.DataFrame:
    """Overall judge F1 per label of two judgings of a run, side by side, with the
    judge-vs-judge agreement (n, 2×2 counts, Cohen's κ) of each label."""
    from core.benchmarks.misprompt import agreement

    def overall(judging: str) -> pd.Series:
        rows = mm.run_metrics(store, [run_id], ci=False, judging=judging)
        rows = rows[(rows["evaluator"] == "judge") & (rows["category_level"] == "all")]
        return rows.set_index(rows["metric"].str.removesuffix(mm.RECALL_SUFFIX))["f1"]

    table = agreement.judging_agreement(store, run_id, judging_a, judging_b)
    a, b = overall(judging_a), overall(judging_b)
    table.insert(1, f"F1 {judging_a}", table["label"].map(a))
    table.insert(2, f"F1 {judging_b}", table["label"].map(b))
    return table


def combine(published: pd.DataFrame, runs: pd.DataFrame, run_info: pd.DataFrame) -> pd.DataFrame:
    """Published rows and run rows in one long frame (pure); runs labelled 'run_id · model'."""
    pub = published.copy()
    pub["origin"] = "published"
    pub["row_label"] = pub["model"]
    pub["ci_low"] = np.nan
    pub["ci_high"] = np.nan
    run = runs.copy()
    if len(run):
        run["origin"] = "run"
        labels = dict(zip(run_info["run_id"], run_info["row_label"])) if len(run_info) else {}
        run["row_label"] = run["source"].map(labels).fillna(run["source"]).astype(str)
        recall = run["metric"].astype(str).str.endswith(mm.RECALL_SUFFIX)
        run.loc[recall, "row_label"] = run.loc[recall, "row_label"] + " — recall, no controls"
    frames = [f[COMBINED_COLUMNS] for f in (pub, run) if len(f)]
    if not frames:
        return pd.DataFrame(columns=COMBINED_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def combined_f1(store: Store) -> pd.DataFrame:
    return misprompt_page_data(store)[0]


def _metric_rows(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows of one label; a run without controls contributes its recall (labelled as such)."""
    return frame[(frame["metric"] == metric) | (frame["metric"] == metric + mm.RECALL_SUFFIX)]


def view_primary(combined: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Models (Tables 7–10) and runs × primary category for one label."""
    rows = _metric_rows(combined, metric)
    pub = rows[rows["source"].isin(PRIMARY_TABLES)]
    run = rows[
        (rows["origin"] == "run")
        & (rows["category_level"] == "primary")
        & (rows["evaluator"] == "judge")
    ]
    return pd.concat([pub, run], ignore_index=True)


def view_secondary(combined: pd.DataFrame, metric: str) -> pd.DataFrame:
    """GPT-4o (Table 11) and runs × secondary category for one label."""
    rows = _metric_rows(combined, metric)
    keep = (rows["source"] == "misprompt:T11") | (
        (rows["origin"] == "run")
        & (rows["category_level"] == "secondary")
        & (rows["evaluator"] == "judge")
    )
    return rows[keep].reset_index(drop=True)


def view_settings(combined: pd.DataFrame, metric: str, evaluator: str = "judge") -> pd.DataFrame:
    """Models × settings (Table 6 for the judge, Table 12 for humans) plus runs at level all."""
    rows = _metric_rows(combined, metric)
    table = "misprompt:T6" if evaluator == "judge" else "misprompt:T12"
    keep = (rows["source"] == table) | (
        (rows["origin"] == "run")
        & (rows["category_level"] == "all")
        & (rows["evaluator"] == evaluator)
    )
    return rows[keep].reset_index(drop=True)


def view_judge_vs_human(combined: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per row_label × setting: judge F1, human F1, human − judge (published and runs)."""
    judge = view_settings(combined, metric, "judge")
    human = view_settings(combined, metric, "human")
    keys = ["row_label", "setting"]
    merged = (
        judge[keys + ["f1", "origin"]]
        .rename(columns={"f1": "judge"})
        .merge(human[keys + ["f1"]].rename(columns={"f1": "human"}), on=keys, how="inner")
    )
    merged["difference"] = (merged["human"] - merged["judge"]).round(2)
    return merged


def view_filter(
    combined: pd.DataFrame,
    sources: tuple[str, ...] = (),
    models: tuple[str, ...] = (),
    settings: tuple[str, ...] = (),
    level: str | None = None,
    metrics: tuple[str, ...] = (),
    evaluator: str | None = None,
) -> pd.DataFrame:
    """The tables view: filter by any combination (empty = all)."""
    f = combined
    if sources:
        f = f[f["source"].isin(sources)]
    if models:
        f = f[f["row_label"].isin(models)]
    if settings:
        f = f[f["setting"].isin(settings)]
    if level:
        f = f[f["category_level"] == level]
    if metrics:
        base = f["metric"].str.replace(mm.RECALL_SUFFIX, "", regex=False)
        f = f[base.isin(metrics)]
    if evaluator:
        f = f[f["evaluator"] == evaluator]
    return f.reset_index(drop=True)


def shown_caption(shown: pd.DataFrame, n_values: int) -> str:
    """What a table caption should count: the rows on screen (and the F1 values they hold)."""
    rows = f"{len(shown):,} row{'s' if len(shown) != 1 else ''} shown"
    return rows + (f" ({n_values:,} F1 values)." if n_values != len(shown) else ".")


def view_by_model_category(filtered: pd.DataFrame) -> pd.DataFrame:
    """Wide table: one row per (source, model/run, setting, evaluator, category), metrics as columns."""
    if filtered.empty:
        return filtered
    keys = [
        k
        for k in (
            "origin",
            "source",
            "row_label",
            "setting",
            "evaluator",
            "category_level",
            "category",
        )
        if k in filtered
    ]
    wide = filtered.pivot_table(
        index=keys, columns="metric", values="f1", aggfunc="first", sort=False
    ).reset_index()
    order = [m for base in mm.METRICS for m in (base, base + mm.RECALL_SUFFIX) if m in wide]
    wide.columns.name = None
    out = wide[keys + order]
    if "n_error" in filtered and filtered["n_error"].notna().any():
        # run rows: n of the cell and each metric's 95% interval beside its value
        extra = filtered.groupby(keys, sort=False, dropna=False)[
            [
                c
                for c in (
                    "n_error",
                    "n_control",
                    "judge_model",
                    "judge_template",
                    "judging",
                    "mode",
                )
                if c in filtered
            ]
        ].first()
        out = out.merge(extra.reset_index(), on=keys, how="left")
        for ci in ("ci_low", "ci_high"):
            part = filtered.pivot_table(
                index=keys, columns="metric", values=ci, aggfunc="first", sort=False
            )
            part.columns = [f"{m}_{ci}" for m in part.columns]
            out = out.merge(part.reset_index(), on=keys, how="left")
    return out


# -- Consistency and judge vs human (published) -----------------------------------------------------


def consistency_checks(store: Store) -> pd.DataFrame:
    return consistency.consistency_checks(store)


def judge_human_published(store: Store) -> tuple[pd.DataFrame, dict[str, float]]:
    diff = consistency.judge_vs_human(consistency.published_frame(store))
    return diff, consistency.mean_abs_difference(diff)


# -- One run: drill-down, comparison, download ----------------------------------------------------

_LABEL_SELECT = ", ".join(f"v.{label}" for label in JUDGE_LABELS)

# A run's responses with their verdict (if any) and their item: the drill-down's FROM clause.
_RESPONSES_OF_RUNS = """FROM runs r
        JOIN responses x ON x.run_id = r.run_id
        LEFT JOIN misprompt_current_verdicts v ON v.run_id = x.run_id AND v.item_id = x.item_id
                             AND v.variant = x.variant AND v.epoch = x.epoch
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = x.item_id"""


def run_items(
    store: Store,
    run_id: str,
    category: str | None = None,
    kind: str = "all",
    only_inconsistent: bool = False,
    label: str | None = None,
    label_value: bool | None = None,
    limit: int = 500,
) -> pd.DataFrame:
    """Items of a run with their response and judge labels (filtered; capped at `limit` rows)."""
    where = ["r.run_id = ?"]
    params: list[Any] = [run_id]
    if category:
        where.append("(i.primary_category = ? OR i.secondary_category = ?)")
        params += [category, category]
    if kind == "erroneous":
        where.append("i.is_error")
    elif kind == "control":
        where.append("NOT i.is_error")
    if only_inconsistent:
        where.append(f"({mm._INCONSISTENT_SQL})")
    if label in JUDGE_LABELS and label_value is not None:
        where.append(f"coalesce(v.{label}, false) = ?")
        params.append(bool(label_value))
    sql = f"""
        SELECT x.item_id, CASE WHEN i.is_error THEN 'erroneous' ELSE 'control' END AS kind,
               i.primary_category, i.secondary_category, left(i.prompt, 160) AS prompt,
               left(x.response, 160) AS response, x.status AS response_status,
               v.status AS verdict_status, {_LABEL_SELECT},
               coalesce({mm._INCONSISTENT_SQL}, false) AS inconsistent
        {_RESPONSES_OF_RUNS}
        WHERE {" AND ".join(where)}
        ORDER BY x.item_id LIMIT {int(limit)}
    """
    return store.df(sql, params)


def run_item_count(store: Store, run_id: str) -> int:
    return int(store.scalar("SELECT count(*) FROM responses WHERE run_id = ?", [run_id]) or 0)


def run_item_detail(store: Store, run_id: str, item_id: str) -> dict[str, Any] | None:
    """Everything about one response: prompt, category, ground truth, response, labels,
    rationales, raw judge output, inconsistency."""
    frame = store.df(
        f"""
        SELECT x.item_id, x.variant, i.is_error, i.primary_category, i.secondary_category,
               i.prompt, i.explanation, i.gold, x.messages, x.response, x.status AS response_status,
               x.error AS response_error, x.latency_ms, x.prompt_tokens, x.completion_tokens,
               v.status AS verdict_status, v.judge_model, {_LABEL_SELECT}, v.rationales, v.raw,
               v.parse_note, v.error AS verdict_error,
               coalesce({mm._INCONSISTENT_SQL}, false) AS inconsistent
        {_RESPONSES_OF_RUNS}
        WHERE r.run_id = ? AND x.item_id = ? ORDER BY x.epoch LIMIT 1""",
        [run_id, item_id],
    )
    if frame.empty:
        return None
    row = cast("dict[str, Any]", frame.iloc[0].to_dict())
    for key in ("rationales", "messages"):
        value = row.get(key)
        if isinstance(value, str):
            try:
                row[key] = json.loads(value)
            except ValueError:
                pass
    return {
        k: (None if not isinstance(v, (list, dict)) and pd.isna(v) else v) for k, v in row.items()
    }


def compare_runs(
    store: Store, run_a: str, run_b: str, limit: int = 500
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Per-label rates of two runs (erroneous and control items) and the items where they differ.

    Returns (rates[run, kind, label, rate, n], differing items (capped), number differing).
    Items are matched by item_id (the runs should share an item set; the first run's is used
    for categories and prompts) and epoch (runs asked K times, `--epochs K`, answer by answer;
    a run asked once meets another's epoch 1). The rates pool every answer.
    """
    with store.connect() as con:  # two statements, one open
        return _compare_runs(con, run_a, run_b, limit)


def _compare_runs(
    con: duckdb.DuckDBPyConnection, run_a: str, run_b: str, limit: int
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    rate_cols = ", ".join(
        f"100.0 * count(*) FILTER (WHERE v.{lb}) / count(*) AS {lb}" for lb in JUDGE_LABELS
    )
    rates = con.execute(
        f"""
        WITH v AS (SELECT * FROM misprompt_current_verdicts WHERE run_id IN (?, ?) AND status = 'ok')
        SELECT v.run_id AS run, CASE WHEN i.is_error THEN 'erroneous' ELSE 'control' END AS kind,
               count(*) AS n, {rate_cols}
        FROM v JOIN runs r ON r.run_id = v.run_id
        JOIN items i ON i.item_id = v.item_id AND i.item_set = r.item_set
        GROUP BY ALL ORDER BY ALL""",
        [run_a, run_b],
    ).df()
    rates = rates.melt(
        id_vars=["run", "kind", "n"],
        value_vars=list(JUDGE_LABELS),
        var_name="label",
        value_name="rate",
    )
    differs = " OR ".join(f"a.{lb} IS DISTINCT FROM b.{lb}" for lb in JUDGE_LABELS)
    pairs = ", ".join(f"a.{lb} AS {lb}_a, b.{lb} AS {lb}_b" for lb in JUDGE_LABELS)
    diff_list = " || ".join(
        f"CASE WHEN a.{lb} IS DISTINCT FROM b.{lb} THEN '{lb} ' ELSE '' END" for lb in JUDGE_LABELS
    )
    items = con.execute(
        f"""
        WITH a AS (SELECT * FROM misprompt_current_verdicts WHERE run_id = ? AND status = 'ok'),
             b AS (SELECT * FROM misprompt_current_verdicts WHERE run_id = ? AND status = 'ok'),
             d AS (SELECT a.item_id, trim({diff_list}) AS labels_differing, {pairs},
                          count(*) OVER () AS n_diff
                   FROM a JOIN b USING (item_id, epoch) WHERE {differs}
                   ORDER BY a.item_id LIMIT {int(limit)})
        SELECT d.item_id, CASE WHEN i.is_error THEN 'erroneous' ELSE 'control' END AS kind,
               i.secondary_category AS category, left(i.prompt, 120) AS prompt, d.* EXCLUDE (item_id)
        FROM d LEFT JOIN items i ON i.item_id = d.item_id
             AND i.item_set = (SELECT item_set FROM runs WHERE run_id = ?)
        ORDER BY d.item_id""",
        [run_a, run_b, run_a],
    ).df()
    n_diff = int(items["n_diff"].iloc[0]) if len(items) else 0
    return rates, items.drop(columns=["n_diff"]), n_diff


def run_export(store: Store, run_id: str) -> pd.DataFrame:
    """One row per response of a run with its item, labels and rationales (for CSV download)."""
    return store.df(
        f"""
        SELECT r.run_id, r.model, x.item_id, x.variant, r.mode, i.is_error, i.primary_category,
               i.secondary_category, i.prompt, i.gold, x.messages, x.response,
               x.status AS response_status, v.status AS verdict_status, {_LABEL_SELECT},
               coalesce({mm._INCONSISTENT_SQL}, false) AS inconsistent, v.rationales, v.raw
        FROM runs r JOIN responses x ON x.run_id = r.run_id
        LEFT JOIN misprompt_current_verdicts v ON v.run_id = x.run_id AND v.item_id = x.item_id
                             AND v.variant = x.variant AND v.epoch = x.epoch
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = x.item_id
        WHERE r.run_id = ? ORDER BY x.item_id""",
        [run_id],
    )


CATEGORY_CHOICES = ["", *PRIMARY, *SECONDARY]
SETTINGS = SETTING_ORDER
