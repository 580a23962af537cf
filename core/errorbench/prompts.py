"""The shared system prompt and the five user-prompt conditions (SPEC §2), versioned.

The paper's exact wording (its Figures 7–8) is not in the text we have; these are ours. The
conditions differ only in the one sentence about errors, so any change in behaviour comes from
that sentence. `hinted` ("contains errors", no number) is this project's choice for the paper's
fifth condition. Change the wording only by adding a new TEMPLATE_ID.
"""

from __future__ import annotations

from dataclasses import dataclass

TEMPLATE_ID = "errorbench-v1"
CONDITIONS: tuple[str, ...] = ("blind", "hinted", "anchored", "mislead_high", "mislead_low")
TEMPERATURE = 0.0
MAX_TOKENS = 800

SYSTEM_PROMPT = (
    "You are a careful proofreader of learner English. You will be given a passage. Find its "
    "grammatical, spelling, punctuation and word-choice errors.\n"
    "Report each error on its own line, numbered from 1, in exactly this format:\n"
    'ERROR k: "<the wrong words, copied exactly from the passage>" -> "<the corrected words>" '
    "(<a short reason>)\n"
    "Copy the wrong words exactly as they appear, including spaces around punctuation. For a "
    "missing word, quote the word before it and give that word with the missing word added.\n"
    "After the last error, end with one line in exactly this format:\n"
    "TOTAL ERRORS FOUND: n"
)

# The one sentence that varies; {m} is the stated count.
_STATEMENTS = {
    "blind": "Proofread the following passage.",
    "hinted": "The following passage contains errors. Find them.",
    "anchored": "The following passage contains exactly {m} {errors}. Find them.",
    "mislead_high": "The following passage contains exactly {m} {errors}. Find them.",
    "mislead_low": "The following passage contains exactly {m} {errors}. Find them.",
}

CONDITION_NOTES = {
    "blind": "no count, no claim that errors exist",
    "hinted": "says the passage has errors, no number (this project's choice for the fifth "
              "condition, whose wording the paper does not give)",
    "anchored": "states the true count N",
    "mislead_high": "states M = N + 2",
    "mislead_low": "states M = max(1, N − 2)",
}


def stated_count(condition: str, n: int) -> int | None:
    """The number the prompt states (None for blind/hinted)."""
    if condition == "anchored":
        return n
    if condition == "mislead_high":
        return n + 2
    if condition == "mislead_low":
        return max(1, n - 2)
    if condition in ("blind", "hinted"):
        return None
    raise ValueError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")


def user_prompt(condition: str, passage: str, n: int) -> str:
    m = stated_count(condition, n)
    statement = _STATEMENTS[condition].format(m=m, errors="error" if m == 1 else "errors")
    return f"{statement}\n\nPassage:\n{passage}"


@dataclass(frozen=True)
class Prompt:
    condition: str
    stated: int | None
    messages: list[dict]


def build_prompt(condition: str, passage: str, n: int) -> Prompt:
    return Prompt(condition, stated_count(condition, n), [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_prompt(condition, passage, n)},
    ])


def parse_conditions(value: str | None) -> list[str]:
    """'blind,anchored' -> ['blind', 'anchored'] in canonical order; errors name the bad one."""
    if not value:
        return list(CONDITIONS)
    wanted = [c.strip() for c in value.split(",") if c.strip()]
    bad = [c for c in wanted if c not in CONDITIONS]
    if bad:
        raise ValueError(f"unknown condition(s) {', '.join(bad)}; choose from "
                         f"{', '.join(CONDITIONS)}")
    return [c for c in CONDITIONS if c in wanted]
