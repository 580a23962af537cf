"""How far to trust a judging (issue 18, point 4): judge-corrected (PPI) estimates of each label's
rate and F1 from the people's labels of an audit, the judge's self-agreement when a response is
judged again (`rescore --repeat`), and a flag when the judge and the model it judges are of one
model family.

Generic over LLM-judged benchmarks with named labels (the audit's `LabelSet`, from the registry):
the labels are read from `results.labels`, the truth for F1 is the generic `items.is_error`
(only for a benchmark with control items, `has_controls`: without controls F1 is undefined).
The math is core/ppi.py; this module only reads the store.

Per run and label, the people's value of a response is the annotators' strict majority (a tie
counts as false, as in the audit's F1 table); the responses people labelled are the audit's
sample (or, without an audit, every labelled response of the run). The judge's value is the
run's current judging (or the one named); responses without an ok verdict are left out of
both. PPI assumes the labelled responses are a random sample of the run: the audit's sample is
stratified by run × category with near-proportional shares, which is close to that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.ppi import (
    LEVEL,
    MIN_LABELLED,
    PPIEstimate,
    f1_from_rates,
    ppi_f1,
    ppi_f1_bootstrap,
    ppi_mean,
)
from core.registry import BENCHMARKS
from core.services import audit
from core.stats import MIN_N, wilson
from core.store import Store

PPI_COLUMNS = [
    "run_id",
    "judging",
    "label",
    "metric",
    "n_human",
    "n_judge",
    "judge_only",
    "human_only",
    "ppi",
    "ci_low",
    "ci_high",
    "lam",
    "n_effective",
    "n_too_small",
    "boot_ci_low",  # F1: the bootstrap of the whole estimator (ci_low/ci_high: delta method)
    "boot_ci_high",
    "few_labels",  # fewer than core.ppi.MIN_LABELLED people's labels: intervals are rough
]

# -- model families ----------------------------------------------------------------------------

# (pattern on the lower-cased model name, family), first match wins. A name is matched on its
# last path part too ("meta-llama/Llama-3-8B", "openai/gpt-4o"), so a provider prefix is no
# family of its own.
_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"^(gpt|o1|o3|o4|chatgpt|text-davinci|davinci|babbage)(\b|[-_.\d])", "OpenAI"),
    (r"^claude", "Anthropic"),
    (r"^(gemini|gemma|palm|bard)", "Google"),
    (r"^(llama|meta-llama|codellama)", "Meta"),
    (r"^(qwen|qwq)", "Qwen"),
    (r"^(mistral|mixtral|codestral|ministral|magistral|pixtral)", "Mistral"),
    (r"^smollm", "HuggingFace"),
    (r"^deepseek", "DeepSeek"),
    (r"^(phi)(\b|[-_.\d])", "Microsoft"),
    (r"^(command|c4ai)", "Cohere"),
    (r"^grok", "xAI"),
    (r"^(olmo|tulu)", "AllenAI"),
    (r"^(granite)", "IBM"),
    (r"^(yi)(\b|[-_.\d])", "01.AI"),
    (r"^(glm|chatglm)", "Zhipu"),
)


def model_family(name: str | None) -> str | None:
    """The family (maker) of a model name, or None when unknown.

    Used to flag a judge grading its own family's answers (self-preference bias; Panickssery
    et al. 2024, "LLM evaluators recognize and favor their own generations")."""
    if not name:
        return None
    lowered = name.strip().lower()
    candidates = [lowered, lowered.rsplit("/", 1)[-1], lowered.rsplit(":", 1)[-1]]
    for text in candidates:
        for pattern, family in _FAMILIES:
            if re.match(pattern, text):
                return family
    return None


def same_family(model: str | None, judge: str | None) -> str | None:
    """The shared family when the model under test and its judge are of one family, else None
    (an unknown name never flags)."""
    a, b = model_family(model), model_family(judge)
    return a if a is not None and a == b else None


# -- reading a run's verdicts and people's labels ---------------------------------------------


@dataclass(frozen=True)
class RunLabels:
    """One run's verdicts in one judging, with people's majority labels where there are any.

    `frame`: one row per judged response (status ok): item_id, variant, is_error, then per label
    `<label>` (the judge's, boolean) and `human_<label>` (people's majority, NA if unlabelled)."""

    run_id: str
    judging: str
    judge_model: str | None
    model: str | None
    names: tuple[str, ...]
    has_controls: bool
    frame: pd.DataFrame


def _judging_of(store: Store, run_id: str, judging: str | None) -> tuple[str, str | None]:
    """(judging, judge model): the named one (AuditError if the run has none of that name) or
    the run's current one."""
    if judging is None:
        row = store.rows(
            "SELECT a.judging, a.judge_model FROM all_judgings a JOIN current_judgings c "
            "USING (run_id, judging) WHERE a.run_id = ?",
            [run_id],
        )
    else:
        row = store.rows(
            "SELECT judging, judge_model FROM all_judgings WHERE run_id = ? AND judging = ?",
            [run_id, judging],
        )
    if not row:
        raise audit.AuditError(f"run {run_id!r} has no judging {judging or '(current)'!r}")
    return str(row[0][0]), (None if row[0][1] is None else str(row[0][1]))


