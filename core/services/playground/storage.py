"""An exchange saved as a playground run (two responses, their results, human labels), listed and
loaded back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import asdict, fields
from datetime import UTC, datetime
from typing import Any

import duckdb
import pandas as pd

from core import registry
from core.engine.endpoints import (
    Endpoint,
    EndpointError,
    is_weak,
)
from core.engine.results import DEFAULT_JUDGING, Result, ResultBatch, write_batch
from core.services.playground.exchange import (
    EndpointProblem,
    Exchange,
    Side,
    _client,
    _judge,
    _judge_problem,
    _timed,
)
from core.services.playground.roles import (
    DEFAULT_MAX_TOKENS,
    KIND,
    MODES,
    OnTick,
    label_names,
    playground_benchmark,
    role_of,
)
from core.store import HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, Store, upsert_rows

# ---------------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------------


def _params(exchange: Exchange) -> dict[str, Any]:
    role = role_of(registry.get(exchange.benchmark))
    return {
        "temperature": exchange.temperature,
        "max_tokens": exchange.max_tokens,
        "item": exchange.item,
        "model_endpoint": exchange.model_endpoint,
        "judge_endpoint": exchange.judge_endpoint,
        "judging": exchange.judging,
        "judge_template": role.judge_template_id(exchange.judge_template),
        "problems": [asdict(p) for p in exchange.problems],
    }


def _item_key(exchange: Exchange) -> str:
    return str(exchange.item.get("item_id") or "custom")


def _add_side(
    batch: ResultBatch,
    key: tuple[str, str, str],
    side: Side,
    *,
    response: bool = True,
    retried: bool = False,
) -> None:
    """A side's rows for the one writer (core/engine/results.py): its response (unless only judged
    now), its result (if judged) and its call records."""
    if response:
        batch.add_response(key, side.as_response())
    if side.result is not None:
        batch.add_result(key, side.result, retried=retried)
    for call in side.calls:
        batch.add_call(key, call)


def save_exchange(store: Store, exchange: Exchange) -> str:
    """Write the run, its two responses, results (if judged) and call records in one
    transaction."""
    item_id = _item_key(exchange)
    status = "done" if all(s.status == "ok" for s in exchange.sides.values()) else "failed"
    model_ep, judge_ep = exchange.model_endpoint, exchange.judge_endpoint or {}
    params = json.dumps(_params(exchange), default=str)

    batch = ResultBatch()
    for mode, side in exchange.sides.items():
        _add_side(batch, (exchange.run_id, item_id, mode), side)

    def write(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(
            "INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, mode, "
            "judge_model, judge_endpoint, template_id, params, weak_model, status, n_planned, "
            "created_at, updated_at) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, current_timestamp, current_timestamp)",
            [
                exchange.run_id,
                exchange.benchmark,
                KIND,
                model_ep["model"],
                model_ep["name"],
                exchange.setting,
                "+".join(MODES),
                judge_ep.get("model"),
                judge_ep.get("name"),
                exchange.template_id,
                params,
                exchange.weak,
                status,
                len(MODES),
            ],
        )
        write_batch(con, batch)

    store.transaction(write)
    exchange.saved = True
    return exchange.run_id


async def judge_exchange_async(
    store: Store, run_id: str, judge: Endpoint, on_tick: OnTick | None = None, max_retries: int = 1
) -> Exchange | None:
    """Judge a saved exchange's answers now ("judge later"), ticking on_tick('judging', s).

    Results, their call records and the run's judge are written in one transaction; when the
    judge endpoint does not answer nothing is written and the Exchange carries the problem.
    """
    exchange = load_exchange(store, run_id)
    if exchange is None:
        return None
    role = role_of(registry.get(exchange.benchmark))
    client = _client(judge, store, max_retries)
    try:
        try:
            client.check()
        except EndpointError as exc:
            exchange.problems = [EndpointProblem.from_failure("judge", judge, str(exc))]
            return exchange
        answered = [s for s in exchange.sides.values() if s.status == "ok"]
        for side in answered:
            side.calls = []
        await _timed(
            asyncio.gather(
                *(
                    _judge(role, client, exchange.item, side, exchange.judge_template)
                    for side in answered
                )
            ),
            "judging",
            on_tick,
        )
    finally:
        await client.aclose()
    problem = _judge_problem(judge, answered)
    if problem:
        for side in answered:
            side.result = None
        exchange.problems = [problem]
        return exchange
    exchange.judge_endpoint = judge.public_dict()
    exchange.weak = bool(exchange.weak or is_weak(judge))
    exchange.judging = "llm"
    item_id = _item_key(exchange)
    params = json.dumps(_params(exchange), default=str)

    batch = ResultBatch()
    for side in answered:  # a result judged again replaces the old one
        _add_side(batch, (run_id, item_id, side.mode), side, response=False, retried=True)

    def write(con: duckdb.DuckDBPyConnection) -> None:
        write_batch(con, batch)
        con.execute(
            "UPDATE runs SET judge_model = ?, judge_endpoint = ?, weak_model = ?, "
            "params = ?, updated_at = current_timestamp WHERE run_id = ?",
            [judge.model, judge.name, exchange.weak, params, run_id],
        )

    store.transaction(write)
    return exchange


def judge_exchange(store: Store, run_id: str, judge: Endpoint, **kwargs: Any) -> Exchange | None:
    """Blocking wrapper of judge_exchange_async (its own event loop)."""
    return asyncio.run(judge_exchange_async(store, run_id, judge, **kwargs))


def save_human_labels(
    store: Store,
    run_id: str,
    annotator: str,
    labels: Mapping[str, Mapping[str, bool]],
    note: str | None = None,
) -> int:
    """A person's labels (all of the benchmark's) for each answered side of an exchange, as
    human labels of the playground run (variant = mode), all in one transaction; the LLM
    judge's value, if any, is kept beside each label as in the audit."""
    annotator = (annotator or "").strip()
    if not annotator:
        raise ValueError("type your name first: it is saved with the labels")
    exchange = load_exchange(store, run_id)
    if exchange is None:
        raise ValueError(f"no playground exchange {run_id!r}")
    names = label_names(registry.get(exchange.benchmark))
    item_id = _item_key(exchange)
    rows: list[list[Any]] = []
    for mode, values in labels.items():
        side = exchange.sides.get(mode)
        if side is None or side.status != "ok":
            raise ValueError(f"the {mode} side of {run_id} has no answer to label")
        missing = [name for name in names if name not in values]
        if missing:
            raise ValueError(f"{mode}: missing label(s) {', '.join(missing)}")
        judged_labels = (side.result.labels if side.result else None) or {}
        for name in names:
            judged = judged_labels.get(name)
            rows.append(
                [
                    run_id,
                    item_id,
                    mode,
                    annotator,
                    name,
                    bool(values[name]),
                    None if judged is None else bool(judged),
                    (note or "").strip() or None,
                ]
            )
    stamp = datetime.now(UTC).replace(tzinfo=None)

    def write(con: duckdb.DuckDBPyConnection) -> int:
        upsert_rows(
            con, "human_labels", HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, [[*r, stamp] for r in rows]
        )
        return len(rows)

    return int(store.transaction(write))


