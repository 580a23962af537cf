"""Count and span metrics for ErrorBench (SPEC §2), per response and per model × condition.

Per response (stored in responses.scores): n̂ and how it was found, CB = n̂ − N, count
TP/FP/FN, the extracted edits and, for each matching (strict, detection, overlap), the gold
edit each one matched. Edits are matched one-to-one: a maximum bipartite matching per passage,
so under overlap one long hypothesis edit cannot claim two gold edits. Gold = annotator 0 (the
annotator N counts). Corpus figures are micro: sum TP/FP/FN over passages, then F.
Conventions as ERRANT/M2: precision is 1 when nothing was proposed, recall 1 when nothing was
to find, F is 0 when both are 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.benchmarks.errorbench.extract import extract_edits, normalise_tokens
from core.benchmarks.errorbench.parse import parse_response, structured_text
from core.benchmarks.errorbench.prompts import CONDITIONS, TEMPLATE_ID, is_structured, stated_count
from core.stats import (
    bootstrap_sums_columns,
    cluster_sums,
    draws_for,
    item_clusters,
    n_clusters,
    n_items,
)

MATCHINGS: tuple[str, ...] = ("strict", "detection", "overlap")
BETA = 0.5
# issue 18: the F statistics a row's interval can be of (`metrics errorbench --ci-of`), each a
# percentile bootstrap over passages, over essays when the passages record theirs (`cluster`)
CI_STATS: tuple[str, ...] = ("count_f1", "strict_f05", "detection_f05", "overlap_f05")
CI_DEFAULT = "overlap_f05"
CI_DRAWS = 2000
CI_SEED = 0

METRIC_COLUMNS = [
    "model",
    "condition",
    "passages",
    "count_f1",
    "strict_f05",
    "detection_f05",
    "overlap_f05",
    "inflation",
    "mean_count_bias",
    "mean_asi",
    "unparsed",
]


# -- small formulas -----------------------------------------------------------------------------


def precision_recall_f(
    tp: float, fp: float, fn: float, beta: float = BETA
) -> tuple[float, float, float]:
    p = tp / (tp + fp) if (tp + fp) else 1.0
    r = tp / (tp + fn) if (tp + fn) else 1.0
    b2 = beta * beta
    f = (1 + b2) * p * r / (b2 * p + r) if (p + r) else 0.0
    return p, r, f


def count_counts(reported: int, n: int) -> tuple[int, int, int]:
    """Count-F1 ingredients: TP = min(n̂, N), FP = max(0, n̂ − N), FN = max(0, N − n̂)."""
    return min(reported, n), max(0, reported - n), max(0, n - reported)


def f_vec(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, beta: float) -> np.ndarray:
    """Vectorised precision_recall_f(...)[2] with the same conventions."""
    tp, fp, fn = (np.asarray(a, dtype=float) for a in (tp, fp, fn))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
        r = np.where(tp + fn > 0, tp / (tp + fn), 1.0)
        b2 = beta * beta
        f = np.where(p + r > 0, (1 + b2) * p * r / (b2 * p + r), 0.0)
    return f


# -- matching -----------------------------------------------------------------------------------


def spans_overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    """Token ranges [start, end) intersect; an insertion point (start == end) counts when it is
    inside the other range or at its edge; two insertions only at the same point."""
    a_ins, b_ins = a_start == a_end, b_start == b_end
    if a_ins and b_ins:
        return a_start == b_start
    if a_ins:
        return b_start <= a_start <= b_end
    if b_ins:
        return a_start <= b_start <= a_end
    return a_start < b_end and b_start < a_end


def _compatible(h: Sequence, g: Sequence, matching: str) -> bool:
    """h, g = (sentence, start, end, correction)."""
    if h[0] != g[0]:
        return False
    if matching == "strict":
        return h[1] == g[1] and h[2] == g[2] and h[3] is not None and h[3] == g[3]
    if matching == "detection":
        return h[1] == g[1] and h[2] == g[2]
    if matching == "overlap":
        return spans_overlap(h[1], h[2], g[1], g[2])
    raise ValueError(f"unknown matching {matching!r}")


def match_one_to_one(
    hyp: Sequence[Sequence | None], gold: Sequence[Sequence], matching: str
) -> list[int | None]:
    """Maximum one-to-one matching (augmenting paths, hypotheses in order); for each hypothesis
    the index of its gold edit or None. None entries in `hyp` (unlocated) never match."""
    if matching not in MATCHINGS:
        raise ValueError(f"unknown matching {matching!r}")
    by_sentence: dict[Any, list[int]] = {}
    for j, g in enumerate(gold):
        by_sentence.setdefault(g[0], []).append(j)
    candidates = [
        [j for j in by_sentence.get(h[0], ()) if _compatible(h, gold[j], matching)]
        if h is not None
        else []
        for h in hyp
    ]
    gold_to_hyp: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in candidates[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in gold_to_hyp or augment(gold_to_hyp[j], seen):
                gold_to_hyp[j] = i
                return True
        return False

    for i in range(len(hyp)):
        if candidates[i]:
            augment(i, set())
    out: list[int | None] = [None] * len(hyp)
    for j, i in gold_to_hyp.items():
        out[i] = j
    return out


def span_counts(
    hyp: Sequence[Sequence | None], gold: Sequence[Sequence], matching: str
) -> tuple[int, int, int, list[int | None]]:
    matched = match_one_to_one(hyp, gold, matching)
    tp = sum(m is not None for m in matched)
    return tp, len(hyp) - tp, len(gold) - tp, matched


# -- one response -------------------------------------------------------------------------------


def passage_tokens(payload: dict) -> list[list[str]]:
    return [s["tokens"] for s in payload["sentences"]]


def gold_edits(payload: dict, annotator: int = 0) -> list[list]:
    return payload.get("gold", {}).get(str(annotator), [])


def score_response(
    text: str | None,
    payload: dict,
    condition: str,
    tokens: list[list[str]] | None = None,
    template_id: str = TEMPLATE_ID,
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """Everything one response yields, as the JSON stored in responses.scores.
    `tokens`: the passage's normalise_tokens(), when the caller scores many responses.

    A structured-output template's answer (errorbench/structured.v1) is read as JSON and scored
    as its equivalent text answer; JSON that cannot be read falls back to the text parser
    (`json` = 'invalid', `read_as` = 'text'), and when that finds nothing either the answer is
    not scored at all (`reported` None, `unreadable` = 'truncated' when cut at max_tokens, else
    'unparsable') rather than counted as n̂ = 0."""
    n = int(payload["n"])
    structured: dict[str, Any] = {}
    if is_structured(template_id):
        equivalent, why = structured_text(text)
        if equivalent is not None:
            structured = {"json": "ok", "read_as": "json"}
            text = equivalent
        else:
            structured = {"json": "invalid", "json_error": why, "finish_reason": finish_reason}
            if parse_response(text).unparsed:
                return _unreadable(template_id, condition, n, finish_reason) | structured
            structured["read_as"] = "text"
    parsed = parse_response(text)
    if tokens is None:
        tokens = normalise_tokens(passage_tokens(payload))
    edits = extract_edits(parsed.errors, tokens, normalised=True)
    gold = gold_edits(payload, 0)
    hyp = [(e.sentence, e.start, e.end, e.corr) if e.located else None for e in edits]
    gold_keys = [(g[0], g[1], g[2], g[3]) for g in gold]
    span: dict[str, list[int]] = {}
    edit_dicts = [e.to_dict() | {"match": {}} for e in edits]
    for matching in MATCHINGS:
        tp, fp, fn, matched = span_counts(hyp, gold_keys, matching)
        span[matching] = [tp, fp, fn]
        for d, m in zip(edit_dicts, matched):
            d["match"][matching] = None if m is None else list(gold[m][:4])
    return {
        "template_id": template_id,
        "condition": condition,
        "n": n,
        "stated": stated_count(condition, n) if condition in CONDITIONS else None,
        "reported": parsed.reported,
        "how": parsed.how,
        "total_line": parsed.total,
        "error_lines": parsed.n_error_lines,
        "disagree": parsed.disagree,
        "unparsed": parsed.unparsed,
        "count_bias": parsed.reported - n,
        "count": list(count_counts(parsed.reported, n)),
        "span": span,
        "located": sum(e.located for e in edits),
        "edits": edit_dicts,
    } | structured


def _unreadable(
    template_id: str, condition: str, n: int, finish_reason: str | None
) -> dict[str, Any]:
    """The scores of an answer nothing could be read from: no n̂, so no count or span score."""
    return {
        "template_id": template_id,
        "condition": condition,
        "n": n,
        "stated": stated_count(condition, n) if condition in CONDITIONS else None,
        "reported": None,
        "unreadable": "truncated" if finish_reason == "length" else "unparsable",
        "edits": [],
    }


# -- many responses -----------------------------------------------------------------------------


def _loads(value: Any) -> dict:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return {}
    return value if isinstance(value, dict) else json.loads(value)


def score_frame(responses: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Score raw responses (run_id, model, item_id, variant, status, response, and optionally
    the run's template_id and the stored scores) against items (item_id, payload): adds a
    `scores` dict column, each response read with its run's template. Each payload is decoded
    once."""
    payloads = {row.item_id: _loads(row.payload) for row in items.itertuples(index=False)}
    tokens = {k: normalise_tokens(passage_tokens(p)) for k, p in payloads.items()}
    out = responses.copy()
    scores: list[dict[str, Any] | None] = []
    for row in responses.to_dict("records"):
        if row.get("status", "ok") != "ok" or row["item_id"] not in payloads:
            scores.append(None)
            continue
        template_id = row.get("template_id") or TEMPLATE_ID
        # a structured answer cut at max_tokens is told apart by the stored finish reason
        finish = (
            _loads(row.get("scores")).get("finish_reason") if is_structured(template_id) else None
        )
        scores.append(
            score_response(
                row["response"],
                payloads[row["item_id"]],
                row["variant"],
                tokens[row["item_id"]],
                template_id=template_id,
                finish_reason=finish,
            )
        )
    out["scores"] = pd.Series(scores, index=out.index, dtype=object)
    return out


