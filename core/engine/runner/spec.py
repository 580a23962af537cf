"""What a run is: its spec (model, endpoints, item set, settings), its name, the CLI flags that
make one, the parameters stored with it and the check that a resume asks for the same run."""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from core.engine import bounds
from core.engine.endpoints import (
    Endpoint,
    add_endpoint_args,
    endpoint_from_args,
    url_secrets,
)
from core.store import DatabaseError


class RunError(DatabaseError):
    """A run that cannot start as asked (unknown item set, name clash, missing key...).

    A DatabaseError subclass so `python -m core` prints it as a one-line error.
    """


@dataclass
class RunSpec:
    run_id: str
    benchmark: str
    item_set: str
    endpoint: Endpoint
    judge: Endpoint | None = None
    setting: str | None = None
    mode: str | None = None
    template_id: str | None = None
    params: dict = field(default_factory=dict)
    limit: int | None = None
    concurrency: int | None = None
    use_cache: bool = True
    kind: str = "eval"
    sample_seed: int = 0  # seed of the stratified --limit sample (core/engine/sampling.py)
    epochs: int = 1  # answers asked per unit (`--epochs K`); stored in params when K > 1
    shard: tuple[int, int] | None = None  # (K, N) of `--shard K/N` (core/engine/runner/shards.py)


# -- run names and CLI flags ----------------------------------------------------------------

RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+=@-]{0,199}$")


def _slug(text: str | None) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", (text or "").lower()).strip("-")


RUN_NAME_MAX = 40
_MODEL_SUFFIXES = ("-instruct", "-chat", "-it", "-hf", "-gguf")


def _short_setting(setting: str) -> str:
    """A variant's abbreviation its benchmark declares (zero-shot -> zs), else its slug; several
    joined (a+b -> their abbreviations one after another), five or more -> 'all'."""
    from core.declared import setting_short

    parts = [p for p in re.split(r"[+,]", setting) if p]
    if len(parts) >= 5:
        return "all"
    short = setting_short()
    return "".join(short.get(p, _slug(p)) for p in parts)[:8]


def default_run_name(
    benchmark: str,
    model: str,
    setting: str | None = None,
    mode: str | None = None,
    when: datetime | None = None,
) -> str:
    """bench-model-setting[-p]-MMDD-HHMMSS, at most 40 characters (e.g.
    mp-smollm2-135m-zs-1201-131502): short enough to read in a table, unique per second."""
    model_slug = _slug(model.split("/")[-1]).replace(".", "-")
    for suffix in _MODEL_SUFFIXES:
        if model_slug.endswith(suffix) and len(model_slug) > len(suffix):
            model_slug = model_slug[: -len(suffix)]
    tail = [_short_setting(setting)] if setting else []
    if mode and mode != "proactive":
        tail.append("p" if mode == "passive" else _slug(mode)[:4])
    tail.append((when or datetime.now()).strftime("%m%d-%H%M%S"))
    from core.registry import BENCHMARKS

    known = BENCHMARKS.get(benchmark)
    head = (known.short if known and known.short else _slug(benchmark)[:6]) or "run"
    room = RUN_NAME_MAX - len(head) - len("-".join(tail)) - 2
    model_slug = model_slug[: max(room, 0)].strip("-.") or "model"
    name = "-".join(p for p in [head, model_slug, *tail] if p)
    return name[:RUN_NAME_MAX]


