"""Helpers for Mis-prompt tests: write a run with explicit items, responses and verdicts.

Verdicts are given in the judge protocol's shape (one column per label, `rationales`,
`inconsistent`) and stored the way the judge's records are: `results` rows with the labels as a
JSON object, `metadata` {rationales, inconsistent}, and answer/correct/explanation derived by
`core.benchmarks.misprompt.record.derive_sql` (see `insert_verdicts`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from core.benchmarks.misprompt.record import derive_sql
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, PRIMARY_OF, SECONDARY
from core.store import Store

# Columns of `results` a verdict frame may carry under the same name.
_PLAIN = [
    "judge_model",
    "raw",
    "parse_note",
    "error",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "cost_usd",
    "created_at",
]


def insert_verdicts(target: Store | duckdb.DuckDBPyConnection, verdicts: pd.DataFrame) -> None:
    """Write verdicts in the judge protocol's shape as `results` rows, like `to_result` does.

    `verdicts`: run_id, item_id, variant, status, any of the six label columns, optional
    judging (default 'default'), rationales (dict or JSON text), inconsistent and the plain
    columns above. Labels become a JSON object (NULL for a failed row without labels), metadata
    {"rationales", "inconsistent"}; then answer/correct/explanation are derived from the labels
    and the items (the runs and items must be there already)."""
    if isinstance(target, Store):
        target.transaction(lambda con: insert_verdicts(con, verdicts))
        return
    con = target
    frame = verdicts.copy()
    if "judging" not in frame:
        frame["judging"] = "default"
    for label in JUDGE_LABELS:
        if label not in frame:
            frame[label] = pd.NA
        frame[label] = frame[label].astype("boolean")
    rationales = frame["rationales"] if "rationales" in frame else [None] * len(frame)
    frame["rationales"] = [None if r is None or r is pd.NA else _json_text(r) for r in rationales]
    if "inconsistent" not in frame:
        frame["inconsistent"] = pd.NA
    frame["inconsistent"] = frame["inconsistent"].astype("boolean")
    plain = "".join(f", {c}" for c in _PLAIN if c in frame)
    labels = ", ".join(f"'{lb}', {lb}" for lb in JUDGE_LABELS)
    any_label = " OR ".join(f"{lb} IS NOT NULL" for lb in JUDGE_LABELS)
    con.register("_verdicts", frame)
    con.execute(
        f"""
        INSERT INTO results (run_id, judging, item_id, variant, status, labels, metadata{plain})
        SELECT run_id, judging, item_id, variant, status,
               CASE WHEN status = 'ok' OR {any_label} THEN json_object({labels}) END,
               json_object('rationales', CAST(rationales AS JSON), 'inconsistent', inconsistent)
               {plain}
        FROM _verdicts
        """
    )
    con.execute(
        derive_sql(
            " AND (v.run_id, v.judging, v.item_id, v.variant) IN "
            "(SELECT (run_id, judging, item_id, variant) FROM _verdicts)"
        )
    )
    con.unregister("_verdicts")


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def random_verdicts(
    n_error: int, n_control: int, seed: int = 0, categories: Sequence[str] = SECONDARY
) -> pd.DataFrame:
    """Item-level rows: item_id, is_error, categories, six random labels (errors detected more)."""
    rng = np.random.default_rng(seed)
    n = n_error + n_control
    is_error = np.array([True] * n_error + [False] * n_control)
    secondary = np.array([categories[i % len(categories)] for i in range(n)], dtype=object)
    secondary[~is_error] = None
    frame = pd.DataFrame(
        {
            "item_id": [f"it-{i:05d}" for i in range(n)],
            "is_error": is_error,
            "secondary_category": secondary,
            "primary_category": [PRIMARY_OF.get(s) if s else None for s in secondary],
        }
    )
    for j, label in enumerate(JUDGE_LABELS):
        p = np.where(is_error, 0.75 - 0.08 * j, 0.10 + 0.02 * j)
        frame[label] = rng.random(n) < p
    return frame


def insert_run(
    store: Store,
    run_id: str,
    verdicts: pd.DataFrame,
    *,
    model: str = "test-model",
    setting: str = "zero-shot",
    mode: str = "proactive",
    item_set: str | None = None,
    weak: bool = False,
    status: Sequence[str] | None = None,
    judge_model: str = "test-judge",
) -> None:
    """Write items (if not there), a run, one ok response and one verdict per row of `verdicts`."""
    item_set = item_set or f"set-{run_id}"
    items = pd.DataFrame(
        {
            "item_set": item_set,
            "item_id": verdicts["item_id"],
            "benchmark": "misprompt",
            "split": "test",
            "is_error": verdicts["is_error"].astype(bool),
            "primary_category": verdicts["primary_category"],
            "secondary_category": verdicts["secondary_category"],
            "prompt": "Prompt of " + verdicts["item_id"],
            "explanation": "why",
            "gold": "Ground truth of " + verdicts["item_id"],
        }
    )
    if "group" in verdicts:  # the item set's optional `group` column (items of one source)
        items["payload"] = [json.dumps({"group": g}) for g in verdicts["group"]]
    responses = pd.DataFrame(
        {
            "run_id": run_id,
            "item_id": verdicts["item_id"],
            "variant": setting,
            "status": "ok",
            "messages": json.dumps([{"role": "user", "content": "q"}]),
            "response": "Response to " + verdicts["item_id"],
            "attempts": 1,
        }
    )
    v = pd.DataFrame(
        {
            "run_id": run_id,
            "item_id": verdicts["item_id"],
            "variant": setting,
            "judge_model": judge_model,
            "status": list(status) if status is not None else "ok",
        }
    )
    for label in JUDGE_LABELS:
        v[label] = verdicts[label].astype("boolean")
    v["rationales"] = json.dumps({label: f"because {label}" for label in JUDGE_LABELS})
    v["raw"] = '{"detection": {"value": true}}'
    v["parse_note"] = "schema"

    def write(con) -> None:
        exists = con.execute(
            "SELECT count(*) FROM item_sets WHERE name = ?", [item_set]
        ).fetchone()[0]
        if not exists:
            con.execute(
                "INSERT INTO item_sets (name, benchmark, origin, n_items) VALUES "
                "(?, 'misprompt', 'test', ?)",
                [item_set, len(items)],
            )
            con.register("_items", items)
            con.execute(f"INSERT INTO items ({', '.join(items.columns)}) SELECT * FROM _items")
        con.execute(
            "INSERT INTO runs (run_id, benchmark, item_set, model, endpoint, setting, mode, "
            "judge_model, weak_model, status, n_planned) VALUES "
            "(?, 'misprompt', ?, ?, 'test', ?, ?, ?, ?, 'done', ?)",
            [run_id, item_set, model, setting, mode, judge_model, weak, len(verdicts)],
        )
        con.register("_resp", responses)
        con.execute(f"INSERT INTO responses ({', '.join(responses.columns)}) SELECT * FROM _resp")
        insert_verdicts(con, v)

    store.transaction(write)


def insert_human_labels(
    store: Store, run_id: str, labels: pd.DataFrame, variant: str = "zero-shot"
) -> None:
    """labels: item_id, annotator, label, value."""
    frame = labels.assign(run_id=run_id, variant=variant)[
        ["run_id", "item_id", "variant", "annotator", "label", "value"]
    ]
    store.insert_df("human_labels", frame)
