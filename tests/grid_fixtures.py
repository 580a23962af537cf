"""A small hand-made database for the response grid: three Mis-prompt runs over four items with
known verdicts, one ErrorBench run with two conditions, two BBM runs."""

from __future__ import annotations

import json

import pandas as pd

from core.benchmarks.bbm import record as bbm_record
from core.benchmarks.errorbench import record as errorbench_record
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.engine.results import as_json
from core.store import Store
from tests.misprompt_fixtures import insert_run

# item -> (is_error, secondary category, patterns of runs r1, r2, r3 as letter sets)
MP_ITEMS = {
    "c1": (False, None, ({"D"}, set(), set())),
    "e1": (True, "Spelling Errors", ({"D"}, set(), {"D"})),
    "e2": (True, "Location", ({"D", "IA"}, {"D", "IA"}, {"D", "IA"})),
    "e3": (True, "Location", ({"G"}, {"D", "G"}, {"D", "IA"})),
}
LETTER = {
    "D": "detection",
    "IA": "identification_attempt",
    "IC": "identification_accurate",
    "CA": "correction_attempt",
    "CC": "correction_accurate",
    "G": "guidance",
}
TO_RESULT = {"errorbench": errorbench_record.to_result, "bbm": bbm_record.to_result}
PRIMARY: dict[str | None, str] = {
    "Spelling Errors": "Language Errors",
    "Location": "Incomplete Information",
}


def misprompt_runs(store: Store) -> None:
    for k, run in enumerate(("r1", "r2", "r3")):
        rows = []
        for item_id, (is_error, secondary, patterns) in MP_ITEMS.items():
            row = {
                "item_id": item_id,
                "is_error": is_error,
                "secondary_category": secondary,
                "primary_category": PRIMARY.get(secondary),
            }
            for letter, label in LETTER.items():
                row[label] = letter in patterns[k]
            rows.append(row)
        insert_run(store, run, pd.DataFrame(rows), model=f"model-{run}", item_set="gs")
    # distinctive texts for the search and the collapse
    store.execute(
        "UPDATE responses SET response = 'The capital is PARIS.\nDone.' "
        "WHERE run_id = 'r2' AND item_id = 'e2'"
    )
    store.execute(
        "UPDATE responses SET response = ? WHERE run_id = 'r3' AND item_id = 'c1'",
        ["I think so.\n" + "All good.\n" * 30 + "End."],
    )


def _insert(
    store: Store, benchmark: str, item_set: str, items: list[dict], runs: dict[str, list[dict]]
) -> None:
    def write(con) -> None:
        con.execute(
            "INSERT INTO item_sets (name, benchmark, origin, n_items) VALUES (?, ?, 'test', ?)",
            [item_set, benchmark, len(items)],
        )
        for it in items:
            con.execute(
                "INSERT INTO items (item_set, item_id, benchmark, is_error, primary_category, "
                "prompt, gold, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    item_set,
                    it["item_id"],
                    benchmark,
                    it.get("is_error", True),
                    it.get("category"),
                    it.get("prompt", "p"),
                    it.get("gold"),
                    "{}",
                ],
            )
        for run_id, responses in runs.items():
            con.execute(
                "INSERT INTO runs (run_id, benchmark, item_set, model, status, n_planned) "
                "VALUES (?, ?, ?, ?, 'done', ?)",
                [run_id, benchmark, item_set, f"model-{run_id}", len(responses)],
            )
            for r in responses:
                con.execute(
                    "INSERT INTO responses (run_id, item_id, variant, status, response, "
                    "scores, attempts) VALUES (?, ?, ?, ?, ?, ?, 1)",
                    [
                        run_id,
                        r["item_id"],
                        r["variant"],
                        r.get("status", "ok"),
                        r.get("response", "answer"),
                        json.dumps(r.get("scores")),
                    ],
                )
                if r.get("status", "ok") == "ok" and r.get("scores") is not None:
                    # a code-scored run's own judging: one record per ok response
                    result = TO_RESULT[benchmark](r["scores"]).row()
                    result.update(
                        run_id=run_id, judging="default", item_id=r["item_id"], variant=r["variant"]
                    )
                    for key in ("labels", "metadata"):
                        result[key] = as_json(result[key])
                    names = ", ".join(result)
                    marks = ", ".join("?" for _ in result)
                    con.execute(
                        f"INSERT INTO results ({names}) VALUES ({marks})", list(result.values())
                    )

    store.transaction(write)