def add_run_args(parser: argparse.ArgumentParser, judge: bool = False) -> None:
    """--items --limit --concurrency --run-name --no-cache --quiet + endpoint flags."""
    parser.add_argument(
        "--items",
        required=True,
        metavar="SET",
        help="item set name (see the Import page, or `python -m core import`)",
    )
    parser.add_argument(
        "--limit",
        type=bounds.whole("--limit", 1, bounds.MAX_ITEMS),
        default=None,
        metavar="N",
        help="a seeded sample of N items, stratified over the set's categories "
        "(and its error:control ratio), not the first N in file order; "
        "see core/engine/sampling.py",
    )
    parser.add_argument(
        "--sample-seed",
        type=bounds.whole("--sample-seed", 0, bounds.MAX_SEED),
        default=0,
        metavar="S",
        help="seed of the --limit sample (default 0); a resumed run keeps the items it planned",
    )
    parser.add_argument(
        "--concurrency",
        type=bounds.whole("--concurrency", 1, bounds.MAX_CONCURRENCY),
        default=None,
        metavar="N",
        help="requests in flight (default: the endpoint's max_concurrency)",
    )
    parser.add_argument(
        "--epochs",
        type=bounds.whole("--epochs", 1, bounds.MAX_EPOCHS),
        default=1,
        metavar="K",
        help="ask each item K times (default 1), at the temperature given; each answer is "
        "kept as an epoch (1..K) and judged; `python -m core runs --epochs-summary RUN` "
        "reports the mean, the majority and pass^k over the K answers",
    )
    parser.add_argument(
        "--max-retries",
        type=bounds.whole("--max-retries", 0, bounds.MAX_RETRIES),
        default=None,
        metavar="N",
        help="retries of a failed model or judge call, with backoff in between (default: the "
        "endpoint's max_retries, 5); the units still failing are retried when the run resumes",
    )
    parser.add_argument(
        "--run-name",
        default=None,
        metavar="NAME",
        help="name of the run; re-use a name to resume it (only missing or "
        "failed items are asked again). Default: "
        "short bench-model-setting-MMDD-HHMMSS (≤ 40 characters)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not answer identical requests from the cache"
    )
    parser.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="run only shard K of N of the run's items (each machine, with its own model "
        "server, runs one shard with the same --run-name; a deterministic split that keeps "
        "a --limit sample's strata); the run is done when every shard is",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_endpoint_args(parser, "model")
    if judge:
        add_endpoint_args(parser, "judge")


def spec_from_args(
    args: argparse.Namespace,
    benchmark: str,
    setting: str | None = None,
    mode: str | None = None,
    template_id: str | None = None,
    params: dict | None = None,
    kind: str = "eval",
) -> RunSpec:
    """A RunSpec from add_run_args flags. With judge flags and none given, the model judges."""
    endpoint = endpoint_from_args(args, "model")
    assert endpoint is not None
    concurrency = getattr(args, "concurrency", None)
    if concurrency is not None:
        if concurrency < 1:
            raise SystemExit("error: --concurrency must be ≥ 1")
        endpoint = replace(endpoint, max_concurrency=concurrency)
    retries = getattr(args, "max_retries", None)
    if retries is not None:
        if retries < 0:
            raise SystemExit("error: --max-retries must be ≥ 0")
        endpoint = replace(endpoint, max_retries=retries)
    judge = None
    if hasattr(args, "judge_endpoint"):
        judge = endpoint_from_args(args, "judge") or endpoint
        if judge.name == endpoint.name and judge.base_urls == endpoint.base_urls:
            judge = replace(judge, max_concurrency=endpoint.max_concurrency)
        if retries is not None:
            judge = replace(judge, max_retries=retries)
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        raise SystemExit("error: --limit must be ≥ 1")
    sample_seed = int(getattr(args, "sample_seed", 0) or 0)
    if sample_seed < 0:  # numpy's generator takes no negative seed (a traceback, not a message)
        raise SystemExit(f"error: --sample-seed must be ≥ 0 (got {sample_seed})")
    epochs = getattr(args, "epochs", None)
    epochs = 1 if epochs is None else int(epochs)
    if not 1 <= epochs <= bounds.MAX_EPOCHS:  # 0 is not 1: refused, as the flag's type does
        raise SystemExit(
            f"error: --epochs must be between 1 and {bounds.MAX_EPOCHS} (got {epochs})"
        )
    shard_text = getattr(args, "shard", None)
    shard = None
    if shard_text is not None:
        from core.engine.runner.checks import parse_shard

        shard = parse_shard(shard_text)
        if not getattr(args, "run_name", None):
            raise SystemExit("error: --shard needs --run-name: every shard writes the same run")
    run_id = getattr(args, "run_name", None) or default_run_name(
        benchmark, endpoint.model, setting, mode
    )
    if not RUN_NAME_RE.match(run_id):
        raise SystemExit(
            f"error: run name {run_id!r}: use letters, digits and . _ - : + = @ "
            "(no spaces), at most 200 characters"
        )
    return RunSpec(
        run_id=run_id,
        benchmark=benchmark,
        item_set=args.items,
        endpoint=endpoint,
        judge=judge,
        setting=setting,
        mode=mode,
        template_id=template_id,
        params=dict(params or {}),
        limit=limit,
        concurrency=concurrency,
        use_cache=not getattr(args, "no_cache", False),
        kind=kind,
        sample_seed=sample_seed,
        epochs=epochs,
        shard=shard,
    )


