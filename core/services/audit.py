"""Judge audit: a seeded sample of verdicts, people's labels for it, and agreement statistics.

The Mis-prompt paper re-labels 10% of responses by hand (SPEC §1, "Human evaluation") and reports
Fleiss' κ between annotators and the human-label F1 beside the judge's. This module does the same
on the runs of any LLM-judged benchmark with named labels (registry: `judged_by_model`, `labels`).
What it needs of a benchmark comes from its registry entry, through `LabelSet`: the label names
(`labels`; a judging's labels are read from `results.labels`), their help texts (`label_help`) and
the per-run F1 that `f1_comparison` shows (`label_metrics`). One audit samples one benchmark's runs.

- `create_audit` draws a seeded sample stratified by run and category (default 10%, at least one
  per stratum, so every run gets its share even when two runs share a model) and stores it, in
  queue order, in `audit_samples` under a name.
- `save_labels` writes one annotator's labels for one sampled response in one transaction, so
  concurrent sessions lose nothing. Given the labels the page read when it showed the item
  (`expected`, optimistic concurrency), it refuses with `LabelConflict` when they changed since
  (the same annotator in another tab) instead of silently overwriting them.
- `next_position` resumes an annotator's queue at the first item they have not fully labelled.
- `cohen_kappa`, `fleiss_kappa`, `agreement_table`, `confusion_matrices`, `f1_comparison`: the
  numbers of the results panel. Every κ comes with its n and a seeded percentile bootstrap CI
  over items (`kappa_estimate`, `fleiss_estimate`), and is flagged below `MIN_N` items. Human-
  vs-judge F1 is always paired: the judge and the person on exactly the items the person labelled.
- `export_labels_csv` / `import_labels_csv`: labels as CSV; an import is validated row by row
  (errors name the line) and written in one transaction or not at all.

Degenerate κ (a choice of this project, shown in the UI): when chance agreement is 1 — every
rating of every rater is the same class — κ = (p_o − p_e)/(1 − p_e) is 0/0. sklearn and
statsmodels return NaN there; we return 1.0 because the raters agree perfectly and there is no
disagreement to explain. With no items at all, κ is NaN ("no data").
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import duckdb
import numpy as np
import pandas as pd

from core.registry import BENCHMARKS, Benchmark
from core.store import HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, Store, upsert_rows

if TYPE_CHECKING:  # plotly is imported when a chart is drawn (the page), not with this module
    import plotly.graph_objects as go

DEFAULT_FRACTION = 0.10
CONTROL_CATEGORY = "(control)"
AUDIT_META_PREFIX = "audit:"
LABEL_CSV_COLUMNS = (
    "run_id",
    "item_id",
    "variant",
    "annotator",
    "label",
    "value",
    "judge_value",
    "note",
    "created_at",
)

KAPPA_NOTE = (
    "Cohen's κ compares the judge with one annotator, Fleiss' κ compares three or more annotators "
    "(the judge not included) on the items all of them labelled. When every rating is the same "
    "class, κ is 0/0; this workbench reports 1.0 then (perfect agreement), where sklearn and "
    "statsmodels report NaN."
)


class AuditError(ValueError):
    """Bad input for an audit (unknown runs, empty sample, invalid labels file); message says why."""


# ---------------------------------------------------------------------------------------------
# The audited benchmark's labels (from the registry)
# ---------------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class LabelSet:
    """The named labels of an audited benchmark: names in table order, letters, help texts.

    Names are interpolated into SQL (JSON keys, column names), so they must be identifiers.
    """

    benchmark: str
    names: tuple[str, ...]
    letters: dict[str, str] = field(default_factory=dict)
    help: dict[str, str] = field(default_factory=dict)


def is_auditable(bench: Benchmark) -> bool:
    """An LLM judge's verdicts with named labels: what people can re-label."""
    return bench.judged_by_model and bench.labels is not None


def auditable_benchmarks() -> list[str]:
    return [name for name, bench in BENCHMARKS.items() if is_auditable(bench)]


def label_set(benchmark: str) -> LabelSet:
    """The labels of a benchmark, read from its registry entry (AuditError if not auditable)."""
    bench = BENCHMARKS.get(benchmark)
    if bench is None or not is_auditable(bench):
        raise AuditError(f"runs of benchmark {benchmark!r} cannot be audited (no judge labels)")
    letters = bench.label_letters()
    bad = [n for n in letters if not _NAME_RE.fullmatch(n)]
    if bad:
        raise AuditError(f"label names must be identifiers: {bad}")
    return LabelSet(benchmark, tuple(letters), letters, bench.label_help_texts())


def _benchmarks_of_runs(store: Store, runs: Sequence[str]) -> list[str]:
    if not runs:
        return []
    marks = ", ".join("?" for _ in runs)
    frame = store.df(
        f"SELECT DISTINCT benchmark FROM runs WHERE run_id IN ({marks}) ORDER BY 1", list(runs)
    )
    return [str(b) for b in frame["benchmark"]]


def label_set_of_run(store: Store, run_id: str) -> LabelSet:
    """The labels of the benchmark of one run (AuditError for an unknown run)."""
    found = _benchmarks_of_runs(store, [run_id])
    if not found:
        raise AuditError(f"unknown run {run_id!r}")
    return label_set(found[0])


def _benchmark_of_audit(store: Store, audit: str) -> str | None:
    found = store.df(
        "SELECT DISTINCT r.benchmark FROM audit_samples a JOIN runs r USING (run_id) "
        "WHERE a.audit = ? ORDER BY 1",
        [audit],
    )["benchmark"]
    return str(found.iloc[0]) if len(found) else None


def label_set_of_audit(store: Store, audit: str) -> LabelSet:
    """The labels of the benchmark an audit sampled (AuditError when it has no runs left)."""
    benchmark = _benchmark_of_audit(store, audit)
    if benchmark is None:
        raise AuditError(f"audit {audit!r} has no runs")
    return label_set(benchmark)


def _names_of_audit(store: Store, audit: str) -> tuple[str, ...]:
    """The audit's label names; () for an audit without items (nothing to label)."""
    benchmark = _benchmark_of_audit(store, audit)
    return label_set(benchmark).names if benchmark is not None else ()


def _judged(names: Sequence[str], alias: str = "v", source: str = "current_results") -> str:
    """The one place this module names the judgings it reads (a FROM/JOIN source with its alias):
    `source` (default each run's current judging: its latest finished one, core.store's
    `current_results`, the same records the results pages score) with the labels of
    `results.labels` parsed once into the struct `_labels` (read with `_label`). Audits and
    human labels name a response by (run, item, variant): a run asked K times (`--epochs`) is
    audited on its first answer, epoch 1."""
    struct = "{" + ", ".join(f'"{n}": "BOOLEAN"' for n in names) + "}"
    parsed = f"json_transform(labels, '{struct}')" if names else "NULL"
    return f"(SELECT *, {parsed} AS _labels FROM {source} WHERE epoch = 1) {alias}"


