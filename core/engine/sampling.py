"""Seeded stratified samples for `--limit N`: a small run keeps the design of its item set.

Why: the first N items in file order are usually one category (a built-in sample's first 8 were
all one category, with no control question), so a small run measured something else
than the benchmark. A sample here keeps every stratum in its share of the set:

- the design's ratio first: when the items say which are erroneous and which are controls
  (column is_error), n is split between those groups by largest remainder (ties: larger group,
  then name) and each group's share is then spread over its strata — so `--limit 5` on a 1:1
  set gives 3:2, not the 4:1 the at-least-one rule below would give across all strata;
- quotas by largest remainder: stratum s of size N_s gets floor(n·N_s/N), and the items left
  over go to the largest fractional parts (ties: larger stratum, then stratum name);
- when n (a group's share) ≥ its number of strata, every non-empty stratum gets at least one
  item: a stratum left at 0 takes one from the stratum furthest above its exact quota that can
  spare one; when it is smaller some strata get none, and the plan says so (`warnings`);
- inside a stratum, the items (sorted by item_id) are put in a random order by numpy's
  Generator(seed), one full permutation per stratum, and the sample takes the first n_s: the
  sample depends on the seed and the item set, not on load order, and a larger n keeps a
  smaller n's items whenever its quotas are no smaller (nested samples: a resumed run can be
  extended with a larger --limit);
- the sample is returned in the frame's own order.

Strata per benchmark (registry `sample_strata`, strata_of): the item columns its package names
(a category, a gold count, a task × whether a mistake is present); a benchmark with control
items (`is_error` false) keeps them as a stratum of their own, so the error:control ratio of
the set is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

DEFAULT_SEED = 0
CONTROL_STRATUM = "control"
DESIGN_COLUMN = "is_error"  # erroneous vs control: the ratio a sample keeps first
STRATUM_COLUMN = "_stratum"
_MISSING = "(none)"


def strata_of(benchmark: str) -> tuple[str, ...]:
    """The columns a benchmark's sample is stratified over (its registry entry's
    `sample_strata`; a benchmark with controls gets them as a stratum, see stratum_frame)."""
    from core.registry import BENCHMARKS

    bench = BENCHMARKS.get(benchmark)
    if bench is None:
        return ("primary_category",)
    return (STRATUM_COLUMN,) if bench.has_controls else bench.sample_strata


def _has_controls(benchmark: str) -> bool:
    from core.registry import BENCHMARKS

    bench = BENCHMARKS.get(benchmark)
    return bool(bench and bench.has_controls)


@dataclass(frozen=True)
class SamplePlan:
    """What a run stores in runs.params['sample'] (item_ids keep a resume exact)."""

    seed: int
    n: int
    strata: list[str]
    counts: dict[str, int]
    item_ids: list[str]
    # not stored with the run: what the caller should tell the user (n below the strata)
    warnings: tuple[str, ...] = ()

    def as_params(self) -> dict:
        return {
            "seed": self.seed,
            "n": self.n,
            "strata": self.strata,
            "counts": self.counts,
            "item_ids": self.item_ids,
        }


def _key(values: Sequence[object]) -> str:
    parts = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            parts.append(_MISSING)
        else:
            parts.append(str(v))
    return " | ".join(parts)


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Items per stratum for a sample of n (largest remainder; ≥ 1 each when n ≥ #strata)."""
    sizes = {k: int(v) for k, v in sizes.items() if int(v) > 0}
    total = sum(sizes.values())
    n = max(0, min(int(n), total))
    if not sizes or n == 0:
        return {k: 0 for k in sizes}
    quota = {k: n * v / total for k, v in sizes.items()}
    alloc = {k: math.floor(q) for k, q in quota.items()}
    left = n - sum(alloc.values())
    order = sorted(sizes, key=lambda k: (-(quota[k] - alloc[k]), -sizes[k], k))
    for k in order[:left]:
        alloc[k] += 1
    if n >= len(sizes):
        for k in sorted((k for k in sizes if alloc[k] == 0), key=lambda k: (-quota[k], k)):
            donors = [d for d in sizes if alloc[d] >= 2]
            donor = max(donors, key=lambda d: (alloc[d] - quota[d], sizes[d], d))
            alloc[donor] -= 1
            alloc[k] += 1
    return alloc


