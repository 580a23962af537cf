"""ErrorBench response parsing and hypothesis-edit extraction on tricky cases."""

from __future__ import annotations

import pytest

from core.benchmarks.errorbench.extract import extract_edits, find_quotes
from core.benchmarks.errorbench.parse import parse_response

TOKENS = [
    ["People", "get", "certain", "disease", "because", "of", "the", "genetic", "changes", "."],
    ["We", "are", "suppose", "to", "tell", "the", "the", "truth", "to", "the", "family", "."],
    ["In", "house", "we", "eat", "rice", "."],
]


def edits_for(text: str):
    return extract_edits(parse_response(text).errors, TOKENS)


# -- parsing ------------------------------------------------------------------------------------


def test_total_line_wins_and_disagreement_is_flagged():
    parsed = parse_response('ERROR 1: "a" -> "b"\nERROR 2: "c" -> "d"\nTOTAL ERRORS FOUND: 3')
    assert (parsed.reported, parsed.how, parsed.total, parsed.n_error_lines) == (3, "total", 3, 2)
    assert parsed.disagree and not parsed.unparsed


def test_missing_total_line_counts_error_lines():
    parsed = parse_response("Here is what I found.\nERROR 1: x\nERROR 2: y\nERROR 3: z\n")
    assert (parsed.reported, parsed.how, parsed.total) == (3, "error_lines", None)
    assert not parsed.disagree and not parsed.unparsed


def test_no_format_at_all_is_unparsed_with_zero():
    parsed = parse_response("The passage looks fine to me.")
    assert parsed.reported == 0 and parsed.unparsed and parsed.how == "error_lines"
    assert parse_response(None).unparsed


def test_markdown_decoration_and_last_total_line():
    text = (
        "## Errors\n**ERROR 1:** first\n- ERROR 2 - second\n* **ERROR 3**: third\n"
        "TOTAL ERRORS FOUND: 2\n**TOTAL ERRORS FOUND:** 3"
    )
    parsed = parse_response(text)
    assert [e.k for e in parsed.errors] == [1, 2, 3]
    assert [e.description for e in parsed.errors] == ["first", "second", "third"]
    assert parsed.reported == 3 and not parsed.disagree


def test_total_zero_and_matching_count_agree():
    parsed = parse_response("No errors.\nTOTAL ERRORS FOUND: 0")
    assert parsed.reported == 0 and parsed.how == "total" and not parsed.unparsed


def test_duplicate_numbers_are_counted_as_lines():
    parsed = parse_response("ERROR 1: a\nERROR 1: b\nERROR 1: c")
    assert parsed.reported == 3


def test_wrapped_description_is_kept():
    parsed = parse_response(
        'ERROR 1: Verb form\n  "suppose" -> "supposed"\n\nTOTAL ERRORS FOUND: 1'
    )
    assert parsed.errors[0].description == 'Verb form\n"suppose" -> "supposed"'


# -- quotes and connectors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "description, expected",
    [
        ('"disease" -> "diseases"', ("disease", "diseases", "pair")),
        ('"disease" → "diseases" (plural)', ("disease", "diseases", "pair")),
        ("“disease” → “diseases”", ("disease", "diseases", "pair")),
        ('“disease” -> "diseases"', ("disease", "diseases", "pair")),
        ('"suppose" should be "supposed"', ("suppose", "supposed", "pair")),
        ('The verb "suppose" should be changed to "supposed".', ("suppose", "supposed", "pair")),
        ('Change "a" to "an"', ("a", "an", "pair")),
        ("Change 'the the' to 'the'", ("the the", "the", "pair")),
        ("Change ‘the the’ to ‘the’", ("the the", "the", "pair")),
        ('"diagonosed" is misspelled', ("diagonosed", None, "src_only")),
        ("Missing comma after However", (None, None, "none")),
        (
            'Spelling: "diagonosed" → "diagnosed"; also "out" is not needed',
            ("diagonosed", "diagnosed", "pair"),
        ),
    ],
)
def test_find_quotes(description, expected):
    assert find_quotes(description) == expected


def test_apostrophe_is_not_a_quote():
    # "don't" and "people's" must not open a single-quoted fragment
    assert find_quotes("people's don't matter here") == (None, None, "none")


# -- locating ------------------------------------------------------------------------------------


def test_curly_quotes_and_arrow_are_located():
    (e,) = edits_for("ERROR 1: “disease” → “diseases”\nTOTAL ERRORS FOUND: 1")
    assert (e.located, e.sentence, e.start, e.end, e.corr, e.how) == (
        True,
        0,
        3,
        4,
        "diseases",
        "exact",
    )


def test_quoted_word_occurring_twice_takes_the_next_unused_occurrence():
    text = (
        'ERROR 1: "the" -> "a"\nERROR 2: "the" -> "a"\nERROR 3: "the" -> "a"\n'
        'ERROR 4: "the" -> "a"\nERROR 5: "the" -> "a"'
    )
    spans = [e.span() for e in edits_for(text)]
    # "the" is token 6 of sentence 0, tokens 5, 6, 9 of sentence 1; then nothing is left
    assert spans == [(0, 6, 7), (1, 5, 6), (1, 6, 7), (1, 9, 10), None]


def test_multi_token_source_and_its_sub_token_are_different_spans():
    edits = edits_for('ERROR 1: "the the" -> "the"\nERROR 2: "tell" -> "say"')
    assert [e.span() for e in edits] == [(1, 5, 7), (1, 4, 5)]


def test_insertion_written_as_context_is_located_on_the_context():
    (e,) = edits_for('ERROR 1: Missing article: "In house" should be "In the house"')
    assert (e.span(), e.corr) == ((2, 0, 2), "In the house")


def test_empty_source_cannot_be_located():
    (e,) = edits_for('ERROR 1: "" -> "the"')
    assert e.pattern == "pair" and e.src == "" and not e.located


def test_unquoted_description_is_unlocated():
    (e,) = edits_for("ERROR 1: subject-verb agreement problem in the second sentence")
    assert e.pattern == "none" and not e.located and e.span() is None


def test_text_not_in_passage_is_unlocated():
    (e,) = edits_for('ERROR 1: "diseases" -> "disease"')
    assert not e.located


def test_case_and_punctuation_relaxations_are_recorded():
    edits = edits_for('ERROR 1: "people get" -> "People gets"\nERROR 2: "rice." -> "rice"')
    assert (edits[0].span(), edits[0].how) == ((0, 0, 2), "casefold")
    assert (edits[1].span(), edits[1].how) == ((2, 4, 6), "punct")


def test_src_only_is_located_without_correction():
    (e,) = edits_for('ERROR 1: "suppose" is the wrong form')
    assert e.located and e.corr is None and e.span() == (1, 2, 3)


def test_correction_whitespace_is_normalised():
    (e,) = edits_for('ERROR 1: "suppose"  ->  "  supposed   to "')
    assert e.corr == "supposed to"