def human_labels(store: Store, run_id: str, annotator: str | None = None) -> pd.DataFrame:
    """Human labels of one exchange (all annotators, or one): variant, annotator, label, value."""
    where, params = ("AND annotator = ?", [run_id, annotator]) if annotator else ("", [run_id])
    return store.df(
        f"""SELECT variant, annotator, label, value, judge_value, note, created_at
                        FROM human_labels WHERE run_id = ? {where}
                        ORDER BY annotator, variant, label""",
        params,
    )


def list_exchanges(store: Store, benchmark: str | None = None, limit: int = 200) -> pd.DataFrame:
    """Saved playground runs of the benchmark, newest first, with the prompt and, per mode, its
    first label as the judge gave it (`<mode>_<label>`: e.g. `proactive_detection`)."""
    bench = playground_benchmark(benchmark)
    first = next(iter(label_names(bench)), None)
    per_mode = "".join(
        f"max(CASE WHEN v.variant = '{mode}' THEN TRY_CAST(v.labels->>$label AS BOOLEAN) END) "
        f'AS "{mode}_{first}",\n'
        for mode in MODES
        if first
    )
    frame = store.df(
        f"""
        SELECT r.run_id, r.created_at, r.model, r.endpoint, r.setting, r.judge_model,
               coalesce(r.weak_model, false) AS weak_model, r.status,
               json_extract_string(r.params, '$.item.prompt') AS prompt,
               json_extract_string(r.params, '$.item.secondary_category') AS category,
               {per_mode}
               count(v.run_id) > 0 AS llm_judged
        FROM runs r LEFT JOIN results v ON v.run_id = r.run_id AND v.judging = $judging
        WHERE r.kind = $kind AND r.benchmark = $bench
        GROUP BY ALL ORDER BY r.created_at DESC, r.run_id DESC LIMIT {int(limit)}
    """,
        {"label": first or "", "judging": DEFAULT_JUDGING, "kind": KIND, "bench": bench.name},
    )
    people = {
        row[0]
        for row in store.rows(
            """SELECT DISTINCT h.run_id FROM human_labels h JOIN runs r
               ON r.run_id = h.run_id WHERE r.kind = ?""",
            [KIND],
        )
    }
    frame["judged_by"] = [
        " + ".join(w for w, on in (("LLM judge", bool(llm)), ("person", rid in people)) if on)
        or "not yet"
        for rid, llm in zip(frame["run_id"], frame["llm_judged"])
    ]
    return frame.drop(columns="llm_judged")


