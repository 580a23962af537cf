"""Development corpus v8 for the BBM answer reader (issue 29, point 3, branch h29r4, 2026-12-04).

tests/data/bbm_dev_v8.jsonl holds 68 phrasings written on branch h29r4 for the general rules
added while v6 (bbm_heldout_v6.jsonl, held out until measured on h29r3 at 246 / 8 / 2 / 0,
tuning since) was read. They are new phrasings of those rules, not copies of v6's rows, by the
conventions of tests/data/bbm_heldout_v3.md:
- an answer marker set off by a dash ("Final answer — Thought 6", "Answer – 3", "Verdict — no");
- the number given to what is wrong: "the offending thought is number seven", "the faulty step
  is 4", "the mistake is number 5" (not arithmetic: "the wrong step is 3 + 4 = 8");
- a share of the trace is not the whole: "most of the chain holds up", "some 80 % of the steps
  are fine", "the bulk of the reasoning is correct" (alone: `ambiguous`, not "No");
- "X is not where the error lies / the problem begins; it lies / begins (…) in Y": a problem
  that starts or lies somewhere is the mistake, "it begins …, in Y" places it;
- struck-through text is taken back ("~~Thought 3~~ Thought 6", "<del>…</del>");
- self-corrections "whoops", "never mind", "my mistake", "oops, no", and the speaker's own slip
  ("I misread the sequence", "I added wrongly myself") claims nothing of the trace, while the
  speaker's judgement does ("I disagree with Thought 3");
- a table's header row over its rule line is column names, no claim ("| Step | Error |"), and
  "none" under "Problem found" says no mistake;
- a sentence's first "No." before arithmetic is the answer No, not "number" ("No. 15 - 8 = 7,
  not 6."; in step mode before any number), while "step no. 4" stays a step;
- a bare first line taken back by a later self-correction ("6\n\nCorrection: …") does not win,
  and a correction that only means to recheck a step ("Actually, let me recheck Thought 1") is
  `ambiguous`;
- "Step zero", "the zeroth thought", "Thought #0": out of range, not the negation "zero".
Rows 46-65 (a second round, written after the first was read right) probe the same
rules and their neighbours further: "roughly half of" / "two-thirds of" a trace, verbs of
doing it wrongly ("misorders", "mislabels"), "the step that is wrong is number 2", "trouble" and
"culprit" as the mistake, an impression taken back ("Thought 4 looks wrong but isn't"; step
mode "It looks fine, but it isn't."), what someone else might think ("One might assume Thought
1 is flawed, yet …"; alone: `ambiguous`), "the penultimate / second-to-last thought / the one
before last" (n - 1, not the last), "Nothing's wrong", "None of them.", and step mode "mostly
right, but the last sum is off" (a part right is not the step right). The last 3 rows: a
"no" right after a self-correction takes back what came before ("My pick is 6. Wait, no: 3."
is 3, not "No"), while in step mode it is also the new answer ("Yes. Hang on, wait, no: …").

Measured once when written, on the reader of h29r3 (commit 8199c55, before the changes these
rows led to), the first 45 rows: 14 / 19 / 8 / 4 (31.1 %) — agree / no reading / other step /
guessed; rows 46-65: 4 / 8 / 8 / 0 (the 4: "mislabels" and "The culprit is not Thought 3 but
Thought 5", read as a lone or last mention, and 2 guards); the last 3: 2 / 0 / 1 / 0 (the 2: a
guard and "Actually, no. Thought 5 …", read by its step claim). Of the first 45, the 14 read
right then: 5 guards ("-guard" ids, and "I disagree with Thought 3") and 9 forms an older rule
already read by another way (the dash markers whose step or Yes/No word alone decides, "#2",
"… lies; it lies in Thought 6", a table with a "yes" row, "Thought #0").
A tuning corpus: every row must be read as written.
Report: `.venv/bin/python -m tests.test_bbm_dev_v8`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v8.jsonl"


def test_dev_v8_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=68, prefix="8")


def test_dev_v8_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
