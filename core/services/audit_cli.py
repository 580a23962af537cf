"""`python -m core audit ppi`: judge-corrected (prediction-powered) estimates of a run's label
rates and F1 from the people's labels of an audit, as a table, CSV or JSON (issue 18, point 4).

    python -m core audit ppi --run RUN [--audit NAME] [--judging NAME] [--lam 1]
                             [--format table|csv|json]

`--audit` alone takes every run of that audit; `--run` alone takes all the people's labels of the
run (whatever audit they were drawn in). Columns: see docs/grid-and-audit.md ("Judge-corrected
estimates"); the math is core/ppi.py.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from core.engine import bounds
from core.services import audit
from core.services import judge_trust as jt
from core.services.export import render_report
from core.store import Store


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    from core.cli import add_db_arg

    subs = parser.add_subparsers(dest="audit_command", metavar="SUBCOMMAND", required=True)
    ppi = subs.add_parser(
        "ppi",
        help="judge-only vs prediction-powered (PPI++) estimate of each label's rate and F1",
        description="Judge-only vs prediction-powered (PPI++) estimate of each label's rate and "
        "F1, with the 95% interval, n_human, n_judge and the effective n.",
    )
    ppi.add_argument("--run", action="append", metavar="RUN", help="a run (repeatable)")
    ppi.add_argument("--audit", metavar="NAME", help="people's labels of this audit's sample only")
    ppi.add_argument("--judging", metavar="NAME", help="this judging (default: each run's current)")
    ppi.add_argument(
        "--lam",
        type=bounds.real("--lam", 0.0, 1.0),
        default=None,
        help="fixed PPI weight of the judge (1 = plain PPI, 0 = people only; default: PPI++ tuned)",
    )
    ppi.add_argument("--format", choices=("table", "csv", "json"), default="table")
    add_db_arg(ppi)


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db, create=False)
    try:
        if not args.run and not args.audit:
            raise audit.AuditError("give --run RUN, --audit NAME, or both")
        runs = jt.ppi_runs(store, args.audit, args.run)
        frame = jt.audit_ppi(store, args.audit, runs, args.judging, args.lam)
        flags = jt.family_flags(store, runs)
        changes = [jt.verdict_changes(store, r, args.judging) for r in runs]
    except audit.AuditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    header: dict[str, Any] = {
        "people": f"audit {args.audit}" if args.audit else "all human labels of the run",
        "method": "PPI++ (lambda tuned)" if args.lam is None else f"PPI, lambda = {args.lam}",
        "interval": "95%, normal; F1 by the delta method on the TP and FP rates",
    }
    for row in flags.to_dict("records"):
        if row["same_family"]:
            header[f"same family ({row['run_id']})"] = (
                f"model {row['model']} and judge {row['judge_model']} are both {row['same_family']}"
            )
    for run_id, change in zip(runs, changes):
        header[f"verdicts changed on re-judging ({run_id})"] = (
            ", ".join(
                f"{r.label} {r.share_changed:.1%} of {r.n} (k = {r.k})" for r in change.itertuples()
            )
            if len(change)
            else jt.NOT_MEASURED
        )
    sys.stdout.write(render_report(frame, args.format, header))
    return 0