def _label(name: str, alias: str = "v") -> str:
    """A judged label as a BOOLEAN column of `_judged`."""
    return f'{alias}._labels."{name}"'


def _label_columns(names: Sequence[str], alias: str = "v") -> str:
    """`, v._labels."a" AS a, …` (empty without names), to append to a SELECT list."""
    return "".join(f', {_label(n, alias)} AS "{n}"' for n in names)


# ---------------------------------------------------------------------------------------------
# Agreement statistics (pure)
# ---------------------------------------------------------------------------------------------


def _as_bool_array(values: Iterable[Any]) -> np.ndarray:
    return np.asarray([bool(v) for v in values], dtype=bool)


def cohen_kappa(a: Iterable[Any], b: Iterable[Any]) -> float:
    """Cohen's κ of two raters over the same binary items (NaN with no items, 1.0 if p_e = 1)."""
    x, y = _as_bool_array(a), _as_bool_array(b)
    if len(x) != len(y):
        raise ValueError("both raters must label the same items")
    n = len(x)
    if n == 0:
        return float("nan")
    p_o = float(np.mean(x == y))
    p_e = float(np.mean(x) * np.mean(y) + np.mean(~x) * np.mean(~y))
    if math.isclose(p_e, 1.0):
        return 1.0
    return (p_o - p_e) / (1.0 - p_e)


def percent_disagreement(a: Iterable[Any], b: Iterable[Any]) -> float:
    """Share of items where the two raters differ, in percent (NaN with no items)."""
    x, y = _as_bool_array(a), _as_bool_array(b)
    if len(x) != len(y):
        raise ValueError("both raters must label the same items")
    return float(np.mean(x != y) * 100.0) if len(x) else float("nan")


def confusion(judge: Iterable[Any], human: Iterable[Any]) -> np.ndarray:
    """2×2 counts: rows judge (true, false), columns human (true, false)."""
    j, h = _as_bool_array(judge), _as_bool_array(human)
    return np.array(
        [[int(np.sum(j & h)), int(np.sum(j & ~h))], [int(np.sum(~j & h)), int(np.sum(~j & ~h))]]
    )


def fleiss_kappa(ratings: np.ndarray | Sequence[Sequence[Any]]) -> float:
    """Fleiss' κ for binary ratings, an items × raters matrix (every item rated by every rater).

    Same formula as statsmodels' `fleiss_kappa(method='fleiss')` on the items × categories count
    table; 1.0 instead of NaN when every rating is the same class; NaN with no items or < 2 raters.
    """
    m = np.asarray(ratings, dtype=bool)
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] < 2:
        return float("nan")
    n_items, n_raters = m.shape
    yes = m.sum(axis=1).astype(float)
    counts = np.stack([yes, n_raters - yes], axis=1)  # items × {true, false}
    p_j = counts.sum(axis=0) / (n_items * n_raters)
    p_i = (np.sum(counts * counts, axis=1) - n_raters) / (n_raters * (n_raters - 1))
    p_bar = float(np.mean(p_i))
    p_e = float(np.sum(p_j * p_j))
    if math.isclose(p_e, 1.0):
        return 1.0
    return (p_bar - p_e) / (1.0 - p_e)


MIN_N = 10  # below this many items a κ is shown as "n too small", not as a number
BOOTSTRAP_DRAWS = 1000
BOOTSTRAP_SEED = 0
CI_LEVEL = 0.95


@dataclass(frozen=True)
class KappaEstimate:
    """A κ with the number of items it rests on and a percentile bootstrap CI over items.

    `reliable` is False below MIN_N items: the page greys the value out ("n too small") because
    κ = 1.00 from three items says nothing about the judge.
    """

    kappa: float
    n: int
    ci_low: float
    ci_high: float

    @property
    def reliable(self) -> bool:
        return self.n >= MIN_N and not math.isnan(self.kappa)


