"""Development corpus v11 for the BBM answer reader (issue 29, point 3, branch h29r7, 2026-12-04).

tests/data/bbm_dev_v11.jsonl holds 64 phrasings written on branch h29r7 for the rule families
added while v9 (bbm_heldout_v9.jsonl, held out until measured on h29r5 and h29r6, tuning
since) was read. They are new phrasings, not copies of v9's rows, by the conventions of
tests/data/bbm_heldout_v3.md, in both directions (`guard-` ids: the neighbour that must keep
its definite reading):
- chat-template tokens left in the answer ("6<|eot_id|>", "<start_of_turn>model … <end_of_turn>",
  a closing "</s>", "[/INST]") are not text; a struck "<s>…</s>" pair is still taken back;
- "no error" and the answer words in Portuguese, Italian, Dutch, Russian, Japanese and Korean
  ("Nenhum erro", "Non ci sono errori", "Er zijn geen fouten", "Ошибок нет", "誤りはありません",
  "오류가 없습니다", "Não", "Sim", "Nee", "Да"), beside a named wrong step or a hedge;
- a step verdict after a ✅/❌ checklist (the rows read by their marks; a verdict against the
  rows is `ambiguous`); "is correct: Yes" vs "is correct: No";
- "Yes." / "No." as the first line and a reason that agrees (kept) or says the opposite
  (`ambiguous`); "there is nothing there that might go wrong" is a denial, not a hedge;
- walks cut off on their next step, in two clauses or after a comma (`ambiguous`), beside a
  label's value ("Step: 6"), an unpunctuated verdict, "where the count breaks";
- two marked verdict lines that disagree (`ambiguous`) unless a self-correction is between;
- a "Final:" line against a checklist, a table or a sentence (`ambiguous`), or agreeing;
- conditional verdicts ("wrong if …, otherwise …", "whether … counts as a mistake depends on",
  "it depends", "right if …, else wrong") beside "depends on" that only describes the step.
Measured once when written, on the reader before the changes (commit 1e7d12d): 28 / 19 / 2 /
15 (43.8 %) — agree / no reading / other step / guessed. A tuning corpus: every row must be
read as written.
Report: `.venv/bin/python -m tests.test_bbm_dev_v11`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v11.jsonl"


def test_dev_v11_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=64, prefix="11")


def test_dev_v11_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
