"""Benchmark: ErrorBench scoring of 4,290 responses and the 10,000-draw paired bootstrap.

    .venv/bin/python bench/bench_errorbench.py [--repeat 3] [--draws 10000]

Passages: the 143 built from ../shared/data/conll2014/official-2014.combined.m2 as the paper
does (file order, seed 0); without that file, the team sample's passages repeated to 143.
Responses: 6 synthetic models (core/benchmarks/errorbench/synth.py) × 5 conditions × 143 passages = 4,290
texts in the ERROR/TOTAL format, generated before timing. Timed end to end: parse every
response, extract and locate its edits, match them under three matchings, flatten, aggregate
(metrics table incl. ASI) — target ≤ 2 s. Then the paired bootstrap (blind → anchored) for the
6 models, 10,000 draws each: vectorised (target ≤ 2 s) and a plain Python loop on the same
draws, printed side by side with the ratio; their intervals must agree.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from core.benchmarks.errorbench.bootstrap import (  # noqa: E402
    draw_indices,
    paired_arrays,
    paired_bootstrap,
    paired_bootstrap_loop,
)
from core.benchmarks.errorbench.items import group_passages, items_frame, select_passages  # noqa: E402
from core.benchmarks.errorbench.m2 import read_m2  # noqa: E402
from core.benchmarks.errorbench.metrics import flatten, metrics_table, model_labels, score_frame  # noqa: E402
from core.benchmarks.errorbench.prompts import CONDITIONS  # noqa: E402
from core.benchmarks.errorbench.synth import DEFAULT_MODELS, synth_response  # noqa: E402

CONLL = ROOT.parent / "shared" / "data" / "conll2014" / "official-2014.combined.m2"
SAMPLE = ROOT / "data" / "samples" / "errorbench_sample.m2"
SCORE_TARGET_S = 2.0
BOOT_TARGET_S = 2.0


def passages() -> tuple[pd.DataFrame, str]:
    import json

    source = CONLL if CONLL.exists() else SAMPLE
    sentences = read_m2(source)
    sel = select_passages(group_passages(sentences), per_count=30, seed=0)
    items = items_frame(sel, sentences, "bench")
    if source == SAMPLE:  # repeat the sample's passages to the paper's 143
        reps = -(-143 // len(items))
        items = pd.concat(
            [items.assign(item_id=items["item_id"] + f"-{r}") for r in range(reps)],
            ignore_index=True,
        ).head(143)
    items["payload"] = [json.loads(p) for p in items["payload"]]
    return items, str(source.relative_to(ROOT.parent) if source == CONLL else source.name)


def responses(items: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for m, model in enumerate(DEFAULT_MODELS):
        for i, item in enumerate(items.to_dict("records")):
            for c, condition in enumerate(CONDITIONS):
                seed = (m * 1_000_003 + i) * 7 + c
                rows.append(
                    {
                        "run_id": f"run-{model.name}",
                        "model": model.name,
                        "item_id": item["item_id"],
                        "variant": condition,
                        "status": "ok",
                        "response": synth_response(item["payload"], condition, model, seed),
                    }
                )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--draws", type=int, default=10_000)
    args = parser.parse_args(argv)

    items, source = passages()
    resp = responses(items)
    print(
        f"passages: {len(items)} from {source}; responses: {len(resp)} "
        f"({len(DEFAULT_MODELS)} models × {len(CONDITIONS)} conditions)"
    )

    # -- scoring end to end --------------------------------------------------------------------
    times = []
    table = None
    for _ in range(args.repeat):
        t = time.perf_counter()
        scored = score_frame(resp, items)
        flat = flatten(scored)
        table = metrics_table(flat)
        times.append(time.perf_counter() - t)
    score_s = statistics.median(times)
    print(
        f"\nscore {len(resp)} responses end to end (parse, extract, locate, 3 matchings, "
        f"metrics): median {score_s:.3f} s of {args.repeat} "
        f"({score_s / len(resp) * 1e6:.0f} µs/response) — target ≤ {SCORE_TARGET_S:.1f} s "
        f"{'OK' if score_s <= SCORE_TARGET_S else 'MISSED'}"
    )
    assert table is not None
    show = table[table["condition"].isin(["blind", "anchored"])][
        ["model", "condition", "count_f1", "overlap_f05", "inflation", "mean_count_bias"]
    ]
    print(show.round(3).to_string(index=False))

    # -- paired bootstrap, 6 models ------------------------------------------------------------
    flat = flat.assign(model_label=model_labels(flat))
    arrays = [paired_arrays(flat, m) for m in flat["model_label"].drop_duplicates()]
    draws = [draw_indices(len(a.item_ids), args.draws, 0) for a in arrays]  # same for both
    t = time.perf_counter()
    fast = [paired_bootstrap(a, args.draws, 0, indices=d) for a, d in zip(arrays, draws)]
    fast_s = time.perf_counter() - t
    t = time.perf_counter()
    slow = [paired_bootstrap_loop(a, args.draws, 0, indices=d) for a, d in zip(arrays, draws)]
    slow_s = time.perf_counter() - t
    for f, s in zip(fast, slow):
        assert abs(f.ci_low - s.ci_low) < 1e-9 and abs(f.ci_high - s.ci_high) < 1e-9
    print(f"\npaired bootstrap, {len(arrays)} models × {args.draws} draws:")
    print(
        f"  vectorised   {fast_s:.3f} s — target ≤ {BOOT_TARGET_S:.1f} s "
        f"{'OK' if fast_s <= BOOT_TARGET_S else 'MISSED'}"
    )
    print(f"  Python loop  {slow_s:.3f} s   ratio loop / vectorised = {slow_s / fast_s:.0f}×")
    for f in fast:
        print(
            f"  {f.model:<20} Δcount {f.delta_count_f1:+.3f}  Δoverlap {f.delta_span_f05:+.3f}"
            f"  difference {f.difference:+.3f}  95% [{f.ci_low:+.3f}, {f.ci_high:+.3f}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
