"""BIG-Bench Mistake's hooks of `import bbm`, `run bbm`, `metrics bbm` (`BENCHMARK.cli`,
served by core/services/benchmark_commands.py).

  python -m core import bbm PATH... [--name SET] [--task TASK] [--dyck-sample 592 --seed S]
  python -m core run bbm --items SET --method direct_trace|direct_step|cot_step [endpoint flags]
      [--prompts ours|paper --paper-prompts-dir DIR]
  python -m core metrics bbm --source published|RUN [--format csv|json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.benchmarks.bbm.items import ImportProblem, import_files
from core.engine import bounds
from core.registry import BenchmarkCommands, Option, Options, Verb
from core.services.benchmark_commands import read_source, run_and_report, weak_checked
from core.store import Store

IMPORT_OPTIONS = (
    Option(
        "paths", nargs="+", metavar="PATH", help="released JSONL file(s), e.g. word_sorting.jsonl"
    ),
    Option("--name", help="item set name (default: from the file names)"),
    Option(
        "--task",
        help="task of every trace when the file name does not "
        "say it (word_sorting, dyck_languages, ...)",
    ),
    Option(
        "--dyck-sample",
        type=bounds.whole("--dyck-sample", 1, bounds.MAX_ITEMS),
        metavar="N",
        help="keep N Dyck-languages traces drawn at the paper's 15/85 "
        "correct/incorrect-answer proportions (the paper's Dyck cells "
        "use 592); not the paper's exact sample",
    ),
    Option(
        "--seed",
        type=bounds.whole("--seed", 0, bounds.MAX_SEED),
        default=0,
        help="seed of the --dyck-sample draw (default 0)",
    ),
)


METRICS_OPTIONS = (
    Option(
        "--source", required=True, help="'published' (the paper's Tables 4, 5, 9) or a bbm run id"
    ),
    Option("--format", choices=("csv", "json"), default="csv"),
    Option(
        "--judging", metavar="NAME", help="a `rescore` judging of the run (default: its own scores)"
    ),
)


def configure_run(parser: argparse.ArgumentParser) -> None:
    from core.engine.runner import add_run_args

    add_run_args(parser)
    parser.add_argument(  # before --template; kept so old scripts still run, with a warning
        "--template-version", default=None, help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--max-tokens",
        type=bounds.whole("--max-tokens", 1, bounds.MAX_TOKENS),
        default=None,
        help="per call (default 64 / 16 / 512 by method)",
    )
    parser.add_argument(
        "--shots",
        type=bounds.whole("--shots", 0, bounds.MAX_SHOTS),
        default=0,
        metavar="K",
        help="solved traces of the same task shown first (the paper used 3; default 0 = zero-shot)",
    )
    parser.add_argument(
        "--shots-from",
        default="bbm-sample",
        metavar="SET",
        help="item set the exemplars come from (default: bbm-sample, the "
        "team-written sample); a trace is never its own exemplar",
    )
    parser.add_argument(
        "--prompts",
        choices=("ours", "paper"),
        default="ours",
        help="ours: data/prompts/bbm/ templates (default); paper: the "
        "paper's own 3-shot task-specific messages, read from "
        "--paper-prompts-dir",
    )
    parser.add_argument(
        "--paper-prompts-dir",
        metavar="DIR",
        help="folder mistake_finding_prompts/ of "
        "github.com/WHGTyen/BIG-Bench-Mistake (<task>_prompts.py files; "
        "read as data, never executed)",
    )


def _main_import(args: argparse.Namespace) -> int:
    store = Store.open(args.db)
    try:
        result = import_files(
            store,
            [Path(p) for p in args.paths],
            name=args.name,
            task=args.task,
            dyck_sample=args.dyck_sample,
            seed=args.seed,
        )
    except ImportProblem as exc:
        print(f"error: {len(exc.problems)} problem(s):", file=sys.stderr)
        print(str(exc), file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return 1
    info = result.info
    verb = "replaced" if result.replaced else "created"
    print(
        f"{verb} item set {result.item_set}: {result.n_items} traces "
        f"({info['with_mistake']} with a mistake, {info['without_mistake']} without)"
    )
    for task, d in info["tasks"].items():
        print(
            f"  {task}: {d['traces']} traces, {d['with_mistake']} with a mistake, "
            f"{d['answer_correct']} with a correct final answer"
        )
    sample = info.get("dyck_sample")
    if sample:
        paper = sample["paper"]
        print(
            f"Dyck languages: a subsample of {sample['traces']} of {sample['from']} traces "
            f"(seed {sample['seed']}): {sample['correct_ans']} with a correct final answer, "
            f"{sample['incorrect_ans']} incorrect — the paper's 15/85 proportions; "
            f"{sample['with_mistake']} with a mistake (the paper's sample: "
            f"{paper['with_mistake']}). This is NOT the paper's exact sample: the paper did not "
            "publish which traces it drew."
        )
    return 0


def _main_metrics(args: argparse.Namespace) -> int:
    from core.benchmarks.bbm.queries import UnknownSource, metrics_for_source

    frame = read_source(
        args, lambda store: metrics_for_source(store, args.source, args.judging), UnknownSource
    )
    if frame is None:
        return 2
    if "mode" not in frame.columns:  # the model is asked to find the mistake: passive
        frame = frame.copy()
        frame.insert(min(1, len(frame.columns)), "mode", "passive")
    if args.format == "json":
        import pandas as pd

        # an empty n / interval (published rows) is null, never NaN (not JSON)
        records = [
            {
                k: None if v is pd.NA or (isinstance(v, float) and v != v) else v
                for k, v in r.items()
            }
            for r in frame.astype(object).to_dict("records")
        ]
        json.dump(records, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        frame.to_csv(sys.stdout, index=False)
    return 0


def _template(args: argparse.Namespace) -> str | None:
    """The --template id; the old `--template-version vN` still works as a deprecated alias
    (mapped to bbm/<method>.vN, with a warning) so existing scripts keep running."""
    old = args.template_version
    if old is None or args.template:
        return args.template
    tid = f"bbm/{args.method}.v{str(old).strip().lower().removeprefix('v')}"
    print(
        f"warning: --template-version is deprecated; use --template {tid}",
        file=sys.stderr,
    )
    return tid


def _paper_prompts(store: Store, args: argparse.Namespace) -> tuple[dict, dict] | None:
    """The paper's prompts for every task of the item set (None after printing why not)."""
    from core.benchmarks.bbm.paper_prompts import SOURCE_URL, PaperPromptError, load_for_tasks

    if args.prompts != "paper":
        print("error: --paper-prompts-dir is only used with --prompts paper", file=sys.stderr)
        return None
    if not args.paper_prompts_dir:
        print(
            "error: --prompts paper needs --paper-prompts-dir DIR, the folder "
            f"mistake_finding_prompts/ of {SOURCE_URL} (not shipped with this project)",
            file=sys.stderr,
        )
        return None
    if args.shots:
        print(
            "error: --shots does not apply to --prompts paper (the paper's prompts carry "
            "their own three examples)",
            file=sys.stderr,
        )
        return None
    tasks = [
        r[0]
        for r in store.rows(
            "SELECT DISTINCT primary_category FROM items WHERE item_set = ? AND benchmark = 'bbm' "
            "ORDER BY 1",
            [args.items],
        )
    ]
    if not tasks:
        print(f"error: item set {args.items!r} has no BIG-Bench Mistake traces", file=sys.stderr)
        return None
    try:
        paper = load_for_tasks(args.paper_prompts_dir, tasks, args.method)
    except PaperPromptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    params = {
        "paper_prompts_dir": str(Path(args.paper_prompts_dir).resolve()),
        "paper_prompts_sha256": {t: p.sha256 for t, p in paper.items()},
        "paper_prompts_files": {t: Path(p.path).name for t, p in paper.items()},
    }
    print(
        f"prompts: the paper's own ({', '.join(sorted(paper))}) from {args.paper_prompts_dir}",
        file=sys.stderr,
    )
    return paper, params


