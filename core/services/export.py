"""`python -m core export`: one row per response of a run, for analysis elsewhere.

Generic over benchmarks: every row carries the run (model, endpoint, setting, mode, template),
the item (id, category), the messages sent and the response; a multi-label judge's rows add its
labels with their rationales and flags; every benchmark's `scores` JSON is flattened into
`score_<key>` columns, so a code-scored benchmark's rows carry their parsed results without this
module knowing them. Run params are left out (they never hold keys, but exports travel).
Formats: JSONL (messages and scores as real JSON), CSV, Parquet (Spark, DuckDB, Polars...).
`--bundle DIR` instead writes one run whole, for another store (core/services/bundle.py).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from core.outfile import ExportError, write_atomic
from core.services.csvsafe import neutralise_formulas
from core.store import Store, resolve_db_path, runs_without_judging

FORMATS = ("jsonl", "csv", "parquet")

_SQL = """
SELECT r.run_id, ru.benchmark, ru.kind, ru.model, ru.endpoint, ru.setting, ru.mode,
       ru.template_id, ru.weak_model, ru.item_set, r.item_id, r.variant, r.epoch,
       i.is_error, i.primary_category, i.secondary_category,
       r.status, r.messages, r.response, r.error, r.attempts, r.prompt_tokens,
       r.completion_tokens, r.latency_ms, r.cost_usd, r.cached,
       CASE WHEN v.labels IS NULL THEN coalesce(v.metadata, r.scores) ELSE r.scores END
           AS scores,
       j.judging, v.status AS verdict_status, v.judge_model, v.answer, v.correct, v.score,
       v.labels, v.explanation,
       CASE WHEN v.labels IS NOT NULL THEN v.metadata END AS judge_metadata,
       v.parse_note AS judge_parse_note, v.raw AS judge_raw, v.error AS judge_error, r.created_at
FROM responses r
JOIN runs ru USING (run_id)
LEFT JOIN items i ON i.item_set = ru.item_set AND i.item_id = r.item_id
LEFT JOIN (SELECT run_id, coalesce(?, judging) AS judging FROM current_judgings) j
       ON j.run_id = r.run_id
LEFT JOIN results v ON v.run_id = r.run_id AND v.judging = j.judging AND v.item_id = r.item_id
                   AND v.variant = r.variant AND v.epoch = r.epoch
WHERE list_contains(?, r.run_id)
ORDER BY r.run_id, r.item_id, r.variant, r.epoch
"""

# The record's columns (core/engine/results.py), dropped when no exported row has a value in them.
_RESULT_COLUMNS = [
    "verdict_status",
    "judge_model",
    "answer",
    "correct",
    "score",
    "explanation",
    "judge_parse_note",
    "judge_raw",
    "judge_error",
]


def safe_csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` safe to open in a spreadsheet (core.services.csvsafe: formula-like text cells
    get a leading apostrophe; numbers stay numbers). The CLI export and the pages' downloads
    share it."""
    return neutralise_formulas(frame)


def render_report(frame: pd.DataFrame, fmt: str, header: dict[str, Any]) -> str:
    """A command's result table as printed: csv (formulas neutralised), json (the header's
    keys plus "rows"), or a table under `key: value` header lines."""
    if fmt == "csv":
        return str(safe_csv_frame(frame).to_csv(index=False))
    if fmt == "json":
        records = json.loads(frame.to_json(orient="records"))
        return json.dumps({**header, "rows": records}, indent=2) + "\n"
    lines = [f"{k}: {v}" for k, v in header.items()]
    body = frame.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="")
    return "\n".join([*lines, "", body if len(frame) else "(none)"]) + "\n"


def _json(value: Any) -> Any:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, (dict, list)):
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def resolve_runs(store: Store, sources: Sequence[str]) -> list[str]:
    """Run ids from --source values ('RUN', 'run:RUN', or comma-separated); unknown -> error."""
    wanted: list[str] = []
    for source in sources:
        for part in str(source).split(","):
            part = part.strip()
            if part.startswith("run:"):
                part = part[4:]
            if part:
                wanted.append(part)
    if not wanted:
        raise ExportError("no run given: --source RUN_ID")
    known = {
        r[0] for r in store.rows("SELECT run_id FROM runs WHERE list_contains(?, run_id)", [wanted])
    }
    missing = [w for w in wanted if w not in known]
    if missing:
        raise ExportError(f"unknown run(s): {', '.join(missing)} (see `python -m core runs`)")
    return list(dict.fromkeys(wanted))


