"""`export --source RUN --format eee --out X.jsonl`: a run as Every Eval Ever files.

X.jsonl holds the instance records (core.sources.eee.instance_lines: one per response and epoch,
its result under the run's current judging, or `--judging`); X.json beside it the aggregate
`EvaluationLog` (schema 0.3): the run's mean score, its model, the library (this program), and
`detailed_evaluation_results` naming the instance file by EEE's canonical path with its sha256
and row count. Both are written atomically (a temporary file, then renamed).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

from core.outfile import write_atomic
from core.sources.eee import SCHEMA_VERSION, instance_lines
from core.store import Store

_ROWS = """
SELECT r.item_id, r.variant, r.epoch, r.status AS response_status, r.messages, r.response,
       r.error, r.prompt_tokens, r.completion_tokens, r.latency_ms, r.scores,
       i.prompt, i.gold,
       v.status AS result_status, v.judge_model, v.answer, v.correct, v.score, v.labels,
       v.explanation, v.metadata
FROM responses r
JOIN runs ru USING (run_id)
LEFT JOIN items i ON i.item_set = ru.item_set AND i.item_id = r.item_id
LEFT JOIN results v ON v.run_id = r.run_id AND v.judging = ? AND v.item_id = r.item_id
                   AND v.variant = r.variant AND v.epoch = r.epoch
WHERE r.run_id = ?
ORDER BY r.item_id, r.variant, r.epoch
"""


def _file_uuid(run_id: str) -> str:
    """A UUID of version-4 form, derived from the run id (so the same run names the same
    file, as EEE's publisher path pattern asks)."""
    return str(uuid.UUID(bytes=hashlib.sha256(run_id.encode()).digest()[:16], version=4))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text) or "unknown"


def write_eee(store: Store, run_id: str, out: Path, judging: str | None = None) -> tuple[int, Path]:
    """Write the run's instances to `out` and the aggregate beside it; (rows, aggregate path)."""
    found = store.df(
        "SELECT run_id, benchmark, item_set, model, judge_model, params, setting FROM runs "
        "WHERE run_id = ?",
        [run_id],
    )
    row = found.iloc[0].to_dict()
    params = json.loads(row["params"]) if row["params"] else {}
    source = params.pop("source", None) if isinstance(params, dict) else None
    if judging is None:
        judging = store.scalar("SELECT judging FROM current_judgings WHERE run_id = ?", [run_id])
    judging = str(judging or "default")
    run: dict[str, Any] = {
        "run_id": run_id,
        "benchmark": row["benchmark"],
        "item_set": row["item_set"],
        "model": row["model"],
        "judge_model": row["judge_model"],
        "setting": row["setting"],
        "task": (source or {}).get("task") or row["benchmark"],
        "source": source,
        "params": params or None,
    }
    frame = store.df(_ROWS, [judging, run_id])
    lines = list(instance_lines(frame, run, judging))
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
    scores = [
        line["evaluation"]["score"]
        for line, status in zip(lines, frame["result_status"])
        if status == "ok"
    ]
    model = str(row["model"] or "unknown")
    developer, _, name = model.rpartition("/")
    file_uuid = _file_uuid(run_id)
    aggregate = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"error-handling-workbench/{run_id}",
        "retrieved_timestamp": str(int(dt.datetime.now(dt.UTC).timestamp())),
        "source_metadata": {
            "source_name": "error-handling workbench",
            "source_type": "evaluation_run",
            "source_organization_name": "error-handling workbench user",
            "evaluator_relationship": "third_party",
        },
        "eval_library": {"name": "error-handling-workbench", "version": "unknown"},
        "model_info": {
            "name": model,
            "id": model,
            "developer": developer or "unknown",
            "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"},
        },
        "evaluation_results": [
            {
                "evaluation_result_id": f"{run_id}:{judging}",
                "evaluation_name": run["task"],
                "source_data": {
                    "dataset_name": str(row["item_set"] or run["task"]),
                    "source_type": "other",
                },
                "metric_config": {
                    "evaluation_description": f"mean per-item score of run {run_id} "
                    f"(judging {judging})",
                    "metric_id": "mean_score",
                    "lower_is_better": False,
                    "score_type": "continuous",
                    "min_score": 0.0,
                    "max_score": 1.0,
                },
                "score_details": {
                    "score": sum(scores) / len(scores) if scores else 0.0,
                    "details": {"n": str(len(scores))},
                },
            }
        ],
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": f"data/workbench/{_slug(developer or 'unknown')}/{_slug(name or model)}/"
            f"{file_uuid}_samples.jsonl",
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(data).hexdigest(),
            "total_rows": len(lines),
        },
    }
    summary = out.with_suffix(".json")
    write_atomic(out, data)
    write_atomic(summary, (json.dumps(aggregate, indent=2) + "\n").encode("utf-8"))
    return len(lines), summary
