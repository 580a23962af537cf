"""The one writer of results (core/engine/results.py): ResultBatch + save_batch / write_batch.

Runner, rescore and playground all write responses, results, calls and cache rows through it,
so these tests pin its contract directly on a real DuckDB file: exactly one row per key
whether a unit is new or retried, stale results dropped, other judgings untouched, secrets
never reaching the file, and nothing written when the transaction fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from core.engine import results
from core.engine.results import Response, Result, ResultBatch, save_batch
from core.store import DatabaseError, Store

SECRET = "sk-test-0123456789abcdef"


def _existing(store: Store) -> None:
    """A run with two units written before: u1 (failed, with a failed result) and u2 (ok,
    judged), plus u2's result in another judging that must stay as it is."""
    store.execute("INSERT INTO runs (run_id, benchmark) VALUES ('r', 'echo')")
    store.execute(
        "INSERT INTO responses (run_id, item_id, variant, status, error) VALUES "
        "('r', 'u1', 'v', 'failed', 'timeout'), ('r', 'u2', 'v', 'ok', NULL)"
    )
    store.execute(
        "INSERT INTO results (run_id, judging, item_id, variant, status, answer, labels) VALUES "
        "('r', 'default', 'u1', 'v', 'failed', NULL, NULL), "
        """('r', 'default', 'u2', 'v', 'ok', 'D', '{"detection": true}'), """
        """('r', 'second', 'u2', 'v', 'ok', '∅', '{"detection": false}')"""
    )


def _recording(writes: list[bool], real_write: Callable[..., Any]) -> Callable[..., Any]:
    """write_batch, noting each call's `replace`."""

    def write(con: Any, b: ResultBatch, replace: bool = False) -> Any:
        writes.append(replace)
        return real_write(con, b, replace=replace)

    return write


def _batch() -> ResultBatch:
    batch = ResultBatch(secrets=[SECRET])
    messages = [{"role": "user", "content": f"my key is {SECRET}"}]
    # u1 retried: now answered and judged (replaces both rows)
    batch.add_response(("r", "u1", "v"), Response(messages=messages, text="ok now"), retried=True)
    batch.add_result(
        ("r", "u1", "v"),
        Result(answer="D", correct=True, labels={"detection": True}, raw=f"echo {SECRET}"),
        retried=True,
        judge_model="judge-m",
    )
    # u2 retried: answered, no result this time (its stale default result goes)
    batch.add_response(("r", "u2", "v"), Response(text="again"), retried=True)
    batch.drop_result(("r", "u2", "v"))
    # u3, u4 new
    for item in ("u3", "u4"):
        key = ("r", item, "v")
        batch.add_response(key, Response(messages=messages, text=f"answer {item}"))
        batch.add_result(
            key,
            Result(
                answer="∅",
                correct=False,
                score=0.5,
                labels={"detection": False},
                explanation=f"D: {SECRET}",
                metadata={"rationales": {"detection": SECRET}, "inconsistent": False},
            ),
        )
        batch.add_call(
            key,
            {"role": "model", "attempt": 1, "status": "error", "error": f"401 bad key {SECRET}"},
        )
    batch.add_cache_rows([(f"scope:{SECRET}", json.dumps({"text": SECRET}))])
    return batch