def export_frame(store: Store, run_ids: Sequence[str], judging: str | None = None) -> pd.DataFrame:
    """The export rows; `messages` and `scores` are Python objects (lists/dicts). Verdicts (and
    a re-scored run's scores) are each run's current judging's, or `judging`'s when named;
    column `judging` says which."""
    if judging is not None:
        missing = runs_without_judging(store, run_ids, judging)
        if missing:
            raise ExportError(
                f"run(s) {', '.join(missing)} have no judging {judging!r} "
                "(see `python -m core rescore`)"
            )
    frame = store.df(_SQL, [judging, list(run_ids)])
    frame["messages"] = frame["messages"].map(_json)
    frame["scores"] = frame["scores"].map(_json)
    _spread_labels(frame)
    # Columns of the record nobody filled (a benchmark without a judge): dropped.
    if len(frame):
        frame = frame.drop(columns=[c for c in _RESULT_COLUMNS if frame[c].isna().all()])
    if not (frame["epoch"] > 1).any():  # runs asked once (`--epochs 1`): no epoch column
        frame = frame.drop(columns=["epoch"])
    keys: list[str] = []
    for scores in frame["scores"]:
        if isinstance(scores, dict):
            keys.extend(k for k in scores if k not in keys)
    for key in keys:
        frame[f"score_{key}"] = frame["scores"].map(
            lambda s, k=key: _scalar(s.get(k)) if isinstance(s, dict) else None
        )
    for col in ("created_at",):
        frame[col] = frame[col].astype(str)
    return frame


def _spread_labels(frame: pd.DataFrame) -> None:
    """A multi-label judge's record as columns: one per label (its value), `<label>_rationale`
    from `metadata.rationales`, then the judge's other metadata fields by name."""
    labels = frame.pop("labels").map(lambda v: _json(v) or {})
    metadata = frame.pop("judge_metadata").map(lambda v: _json(v) or {})
    names: list[str] = []
    for row in labels:
        names.extend(k for k in row if k not in names)
    extra: list[str] = []
    for row in metadata:
        extra.extend(k for k in row if k != "rationales" and k not in extra)
    at = list(frame.columns).index("explanation")
    for name in names:
        frame.insert(at, name, labels.map(lambda r, k=name: r.get(k)))
        at += 1
    for name in names:
        frame.insert(
            at,
            f"{name}_rationale",
            metadata.map(lambda m, k=name: (m.get("rationales") or {}).get(k)),
        )
        at += 1
    for name in extra:
        frame.insert(at, name, metadata.map(lambda m, k=name: _scalar(m.get(k))))
        at += 1


def _scalar(value: Any) -> Any:
    """Scores nested deeper than one level become JSON text in flat formats."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def _flat(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in ("messages", "scores"):
        out[col] = out[col].map(lambda v: None if v is None else json.dumps(v, ensure_ascii=False))
    return out


def to_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "jsonl":
        records = frame.to_dict(orient="records")
        lines = [
            json.dumps({k: _plain(v) for k, v in r.items()}, ensure_ascii=False) for r in records
        ]
        return ("\n".join(lines) + ("\n" if lines else "")).encode()
    if fmt == "csv":
        return safe_csv_frame(_flat(frame)).to_csv(index=False).encode()
    if fmt == "parquet":
        buffer = io.BytesIO()
        flat = _flat(frame)
        for col in flat.columns:  # mixed-type score columns: keep them as text
            if flat[col].dtype == object:
                kinds = {type(v) for v in flat[col] if v is not None and v == v}
                if len(kinds) > 1:
                    flat[col] = flat[col].map(lambda v: None if v is None or v != v else str(v))
        flat.to_parquet(buffer, index=False)
        return buffer.getvalue()
    raise ExportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _plain(value: Any) -> Any:
    """JSON-safe scalars (numpy types, NaN -> null)."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        try:
            return value.item()
        except (AttributeError, ValueError):
            pass
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def check_out_path(out: str | Path, db: str | Path | None, force: bool = False) -> Path:
    """Refuse a target that would destroy something: the database (always), an existing file
    (unless force), a directory, or a folder that does not exist. Checked before anything is
    read, so a refusal leaves every file as it was."""
    path = Path(out).expanduser()
    resolved = path.resolve()
    if db is not None:
        db_path = Path(db).expanduser().resolve()
        guarded = [db_path, db_path.with_name(db_path.name + ".wal")]
        for target in guarded:
            same = resolved == target
            if not same and path.exists() and target.exists():
                try:
                    same = os.path.samefile(path, target)
                except OSError:
                    same = False
            if same:
                raise ExportError(
                    f"--out {out} is the database file ({db_path}); exporting "
                    "onto it would destroy it. Choose another --out path."
                )
    if path.is_dir():
        raise ExportError(f"--out {out} is a directory; give a file path, e.g. {path / 'run.csv'}")
    parent = resolved.parent
    if not parent.is_dir():
        raise ExportError(
            f"--out {out}: folder {parent} does not exist (or is not a folder); create it first"
        )
    if (path.exists() or path.is_symlink()) and not force:
        raise ExportError(
            f"--out {out} already exists; pass --force to replace it, or choose another path"
        )
    return path