def _resample_counts(counts: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """draws × len(counts): items resampled with replacement, counted per rating pattern.

    Resampling n items with replacement and counting them per pattern is one multinomial
    draw of n over the patterns' shares; drawing that directly costs O(draws), not
    O(draws × n) (10,000 audited items stay instant). Protocol, for reproducing a CI:
    numpy.random.default_rng(seed).multinomial(n, counts / n, size=draws).
    """
    n = int(counts.sum())
    return np.random.default_rng(seed).multinomial(n, counts / n, size=draws)


def _kappa_from_cells(cells: np.ndarray) -> np.ndarray:
    """Cohen's κ from 2×2 cell counts (… × 4: a∧b, a∧¬b, ¬a∧b, ¬a∧¬b), with p_e = 1 → 1.0."""
    cells = np.asarray(cells, dtype=float)
    n = cells.sum(axis=-1)
    p_o = (cells[..., 0] + cells[..., 3]) / n
    pa = (cells[..., 0] + cells[..., 1]) / n
    pb = (cells[..., 0] + cells[..., 2]) / n
    p_e = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = (p_o - p_e) / (1.0 - p_e)
    return np.where(np.isclose(p_e, 1.0), 1.0, k)


def _fleiss_from_yes_counts(hist: np.ndarray, n_raters: int) -> np.ndarray:
    """Fleiss' κ from … × (r+1) counts of items by number of 'true' ratings (0..r)."""
    hist = np.asarray(hist, dtype=float)
    r = n_raters
    k = np.arange(r + 1, dtype=float)
    n = hist.sum(axis=-1)
    p_yes = (hist * k).sum(axis=-1) / (n * r)
    p_item = (k * k + (r - k) * (r - k) - r) / (r * (r - 1))
    p_bar = (hist * p_item).sum(axis=-1) / n
    p_e = p_yes * p_yes + (1 - p_yes) * (1 - p_yes)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (p_bar - p_e) / (1.0 - p_e)
    return np.where(np.isclose(p_e, 1.0), 1.0, kappa)


def _percentile_ci(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def kappa_estimate(
    a: Iterable[Any],
    b: Iterable[Any],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
    level: float = CI_LEVEL,
) -> KappaEstimate:
    """Cohen's κ of two raters with n and a seeded percentile bootstrap CI (items resampled)."""
    x, y = _as_bool_array(a), _as_bool_array(b)
    kappa = cohen_kappa(x, y)
    n = len(x)
    if n == 0:
        return KappaEstimate(kappa, 0, float("nan"), float("nan"))
    cells = np.array([np.sum(x & y), np.sum(x & ~y), np.sum(~x & y), np.sum(~x & ~y)])
    lo, hi = _percentile_ci(_kappa_from_cells(_resample_counts(cells, draws, seed)), level)
    return KappaEstimate(kappa, n, lo, hi)


def fleiss_estimate(
    ratings: np.ndarray | Sequence[Sequence[Any]],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
    level: float = CI_LEVEL,
) -> KappaEstimate:
    """Fleiss' κ (items × raters) with n items and a seeded percentile bootstrap CI over items."""
    m = np.asarray(ratings, dtype=bool)
    kappa = fleiss_kappa(m)
    n = int(m.shape[0]) if m.ndim == 2 else 0
    if n == 0 or math.isnan(kappa):
        return KappaEstimate(kappa, n, float("nan"), float("nan"))
    r = m.shape[1]
    hist = np.bincount(m.sum(axis=1), minlength=r + 1)
    lo, hi = _percentile_ci(_fleiss_from_yes_counts(_resample_counts(hist, draws, seed), r), level)
    return KappaEstimate(kappa, n, lo, hi)


def format_kappa(est: KappaEstimate) -> str:
    """'0.62 [0.41, 0.80]', or 'n too small' below MIN_N items (the tile text)."""
    if est.n == 0 or math.isnan(est.kappa):
        return "—"
    if not est.reliable:
        return "n too small"
    return f"{est.kappa:.2f} [{est.ci_low:.2f}, {est.ci_high:.2f}]"


# ---------------------------------------------------------------------------------------------
# Sampling (pure part + storage)
# ---------------------------------------------------------------------------------------------


def stratum_sizes(counts: Mapping[Any, int], fraction: float) -> dict[Any, int]:
    """round(fraction × N) per stratum (half up), at least 1, at most N."""
    if not 0 < fraction <= 1:
        raise AuditError(f"sample fraction must be in (0, 1], got {fraction}")
    return {
        key: min(n, max(1, int(math.floor(fraction * n + 0.5))))
        for key, n in counts.items()
        if n > 0
    }


def stratified_sample(
    pool: pd.DataFrame,
    fraction: float = DEFAULT_FRACTION,
    seed: int = 0,
    strata: Sequence[str] = ("run_id", "category"),
) -> pd.DataFrame:
    """A seeded sample of `pool` rows, stratified; returned in queue order (`position` 0, 1, …).

    Strata are run × category: two runs of one model (say proactive and passive) each get their
    share, where model × category let one run take most of a shared stratum.

    Deterministic for a given pool content, fraction and seed, whatever the pool's row order:
    the pool is sorted by (run_id, item_id, variant) first. The queue is shuffled across strata
    so an annotator does not see all of one run in a row.
    """
    if pool.empty:
        return pool.assign(position=pd.Series(dtype="int64"))
    rng = np.random.default_rng(seed)
    ordered = pool.sort_values(["run_id", "item_id", "variant"]).reset_index(drop=True)
    groups = ordered.groupby(list(strata), sort=True, dropna=False)
    sizes = stratum_sizes({key: len(idx) for key, idx in groups.indices.items()}, fraction)
    chosen: list[int] = []
    for key, idx in sorted(groups.indices.items(), key=lambda kv: str(kv[0])):
        picked = rng.choice(np.asarray(idx), size=sizes[key], replace=False)
        chosen.extend(int(i) for i in picked)
    order = rng.permutation(len(chosen))
    sample = ordered.iloc[[chosen[i] for i in order]].reset_index(drop=True)
    sample["position"] = np.arange(len(sample), dtype="int64")
    return sample


def judgings_of_audit(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """Per run of an audit: the judging whose labels people are compared with (run, judging,
    judge model, judge template)."""
    if not runs:
        return pd.DataFrame(columns=["run_id", "judging", "judge_model", "template_id"])
    marks = ", ".join("?" for _ in runs)
    return store.df(
        "SELECT a.run_id, a.judging, a.judge_model, a.template_id FROM all_judgings a "
        "JOIN current_judgings c USING (run_id, judging) "
        f"WHERE a.run_id IN ({marks}) ORDER BY a.run_id",
        list(runs),
    )


def auditable_runs(store: Store, include_playground: bool = False) -> pd.DataFrame:
    """Runs of auditable benchmarks (`is_auditable`) with at least one judged response (the
    audit's candidates), with their benchmark."""
    kind_filter = "" if include_playground else "AND coalesce(r.kind, 'eval') <> 'playground'"
    names = auditable_benchmarks()
    marks = ", ".join("?" for _ in names) or "NULL"
    return store.df(
        f"""
        SELECT r.run_id, r.model, r.setting, r.mode, r.judge_model, r.item_set,
               coalesce(r.weak_model, false) AS weak_model, r.kind, r.created_at,
               count(*) AS n_verdicts, r.benchmark
        FROM runs r JOIN current_results v ON v.run_id = r.run_id AND v.status = 'ok'
        WHERE r.benchmark IN ({marks}) {kind_filter}
        GROUP BY ALL ORDER BY r.created_at DESC, r.run_id
    """,
        names,
    )


def verdict_pool(store: Store, runs: Sequence[str], level: str = "primary") -> pd.DataFrame:
    """Judged responses of `runs` with model and category (controls are category '(control)').

    Categories are the generic `items` columns (primary/secondary category, is_error)."""
    if not runs:
        return pd.DataFrame(columns=["run_id", "item_id", "variant", "model", "category"])
    column = "primary_category" if level == "primary" else "secondary_category"
    marks = ", ".join("?" for _ in runs)
    return store.df(
        f"""
        SELECT v.run_id, v.item_id, v.variant, coalesce(r.model, r.endpoint, r.run_id) AS model,
               CASE WHEN i.is_error = false THEN '{CONTROL_CATEGORY}'
                    ELSE coalesce(i.{column}, '(unknown)') END AS category
        FROM current_results v
        JOIN runs r ON r.run_id = v.run_id
        JOIN responses s ON s.run_id = v.run_id AND s.item_id = v.item_id
             AND s.variant = v.variant AND s.epoch = v.epoch AND s.status = 'ok'
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id
        WHERE v.status = 'ok' AND v.epoch = 1 AND v.run_id IN ({marks})
    """,
        list(runs),
    )


@dataclass
class AuditInfo:
    """What an audit was drawn from (kept in table `meta` as JSON under 'audit:<name>')."""

    name: str
    runs: list[str]
    fraction: float
    seed: int
    level: str = "primary"
    n_pool: int = 0
    n_sampled: int = 0
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def describe(self) -> str:
        """One line a person can tell audits apart by: size, fraction, seed, strata, runs."""
        fraction = "" if math.isnan(self.fraction) else f"{self.fraction:.0%} of "
        return (
            f"{self.n_sampled} verdicts ({fraction}{self.n_pool}, seed {self.seed}, strata run × "
            f"{self.level} category) from runs {', '.join(self.runs)}"
        )


# The Judge audit page keeps its choice in the URL (?audit=…): this key stands for "draw a new
# audit" there, so no audit may carry it as its name.
NEW_AUDIT_KEY = "new"


class AuditExists(AuditError):
    """An audit of that name was drawn already (create_audit with exist_ok=False)."""

    def __init__(self, info: AuditInfo) -> None:
        self.info = info
        super().__init__(
            f"an audit named {info.name!r} already exists ({info.describe()}); nothing was "
            "drawn. Choose another name for a new sample, or open that audit."
        )


def create_audit(
    store: Store,
    name: str,
    runs: Sequence[str],
    fraction: float = DEFAULT_FRACTION,
    seed: int = 0,
    level: str = "primary",
    *,
    exist_ok: bool = True,
) -> AuditInfo:
    """Draw and store a sample; an existing audit of that name is returned unchanged, or with
    exist_ok=False refused (AuditExists), so a form never opens an old audit as if drawn anew.

    Re-drawing would reshuffle the queue under annotators' feet, so a name is fixed once drawn;
    pick a new name for a new sample.
    """
    name = name.strip()
    if not name:
        raise AuditError("an audit needs a name")
    if name == NEW_AUDIT_KEY:
        raise AuditError(f"{name!r} is reserved (the page's key for a new audit): choose another")
    existing = get_audit(store, name)
    if existing is not None:
        if not exist_ok:
            raise AuditExists(existing)
        return existing
    if not runs:
        raise AuditError("choose at least one run to sample verdicts from")
    known = set(store.df("SELECT run_id FROM runs")["run_id"])
    missing = [r for r in runs if r not in known]
    if missing:
        raise AuditError(f"unknown run(s): {', '.join(missing)}")
    benchmarks = _benchmarks_of_runs(store, runs)
    if len(benchmarks) != 1:
        raise AuditError(
            f"an audit samples the runs of one benchmark; these are of {', '.join(benchmarks)}"
        )
    label_set(benchmarks[0])  # refuses a benchmark without judge labels
    pool = verdict_pool(store, runs, level)
    if pool.empty:
        raise AuditError("the chosen runs have no judged responses to audit")
    sample = stratified_sample(pool, fraction, seed)
    info = AuditInfo(
        name=name,
        runs=sorted(runs),
        fraction=float(fraction),
        seed=int(seed),
        level=level,
        n_pool=len(pool),
        n_sampled=len(sample),
    )
    rows = sample[["run_id", "item_id", "variant", "position"]].assign(audit=name)

    def write(con: duckdb.DuckDBPyConnection) -> bool:
        if (_one(con, "SELECT count(*) FROM audit_samples WHERE audit = ?", [name]) or (0,))[0]:
            return False  # another session drew it first: keep theirs
        con.register("_sample", rows)
        con.execute(
            "INSERT INTO audit_samples (audit, position, run_id, item_id, variant) "
            "SELECT audit, position, run_id, item_id, variant FROM _sample"
        )
        con.unregister("_sample")
        upsert_rows(
            con,
            "meta",
            ("key", "value"),
            ("key",),
            [[AUDIT_META_PREFIX + name, json.dumps(info.__dict__)]],
        )
        return True

    drawn = bool(store.transaction(write))
    stored = get_audit(store, name) or info
    if not drawn and not exist_ok:
        raise AuditExists(stored)
    return stored


def get_audit(store: Store, name: str) -> AuditInfo | None:
    n = store.scalar("SELECT count(*) FROM audit_samples WHERE audit = ?", [name])
    if not n:
        return None
    raw = store.scalar("SELECT value FROM meta WHERE key = ?", [AUDIT_META_PREFIX + name])
    if raw:
        data = json.loads(raw)
        return AuditInfo(**{k: v for k, v in data.items() if k in AuditInfo.__dataclass_fields__})
    runs = store.df("SELECT DISTINCT run_id FROM audit_samples WHERE audit = ?", [name])
    return AuditInfo(
        name=name,
        runs=sorted(runs["run_id"]),
        fraction=float("nan"),
        seed=-1,
        n_sampled=int(n),
        created_at="",
    )


def list_audits(store: Store) -> pd.DataFrame:
    """Every audit with its size, runs, creation time and number of annotators."""
    return store.df("""
        SELECT a.audit, count(*) AS n_items, count(DISTINCT a.run_id) AS n_runs,
               min(a.created_at) AS created_at,
               (SELECT count(DISTINCT h.annotator) FROM human_labels h
                JOIN audit_samples b ON b.run_id = h.run_id AND b.item_id = h.item_id
                     AND b.variant = h.variant AND b.audit = a.audit) AS n_annotators
        FROM audit_samples a GROUP BY a.audit ORDER BY min(a.created_at) DESC, a.audit
    """)


def audit_queue(store: Store, audit: str) -> pd.DataFrame:
    """The sampled responses in queue order with everything an annotator needs to see: the
    item, the response, the judge's labels and its per-label rationales (`rationales`, the
    judgings' `metadata.rationales` {label: why}, when a benchmark's judge records them)."""
    names = _names_of_audit(store, audit)
    return store.df(
        f"""
        SELECT a.position, a.run_id, a.item_id, a.variant,
               coalesce(r.model, r.endpoint) AS model, r.setting, r.mode,
               coalesce(r.weak_model, false) AS weak_model, r.judge_model,
               i.is_error, i.primary_category, i.secondary_category, i.prompt, i.explanation,
               i.gold, s.response, s.messages{_label_columns(names)},
               v.metadata->'rationales' AS rationales
        FROM audit_samples a
        JOIN runs r ON r.run_id = a.run_id
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = a.item_id
        LEFT JOIN responses s ON s.run_id = a.run_id AND s.item_id = a.item_id
             AND s.variant = a.variant AND s.epoch = 1
        LEFT JOIN {_judged(names)} ON v.run_id = a.run_id AND v.item_id = a.item_id
             AND v.variant = a.variant
        WHERE a.audit = ? ORDER BY a.position
    """,
        [audit],
    )


# ---------------------------------------------------------------------------------------------
# Human labels
# ---------------------------------------------------------------------------------------------


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> tuple | None:
    """First row of a query, fully consumed (DuckDB refuses new work on a half-read result)."""
    rows = con.execute(sql, list(params)).fetchall()
    return rows[0] if rows else None


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class LabelConflict(AuditError):
    """The annotator's saved labels for this item changed since the page read them.

    `theirs` is what is saved now, `mine` what this save would write (both {label: value,
    '_note': note}); nothing was written. The page asks: overwrite, or keep theirs.
    """

    def __init__(self, theirs: dict[str, Any], mine: dict[str, Any]) -> None:
        labels = [k for k in dict.fromkeys([*mine, *theirs]) if k != "_note"]
        changed = [l for l in (*labels, "_note") if theirs.get(l) != mine.get(l)]
        super().__init__(
            "these labels were changed elsewhere (another tab or session of the same "
            "annotator) since this item was shown: " + ", ".join(changed or ["—"])
        )
        self.theirs, self.mine = theirs, mine


def _snapshot(rows: Iterable[Sequence[Any]]) -> dict[str, Any]:
    """(label, value, note) rows → {label: value, '_note': note} (the comparable saved state)."""
    rows = list(rows)
    out: dict[str, Any] = {label: bool(value) for label, value, _ in rows}
    notes = [n for _, _, n in rows if n]
    out["_note"] = notes[0] if notes else ""
    return out


_ITEM_LABELS_SQL = (
    "SELECT label, value, note FROM human_labels WHERE run_id = ? AND item_id = ? "
    "AND variant = ? AND annotator = ?"
)


def same_labels(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Equal saved states: every label of either (absent = unset) and the note."""
    a, b = a or {}, b or {}
    labels = {*a, *b} - {"_note"}
    return all(a.get(k) == b.get(k) for k in labels) and (a.get("_note") or "") == (
        b.get("_note") or ""
    )


def save_labels(
    store: Store,
    run_id: str,
    item_id: str,
    variant: str,
    annotator: str,
    labels: Mapping[str, bool],
    note: str | None = None,
    judge_values: Mapping[str, bool | None] | None = None,
    at: datetime | None = None,
    expected: Mapping[str, Any] | None = None,
) -> int:
    """One annotator's labels for one response, in one transaction.

    Without `expected` the last write wins per label (imports, scripts). With `expected` — the
    `item_labels` state the page read when it showed the item — the save compares it with what
    is saved now inside the write transaction and raises LabelConflict (writing nothing) if they
    differ: another tab of the same annotator saved in between. `judge_values={}` stores no
    judge value (a response nobody judged, e.g. a playground exchange judged by a person).
    """
    annotator = (annotator or "").strip()
    if not annotator:
        raise AuditError("an annotator name is required to save labels")
    names = label_set_of_run(store, run_id).names
    unknown = [k for k in labels if k not in names]
    if unknown:
        raise AuditError(f"unknown label(s) {unknown}; expected some of {list(names)}")
    if not labels:
        return 0
    stamp = at or _now()
    note = (note or "").strip() or None

    def write(con: duckdb.DuckDBPyConnection) -> int:
        if expected is not None:
            theirs = _snapshot(
                con.execute(_ITEM_LABELS_SQL, [run_id, item_id, variant, annotator]).fetchall()
            )
            if not same_labels(theirs, expected):
                mine = {**{k: bool(v) for k, v in labels.items()}, "_note": note or ""}
                raise LabelConflict(theirs, mine)
        current = judge_values
        if current is None:
            row = _one(
                con,
                f"SELECT {', '.join(_label(n) for n in names)} FROM {_judged(names)} "
                "WHERE run_id = ? AND item_id = ? AND variant = ?",
                [run_id, item_id, variant],
            )
            if row is None:
                raise AuditError(f"no verdict for run {run_id}, item {item_id}, variant {variant}")
            current = dict(zip(names, row))
        rows: list[list[Any]] = []
        for label, value in labels.items():
            judged = current.get(label)
            rows.append(
                [
                    run_id,
                    item_id,
                    variant,
                    annotator,
                    label,
                    bool(value),
                    None if judged is None else bool(judged),
                    note,
                    stamp,
                ]
            )
        upsert_rows(con, "human_labels", HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, rows)
        return len(labels)

    return store.transaction(write)


def annotators(store: Store, audit: str | None = None) -> list[str]:
    """Everyone who saved labels (on an audit's items, given `audit`)."""
    if audit is None:
        frame = store.df("SELECT DISTINCT annotator FROM human_labels ORDER BY 1")
    else:
        frame = store.df(
            """
            SELECT DISTINCT h.annotator FROM human_labels h JOIN audit_samples a
              ON a.run_id = h.run_id AND a.item_id = h.item_id AND a.variant = h.variant
            WHERE a.audit = ? ORDER BY 1""",
            [audit],
        )
    return list(frame["annotator"])


def audit_labels(store: Store, audit: str) -> pd.DataFrame:
    """Human labels on an audit's items, with the judge's current value for the same label."""
    names = _names_of_audit(store, audit)
    judge = (
        "CASE h.label " + " ".join(f"WHEN '{l}' THEN {_label(l)}" for l in names) + " END"
        if names
        else "NULL"
    )
    return store.df(
        f"""
        SELECT a.position, h.run_id, h.item_id, h.variant, h.annotator, h.label, h.value,
               h.judge_value AS judge_value_shown, h.note, h.created_at,
               coalesce(r.model, r.endpoint) AS model, {judge} AS judge_value
        FROM human_labels h
        JOIN audit_samples a ON a.run_id = h.run_id AND a.item_id = h.item_id
             AND a.variant = h.variant AND a.audit = ?
        JOIN runs r ON r.run_id = h.run_id
        LEFT JOIN {_judged(names)} ON v.run_id = h.run_id AND v.item_id = h.item_id
             AND v.variant = h.variant
        ORDER BY a.position, h.annotator, h.label
    """,
        [audit],
    )


def item_labels(
    store: Store, run_id: str, item_id: str, variant: str, annotator: str
) -> dict[str, Any]:
    """This annotator's saved labels for one response: {label: value, '_note': note}."""
    return _snapshot(store.rows(_ITEM_LABELS_SQL, [run_id, item_id, variant, annotator]))


def progress(store: Store, audit: str, annotator: str) -> dict[str, int]:
    """How many sampled items this annotator has fully labelled (all the benchmark's labels)."""
    total = store.scalar("SELECT count(*) FROM audit_samples WHERE audit = ?", [audit]) or 0
    done = (
        store.scalar(
            """
        SELECT count(*) FROM (
          SELECT a.position FROM audit_samples a JOIN human_labels h
            ON a.run_id = h.run_id AND a.item_id = h.item_id AND a.variant = h.variant
          WHERE a.audit = ? AND h.annotator = ?
          GROUP BY a.position HAVING count(DISTINCT h.label) >= ?)
    """,
            [audit, annotator, len(_names_of_audit(store, audit))],
        )
        or 0
    )
    return {"total": int(total), "done": int(done)}


def next_position(store: Store, audit: str, annotator: str) -> int | None:
    """Queue resume: the first sampled item this annotator has not fully labelled (None = done)."""
    return store.scalar(
        """
        SELECT min(a.position) FROM audit_samples a
        LEFT JOIN (SELECT run_id, item_id, variant, count(DISTINCT label) AS n FROM human_labels
                   WHERE annotator = ? GROUP BY ALL) h
          ON a.run_id = h.run_id AND a.item_id = h.item_id AND a.variant = h.variant
        WHERE a.audit = ? AND coalesce(h.n, 0) < ?
    """,
        [annotator, audit, len(_names_of_audit(store, audit))],
    )


# ---------------------------------------------------------------------------------------------
# Results panel
# ---------------------------------------------------------------------------------------------


def agreement_table(labels: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """Per annotator and label: n, Cohen's κ with the judge and its bootstrap CI, whether n is
    below MIN_N, % disagreement, confusion counts. `labels` is `audit_labels`; `names` (the
    LabelSet's) orders the rows."""
    out = []
    usable = labels.dropna(subset=["judge_value"])
    for (annotator, label), group in usable.groupby(["annotator", "label"], sort=True):
        judge = group["judge_value"].astype(bool).to_numpy()
        human = group["value"].astype(bool).to_numpy()
        cm = confusion(judge, human)
        est = kappa_estimate(judge, human)
        out.append(
            {
                "annotator": annotator,
                "label": label,
                "n": len(group),
                "cohen_kappa": est.kappa,
                "ci_low": est.ci_low,
                "ci_high": est.ci_high,
                "n_too_small": not est.reliable,
                "disagreement_pct": percent_disagreement(judge, human),
                "judge_true_human_true": cm[0, 0],
                "judge_true_human_false": cm[0, 1],
                "judge_false_human_true": cm[1, 0],
                "judge_false_human_false": cm[1, 1],
            }
        )
    frame = pd.DataFrame(
        out,
        columns=[
            "annotator",
            "label",
            "n",
            "cohen_kappa",
            "ci_low",
            "ci_high",
            "n_too_small",
            "disagreement_pct",
            "judge_true_human_true",
            "judge_true_human_false",
            "judge_false_human_true",
            "judge_false_human_false",
        ],
    )
    order = {label: i for i, label in enumerate(names)}
    return frame.sort_values(
        ["annotator", "label"], key=lambda s: s.map(order).fillna(0) if s.name == "label" else s
    ).reset_index(drop=True)


def confusion_matrices(
    labels: pd.DataFrame, annotator: str, *, names: Sequence[str]
) -> dict[str, np.ndarray]:
    """label -> 2×2 counts (rows judge true/false, columns human true/false) for one annotator,
    in the order of `names`."""
    out = {}
    mine = labels[(labels["annotator"] == annotator)].dropna(subset=["judge_value"])
    for label in names:
        group = mine[mine["label"] == label]
        out[label] = confusion(group["judge_value"].astype(bool), group["value"].astype(bool))
    return out


def fleiss_table(
    labels: pd.DataFrame, raters: Sequence[str] | None = None, *, names: Sequence[str]
) -> pd.DataFrame:
    """Per label of `names`: Fleiss' κ over `raters` (default all; ≥3) on the items every one
    of them labelled."""
    raters = sorted(raters if raters is not None else labels["annotator"].unique())
    rows = []
    for label in names:
        sub = labels[(labels["label"] == label) & (labels["annotator"].isin(raters))]
        wide = sub.pivot_table(
            index=["run_id", "item_id", "variant"],
            columns="annotator",
            values="value",
            aggfunc="last",
        )
        wide = wide.reindex(columns=raters).dropna()
        est = (
            fleiss_estimate(wide.astype(bool).to_numpy())
            if len(raters) >= 3
            else KappaEstimate(float("nan"), len(wide), float("nan"), float("nan"))
        )
        rows.append(
            {
                "label": label,
                "n_items": len(wide),
                "n_raters": len(raters),
                "fleiss_kappa": est.kappa,
                "ci_low": est.ci_low,
                "ci_high": est.ci_high,
                "n_too_small": not est.reliable,
            }
        )
    return pd.DataFrame(rows)


def pairwise_kappa(labels: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """Cohen's κ between every two annotators, per label of `names`, on the items both
    labelled."""
    keys = ["run_id", "item_id", "variant"]
    people = sorted(labels["annotator"].unique())
    rows = []
    for label in names:
        wide = (
            labels[labels["label"] == label]
            .set_index([*keys, "annotator"])["value"]
            .unstack("annotator")
        )
        for i, a in enumerate(people):
            for b in people[i + 1 :]:
                if a not in wide or b not in wide:
                    continue
                both = wide[[a, b]].dropna()
                est = kappa_estimate(both[a].astype(bool), both[b].astype(bool))
                rows.append(
                    {
                        "label": label,
                        "annotator_a": a,
                        "annotator_b": b,
                        "n": len(both),
                        "cohen_kappa": est.kappa,
                        "ci_low": est.ci_low,
                        "ci_high": est.ci_high,
                        "n_too_small": not est.reliable,
                        "disagreement_pct": percent_disagreement(
                            both[a].astype(bool), both[b].astype(bool)
                        ),
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "label",
            "annotator_a",
            "annotator_b",
            "n",
            "cohen_kappa",
            "ci_low",
            "ci_high",
            "n_too_small",
            "disagreement_pct",
        ],
    )


def majority_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """Majority vote of annotators per (response, label); ties go to false (no error handled)."""
    share = (
        labels.assign(value=labels["value"].astype(float))
        .groupby(["run_id", "item_id", "variant", "label"])["value"]
        .mean()
    )
    return (share > 0.5).rename("value").reset_index()


WHOLE_RUN = "judge · whole run"
MAJORITY = "majority"


def _judge_on(pair: str) -> str:
    """The source name of the judge's row paired with `pair` (an annotator or the majority)."""
    return (
        f"judge · items labelled by {pair}"
        if pair != MAJORITY
        else "judge · items labelled by ≥2 annotators"
    )


def _human(pair: str) -> str:
    """The source name of the people's row of `pair`."""
    return f"human · {pair}"


def complete_labels(labels: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """One row per (response, annotator) with all the labels of `names` (partially labelled
    items dropped: a person's F1 and the judge's must rest on the same items and labels)."""
    keys = ["run_id", "item_id", "variant"]
    if labels.empty:
        return pd.DataFrame(columns=[*keys, "annotator", *names])
    wide = (
        labels.set_index([*keys, "annotator", "label"])["value"]
        .unstack("label")
        .reindex(columns=list(names))
        .reset_index()
    )
    wide.columns.name = None
    return wide.dropna(subset=list(names)).reset_index(drop=True)


def f1_comparison(store: Store, audit: str) -> pd.DataFrame:
    """Per run: the judge's F1 on the whole run (context), then pairs on identical items —
    the judge and each annotator on exactly the items that annotator fully labelled, and the
    judge and the annotators' majority on the items two or more of them labelled — like the
    paper's Table 12 (human) beside Table 6 (judge). `pair` names the pair a row belongs to
    (empty for the whole-run row); `n` is the number of items of the row.

    F1 is the benchmark's own (its registry `label_metrics`, the same code as its results
    pages); a benchmark without one gets no rows."""
    benchmark = _benchmark_of_audit(store, audit)
    names = label_set(benchmark).names if benchmark is not None else ()
    columns = [
        "run_id",
        "model",
        "setting",
        "mode",
        "pair",
        "source",
        "n",
        "metric",
        *names,
        "average",
    ]
    metrics_ref = BENCHMARKS[benchmark].label_metrics if benchmark is not None else None
    if metrics_ref is None:
        return pd.DataFrame(columns=columns)
    keys = ["run_id", "item_id", "variant"]
    item_cols = ["is_error", "primary_category", "secondary_category"]
    base = f"""
        SELECT v.run_id, v.item_id, v.variant, coalesce(i.is_error, true) AS is_error,
               i.primary_category, i.secondary_category{_label_columns(names)}
        FROM {_judged(names)} JOIN runs r ON r.run_id = v.run_id
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id"""
    sampled = store.df(
        base
        + """
        JOIN audit_samples a ON a.run_id = v.run_id AND a.item_id = v.item_id
             AND a.variant = v.variant AND a.audit = ?""",
        [audit],
    )
    if sampled.empty:
        return pd.DataFrame(columns=columns)
    runs = sorted(sampled["run_id"].unique())
    whole = store.df(
        base + f" WHERE v.status = 'ok' AND v.run_id IN ({', '.join('?' for _ in runs)})",
        list(runs),
    )
    head = store.df(
        f"""SELECT run_id, coalesce(model, endpoint, '') AS model,
                               coalesce(setting, '') AS setting, mode FROM runs
                        WHERE run_id IN ({", ".join("?" for _ in runs)})""",
        list(runs),
    )
    head = head.set_index("run_id")
    parts = [whole.assign(evaluator=WHOLE_RUN)]
    pair_of = {WHOLE_RUN: ""}
    item_info = sampled[keys + item_cols]
    complete = complete_labels(audit_labels(store, audit), names=names)

    def add_pair(pair: str, human: pd.DataFrame) -> None:
        on = human[keys].drop_duplicates()
        parts.append(sampled.merge(on, on=keys).assign(evaluator=_judge_on(pair)))
        parts.append(
            human[keys + list(names)].merge(item_info, on=keys).assign(evaluator=_human(pair))
        )
        pair_of[_judge_on(pair)] = pair_of[_human(pair)] = pair

    for name, mine in complete.groupby("annotator", sort=True):
        add_pair(str(name), mine)
    per_item = complete.groupby(keys)["annotator"].transform("size")
    multi = complete[per_item >= 2]
    if not multi.empty:
        long = multi.melt(
            id_vars=[*keys, "annotator"],
            value_vars=list(names),
            var_name="label",
            value_name="value",
        )
        by_label = majority_labels(long).set_index([*keys, "label"])["value"]
        majority = by_label.unstack("label").reset_index()
        add_pair(MAJORITY, majority)
    rows = pd.concat(parts, ignore_index=True)
    for label in names:
        rows[label] = rows[label].astype("boolean")
    rows["is_error"] = rows["is_error"].fillna(True).astype(bool)
    rows = rows.join(head[["model", "setting"]], on="run_id")
    counts = rows.groupby(["run_id", "evaluator"]).size().rename("n").reset_index()
    f1 = metrics_ref()(rows).merge(
        counts.rename(columns={"evaluator": "source"}), on=["run_id", "source"]
    )
    f1 = f1.join(head, on="run_id")
    f1["pair"] = f1["source"].map(pair_of)
    f1["_o"] = [
        (0 if p == "" else 2 if p == MAJORITY else 1, p, not s.startswith("judge"))
        for p, s in zip(f1["pair"], f1["source"])
    ]
    f1 = f1.sort_values(["run_id", "_o"]).reset_index(drop=True)
    return f1[columns]


def mean_abs_difference(f1: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """Per run and pair: mean |human F1 − judge F1| over the labels of `names`, both on the same
    items (the paper reports 5.59 points between its annotators and the judge)."""
    rows = []
    paired = f1[f1["pair"].fillna("") != ""]
    for key, group in paired.groupby(["run_id", "pair"], sort=True):
        run_id, pair = cast(tuple[str, str], key)
        judge = group[group["source"] == _judge_on(pair)]
        human = group[group["source"] == _human(pair)]
        if judge.empty or human.empty:
            continue
        j, h = judge.iloc[0], human.iloc[0]
        diffs = [abs(h[l] - j[l]) for l in names if not (pd.isna(h[l]) or pd.isna(j[l]))]
        rows.append(
            {
                "run_id": run_id,
                "model": j["model"],
                "pair": pair,
                "n": int(h["n"]),
                "mean_abs_diff_points": float(np.mean(diffs)) if diffs else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["run_id", "model", "pair", "n", "mean_abs_diff_points"])


# ---------------------------------------------------------------------------------------------
# CSV export / import
# ---------------------------------------------------------------------------------------------


def export_labels_csv(store: Store, audit: str | None = None) -> str:
    """All human labels (or an audit's) as CSV text, one row per (response, annotator, label)."""
    if audit is None:
        frame = store.df(
            f"SELECT {', '.join(LABEL_CSV_COLUMNS)} FROM human_labels "
            "ORDER BY run_id, item_id, variant, annotator, label"
        )
    else:
        frame = store.df(
            f"""
            SELECT {", ".join("h." + c for c in LABEL_CSV_COLUMNS)} FROM human_labels h
            JOIN audit_samples a ON a.run_id = h.run_id AND a.item_id = h.item_id
                 AND a.variant = h.variant AND a.audit = ?
            ORDER BY a.position, h.annotator, h.label""",
            [audit],
        )
    if "created_at" in frame:
        frame["created_at"] = pd.to_datetime(frame["created_at"]).dt.strftime(
            "%Y-%m-%dT%H:%M:%S.%f"
        )
    for col in ("value", "judge_value"):
        frame[col] = frame[col].map(lambda v: "" if pd.isna(v) else ("true" if v else "false"))
    return frame.to_csv(index=False)


_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def _parse_bool(text: str) -> bool | None:
    t = (text or "").strip().lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise ValueError(f"'{text}' is not a boolean (use true/false)")


@dataclass
class ImportResult:
    written: int
    skipped_older: int
    rows: int


def _parse_time(raw: str) -> datetime | None:
    """An ISO 8601 date-time as naive UTC (None when empty); ValueError names the text."""
    if not raw:
        return None
    try:
        stamp = pd.Timestamp(raw)
        if stamp.tzinfo is not None:
            stamp = stamp.tz_convert("UTC").tz_localize(None)
        return stamp.to_pydatetime()
    except (ValueError, TypeError):
        raise ValueError(f"created_at '{raw}' is not a date-time (ISO 8601)") from None


@dataclass
class _LabelCheck:
    """What an import checks a row against: the judged responses and each run's label names
    (`any_names`, every auditable benchmark's, for a row whose response is unknown)."""

    verdict_keys: set[tuple[str, str, str]]
    names_of_run: dict[str, tuple[str, ...]]
    any_names: tuple[str, ...]


def _label_check(store: Store) -> _LabelCheck:
    keys = {
        (str(r[0]), str(r[1]), str(r[2]))
        for r in store.rows("SELECT run_id, item_id, variant FROM current_results")
    }
    auditable = {b: label_set(b).names for b in auditable_benchmarks()}
    runs = store.rows("SELECT run_id, benchmark FROM runs")
    any_names = tuple(dict.fromkeys(n for names in auditable.values() for n in names))
    return _LabelCheck(keys, {str(r): auditable.get(str(b), ()) for r, b in runs}, any_names)


def _parse_label_row(
    record: Mapping[str, str | None], check: _LabelCheck
) -> tuple[dict[str, Any], list[str]]:
    """One CSV row as a `human_labels` row, and its problems (the row is unusable if any)."""
    problems: list[str] = []
    key = (record.get("run_id") or "", record.get("item_id") or "", record.get("variant") or "")
    names = check.any_names
    if not all(key):
        problems.append("run_id, item_id and variant must be set")
    elif key not in check.verdict_keys:
        problems.append(
            f"no judged response for run '{key[0]}', item '{key[1]}', "
            f"variant '{key[2]}' in this database"
        )
    else:
        names = check.names_of_run.get(key[0], ())
    annotator = (record.get("annotator") or "").strip()
    if not annotator:
        problems.append("annotator is empty")
    label = (record.get("label") or "").strip()
    if not names:
        problems.append(f"run '{key[0]}' is of a benchmark without judge labels")
    elif label not in names:
        problems.append(f"label '{label}' is not one of {', '.join(names)}")
    row: dict[str, Any] = {"run_id": key[0], "item_id": key[1], "variant": key[2]}
    row |= {"annotator": annotator, "label": label, "value": None, "judge_value": None}
    for col in ("value", "judge_value"):
        raw = record.get(col) or ""
        if col == "value" or raw.strip():  # judge_value is optional
            try:
                row[col] = _parse_bool(raw if col == "value" else raw.strip())
            except ValueError as exc:
                problems.append(f"{col}: {exc}")
    row["note"] = (record.get("note") or "").strip() or None
    try:
        row["created_at"] = _parse_time((record.get("created_at") or "").strip())
    except ValueError as exc:
        problems.append(str(exc))
    return row, problems


def _write_imported(
    parsed: Sequence[Mapping[str, Any]], now: datetime
) -> Callable[[duckdb.DuckDBPyConnection], tuple[int, int]]:
    """The import's transaction: each row unless the saved label is newer (last write wins)."""
    columns = ("run_id", "item_id", "variant", "annotator", "label")

    def write(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
        written = skipped = 0
        for row in parsed:
            stamp = row["created_at"] or now
            existing = _one(
                con,
                "SELECT created_at FROM human_labels WHERE run_id = ? AND item_id = ? AND "
                "variant = ? AND annotator = ? AND label = ?",
                [row[c] for c in columns],
            )
            if existing is not None and existing[0] is not None and existing[0] > stamp:
                skipped += 1
                continue
            upsert_rows(
                con,
                "human_labels",
                HUMAN_LABEL_COLUMNS,
                HUMAN_LABEL_KEYS,
                [
                    [
                        *(row[c] for c in columns),
                        row["value"],
                        row["judge_value"],
                        row["note"],
                        stamp,
                    ]
                ],
            )
            written += 1
        return written, skipped

    return write


def import_labels_csv(store: Store, text: str | bytes) -> ImportResult:
    """Validate every row first (errors name the line), then write all rows in one transaction.

    A row replaces an existing label of the same (response, annotator, label) unless the
    database's copy is newer (its created_at later than the row's): last write wins.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    required = ["run_id", "item_id", "variant", "annotator", "label", "value"]
    missing = [c for c in required if c not in header]
    if missing:
        raise AuditError(
            f"line 1: missing column(s) {', '.join(missing)}; expected "
            f"{', '.join(LABEL_CSV_COLUMNS)}"
        )
    check = _label_check(store)
    parsed: list[dict[str, Any]] = []
    errors: list[str] = []
    seen: dict[tuple, int] = {}
    start_line = 2
    for record in reader:
        line = start_line
        start_line = reader.line_num + 1
        row, problems = _parse_label_row(record, check)
        full_key = tuple(row[c] for c in ("run_id", "item_id", "variant", "annotator", "label"))
        if not problems and full_key in seen:
            problems.append(f"duplicate of line {seen[full_key]} (same response, annotator, label)")
        if problems:
            errors.append(f"line {line}: " + "; ".join(problems))
            continue
        seen[full_key] = line
        parsed.append(row)
    if errors:
        shown = errors[:20]
        more = f"\n… and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise AuditError("labels file not imported (nothing written):\n" + "\n".join(shown) + more)
    if not parsed:
        raise AuditError("labels file has no rows")
    written, skipped = store.transaction(_write_imported(parsed, _now()))
    return ImportResult(written=written, skipped_older=skipped, rows=len(parsed))


# ---------------------------------------------------------------------------------------------
# Charts (pure: DataFrame -> plotly Figure)
# ---------------------------------------------------------------------------------------------


def confusion_figure(matrices: Mapping[str, np.ndarray], annotator: str) -> go.Figure:
    """One 2×2 heatmap per label (rows of 3, in the order of `matrices`): rows judge true/false,
    columns annotator true/false; cells are counts of responses."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    labels = list(matrices)
    n_cols = 3
    n_rows = max(1, math.ceil(len(labels) / n_cols))
    fig = make_subplots(
        rows=n_rows,
        cols=n_cols,
        subplot_titles=labels,
        horizontal_spacing=0.08,
        vertical_spacing=0.22,
    )
    top = max([int(np.asarray(m).max()) for m in matrices.values() if np.asarray(m).size] + [1])
    for i, label in enumerate(labels):
        m = np.asarray(matrices[label])
        row, col = i // n_cols + 1, i % n_cols + 1
        fig.add_trace(
            go.Heatmap(
                z=m.tolist(),
                x=["true", "false"],
                y=["true", "false"],
                text=m.tolist(),
                texttemplate="%{text}",
                colorscale="Blues",
                showscale=False,
                zmin=0,
                zmax=top,
                name=label,
                hovertemplate=f"judge %{{y}} · {annotator} %{{x}}: %{{z}}<extra>{label}</extra>",
            ),
            row=row,
            col=col,
        )
        fig.update_yaxes(
            autorange="reversed", title_text="judge" if col == 1 else None, row=row, col=col
        )
        fig.update_xaxes(title_text=annotator, row=row, col=col)
    fig.update_layout(
        title=f"Confusion matrices: judge (rows) vs {annotator} (columns), counts of responses",
        height=260 * n_rows + 80,
        margin=dict(t=90, l=10, r=10, b=10),
    )
    return fig


def kappa_figure(agreement: pd.DataFrame, *, names: Sequence[str]) -> go.Figure:
    """Cohen's κ per label (in the order of `names`), one bar per annotator, with its bootstrap
    CI; κ on fewer than MIN_N items is left out (no bar) rather than drawn as if it meant
    something."""
    import plotly.express as px

    frame = agreement.copy()
    small = frame["n_too_small"].astype(bool)
    frame.loc[small, ["cohen_kappa", "ci_low", "ci_high"]] = float("nan")
    frame["err_plus"] = frame["ci_high"] - frame["cohen_kappa"]
    frame["err_minus"] = frame["cohen_kappa"] - frame["ci_low"]
    fig = px.bar(
        frame,
        x="label",
        y="cohen_kappa",
        color="annotator",
        barmode="group",
        error_y="err_plus",
        error_y_minus="err_minus",
        category_orders={"label": list(names)},
        hover_data={
            "cohen_kappa": ":.2f",  # not the bootstrap's float noise
            "n": True,
            "disagreement_pct": ":.1f",
            "err_plus": False,
            "err_minus": False,
        },
        title=f"Cohen's κ between the judge and each annotator, per label (95% "
        f"bootstrap CI; no bar below n = {MIN_N} items)",
        labels={"cohen_kappa": "Cohen's κ", "label": "label"},
    )
    fig.update_yaxes(range=[-1, 1.05])
    fig.update_layout(height=360)
    return fig