_RESULT_FIELDS = [f.name for f in fields(Result)]
_RESPONSE_COLUMNS = (
    "variant, messages, response, status, error, attempts, prompt_tokens, completion_tokens, "
    "latency_ms, cost_usd, cached"
)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _results(store: Store, run_id: str) -> dict[str, Result]:
    """The run's stored results (its own judging) by variant, as the judge gave them."""
    rows = store.rows(
        f"SELECT variant, {', '.join(_RESULT_FIELDS)} FROM results "
        "WHERE run_id = ? AND judging = ?",
        [run_id, DEFAULT_JUDGING],
    )
    found = {}
    for variant, *values in rows:
        record = dict(zip(_RESULT_FIELDS, values))
        record["labels"], record["metadata"] = _json(record["labels"]), _json(record["metadata"])
        found[variant] = Result(**record)
    return found


def load_exchange(store: Store, run_id: str) -> Exchange | None:
    """A saved exchange, as it was shown (responses, results with rationales)."""
    runs = store.rows(
        "SELECT benchmark, params, setting, endpoint, model, judge_endpoint, judge_model, "
        "weak_model, created_at, template_id FROM runs WHERE run_id = ? AND kind = ?",
        [run_id, KIND],
    )
    if not runs:
        return None
    bench_name, raw_params, setting, endpoint, model, judge_endpoint, judge_model = runs[0][:7]
    weak, created_at, template_id = runs[0][7:]
    role = role_of(registry.get(bench_name))
    params = _json(raw_params) or {}
    results = _results(store, run_id)
    sides: dict[str, Side] = {}
    for mode, messages, response, status, error, attempts, *usage in store.rows(
        f"SELECT {_RESPONSE_COLUMNS} FROM responses WHERE run_id = ?", [run_id]
    ):
        if mode not in MODES:
            continue
        prompt_tokens, completion_tokens, latency_ms, cost_usd, cached = usage
        sides[mode] = Side(
            mode,
            _json(messages) or [],
            response=response or "",
            status=status,
            error=error,
            attempts=int(attempts or 0),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms=latency_ms,
            cost_usd=cost_usd,
            cached=bool(cached),
            result=results.get(mode),
        )
    problems = [
        EndpointProblem(**{**p, "urls": tuple(p.get("urls") or ())})
        for p in params.get("problems") or []
    ]
    return Exchange(
        run_id=run_id,
        benchmark=bench_name,
        item=params.get("item") or {},
        setting=setting,
        model_endpoint=params.get("model_endpoint") or {"name": endpoint, "model": model},
        judge_endpoint=params.get("judge_endpoint", {"name": judge_endpoint, "model": judge_model}),
        temperature=float(params.get("temperature", 0.0)),
        max_tokens=int(params.get("max_tokens", DEFAULT_MAX_TOKENS)),
        sides={mode: sides[mode] for mode in MODES if mode in sides},
        weak=bool(weak),
        problems=problems,
        created_at=str(created_at),
        template_id=template_id or "",
        saved=True,
        judging=params.get("judging") or ("llm" if results else "later"),
        judge_template=str(params.get("judge_template") or role.legacy_judge_template or ""),
    )