def flatten(scored: pd.DataFrame) -> pd.DataFrame:
    """One row per response with the numbers the metrics need (scores JSON or dict column)."""
    rows = []
    for row in scored.itertuples(index=False):
        s = _loads(row.scores)
        answered = getattr(row, "status", "ok") == "ok" and bool(s)
        # a structured answer nothing could be read from has no n̂: counted apart, not scored
        unreadable = answered and s.get("reported") is None
        ok = answered and not unreadable
        base = {
            "run_id": getattr(row, "run_id", None),
            "model": getattr(row, "model", None),
            "item_id": row.item_id,
            "condition": row.variant,
            "epoch": int(getattr(row, "epoch", 1) or 1),  # which answer of a run asked K times
            "ok": ok,
            "unreadable": unreadable,
        }
        if ok:
            base |= {
                "n": s["n"],
                "reported": s["reported"],
                "count_bias": s["count_bias"],
                "count_tp": s["count"][0],
                "count_fp": s["count"][1],
                "count_fn": s["count"][2],
                "unparsed": bool(s["unparsed"]),
                "disagree": bool(s["disagree"]),
                "how": s["how"],
                "located": s.get("located", 0),
                "n_edits": len(s.get("edits", [])),
            }
            for m in MATCHINGS:
                tp, fp, fn = s["span"][m]
                base |= {f"{m}_tp": tp, f"{m}_fp": fp, f"{m}_fn": fn}
        rows.append(base)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return add_asi(frame)


