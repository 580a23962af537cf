"""Helpers for Mis-prompt tests: write a run with explicit items, responses and verdicts."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.misprompt.taxonomy import PRIMARY_OF, SECONDARY
from core.storage import JUDGE_LABELS, Store


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
        con.register("_v", v)
        con.execute(f"INSERT INTO verdicts ({', '.join(v.columns)}) SELECT * FROM _v")

    store.transaction(write)


def insert_human_labels(
    store: Store, run_id: str, labels: pd.DataFrame, variant: str = "zero-shot"
) -> None:
    """labels: item_id, annotator, label, value."""
    frame = labels.assign(run_id=run_id, variant=variant)[
        ["run_id", "item_id", "variant", "annotator", "label", "value"]
    ]
    store.insert_df("human_labels", frame)