# -- secrets --------------------------------------------------------------------------------


def secret_values(*endpoints: Endpoint | None) -> list[str]:
    values = []
    for endpoint in endpoints:
        if endpoint is not None and endpoint.api_key_env:
            value = os.environ.get(endpoint.api_key_env)
            if value:
                values.append(value)
        if endpoint is not None:  # credentials inside URLs (?api-key=…, user:pass@)
            values.extend(v for url in endpoint.base_urls for v in url_secrets(url))
    return values


_EXECUTION_PARAMS = {
    "limit",
    "concurrency",
    "use_cache",
    "needs_judge",
    "endpoint",
    "judge",
    "item_set_version",
    # the --limit plan: a resume asks its stored item ids (see _limited)
    "sample",
    "limit_order",
    # how long earlier sessions were active, when this one started (a resumed run's duration)
    "active_s_before",
    "session_started_at",
}


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    return repr(value) if isinstance(value, str) else json.dumps(value, default=str)


def _urls(endpoint: Any) -> list[str] | None:
    return sorted(endpoint.get("base_urls") or []) if isinstance(endpoint, dict) else None


def check_resume(stored: dict, spec: RunSpec, params: dict) -> list[str]:
    """What differs between a stored run (its runs row as a dict) and the same name asked
    again with `spec` and `params` (as _run_params makes them, plus item_set_version).

    Why: resuming adds results to the stored ones, so a run whose model, URLs, templates,
    generation parameters or items changed would mix two settings under one name. Only how
    the run is executed (concurrency, limit, cache, key variable, timeouts) may change, and
    the URLs of a run with no answer (`stored["answered"]` 0; the judge's: `judged` 0).
    Returns one "what: stored X, now Y" line per difference; [] means resume.
    """
    old = stored.get("params") or {}
    if isinstance(old, str):
        try:
            old = json.loads(old)
        except ValueError:
            old = {}
    if not isinstance(old, dict):
        old = {}
    needs_judge = bool(params.get("needs_judge"))
    judge = spec.judge if needs_judge else None
    out: list[str] = []

    def compare(what: str, before: Any, now: Any) -> None:
        if (before if before != "" else None) != (now if now != "" else None):
            out.append(f"{what}: stored {_show(before)}, now {_show(now)}")

    compare("benchmark", stored.get("benchmark"), spec.benchmark)
    compare("item set", stored.get("item_set"), spec.item_set)
    if old.get("item_set_version") is not None:  # runs older than this check lack it
        compare(
            "item set version (imported at)",
            old.get("item_set_version"),
            params.get("item_set_version"),
        )
    compare("model", stored.get("model"), spec.endpoint.model)
    # a run that never got an answer (every connection refused, a wrong port) resumes at a
    # corrected URL, as an unfinished judging does; one with answers would mix two servers
    # (`answered` / `judged`: its ok responses / verdicts; unknown counts as some). Shards run
    # on machines of their own, each with its own model server: their URLs may differ.
    sharded = spec.shard is not None
    if "endpoint" in old and stored.get("answered", 1) and not sharded:
        compare("endpoint URLs", _urls(old.get("endpoint")), _urls(params.get("endpoint")))
    compare("judge model", stored.get("judge_model"), judge.model if judge else None)
    if needs_judge and old.get("judge") is not None and stored.get("judged", 1) and not sharded:
        compare("judge URLs", _urls(old.get("judge")), _urls(params.get("judge")))
    compare("setting", stored.get("setting"), spec.setting)
    compare("mode", stored.get("mode"), spec.mode)
    compare("template", stored.get("template_id"), spec.template_id)
    for key in sorted((set(old) | set(params)) - _EXECUTION_PARAMS):
        compare(key, old.get(key), params.get(key))
    return out