def test_new_and_retried_units_one_row_per_key_secrets_scrubbed(store: Store, monkeypatch) -> None:
    _existing(store)
    batch = _batch()
    assert len(batch) == 4
    writes: list[bool] = []
    real_write = results.write_batch
    monkeypatch.setattr(
        results,
        "write_batch",
        _recording(writes, real_write),
    )
    save_batch(store, batch)
    assert writes == [False]  # retried units marked as such: no key clash, no second write

    responses = store.rows(
        "SELECT item_id, status, response, error FROM responses ORDER BY item_id"
    )
    assert responses == [
        ("u1", "ok", "ok now", None),
        ("u2", "ok", "again", None),
        ("u3", "ok", "answer u3", None),
        ("u4", "ok", "answer u4", None),
    ]
    rows = store.rows(
        "SELECT judging, item_id, status, answer, correct, score, labels, judge_model "
        "FROM results ORDER BY judging, item_id"
    )
    assert [(*r[:6], json.loads(r[6]), r[7]) for r in rows] == [
        ("default", "u1", "ok", "D", True, None, {"detection": True}, "judge-m"),
        ("default", "u3", "ok", "∅", False, 0.5, {"detection": False}, None),
        ("default", "u4", "ok", "∅", False, 0.5, {"detection": False}, None),
        ("second", "u2", "ok", "∅", None, None, {"detection": False}, None),  # untouched
    ]
    assert json.loads(store.scalar("SELECT metadata FROM results WHERE item_id = 'u3'")) == {
        "rationales": {"detection": "***"},
        "inconsistent": False,
    }
    assert store.scalar("SELECT explanation FROM results WHERE item_id = 'u4'") == "D: ***"
    # exactly one row per key in every keyed table
    for table, key in (
        ("responses", "run_id, item_id, variant"),
        ("results", "run_id, judging, item_id, variant"),
    ):
        dup = store.scalar(
            f"SELECT count(*) FROM (SELECT {key} FROM {table} GROUP BY ALL HAVING count(*) > 1)"
        )
        assert dup == 0, table
    assert store.scalar("SELECT count(*) FROM calls") == 2
    assert store.scalar("SELECT count(*) FROM call_cache") == 1
    # the secret is nowhere in the file's rows
    for table in ("responses", "results", "calls", "call_cache"):
        text = json.dumps(store.rows(f"SELECT * FROM {table}"), default=str)
        assert SECRET not in text, table
    assert "***" in store.scalar("SELECT messages FROM responses WHERE item_id = 'u3'")
    assert store.scalar("SELECT raw FROM results WHERE item_id = 'u1'") == "echo ***"
    assert store.scalar("SELECT error FROM calls LIMIT 1") == "401 bad key ***"


def test_a_new_unit_that_exists_after_all_is_replaced_not_duplicated(
    store: Store, monkeypatch
) -> None:
    """Plain INSERT for new units; a key clash writes the whole batch again with replace."""
    _existing(store)
    batch = ResultBatch()
    batch.add_response(("r", "u2", "v"), Response(text="replaced"))  # not marked retried
    batch.add_result(("r", "u2", "v"), Result(labels={"detection": False}))
    writes: list[bool] = []
    real_write = results.write_batch
    monkeypatch.setattr(
        results,
        "write_batch",
        _recording(writes, real_write),
    )
    save_batch(store, batch)
    assert writes == [False, True]  # the clash rolled back, the batch written with replace
    assert store.rows("SELECT response FROM responses WHERE item_id = 'u2'") == [("replaced",)]
    assert store.rows(
        "SELECT judging, labels->>'detection' FROM results WHERE item_id = 'u2' ORDER BY judging"
    ) == [("default", "false"), ("second", "false")]


def test_a_judging_batch_writes_its_own_judging(store: Store) -> None:
    """rescore's batches: results only, under their judging name, metadata kept as JSON."""
    _existing(store)
    batch = ResultBatch(judging="third")
    batch.add_result(
        ("r", "u2", "v"),
        Result(status="out_of_range", answer="step 9", metadata={"predicted_step": 9}),
        judge_model="parser:x",
    )
    assert len(batch) == 1
    save_batch(store, batch)
    row = store.rows(
        "SELECT judge_model, status, answer, correct, metadata FROM results WHERE judging = 'third'"
    )
    assert row[0][:4] == ("parser:x", "out_of_range", "step 9", None)
    assert json.loads(row[0][4]) == {"predicted_step": 9}
    assert store.scalar("SELECT count(*) FROM results") == 4


def test_a_failed_write_leaves_nothing_and_says_where(store: Store) -> None:
    """The batch is one transaction: a refused row (status NULL) keeps every other row out."""
    _existing(store)
    batch = ResultBatch()
    batch.add_response(("r", "u9", "v"), Response(text="fine"))
    batch.add_result(("r", "u9", "v"), Result(status=None))  # type: ignore[arg-type]
    with pytest.raises(DatabaseError, match="could not save to"):
        save_batch(store, batch)
    assert store.scalar("SELECT count(*) FROM responses WHERE item_id = 'u9'") == 0