UNPARSED_WARN_SHARE = 0.20  # pages warn from this share of unparsed answers in a run


def unparsed_by_run(flat: pd.DataFrame, threshold: float = UNPARSED_WARN_SHARE) -> pd.DataFrame:
    """Per run: answered responses, how many were unparsed (no TOTAL, no ERROR line, no "no
    errors"; or, with a structured template, nothing readable at all), their share and whether
    it reaches `threshold` — a run whose answers were mostly not read shows flat charts that say
    nothing about anchoring."""
    cols = ["run_id", "model", "responses", "unparsed", "share", "warn"]
    if flat.empty or "unparsed" not in flat:
        return pd.DataFrame(columns=cols)
    unreadable = (
        flat["unreadable"].fillna(False).astype(bool)
        if "unreadable" in flat
        else flat["ok"] & False
    )
    answered = flat[flat["ok"] | unreadable]
    rows = []
    for (run_id, model), g in answered.groupby(["run_id", "model"], sort=False, dropna=False):
        bad_rows = g["unparsed"].fillna(False).astype(bool) | ~g["ok"]
        n, bad = len(g), int(bad_rows.sum())
        rows.append(
            {
                "run_id": run_id,
                "model": model,
                "responses": n,
                "unparsed": bad,
                "share": bad / n if n else 0.0,
                "warn": bool(n) and bad / n >= threshold,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def add_asi(flat: pd.DataFrame) -> pd.DataFrame:
    """ASI = |CB_condition − CB_blind| / N, same run (model), passage and epoch (a run asked K
    times pairs each answer with the blind answer of its epoch); NaN without blind."""
    flat = flat.copy()
    if "count_bias" not in flat:  # no response was read (all failed or unreadable)
        flat["count_bias"] = np.nan
    keys = ["run_id", "item_id", "epoch"] if "epoch" in flat else ["run_id", "item_id"]
    ok = flat[flat["ok"]]
    blind = ok[ok["condition"] == "blind"].set_index(keys)["count_bias"]
    blind = blind[~blind.index.duplicated()]
    key = pd.MultiIndex.from_frame(flat[keys])
    cb_blind = blind.reindex(key).to_numpy(dtype=float)
    cb = pd.to_numeric(flat["count_bias"], errors="coerce").to_numpy(dtype=float)
    n = pd.to_numeric(flat["n"], errors="coerce").to_numpy(dtype=float)
    flat["asi"] = np.abs(cb - cb_blind) / n
    return flat


def model_labels(flat: pd.DataFrame) -> pd.Series:
    """The model name, or 'model [run]' when one model has several runs among the sources."""
    pairs = flat[["run_id", "model"]].drop_duplicates()
    dup = pairs["model"].duplicated(keep=False)
    label = {
        r.run_id: (f"{r.model} [{r.run_id}]" if d else str(r.model))
        for r, d in zip(pairs.itertuples(index=False), dup)
    }
    return flat["run_id"].map(label)


_SUM_COLUMNS = [f"{kind}_{x}" for kind in ("count", *MATCHINGS) for x in ("tp", "fp", "fn")]


def _f_of_sums(sums: np.ndarray) -> np.ndarray:
    """CI_STATS (count F1, then strict/detection/overlap F0.5) from summed TP/FP/FN, vectorised
    over rows (draws × 12 → draws × 4): what every bootstrap draw recomputes (micro F)."""
    return np.column_stack(
        [
            f_vec(sums[:, 3 * k], sums[:, 3 * k + 1], sums[:, 3 * k + 2], 1.0 if k == 0 else BETA)
            for k in range(len(CI_STATS))
        ]
    )


def interval_stats(ok: pd.DataFrame) -> dict[str, Any]:
    """n (passages), n_clusters (essays; passages without one count alone) and a 95% interval
    for each of CI_STATS: a percentile bootstrap over passages, over essays when the passages
    have a `cluster` (passages of one essay share its writer and topic: not independent)."""
    items = ok["item_id"].to_numpy() if "item_id" in ok else None
    clusters = item_clusters(ok["cluster"].to_numpy() if "cluster" in ok else None, items)
    sums, counts = cluster_sums(ok[_SUM_COLUMNS].to_numpy(dtype=float), clusters)
    draws = draws_for(int(np.sum(counts)), CI_DRAWS)  # more where few units (issue 29)
    intervals = bootstrap_sums_columns(sums, counts, _f_of_sums, draws, CI_SEED)
    out: dict[str, Any] = {
        "n": n_items(items, len(ok)),
        "n_clusters": n_clusters(clusters, len(ok)),
    }
    for stat, (low, high) in zip(CI_STATS, intervals):
        out[f"{stat}_ci_low"], out[f"{stat}_ci_high"] = low, high
    return out


def metrics_table(flat: pd.DataFrame) -> pd.DataFrame:
    """One row per model × condition: the CLI's columns first, then P/R and diagnostics, then
    n, n_clusters and each F statistic's interval (`interval_stats`)."""
    extra = (
        ["run_id", "failed", "unreadable", "disagree"]
        + [f"{m}_{x}" for m in MATCHINGS for x in ("p", "r")]
        + ["n", "n_clusters"]
        + [f"{stat}_ci_{x}" for stat in CI_STATS for x in ("low", "high")]
    )
    if flat.empty:
        return pd.DataFrame(columns=METRIC_COLUMNS + extra)
    flat = flat.assign(model_label=model_labels(flat))
    order = {c: i for i, c in enumerate(CONDITIONS)}
    rows = []
    for (label, run_id, condition), g in flat.groupby(
        ["model_label", "run_id", "condition"], sort=False
    ):
        ok = g[g["ok"]]
        unreadable = (
            g["unreadable"].fillna(False).astype(bool) if "unreadable" in g else g["ok"] & False
        )
        row: dict[str, Any] = {
            "model": label,
            "condition": condition,
            "passages": len(ok),
            "run_id": run_id,
            "failed": int((~g["ok"] & ~unreadable).sum()),
            "unreadable": int(unreadable.sum()),
        }
        if len(ok):
            _, _, cf1 = precision_recall_f(
                ok["count_tp"].sum(), ok["count_fp"].sum(), ok["count_fn"].sum(), beta=1.0
            )
            row["count_f1"] = cf1
            for m in MATCHINGS:
                p, r, f = precision_recall_f(
                    ok[f"{m}_tp"].sum(), ok[f"{m}_fp"].sum(), ok[f"{m}_fn"].sum()
                )
                row[f"{m}_f05"], row[f"{m}_p"], row[f"{m}_r"] = f, p, r
            row["inflation"] = cf1 - row["overlap_f05"]
            row["mean_count_bias"] = float(ok["count_bias"].mean())
            asi = ok["asi"].dropna()
            row["mean_asi"] = float(asi.mean()) if len(asi) else float("nan")
            row["unparsed"] = int(ok["unparsed"].sum())
            row["disagree"] = int(ok["disagree"].sum())
            row |= interval_stats(ok)
        else:
            row["n"] = 0
        rows.append(row)
    table = pd.DataFrame(rows)
    table["_o"] = table["condition"].map(order).fillna(99)
    table = table.sort_values(["model", "_o"], kind="stable").drop(columns="_o")
    return table.reindex(columns=METRIC_COLUMNS + extra).reset_index(drop=True)
