"""What the PCBench results page reads besides the metrics: the paper's per-model overview and
one run's problems with both responses and the judge's verdicts (the drill-down)."""

from __future__ import annotations

from typing import cast

import pandas as pd

from core.benchmarks.pcbench.metrics import ALL, published_metrics
from core.store import Store


def published_models(store: Store) -> list[str]:
    return [
        str(m)
        for m in store.df("SELECT DISTINCT model FROM published_pcbench ORDER BY model")["model"]
    ]


def published_overview(store: Store) -> pd.DataFrame:
    """Per model: proactive and assisted critique rates over all problems (percent), the gap,
    and mean response lengths in tokens (the paper's)."""
    table = published_metrics(store)
    if table.empty:  # no published table loaded (a database `init` has not filled)
        return pd.DataFrame(columns=["model", "n", "proactive_rate", "assisted_rate", "gap"])
    overall = table[(table["error_type"] == ALL) & (table["difficulty"] == ALL)]
    wide = overall.pivot(index="model", columns="variant", values=["rate", "mean_len_tokens", "n"])
    out = pd.DataFrame(
        {
            "model": wide.index,
            "n": wide[("n", "proactive")].to_numpy(),
            "proactive_rate": wide[("rate", "proactive")].to_numpy(),
            "assisted_rate": wide[("rate", "assisted")].to_numpy(),
            "proactive_len_tokens": wide[("mean_len_tokens", "proactive")].to_numpy(),
            "assisted_len_tokens": wide[("mean_len_tokens", "assisted")].to_numpy(),
        }
    )
    out["gap"] = out["assisted_rate"] - out["proactive_rate"]
    out = out.round(1)
    return out.sort_values("proactive_rate", ascending=False, ignore_index=True)


def run_items(store: Store, run_id: str) -> pd.DataFrame:
    """One row per problem of a run: error type, difficulty and the current judging's
    `critique` per variant (None: not judged or not ok)."""
    frame = store.df(
        "SELECT x.item_id, i.primary_category AS error_type, i.secondary_category AS difficulty, "
        "x.variant, v.critique FROM responses x JOIN runs r USING (run_id) "
        "JOIN items i ON i.item_set = r.item_set AND i.item_id = x.item_id "
        "LEFT JOIN pcbench_current_verdicts v ON v.run_id = x.run_id AND v.item_id = x.item_id "
        "AND v.variant = x.variant AND v.status = 'ok' WHERE x.run_id = ? ORDER BY x.item_id",
        [run_id],
    )
    if frame.empty:
        return pd.DataFrame(columns=["item_id", "error_type", "difficulty"])
    wide = frame.pivot_table(
        index=["item_id", "error_type", "difficulty"],
        columns="variant",
        values="critique",
        aggfunc="first",
        dropna=False,
    )
    return wide.reset_index().rename_axis(columns=None)


def problem(store: Store, run_id: str, item_id: str) -> dict[str, object]:
    """One problem of a run: its text, flaw, sound version and error type / difficulty."""
    rows = store.df(
        "SELECT i.item_id, i.prompt, i.gold, i.primary_category AS error_type, "
        "i.secondary_category AS difficulty, json_extract_string(i.payload, '$.normal_query') "
        "AS normal_query FROM runs r JOIN items i ON i.item_set = r.item_set "
        "WHERE r.run_id = ? AND i.item_id = ?",
        [run_id, item_id],
    )
    return cast("dict[str, object]", rows.iloc[0].to_dict()) if len(rows) else {}


def responses(store: Store, run_id: str, item_id: str) -> pd.DataFrame:
    """Each variant's response to one problem with its current judging's verdict."""
    return store.df(
        "SELECT x.variant, x.status AS response_status, x.response, x.error, v.judging, "
        "v.judge_model, v.status AS verdict_status, "
        "TRY_CAST(v.labels->>'critique' AS BOOLEAN) AS critique, v.explanation, v.raw "
        "FROM responses x LEFT JOIN current_results v ON v.run_id = x.run_id "
        "AND v.item_id = x.item_id AND v.variant = x.variant "
        "WHERE x.run_id = ? AND x.item_id = ? ORDER BY x.variant DESC",
        [run_id, item_id],
    )


def judgings(store: Store, run_ids: tuple[str, ...]) -> list[str]:
    """The judging names of the runs (the page's judging filter), oldest first."""
    if not run_ids:
        return []
    frame = store.df(
        "SELECT judging, min(created_at) AS t FROM all_judgings "
        "WHERE list_contains(?, run_id) GROUP BY judging ORDER BY t, judging",
        [list(run_ids)],
    )
    return [str(j) for j in frame["judging"]]


AUTHORS_TOOL = "pcbench-authors"  # core.benchmarks.pcbench.verdicts' provenance tool
CHECK_COLUMNS = [
    "run_id",
    "model",
    "variant",
    "published_critiqued",
    "recomputed_critiqued",
    "published_rate",
    "recomputed_rate",
    "published_len_tokens",
    "recomputed_len_tokens",
    "match",
]


def authors_consistency(store: Store) -> pd.DataFrame:
    """The authors' verdicts (runs imported from their eval_result files) recounted beside
    their published statistics, per model and variant: the same counts and mean lengths
    (`match`) say the released verdicts are the ones the paper's table counts."""
    from core.benchmarks.pcbench.metrics import run_metrics

    runs = store.df(
        "SELECT run_id, model FROM runs WHERE benchmark = 'pcbench' "
        "AND json_extract_string(params, '$.source.tool') = ? ORDER BY run_id",
        [AUTHORS_TOOL],
    )
    published = published_metrics(store)
    published = published[(published["error_type"] == ALL) & (published["difficulty"] == ALL)]
    rows = []
    for run in runs.to_dict("records"):
        mine = run_metrics(store, run["run_id"])
        mine = mine[(mine["error_type"] == ALL) & (mine["difficulty"] == ALL)]
        for row in mine.to_dict("records"):
            theirs = published[
                (published["model"] == run["model"]) & (published["variant"] == row["variant"])
            ]
            pub = theirs.iloc[0] if len(theirs) else None
            rows.append(
                {
                    "run_id": run["run_id"],
                    "model": run["model"],
                    "variant": row["variant"],
                    "published_critiqued": None if pub is None else int(pub["critiqued"]),
                    "recomputed_critiqued": int(row["critiqued"]),
                    "published_rate": None if pub is None else float(pub["rate"]),
                    "recomputed_rate": float(row["rate"]),
                    "published_len_tokens": None if pub is None else pub["mean_len_tokens"],
                    "recomputed_len_tokens": row["mean_len_tokens"],
                    "match": pub is not None
                    and int(pub["critiqued"]) == int(row["critiqued"])
                    and int(pub["n"]) == int(row["n"]),
                }
            )
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)