def export(
    store: Store,
    sources: Sequence[str],
    fmt: str,
    out: str | Path,
    *,
    force: bool = False,
    judging: str | None = None,
) -> int:
    """Write the runs' rows to `out` atomically; refuses an existing file unless force."""
    path = check_out_path(out, store.path, force)
    runs = resolve_runs(store, sources)
    frame = export_frame(store, runs, judging)
    data = to_bytes(frame, fmt)
    write_atomic(path, data)
    return len(frame)


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.add_argument(
        "--source",
        action="append",
        required=True,
        metavar="RUN",
        help="run id (repeat, or comma-separate, for several runs)",
    )
    parser.add_argument(
        "--format",
        choices=(*FORMATS, "eee"),
        default=None,
        help="output format (default: from --out's extension, else jsonl); eee: Every Eval "
        "Ever instance JSONL at --out plus its aggregate JSON beside it (one run)",
    )
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="file to write (never the database; an existing file only with --force)",
    )
    parser.add_argument(
        "--bundle",
        metavar="DIR",
        help="instead of --out: write one run with everything it needs (Parquet files and "
        "manifest.json) into folder DIR, new or empty, for `python -m core import run DIR`",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out if it exists (it is replaced whole, atomically)",
    )
    parser.add_argument(
        "--judging",
        default=None,
        metavar="NAME",
        help="which judging's verdicts/scores (see `rescore`); default: each "
        "run's latest finished judging",
    )


def main(args: argparse.Namespace) -> int:
    if args.bundle is not None or args.out is None:
        return _bundle_main(args)
    fmt = args.format
    if fmt is None:
        suffix = Path(args.out).suffix.lower().lstrip(".")
        fmt = suffix if suffix in FORMATS else "jsonl"
    try:
        # before opening the database: a refused --out must leave the file byte-for-byte
        check_out_path(args.out, resolve_db_path(args.db), args.force)
        store = Store.open(args.db, create=False)
        if fmt == "eee":
            return _eee_main(store, args)
        n = export(store, args.source, fmt, args.out, force=args.force, judging=args.judging)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {n} rows to {args.out} ({fmt})")
    return 0


def _eee_main(store: Store, args: argparse.Namespace) -> int:
    """`export --format eee` (core/sources/eee_export.py): one run as Every Eval Ever files."""
    from core.sources.eee_export import write_eee

    runs = resolve_runs(store, args.source)
    if len(runs) != 1:
        raise ExportError(f"--format eee writes one run; {len(runs)} given ({', '.join(runs)})")
    if args.judging is not None and runs_without_judging(store, runs, args.judging):
        raise ExportError(f"run {runs[0]} has no judging {args.judging!r}")
    out = Path(args.out)
    if out.suffix.lower() != ".jsonl":
        raise ExportError("--format eee writes instance JSONL: give --out NAME.jsonl")
    check_out_path(out.with_suffix(".json"), store.path, args.force)
    n, summary = write_eee(store, runs[0], out, args.judging)
    print(f"wrote {n} instance records to {out} and the aggregate to {summary} (eee)")
    return 0


def _bundle_main(args: argparse.Namespace) -> int:
    """`export --source RUN --bundle DIR` (core/services/bundle.py)."""
    from core.services import bundle

    if args.bundle is None:
        print("error: give --out PATH (rows of runs) or --bundle DIR (one run)", file=sys.stderr)
        return 2
    clash = [f for f, v in (("--out", args.out), ("--format", args.format),
                            ("--judging", args.judging), ("--force", args.force)) if v]  # fmt: skip
    if clash:
        print(
            f"error: --bundle writes one whole run (every judging) and never replaces another "
            f"run's bundle; it takes no {', '.join(clash)}",
            file=sys.stderr,
        )
        return 2
    try:
        store = Store.open(args.db, create=False)
        runs = resolve_runs(store, args.source)
        if len(runs) != 1:
            raise ExportError(f"--bundle holds one run; {len(runs)} given ({', '.join(runs)})")
        written = bundle.export_bundle(store, runs[0], args.bundle)
    except (ExportError, bundle.BundleError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    manifest = written.manifest
    if manifest["status"] not in ("done", "failed", "cancelled", "interrupted"):
        print(
            f"note: run {runs[0]!r} is {manifest['status']!r}: the bundle holds what it had "
            "done so far",
            file=sys.stderr,
        )
    action = "replaced the bundle" if written.replaced else "wrote a bundle"
    print(f"{action} of run {runs[0]!r} in {args.bundle}:")
    for name, entry in manifest["files"].items():
        print(f"  {name:<22} {entry['rows']:>8} rows")
    print(f"  {bundle.MANIFEST:<22} schema v{manifest['schema_version']}, sha256 of every file")
    return 0
