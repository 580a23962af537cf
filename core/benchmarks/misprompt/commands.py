"""Mis-prompt's hooks of `import misprompt`, `run misprompt`, `metrics misprompt`
(`BENCHMARK.cli`, served by core/services/benchmark_commands.py). The work itself lives in items, task and metrics; this module only turns
flags into calls and results into lines.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from core.benchmarks.misprompt import judge as judge_mod
from core.benchmarks.misprompt.items import COLUMNS as IMPORT_COLUMNS
from core.benchmarks.misprompt.items import ItemImportError, default_set_name, import_file
from core.benchmarks.misprompt.metrics import (
    DEFAULT_BOOTSTRAP,
    RECALL_SUFFIX,
    UnknownSource,
    metrics_for_source,
    with_provenance,
)
from core.benchmarks.misprompt.task import (
    BENCHMARK,
    DEFAULT_MAX_TOKENS,
    MispromptTask,
    inconsistent_count,
)
from core.engine import bounds
from core.engine.endpoints import is_weak
from core.engine.runner import add_run_args, spec_from_args
from core.registry import BenchmarkCommands, Option, Options, Verb
from core.services.benchmark_commands import read_source, run_and_report, weak_checked, write_frame
from core.store import Store

# -- import misprompt -------------------------------------------------------------------------


IMPORT_OPTIONS = (
    Option(
        "path",
        help='CSV (or TSV), JSON (list or {"data": [...]}) or JSONL file with '
        "columns " + ", ".join(IMPORT_COLUMNS) + " (optional: group = the source items "
        "share; the metrics' intervals then resample groups)",
    ),
    Option(
        "--name",
        help="item set name (default: the file name without extension); "
        "re-importing a name replaces that set unless runs use it",
    ),
)


def main_import(args: argparse.Namespace) -> int:
    store = Store.open(args.db)
    name = args.name or default_set_name(args.path)
    try:
        n = import_file(store, args.path, name)
    except ItemImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    counts = store.rows(
        "SELECT is_error, count(*) FROM items WHERE item_set = ? GROUP BY 1", [name]
    )
    by = {bool(k): v for k, v in counts}
    print(
        f"imported {n} items into set {name!r}: {by.get(True, 0)} erroneous, "
        f"{by.get(False, 0)} controls"
    )
    return 0


# -- run misprompt ----------------------------------------------------------------------------


def configure_run(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run Mis-prompt items against a model under a setting, then have a judge label every "
        "response (six labels, SPEC §1). The judge defaults to the SAME endpoint as the model "
        "when no --judge-* flag is given; with the default local SmolLM2 that is a weak judge, "
        "so pass --judge-endpoint for real numbers. Re-run with the same --run-name to resume."
    )
    parser.add_argument(
        "--temperature",
        type=bounds.real("--temperature", 0.0, 2.0),
        default=0.0,
        help="model temperature (default 0, as in the paper)",
    )
    parser.add_argument(
        "--max-tokens",
        type=bounds.whole("--max-tokens", 1, bounds.MAX_TOKENS),
        default=DEFAULT_MAX_TOKENS,
        help=f"model max tokens (default {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument(
        "--judge-max-tokens",
        type=bounds.whole("--judge-max-tokens", 1, bounds.MAX_TOKENS),
        default=judge_mod.JUDGE_MAX_TOKENS,
        help=f"judge max tokens (default {judge_mod.JUDGE_MAX_TOKENS})",
    )
    add_run_args(parser, judge=True)


def main_run(args: argparse.Namespace) -> int:
    task = MispromptTask(
        setting=args.setting,
        passive=args.passive,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        judge_max_tokens=args.judge_max_tokens,
        judge_template=args.judge_template,
    )
    spec = spec_from_args(
        args,
        BENCHMARK,
        setting=args.setting,
        mode=task.mode,
        template_id=task.template_id,
        params=task.params(),
    )
    spec.params.update(weak_judge=is_weak(spec.judge or spec.endpoint))
    # runs.weak_model follows the endpoint's flag: a weak judge makes the verdicts weak too
    spec = weak_checked(spec, judged=True)
    store = Store.open(args.db, create=False)  # a run needs an item set: never a new file
    summary = run_and_report(store, spec, task, args)
    n_bad = inconsistent_count(store, spec.run_id)
    print(
        f"inconsistent verdicts (an 'accurate' label true while its 'attempt' is false; "
        f"kept as the judge said): {n_bad}"
    )
    return 0 if summary.status in ("done", "cancelled") else 1


# -- metrics misprompt ------------------------------------------------------------------------


METRICS_DESCRIPTION = (
    "Mis-prompt F1 (percent), one row per (source, model, setting, evaluator, category_level, "
    "category, metric), then n, ci_low, ci_high, judging. --source published prints the "
    "papers' tables unchanged (n and the interval empty: the tables give none; judging "
    "'published'); --source RUN scores a run per SPEC §1: n = erroneous items of the cell, "
    "ci_low,ci_high = bootstrap 95 percent over items (over groups when the item set has a "
    "`group` column), judging = the judging the numbers come from (name and template). A "
    "run without control items reports recall under metric names ending in _recall "
    "(precision is unavailable)."
)
METRICS_OPTIONS = (
    Option(
        "--source",
        default="published",
        help="`published`, a published table (misprompt:T6) or a run id",
    ),
    Option("--format", choices=("csv", "json"), default="csv"),
    Option(
        "--bootstrap",
        type=bounds.whole("--bootstrap", 0, bounds.MAX_DRAWS),
        default=DEFAULT_BOOTSTRAP,
        help="bootstrap draws for ci_low/ci_high where they are sampled (the average; labels "
        "of large cells: a small cell's labels are exact), more where a cell is small (0: none)",
    ),
    Option(
        "--seed", type=bounds.whole("--seed", 0, bounds.MAX_SEED), default=0, help="bootstrap seed"
    ),
    Option(
        "--judging",
        metavar="NAME",
        help="which judging of the run (see `rescore`); default: the run's latest finished judging",
    ),
)


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in ("f1", "ci_low", "ci_high"):
        if col in out:
            out[col] = out[col].astype(float).round(2)
    return out


def with_mode(rows: pd.DataFrame, diag: pd.DataFrame | None) -> pd.DataFrame:
    """rows with a `mode` column after `setting`: a run's runs.mode (proactive | passive); the
    papers' tables are all proactive (the Mis-prompt paper publishes no passive numbers)."""
    out = rows.copy()
    if diag is not None and len(diag):
        modes = dict(zip(diag["run_id"], diag["mode"]))
        mode = out["source"].map(modes).fillna("proactive")
    else:
        mode = pd.Series("proactive", index=out.index)
    out.insert(list(out.columns).index("setting") + 1, "mode", mode)
    return out


