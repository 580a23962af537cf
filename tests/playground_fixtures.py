"""A scripted server conversation for playground tests (in-process, AppTest and browser).

The model answers the proactive message as if nothing were wrong and the passive one by pointing
out the error; the judge (requests with a JSON-schema response format) labels the passive answer
all true and the proactive one all false — the paper's headline contrast, made deterministic.
"""

from __future__ import annotations

import json

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS

PASSIVE_MARK = "Before answering, check whether"
PROACTIVE_REPLY = "PROACTIVE-ANSWER: The Eroica was written by Ludwig van Beethoven in 1804."
PASSIVE_REPLY = (
    "PASSIVE-ANSWER: Your question has spelling errors: 'Wich' should be 'Which' "
    "and 'composser' should be 'composer'. Ask: Which composer wrote the Eroica?"
)


def verdict_json(value: bool) -> str:
    why = "the response points out the error" if value else "it answers as if nothing were wrong"
    return json.dumps(
        {label: {"rationale": f"{label}: {why}", "value": value} for label in JUDGE_LABELS}
    )


SCRIPT: dict = {
    "rules": [
        {"json": True, "match": "PASSIVE-ANSWER", "reply": verdict_json(True)},
        {"json": True, "match": "", "reply": verdict_json(False)},
        {"json": False, "match": PASSIVE_MARK, "reply": PASSIVE_REPLY},
    ],
    "reply": PROACTIVE_REPLY,
}
