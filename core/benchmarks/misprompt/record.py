"""How a Mis-prompt judging becomes the generic result record, and the views that read it back.

The judge's six labels live in `results.labels`; `answer` is the labels that are true as letters
(`D IA IC`, `∅` for none), `correct` is "detected on an erroneous item, not detected on a
control", `explanation` the per-label rationales as text and `metadata` the rationales by label
plus the inconsistency flag. `misprompt_verdicts` (and its current-judging twin) give the rest
of this package the label columns its SQL reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, LABEL_LETTERS
from core.engine.results import Result


def answer_of(labels: Mapping[str, Any]) -> str:
    """The labels that are true, as letters (`D IA`), or `∅` when none is."""
    return " ".join(LABEL_LETTERS[lb] for lb in JUDGE_LABELS if labels.get(lb)) or "∅"


def explanation_of(rationales: Mapping[str, Any] | None) -> str | None:
    """`D: why` lines for the labels that have a rationale."""
    if not rationales:
        return None
    lines = [f"{LABEL_LETTERS[lb]}: {rationales[lb]}" for lb in JUDGE_LABELS if rationales.get(lb)]
    return "\n".join(lines) or None


def to_result(verdict: Mapping[str, Any], item: Mapping[str, Any] | None) -> Result:
    """The record of one judge verdict (the judge protocol's columns) on `item`."""
    status = str(verdict.get("status") or "failed")
    ok = status == "ok"
    labels = {lb: verdict.get(lb) for lb in JUDGE_LABELS}
    is_error = True if item is None or item.get("is_error") is None else bool(item["is_error"])
    rationales = verdict.get("rationales")
    return Result(
        status=status,
        judge_model=verdict.get("judge_model"),
        answer=answer_of(labels) if ok else None,
        correct=(bool(labels["detection"]) == is_error) if ok else None,
        labels=labels if ok or any(v is not None for v in labels.values()) else None,
        explanation=explanation_of(rationales) if isinstance(rationales, Mapping) else None,
        metadata={"rationales": rationales, "inconsistent": verdict.get("inconsistent")},
        raw=verdict.get("raw"),
        parse_note=verdict.get("parse_note"),
        error=verdict.get("error"),
        prompt_tokens=verdict.get("prompt_tokens"),
        completion_tokens=verdict.get("completion_tokens"),
        latency_ms=verdict.get("latency_ms"),
        cost_usd=verdict.get("cost_usd"),
    )


def _label(lb: str, source: str = "labels") -> str:
    return f"TRY_CAST({source}->>'{lb}' AS BOOLEAN)"


_LETTERS_SQL = (
    "coalesce(nullif(concat_ws(' ', "
    + ", ".join(
        f"CASE WHEN {_label(lb, 'v.labels')} THEN '{LABEL_LETTERS[lb]}' END" for lb in JUDGE_LABELS
    )
    + "), ''), '∅')"
)
_EXPLANATION_SQL = (
    "nullif(concat_ws(chr(10), "
    + ", ".join(
        f"CASE WHEN nullif(v.metadata->'rationales'->>'{lb}', '') IS NOT NULL "
        f"THEN '{LABEL_LETTERS[lb]}: ' || (v.metadata->'rationales'->>'{lb}') END"
        for lb in JUDGE_LABELS
    )
    + "), '')"
)


def derive_sql(where: str = "") -> str:
    """UPDATE filling answer, correct and explanation of labelled rows from their labels (rows
    written in SQL: schema 3's verdicts, synthetic benches); `where` narrows it further."""
    return f"""
UPDATE results AS v SET
    answer = CASE WHEN v.status = 'ok' THEN {_LETTERS_SQL} END,
    correct = CASE WHEN v.status = 'ok'
                   THEN coalesce({_label("detection", "v.labels")}, false)
                        = coalesce(i.is_error, true) END,
    explanation = {_EXPLANATION_SQL}
FROM runs r, items i
WHERE r.run_id = v.run_id AND r.benchmark = 'misprompt' AND v.labels IS NOT NULL
  AND i.item_set = r.item_set AND i.item_id = v.item_id{where};
"""


# Schema v4 (core/store/database.py): fill the derived fields of verdicts migrated from schema 3.
MIGRATE_SQL: str = derive_sql()

# The six labels as one typed STRUCT: json_transform parses each JSON object once (~4x faster
# than six `->>` extractions over a million rows, measured), and unused columns are pruned.
_LABELS_STRUCT = "{" + ", ".join(f'"{lb}": "BOOLEAN"' for lb in JUDGE_LABELS) + "}"
_VERDICT_COLUMNS = ", ".join(
    ["run_id", "judging", "item_id", "variant", "judge_model", "status"]
    + [f"s.{lb} AS {lb}" for lb in JUDGE_LABELS]
    + [
        "metadata->'rationales' AS rationales",
        "raw",
        "parse_note",
        """json_transform(metadata, '{"inconsistent": "BOOLEAN"}').inconsistent AS inconsistent""",
        "error",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
        "cost_usd",
        "created_at",
        "epoch",
    ]
)


def _verdicts_view(name: str, source: str) -> str:
    return (
        f"CREATE OR REPLACE VIEW {name} AS SELECT {_VERDICT_COLUMNS} FROM "
        f"(SELECT *, json_transform(labels, '{_LABELS_STRUCT}') AS s FROM {source});"
    )


# The label columns this package's SQL reads, over the generic tables (created by the store).
VIEWS: str = "\n".join(
    [
        _verdicts_view("misprompt_verdicts", "results"),
        _verdicts_view("misprompt_current_verdicts", "current_results"),
    ]
)


async def judge(client: Any, item: Mapping[str, Any], response_text: str, **kwargs: Any) -> Result:
    """The LLM judging stage (`rescore`, through the registry's `judge`): one response's record."""
    from core.benchmarks.misprompt.judge import judge_response

    return to_result(await judge_response(client, item, response_text, **kwargs), item)
