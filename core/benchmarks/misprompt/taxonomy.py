"""The Mis-prompt error taxonomy: 4 primary, 14 secondary categories (SPEC §1).

Canonical secondary names are the published tables' (`TextContSubjSpec`, `Relation Error` ...);
`canonical_secondary` also accepts the released data's long names and a few spellings.
"""

from __future__ import annotations

# The judge's six labels (SPEC §3), in the order tables show them, and their short letters.
JUDGE_LABELS: tuple[str, ...] = (
    "detection",
    "identification_attempt",
    "identification_accurate",
    "correction_attempt",
    "correction_accurate",
    "guidance",
)
LABEL_LETTERS: dict[str, str] = {
    "detection": "D",
    "identification_attempt": "IA",
    "identification_accurate": "IC",
    "correction_attempt": "CA",
    "correction_accurate": "CC",
    "guidance": "G",
}
# What each label means, for people labelling by hand (the judge audit, the human-judged
# playground): the registry's `label_help`.
LABEL_HELP: dict[str, str] = {  # SPEC §1
    "detection": "The response says the prompt contains an error.",
    "identification_attempt": "It tries to say what the error is.",
    "identification_accurate": "It locates the actual error.",
    "correction_attempt": "It tries to correct the prompt (or answers the corrected question).",
    "correction_accurate": "Its correction is right.",
    "guidance": "It helps the user rephrase the question.",
}

TAXONOMY: dict[str, list[str]] = {
    "Language Errors": ["Grammatical Errors", "Punctuation Errors", "Spelling Errors"],
    "Incomplete Information": [
        "Speaker or Person",
        "TextContSubjSpec",
        "Location",
        "Date and Time Period",
    ],
    "Factual Errors": ["Relation Error", "Entity Error", "Circumstance Error"],
    "Logical Errors": [
        "Fallacy of Relevance",
        "Fallacy of Presumption",
        "Fallacy of Defective Induction",
        "Fallacy of Ambiguity",
    ],
}
PRIMARY: list[str] = list(TAXONOMY)
SECONDARY: list[str] = [s for subs in TAXONOMY.values() for s in subs]
PRIMARY_OF: dict[str, str] = {s: p for p, subs in TAXONOMY.items() for s in subs}

LONG_NAMES = {"TextContSubjSpec": "Textual Context and Subject Specification"}
_ALIASES = {
    "textual context and subject specification": "TextContSubjSpec",
    "textcontsubjspec": "TextContSubjSpec",
    "relation errors": "Relation Error",
    "entity errors": "Entity Error",
    "circumstance errors": "Circumstance Error",
    "grammatical error": "Grammatical Errors",
    "punctuation error": "Punctuation Errors",
    "spelling error": "Spelling Errors",
}
_PRIMARY_ALIASES = {p.lower(): p for p in PRIMARY} | {
    "language error": "Language Errors",
    "factual error": "Factual Errors",
    "logical error": "Logical Errors",
    "language": "Language Errors",
    "incomplete": "Incomplete Information",
    "factual": "Factual Errors",
    "logical": "Logical Errors",
}


def canonical_secondary(name: str) -> str | None:
    """The table name of a secondary category, or None when it is not in the taxonomy."""
    key = " ".join(str(name).split()).lower()
    for s in SECONDARY:
        if s.lower() == key:
            return s
    return _ALIASES.get(key)


def canonical_primary(name: str) -> str | None:
    return _PRIMARY_ALIASES.get(" ".join(str(name).split()).lower())


def display_name(secondary: str) -> str:
    return LONG_NAMES.get(secondary, secondary)
