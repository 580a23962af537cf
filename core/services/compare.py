"""Proactive vs passive error handling, per model (issue 6 item 5), over every benchmark that
takes part.

A benchmark takes part through its registry entry: `comparison` names ("module:attr") a
`Contribution` — its published rows, its run rows (one per run and measure, with the
benchmark's headline rate as `value`), its measure labels in column order and the paper its
published values come from. Whether a benchmark is on the proactive or the passive side is its
registry `mode`; each contribution comes from its package's `comparison` loader (the registry
lists who contributes).

Model names differ between the papers (GPT-4o vs GPT-4, Gemini-1.5 vs Gemini Pro): rows are
never merged across different spellings; a model missing from a source shows a blank.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from core.registry import BENCHMARKS
from core.store import Store

NO_JUDGE = "none (exact match)"
LONG_COLUMNS = [
    "model",
    "measure_label",
    "kind",
    "mode",
    "judge",
    "source",
    "value",
    "recall",
    "note",
]
# long-table columns after LONG_COLUMNS: the registry name of the row's benchmark, the run's
# creation time (NaT for published rows) and whether its model is a weak one
EXTRA_COLUMNS = ["benchmark", "created_at", "weak_model", "run_state"]
KIND_WORDS = {"published": "published", "run": "runs"}
# a run that asked the same items both ways: n pairs, the two rates (percent), b = items
# critiqued/flagged only proactively, c = only when asked, McNemar's exact p of b vs c
PAIRED_COLUMNS = [
    "benchmark",
    "model",
    "source",
    "judge",
    "n",
    "proactive",
    "passive",
    "b",
    "c",
    "p_value",
]


@dataclass(frozen=True)
class Contribution:
    """What one benchmark adds to the comparison.

    published(store): LONG_COLUMNS, one row per published value. runs(store): LONG_COLUMNS +
    created_at, weak_model, one row per run and measure (None: no run). measures: its measure
    labels in the wide table's column order. paper: the source of its published values.
    paired(store) (optional): for runs that asked the same items in a proactive and a passive
    form, one row per run with PAIRED_COLUMNS (None: no such run). note: how to read its rows.
    """

    published: Callable[[Store], pd.DataFrame]
    runs: Callable[[Store], pd.DataFrame | None]
    measures: tuple[str, ...]
    paper: str
    paired: Callable[[Store], pd.DataFrame | None] | None = None
    note: str = ""


def contributions() -> list[tuple[str, Contribution]]:
    """(benchmark name, its Contribution) in registry order, for benchmarks that take part."""
    return [(b.name, b.roles.comparison()) for b in BENCHMARKS.values() if b.roles.comparison]


def published_rows(store: Store) -> pd.DataFrame:
    frames = [c.published(store).assign(benchmark=name) for name, c in contributions()]
    if not frames:
        return pd.DataFrame(columns=[*LONG_COLUMNS, "benchmark"])
    return pd.concat(frames, ignore_index=True)


def run_rows(store: Store) -> pd.DataFrame:
    frames = []
    for name, contribution in contributions():
        rows = contribution.runs(store)
        if rows is not None:
            frames.append(rows.assign(benchmark=name))
    if not frames:
        return pd.DataFrame(columns=LONG_COLUMNS + EXTRA_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def paired_rows(store: Store) -> pd.DataFrame:
    """PAIRED_COLUMNS of every contribution that pairs a run's proactive and passive answers."""
    frames = []
    for name, contribution in contributions():
        rows = contribution.paired(store) if contribution.paired else None
        if rows is not None and len(rows):
            frames.append(rows.assign(benchmark=name))
    if not frames:
        return pd.DataFrame(columns=PAIRED_COLUMNS)
    return pd.concat(frames, ignore_index=True)[PAIRED_COLUMNS]


def notes() -> list[str]:
    """The contributions' notes on how to read their rows."""
    return [c.note for _, c in contributions() if c.note]


# a run row's n and 95% interval as its benchmark's metrics print them (published rows: none)
STAT_COLUMNS = ["n", "ci_low", "ci_high"]


# a row's standing (column `run_state`): a published value, or a run that answered and did not
# fail, one that answered but failed, one with no answer (core.services.run_choice decides)
PUBLISHED, ANSWERED, FAILED, EMPTY = "published", "answered", "failed", "empty"
# which run wide_table picks for a cell: the latest answered one, else the latest failed one
# with answers; an empty run never (as core.services.run_choice.default_runs picks for pages)
_PICK_RANK = {PUBLISHED: 2, ANSWERED: 2, FAILED: 1, EMPTY: 0}


def run_states(store: Store, run_ids: list[str]) -> list[str]:
    """ANSWERED, FAILED or EMPTY for each run (core.services.run_choice.answered_runs)."""
    from core.services.run_choice import answered_runs

    answered = answered_runs(store, list(dict.fromkeys(run_ids)))
    return [
        EMPTY if r not in answered else FAILED if answered[r][1] == "failed" else ANSWERED
        for r in run_ids
    ]