def allocate_grouped(sizes: dict[str, int], n: int, group: dict[str, str]) -> dict[str, int]:
    """allocate() within design groups: n is split between the groups first (the set's
    erroneous:control ratio), then each group's share over its strata."""
    by_group: dict[str, dict[str, int]] = {}
    for k, v in sizes.items():
        by_group.setdefault(group.get(k, _MISSING), {})[k] = v
    if len(by_group) < 2:
        return allocate(sizes, n)
    shares = allocate({g: sum(m.values()) for g, m in by_group.items()}, n)
    out: dict[str, int] = {}
    for g, members in by_group.items():
        out.update(allocate(members, shares.get(g, 0)))
    return {k: out.get(k, 0) for k in sizes}


def stratified_sample(
    frame: pd.DataFrame,
    n: int,
    seed: int = DEFAULT_SEED,
    strata_cols: Sequence[str] = ("primary_category",),
    design_col: str | None = None,
) -> pd.DataFrame:
    """n rows of frame, stratified over strata_cols (see the module docstring); all rows when
    n ≥ len(frame). Needs an item_id column (the within-stratum order). With `design_col`
    (is_error), its groups' ratio is kept first."""
    if n < 1:
        raise ValueError("a sample needs n ≥ 1")
    if n >= len(frame):
        return frame
    cols = [c for c in strata_cols if c in frame.columns]
    keys = (
        pd.Series(
            [_key(row) for row in frame[cols].itertuples(index=False, name=None)], index=frame.index
        )
        if cols
        else pd.Series("all", index=frame.index)
    )
    sizes = cast("dict[str, int]", keys.value_counts().to_dict())  # keys: _key strings
    if design_col is not None and design_col in frame.columns:
        design = {k: _key([frame.at[i, design_col]]) for i, k in keys.items()}
        alloc = allocate_grouped(sizes, n, design)
    else:
        alloc = allocate(sizes, n)
    rng = np.random.default_rng(seed)
    chosen: list = []
    for key in sorted(alloc):  # fixed stratum order so a seed always draws the same
        members = sorted(frame.index[keys == key], key=lambda i: str(frame.at[i, "item_id"]))
        # a full permutation per stratum (the same draws whatever n is), of which the sample
        # takes a prefix: a larger n keeps the smaller sample's items (nested samples)
        order = rng.permutation(len(members))
        chosen.extend(members[j] for j in order[: alloc[key]])
    keep = frame.index.isin(chosen)
    return frame[keep]


def stratum_frame(frame: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    """frame with the columns strata_of(benchmark) names (with control items: its _stratum
    column = the primary category, or 'control' for control items)."""
    if not _has_controls(benchmark):
        return frame
    is_error = (
        frame["is_error"] if "is_error" in frame.columns else pd.Series(True, index=frame.index)
    )
    primary = frame["primary_category"] if "primary_category" in frame.columns else None
    values = [
        CONTROL_STRATUM
        if (e is not None and not pd.isna(e) and not bool(e))
        else (_key([primary.at[i]]) if primary is not None else _MISSING)
        for i, e in zip(frame.index, is_error)
    ]
    return frame.assign(**{STRATUM_COLUMN: values})


def plan_sample(
    items: pd.DataFrame, benchmark: str, n: int, seed: int = DEFAULT_SEED
) -> tuple[pd.DataFrame, SamplePlan]:
    """The stratified sample of a benchmark's items and the plan a run stores."""
    framed = stratum_frame(items, benchmark)
    cols = list(strata_of(benchmark))
    sample = stratified_sample(framed, n, seed, cols, design_col=DESIGN_COLUMN)
    present = [c for c in cols if c in sample.columns]
    keys = (
        [_key(r) for r in sample[present].itertuples(index=False, name=None)]
        if present
        else ["all"] * len(sample)
    )
    counts = {k: keys.count(k) for k in sorted(set(keys))}
    n_strata = len({_key(r) for r in framed[present].itertuples(index=False, name=None)})
    warnings: tuple[str, ...] = ()
    if len(sample) < len(items) and len(counts) < n_strata:
        warnings = (
            f"--limit {n} is too small for the item set's {n_strata} strata "
            f"({' × '.join(cols)}): {n_strata - len(counts)} of them get no item (the "
            "erroneous:control ratio is kept first); a larger --limit covers more of them",
        )
    plan = SamplePlan(
        seed=int(seed),
        n=int(n),
        strata=cols,
        counts=counts,
        item_ids=[str(i) for i in sample["item_id"]],
        warnings=warnings,
    )
    return items.loc[sample.index], plan


def n_controls(items: pd.DataFrame) -> int:
    """Control items (is_error false) in an items frame."""
    if "is_error" not in items.columns:
        return 0
    return int((items["is_error"].notna() & ~items["is_error"].fillna(True).astype(bool)).sum())