def run_labels(
    store: Store, run_id: str, audit_name: str | None = None, judging: str | None = None
) -> RunLabels:
    """The judge's labels on every ok response of a run and people's majority on the labelled
    ones (those of `audit_name`'s sample when given)."""
    labels = audit.label_set_of_run(store, run_id)
    names = labels.names
    judging_name, judge_model = _judging_of(store, run_id, judging)
    model = store.scalar("SELECT coalesce(model, endpoint) FROM runs WHERE run_id = ?", [run_id])
    struct = "{" + ", ".join(f'"{n}": "BOOLEAN"' for n in names) + "}"
    columns = "".join(f', (json_transform(v.labels, \'{struct}\'))."{n}" AS "{n}"' for n in names)
    judged = store.df(
        f"""
        SELECT v.item_id, v.variant, coalesce(i.is_error, true) AS is_error{columns}
        FROM results v JOIN runs r ON r.run_id = v.run_id
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id
        WHERE v.run_id = ? AND v.judging = ? AND v.status = 'ok'
        ORDER BY v.item_id, v.variant""",
        [run_id, judging_name],
    )
    sample_join = (
        "JOIN audit_samples a ON a.run_id = h.run_id AND a.item_id = h.item_id "
        "AND a.variant = h.variant AND a.audit = ?"
        if audit_name
        else ""
    )
    people = store.df(
        f"SELECT h.run_id, h.item_id, h.variant, h.label, h.value FROM human_labels h "
        f"{sample_join} WHERE h.run_id = ?",
        [audit_name, run_id] if audit_name else [run_id],
    )
    frame = judged.copy()
    for name in names:
        frame[name] = frame[name].astype("boolean")
    if not people.empty:
        majority = audit.majority_labels(people)
        wide = majority.pivot_table(
            index=["item_id", "variant"], columns="label", values="value", aggfunc="first"
        )
        wide = wide.reindex(columns=list(names)).add_prefix("human_").reset_index()
        wide.columns.name = None
        frame = frame.merge(wide, on=["item_id", "variant"], how="left")
    for name in names:
        col = f"human_{name}"
        frame[col] = frame[col].astype("boolean") if col in frame else pd.NA
        frame[col] = frame[col].astype("boolean")
    benchmark = store.scalar("SELECT benchmark FROM runs WHERE run_id = ?", [run_id])
    bench = BENCHMARKS.get(str(benchmark))
    return RunLabels(
        run_id=run_id,
        judging=judging_name,
        judge_model=judge_model,
        model=None if model is None else str(model),
        names=names,
        has_controls=bool(bench.has_controls) if bench is not None else False,
        frame=frame,
    )


# -- PPI rows ----------------------------------------------------------------------------------


def _row(
    data: RunLabels,
    label: str,
    metric: str,
    judge_only: float,
    est: PPIEstimate,
    boot: tuple[float, float] = (float("nan"), float("nan")),
) -> dict[str, object]:
    return {
        "run_id": data.run_id,
        "judging": data.judging,
        "label": label,
        "metric": metric,
        "n_human": est.n,
        "n_judge": est.n + est.n_unlabelled,
        "judge_only": judge_only,
        "human_only": est.classical,
        "ppi": est.estimate,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "lam": est.lam,
        "n_effective": est.n_effective,
        "n_too_small": est.n < MIN_N,
        "boot_ci_low": boot[0],
        "boot_ci_high": boot[1],
        "few_labels": est.n < MIN_LABELLED,
    }


def ppi_table(data: RunLabels, level: float = LEVEL, lam: float | None = None) -> pd.DataFrame:
    """Per label: the judge-only rate and its PPI++ estimate (metric `rate`), and, for a benchmark
    with control items, the judge-only F1 and its PPI++ estimate (metric `f1`); proportions
    (0–1), with n_human, n_judge, the interval, λ and the effective n (core/ppi.py)."""
    rows = []
    frame = data.frame
    truth = frame["is_error"].astype(bool).to_numpy().astype(float)
    for label in data.names:
        judged = frame[label].notna().to_numpy()
        yhat = frame[label].fillna(False).astype(bool).to_numpy().astype(float)
        human = frame[f"human_{label}"]
        labelled = (human.notna().to_numpy()) & judged
        unlabelled = judged & ~labelled
        y = human[labelled].astype(bool).to_numpy().astype(float)
        rate = ppi_mean(y, yhat[labelled], yhat[unlabelled], level=level, lam=lam)
        rows.append(_row(data, label, "rate", float(yhat[judged].mean()), rate))
        if data.has_controls:
            f1 = ppi_f1(
                y,
                yhat[labelled],
                truth[labelled],
                yhat[unlabelled],
                truth[unlabelled],
                level=level,
                lam=lam,
            )
            judge_f1 = f1_from_rates(
                float((yhat[judged] * truth[judged]).mean()),
                float((yhat[judged] * (1 - truth[judged])).mean()),
                float(truth[judged].mean()),
            )
            boot = ppi_f1_bootstrap(
                y,
                yhat[labelled],
                truth[labelled],
                yhat[unlabelled],
                truth[unlabelled],
                level=level,
                lam=lam,
            )
            rows.append(_row(data, label, "f1", judge_f1, f1, boot))
    return pd.DataFrame(rows, columns=PPI_COLUMNS)