def main_metrics(args: argparse.Namespace) -> int:
    store = Store.open(args.db, create=False)  # a reader: never creates a file
    found = read_source(
        args,
        lambda store: metrics_for_source(
            store, args.source, draws=args.bootstrap, seed=args.seed, judging=args.judging
        ),
        UnknownSource,
    )
    if found is None:
        return 2
    rows, diag = found
    rows = with_provenance(store, rows, args.judging if diag is not None else None)
    write_frame(_rounded(with_mode(rows, diag)), args.format)
    if diag is not None and len(diag):
        d = diag.iloc[0]
        print(
            f"run {d.run_id}: {d.verdicts_ok} verdicts scored ({d.n_error} erroneous, "
            f"{d.n_control} control); {d.verdicts_failed} failed verdicts excluded; "
            f"{d.responses_failed} failed responses; {d.inconsistent} inconsistent verdicts "
            "(accurate without attempt; counted as given)",
            file=sys.stderr,
        )
        if d.n_control == 0:
            print(
                "no control items: precision is unavailable, values are recall "
                f"(metric names end in {RECALL_SUFFIX})",
                file=sys.stderr,
            )
    return 0


COMMANDS: BenchmarkCommands = BenchmarkCommands(
    import_=Options(IMPORT_OPTIONS, main_import),
    run=Verb(configure_run, main_run),
    metrics=Options(METRICS_OPTIONS, main_metrics, METRICS_DESCRIPTION),
)
