"""Data access for ErrorBench (CLI and the Anchoring page): runs, scored responses, metrics.

Every function takes a Store first so pages can call it through `pages.ui.common.cached`.
Metrics are recomputed from the stored response texts and passages (fast: see bench/), so
they always reflect the current scorer; responses.scores holds the same numbers for export.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd

from core.benchmarks.errorbench import NAME as BENCHMARK
from core.benchmarks.errorbench.metrics import flatten, metrics_table, model_labels, score_frame
from core.services.item_sets import item_row
from core.store import Store


class UnknownSource(ValueError):
    pass


def item_sets(store: Store) -> pd.DataFrame:
    return store.df(
        "SELECT name, n_items, origin, info, created_at FROM item_sets "
        "WHERE benchmark = ? ORDER BY name",
        [BENCHMARK],
    )


def runs(store: Store) -> pd.DataFrame:
    return store.df(
        "SELECT r.run_id, r.model, r.endpoint, r.item_set, r.setting, r.status, r.n_planned, "
        "r.weak_model, r.template_id, r.created_at, "
        "(SELECT count(*) FROM responses x WHERE x.run_id = r.run_id) AS n_done, "
        "(SELECT count(*) FROM responses x WHERE x.run_id = r.run_id AND x.status = 'ok') AS n_ok "
        "FROM runs r WHERE r.benchmark = ? AND coalesce(r.kind, 'eval') = 'eval' "
        "ORDER BY r.created_at DESC, r.run_id",
        [BENCHMARK],
    )


def resolve_sources(store: Store, sources: tuple[str, ...] | list[str]) -> list[str]:
    """Run ids from --source values ('all' = every ErrorBench run); errors name unknown ones."""
    known = runs(store)
    wanted: list[str] = []
    for value in sources:
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            if part == "all":
                wanted.extend(known["run_id"].tolist())
            else:
                wanted.append(part)
    wanted = list(dict.fromkeys(wanted))
    missing = [w for w in wanted if w not in set(known["run_id"])]
    if missing:
        listed = ", ".join(known["run_id"].tolist()[:10]) or "none yet"
        raise UnknownSource(
            f"no ErrorBench run {', '.join(missing)} in {store.path} (ErrorBench runs: {listed})"
        )
    if not wanted:
        raise UnknownSource("no ErrorBench runs selected")
    return wanted


def responses(store: Store, run_ids: tuple[str, ...]) -> pd.DataFrame:
    if not run_ids:
        return pd.DataFrame(
            columns=[
                "run_id",
                "model",
                "item_set",
                "template_id",
                "item_id",
                "variant",
                "status",
                "response",
                "scores",
            ]
        )
    marks = ",".join("?" * len(run_ids))
    return store.df(
        f"SELECT x.run_id, r.model, r.item_set, r.template_id, x.item_id, x.variant, x.status, "
        f"x.response, x.error, x.scores, x.epoch FROM responses x JOIN runs r USING (run_id) "
        f"WHERE x.run_id IN ({marks}) ORDER BY x.run_id, x.item_id, x.variant, x.epoch",
        list(run_ids),
    )


def items_for_runs(store: Store, run_ids: tuple[str, ...]) -> pd.DataFrame:
    if not run_ids:
        return pd.DataFrame(columns=["item_set", "item_id", "prompt", "payload", "gold"])
    marks = ",".join("?" * len(run_ids))
    return store.df(
        f"SELECT i.item_set, i.item_id, i.prompt, i.payload, i.gold FROM items i "
        f"WHERE i.item_set IN (SELECT item_set FROM runs WHERE run_id IN ({marks}))",
        list(run_ids),
    )


def _fingerprint(store: Store, run_ids: tuple[str, ...]) -> tuple:
    """Changes whenever a response of these runs is written or replaced."""
    marks = ",".join("?" * len(run_ids))
    return tuple(
        store.rows(
            f"SELECT count(*), max(created_at), sum(length(coalesce(response, ''))) FROM responses "
            f"WHERE run_id IN ({marks})",
            list(run_ids),
        )[0]
    )


_SCORED_CACHE: dict[tuple, pd.DataFrame] = {}
_SCORED_LOCK = threading.Lock()


def judged(store: Store, run_ids: tuple[str, ...], judging: str) -> pd.DataFrame:
    """Responses with the scores a named `rescore` judging stored (not recomputed)."""
    marks = ",".join("?" * len(run_ids))
    return store.df(
        f"SELECT x.run_id, r.model, r.item_set, x.item_id, x.variant, "
        f"CASE WHEN coalesce(v.status, 'failed') = 'failed' THEN 'failed' ELSE 'ok' END "
        f"AS status, x.response, x.error, v.metadata AS scores, x.epoch "
        f"FROM responses x JOIN runs r USING (run_id) "
        f"LEFT JOIN results v ON v.run_id = x.run_id AND v.judging = ? "
        f"AND v.item_id = x.item_id AND v.variant = x.variant AND v.epoch = x.epoch "
        f"WHERE x.run_id IN ({marks}) ORDER BY x.run_id, x.item_id, x.variant, x.epoch",
        [judging, *run_ids],
    )


def scored(store: Store, run_ids: tuple[str, ...], judging: str | None = None) -> pd.DataFrame:
    """Responses rescored with the current scorer (per item set, since ids repeat across sets),
    or, for a named judging, with the scores that judging stored.

    The page asks for metrics, bootstrap and scores of the same runs: the scored frame is kept
    (a few entries) under a fingerprint of the runs' responses, so it is computed once."""
    run_ids = tuple(run_ids)
    if judging is not None and judging != "default":
        return judged(store, run_ids, judging)
    key = (str(store.path), run_ids, _fingerprint(store, run_ids)) if run_ids else None
    with _SCORED_LOCK:
        hit = _SCORED_CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit.copy()
    resp = responses(store, run_ids)
    items = items_for_runs(store, run_ids)
    parts = []
    for item_set, group in resp.groupby("item_set", sort=False):
        parts.append(score_frame(group, items[items["item_set"] == item_set]))
    frame = pd.concat(parts, ignore_index=True) if parts else resp.assign(scores=None)
    if key is not None:
        with _SCORED_LOCK:
            while len(_SCORED_CACHE) >= 8:
                _SCORED_CACHE.pop(next(iter(_SCORED_CACHE)))
            _SCORED_CACHE[key] = frame
    return frame.copy()


