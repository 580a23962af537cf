"""The one writer of results (core/results.py): ResultBatch + save_batch / write_batch.

Runner, rescore and playground all write responses, verdicts, calls and cache rows through it,
so these tests pin its contract directly on a real DuckDB file: exactly one row per key
whether a unit is new or retried, stale verdicts dropped, other judgings untouched, secrets
never reaching the file, and nothing written when the transaction fails.
"""

from __future__ import annotations

import json

import pytest

from core import results
from core.results import Response, ResultBatch, Verdict, save_batch
from core.storage import DatabaseError, Store

SECRET = "sk-test-0123456789abcdef"


def _existing(store: Store) -> None:
    """A run with two units written before: u1 (failed, with a verdict) and u2 (ok, judged),
    plus u2's verdict in another judging that must stay as it is."""
    store.execute("INSERT INTO runs (run_id, benchmark) VALUES ('r', 'echo')")
    store.execute(
        "INSERT INTO responses (run_id, item_id, variant, status, error) VALUES "
        "('r', 'u1', 'v', 'failed', 'timeout'), ('r', 'u2', 'v', 'ok', NULL)"
    )
    store.execute(
        "INSERT INTO verdicts (run_id, judging, item_id, variant, status, detection) VALUES "
        "('r', 'default', 'u1', 'v', 'failed', NULL), ('r', 'default', 'u2', 'v', 'ok', TRUE), "
        "('r', 'second', 'u2', 'v', 'ok', FALSE)"
    )


def _batch() -> ResultBatch:
    batch = ResultBatch(secrets=[SECRET])
    messages = [{"role": "user", "content": f"my key is {SECRET}"}]
    # u1 retried: now answered and judged (replaces both rows)
    batch.add_response(("r", "u1", "v"), Response(messages=messages, text="ok now"), retried=True)
    batch.add_verdict(
        ("r", "u1", "v"),
        Verdict(labels={"detection": True}, raw=f"echo {SECRET}"),
        retried=True,
        judge_model="judge-m",
    )
    # u2 retried: answered, no verdict this time (its stale default verdict goes)
    batch.add_response(("r", "u2", "v"), Response(text="again"), retried=True)
    batch.drop_verdict(("r", "u2", "v"))
    # u3, u4 new
    for item in ("u3", "u4"):
        key = ("r", item, "v")
        batch.add_response(key, Response(messages=messages, text=f"answer {item}"))
        batch.add_verdict(key, Verdict(labels={"detection": False}, rationales={"d": SECRET}))
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
        lambda con, b, replace=False: writes.append(replace) or real_write(con, b, replace=replace),
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
    verdicts = store.rows(
        "SELECT judging, item_id, status, detection, judge_model FROM verdicts "
        "ORDER BY judging, item_id"
    )
    assert verdicts == [
        ("default", "u1", "ok", True, "judge-m"),
        ("default", "u3", "ok", False, None),
        ("default", "u4", "ok", False, None),
        ("second", "u2", "ok", False, None),  # another judging: untouched
    ]
    # exactly one row per key in every keyed table
    for table, key in (
        ("responses", "run_id, item_id, variant"),
        ("verdicts", "run_id, judging, item_id, variant"),
    ):
        dup = store.scalar(
            f"SELECT count(*) FROM (SELECT {key} FROM {table} GROUP BY ALL HAVING count(*) > 1)"
        )
        assert dup == 0, table
    assert store.scalar("SELECT count(*) FROM calls") == 2
    assert store.scalar("SELECT count(*) FROM call_cache") == 1
    # the secret is nowhere in the file's rows
    for table in ("responses", "verdicts", "calls", "call_cache"):
        text = json.dumps(store.rows(f"SELECT * FROM {table}"), default=str)
        assert SECRET not in text, table
    assert "***" in store.scalar("SELECT messages FROM responses WHERE item_id = 'u3'")
    assert store.scalar("SELECT raw FROM verdicts WHERE item_id = 'u1'") == "echo ***"
    assert store.scalar("SELECT error FROM calls LIMIT 1") == "401 bad key ***"


def test_a_new_unit_that_exists_after_all_is_replaced_not_duplicated(
    store: Store, monkeypatch
) -> None:
    """Plain INSERT for new units; a key clash writes the whole batch again with replace."""
    _existing(store)
    batch = ResultBatch()
    batch.add_response(("r", "u2", "v"), Response(text="replaced"))  # not marked retried
    batch.add_verdict(("r", "u2", "v"), Verdict(labels={"detection": False}))
    writes: list[bool] = []
    real_write = results.write_batch
    monkeypatch.setattr(
        results,
        "write_batch",
        lambda con, b, replace=False: writes.append(replace) or real_write(con, b, replace=replace),
    )
    save_batch(store, batch)
    assert writes == [False, True]  # the clash rolled back, the batch written with replace
    assert store.rows("SELECT response FROM responses WHERE item_id = 'u2'") == [("replaced",)]
    assert store.rows(
        "SELECT judging, detection FROM verdicts WHERE item_id = 'u2' ORDER BY judging"
    ) == [("default", False), ("second", False)]


def test_a_judging_batch_writes_its_own_judging(store: Store) -> None:
    """rescore's batches: verdicts only, under their judging name, scores kept as JSON."""
    _existing(store)
    batch = ResultBatch(judging="third")
    batch.add_verdict(("r", "u2", "v"), Verdict(scores={"correct": True}), judge_model="parser:x")
    assert len(batch) == 1
    save_batch(store, batch)
    row = store.rows("SELECT judge_model, scores FROM verdicts WHERE judging = 'third'")
    assert row[0][0] == "parser:x" and json.loads(row[0][1]) == {"correct": True}
    assert store.scalar("SELECT count(*) FROM verdicts") == 4


def test_a_failed_write_leaves_nothing_and_says_where(store: Store) -> None:
    """The batch is one transaction: a refused row (status NULL) keeps every other row out."""
    _existing(store)
    batch = ResultBatch()
    batch.add_response(("r", "u9", "v"), Response(text="fine"))
    batch.add_verdict(("r", "u9", "v"), Verdict(status=None))  # type: ignore[arg-type]
    with pytest.raises(DatabaseError, match="could not save to"):
        save_batch(store, batch)
    assert store.scalar("SELECT count(*) FROM responses WHERE item_id = 'u9'") == 0