def errorbench_run(store: Store) -> None:
    _insert(
        store,
        "errorbench",
        "eb",
        [
            {"item_id": "p1", "category": "3", "gold": "3"},
            {"item_id": "p2", "category": "4", "gold": "4"},
        ],
        {
            "ebr": [
                {"item_id": "p1", "variant": "blind", "scores": {"reported": 3, "n": 3}},
                {"item_id": "p1", "variant": "anchored", "scores": {"reported": 5, "n": 3}},
                {
                    "item_id": "p2",
                    "variant": "blind",
                    "scores": {"reported": 4, "n": 4, "unparsed": False},
                },
                {
                    "item_id": "p2",
                    "variant": "anchored",
                    "status": "failed",
                    "response": None,
                    "scores": None,
                },
            ]
        },
    )


def bbm_runs(store: Store) -> None:
    item = [{"item_id": "t1", "category": "word_sorting", "gold": "a b c"}]
    _insert(
        store,
        "bbm",
        "bs",
        item,
        {
            "b1": [
                {
                    "item_id": "t1",
                    "variant": "direct_trace",
                    "scores": {
                        "predicted_step": 2,
                        "gold_index": 1,
                        "location_correct": True,
                        "parse_status": "ok",
                    },
                }
            ],
            "b2": [
                {
                    "item_id": "t1",
                    "variant": "direct_trace",
                    "scores": {
                        "predicted_step": None,
                        "gold_index": 1,
                        "location_correct": False,
                        "parse_status": "ok",
                    },
                }
            ],
        },
    )


def all_runs(store: Store) -> Store:
    misprompt_runs(store)
    errorbench_run(store)
    bbm_runs(store)
    return store


def labels_of(letters: set[str]) -> dict[str, bool]:
    return {label: any(LETTER[x] == label for x in letters) for label in JUDGE_LABELS}


# run k3 over the grid's items, asked three times (`run --epochs 3`): detection per epoch
EPOCH_DETECTION = {
    "c1": (True, False, False),  # a control: correct when not detected -> 2 of 3
    "e1": (True, False, False),  # 1 of 3
    "e2": (True, True, True),  # 3 of 3
    "e3": (False, False, False),  # 0 of 3
}


def epoch_run(store: Store) -> Store:
    """Run k3 of three epochs over item set gs (which `all_runs` fills), epoch e's response
    `Response to ITEM (epoch e)`."""
    rows = [
        {
            "item_id": item_id,
            "is_error": is_error,
            "secondary_category": secondary,
            "primary_category": PRIMARY.get(secondary),
            **{label: False for label in JUDGE_LABELS},
        }
        for item_id, (is_error, secondary, _) in MP_ITEMS.items()
    ]
    insert_run(store, "k3", pd.DataFrame(rows), model="model-k3", item_set="gs")

    def write(con) -> None:
        con.execute(
            "UPDATE runs SET params = json_object('epochs', 3), n_planned = 12 WHERE run_id = 'k3'"
        )
        for epoch in (2, 3):
            con.execute(
                "INSERT INTO responses SELECT * REPLACE (? AS epoch, "
                "response || ' (epoch ' || ? || ')' AS response) FROM responses "
                "WHERE run_id = 'k3' AND epoch = 1",
                [epoch, epoch],
            )
            con.execute(
                "INSERT INTO results SELECT * REPLACE (? AS epoch) FROM results "
                "WHERE run_id = 'k3' AND epoch = 1",
                [epoch],
            )
        for item_id, detected in EPOCH_DETECTION.items():
            is_error = MP_ITEMS[item_id][0]
            for epoch, d in enumerate(detected, start=1):
                labels = {label: (d if label == "detection" else False) for label in JUDGE_LABELS}
                con.execute(
                    "UPDATE results SET labels = ?, correct = ?, answer = ? "
                    "WHERE run_id = 'k3' AND item_id = ? AND epoch = ?",
                    [json.dumps(labels), d == is_error, "D" if d else "∅", item_id, epoch],
                )

    store.transaction(write)
    return store
