"""Shared by the BBM answer reader's corpus tests (issue 29, point 3): reading a corpus file of
tests/data/, counting how the reader agrees with the careful reader's values, and the three
checks every corpus test makes. Each corpus keeps its own test module for its provenance and
measured counts; the code is here once.

Disagreements are counted in three kinds, as the issue asks:
- `no_reading`: ambiguous/unparsable where a careful reader finds an answer (safe: scored as
  wrong, counted and shown, never a wrong step);
- `other_step`: a definite reading that differs from the expected definite one (a misread:
  another step, "No" for a step, a step for "No", yes for no);
- `guessed`: a definite reading where the careful reader finds none (expected ambiguous).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.benchmarks.bbm.parse import parse_step_answer, parse_trace_answer

DATA = Path(__file__).resolve().parent / "data"
N_STEPS = 8
NO_READING = ("unparsable", "ambiguous")
KINDS = ("agree", "no_reading", "other_step", "guessed")
Rows = list[dict[str, Any]]
Measured = dict[str, list[tuple[str, Any, Any]]]


def load(name: str) -> Rows:
    """The rows of tests/data/<name> (JSON Lines)."""
    text = (DATA / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def reading(row: dict[str, Any]) -> Any:
    if row["mode"] == "trace":
        got = parse_trace_answer(row["text"], N_STEPS)
        return got.step if got.status == "ok" else got.status
    return parse_step_answer(row["text"], reasoning=bool(row.get("reasoning")))


def kind(got: Any, expected: Any) -> str:
    """agree | no_reading | other_step | guessed."""
    if got == expected or (got in NO_READING and expected == "ambiguous"):
        return "agree"
    if got in NO_READING:
        return "no_reading"
    if expected == "ambiguous":
        return "guessed"
    return "other_step"


def measure(rows: Rows) -> Measured:
    out: Measured = {k: [] for k in KINDS}
    for r in rows:
        got = reading(r)
        out[kind(got, r["expected"])].append((r["id"], r["expected"], got))
    return out


def listing(m: Measured) -> str:
    return "\n".join(
        f"  {k}: {i}: expected {e!r}, reader {g!r}"
        for k, v in m.items()
        if k != "agree"
        for i, e, g in v
    )


def check_well_formed(rows: Rows, min_rows: int, prefix: str | None = None) -> None:
    """Unique ids, known modes and values (trace: 1..8, None, out_of_range, ambiguous; step:
    yes / no / ambiguous with a `reasoning` flag), and ids `t<prefix>-` / `s<prefix>-d-` /
    `s<prefix>-r-` where the corpus names its rows so."""
    assert len(rows) >= min_rows and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["mode"] in ("trace", "step"), r["id"]
        if r["mode"] == "step":
            assert isinstance(r["reasoning"], bool), r["id"]
            assert r["expected"] in ("yes", "no", "ambiguous"), r["id"]
            if prefix is not None:
                assert r["id"].startswith(f"s{prefix}-{'r' if r['reasoning'] else 'd'}-"), r["id"]
        else:
            e = r["expected"]
            assert (
                e is None
                or e in ("out_of_range", "ambiguous")
                or (isinstance(e, int) and not isinstance(e, bool) and 1 <= e <= 8)
            ), r["id"]
            if prefix is not None:
                assert r["id"].startswith(f"t{prefix}-"), r["id"]


def assert_read_as_written(rows: Rows, known_no_reading: frozenset[str] = frozenset()) -> None:
    """A tuning corpus: no misread, no guess, and no row left unread but the known ones."""
    m = measure(rows)
    assert not m["other_step"] and not m["guessed"], listing(m)
    assert {i for i, _, _ in m["no_reading"]} == set(known_no_reading), listing(m)


def assert_as_measured(
    rows: Rows, trace: dict[str, int], step: dict[str, int], whole: dict[str, int]
) -> None:
    """No fewer rows read right, no more misread or guessed than measured: trace rows, step
    rows and all (shared by the corpora that keep their measured counts)."""
    for part, measured in (
        ([r for r in rows if r["mode"] == "trace"], trace),
        ([r for r in rows if r["mode"] == "step"], step),
        (rows, whole),
    ):
        m = measure(part)
        counts = {k: len(v) for k, v in m.items()}
        assert counts["agree"] >= measured["agree"], listing(m)
        assert counts["other_step"] <= measured["other_step"], listing(m)
        assert counts["guessed"] <= measured["guessed"], listing(m)


def report(rows: Rows) -> None:
    """What `python -m tests.test_bbm_<corpus>` prints: agreement by mode, then each row not
    agreed on."""
    for mode in ("trace", "step", None):
        part = [r for r in rows if mode is None or r["mode"] == mode]
        if not part:
            continue
        counts = {k: len(v) for k, v in measure(part).items()}
        share = 100 * counts["agree"] / len(part)
        print(f"{mode or 'all'}: {counts['agree']}/{len(part)} agree ({share:.1f}%); {counts}")
    print(listing(measure(rows)))