def flat_scores(store: Store, run_ids: tuple[str, ...]) -> pd.DataFrame:
    frame = flatten(scored(store, run_ids))
    if frame.empty:
        return frame
    return frame.assign(model_label=model_labels(frame))


def essays(store: Store, run_ids: tuple[str, ...]) -> pd.DataFrame:
    """run_id, item_id, cluster: the essay each passage comes from (`import m2 --grouping
    essay` with the SGML records it as the item's secondary_category; NULL otherwise)."""
    if not run_ids:
        return pd.DataFrame(columns=["run_id", "item_id", "cluster"])
    return store.df(
        "SELECT r.run_id, i.item_id, nullif(i.secondary_category, '') AS cluster "
        "FROM runs r JOIN items i ON i.item_set = r.item_set WHERE list_contains(?, r.run_id)",
        [list(run_ids)],
    )


def with_essays(store: Store, flat: pd.DataFrame, run_ids: tuple[str, ...]) -> pd.DataFrame:
    """`flat` with a `cluster` column (the passage's essay): the intervals resample essays."""
    if flat.empty:
        return flat
    return flat.merge(essays(store, run_ids), on=["run_id", "item_id"], how="left")


def metrics(
    store: Store, run_ids: tuple[str, ...], errant: bool = False, judging: str | None = None
) -> pd.DataFrame:
    scored_frame = scored(store, run_ids, judging)
    table = metrics_table(with_essays(store, flatten(scored_frame), run_ids))
    if errant and not table.empty:
        table = add_errant(store, scored_frame, table, run_ids)
    return table


def add_errant(
    store: Store, scored_frame: pd.DataFrame, table: pd.DataFrame, run_ids: tuple[str, ...]
) -> pd.DataFrame:
    """errant_f05 (and its P/R) per model × condition, annotators 0 and 1 as references."""
    from core.benchmarks.errorbench.errant_scoring import ErrantScorer, errant_counts

    items = items_for_runs(store, run_ids)
    payloads = {
        (r["item_set"], r["item_id"]): json.loads(r["payload"])
        if isinstance(r["payload"], str)
        else r["payload"]
        for r in items.to_dict("records")
    }
    scorer = ErrantScorer()
    extra = []
    for row in table.to_dict("records"):
        group = scored_frame[
            (scored_frame["run_id"] == row["run_id"])
            & (scored_frame["variant"] == row["condition"])
            & (scored_frame["status"] == "ok")
        ].sort_values("item_id")
        pairs = [
            (payloads[(g["item_set"], g["item_id"])], g["scores"])
            for g in group.to_dict("records")
            if g["scores"]
        ]
        extra.append(errant_counts(pairs, scorer))
    return pd.concat([table.reset_index(drop=True), pd.DataFrame(extra)], axis=1)


def bootstrap(
    store: Store,
    run_ids: tuple[str, ...],
    span: str = "overlap",
    draws: int = 10_000,
    seed: int = 0,
    a: str = "blind",
    b: str = "anchored",
) -> pd.DataFrame:
    from core.benchmarks.errorbench.bootstrap import bootstrap_table

    return bootstrap_table(
        flatten(scored(store, run_ids)), a=a, b=b, span=span, draws=draws, seed=seed
    )


def passage_responses(store: Store, run_id: str, item_id: str) -> pd.DataFrame:
    """All conditions' responses for one passage in one run, scored, for the drill-down."""
    frame = scored(store, (run_id,))
    return frame[frame["item_id"] == item_id].reset_index(drop=True)


def passage(store: Store, item_set: str, item_id: str) -> dict | None:
    row = item_row(store, item_set, item_id, "prompt, payload, gold")
    if row is None:
        return None
    prompt, payload, n = row
    return {
        "prompt": prompt,
        "payload": json.loads(payload) if isinstance(payload, str) else payload,
        "n": n,
    }


def nan_to_none(frame: pd.DataFrame) -> list[dict]:
    return [
        {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in rec.items()}
        for rec in frame.to_dict("records")
    ]


def passage_table(store: Store, run_id: str, condition: str) -> pd.DataFrame:
    """The drill-down's list: one row per passage of a run under one condition."""
    flat = flatten(scored(store, (run_id,)))
    if flat.empty:
        return pd.DataFrame(
            columns=[
                "item_id",
                "n",
                "reported",
                "count_bias",
                "n_edits",
                "located",
                "overlap_tp",
                "overlap_fp",
                "overlap_fn",
            ]
        )
    flat = flat[flat["condition"] == condition]
    cols = [
        "item_id",
        "ok",
        "n",
        "reported",
        "how",
        "disagree",
        "count_bias",
        "asi",
        "n_edits",
        "located",
        "strict_tp",
        "detection_tp",
        "overlap_tp",
        "overlap_fp",
        "overlap_fn",
    ]
    return flat.reindex(columns=cols).sort_values("item_id").reset_index(drop=True)
