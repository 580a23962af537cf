"""Words the answer parsers of several benchmarks read alike."""

from __future__ import annotations

# English number words, in counting order (a parser's regex alternation may rely on the order)
NUMBER_WORDS: dict[str, int] = {
    w: n
    for n, w in enumerate(
        [
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ],
        start=1,
    )
}
