"""One writer process of tests/test_lake_concurrency.py: every round it writes the same keys as
its siblings through the store's own writers (a run's flush with results, call records and
cache rows, a person's labels, an audit drawn if missing, an item set replaced, a run row made
if missing), printing `round N` after each, so the test can kill it mid-way.

    python -m tests.lake_writer WRITER ROUNDS     (the store from EHW_DB)
"""

from __future__ import annotations

import json
import sys

import pandas as pd

from core.engine.results import Response, Result, ResultBatch, save_batch
from core.services.audit import create_audit, save_labels
from core.store import Store, replace_item_set

RUN = "race"
ITEMS = 10
LABELS = (
    "detection",
    "identification_attempt",
    "identification_accurate",
    "correction_attempt",
    "correction_accurate",
    "guidance",
)


def items_frame(tag: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_set": "race-set",
            "item_id": [f"i{i}" for i in range(ITEMS)],
            "benchmark": "misprompt",
            "is_error": [i % 2 == 0 for i in range(ITEMS)],
            "primary_category": "c",
            "prompt": [f"question {i} ({tag})" for i in range(ITEMS)],
        }
    )


def _batch(run_id: str, item_ids: list[str], text: str) -> ResultBatch:
    batch = ResultBatch()
    for item_id in item_ids:
        key = (run_id, item_id, "zero-shot")
        batch.add_response(key, Response(text=text))
        batch.add_result(key, Result(labels={name: True for name in LABELS}, judge_model="j"))
        batch.add_call(key, {"role": "model", "attempt": 1, "status": "ok"})
    return batch


def one_round(store: Store, writer: int, r: int) -> None:
    """Round r's keys are new to the store, the same in every writer (the race: each finds them
    absent), but for the writer's own run."""
    # a run's flush: new units of its own run, and the judge's cache entries every writer makes
    own = _batch(f"own-{writer}", [f"r{r}-i{j}" for j in range(5)], f"writer {writer}")
    own.add_cache_rows(
        (f"scope:k{n}", json.dumps({"text": f"w{writer}"})) for n in range(r, r + ITEMS)
    )
    save_batch(store, own)
    # two processes writing the same new units (one shard run twice, or a resume too early)
    save_batch(store, _batch("twice", [f"r{r}-i{j}" for j in range(5)], f"writer {writer}"))
    save_labels(store, RUN, f"i{r}", "zero-shot", "ann", {"detection": bool(writer % 2)})
    create_audit(store, f"shared-{r}", [RUN], fraction=1.0, seed=0)
    store.transaction(
        lambda con: replace_item_set(
            con,
            f"swap-{r}",
            "misprompt",
            items_frame(f"w{writer}").assign(item_set=f"swap-{r}"),
            origin=f"writer {writer}",
        )
    )
    store.transaction(
        lambda con: con.execute(
            "INSERT INTO runs (run_id, benchmark, status) SELECT ?, 'misprompt', 'done' "
            "WHERE NOT EXISTS (SELECT 1 FROM runs WHERE run_id = ?)",
            [f"made-{r}", f"made-{r}"],
        )
    )


def main(argv: list[str]) -> int:
    writer, rounds = int(argv[0]), int(argv[1])
    store = Store.open(create=False)
    print("ready", flush=True)
    for r in range(rounds):
        one_round(store, writer, r)
        print(f"round {r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
