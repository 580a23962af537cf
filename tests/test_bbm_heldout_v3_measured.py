"""The BBM answer reader measured on held-out corpus v3 (issue 29, point 3).

tests/data/bbm_heldout_v3.jsonl was written on 2026-12-04 by another developer apart from the
reader (provenance: bbm_heldout_v3.md); the reader's redesign of that day (branch h29reader,
tuned on v2, dev_v3, dev_v4 and heldout_answers) never saw it. Measured once on the merge:
reader of main 998844d 215 / 34 / 6 / 6 (82.4 %), the redesigned reader 237 / 19 / 2 / 3
(90.8 %) — agree / no reading / other step / guessed. That is below the issue's goal (>= 97 %,
0 misread), reported as measured, not tuned away: the counts below only guard against a
reader change that reads fewer rows right or misreads more. Once the reader is tuned on a row
of this file, v3 is a tuning corpus too and a new held-out corpus must be written.
Report: `.venv/bin/python -m tests.test_bbm_heldout_v3_measured`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.test_bbm_heldout_v2 import assert_as_measured, measure

CORPUS = Path(__file__).resolve().parent / "data" / "bbm_heldout_v3.jsonl"
MEASURED = {"agree": 237, "no_reading": 19, "other_step": 2, "guessed": 3}
MEASURED_TRACE = {"agree": 153, "no_reading": 19, "other_step": 1, "guessed": 3}
MEASURED_STEP = {"agree": 84, "no_reading": 0, "other_step": 1, "guessed": 0}


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def test_heldout_v3_agreement_and_misreads_as_measured() -> None:
    rows = load()
    assert len(rows) == 261
    assert_as_measured(rows, MEASURED_TRACE, MEASURED_STEP, MEASURED)


if __name__ == "__main__":
    rows = load()
    for mode in ("trace", "step", None):
        part = [r for r in rows if mode is None or r["mode"] == mode]
        counts = {k: len(v) for k, v in measure(part).items()}
        print(f"{mode or 'all'}: {counts['agree']}/{len(part)} agree; {counts}")
