"""ErrorBench's hooks of `import m2`, `m2-score`, `run errorbench`, `metrics errorbench`
(`BENCHMARK.cli`, served by core/services/benchmark_commands.py).

Also `import_builtin` for `init` (the team-written data/samples/errorbench_sample.m2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb
import pandas as pd

from core.benchmarks.errorbench import NAME as BENCHMARK
from core.benchmarks.errorbench.items import Selection, group_passages, items_frame, select_passages
from core.benchmarks.errorbench.m2 import M2Error, Sentence, essays_from_sgml, read_input, read_m2
from core.benchmarks.errorbench.prompts import (
    MAX_TOKENS,
    TEMPERATURE,
    TEMPLATE_ID,
)
from core.engine import bounds
from core.registry import BenchmarkCommands, Option, Options, Verb
from core.services.benchmark_commands import run_and_report, weak_checked
from core.store import Store, replace_item_set, runs_without_judging

DEFAULTS = {"per_count": 30, "min_errors": 3, "max_errors": 7, "seed": 0}


# -- configure ----------------------------------------------------------------------------------


IMPORT_OPTIONS = (
    Option("m2_path", metavar="M2_PATH", help="M2 file (all annotators)"),
    Option(
        "--sgml",
        metavar="SGML_PATH",
        help="CoNLL SGML with <DOC nid=…> essays: group within essays "
        "(default: file order, which reproduces the paper's counts)",
    ),
    Option("--name", help="item set name (default: the M2 file's stem)"),
    Option(
        "--per-count",
        type=bounds.whole("--per-count", 1, bounds.MAX_ITEMS),
        default=DEFAULTS["per_count"],
        help="passages sampled per error count N (default 30)",
    ),
    Option(
        "--min-errors",
        type=bounds.whole("--min-errors", 1, bounds.MAX_ERRORS),
        default=DEFAULTS["min_errors"],
    ),
    Option(
        "--max-errors",
        type=bounds.whole("--max-errors", 1, bounds.MAX_ERRORS),
        default=DEFAULTS["max_errors"],
    ),
    Option(
        "--seed",
        type=bounds.whole("--seed", 0, bounds.MAX_SEED),
        default=DEFAULTS["seed"],
        help="sampling seed (default 0)",
    ),
    Option("--format", choices=("text", "json"), default="text"),
)


SCORE_OPTIONS = (
    Option("--gold", required=True, metavar="GOLD.m2"),
    Option("--hyp", required=True, metavar="HYP.m2"),
    Option(
        "--gold-annotator",
        type=bounds.whole("--gold-annotator", 0, 1_000_000),
        action="append",
        metavar="K",
        help="gold annotator id; repeat for multiple references (per "
        "sentence the best one, as ERRANT); default: all",
    ),
    Option(
        "--hyp-annotator",
        type=bounds.whole("--hyp-annotator", 0, 1_000_000),
        default=0,
        metavar="K",
        help="annotator id of the hypothesis edits (default 0)",
    ),
    Option("--format", choices=("text", "json"), default="text"),
)


def configure_run(parser: argparse.ArgumentParser) -> None:
    from core.engine.runner import add_run_args

    add_run_args(parser)


METRICS_OPTIONS = (
    Option(
        "--source",
        required=True,
        action="append",
        metavar="RUN",
        help="ErrorBench run id (repeat or comma-separate for several "
        "models; 'all' for every ErrorBench run)",
    ),
    Option("--format", choices=("csv", "json"), default="csv"),
    Option(
        "--bootstrap",
        action="store_true",
        help="per model: paired bootstrap of (ΔCount-F1 − ΔSpan-F0.5), blind → anchored",
    ),
    Option("--draws", type=bounds.whole("--draws", 1, bounds.MAX_DRAWS), default=10_000),
    Option("--seed", type=bounds.whole("--seed", 0, bounds.MAX_SEED), default=0),
    Option(
        "--span",
        choices=("overlap", "strict", "detection"),
        default="overlap",
        help="span matching for --bootstrap",
    ),
    Option(
        "--ci-of",
        choices=("count_f1", "strict_f05", "detection_f05", "overlap_f05"),
        default="overlap_f05",
        help="the statistic whose 95%% interval ci_low,ci_high give (a bootstrap over "
        "passages, over essays when the item set records them); ci_of names it",
    ),
    Option(
        "--no-errant", action="store_true", help="skip the optional ERRANT re-scoring (errant_f05)"
    ),
    Option(
        "--judging",
        metavar="NAME",
        help="the scores a `rescore` judging stored (default: the "
        "responses scored now with the current scorer)",
    ),
)


# -- import -------------------------------------------------------------------------------------


def build_selection(
    m2_path: Path,
    sgml_path: Path | None = None,
    *,
    per_count: int = 30,
    min_errors: int = 3,
    max_errors: int = 7,
    seed: int = 0,
) -> tuple[list[Sentence], Selection]:
    sentences = read_m2(m2_path)
    essays = None
    if sgml_path is not None:
        sgml_text = read_input(sgml_path)  # names the file (and line) on any problem
        essays = essays_from_sgml(sentences, sgml_text, str(sgml_path))
    passages = group_passages(sentences, essays=essays)
    selection = select_passages(
        passages, per_count=per_count, min_errors=min_errors, max_errors=max_errors, seed=seed
    )
    return sentences, selection


def write_item_set(
    store: Store,
    name: str,
    origin: str,
    sentences: list[Sentence],
    selection: Selection,
    info: dict,
) -> int:
    """Replace the item set `name` atomically (nothing partial on failure)."""
    frame = items_frame(selection, sentences, name)

    def write(con: duckdb.DuckDBPyConnection) -> int:
        replace_item_set(con, name, BENCHMARK, frame, origin=origin, info=info)
        return len(frame)

    return store.transaction(write)


def summary(
    name: str,
    m2_path: Path,
    sgml: Path | None,
    sentences: list[Sentence],
    selection: Selection,
    params: dict,
) -> dict:
    return {
        "item_set": name,
        "m2": str(m2_path),
        "sgml": str(sgml) if sgml else None,
        "grouping": "essay" if sgml else "file",
        "sentences": len(sentences),
        "groups": selection.total_groups,
        "passages": len(selection.passages),
        **params,
        "eligible_per_count": {str(k): v for k, v in selection.eligible_per_count.items()},
        "selected_per_count": {str(k): v for k, v in selection.selected_per_count.items()},
        "template_id": TEMPLATE_ID,
    }


def import_m2(
    store: Store,
    m2_path: Path,
    name: str,
    sgml: Path | None = None,
    origin: str | None = None,
    **params: int,
) -> dict:
    params = {**DEFAULTS, **params}
    sentences, selection = build_selection(m2_path, sgml, **params)
    if not selection.passages:
        raise M2Error(
            f"{m2_path}: no passage of 4 sentences has {params['min_errors']}–"
            f"{params['max_errors']} errors, so there is nothing to import; nothing "
            f"was written (an existing set {name!r} keeps its items)"
        )
    info = summary(name, m2_path, sgml, sentences, selection, params)
    write_item_set(store, name, origin or str(m2_path), sentences, selection, info)
    return info


def import_builtin(store: Store, path: Path, name: str) -> int:
    """For `init`: the team-written sample, file-order grouping, default parameters."""
    info = import_m2(store, Path(path), name, origin="builtin")
    return int(info["passages"])


def _main_import(args: argparse.Namespace) -> int:
    m2_path = Path(args.m2_path)
    name = args.name or m2_path.stem
    store = Store.open(args.db)
    try:
        info = import_m2(
            store,
            m2_path,
            name,
            Path(args.sgml) if args.sgml else None,
            per_count=args.per_count,
            min_errors=args.min_errors,
            max_errors=args.max_errors,
            seed=args.seed,
        )
    except (M2Error, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return 1
    if args.format == "json":
        json.dump(info, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    grouping = (
        "within essays (SGML)" if info["grouping"] == "essay" else "file order, ignoring essays"
    )
    print(
        f"item set {name}: {info['passages']} passages from {info['sentences']} sentences "
        f"({info['groups']} groups of 4, grouping: {grouping}; seed {info['seed']}, up to "
        f"{info['per_count']} per N)"
    )
    print("   N  eligible  selected")
    for n, eligible in info["eligible_per_count"].items():
        print(f"{n:>4}  {eligible:>8}  {info['selected_per_count'][n]:>8}")
    return 0


# -- m2-score -----------------------------------------------------------------------------------


def _main_score(args: argparse.Namespace) -> int:
    from core.benchmarks.errorbench.m2score import annotator_coverage, chosen_annotators, score_m2

    try:
        gold = read_m2(args.gold)
        hyp = read_m2(args.hyp)
        result = score_m2(
            gold, hyp, gold_annotators=args.gold_annotator, hyp_annotator=args.hyp_annotator
        )
    except M2Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # a sentence without a line from the chosen annotator is scored as having no gold edits:
    # say how many, since a combined file may simply not list that annotator there
    coverage = annotator_coverage(gold, chosen_annotators(gold, args.gold_annotator))
    for line in coverage.warnings():
        print(line, file=sys.stderr)
    out = {m: c.scores() for m, c in result.items()}
    if args.format == "json":
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(
        f"{'matching':<10} {'tp':>6} {'fp':>6} {'fn':>6} {'precision':>9} {'recall':>7} {'f05':>7}"
    )
    for m, s in out.items():
        print(
            f"{m:<10} {s['tp']:>6} {s['fp']:>6} {s['fn']:>6} {s['precision']:>9.4f} "
            f"{s['recall']:>7.4f} {s['f05']:>7.4f}"
        )
    return 0


# -- run ----------------------------------------------------------------------------------------


def _main_run(args: argparse.Namespace) -> int:
    from core.benchmarks.errorbench.prompts import load as load_template
    from core.benchmarks.errorbench.prompts import parse_conditions
    from core.benchmarks.errorbench.task import ErrorBenchTask
    from core.engine.runner import spec_from_args

    try:
        conditions = parse_conditions(args.conditions)
        template_id = load_template(args.template).id
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    store = Store.open(args.db, create=False)  # a run needs an item set: never a new file
    found = store.rows("SELECT benchmark FROM item_sets WHERE name = ?", [args.items])
    if not found or found[0][0] != BENCHMARK:
        sets = [
            r[0]
            for r in store.rows(
                "SELECT name FROM item_sets WHERE benchmark = ? ORDER BY name", [BENCHMARK]
            )
        ]
        what = "is not an ErrorBench set" if found else "does not exist"
        print(
            f"error: item set {args.items!r} {what}; ErrorBench sets: "
            f"{', '.join(sets) or 'none'} (import one with `python -m core import m2 PATH`)",
            file=sys.stderr,
        )
        return 2
    task = ErrorBenchTask(conditions=conditions, template_id=template_id)
    spec = spec_from_args(
        args,
        BENCHMARK,
        setting=",".join(conditions),
        template_id=template_id,
        params={"conditions": conditions, "temperature": TEMPERATURE, "max_tokens": MAX_TOKENS},
    )
    summary = run_and_report(store, weak_checked(spec), task, args)
    print(f"metrics: python -m core metrics errorbench --source {spec.run_id}")
    return 0 if summary.status in ("done", "cancelled") else 1


# -- metrics ------------------------------------------------------------------------------------


def _main_metrics(args: argparse.Namespace) -> int:
    from core.benchmarks.errorbench import queries
    from core.benchmarks.errorbench.metrics import METRIC_COLUMNS

    store = Store.open(args.db, create=False)
    try:
        run_ids = tuple(queries.resolve_sources(store, args.source))
    except queries.UnknownSource as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    missing = [] if args.judging is None else runs_without_judging(store, run_ids, args.judging)
    if missing:
        print(
            f"error: run(s) {', '.join(missing)} have no judging {args.judging!r} "
            "(see `python -m core rescore`)",
            file=sys.stderr,
        )
        return 2
    if args.bootstrap:
        table = queries.bootstrap(store, run_ids, span=args.span, draws=args.draws, seed=args.seed)
    else:
        use_errant = False
        if not args.no_errant:
            from core.benchmarks.errorbench.errant_scoring import available

            use_errant = available()
            if use_errant:
                print("ERRANT re-scoring (errant_f05); --no-errant skips it", file=sys.stderr)
        table = queries.metrics(store, run_ids, errant=use_errant, judging=args.judging)
        cols = METRIC_COLUMNS + (["errant_f05"] if "errant_f05" in table.columns else [])
        if table.get("unreadable", pd.Series(dtype=float)).fillna(0).sum():
            # a structured template's answers nothing could be read from: counted, not scored
            cols.append("unreadable")
        _essay_note(table)
        table = with_interval(store, table, args.ci_of, args.judging)[cols + STAT_COLUMNS]
    _print_table(table, args.format)
    return 0


STAT_COLUMNS = ["n", "ci_of", "ci_low", "ci_high", "judging"]


def with_interval(
    store: Store, table: pd.DataFrame, ci_of: str, judging: str | None
) -> pd.DataFrame:
    """The metrics table with issue 18's columns: n (passages), ci_of (the statistic the
    interval is of), ci_low, ci_high and judging (the one named, else the run's own
    'default': these numbers are the responses scored now, never a later rescore's)."""
    from core.services.labels import judgings_shown

    out = table.copy()
    out["n"] = out["n"].astype("Int64")
    out["ci_of"] = ci_of
    out["ci_low"] = out[f"{ci_of}_ci_low"]
    out["ci_high"] = out[f"{ci_of}_ci_high"]
    runs = [str(r) for r in out["run_id"].drop_duplicates()]
    shown = judgings_shown(store, runs, judging or "default")
    out["judging"] = [shown.get(str(r), "") for r in out["run_id"]]
    return out


def _essay_note(table: pd.DataFrame) -> None:
    """One stderr line on how the intervals were drawn (over essays or over passages)."""
    if table.empty:
        return
    print(
        "intervals: 95% percentile bootstrap (2000 draws) over "
        + (
            "essays (passages of one essay resampled together)"
            if "n_clusters" in table and (table["n_clusters"] < table["n"]).any()
            else "passages (the item set records no essays)"
        ),
        file=sys.stderr,
    )


def _print_table(table: pd.DataFrame, fmt: str) -> None:
    if "mode" not in table.columns:  # ErrorBench asks the model to find errors: passive
        table = table.copy()
        table.insert(min(1, len(table.columns)), "mode", "passive")
    if fmt == "json":
        from core.benchmarks.errorbench.queries import nan_to_none

        json.dump(nan_to_none(table), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        table.to_csv(sys.stdout, index=False)


def import_bytes(store: Store, data: bytes, filename: str, name: str) -> int:
    """The Import page's upload: an M2 file's bytes, grouped and sampled like `import m2` with
    default parameters; returns the number of passages. Problems name the uploaded file."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        try:
            info = import_m2(store, path, name, origin=filename)
        except M2Error as exc:
            raise M2Error(str(exc).replace(str(path), Path(filename).name)) from None
    return int(info["passages"])


COMMANDS: BenchmarkCommands = BenchmarkCommands(
    import_=Options(IMPORT_OPTIONS, _main_import),
    run=Verb(configure_run, _main_run),
    metrics=Options(METRICS_OPTIONS, _main_metrics),
    extra={("m2-score",): Options(SCORE_OPTIONS, _main_score)},
)