def long_table(store: Store) -> pd.DataFrame:
    """Every value with its source: published cells and one row per run (with its n and
    interval where the contribution gives them, and its `run_state`)."""
    pub = published_rows(store).assign(
        created_at=pd.NaT,  # type: ignore[arg-type]  # stubs: assign refuses NaT
        weak_model=False,
        run_state=PUBLISHED,
    )
    runs = run_rows(store)
    runs = runs.assign(run_state=run_states(store, [str(s) for s in runs["source"]]))
    frames = [f for f in (pub, runs) if len(f)]
    if not frames:
        return pd.DataFrame(columns=LONG_COLUMNS + STAT_COLUMNS + EXTRA_COLUMNS)
    frame = pd.concat(frames, ignore_index=True)
    for col in STAT_COLUMNS:
        if col not in frame:
            frame[col] = float("nan")
    rest = [c for c in frame.columns if c not in LONG_COLUMNS and c not in STAT_COLUMNS]
    return frame[[*LONG_COLUMNS, *STAT_COLUMNS, *rest]]


def column_name(measure_label: str, kind: str) -> str:
    """The wide table's column of a measure and kind: `… [published]` or `… [runs]`."""
    return f"{measure_label} [{KIND_WORDS[kind]}]"


def wide_table(long: pd.DataFrame) -> pd.DataFrame:
    """One row per model name, one column per measure and kind; a run column holds the latest
    answered run (a failed one with answers only when no run of that cell answered; a run
    without an answer never).

    Blanks mean the source has no value for that name. Columns: `model`, then one per measure
    and origin, e.g. `<measure> — proactive (<setting>) [published]`, `... [runs]`.
    """
    if long.empty:
        return pd.DataFrame(columns=["model"])
    frame = long.copy()
    frame["column"] = frame["measure_label"] + " [" + frame["kind"].map(KIND_WORDS) + "]"
    # the latest run of the best standing (an answered run before a failed one; never an
    # empty run: a blank rather than a run that never got an answer)
    rank = frame["run_state"].map(_PICK_RANK).fillna(2) if "run_state" in frame else 2
    frame = frame.assign(_rank=rank)
    frame = frame[frame["_rank"] > 0].sort_values(
        ["_rank", "created_at"], kind="stable", na_position="first"
    )
    if frame.empty:
        return pd.DataFrame(columns=["model"])
    latest = frame.groupby(["model", "column"], sort=False).tail(1)
    wide = latest.pivot(index="model", columns="column", values="value")
    order = []
    for label in [m for _, c in contributions() for m in c.measures]:
        for kind in KIND_WORDS:
            col = column_name(label, kind)
            if col in wide.columns:
                order.append(col)
    order += [c for c in wide.columns if c not in order]
    models = list(dict.fromkeys(frame["model"]))
    return wide.reindex(index=models, columns=order).reset_index()


def _proactive(benchmark: str) -> bool:
    return BENCHMARKS[benchmark].mode == "proactive"


def name_overlap(long: pd.DataFrame) -> dict[str, list[str]]:
    """Which model names appear on the proactive side, the passive side, and both (a side is
    a row's `mode` when its benchmark gives one — a benchmark asked both ways has rows of
    both — else its benchmark's registry mode)."""
    by_row = long["mode"] if "mode" in long.columns else pd.Series(None, index=long.index)
    by_bench = long["benchmark"].map(_proactive).astype(bool)
    flags = [
        (m == "proactive") if isinstance(m, str) and m else b for m, b in zip(by_row, by_bench)
    ]
    proactive = pd.Series(flags, index=long.index, dtype=bool)
    pro = set(long[proactive]["model"])
    pas = set(long[~proactive]["model"])
    return {
        "proactive_only": sorted(pro - pas),
        "passive_only": sorted(pas - pro),
        "both": sorted(pro & pas),
    }


def papers(shown: pd.DataFrame) -> list[str]:
    """The papers to cite under `shown`: when it holds published values, those of the
    benchmarks it holds rows of."""
    if not (shown["kind"] == "published").any():
        return []
    present = set(shown["benchmark"])
    return [c.paper for name, c in contributions() if name in present]


def score_columns(shown: pd.DataFrame, wide: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The wide table's score columns (never recall) of proactive and of passive measures."""
    mode_of = {
        column_name(label, kind): mode
        for label, kind, mode, recall in zip(
            shown["measure_label"], shown["kind"], shown["mode"], shown["recall"]
        )
        if not recall
    }
    pro = [c for c in wide.columns if mode_of.get(c) == "proactive"]
    pas = [c for c in wide.columns if mode_of.get(c) == "passive"]
    return pro, pas