def ppi_runs(store: Store, audit_name: str | None, runs: Sequence[str] | None = None) -> list[str]:
    """The runs a PPI report covers: the given ones, else the audit's."""
    info = audit.get_audit(store, audit_name) if audit_name is not None else None
    if audit_name is not None and info is None:
        raise audit.AuditError(f"unknown audit {audit_name!r}")
    if runs:
        return list(runs)
    return info.runs if info is not None else []


def audit_ppi(
    store: Store,
    audit_name: str | None,
    runs: Sequence[str] | None = None,
    judging: str | None = None,
    lam: float | None = None,
) -> pd.DataFrame:
    """`ppi_table` for each run of an audit (or the given ones), people's labels from its
    sample (all of each run's human labels without an audit)."""
    frames = [
        run_ppi(store, r, audit_name, judging, lam) for r in ppi_runs(store, audit_name, runs)
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PPI_COLUMNS)


# -- judge self-agreement (rescore --repeat) ---------------------------------------------------

REPEAT_RE = re.compile(r"^(?P<base>.+)@r(?P<k>\d+)$")
NOT_MEASURED = "not measured — run rescore --repeat K"


def repeat_judgings(store: Store, run_id: str, judging: str) -> list[str]:
    """The judging and its repeats (`<base>@r2`, `<base>@r3`, … from `rescore --repeat`), base
    first; just [base] when there are none. `judging` may name a repeat itself."""
    from core.services.repeats import repeat_judgings as stored_repeats

    match = REPEAT_RE.match(judging)
    base = match.group("base") if match else judging
    found = stored_repeats(store, run_id, base)
    return [base, *(n for n in found if n != base)]


def verdict_changes(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """Per label: the share of responses whose verdict is not the same in every repeat of the
    judging (n = responses judged ok in at least two of them; Wilson 95% interval). Empty when
    the judging has no repeats."""
    columns = ["run_id", "label", "n", "k", "changed", "share_changed", "ci_low", "ci_high"]
    judging_name, _ = _judging_of(store, run_id, judging)
    group = repeat_judgings(store, run_id, judging_name)
    if len(group) < 2:
        return pd.DataFrame(columns=columns)
    names = audit.label_set_of_run(store, run_id).names
    marks = ", ".join("?" for _ in group)
    struct = "{" + ", ".join(f'"{n}": "BOOLEAN"' for n in names) + "}"
    agg = ", ".join(
        f'count(_l."{n}") AS "n_{n}", count(DISTINCT _l."{n}") > 1 AS "changed_{n}"' for n in names
    )
    frame = store.df(
        f"""
        SELECT item_id, variant, {agg}
        FROM (SELECT item_id, variant, json_transform(labels, '{struct}') AS _l FROM results
              WHERE run_id = ? AND judging IN ({marks}) AND status = 'ok')
        GROUP BY item_id, variant""",
        [run_id, *group],
    )
    rows = []
    for name in names:
        judged = frame[frame[f"n_{name}"] >= 2]
        n = len(judged)
        changed = int(judged[f"changed_{name}"].sum())
        low, high = wilson(changed, n)
        rows.append(
            {
                "run_id": run_id,
                "label": name,
                "n": n,
                "k": len(group),
                "changed": changed,
                "share_changed": changed / n if n else float("nan"),
                "ci_low": float(low),
                "ci_high": float(high),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def family_flags(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """Per run: the model under test, its current judging's judge model, and the shared family
    when both are of one (empty otherwise)."""
    rows = []
    for run_id in runs:
        judging, judge_model = _judging_of(store, run_id, None)
        model = store.scalar(
            "SELECT coalesce(model, endpoint) FROM runs WHERE run_id = ?", [run_id]
        )
        family = same_family(None if model is None else str(model), judge_model)
        rows.append(
            {
                "run_id": run_id,
                "judging": judging,
                "model": model,
                "judge_model": judge_model,
                "same_family": family or "",
            }
        )
    return pd.DataFrame(rows, columns=["run_id", "judging", "model", "judge_model", "same_family"])


def interval_text(value: float, low: float, high: float) -> str:
    """'41.2% [35.0, 47.9]' for a page or a table cell ('—' without a value)."""
    if value is None or np.isnan(value):
        return "—"
    return f"{value * 100:.1f}% [{low * 100:.1f}, {high * 100:.1f}]"


def run_ppi(
    store: Store,
    run_id: str,
    audit_name: str | None = None,
    judging: str | None = None,
    lam: float | None = None,
) -> pd.DataFrame:
    """`ppi_table` of one run: people's labels from `audit_name`'s sample, or all of the run's."""
    if audit_name is not None and audit.get_audit(store, audit_name) is None:
        raise audit.AuditError(f"unknown audit {audit_name!r}")
    return ppi_table(run_labels(store, run_id, audit_name, judging), lam=lam)
