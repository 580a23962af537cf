"""Build small judged runs directly in a database, for audit tests (no model needed).

Rows are written the way the runner writes them (runs, items, responses, verdicts), with
labels drawn from a seeded generator so tests can compute expectations independently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store
from tests.misprompt_fixtures import insert_verdicts

CATEGORIES = [
    ("Language Errors", "Spelling"),
    ("Factual Errors", "Entity"),
    ("Logical Errors", "Presumption"),
    ("Incomplete Information", "Location"),
]


def add_items(
    store: Store, item_set: str = "audit-set", n_per_category: int = 10, n_controls: int = 10
) -> pd.DataFrame:
    rows = []
    for primary, secondary in CATEGORIES:
        for k in range(n_per_category):
            rows.append(
                {
                    "item_set": item_set,
                    "item_id": f"{secondary[:3].lower()}-{k:02d}",
                    "benchmark": "misprompt",
                    "split": "test",
                    "is_error": True,
                    "primary_category": primary,
                    "secondary_category": secondary,
                    "prompt": f"Why is the {secondary} wrong in question {k}?",
                    "explanation": f"explanation {k}",
                    "gold": f"ground truth {k}",
                    "payload": None,
                }
            )
    for k in range(n_controls):
        rows.append(
            {
                "item_set": item_set,
                "item_id": f"ctl-{k:02d}",
                "benchmark": "misprompt",
                "split": "test",
                "is_error": False,
                "primary_category": None,
                "secondary_category": None,
                "prompt": f"What is the capital of place {k}?",
                "explanation": None,
                "gold": f"capital {k}",
                "payload": None,
            }
        )
    frame = pd.DataFrame(rows)
    store.insert_df("items", frame, replace_where="item_set = ?", params=[item_set])
    store.execute(
        "INSERT OR REPLACE INTO item_sets (name, benchmark, origin, n_items) "
        "VALUES (?, 'misprompt', 'test', ?)",
        [item_set, len(frame)],
    )
    return frame


def add_judged_run(
    store: Store,
    run_id: str,
    model: str,
    items: pd.DataFrame,
    seed: int,
    setting: str = "zero-shot",
    mode: str = "proactive",
    item_set: str = "audit-set",
) -> pd.DataFrame:
    """A finished run with one ok response and one ok verdict per item (random labels)."""
    rng = np.random.default_rng(seed)
    store.execute(
        "INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, mode, "
        "judge_model, status, n_planned) VALUES (?, 'misprompt', 'eval', ?, ?, 'test', ?, ?, "
        "'judge-model', 'done', ?)",
        [run_id, item_set, model, setting, mode, len(items)],
    )
    responses = pd.DataFrame(
        {
            "run_id": run_id,
            "item_id": items["item_id"],
            "variant": setting,
            "status": "ok",
            "messages": [json.dumps([{"role": "user", "content": p}]) for p in items["prompt"]],
            "response": [f"{model} answers: {p}" for p in items["prompt"]],
        }
    )
    store.insert_df("responses", responses)
    verdicts = pd.DataFrame(
        {
            "run_id": run_id,
            "item_id": items["item_id"],
            "variant": setting,
            "judge_model": "judge-model",
            "status": "ok",
        }
    )
    for label in JUDGE_LABELS:
        verdicts[label] = rng.random(len(items)) < 0.5
    verdicts["rationales"] = [json.dumps({l: f"because {l}" for l in JUDGE_LABELS})] * len(items)
    verdicts["raw"] = "{}"
    verdicts["inconsistent"] = False
    insert_verdicts(store, verdicts)
    return verdicts


def write_labels(store: Store, saves: Iterable[tuple[Any, str, Mapping[str, bool]]]) -> int:
    """Many saves in one insert: for each (queue row, annotator, {label: value}) the rows one
    `audit.save_labels` call writes (the value, the judge's verdict from the queue row as
    judge_value, no note, created_at now). Each save_labels is its own transaction (~20 ms);
    tests of what is computed from saved labels write hundreds. Saving itself (conflicts, last
    write wins, resume) is tested with save_labels in test_audit.py and on the audit page."""
    stamp = datetime.now(UTC).replace(tzinfo=None)
    rows = []
    for row, annotator, values in saves:
        for label, value in values.items():
            judged = getattr(row, label)
            rows.append(
                {
                    "run_id": row.run_id,
                    "item_id": row.item_id,
                    "variant": row.variant,
                    "annotator": annotator,
                    "label": label,
                    "value": bool(value),
                    "judge_value": None if pd.isna(judged) else bool(judged),
                    "note": None,
                    "created_at": stamp,
                }
            )
    if rows:
        store.insert_df("human_labels", pd.DataFrame(rows))
    return len(rows)


def two_runs(store: Store) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    items = add_items(store)
    return items, {
        "run-a": add_judged_run(store, "run-a", "model-a", items, seed=1),
        "run-b": add_judged_run(store, "run-b", "model-b", items, seed=2),
    }