def _max_tokens(store: Store, args: argparse.Namespace) -> int | None:
    """--max-tokens, else the limit a resumed run was started with (its default may have
    changed since: cot_step's follows the template's examples now, it was 512), else None (the
    method's default)."""
    if args.max_tokens is not None or not getattr(args, "run_name", None):
        return args.max_tokens
    stored = store.scalar(
        "SELECT TRY_CAST(json_extract(params, '$.max_tokens') AS INTEGER) FROM runs "
        "WHERE run_id = ? AND benchmark = 'bbm'",
        [args.run_name],
    )
    return None if stored is None else int(stored)


def _main_run(args: argparse.Namespace) -> int:
    """Run one method over an item set (resumable: re-use --run-name to finish a run)."""
    from core.benchmarks.bbm.task import BbmTask
    from core.engine.runner import spec_from_args

    store = Store.open(args.db, create=False)  # a run needs an item set: never a new file
    exemplars = {}
    if args.shots < 0:
        print("error: --shots must be ≥ 0", file=sys.stderr)
        return 2
    if args.shots:
        from core.benchmarks.bbm.task import load_exemplars

        exemplars = load_exemplars(store, args.shots_from)
        if not exemplars:
            print(
                f"error: --shots-from {args.shots_from!r} has no BIG-Bench Mistake traces",
                file=sys.stderr,
            )
            return 2
    paper: dict = {}
    paper_params: dict = {}
    if args.prompts == "paper" or args.paper_prompts_dir:
        found = _paper_prompts(store, args)
        if found is None:
            return 2
        paper, paper_params = found
    try:
        task = BbmTask(
            args.method,
            template=_template(args),
            max_tokens=_max_tokens(store, args),
            shots=args.shots,
            exemplars=exemplars,
            paper=paper,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    spec = spec_from_args(
        args,
        "bbm",
        setting=args.method,
        template_id=task.template_id,
        params={
            "method": args.method,
            "max_tokens": task.max_tokens,
            "temperature": task.temperature,
            "shots": args.shots,
            "shots_from": args.shots_from if args.shots else None,
            "prompts": "paper" if paper else "ours",
            **paper_params,
        },
    )
    # runs.weak_model follows the endpoint flag; a SmolLM served by URL is just as weak
    summary = run_and_report(store, weak_checked(spec), task, args)
    _warn_truncated(store, summary.run_id, task.max_tokens)
    return 0 if summary.status == "done" else 1


def _warn_truncated(store: Store, run_id: str, max_tokens: int | None) -> None:
    """At the end of a run: how many traces had an answer cut at max_tokens (status
    `truncated`, unscored) — a silent cut would read as a model that found no mistake."""
    n = store.scalar(
        "SELECT count(*) FROM results WHERE run_id = ? AND status = 'truncated'", [run_id]
    )
    if n:
        print(
            f"warning: {n} trace(s) had an answer cut at max_tokens={max_tokens} (status "
            "'truncated', not scored); re-run with a larger --max-tokens under a new --run-name",
            file=sys.stderr,
        )


COMMANDS: BenchmarkCommands = BenchmarkCommands(
    import_=Options(IMPORT_OPTIONS, _main_import),
    run=Verb(configure_run, _main_run),
    metrics=Options(METRICS_OPTIONS, _main_metrics),
)
