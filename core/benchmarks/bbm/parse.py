"""Reading a model's answer: the first wrong step or "No" (trace level), Yes/No (step level).

A reader of claims, not a list of phrasings (issue 29). The answer is cut into sentences (a
question is marked as such) and clauses (line breaks, semicolons, dashes, contrast words such
as "but" / "whereas" / "while" / "because", ", so" / ", which" / ", and …", a comma before a step
reference); each clause yields claims:

- a step claim: the steps it names ("Thought 3", "step three", "Thought (6)", "the fourth
  thought", "the fifth one", "the first two thoughts", "the second and fourth thoughts",
  "everything before Thought 4", "the last thought", "Thoughts 1-4", a checklist, checkbox or
  table row — a table read by its header, "Yes" under "Error?" is ❌) and what the clause says
  of them: wrong ("is incorrect", "contains an error", "miscounts", "❌", "correct: false"),
  right ("is fine", "checks out", "✅"), or nothing (a bare mention). Negation flips the
  polarity ("not correct" = wrong, "has no mistake" = right, "the mistake is not in Thought 2"
  = right, "only looks wrong" = right); a counterfactual ("could have miscounted") or generic
  talk ("a common mistake is …") claims nothing. With several references the verdict goes to
  the subject (the steps before the verdict word) or to a mistake's place ("the mistake from
  Thought 3"); a clause without a step borrows one ("That's wrong." / "…, which is correct" /
  "no mistake there": the step just named) or the previous clause's polarity ("…, Thought 3
  does", "…, not Thought 4", "and so is everything else");
- a whole-trace claim: "no mistakes", "zero errors", "nothing to report", "everything checks
  out" (no mistake), "the rest are fine" (the other steps), or "there is a mistake" without a
  place;
- a hedge: the speaker's doubt ("not entirely sure") anywhere, a modal ("could be", "maybe",
  "X or Y") where it qualifies a claim.
A question asserts nothing unless answered ("Is Thought 3 wrong? Yes." = said, "… ? No." =
denied); one left open at the end is a hedge.

The claims are then resolved: the first step called wrong (a contradiction about one step, a
hedge, wrong steps next to a "no mistake" claim or a lone "No.", several bare mentions, only a
step or two called right, a chain of thought cut on a bare mention, or a mistake claimed
without a place is `ambiguous`); "No" when the answer says there is no mistake and names no
wrong step, or a checklist's every row is ✅; a lone mention is the step it names. Where the
answer marks its conclusion ("Answer: 4", "### Answer", "my answer is 6", "Therefore, …") or
corrects itself ("Actually, …", "On reflection, …"), the latest such part is read first; a
first line that is exactly a number or "No" (what the prompt asks for) wins, as small models go
on to restate the task's own answer; a last line that is exactly one is read before the whole
(the answer under an echo of the instructions); two "Answer:" lines that disagree are
`ambiguous`. JSON is read as JSON: the field named for the mistake / step / answer (its number
is the N of "Thought N"), `ambiguous` when the object's own fields disagree.

Statuses: `ok`, `out_of_range` (a step outside 1..n), `ambiguous` (claims found, none
resolvable to one answer: never guessed), `unparsable` (nothing readable). The step level reads
the same claims about the one step asked (Yes = correct): direct answers by their first clause
that says something (after a self-correction, its last), `cot_step` answers by their conclusion
(`ambiguous` when the conclusion and a bare final Yes/No disagree, or the reasoning ends on an
open question, or two whole sentences at its end give opposite verdicts). Tuning corpora:
tests/data/bbm_dev_v3.jsonl … bbm_dev_v12.jsonl, bbm_heldout_v2.jsonl … bbm_heldout_v10.jsonl
(v3-v10 each held out until measured once, tuning since), bbm_heldout_answers.jsonl; held out:
the next corpus written apart (measured once it lands).

Conflicting claims are never settled by precedence. The part read as the answer (a first line,
an answer marker, a conclusion, a last line, a JSON object) is weighed against the rest of the
answer; where the rest calls a step wrong before the one answered (or at all, beside an answer
of no mistake), calls another step *the first* mistake, calls the answered step right (not
before a conclusion, which may revise its walk), or says "no mistakes" of the whole beside a
step, and no self-correction chooses between them, the answer is `ambiguous` ("Thought 2 has an
error. The first error is in Thought 4."; "| 3 | incorrect | … So the answer is 6"; "5\n\nNo,
the sequence has no mistakes."). A later step also called wrong, a bare mention, or claims of
the rest that do not resolve are no other answer. So are, at the step level, a marked verdict
against the reasoning's own conclusion ("…, so it is incorrect.\n\nFinal answer: Yes"), a JSON
reason against its answer, two short verdicts ("Correct. Incorrect."), and a declined verdict
("I can't give a verdict"); and a walk cut off before its verdict ("… Thought 3: B = 2. This
is") is `ambiguous`, never the step it stopped on.

Markup and shorthand are read as such: the answer after a `<think>` block (its wavering is
not the answer), `<answer>…</answer>` as a marker, struck-through text ("~~Thought 4~~") as
taken back, a table's header row as column names, "no." / "nr." before a number as "number"
(not a sentence's first "No." in a step answer or before arithmetic: "No. 6 * 7 is 42"),
a bare number where only a step can stand ("Mistake in 3", "#4", "Not 2."), "the one right
after Thought 5" (Thought 6), a ticked box "[x] Thought 2" as ✅ and an unticked one as a denial
unless its item states its own wrong verdict. A plan ("I will check each thought …") claims
nothing: alone it is `ambiguous`, and so is a correction that only plans to recheck; so are
"equally likely", "I cannot narrow it down / verify", and an opening "No mistakes." before a
marked first mistake.

Numbers and ordinals are read with their grammar, not as phrasings: a bare ordinal is an
answer ("3rd", "Eighth.", "The 2nd one."); a step word may be shortened ("T3", "Th. 4");
a range or "one of" as the place of one mistake is alternatives (`ambiguous`), several steps
each called wrong give the first; "the real first mistake is …" and "There is a mistake: 4"
mark the answer; two such labels that disagree, or a ✅/❌ checklist against the conclusion
under it, are `ambiguous`. "Thought zero" is a step (out of range), "the faulty step is 4" /
"the mistake is number 5" name the step, "about 90 % of the chain" / "most of the steps" is a
part, not the whole; "X is not where the problem starts; it starts at Y" places the mistake in
Y; the speaker's own slip ("I misread the list") claims nothing of the trace; a bare first line
taken back by a later self-correction ("oops", "my mistake", "Correction: …") does not win;
an impression taken back in its sentence ("Thought 4 looks wrong but isn't") is the opposite
claim; what someone else might think ("One might assume Thought 1 is flawed") is no claim;
"the penultimate / second-to-last thought" is n - 1; a step "mostly right" is not yet right.
A step answer whose JSON fields or ✅/❌ marks disagree, or that stops inside a table row, is
`ambiguous`; what the speaker would have answered ("I would answer No") or first believed ("At
first I thought Thought 5 was off") is no claim; "the rest are wrong" is the first step not
called right; ordinals of French, Spanish, Italian, German and Chinese ("el tercer
pensamiento", "第四步") are read as their English; JSON counts ("errors_found") are not steps,
a list of per-step objects is a checklist, as are XML <step n="2">…</step> rows.

A chat template's special tokens ("1<|im_end|>", "<end_of_turn>", a closing "</s>") are not
text; "no error" and the answer words are read in Portuguese, Italian, Dutch, Russian,
Japanese and Korean too ("sem erros", "nessun errore", "geen fouten", "ошибок нет",
"誤りはありません", "오류가 없습니다"). At the step level a ✅/❌ checklist row is read by its mark
and the verdict after the checklist is the answer (`ambiguous` against the rows); "is wrong:
No" is a sentence and its answer word; "no computation that could be wrong" is a denial; a bare
"Yes." / "No." first line against its reason's conclusion, and two marked verdicts that disagree
("Verdict: Yes / Verdict: No"), are `ambiguous`. A "Final:" line marks the answer; a walk cut
off on its next step ("Thought 1 is correct. Thought 2 computes") and a conditional verdict
("whether that counts as incorrect depends on …", "wrong if …, otherwise …") are `ambiguous`.

A denied origin ("does not originate in / come from / trace back to Thought 5", "is not caused
by Thought 5") calls that step no mistake; "traces back to Thought 3" places it. A lone "N."
line and its reason ("3. -6 + 5 - 72 is -73, not -67.") is N; headings "## Verdict",
"**Conclusion**", "## Result" mark the answer under them. The reason after "The mistake is in
Thought 2: …" may call a part fine; "Thought 3 does X correctly, but the sum is not" calls the
step wrong ("the first product … the second is not" is a product, not Thought 2); what one is
tempted to say ("It is tempting to blame Thought 4") is no claim. A sentence placing the mistake
against a JSON object's step, a step answer over a trailing bare "No", and a step answer of only
✅ and ❌ are `ambiguous`. Japanese "思考3に誤りがあります" and French "Oui" / a closing "Non" are read.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field

from core.engine.words import NUMBER_WORDS as ENGLISH_NUMBERS

NUMBER_WORDS = dict(ENGLISH_NUMBERS)  # one … twenty
ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "thirteenth": 13,
    "fourteenth": 14,
    "fifteenth": 15,
    "sixteenth": 16,
    "seventeenth": 17,
    "eighteenth": 18,
    "nineteenth": 19,
    "twentieth": 20,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
}
ORDINALS.update({f"{i}th": i for i in range(4, 21)})
LAST = -1  # "the last thought": resolved against the trace's length

STATUSES = ("ok", "out_of_range", "ambiguous", "unparsable")

_NUM = r"(?:\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_ORD = r"(?:" + "|".join(sorted(ORDINALS, key=len, reverse=True)) + r")"
_NOUN = r"(?:steps?|thoughts?)"
# a few other languages' words, read as their English (models answer in the prompt's language
# or their own): "Gedanke 4", "el pensamiento 3", "il n'y a pas d'erreur", "思路 6"
_FOREIGN = (
    (
        r"\b(?:gedanken?|schritte?|pensamientos?|pensamentos?|pasos?|pens[ée]es?|[ée]tapes?|pensieri|"
        r"pensiero|passo)\b|思路|步骤|想法"
        # French "pas" is a step as a noun: after an article or ordinal, or before its number
        # ("le pas 3", "le premier pas"); else it is the negation ("n'est pas", "pas d'erreur")
        r"|(?:(?<=\ble\s)|(?<=\bdu\s)|(?<=\bce\s)|(?<=\bun\s)|(?<=\bau\s)|(?<=ier\s)|"
        r"(?<=\bchaque\s)|(?<=\bquel\s))pas\b|\bpas(?=\s*(?:\d|n[°o]))",
        " thought ",
    ),
    (r"\b(?:fehler|erreurs?|errores|errore|erros?|faute)\b|错误", " mistake "),
    (r"\bprimeir[oa]\b", " first "),
    # German "Ja" / "Nein" as the answer word, its own sentence ("… ist also korrekt: Ja.")
    (r"\bja\b", ". yes "),
    (r"\b(?:kein(?:e|en)?|pas|ningún|ninguna|nessun)\b|没有", " no "),
    (r"\bnicht\b", " not "),
    (r"\b(?:est|ist|está|è)(?!\w)", " is "),
    (r"\b(?:sont|sind|sono)\b|\bson(?=\s+\w+[oa]s\b)", " are "),
    (r"\b(?:correct[oae]s?|corrett[oaie]|richtig|korrekt|juste|v[áa]lid[oa])\b", " correct "),
    (
        r"\b(?:incorrect[oae]s?|errad[oa]s?|sbagliat[oaie]|falsch|fehlerhaft|faux|fausse|err[óo]ne[oa]|erron[ée]e?s?)\b",
        " wrong ",
    ),
    (
        r"\b(?:por\s+lo\s+tanto|por\s+tanto|donc|par\s+cons[ée]quent|daher|deshalb|somit|quindi)\b",
        " therefore ",
    ),
)
# one pass for all of them (the answer is read once per region: this is on the hot path)
# (a first-letter test first: most places in an English answer start none of these words)
_FOREIGN_RE = re.compile(
    "(?=[gspéefkncrjvidqè思步想错没])(?:"
    + "|".join(f"(?P<f{i}>{p})" for i, (p, _) in enumerate(_FOREIGN))
    + ")"
)
# ordinals of other languages before a step word ("el tercer pensamiento", "la quatrième
# étape", "il terzo passo", "im dritten Schritt"): read by their stem
_FOREIGN_ORDINAL_STEMS = (
    ("prim", 1), ("premi", 1), ("erst", 1), ("segund", 2), ("second", 2), ("deuxi", 2),
    ("zweit", 2), ("terc", 3), ("terz", 3), ("troisi", 3), ("dritt", 3), ("cuart", 4),
    ("quart", 4), ("quatri", 4), ("viert", 4), ("quint", 5), ("cinqui", 5), ("fünft", 5),
    ("funft", 5), ("sext", 6), ("sest", 6), ("sixi", 6), ("sechst", 6), ("séptim", 7),
    ("septim", 7), ("settim", 7), ("septi", 7), ("siebt", 7), ("octav", 8), ("ottav", 8),
    ("huiti", 8), ("acht", 8),
)  # fmt: skip
_FOREIGN_NOUN_GATE = re.compile(r"pensa|pensi|pens[ée]e|[ée]tape|pass?o|gedank|schritt")
_FOREIGN_ORDINAL = re.compile(
    r"\b(?:(?P<article>el|la|le|il|lo|der|die|das|den|dem|(?P<in>im|nel|nella|nello|al|au|"
    r"dans\s+la|dans\s+le|en\s+el|en\s+la))\s+)?(?P<ord>primer[oa]?|prim[oa]|premi[eè]re?|erste[nrms]?|segund[oa]|second[oa]|"
    r"deuxi[eè]me|zweite[nrms]?|tercer[oa]?|terz[oa]|troisi[eè]me|dritte[nrms]?|cuart[oa]|"
    r"quart[oa]|quatri[eè]me|vierte[nrms]?|quint[oa]|cinqui[eè]me|f[üu]nfte[nrms]?|sext[oa]|"
    r"sest[oa]|sixi[eè]me|sechste[nrms]?|s[ée]ptim[oa]|settim[oa]|septi[eè]me|siebte[nrms]?|"
    r"octav[oa]|ottav[oa]|huiti[eè]me|achte[nrms]?)(?=\s+(?:pensamiento|pasos?|pens[ée]e|"
    r"[ée]tape|pensiero|passo|gedanken?|schritte?s?)\b)"
)
_ENGLISH_ORDINAL = {v: k for k, v in ORDINALS.items() if k.isalpha()}


_FOREIGN_ALL = re.compile(
    r"\b(?:alle|todos\s+los|todas\s+las|tous\s+les|toutes\s+les|tutti\s+i|tutte\s+le)\b"
)


def _foreign_ordinal(m: re.Match[str]) -> str:
    word = m.group("ord")
    n = next(n for stem, n in _FOREIGN_ORDINAL_STEMS if word.startswith(stem))
    article = "in the " if m.group("in") else "the " if m.group("article") else ""
    return article + _ENGLISH_ORDINAL[n]


# Chinese: "第四步" (the fourth step), "第4个想法", "这一步是正确的" (this step is correct)
_CJK = re.compile(r"[\u4e00-\u9fff\u30a0-\u30ff]")  # (kanji, and katakana: "ステップ")
_CHINESE_ORDINAL = re.compile(
    r"第\s*([一二三四五六七八九十]|\d{1,2})\s*(?:个)?\s*(步骤?|想法|思路)?"
)
_CHINESE_DIGITS = {c: i for i, c in enumerate("一二三四五六七八九十", start=1)}
_CHINESE = (
    # Japanese: "最初の誤りは思考 4 にあります" (the first mistake is in Thought 4)
    (re.compile(r"間違っています|誤っています|間違い(?:です)?(?=[。！]|$)"), " is wrong "),
    # "思考3に誤りがあります" (there is a mistake in Thought 3): the place before its mistake
    (
        re.compile(
            r"(思考|ステップ)\s*(\d{1,2})\s*に(?:は)?(?:誤り|間違い|エラー|ミス)が(?:あります|ある)"
        ),
        r" the mistake is in thought \2 ",
    ),
    (re.compile(r"最初の"), " the first "),
    (re.compile(r"誤り|間違い|エラー|ミス"), " mistake "),
    (re.compile(r"思考|ステップ"), " thought "),
    (re.compile(r"正しい(?:です)?"), " correct "),
    (re.compile(r"にあります|にある|です"), " "),
    (re.compile(r"は"), " is "),
    (re.compile(r"不正确|不对|错误的|是错的|有误"), " is wrong "),
    (re.compile(r"正确|对的|没有问题|没问题"), " correct "),
    (re.compile(r"这一步|这个步骤|此步"), " this step "),
    (re.compile(r"所以|因此"), ". therefore "),
    (re.compile(r"没有"), " no "),
    (re.compile(r"所有|全部"), " all the "),
    (re.compile(r"都"), " "),
    (re.compile(r"有"), " has a "),
    (re.compile(r"是"), " is "),
    (re.compile(r"[。！]"), ". "),
    (re.compile(r"[，、]"), ", "),
)


def _chinese_ordinal(m: re.Match[str]) -> str:
    n = m.group(1)
    number = int(n) if n.isdigit() else _CHINESE_DIGITS[n]
    if number > 20:
        return m.group(0)
    # ("第一个错误": the first mistake, no step)
    return f" the {_ENGLISH_ORDINAL[number]} " + ("thought " if m.group(2) else "")


def _chinese(text: str) -> str:
    text = _CHINESE_ORDINAL.sub(_chinese_ordinal, text)
    for pattern, english in _CHINESE:
        text = pattern.sub(english, text)
    return text


# "thought 3", "step #2", "thoughts 1-4", "thoughts 1 through 3", "thoughts 2 and 5", "#4"
_REF = re.compile(
    r"\b(?:the\s+)?(?P<fl>first|last)\s+(?P<k>" + _NUM + r")\s+" + _NOUN + r"\b"
    # "the second and fourth thoughts"
    r"|\b(?:the\s+)?(?P<ords>"
    + _ORD
    + r"(?:\s*,\s*"
    + _ORD
    + r")*\s*,?\s*(?:and|or|&)\s*"
    + _ORD
    + r")\s+"
    + _NOUN
    + r"\b"
    r"|\b" + _NOUN + r"\s*(?:number\s*|no\.\s*|#\s*|:\s*(?=\d)|\(\s*(?=\d))?(?P<a>" + _NUM + r")"
    r"(?:\s*\))?\b(?!\s+(?:by\s+one|at\s+a\s+time)\b)"
    r"(?:\s*(?P<range>-|–|to|through|thru)\s*(?:" + _NOUN + r"\s*)?(?P<b>" + _NUM + r")\b"
    # (a number word joins the list only with its noun: "Thought 6 and one in Thought 3")
    r"|(?P<more>(?:\s*,\s*(?:" + _NOUN + r"\s*)?" + _NUM + r"\b)*\s*(?:,\s*)?(?:and|&|or)\s*"
    r"(?:" + _NOUN + r"\s*" + _NUM + r"|\d+)\b))?"
    # ("the first thought that is not correct" is a superlative, not Thought 1)
    r"|(?<!\bi\s)(?<!\bwe\s)(?!(?:the\s+)?first\s+(?:one\s+)?" + _NOUN + r"\s+(?:that|which|"
    r"where|to|with|containing|having)\b)\b(?:the\s+)?(?P<ord>"
    + _ORD
    + r"|last|final|penultimate)\s+(?:one\s+)?"
    + _NOUN
    + r"\b"
    # "the fifth one", "the third is not": an ordinal standing for a thought (not "the first
    # mistake", whose noun is another)
    # ("the first is Thought 3" names Thought 3 only)
    r"|(?<!from\s)(?<!than\s)(?<!on\s)\bthe\s+(?P<ord2>" + _ORD + r"|last|final|penultimate)"
    r"(?!\s+(?:one\s+)?(?:is|was)\s+(?:in\s+|at\s+)?(?:the\s+)?(?:" + _NOUN + r"|" + _ORD + r")\b)"
    r"(?=\s+one\b|\s+(?:itself\s+)?(?:is|are|was|has|does|did|"
    r"contains|makes|introduces|goes|gets)\b|\s+itself\s+[a-z]+s\b|\s*[.;,:!)]|\s*$)"
    r"(?<!first(?=\s+one\s+(?:with|that|which|where|to|containing|having|in)\b))(?:\s+one\b)?"
)
_NUM_TOKEN = re.compile(_NUM)

# polarity words; "no" + a mistake noun is matched as one right-claim before either alone
_WRONG_ADJ = (
    r"incorrect(?:ly)?|wrong(?:ly)?|mistaken(?:ly)?|flawed|invalid|erroneous(?:ly)?|"
    # ("reads off the book", "pops off", "ticks off": a particle, no verdict)
    r"inaccurate(?:ly)?|faulty|false|untrue|(?<!\bread\s)(?<!\breads\s)(?<!reading\s)(?<!\bpops\s)"
    r"(?<!popped\s)(?<!\btakes\s)(?<!\btook\s)(?<!\bticks\s)(?<!ticked\s)off|bad|problematic|not\s+accurate|not\s+quite|amiss|broken"
)
_MISTAKE_NOUN = (
    r"mistakes?|errors?|flaws?|problems?|issues?|bugs?|slips?|miscalculations?|troubles?|culprits?"
)
_WRONG_VERB = (
    r"goes\s+wrong|went\s+wrong|go\s+wrong|goes\s+astray|breaks?\s+down|broke\s+down|"
    r"falls?\s+apart|derails?|"
    # a verb of doing it wrongly: "miscounts", "mis-computes", "misorders", "misapplies"
    r"mis-?(?:count|calculat|read|appl|identif|plac|order|sort|label|assign|typ|cop|stat|interpret|"
    r"understand|understood|judg|handl|us(?:e|es|ed|ing)\b|align|writ|wrote|match|spell|comput|add|"
    r"multipl|subtract|divid|pars|track|remember|attribut|represent|mov|swap|evaluat|group|rank)\w*|"
    r"mix(?:es)?\s+up|fails?\b|failed|errs\b|drops?\b|skips?\b|skipped|forgets?\b|"
    r"forgot|omits?\b|ignores?\b|confuses?\b|loses\b|lost\s+(?:track|count|one|a|an|the)\b|disagrees?\s+with|is\s+where\s+(?:it|things|the\s+\w+)\s+\w+\s+wrong"
)
_RIGHT = (
    r"correct(?:ly)?|right(?!\s+of\b|\s+next\s+to\b|-?(?:most|hand)\b|\s+(?:from|away|after|before)\b)|valid|fine|ok|okay|sound|accurate(?:ly)?|true|good|"
    r"check(?:s|ed)?\s+out|properly|holds?\s+up|(?:(?<=\bit\s)|(?<=STEPREF\s)|(?<=this\s)|(?<=reasoning\s)|(?<=logic\s)|(?<=argument\s)|(?<=chain\s)|(?<=step\s)|(?<=thought\s))holds|"
    r"(?:(?<=\bit\sdoes\snot\s)|(?<=step\sdoes\snot\s)|(?<=thought\sdoes\snot\s))hold\b|"
    r"holds(?=\s+(?:throughout|everywhere|all\s+the\s+way)\b)|verified|consistent|legitimate|flawless|(?:error|mistake|issue)-free|"
    r"no\s+problem|all\s+good|matches|agrees?\s+with|perfect|impeccable|spot[\s-]on|clean|solid|"
    r"airtight|watertight|unproblematic|sensible"
)
_ADVERB = re.compile(
    r"\b(?:(?P<w>incorrectly|wrongly|mistakenly|erroneously|inaccurately)|correctly|"
    r"accurately|properly)\b"
)
_MARK_RIGHT = "\u2705\u2714\u2713\u2611\U0001f44d"
_MARK_WRONG = "\u274c\u2716\u2717\u2718\u2715\u26a0\U0001f44e"
_NEGATOR = r"(?:not|no|never|none|nothing|zero|0|without|nor|neither|nobody|cannot|n't)"
_POLARITY = re.compile(
    r"(?P<wrong>\b(?:" + _WRONG_ADJ + r"|" + _WRONG_VERB + r")\b|[" + _MARK_WRONG + r"])"
    r"|(?P<noun>\b(?:" + _MISTAKE_NOUN + r")\b(?!-free))"
    r"|(?P<right>\b(?:" + _RIGHT + r")\b|[" + _MARK_RIGHT + r"])"
)
# a negator shortly before a polarity word flips it: "not correct", "no mistake", "does not
# contain an error", "none of the thoughts are wrong", "I could not find any mistake"
_SEEMING = re.compile(r"\b(?:only|merely|just)\s+(?:looks?|seems?|appears?)(?:\s+to\s+be)?\s*$")
_NEG_BEFORE = re.compile(r"\b" + _NEGATOR + r"\b(?:\s+[\w'-]+){0,5}\s*$")
# "the mistake is not in thought 2", "the error isn't thought 4": the mistake is elsewhere
_NOT_HERE = re.compile(
    # (not a clause of its own: "has an error, where the stack is not popped")
    r"\b(?:"
    + _MISTAKE_NOUN
    + r")\b(?:(?!,|\bwhere\b|\bwhich\b|\bwhen\b|\bbecause\b)[^.;\n]){0,20}?"
    r"\b(?:is|are|was|lies|occurs?)\s+not\b"
)
# "the wrong answer does not originate in Thought 5", "… is not caused by Thought 3": the
# origin denied of the step named (the mistake comes from elsewhere)
_NOT_ORIGIN = re.compile(
    r"\b(?:(?:does|do|did)\s+not\s+(?:(?:originate|come|stem|start|begin|arise)\s+(?:in|from|at|with)|"
    r"trace\s+back\s+to|go\s+back\s+to)|(?:is|are|was)\s+not\s+(?:caused\s+by|due\s+to|"
    r"rooted\s+in))\s+(?:the\s+)?STEPREF"
)
# the speaker's own doubt ("I'm not entirely sure") wherever it stands; a modal ("might",
# "could be", "seems") only where it qualifies a claim (not "…, as one might expect")
_DOUBT = re.compile(
    r"\b(?:not\s+(?:\w+\s+)?(?:sure|certain|confident)|unsure|uncertain|unclear|"
    r"hard\s+to\s+(?:say|tell)|can\s*not\s+(?:say|tell|determine|decide|narrow|choose|pick|verify|"
    r"confirm|be\s+sure)|"
    # a verdict declined: "I can't give a verdict", "cannot make a judgement either way"
    r"can\s*not\s+(?:give|make|reach|offer|provide|render|deliver|return)\s+(?:a|any|my|an|the|one)?\s*"
    r"(?:final\s+|definite\s+|clear\s+)?(?:verdict|judge?ment|answer|decision|ruling|call)|equally\s+(?:likely|plausible|possible|probable)|toss-?up|coin\s+flip|"
    r"difficult\s+to\s+(?:say|tell)|i\s+do\s+not\s+know|no\s+idea|either\s+way|"
    r"could\s+argue|arguabl[ey]|debatable|"
    # a conditional verdict: "whether that counts as incorrect depends on …", "it depends",
    # "correct or not depending on how you read it", "right if …, otherwise wrong"
    r"whether\b[^.;:\n]{0,60}?\b(?:correct|right|wrong|incorrect|valid|invalid|mistake|error)\w*"
    r"[^.;:\n]{0,30}?\b(?:depends|depending)\s+on|"
    r"(?:correct|right|wrong|incorrect|valid|invalid)\s+or\s+not\s+(?:depends|depending)\s+on|"
    r"it\s+(?:all\s+)?depends(?=\s+on\s+(?:how|what|whether|if)\b|\s*[.,:;!]|\s*$))\b"
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably\s+not|might|could\s+(?:\w+\s+)?be|could\s+also|"
    r"either\b[^.;\n]*\bor|(?<!only\s)(?<!merely\s)(?<!just\s)seems?|appears?\s+to)\b|\?\s*$|"
    + _DOUBT.pattern
)
# "all earlier thoughts", "the rest", "everything else": the other steps, not the whole trace
_RELATIVE = re.compile(
    r"\b(?:earlier|previous|preceding|prior|before\s+(?:that|it|this)|other|others|rest|"
    r"remaining|else|later|subsequent|following)\b|"
    # "about 90% of the chain is fine", "most of the steps check out", "nearly all of it holds":
    # a share of the steps, not all of them
    r"\b\d+(?:\.\d+)?\s*(?:%|percent\b|per\s+cent\b)|\b(?:(?:most|much)(?=\s+(?:of|steps|thoughts|lines|parts)\b)|(?:the\s+)?(?:bulk|majority|lion's\s+share)\s+of|"
    r"(?:(?:roughly|about|around|some|over|nearly|almost|more\s+than|less\s+than)\s+)?(?:the\s+first\s+)?"
    r"(?:half|(?:a|one|two)[\s-](?:thirds?|quarters?)|three[\s-]quarters|(?:\w+[\s-])?fifths?)\s+of|"
    r"(?:almost|nearly|virtually|practically)\s+(?:all|every\w*|the\s+whole|the\s+entire)|"
    r"mostly|largely|for\s+the\s+most\s+part)\b|"
    # "after swaps 1 and 2 everything is consistent", "up to the seventh, all fine": a part
    r"\b(?:after|up\s+(?:to|till|until)|until|till|through)\s+(?:the\s+)?(?:\w+\s+)?(?:#?\d|STEPREF|"
    + _ORD
    + r"\b)"
)
_GLOBAL_SUBJECT = re.compile(
    r"\b(?:all|every|everything|each|whole|entire|trace|sequence|chain|reasoning|solution|"
    r"steps|thoughts|it\s+all|overall|throughout|everywhere|logic|argument|anything|any\s+(?:of\s+the\s+)?(?:steps|"
    r"thoughts))\b"
)
# sentences keep their end mark (a question asserts nothing)
_SENTENCE = re.compile(r"(?:[^.!?;]|[.!?;](?=\d))+[.!?;]*|[.!?;]+")
_SPLIT = re.compile(
    r"\s[\u2014\u2013]\s|(?<![\d)])\s-\s(?![\d(-])|\s/\s|"
    # "Thought 1: ✔ Thought 2: ✖": each labelled step starts an item of its own
    # (not the place of a sentence: "The mistake is in Thought 2: …")
    # (the look-ahead first: the look-behinds run only where a label follows)
    r"(?<=\S)(?=\s+"
    + _NOUN
    + r"\s*#?\s*\d+\s*:)(?<!\bin)(?<!\bat)(?<!\bof)(?<!\bfrom)(?<!\bis)\s+|"
    # "Thought 3 uses Thought 2 (which is fine) and …": the parenthesis is a clause of its own
    r"\s*\((?=[a-z]{2})|(?<=[a-z])\)(?=\s|$)|"
    # "6 is right, 7 is wrong" after the steps were named: a bare number as a new subject
    r"[,:](?=\s*\d+\s+(?:is|was|has|does|did|contains)\b)|"
    # ", so it is correct", ", which splits it wrongly", ", as one might expect", ", and so is
    # everything else": a new clause with its own subject
    r",(?=\s*(?:so|which|as)\b)|"
    # "… is fine and Thought 8 is wrong": a second subject with its own verb
    r"\s+and\s+(?=(?:the\s+)?" + _NOUN + r"\s*#?\s*" + _NUM + r"\s+(?:is|was|has|does|did|contains|"
    r"makes|gets|goes)\b)|,(?=\s*and\s+(?!(?:" + _NOUN + r"\s*)?#?\s*" + _NUM + r"\b))|"
    r"\b(?:but|whereas|however|while|although|though|yet|because|since)\b|"
    # "… correctly until it loses one in the fourth thought": what it does then is a clause
    r"\s+(?=until\s+(?:it|they|the\s+(?:trace|chain|reasoning))\s+(?!reach|get|come)[a-z]+s\b)|"
    # "…, the first error is in Thought 8": a new subject, the mistake
    r"(?:,\s*(?:and\s+)?|\s+and\s+)(?=(?:the|a|an)\s+(?:\w+\s+){0,2}(?:mistake|error|slip|flaw)\s+"
    r"(?:is|lies|occurs|was|comes|appears|originates|starts|begins|arises|stems|happens)\b)|"
    # "The mistake is not Thought 1, it's Thought 3.": a new clause of its own
    r",(?=\s*(?:it|that)\s*(?:'s|is|was)\s)|"
    r"(?=\b(?:except|apart\s+from|other\s+than|save\s+for)\b)|"
    r",(?=\s*(?:and\s+|but\s+)?(?:all\s+)?the\s+(?:rest|others|remaining|other\s+(?:ones|"
    r"thoughts|steps))\b)|"
    r",(?=\s*(?:and\s+|but\s+)?the\s+(?:" + _ORD + r"|last|final|penultimate)(?:\s+one)?\s+"
    r"(?:is|was|has|does|did|contains|makes|introduces|goes|gets)\b)|"
    r"(?<!\bat\sfirst)(?<!\binitially)(?<!\bat\sfirst\sglance)"
    r",(?=\s*(?:and\s+|not\s+|but\s+|while\s+|whereas\s+|only\s+)?(?:the\s+)?(?:"
    + _NOUN
    + r"\s*#?\s*"
    + _NUM
    + r"\b|"
    + _ORD
    + r"\s+"
    + _NOUN
    + r"))"
)
_ELLIPSIS_SAME = re.compile(
    r"^\s*(?:and\s+)?(?:so|as)\s+(?:is|are|does|do|was|has)\b|\b(?:too|also|as well)\s*$|"
    # "Not Thought 2. Not Thought 3 either.": the same denial again
    r"^\s*(?:and\s+)?not\b.*\beither\s*$"
)
# a clause whose subject is the step named just before ("that is wrong", "so it is correct",
# "which splits the expression wrongly"), not the whole trace ("it all checks out")
_PRONOUN = re.compile(
    r"^\s*(?:(?:and|so|thus|hence)\s+)?(?:it|that|this|(?P<which>which)|this\s+(?:one|step|thought)|"
    r"that\s+(?:one|step|thought))\b(?!\s+all\b)"
)
# "… but there is no mistake there", "nothing wrong with it": the place is the step just named
_THERE = re.compile(
    r"\b(?:there|in\s+(?:it|that|this)(?:\s+(?:one|step|thought))?|with\s+(?:it|that|this))\s*$"
)
_PLACE = re.compile(
    r"(?:" + _MISTAKE_NOUN + r")\s+(?:\w+\s+){0,2}?(?:from|in|at|of)\s+(?:the\s+)?STEPREF"
)
_ORIGIN = re.compile(
    r"\b(?:(?:carried|carries|carry|propagated|inherited|inherits|stems?|comes?|came|"
    r"originates?|originated|traces?\s+back|traced\s+back)\s+(?:over\s+)?(?:from|in|to)|caused\s+by|due\s+to)\s+(?:the\s+)?STEPREF"
)
_SHORT_ANSWER = re.compile(
    r"^\s*(?:it|there|that|this|they|the\s+(?:step|thought|sequence|trace))\s+(?:does|do|is|are|did|"
    r"was|has|have)(\s+not)?\s*$"
)
_NONE_ANSWER = re.compile(
    r"^\s*(?:there\s+(?:are|is)\s+(?:none|not\s+any|not\s+one)|none(?:\s+at\s+all)?|not\s+(?:one|any))"
    r"\s*[.!]?\s*$"
)
# "nothing to report", "none to flag": no mistake
_NOTHING_TO = re.compile(
    r"\b(?:nothing|none)\s+(?:\w+\s+)?to\s+(?:report|flag|point\s+out|note|correct|fix|object\s+to)\b"
)
_FIRST_LOOK = re.compile(
    r"\b(?:at\s+first(?:\s+(?:glance|sight))?|initially|on\s+the\s+surface|superficially)\b"
)
_LOOKS = re.compile(r"\b(?:look(?:s|ed)?|seem(?:s|ed)?|appear(?:s|ed)?|struck\s+me\s+as)\b")
# the speaker's own action just before a wrong word: "I misread", "we multiplied wrongly"
_SPEAKER = re.compile(
    r"(?:^|[,:;(]|\band|\bbut|\bso)\s*(?:i|we)\s+(?:(?:also|just|first|had|have|must\s+have|myself)\s+)*"
    r"(?:\w+ed\s+)?$"
)
_SLIP = re.compile(
    r"mis|mix|skip|forg|drop|omit|ignor|confus|(?:wrong|incorrect|mistaken|erroneous)ly"
)
# what someone might think, not what the speaker says: "One could think Thought 2 is the culprit"
# what the speaker believed before looking closer: "At first I thought Thought 5 was off"
_BELIEVED_PATTERN = (
    r"\b(?:(?:at\s+first|initially|originally|first)\s*,?\s*(?:i|we)|(?:i|we)\s+(?:had\s+)?"
    r"(?:at\s+first|initially|originally|first))\s+(?:thought|suspected|believed|assumed|"
    r"figured|guessed)\b"
)
_BELIEVED = re.compile(_BELIEVED_PATTERN)
# "It is tempting to blame Thought 4, …": what one is drawn to say, not what is said
_TEMPTED_PATTERN = (
    r"\b(?:it\s+is|it's|it\s+would\s+be|one\s+is|you\s+are|(?:i|we)\s+(?:am|are|was|were))\s+"
    r"(?:(?:very|quite|so)\s+)?(?:tempting|tempted|easy|natural|inclined)\s+to\s+(?:blame|think|say|"
    r"assume|suspect|point\s+(?:at|to)|call|pick|flag)\b"
)
_TEMPTED = re.compile(_TEMPTED_PATTERN)
_SUPPOSED = re.compile(
    r"\b(?:one|you|someone|somebody|a\s+reader|people)\s+(?:could|might|may|would|will)\s+"
    r"(?:easily\s+)?(?:think|say|argue|assume|suspect|believe|guess|expect|conclude|blame)\b|"
    + _TEMPTED_PATTERN
    + "|"
    + _BELIEVED_PATTERN
)
_COUNTERFACTUAL = re.compile(r"\b(?:could|would|may)\s+(?:easily\s+)?have\s+(?:been\s+)?$")
# "sets up the problem": the task; "… is (not) the problem": the mistake
_THE = re.compile(
    r"(?<!\bis\s)(?<!\bare\s)(?<!\bwas\s)(?<!\bnot\s)(?<!'s\s)"
    r"\b(?:the|this|that|whole|original|given|same)\s*$"
)
# "… where the problem starts", "the problem lies in …": a problem that arises is a mistake
_ARISES = re.compile(
    r"\s+(?:first\s+)?(?:starts?|started|begins?|began|lies|lay|arises?|arose|occurs?|occurred|"
    r"appears?|appeared|happens?|happened|comes?\s+in|creeps?\s+in|crept\s+in|shows?\s+up|"
    r"sets?\s+in|originates?|is\s+(?:in|at)|was\s+(?:in|at)|"
    # "the problem is Thought 4", "the problem was with Thought 2"
    r"(?:is|was|lies)\s+(?:with\s+)?(?:in\s+)?STEPREF)\b"
)
_GENERIC = re.compile(r"\b(?:common|typical|frequent|classic|usual|possible|potential)\s*$")
_LABELLED = re.compile(
    r"\b(?:(?P<r>correct|valid|right|ok)|error|mistake|wrong|incorrect)\w*\s*\??\s*[:=]\s*"
    r"(?P<v>true|false|yes|no)\b"
)
_COPULA_END = re.compile(r"\b(?:is|are|was|were)\s+(?:\w+\s+)?$")
_ELLIPSIS_POS = re.compile(r"(?:\b(?:does|do|did|is|are|was|has|have)\s*$)")
_ELLIPSIS_NEG = re.compile(
    r"^\s*(?:and\s+|but\s+)?not\b|\b(?:does|do|did|is|are|was|has)\s+not\s*$"
)
_EXCEPT = re.compile(r"^\s*,?\s*(?:except|apart\s+from|other\s+than|save\s+for)\b")
# "mistakes: none", "errors found: 0"
_NONE_AFTER = re.compile(
    r"\b(?:" + _MISTAKE_NOUN + r")(?:\s+found)?\s*[:=\-]\s*(?:none|no|nothing|zero|0|n/a)\b"
)
# "1: correct, 2: wrong" — a bare number labelled with a verdict is a step
_NUMBER_LABEL = re.compile(
    r"(?:(?<![\w.])(?<!thought\s)(?<!step\s)(?<!thoughts\s)(?<!steps\s)(\d+)\s*[:)]|^\s*(\d+)\s*[\-\u2013]?)"
    r"\s*(?=[^\w]*(?:correct|incorrect|wrong|"
    r"right|valid|invalid|fine|ok|flawed|[" + _MARK_RIGHT + _MARK_WRONG + r"]))"
)
_IT_IS_N = re.compile(
    r"^\s*(?:so\s+)?(?:it|that)\s*(?:'s|is|was|must\s+be)\s+(\d{1,2}|" + _ORD + r")\s*[.!]?\s*$"
)
_IT_IS_NOT = re.compile(
    r"^\s*(?:and\s+|but\s+)?(?:it|that|this|the\s+(?:answer|culprit|mistake|error|one))\s*(?:is|was|'s)\s+"
    r"not\s+(?:in\s+|at\s+)?(?:the\s+)?STEPREF\s*$"
)
# a clause that is only a verb phrase ("… but then sorts it wrongly", "and adds it
# incorrectly"): its subject is the sentence's
_SUBJECTLESS = re.compile(
    r"^\s*(?:(?:and|but|yet|then|so)\s+)*(?:then\s+|also\s+|still\s+)?"
    r"(?!(?:this|thus|its|his|as|yes|less|unless|plus|always|perhaps|whereas|ones|others|steps|"
    r"thoughts|things|results|values|numbers|words|letters)\b)[a-z]+(?:s|ed)\b"
    r"(?!\s+(?:are|were|have|do|is|was)\b)"
)
_IT_IS_IN = re.compile(
    r"^\s*(?:it|that|this|the\s+(?:real|actual)\s+one)\s*(?:is|lies|'s|was|(?:really\s+|actually\s+)?"
    r"(?:starts?|started|begins?|began|arises?|arose|occurs?|occurred|appears?|appeared|happens?|"
    r"happened|comes?\s+in|creeps?\s+in|crept\s+in|shows?\s+up|sets?\s+in|originates?)"
    # ("it begins two steps earlier, in Thought 2": a few words before its place, no negation)
    r"(?:\s+(?!not\b|never\b|no\b|again\b|also\b|too\b|still\b)[\w']+,?){0,4}?)\s+(?:(?:in|at|with|from)\b|"
    r"(?:the\s+)?STEPREF\s*$)"
)
_MARKER = re.compile(
    r"(?:final\s+answer|my\s+answer|answer|verdict|conclusion|result|"
    r"\bfirst\s+(?:mistake|error|wrong|incorrect)(?:\s+(?:step|thought))?)\s*(?:is)?\s*[:\-=\u2014\u2013]\s*|"
    r"(?:^|(?<=\n))\s*(?:a|output|response|final)\s*:\s*|"
    # a heading "### Answer", "## Verdict", "**Conclusion**" over its line
    r"(?:^|(?<=\n))\s*(?:final\s+)?(?:answer|verdict|conclusion|result)\s*\n+|"
    r"\b(?:the|my)\s+(?:final\s+)?answer\s+(?:is|would\s+be)\s*:?\s*|\bi\s+(?:would\s+)?(?:say|answer)\s*:?\s+|"
    # "There is a mistake: 4", "Errors found: none": what follows the colon is the place
    r"\b(?:(?:" + _MISTAKE_NOUN + r")(?:\s+(?:found|located|spotted))?|(?:mistaken|wrong|incorrect|"
    r"erroneous|faulty|flawed|bad)\s+(?:step|thought)(?:\s+(?:number|no\.?|#))?)\s*[:=]\s*"
    r"(?=(?:the\s+)?(?:thought|step)s?\b|#?\d|(?:none|nothing|zero|n/a|no|"
    + _ORD
    + r"|"
    + _NUM
    + r")\b)|"
    # "Two thoughts are wrong, 3 and 6; the earlier one is 3.": which of them is the answer
    r"\bthe\s+(?:earlier|earliest|first|lower|smaller)(?:\s+one|\s+of\s+(?:them|these|those|the\s+two))?"
    r"\s+(?:is|being)\s+(?=(?:thought\s+|step\s+)?\d{1,2}\s*(?:[.!;]|$))|"
    # a sentence that says where the first mistake is ("So the real first mistake is
    # Thought 7.", "The first wrong value is in Thought 7"): that sentence is the answer
    r"(?P<first>(?:^|(?<=[.!;:,\n]))\s*(?:so|thus|therefore|hence)?,?\s*the\s+(?:(?:real|actual|true)\s+(?:first\s+)?|first\s+)"
    r"(?:mistake|error|slip|culprit|(?:wrong|incorrect|bad)\s+\w+)\s+(?:is|lies|occurs|appears|comes|happens)\s+)"
)
# the conclusion of a chain of thought: its last verdict counts, not the discussion before
_CONCLUSION = re.compile(
    r"(?:^|(?<=[.!;\n]))\s*(?:so|therefore|thus|hence|in\s+conclusion|in\s+summary|to\s+"
    r"(?:summarize|sum\s+up|conclude)|overall|in\s+short|all\s+in\s+all|conclusion)\b,?\s*"
)
_CORRECTION = re.compile(
    r"\b(?:actually|wait|correction|(?:no,?\s+)?sorry|i\s+mean|scratch\s+that|i\s+take\s+that\s+back|"
    r"on\s+(?:second|further|closer)\s+(?:thought|reflection|inspection|look)|on\s+reflection|"
    r"upon\s+(?:closer\s+)?(?:reflection|inspection|review|re-?checking)|"
    r"looking\s+(?:again|closer|more\s+closely)|having\s+re-?checked|"
    r"let\s+me\s+(?:correct|re-?check|reconsider|restate|rephrase|redo|start\s+over|try\s+again)|"
    r"(?:revised|corrected|updated|amended)(?=\s+(?:final\s+)?answer)|hmm+,?\s+no|"
    r"(?:oops|whoops|oh\s+no|my\s+(?:bad|mistake|error)|never\s*mind|strike\s+that|ignore\s+that|i\s+stand\s+corrected|"
    r"disregard\s+(?:that|the\s+above|what\s+i\s+said))(?:[,!.]?\s+no\b)?|i\s+misread\s+(?:it|that)|i\s+(?:was|am)\s+(?:wrong|mistaken))\b[,:]?\s*"
    # ("Actually, no: 2.", "Wait, no. Thought 5 …": the "no" takes back what came before)
    # (in a step answer that "no" is also the new answer: "Yes. Wait, no: the sum is 14.")
    r"(?P<takeback>no\s*[,:;.!\u2014\u2013-]\s*(?=\S))?"
)
# the answer alone: "3", "(3)", "thought 3", "step #2", "n = 3", "**2**", "answer: thought five"
_BARE = re.compile(
    # ("Yes, 6": the lead word says there is one, the number is where)
    r"^\s*(?:(?:yes|yeah|yep)\s*[,:\u2014\u2013-]\s*)?(?:[:=]|[\u2192\u21d2\u27f6\u27f9]|=>|->)?\s*(?:(?:it|that)\s*(?:'s|is|was|must\s+be)\s+)?(?:n\s*(?:=|is\s)\s*|number\s+|no\.\s*(?=\d))?[(\[]?\s*(?:(?:"
    + _NOUN
    + r"\s*)?#?\s*(?P<n>"
    + _NUM
    + r")|(?:the\s+)?(?P<n2>"
    + _ORD
    + r")(?:\s+(?:one|"
    + _NOUN
    + r"))?)\s*[)\]]?\s*[.!]?\s*$"
)
_BARE_NO = re.compile(
    r"^\s*(?:[:=]|[\u2192\u21d2\u27f6\u27f9]|=>|->)?\s*(?:no|nope|null|n/a|not\s+applicable|"
    # "There is not one.", "There are none.", "None whatsoever."
    r"there\s+(?:is|are)\s+(?:not\s+(?:one|any)|none)(?:\s+(?:at\s+all|whatsoever))?|"
    r"(?:none|zero|nothing|no\s+(?:"
    + _MISTAKE_NOUN
    + r"))(?:\s+(?:found|detected|spotted|here|at\s+all|whatsoever|of\s+(?:them|these|those|the\s+(?:thoughts|steps))))?)"
    r"\s*[.!]?\s*$"
)
_LIST_MARK = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)](?=\s)|\(\d+\))\s*")
_TABLE_SEPARATOR = re.compile(r"^[\s|:\-+=]*$")
_CELL_STEP = re.compile(r"^(?:" + _NOUN + r"\s*)?#?\s*(\d+)$")
# a table column that asks "is it wrong?" (a "yes" there is ❌) or "is it right?" (✅)
_ASKS_WRONG = re.compile(r"\b(?:" + "error|mistake|wrong|incorrect|problem|issue|flaw" + r")")
_ASKS_RIGHT = re.compile(r"\b(?:correct|right|valid|ok|fine|sound|accurate)")
# a checklist item that is only a verdict mark ("- ✅", "2. ❌"): no step named, its place is
_ROW_DASH = re.compile(r"^(\s*" + _NOUN + r"\s*#?\s*" + _NUM + r")\s*[\u2014\u2013-]\s+")
_INLINE_MARK = re.compile(r"(?<![\w.=+*/-])[ \t]*(\d+)[ \t]*([" + _MARK_RIGHT + _MARK_WRONG + r"])")
_BARE_SUBJECT = re.compile(r"^\s*\d+\s+(?:is|was|has|does|did|contains)\b")
_BARE_MARK_ITEM = re.compile(
    r"^\s*(?:[-*+\u2022]|\d+[.)]|\(\d+\))?\s*([" + _MARK_RIGHT + _MARK_WRONG + r"])\ufe0f?\s*$"
)
_LEAD_INTERJECTION = re.compile(r"^\s*(yes|no|yeah|yep|nope)\b(?!\s+(?:" + _MISTAKE_NOUN + r"))")
# a plan or a purpose ("I will check each thought", "To find the first mistake, …", "let me
# recheck Thought 2"): what the speaker means to do, not what they found
_PLAN = re.compile(
    r"(?:\b(?:i|we)(?:\s+(?:will|shall|would\s+like\s+to|am\s+going\s+to|need\s+to|must|have\s+to|"
    r"want\s+to|should)\s+|'ll\s+)(?:first\s+)?|\blet\s+(?:me|us)\s+(?:first\s+)?|\blet's\s+(?:first\s+)?|"
    r"^\s*(?:in\s+order\s+)?to\s+)"
    r"(?:re-?)?(?:check|verify|examine|go\s+through|look\s+(?:at|over|through)|review|identify|find|"
    r"evaluate|analy[sz]e|inspect|read|determine|trace|walk\s+through|work\s+through|start)\b"
)
_UNTIL = re.compile(r"\b(?:until|till)\s+(?:we\s+(?:reach|get\s+to)\s+)?STEPREF\b")
_NOTHING_THAT_COULD = re.compile(
    r"\b(?:no|nothing|none|not\s+any(?:thing)?)\b(?:\s+[a-z]+){0,3}?\s+(?:that|which)\s+"
    r"(?:could|might|can|may)\s+(?:possibly\s+|even\s+)?(?:be|go|have\s+gone|have\s+been)\s+"
    r"(?:wrong|incorrect|off|mistaken|in\s+error)\b"
)
_CONDITIONAL = re.compile(r"\bif\b[^.;\n]*?(?=\bor\b|[.;\n]|$)")
# "correct if the stack starts empty, otherwise wrong": a verdict on a condition (kept as a
# doubt before the conditions are dropped)
_CONDITIONAL_VERDICT = re.compile(
    r"\b(?:correct|right|wrong|incorrect|valid|invalid|fine)\s*,?\s+if\b[^.\n]{0,80}?[,;]?\s*"
    r"(?:otherwise|else)\b"
)


_ABBREVIATED_NUMBER = re.compile(
    r"\b(?:(?P<no>(?<!\w\s)no)|no|nr|num)\.\s*(?=\d)(?P<sum>(?=\d+(?:\.\d+)?\s*[-+*/x\u00d7\u00f7=<>^]\s*\d))?"
)


def _abbreviated(m: re.Match[str], step: bool) -> str:
    return m.group(0) if m.group("no") and (step or m.group("sum") is not None) else "number "


_STRUCK = re.compile(r"~~[^~\n]*~~|<(s|del|strike)>[^<]*</\1>")
_PENULTIMATE = re.compile(
    r"\b(?:(?:second|next)[\s-]+to[\s-]+(?:the\s+)?(?:last|final)|last[\s-]+but[\s-]+one|"
    r"(?:one|thought|step)\s+before\s+(?:the\s+)?last(?!\s+(?:one|thought|step)\b))\b"
)
_PRONOUN_IS = re.compile(r"\b(nothing|everything|something|nobody|none)'s\b")


_SPELLED_TWICE = re.compile(
    r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\s*\(\s*(\d{1,2})\s*\)"
)


def _spelled_twice(m: re.Match[str]) -> str:
    return m.group(2) if NUMBER_WORDS[m.group(1)] == int(m.group(2)) else m.group(0)


_FROM_NUMBER = re.compile(
    r"(\b(?:every|all|each)\s+(?:of\s+the\s+)?(?:thought|step)s?\s+(?:from|after|before|up\s+to|until|"
    r"starting\s+(?:at|with|from)|beginning\s+(?:at|with))\s+)(?=\d{1,2}\b)"
)
_COUNT_OF = re.compile(
    r"\b(?:(?:out\s+)?of\s+(?:the|all|these|those)?\s*(?P<m>"
    + _NUM
    + r")\s+(?:thoughts|steps),?\s*"
    r"(?P<k>" + _NUM + r")|(?P<k2>" + _NUM + r")\s+(?:out\s+)?of\s+(?:the|all|these|those)?\s*"
    r"(?P<m2>" + _NUM + r")(?:\s+(?:thoughts|steps))?)(?=\s+(?:are|were|is|look|seem|check)\b)"
)


def _count_of(m: re.Match[str]) -> str:
    whole = _to_int(m.group("m") or m.group("m2"))
    part = _to_int(m.group("k") or m.group("k2"))
    return "all the thoughts" if part == whole else "most of the thoughts"


def _clean(text: str, step: bool = False) -> str:
    """Lowercase, one spelling of negation ("isn't" → "is not"), no markdown emphasis."""
    text = _without_special_tokens(text)
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    # struck-through text ("~~Thought 4~~ Thought 2", "<s>…</s>", "<del>…</del>") is taken back
    if "~~" in text or "<" in text:
        text = _STRUCK.sub(" ", text)
    text = _tags(text)
    # LaTeX's \boxed{4} (what maths-tuned models end with) marks the answer
    text = re.sub(r"\\(?:text|mathrm|textbf)\s*\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\boxed\s*\{([^{}]*)\}", r"\nfinal answer: \1\n", text)
    text = text.replace("$", " ")
    text = _foreign_no_error(text)  # "sem erros", "geen fouten", "ошибок нет", "오류 없음"
    if _FOREIGN_NOUN_GATE.search(text):
        text = _FOREIGN_ORDINAL.sub(_foreign_ordinal, text)
        text = _FOREIGN_ALL.sub("all the", text)
    if "aucun" in text:  # French "aucune erreur": no mistake
        text = re.sub(r"\baucune?\b", " no ", text)
    if _CJK.search(text):
        text = _chinese(text)
    if "nein" in text:  # German "Nein" as the answer word (its "Ja" is in _FOREIGN)
        text = re.sub(r"\bnein\b", ". no ", text)
    if "pensamento" in text:  # Portuguese "no / na" before a step word: "in the"
        text = re.sub(r"\b(?:no|na)(?=\s+pensamento\b)", " in the ", text)
    text = _FOREIGN_RE.sub(lambda m: _FOREIGN[int((m.lastgroup or "f0")[1:])][1], text)
    if " ," in text or " ." in text:  # ("… corretto , il …": a word read as English, spaced)
        text = re.sub(r" +([,.;])(?=\s|$)", r"\1", text)
    # a checkbox list: "[x] Thought 1 correct" asserts its item, "[ ] Thought 3 correct" denies it
    # (a ticked item that is only a step, "[x] Thought 2", is that step checked: ✅)
    text = re.sub(r"(?m)^(\s*(?:[-*+]\s*)?)\[\s*[x\u2713\u2714]\s*\](.*)$", _ticked, text)
    # (an item that says its own verdict of wrong keeps it: "[ ] Thought 3 fails verification")
    text = re.sub(r"(?m)^(\s*(?:[-*+]\s*)?)\[\s*\](.*)$", _unchecked, text)
    text = _modal_verdicts(text)
    text = re.sub(r"\bcan(?:'t|not)\b", "can not", text)
    text = re.sub(r"\bwon't\b", "will not", text)
    text = re.sub(r"\b(i|we|you)'d\b", r"\1 would", text)
    text = re.sub(r"\b(i)'m\b", r"\1 am", text)
    text = re.sub(r"n't\b", " not", text)
    # a quoted phrase is mentioned, not said ("reverses the meaning of 'to the right of'")
    text = re.sub(r"(?<![\w'])'(?=[a-z]+\s)([a-z][a-z ,-]{2,40}[a-z])'(?![\w'])", " quote ", text)
    # "Step no. 7", "Thought nr. 3": the abbreviation is "number" (its dot ends no sentence)
    # A sentence's first "No." before a number is the answer No where no step number can
    # stand: in a step-level answer, or before arithmetic ("No. 6 * 7 is 42, not 48.")
    text = _ABBREVIATED_NUMBER.sub(lambda m: _abbreviated(m, step), text)
    # a step word shortened before its number ("T3", "Th. 4", "St.2", "Stp #5"): the word
    text = re.sub(
        r"\b(?:(?P<long>tht|thgt|thot|stp|th)|t|st)(?:\.\s*|\s*#\s*|(?=\d)|(?(long)\s+|(?!)))(?=\d{1,2}\b)",
        "thought ",
        text,
    )
    # "the second-to-last thought", "the one before last": one word, not "the last thought"
    if "last" in text or "to-final" in text or "to final" in text:
        text = _PENULTIMATE.sub("penultimate", text)
    # "nothing's wrong", "everything's fine": the verb, not a possessive
    if "'s" in text:
        text = _PRONOUN_IS.sub(r"\1 is", text)
    if "(" in text:
        text = _SPELLED_TWICE.sub(_spelled_twice, text)
    # "every thought from 3 on", "all steps after 4": the bare number is a step
    if "every" in text or "all" in text or "each" in text:
        text = _FROM_NUMBER.sub(r"\1thought ", text)
    # "out of the 8 thoughts, 7 are correct", "7 of the 8 steps are fine": a part, not the
    # whole (all of them when the counts are equal)
    if " of " in text:
        text = _COUNT_OF.sub(_count_of, text)
    # bold ("is number **1**", "__2__"): emphasis, read before the numbers
    text = text.replace("**", "").replace("__", "")
    text = _step_numbers(text)
    text = re.sub(r"(?<=[a-z])_(?=[a-z])", " ", text)  # first_error: a name, not emphasis
    # "all thoughts but Thought 2 are correct": "but" after "all …" is "except"
    text = re.sub(
        r"\b((?:all|every\w*|each|none)\b(?:\s+[a-z]+){0,3}?)\s+but\s+(?=(?:the\s+)?(?:thought|step|#?\d))",
        r"\1 except ",
        text,
    )
    text = re.sub(r"[*_`\"]", "", text)
    text = re.sub(r"(?m)^\s*#+\s*", "", text)  # markdown headings
    text = re.sub(r"[ \t]+", " ", text)
    if "first " in text:
        # "the first product is right but the second is not": the second product, no step
        text = _PART_ORDINAL.sub(r"\g<0> \g<noun>", text)  # (at "the first": a literal start)
    return text.strip()


_PART_ORDINAL = re.compile(
    r"\bthe\sfirst\s(?!(?:thought|step|one|mistake|error|wrong|incorrect|bad|flawed|"
    r"faulty|few|several|time|couple|half|part|"
    + _NUM
    + r")\b)(?P<noun>[a-z]{3,})\b[^.\n]{0,80}?\bthe\s+(?:second|"
    r"third|fourth|fifth|sixth|seventh|eighth|last|other)\b(?!\s+(?:one|thought|step|mistake|error)s?\b)"
    r"(?=\s*(?:is|was|has|does|did|are|[,;.]|$))"
)


# a chat template's special tokens left in the answer ("1<|im_end|>", "No<|eot_id|>",
# "<start_of_turn>model\n3<end_of_turn>", "[INST] … [/INST]", a closing "</s>"): not text
_SPECIAL_TOKEN = re.compile(
    r"<\|im_start\|>\s*(?:assistant|user|system)?|<\|[A-Za-z_]{2,30}\|>|"
    r"<start_of_turn>\s*(?:model|user)?|<end_of_turn>|<eos>|<bos>|<pad>|\[/?INST\]|"
    r"</s>(?=(?:\s|</s>|<\|)*$)|^\s*<s>(?!.*</s>)",
    re.DOTALL,
)


def _without_special_tokens(text: str) -> str:
    if "<" not in text and "[" not in text:
        return text
    return _SPECIAL_TOKEN.sub(" ", text) if _SPECIAL_TOKEN.search(text) else text


def _modal_verdicts(text: str) -> str:
    """ "contains no computation that could be wrong", "nothing here that might be off": a
    denial, not a hedge; "wrong if …, otherwise …": a verdict on a condition, a doubt."""
    if "could" in text or "might" in text or " can " in text or " may " in text:
        text = _NOTHING_THAT_COULD.sub(" no mistake ", text)
    if "otherwise" in text or "else" in text:
        text = _CONDITIONAL_VERDICT.sub(lambda m: " it depends; " + m.group(0), text)
    return text


# "no mistake" and the answer word No in other languages: Portuguese, Italian, Dutch, Russian,
# Japanese, Korean (Spanish, French, German and Chinese are read word by word in _FOREIGN)
_NO_ERROR_GATE = re.compile(
    r"[\u0400-\u04ff\u3040-\u30ff\uac00-\ud7af]|"
    r"\b(?:sem|nenhum|nenhuma|não|nessun|nessuna|non|geen|nee|sin|sim|sì|zijn|tutt[ie]|todos|todas|oui)\b"
)
_NO_ERROR_FOREIGN = (
    (
        re.compile(
            r"\b(?:sem|nenhum|nenhuma|nessun|nessuna|geen|sin|ningún|ninguna|без|никаких|нет)\s+"
            r"(?:erros?|errores?|errori|errore|fouten?|vergissingen|ошиб\w*)\b|"
            r"\b(?:não|non)\s+(?:há|ha|tem|contém|existem|ci\s+sono|c'è|contiene)\s+(?:nenhum\s+|alcun\s+)?"
            r"(?:erros?|errori|errore)\b|"
            r"\ber\s+zijn\s+geen\s+fouten\b|\bошиб\w*\s+(?:нет|не\s+(?:обнаружено|найдено))|"
            r"(?:誤り|間違い|エラー|ミス)(?:は|が)?(?:ありません|ない|なし)|"
            r"(?:오류|실수|잘못된\s*부분|에러)(?:가|는|이)?\s*(?:없습니다|없어요|없음|없다|없네요)"
        ),
        " no mistakes ",
    ),
    # the answer word: "Não.", "Nee,", "Нет", "いいえ", "아니요" (Portuguese and Italian "não" /
    # "non" before a verb are "not")
    (
        re.compile(r"\b(?:não|non)\s+(?=(?:é|está|e|è|sono|são|estão|tem|contém|contiene|ha)\b)"),
        " not ",
    ),
    (re.compile(r"\b(?:não|nee|нет)\b|いいえ|아니요|아니오"), " no "),
    # (French "Oui" too; French "Non" is Italian's "non" before a verb, read above)
    (re.compile(r"\b(?:sim|sì|да|oui)\b(?!-)|はい|(?:^|(?<=\s))네(?=[,.!\s]|$)"), " yes "),
    (re.compile(r"(?:^|(?<=[.!\n]))\s*non\s*[.!]?\s*$"), " no "),
    (
        re.compile(r"\b(?:todos\s+os|todas\s+as|все|tutti\s+i|tutte\s+le)\b|すべての|모든"),
        " all the ",
    ),
    (re.compile(r"\b(?:gedachten?|stappen|stap|шаги|шаг|мысли)\b|생각|단계"), " thought "),
    (re.compile(r"\b(?:estão|zijn)\b"), " are "),
    (
        re.compile(
            r"\b(?:corret[oa]s?|corretti|corrette|juist|верны|верные|правильн\w*|корректн\w*)\b"
        ),
        " correct ",
    ),
)


def _foreign_no_error(text: str) -> str:
    if not _NO_ERROR_GATE.search(text):
        return text
    for pattern, english in _NO_ERROR_FOREIGN:
        text = pattern.sub(english, text)
    return text


# "<think>…</think> The first mistake is in Thought 5.": the answer follows the block (its
# wavering is not the answer); "<answer>6</answer>" marks the answer; other tags are markup
_THINK = re.compile(
    r"<(think|thinking|reasoning|scratchpad|reflection|analysis)>.*?</\1>", re.DOTALL
)
_ANSWER_TAG = re.compile(
    r"<(answer|final[_ ]answer|output|result|verdict|response)>\s*(.*?)\s*</\1>", re.DOTALL
)


_STEP_TAG = re.compile(
    r"<(step|thought)\s+(?:n|id|number|index|step|thought)\s*=\s*[\"']?(\d{1,2})[\"']?\s*>"
    r"([^<]*)</\1>"
)
_ATTRIBUTE = re.compile(
    r"<(?:answer|final_answer|result|verdict|output|response|error|mistake|first_error)\s+(?:[a-z_]+\s*=\s*[\"'][^\"'<>]*[\"']\s+)*"
    r"(?P<k>(?:first_)?(?:wrong_|error_|mistake_)?(?:step|thought|error|mistake|answer|n))"
    r"\s*=\s*[\"']([^\"'<>]{1,12})[\"'][^<>]*>"
)


def _tags(text: str) -> str:
    if "<" not in text:
        return text
    after = _THINK.sub(" ", text)
    if after.strip():
        text = after
    text = _ANSWER_TAG.sub(lambda m: "\nanswer: " + m.group(2).replace("\n", " ") + "\n", text)
    # <step n="2">wrong</step>: a row of a checklist, "thought 2: wrong"
    text = _STEP_TAG.sub(lambda m: f"\nthought {m.group(2)}: {m.group(3)}\n", text)
    # <result step="8" />, <answer first_error="none"/>: the attribute that names the step
    text = _ATTRIBUTE.sub(lambda m: "\nanswer: " + m.group(2) + "\n", text)
    return re.sub(r"</?[a-z][a-z_ -]{0,30}>", " ", text)


# a bare number where only a step can stand: after a mistake's place ("Mistake in 3", "the
# slip happens at 6", "Mistake at #4"), after '#' ("#4"), and denied as a sentence ("Not 2.")
_PLACE_NUMBER = re.compile(
    r"\b((?:" + r"mistakes?|errors?|flaws?|problems?|issues?|bugs?|slips?|miscalculations?"
    r")\s+(?:(?:is|was|lies|occurs|happens|comes|appears|starts|begins)\s+)?(?:in|at|on)\s+)"
    r"(?:#\s*)?(?=\d{1,2}\b(?![.,]\d|\s*%|\s+(?:places?|spots?|ways?|parts?|points?|cases?|items?|"
    r"times|positions?|digits?|letters?|words?|of|out)\b))"
)
_HASH_NUMBER = re.compile(
    r"(?<![\w#])(?<!thought\s)(?<!step\s)(?<!thoughts\s)(?<!steps\s)#(?=\d{1,2}\b)"
)
_NOT_NUMBER = re.compile(
    r"(?m)(^|[.!;]\s+)not\s+(?=\d{1,2}(?:\s+(?:either|too|as\s+well))?\s*(?:[.!;,]|$))"
)
# "from the first to the last", "from start to finish": the whole trace
_FIRST_TO_LAST = re.compile(
    r"\bfrom\s+(?:the\s+)?(?:first|start|beginning|outset)(?:\s+(?:one|thought|step))?\s+"
    r"(?:to|through|until|till)\s+(?:the\s+)?(?:last|end|finish|final)(?:\s+(?:one|thought|step))?\b"
)
# "right from the start", "right after Thought 5": an intensifier, not a verdict
_RIGHT_ADVERB = re.compile(
    r"right(?<!\wright)(?<!\bis\sright)(?<!\bare\sright)(?<!\bwas\sright)(?<!\bwere\sright)"
    r"(?<!'s\sright)(?<!\bbe\sright)"
    r"\s+(?!after\s+all\b)(?=(?:after|before|away|from\s+the\s+(?:start|beginning|outset|first))\b)"
)
# "the one right after Thought 5", "the step just before it": a neighbour of a step named
_NEIGHBOUR = re.compile(
    r"\bthe\s+(?:one|step|thought)\s+(?:right\s+|immediately\s+|just\s+|directly\s+)?"
    r"(?P<dir>after|following|before|preceding)\s+(?:(?:thought|step)\s+(?P<n>\d{1,2})\b|(?:it|that(?:\s+one)?)\b)"
)


# "the first slip is at 4 of the 8 thoughts": a place among the steps (not the count "errors
# in 2 of the 8 thoughts")
_N_OF_M = re.compile(
    r"\b((?:at|is|was)\s+)(\d{1,2})\s+(?:out\s+)?of\s+(?:the\s+|all\s+)?"
    + _NUM
    + r"\s+"
    + _NOUN
    + r"\b"
)


# "Thought IV", "step vii": a Roman numeral as the step's number (a lone "i" only before a
# verb or a stop: "thought i had" is the pronoun)
_ROMAN = {
    "i": 1,
    "ii": 2,
    "iii": 3,
    "iv": 4,
    "v": 5,
    "vi": 6,
    "vii": 7,
    "viii": 8,
    "ix": 9,
    "x": 10,
}
_ROMAN_REF = re.compile(
    r"\b((?:thought|step)s?\s+)(ii|iii|iv|vi{0,3}|ix|x|i(?=\s*[.,;:!)]|\s*$|\s+(?:is|was)\b))\b"
)
# "Thought zero", "step nought", "the zeroth thought": a step numbered 0 (out of range), not
# the negation "zero" ("zero errors")
_ZERO_REF = re.compile(
    r"\b(thoughts?|steps?)\s+(?:number\s+|#\s*)?(?:zero|nought|naught)\b|"
    r"\b(?:the\s+)?zeroth\s+(thought|step)\b"
)
# "the initial thought", "the opening step", "the starting one": the first
_FIRST_WORD = re.compile(
    r"\b(?:initial|opening|starting|very\s+first)\s+(?=(?:one\s+)?" + _NOUN + r"\b)"
)
# "so N is 3", "k = 7", "Thought N = 5": the answer's variable given its value
_VARIABLE = re.compile(
    r"\b(?:thought\s+)?(?<![\w-])[nk]\s*(?:=|is)\s*(?=\d{1,2}\b(?![.,]\d|\s+(?:thoughts|steps)\b))"
)


# "5 — that's where the first mistake is.": an answer opening on a bare number, then a
# clause that points back at it
_LEAD_NUMBER = re.compile(
    r"^(\s*)(?=\d{1,2}\s*(?:[\u2014\u2013:-]+|,)\s*(?:that|this|it|there|here|the\s+first)\b)"
)


# "The trace goes wrong, hence 2.": a sentence that places a mistake, concluded by a bare number
_SO_NUMBER = re.compile(
    r"(\b(?:"
    + _MISTAKE_NOUN
    + r"|wrong|incorrect)\b[^.!?\n]*?,\s*(?:and\s+)?(?:so|hence|therefore|"
    r"thus)\s*,?\s*)(?=\d{1,2}\s*(?:[.!]|$))"
)


# "the erroneous thought is number 3", "the faulty step is 4", "the culprit is #5", "the
# mistake is number 6": the number given to what is wrong (or to the mistake) is its step
_WRONG_ONE_IS = re.compile(
    r"\b((?:the|my)\s+(?:first\s+|only\s+|single\s+)?(?:(?:incorrect|wrong|mistaken|flawed|invalid|"
    r"erroneous|faulty|bad|problematic|broken|offending|defective)\s+(?:one|thought|step)|culprit|"
    r"(?:one|thought|step)\s+(?:that|which)\s+(?:is|was|goes|went)\s+(?:wrong|incorrect|faulty|flawed|bad)|"
    r"(?:" + _MISTAKE_NOUN + r")(?=\s+\w+\s+(?:number|#)))\s+(?:is|was|would\s+be|must\s+be)\s+)"
    r"(?:(?:number\s+|#\s*)(?="
    + _NUM
    + r"\b)|(?=\d{1,2}\b(?![.,]\d|\s*%|\s*[-+*/x\u00d7=]\s*\d|\s+(?:steps?|thoughts?|places?|"
    r"positions?|times|of|out|later|earlier|after|before)\b)))"
)


def _step_numbers(text: str) -> str:
    text = _WRONG_ONE_IS.sub(r"\1thought ", text)
    text = _LEAD_NUMBER.sub(r"\1thought ", text)
    text = _SO_NUMBER.sub(r"\1thought ", text)
    text = _ROMAN_REF.sub(lambda m: m.group(1) + str(_ROMAN[m.group(2)]), text)
    if "zero" in text or "naught" in text or "nought" in text:
        text = _ZERO_REF.sub(lambda m: (m.group(1) or m.group(2)) + " 0", text)
    text = _FIRST_WORD.sub("first ", text)
    text = _VARIABLE.sub("thought ", text)
    text = _N_OF_M.sub(r"\1thought \2", text)
    text = _PLACE_NUMBER.sub(r"\1thought ", text)
    text = _HASH_NUMBER.sub("thought ", text)
    text = _NOT_NUMBER.sub(r"\1not thought ", text)
    # "Not 6, but 2.": the bare number set against the denied step is a step too
    text = re.sub(
        r"(\bnot\s+thought\s+\d{1,2}\s*[,;]?\s*(?:but|rather|instead)\s*,?\s*)(?=\d{1,2}\s*(?:[.!;]|$))",
        r"\1thought ",
        text,
    )
    text = _FIRST_TO_LAST.sub("throughout", text)
    text = _RIGHT_ADVERB.sub("", text)

    def neighbour(m: re.Match[str]) -> str:
        if m.group("n"):
            n = int(m.group("n"))
        else:
            named = re.findall(r"\b(?:thought|step)\s+(\d{1,2})\b", text[: m.start()])
            if not named:
                return m.group(0)
            n = int(named[-1])
        n = n + 1 if m.group("dir") in ("after", "following") else n - 1
        return f"thought {n}" if n >= 1 else m.group(0)

    return _NEIGHBOUR.sub(neighbour, text)


def _ticked(m: re.Match[str]) -> str:
    item = m.group(2)
    if re.fullmatch(r"\s*(?:thought|step)\s*#?\s*\d{1,2}\s*[:.]?\s*", item):
        return m.group(1) + item.rstrip(" :.") + " \u2705"
    return m.group(1) + item


def _unchecked(m: re.Match[str]) -> str:
    kind, negated = _polarity(m.group(2))
    return (
        m.group(1) + m.group(2)
        if kind == "wrong" and not negated
        else m.group(1) + "not" + m.group(2)
    )


def _to_int(token: str) -> int:
    token = token.strip()
    if token.isdigit():
        return int(token)
    if token in NUMBER_WORDS:
        return NUMBER_WORDS[token]
    return ORDINALS[token]


@dataclass(frozen=True)
class TraceAnswer:
    """The parsed trace-level answer.

    `status`: ok (a step or "No"), out_of_range (a step number outside 1..n), ambiguous
    (claims that do not resolve to one answer), unparsable (nothing readable).
    `step` is 1-based as the model sees it; `index` is the 0-based mistake index (None = No).
    """

    status: str
    step: int | None
    rule: str

    @property
    def index(self) -> int | None:
        return None if self.step is None or self.status != "ok" else self.step - 1

    @property
    def parsed(self) -> bool:
        return self.status == "ok"


# -- claims -----------------------------------------------------------------------------------


@dataclass
class _Claims:
    """What a stretch of answer says: steps called wrong / right / merely named, whole-trace
    claims, hedges."""

    wrong: list[int] = field(default_factory=list)
    right: list[int] = field(default_factory=list)
    named: list[int] = field(default_factory=list)
    no_mistake: bool = False
    some_mistake: bool = False
    hedge: bool = False
    alternatives: bool = False  # "thought 2 or thought 5"
    interjection: str | None = None  # a leading "No," / "Yes,"
    loose: bool = False  # a verdict about nothing it names ("It is fine.")
    right_rows: int = 0  # checklist / table rows (or lines) that call their step right
    others_right: bool = False  # "…, and so is everything else", "all earlier thoughts are fine"
    others_wrong: bool = False  # "Only Thought 1 is right; the rest are wrong"
    until: list[int] = field(default_factory=list)  # "fine until Thought 5": wrong, if nothing else
    cut: bool = False  # ends mid-sentence on a bare step mention (a cut-off chain of thought)
    said_no: bool = False  # a sentence that is only "No." / "None."
    opening_right: bool = False  # the answer opens with a verdict of no subject: "Flawless."
    firsts: set[int] = field(default_factory=set)  # steps each called *the first* mistake
    but_last: bool = False  # the no-mistake claim is of the intermediate steps only
    plan: bool = False  # says what it means to check ("I will check each thought …")

    def empty_but_plan(self) -> bool:
        return dataclasses.replace(self, plan=False).empty()

    def empty(self) -> bool:
        return not (
            self.wrong
            or self.right
            or self.named
            or self.until
            or self.no_mistake
            or self.some_mistake
        ) and not (self.interjection or self.loose or self.hedge or self.plan)


def _refs(clause: str, n_steps: int | None) -> tuple[list[int], bool, str]:
    """The steps a clause names, whether they are offered as alternatives ("2 or 5"), and the
    clause with the references blanked (so their numbers are not read as words)."""
    groups, alternatives, blank = _ref_groups(clause, n_steps)
    return [s for _, g in groups for s in g], alternatives, blank


def _ref_groups(clause: str, n_steps: int | None) -> tuple[list[tuple[int, list[int]]], bool, str]:
    """_refs, one group per reference ("thoughts 2 and 5" is one) with its place in the
    blanked clause."""
    groups: list[tuple[int, list[int]]] = []
    alternatives = False
    blank = ""
    last = 0
    for m in _REF.finditer(clause):
        blank += clause[last : m.start()] + " "
        groups.append((len(blank), []))
        blank += "STEPREF "
        last = m.end()
        steps = groups[-1][1]
        if m.group("a") and not m.group("b") and not m.group("more"):
            lead = re.search(r"\b(?:before|prior\s+to|preceding)\s*$", clause[: m.start()])
            if lead:  # "everything before Thought 4": Thoughts 1-3
                steps.extend(range(1, _to_int(m.group("a"))))
                continue
            lead = re.search(
                r"\b(?:everything|all|each|every\w*|the\s+rest)\b[^.;]*\b(?:after|following|"
                r"beyond)\s*$",
                clause[: m.start()],
            )
            if lead and n_steps:  # "everything after Thought 2": Thoughts 3-n
                steps.extend(range(_to_int(m.group("a")) + 1, n_steps + 1))
                continue
            if re.search(r"\b(?:after|following|beyond)\s*$", clause[: m.start()]):
                continue  # "something after Thought 3 goes wrong": a boundary, not a step
        if m.group("ords"):
            words = re.findall(_ORD, m.group("ords"))
            steps.extend(_to_int(w) for w in words)
            alternatives = alternatives or bool(re.search(r"\bor\b", m.group("ords")))
            continue
        if m.group("fl"):
            k = _to_int(m.group("k"))
            if m.group("fl") == "first":
                steps.extend(range(1, k + 1))
            else:
                steps.extend(range(n_steps - k + 1, n_steps + 1) if n_steps else [LAST])
            continue
        if m.group("ord") or m.group("ord2"):
            word = m.group("ord") or m.group("ord2")
            if word == "penultimate":  # "the second-to-last thought": unknown length, unknown step
                steps.append(n_steps - 1 if n_steps and n_steps > 1 else LAST)
            else:
                steps.append((n_steps or LAST) if word in ("last", "final") else _to_int(word))
            continue
        a = _to_int(m.group("a"))
        if m.group("b"):
            b = _to_int(m.group("b"))
            steps.extend(range(a, b + 1) if a <= b <= a + 50 else [a, b])
        elif m.group("more"):
            steps.append(a)
            steps.extend(_to_int(t) for t in _NUM_TOKEN.findall(m.group("more")))
            alternatives = alternatives or bool(re.search(r"\bor\b", m.group("more")))
        else:
            steps.append(a)
    blank += clause[last:]
    return groups, alternatives, blank


def _polarity(blank: str) -> tuple[str | None, bool]:
    """('wrong' | 'right' | None, whether a negation decided it) of a clause: the first
    polarity word, flipped by a negator shortly before it ("not correct", "no mistake") or by
    "the mistake is not in …"."""
    kind, negated, _ = _polarity_at(blank)
    return kind, negated


_NOT_FOUND = re.compile(
    r"\b(?:can|could|did|do|does)\s+not\s+(?:find|see|spot|identify|point\s+to|locate|name|"
    r"detect|think\s+of)\s+(?:any|a|one|a\s+single)\b"
)


def _polarity_at(blank: str) -> tuple[str | None, bool, int]:
    """_polarity and where in the clause the deciding word is (-1: nowhere)."""
    m = _NOT_HERE.search(blank) or _NONE_AFTER.search(blank) or _NOTHING_TO.search(blank)
    if not m and " not " in blank and "STEPREF" in blank:
        m = _NOT_ORIGIN.search(blank)
    if m:
        return "right", True, m.start()
    m = _LABELLED.search(blank)
    if m and m.group("v") in ("yes", "no") and _COPULA_END.search(blank, 0, m.start()):
        # "So the thought is wrong: No": a sentence and the answer word after it, no label
        m = None
    if m:  # "correct: false", "error? yes"
        says = m.group("v") in ("true", "yes")
        return ("right" if says == bool(m.group("r")) else "wrong"), False, m.start()
    first_look = _FIRST_LOOK.search(blank)
    for m in _POLARITY.finditer(blank):
        before = blank[: m.start()]
        if first_look and _LOOKS.search(before):
            continue  # "Thought 3 looked off at first (, but …)": an impression taken back
        # "only looks wrong": not wrong after all
        negated = bool(_NEG_BEFORE.search(before)) != bool(_SEEMING.search(before))
        if _COUNTERFACTUAL.search(before) or _SUPPOSED.search(before):
            continue  # "Thought 5 could have miscounted, but it did not", "one might think …"
        if m.group("wrong") and _SLIP.match(m.group(0)) and _SPEAKER.search(before):
            continue  # "I misread the list", "I multiplied wrongly myself": the speaker's slip
        if m.group("noun") and (
            _GENERIC.search(before)
            or (
                m.group(0).startswith("problem")
                and _THE.search(before)
                and not _ARISES.match(blank, m.end())
            )
        ):
            continue  # "a common mistake in these tasks is …" says nothing of this trace
        if m.group("noun"):
            # a mistake noun claims a mistake unless negated ("no error", "without mistakes");
            # an adverb judging the action decides over a noun in its object ("sets up the
            # problem correctly")
            adverb = _ADVERB.search(blank, m.end())
            if adverb and not negated:
                return ("wrong" if adverb.group("w") else "right"), False, adverb.start()
            return ("right" if negated else "wrong"), negated, m.start()
        kind = "wrong" if m.group("wrong") else "right"
        found = _NOT_FOUND.search(before)
        if found:
            # "I can't point to any thought that isn't correct": the search denies what it
            # looks for, a negation inside it belongs to the thing looked for
            inner = bool(_NEG_BEFORE.search(before[found.end() :]))
            return (kind if inner else _flip(kind)) or kind, True, m.start()
        if negated:
            kind = "right" if kind == "wrong" else "wrong"
        return kind, negated, m.start()
    return None, False, -1


def _clauses(text: str) -> list[str]:
    """Clauses of a stretch of answer; table and checklist rows are one clause each, their
    first cell a step reference ("| 3 | ❌ |" → "thought 3 ❌")."""
    return [c.text for c in _clauses_of(text)]


def _clauses_of(text: str) -> list[_Clause]:
    """_clauses with where each stands (first in its line, a question)."""
    lines = []
    item = 0  # the position of a bare-mark list item in its list (the k-th is thought k)
    header: list[str] = []  # the current table's column names
    if len(_INLINE_MARK.findall(text)) >= 2:  # "1 ✓ 2 ✓ 3 ✗": a checklist on one line
        text = _INLINE_MARK.sub(r"\nthought \1 \2\n", text)
    split = text.split("\n")
    for k, line in enumerate(split):
        bare = _BARE_MARK_ITEM.match(line)
        item = item + 1 if bare else (item if not line.strip() else 0)
        if bare:
            line = f"thought {item} {bare.group(1)}"
        if "|" in line:
            line, header = _table_row(line, header)
            after = split[k + 1] if k + 1 < len(split) else ""
            if header is not None and line == " ".join(header) and _is_rule(after):
                line = ""  # "| Thought | Mistake |" over its rule: column names, no claim
        else:
            header = []
        line = _LIST_MARK.sub("", line)
        line = _ROW_DASH.sub(r"\1: ", line)  # "Thought 3 — INCORRECT": a label, not a pause
        line = re.sub(r"^(\s*" + _NOUN + r"\s*#?\s*\d+\s*:\s*)x\s*$", "\\1\u274c", line)  # "…: x"
        lines.append(_NUMBER_LABEL.sub(lambda m: f"thought {m.group(1) or m.group(2)}: ", line))
    return _clause_list(lines)


@dataclass(frozen=True)
class _Clause:
    text: str
    first: bool  # the first clause of its line (a checklist or table row when it names a step)
    question: bool  # ends its sentence with "?"
    whole: bool = False  # the whole sentence
    lead: bool = True  # the first clause of its sentence


def _clause_list(lines: list[str]) -> list[_Clause]:
    out: list[_Clause] = []
    for line in lines:
        first = True
        for sentence in _SENTENCE.findall(line):
            question = sentence.rstrip().endswith("?")
            parts = [p for p in _SPLIT.split(sentence.rstrip(".!?; ")) if p and p.strip()]
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                out.append(_Clause(part, first, question and last, len(parts) == 1, i == 0))
                first = False
    return out


def _is_rule(line: str) -> bool:
    """A table's rule line ("|---|:---:|")."""
    return "-" in line and "|" in line and bool(_TABLE_SEPARATOR.match(line))


def _table_row(line: str, header: list[str]) -> tuple[str, list[str]]:
    """A table row as a clause ("| 3 | Yes |" under "Error?" → "thought 3 ❌"), and the header
    in force. A row whose first cell is not a step number is a header (or prose with bars)."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if _TABLE_SEPARATOR.match(line):
        return "", header
    m = _CELL_STEP.match(cells[0])
    if not m:
        return " ".join(cells), cells
    out = []
    for i, cell in enumerate(cells[1:], start=1):
        name = header[i] if i < len(header) else ""
        # "No — wrong holder" / "no (wrong swap)": the verdict, then its reason after punctuation
        yn = re.fullmatch(
            r"(yes|no|y|n|true|false|none|nothing|n/a)\s*(?:[.,;:!(\u2014\u2013-].*)?", cell
        )
        # ("none" / "nothing" under "Problem found": no mistake; under "Correct?" it says nothing)
        none = yn is not None and yn.group(1) in ("none", "nothing", "n/a")
        if yn and (_ASKS_WRONG.search(name) or (_ASKS_RIGHT.search(name) and not none)):
            says_yes = yn.group(1) in ("yes", "y", "true")
            wrong = says_yes == bool(_ASKS_WRONG.search(name))
            out.append("\u274c" if wrong else "\u2705")
        else:
            out.append(cell)
    return f"thought {m.group(1)} " + " ".join(out), header


def _flip(kind: str | None) -> str | None:
    return {"wrong": "right", "right": "wrong"}.get(kind or "")


def _exception_kind(blank: str, kind: str | None, prev: tuple[str | None, bool]) -> str | None:
    """The polarity of steps named as an exception: "All thoughts are correct except Thought
    4", "All thoughts except Thought 4 are correct" (the opposite of the rest); "…, except
    Thought 5, which miscounts" (what follows the exception is said of it)."""
    rest = blank[blank.rfind("STEPREF") + len("STEPREF") :]
    main = kind if kind and re.match(r"\s*(?:are|is|were|was)\b", rest) else None
    if kind and main is None:
        return kind
    return _flip(main or prev[0])


def _borrowed_kind(blank: str, prev: tuple[str | None, bool], topic_mistake: bool) -> str | None:
    """An elliptical clause's polarity, from the clause before (`prev`: its polarity and
    whether a negation gave it): "…, Thought 3 does." / "…, not Thought 4" / "and so is
    Thought 5"; "it is in Thought 4" after a clause about the mistake."""
    rest = blank.replace("STEPREF", " ").strip(" ,")
    kind, negated = prev
    if kind == "right" and re.match(
        r"^\s*(?:but\s+)?(?:it|that)\s*(?:is|'s|was|must\s+be)\s+STEPREF\s*$", blank
    ):
        return "wrong"  # "Not 2. Not 3 either. It is 4.": it names what is looked for
    if kind and _ELLIPSIS_SAME.search(rest):
        return kind
    if kind and _ELLIPSIS_NEG.search(rest):
        return kind if negated else _flip(kind)
    if kind and _ELLIPSIS_POS.search(rest):
        return _flip(kind) if negated else kind
    if topic_mistake and _IT_IS_IN.search(blank):
        return "wrong"  # "The mistake is not in Thought 2; it is in Thought 4."
    if kind is None and re.match(r"^\s*(?:and\s+|but\s+)?not\b(?:\s+(?:in|at))?\s*$", rest):
        return "right"  # "Not Thought 5. Thought 6." — the step it is not
    if kind is None and _IT_IS_NOT.match(blank):
        return "right"  # "It isn't the second thought; it's the fifth."
    return None


def _without_plans(c: _Claims, clauses: list[_Clause]) -> list[_Clause]:
    """The clauses that claim something: "I need to check each thought in order, starting
    with Thought 1" is a plan (recorded as such), not a claim about Thought 1."""
    kept = []
    named = ""  # the step a dropped plan names: "Let me verify Thought 5 first - it is wrong."
    for cl in clauses:
        plan = _PLAN.search(cl.text)
        rest = _after_plan(cl.text, plan)
        pronoun = _PRONOUN.match(cl.text) if named and plan is None else None
        if pronoun and not pronoun.group("which") and _polarity(cl.text)[0] is not None:
            # the pronoun right after the plan stands for the step it names
            cl = dataclasses.replace(cl, text=named + cl.text[pronoun.end() :])
        named = ""
        if plan is not None:
            step = re.search(r"\b(?:thought|step)\s*#?\s*\d{1,2}\b", cl.text[plan.end() :])
            named = step.group(0) if step else ""
            pronoun = _PRONOUN.match(rest) if named and rest else None
            if (
                pronoun
                and not pronoun.group("which")
                and step
                and step.end() + plan.end() <= (cl.text.find(":", plan.end()))
            ):
                rest = named + rest[pronoun.end() :]  # "Let me look at Thought 2 first: it is …"
            named = "" if rest else named
        if plan is None or rest:  # "Let me check: Thought 4 is wrong." — what follows is said
            kept.append(dataclasses.replace(cl, text=rest) if rest else cl)
    c.plan = len(kept) < len(clauses)
    return kept


def _after_plan(text: str, plan: re.Match[str] | None) -> str:
    """What follows a plan's colon ("Let me verify: the step is wrong."), else ""."""
    colon = text.find(":", plan.end()) if plan else -1
    return text[colon + 1 :].strip() if colon >= 0 else ""


def _claims(text: str, n_steps: int | None) -> _Claims:  # noqa: C901 - one pass: each clause reads the state left by those before
    c = _Claims()
    text = _CONDITIONAL.sub(" ", text)  # "if thought 2 is correct" asserts nothing
    prev: tuple[str | None, bool] = (None, False)
    topic_mistake = False
    # the references last named: "which" stands for the last, "it" / "that" for the first
    topic: list[tuple[int, list[int]]] = []
    answers_question = True  # the answer's start, or the clause after a question
    subject: list[tuple[int, list[int]]] = []  # the sentence's subject, when it is a step
    reason = False  # inside the reason after "the mistake is in Thought 2: …"
    looked = ""  # the clause before (an impression it gives may be denied: "looks wrong but isn't")
    # ("One might think Thought 3 is wrong": someone else's view, no claim)
    clauses = [cl for cl in _without_plans(c, _clauses_of(text)) if not _supposed_only(cl.text)]
    for i, cl in enumerate(clauses):
        clause = cl.text
        denied = False
        if cl.question:
            # a question answered Yes / No is read as said / denied ("Is Thought 3 wrong?
            # Yes."); otherwise it asserts nothing, and one left unanswered at the end is a
            # hedge ("Thought 3?")
            answer = _question_answer(clauses, i)
            if answer is None:
                c.hedge = c.hedge or i == len(clauses) - 1
                answers_question = True
                continue
            denied = answer == "no"
        _opening(c, cl, answers_question, after_question=i > 0 and clauses[i - 1].question)
        answers_question = False
        clause = _bare_subject(clause, bool(topic), len(re.findall(r"\d+", text)) == 1)
        groups, alternatives, blank = _ref_groups(clause, n_steps)
        steps = [s for _, g in groups for s in g]
        kind, negated, at = _polarity_at(blank)
        if denied:
            kind, negated = _flip(kind), True
        if cl.first and not groups:
            topic = []
        # the sentence's subject, when it opens on a step
        subject = (
            (groups[:1] if blank.lstrip().startswith("STEPREF") else []) if cl.lead else subject
        )
        if not steps and not cl.lead and _part_wrong(c, blank, kind, prev, topic):
            prev = ("wrong", False)
            continue
        if cl.first or steps:
            reason = ":" in blank and bool(_PLACE_THEN_REASON.search(blank))
        if not steps and kind == "right" and reason:
            # "The mistake is in Thought 2: the first letter is "b", which is fine, but …": the
            # reason after the place judges a part of the step, not the step
            continue
        if not steps and kind is not None:
            groups = _unnamed_ref(c, cl, blank, (kind, negated), topic, subject)
            steps = [s for _, g in groups for s in g]
        c.hedge = c.hedge or _hedged(blank, bool(steps or kind or cl.first))
        c.alternatives = c.alternatives or alternatives or _one_of_range(blank, groups)
        until = _UNTIL.search(blank)
        if steps and until and kind == "right" and len(steps) == blank.count("STEPREF"):
            # "no mistakes until Thought 7", "everything is fine until the eighth thought"
            before = blank[: until.start()].count("STEPREF")
            c.right.extend(steps[:before])
            c.until.append(steps[before])
            prev = ("wrong", False)
            topic = [(0, steps[before : before + 1])]
            continue
        if (
            not steps
            and kind is None
            and not cl.lead
            and _impression_denied(c, blank, looked, topic)
        ):
            prev = (_flip(prev[0]), True)
            looked = ""
            continue
        looked = blank
        groups = _passed_on(c, blank, groups, topic, kind)
        steps = [s for _, g in groups for s in g]
        if steps:
            steps, kind, negated = _step_claim(
                blank, groups, (kind, negated, at), prev, topic_mistake
            )
            if kind == "wrong" and (
                _EXCEPT.search(blank)
                or blank.lstrip().startswith("until ")
                or (not cl.lead and blank.lstrip().startswith("only "))
            ):
                # "all correct except / until it drops a bracket in Thought 6", "all fine, only
                # Thought 4 is wrong": right but for it
                c.no_mistake = False
            target = {"wrong": c.wrong, "right": c.right, None: c.named}[kind]
            target.extend(steps)
            if kind is not None:
                prev = (kind, negated)
            if kind == "right" and cl.first:
                c.right_rows += 1
            if kind == "wrong" and re.search(r"(?<!\bat\s)\bfirst\b", blank):
                c.firsts.add(min(steps))  # "the first mistake is in Thought 3"
            topic = groups
        else:
            prev = _trace_claim(c, blank, (kind, negated), prev, opening=i == 0)
        topic_mistake = bool(re.search(r"\b(?:" + _MISTAKE_NOUN + r")\b", blank)) or (
            topic_mistake and (not steps or clause.rstrip().endswith(")"))
        )
    if len(clauses) > 1 and not re.search(r"[.!?)\]]\s*$", text):
        # "… Thought 2 is correct. Thought 3" — the answer stops on a bare mention
        # "… Thought 3: B = 2. This is": a clause that stops before its verdict
        # "Thought 1 is correct. Thought 2 computes": a walk cut off on its next step (not a
        # label's value: "Mistake found: yes\nThought: 4")
        last_groups, _, last_blank = _ref_groups(clauses[-1].text, n_steps)
        c.cut = _polarity(last_blank)[0] is None and (
            (
                bool(last_groups)
                and (len(clauses) > 2 or 0 < len(re.findall(r"[a-z]{2,}", last_blank)) <= 2)
            )
            or bool(_OPEN_END.search(last_blank))
        )
    return c


# "(but) the sum is wrong / is not": a part of the step as the subject (not the whole trace)
_PART_WRONG = re.compile(
    r"^\s*(?:then\s+)?(?:the|its|their)\s+(?!(?:rest|others?|remaining|whole|entire|trace|"
    r"sequence|chain|reasoning|answer|final|mistake|error)\b)(?:[\w-]+\s+){1,3}?"
    r"(?:is|was|are|were)\b[^,;]*$"
)
_PART_NOT = re.compile(r"\b(?:is|was|are|were)(?:\s+not|n't)\s*$")


# "the mistake is in Thought 2: <its reason>"
_PLACE_THEN_REASON = re.compile(
    r"\b(?:" + _MISTAKE_NOUN + r")\b(?:(?!STEPREF)[^:])*STEPREF\s*:\s*\S"
)


def _part_wrong(
    c: _Claims,
    blank: str,
    kind: str | None,
    prev: tuple[str | None, bool],
    topic: list[tuple[int, list[int]]],
) -> bool:
    """ "In Thought 3 the product is handled correctly but the sum is not.": a part of the step
    just called right, in the same sentence, is wrong, so the step is (recorded in `c`)."""
    if not (
        topic
        and prev[0] == "right"
        and _PART_WRONG.match(blank)
        and (kind == "wrong" or (kind is None and _PART_NOT.search(blank)))
    ):
        return False
    steps = [s for _, g in topic for s in g]
    _take_back_right(c, steps)
    c.wrong.extend(steps)
    return True


# a clause that stops on a word that needs what follows ("This is", "which gives", "so the")
_OPEN_END = re.compile(
    r"\b(?:is|are|was|were|be|the|a|an|and|or|but|so|of|to|in|at|by|with|from|as|that|which|"
    r"gives|makes|this|its|it|then|because|since|closes|opens|pops|pushes)\s*[,:]?\s*$"
)


def _supposed_only(clause: str) -> bool:
    """A clause that only says what someone else might think ("One might think Thought 3 is
    wrong"; not "one might think it is wrong, but it is not")."""
    return (
        bool(_BELIEVED.search(clause) or ("to " in clause and _TEMPTED.search(clause)))
        or (_has_modal(clause) and bool(_SUPPOSED.search(clause)))
    ) and _polarity(_refs(clause, None)[2])[0] is None


def _has_modal(text: str) -> bool:
    return "could" in text or "might" in text or "may" in text or "would" in text or "will" in text


def _hedged(blank: str, claims: bool) -> bool:
    """A hedge qualifies a claim (`claims`: the clause names a step, says something, or opens
    its line) or stands as its own sentence ("I am not sure."); one in a side clause ("…, as one
    might expect") does not, nor what someone else might think ("One might assume …")."""
    own = _SUPPOSED.sub(" ", blank) if _has_modal(blank) else blank
    return bool(_DOUBT.search(own) or (claims and _HEDGE.search(own)))


# "… but isn't", "…, but it is not really": a bare denial of the clause before
_BARE_DENIAL = re.compile(
    r"^\s*(?:and\s+|but\s+)?(?:it\s+|that\s+|this\s+|they\s+)?(?:is|was|are|were|does|did)\s+not"
    r"(?:\s+(?:really|actually|in\s+fact|at\s+all))?\s*$"
)


def _impression_denied(
    c: _Claims, blank: str, looked: str, topic: list[tuple[int, list[int]]]
) -> bool:
    """ "Thought 4 looks wrong but isn't": the impression just recorded of the step is taken
    back, and the step has the opposite polarity. True when the clause was such a denial."""
    if not topic or not _BARE_DENIAL.match(blank) or not _LOOKS.search(looked):
        return False
    kind = _polarity(looked)[0]
    if kind is None:
        return False
    steps = [s for _, g in topic for s in g]
    said, other = (c.wrong, c.right) if kind == "wrong" else (c.right, c.wrong)
    for step in steps:
        while step in said:
            said.remove(step)
    other.extend(steps)
    return True


# "somewhere in Thoughts 4-6", "the mistake is in Thoughts 4-6", "one of the thoughts 2-3": one
# mistake placed in a range of steps, not each of them wrong
_ONE_OF = re.compile(
    r"(?:\b(?:somewhere|among|between|one\s+of|within|range)\b[^.;]*|\b(?:the|a|an|one)\s+(?:"
    r"mistake|error|slip|flaw|problem|issue)\s+(?:is|lies|occurs|happens|must\s+be)\s+(?:\w+\s+)?"
    r"(?:in|at|within)\s+(?:the\s+)?)$"
)


# a mistake passed on to later steps: "… propagates through / is carried forward into STEPREF"
_PASSED_TO = re.compile(
    r"\b(?:propagat\w*|carr(?:y|ies|ied)\s+(?:forward|over|on)|spread\w*|flows?|passe[sd]\s+on|"
    r"persists?|continues?|feeds?)\s+(?:(?:\w+\s+){0,2}?(?:to|into|through|throughout|onto|across|"
    r"in)\s+)?(?:all\s+|each\s+of\s+)?(?:the\s+)?$"
)
# "Thoughts 3-8 inherit that error", "Thought 4 repeats the same mistake"
_INHERITS = re.compile(
    r"^\s*(?:all\s+|both\s+)?(?:inherit|repeat|carr(?:y|ies)\s+(?:over|forward|on)|reuse|build\s+on|"
    r"builds\s+on)\w*\s+(?:that|this|the\s+same|its|the\s+earlier|the\s+previous)\s+(?:\w+\s+)?"
    r"(?:" + _MISTAKE_NOUN + r")\b"
)


def _receivers(blank: str, groups: list[tuple[int, list[int]]]) -> list[tuple[int, list[int]]]:
    """The references of a clause that receive a mistake made before them."""
    out = []
    for pos, g in groups:
        after = blank[pos + len("STEPREF") :]
        if _PASSED_TO.search(blank[:pos]) or _INHERITS.match(after):
            out.append((pos, g))
    return out


def _passed_on(
    c: _Claims,
    blank: str,
    groups: list[tuple[int, list[int]]],
    topic: list[tuple[int, list[int]]],
    kind: str | None,
) -> list[tuple[int, list[int]]]:
    """ "the same error propagates through Thoughts 3 to 8", "Thoughts 3-8 inherit that error":
    those steps receive a mistake made before them; the source is the step just named (when it
    comes earlier), else only some mistake is said. Returns the clause's other references."""
    receivers = _receivers(blank, groups) if kind != "right" else []
    if not receivers:
        return groups
    later = [s for _, g in receivers for s in g]
    rest = [g for g in groups if g not in receivers]
    source = [s for _, g in topic for s in g if s < min(later)]
    if source and not rest:
        c.wrong.extend(source)
    elif not rest:
        c.some_mistake = True  # "Thought 4 repeats the same error.": made somewhere before
    return rest


def _one_of_range(blank: str, groups: list[tuple[int, list[int]]]) -> bool:
    return any(len(g) > 1 and _ONE_OF.search(blank[:pos]) for pos, g in groups)


def _unnamed_ref(
    c: _Claims,
    cl: _Clause,
    blank: str,
    said: tuple[str | None, bool],
    topic: list[tuple[int, list[int]]],
    subject: list[tuple[int, list[int]]],
) -> list[tuple[int, list[int]]]:
    """The step a verdict that names none is about: the one a pronoun or "there" stands for,
    the step just named ("Thought 1 sets up the problem — fine."), or the sentence's subject
    for a bare verb phrase ("Thought 5 reads the list correctly but then sorts it wrongly").
    In that last case a wrong action after a right one makes the step wrong."""
    bare = not cl.lead and len(blank.split()) <= 2
    groups = _pronoun_ref(blank, topic, bare)
    if groups or cl.lead or not _SUBJECTLESS.match(blank):
        return groups
    if said == ("wrong", False):
        _take_back_right(c, [s for _, g in subject for s in g])
    return subject


def _take_back_right(c: _Claims, steps: list[int]) -> None:
    for step in steps:
        while step in c.right:
            c.right.remove(step)
            c.right_rows = max(0, c.right_rows - 1)


def _bare_subject(clause: str, after_steps: bool, lone_number: bool = False) -> str:
    """ "Thoughts 1-5 are correct; 6 is the first error.": a bare number as the subject, right
    after steps were named, is a step; so is "It's 3." after steps were named or as the
    answer's only number (not "The sum should be 5. It's 3.")."""
    if after_steps and _BARE_SUBJECT.match(clause):
        return "thought " + clause.lstrip()
    m = _IT_IS_N.match(clause) if after_steps or lone_number else None
    if m:  # "It's 3." — the answer, said of what was being looked for
        return clause[: m.start(1)] + "thought " + clause[m.start(1) :]
    return clause


def _opening(c: _Claims, cl: _Clause, opens: bool, after_question: bool) -> None:
    """A lead "No," / "Yes," (of the answer's first clause, or the one after a question);
    "There are none." after "Are there any mistakes?"; a sentence that is only "No." (not the
    answer to a question)."""
    m = _LEAD_INTERJECTION.match(cl.text)
    if m and opens:
        c.interjection = c.interjection or m.group(1)
    if after_question and _NONE_ANSWER.match(cl.text):
        c.no_mistake = True
    if cl.whole and not after_question and _BARE_NO.match(cl.text):
        c.said_no = True


def _pronoun_ref(
    blank: str, topic: list[tuple[int, list[int]]], bare: bool = False
) -> list[tuple[int, list[int]]]:
    """The step a verdict without one is about: "Thought 3: … That's wrong." (the first named
    before), "Thought 2 relies on Thought 1, which is correct" (the last), "… no mistake there"."""
    pronoun = _PRONOUN.match(blank)
    if not topic or not (pronoun or bare or _THERE.search(blank)):
        return []
    ref = topic[-1] if pronoun and pronoun.group("which") else topic[0]
    return [(0, list(ref[1]))]


def _question_answer(clauses: list[_Clause], i: int) -> str | None:
    """'yes' / 'no' when the clause after question i opens with that word, else None."""
    if i + 1 >= len(clauses) or clauses[i + 1].question:
        return None
    m = _LEAD_INTERJECTION.match(clauses[i + 1].text)
    if m:
        return "no" if m.group(1) in ("no", "nope") else "yes"
    m = _SHORT_ANSWER.match(clauses[i + 1].text)  # "Does it contain a mistake? It does not."
    if m:
        return "no" if m.group(1) else "yes"
    return None


def _step_claim(
    blank: str,
    groups: list[tuple[int, list[int]]],
    said: tuple[str | None, bool, int],
    prev: tuple[str | None, bool],
    topic_mistake: bool,
) -> tuple[list[int], str | None, bool]:
    """(steps, polarity, negated) of a clause naming steps: an exception takes the opposite of
    the rest, an elliptical clause borrows the previous one's, and with several references the
    verdict goes to the subject ("Only Thought 8 has an error: it repeats Thought 7." — the
    steps before the verdict word, or else all after it); the others are mentions."""
    kind, negated, at = said
    steps = [s for _, g in groups for s in g]
    if _EXCEPT.search(blank) and (kind or prev[0]):
        return steps, _exception_kind(blank, kind, prev), False
    if kind is None:
        return steps, _borrowed_kind(blank, prev, topic_mistake), negated
    if len(groups) > 1:
        # "propagates the earlier mistake from Thought 3": a mistake noun with its place
        # "… is carried over from Thought 5": the step the mistake comes from
        origin = _ORIGIN.search(blank, at)
        place = _PLACE.match(blank, at)
        where = at + len(place.group(0)) - len("STEPREF") if place else -1
        if origin:
            where = origin.end() - len("STEPREF")
        owner = re.search(r"STEPREF 's\s*$", blank[:at])
        if owner:  # "builds on Thought 3's correct result": the verdict is of Thought 3's
            where = owner.start()
        groups = [(p, g) for p, g in groups if not _SET_AGAINST.search(blank[:p])] or groups
        # "After Thought 2 things go wrong: Thought 3 …": a boundary names no step of its own
        groups = [(p, g) for p, g in groups if g] or groups
        subject = (
            [g for pos, g in groups if pos == where]
            or [g for pos, g in groups if pos < at and not blank.startswith("STEPREF 's", pos)]
            or [g for pos, g in groups if pos < at]
            or [g for _, g in groups]
        )
        steps = [s for g in subject for s in g]
    return steps, kind, negated


_SET_AGAINST = re.compile(r"\b(?:rather\s+than|instead\s+of|unlike|not)\s+(?:the\s+)?$")


def _trace_claim(
    c: _Claims,
    blank: str,
    said: tuple[str | None, bool],
    prev: tuple[str | None, bool],
    opening: bool = False,
) -> tuple[str | None, bool]:
    """Record a clause that names no step: no mistake ("zero errors", "everything checks out",
    "…, and so is everything else"), a mistake somewhere, or a loose verdict. Returns the
    polarity the next clause may borrow."""
    kind, negated = said
    if kind is None and prev[0] and _ELLIPSIS_SAME.search(blank):
        kind, negated = prev
    if kind is None:
        return prev
    if kind == "right" and _NOT_HERE.search(blank):
        return kind, negated  # "the mistake is not where you would expect": it is elsewhere
    if opening and kind == "right" and not negated and len(blank.split()) <= 3:
        c.opening_right = True  # "Flawless — …", "All correct." as the answer's first words
    if not negated and _THE_REST.search(blank):
        # "the rest are wrong / fine": every step not named otherwise
        if kind == "wrong":
            c.others_wrong = True
        else:
            c.others_right = True
        return kind, negated
    if _RELATIVE.search(blank) and (negated or _GLOBAL_SUBJECT.search(blank)):
        c.others_right = c.others_right or kind == "right"
    elif kind == "right" and (negated or _GLOBAL_SUBJECT.search(blank)):
        c.no_mistake = True
        # "all the intermediate steps are right": every step but the last
        c.but_last = c.but_last or bool(re.search(r"\bintermediate\b", blank))
    elif kind == "wrong" and (_is_mistake_claim(blank) or blank.lstrip().startswith("until ")):
        c.some_mistake = True  # ("… correct until it swaps the wrong pair": somewhere)
    else:
        c.loose = True
    return kind, negated


_THE_REST = re.compile(
    r"^\s*(?:and\s+|but\s+)?(?:all\s+)?the\s+(?:rest(?:\s+of\s+(?:the\s+)?(?:them|thoughts|steps))?|others|remaining\s+(?:ones|thoughts|steps)|"
    r"other\s+(?:ones|thoughts|steps))\s+(?:are|were|all)\b"
)


def _is_mistake_claim(blank: str) -> bool:
    """A clause claiming a mistake without a place ("there is a mistake", "the trace is
    flawed"), not one about something else ("the correct answer is wrong"?) — read as such only
    with a mistake noun or a whole-trace subject."""
    return bool(
        re.search(r"\b(?:" + _MISTAKE_NOUN + r")\b", blank) or _GLOBAL_SUBJECT.search(blank)
    )


def _checked(step: int, n_steps: int | None, rule: str) -> TraceAnswer:
    if step == LAST:
        return TraceAnswer("ambiguous", None, rule + ":last_of_unknown_length")
    if step < 1 or (n_steps is not None and step > n_steps):
        return TraceAnswer("out_of_range", step, rule)  # (no trace has a step 0)
    return TraceAnswer("ok", step, rule)


def _unresolved(c: _Claims, wrong: list[int], right: set[int]) -> str | None:
    """Why claims cannot give one answer, before they are weighed: a chain of thought cut on a
    bare mention, two different steps each called *the first* mistake, a lone "No." beside a
    step."""
    if c.plan and c.empty_but_plan():
        return "plan_only"  # a plan with no answer
    if c.cut and not c.wrong:
        return "cut_off"
    if len(c.firsts) > 1:
        return "contradiction"
    if c.said_no and (wrong or c.some_mistake or (c.named and not right and not c.no_mistake)):
        return "contradiction"  # "No. Thought 3."
    return None


def _wrong_answer(
    c: _Claims, wrong: list[int], right: set[int], n_steps: int | None
) -> TraceAnswer | None:
    """The answer from the steps called wrong (the first), or from "the rest are wrong" (the
    first step not called right); None when no step is called wrong."""
    if wrong:
        if c.no_mistake and not (c.but_last and n_steps and min(wrong) == n_steps):
            return TraceAnswer("ambiguous", None, "contradiction")
        return _checked(min(wrong), n_steps, "wrong_step")
    if c.others_wrong and right and not c.no_mistake and not c.named:
        # "Only Thought 1 is right; the rest are wrong": the first step not called right
        rest = next(k for k in range(1, len(right) + 2) if k not in right)
        return _checked(rest, n_steps, "rest_wrong")
    return None


def _resolve(c: _Claims, n_steps: int | None) -> TraceAnswer | None:
    """One answer from the claims, `ambiguous` when they do not give one, None when there
    are none."""
    if c.empty():
        return None
    wrong = list(dict.fromkeys(c.wrong or c.until))
    right = set(c.right)
    unsure = _unresolved(c, wrong, right)
    if unsure:
        return TraceAnswer("ambiguous", None, unsure)
    if c.hedge or (c.alternatives and len(set(wrong or c.named)) > 1):
        return TraceAnswer("ambiguous", None, "hedge")
    if set(wrong) & right:
        return TraceAnswer("ambiguous", None, "contradiction")
    got = _wrong_answer(c, wrong, right, n_steps)
    if got:
        return got
    if c.no_mistake:
        if c.some_mistake or c.interjection in ("yes", "yeah", "yep", "yup"):
            # ("Yes. There is no mistake in this sequence.": a mistake said and denied)
            return TraceAnswer("ambiguous", None, "contradiction")
        return TraceAnswer("ok", None, "no_mistake")
    named = [s for s in dict.fromkeys(c.named) if s not in right]
    if c.some_mistake and len(named) != 1:
        return TraceAnswer("ambiguous", None, "mistake_without_place")
    if len(named) == 1:
        return _checked(named[0], n_steps, "named_step")
    if len(named) > 1:
        return TraceAnswer("ambiguous", None, "several_steps")
    if c.interjection in ("no", "nope") and (not right or c.said_no):
        # "No. (Thought 2's wording is clumsy, but it isn't a mistake.)": steps only called
        # right beside a whole-sentence "No." keep it
        return TraceAnswer("ok", None, "no")
    if c.opening_right and not right and not c.some_mistake and not c.hedge:
        return TraceAnswer("ok", None, "no_mistake")
    every = bool(n_steps) and right >= set(range(1, (n_steps or 0) + 1))
    if (
        right
        and not c.some_mistake
        and not named
        and (c.right_rows >= 2 or every or c.others_right)
    ):
        # a checklist or table whose every row is ✅, or every step called right: no mistake
        return TraceAnswer("ok", None, "all_right")
    return TraceAnswer("ambiguous", None, "nothing_resolved")


def _read_region(region: str, n_steps: int | None) -> TraceAnswer | None:
    """A stretch of answer: a bare answer, a bare "No", or its resolved claims."""
    region = region.strip()
    if not region:
        return None
    m = _BARE.match(region)
    if m:
        return _checked(_to_int(m.group("n") or m.group("n2")), n_steps, "bare_number")
    if _BARE_NO.match(region):
        return TraceAnswer("ok", None, "no")
    return _resolve(_claims(region, n_steps), n_steps)


def _json_object(text: str) -> dict[str, object] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    lead = text.find("[")
    if 0 <= lead < start and text.rfind("]") > end and not text[:lead].strip(" \n`json"):
        # a list of per-step objects: [{"thought": 1, "ok": true}, …]
        try:
            items = json.loads(text[lead : text.rfind("]") + 1])
        except ValueError:
            return None
        return {"steps": items} if isinstance(items, list) else None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# a per-step object's verdict: {"thought": 3, "ok": false} / {"step": 2, "has_error": true}
_ITEM_RIGHT_KEY = re.compile(r"^(?:is_)?(?:ok|correct|valid|right|fine|passed)$")
_ITEM_WRONG_KEY = re.compile(
    r"^(?:(?:has|contains)_(?:an?_)?(?:mistakes?|errors?|flaws?)|is_(?:wrong|incorrect|erroneous"
    r"|flawed)|wrong|incorrect|erroneous|mistaken|error|mistake)$"
)


_ITEM_STATUS_KEY = re.compile(
    r"^(?:status|verdict|result|assessment|judg(?:e)?ment|evaluation|label|ok|correct)$"
)


def _item_verdict(item: dict[str, object]) -> bool | None:
    """True (wrong), False (right) or None of one per-step object; None when its flags
    disagree."""
    said = set()
    for k, v in item.items():
        if isinstance(v, str) and _ITEM_STATUS_KEY.match(k.lower()):
            verdict = _step_verdict(_clean(v, step=True))  # {"status": "wrong"}
            said.add(verdict == "no" if verdict in ("yes", "no") else None)
        elif isinstance(v, bool):
            if _ITEM_RIGHT_KEY.match(k.lower()):
                said.add(not v)
            elif _ITEM_WRONG_KEY.match(k.lower()):
                said.add(v)
    return said.pop() if len(said) == 1 else None


# the field naming the step: its name speaks of the mistake / step / answer
# ("first_wrong_step", "error_step", "first_mistake_thought", "mistake_index", "answer"); a
# count or a flag is not one. Its number is read as the N of "Thought N", what the prompt asks
# for (bbm_heldout_v2.md: the dataset's 0-based index has nothing to do with the answer text).
_JSON_STEP_KEY = re.compile(
    r"^(?!(?:has|is|contains|num|n|count|total|number_of)_)"
    # (a count is not a step: "errors_found": 1, "thoughts_checked": 8, "error_count": 2)
    r"(?!\w*_(?:found|checked|count|total|seen|reviewed)$)\w*"
    r"(?:mistake|error|wrong|incorrect|flaw|step|thought|answer)\w*$|^n$"
)
# {"has_mistake": false}: a yes/no about the whole trace
_JSON_FLAG_KEY = re.compile(
    r"^(?:has|contains|is)_(?:an?_)?(?:mistakes?|errors?|flaws?)|^(?:mistakes?|errors?)_found$"
)


_JSON_COUNT_KEY = re.compile(
    r"^(?:(?:num|n|count|total|number)_(?:of_)?(?:mistakes|errors|flaws)|(?:mistakes?|errors?|"
    r"flaws?)_(?:count|found|total|number))$"
)


def _json_value(value: object, n_steps: int | None) -> TraceAnswer | None:
    if value is None or (isinstance(value, str) and _BARE_NO.match(_clean(value))):
        return TraceAnswer("ok", None, "json")
    if isinstance(value, int) and not isinstance(value, bool):
        return _checked(value, n_steps, "json")
    if isinstance(value, str):
        return _read_region(_clean(value), n_steps)
    if isinstance(value, list):
        # {"errors": [{"thought": 4, …}, {"thought": 6, …}]}: the first; [] = none
        steps = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        flagged = [
            i
            for i in value
            if isinstance(i, dict)
            and any(
                isinstance(x, bool) or (isinstance(x, str) and _ITEM_STATUS_KEY.match(k.lower()))
                for k, x in i.items()
            )
        ]
        if flagged and len(flagged) == len(value):
            # per-step verdicts [{"thought": 1, "ok": true}, {"thought": 3, "ok": false}]:
            # the first step flagged wrong, none = "No"; a flag that says nothing: ambiguous
            wrong = []
            for item in flagged:
                verdict = _item_verdict(item)
                nums = [
                    v
                    for k, v in item.items()
                    if re.fullmatch(r"step|thought|index|n|number|id", k.lower())
                    and isinstance(v, int)
                    and not isinstance(v, bool)
                ]
                if verdict is None or len(nums) != 1:
                    return TraceAnswer("ambiguous", None, "json")
                if verdict:
                    wrong.append(nums[0])
            return (
                _checked(min(wrong), n_steps, "json") if wrong else TraceAnswer("ok", None, "json")
            )
        for item in value:
            if isinstance(item, dict):
                steps += [
                    v
                    for k, v in item.items()
                    if _JSON_STEP_KEY.match(k.lower())
                    and isinstance(v, int)
                    and not isinstance(v, bool)
                ]
        if not value:
            return TraceAnswer("ok", None, "json")
        if steps:
            return _checked(min(steps), n_steps, "json")
    return TraceAnswer("ambiguous", None, "json")


def _from_json(text: str, n_steps: int | None) -> TraceAnswer | None:
    """The step field ({"first_error": 3}, null = "No"), else the whole-trace flag; ambiguous
    when the object's own fields disagree (a null step with an explanation naming a wrong
    step, a flag against the step)."""
    data = _json_object(text)
    if data is None:
        return None
    keys = [k for k in data if _JSON_STEP_KEY.match(k.lower()) and not isinstance(data[k], bool)]
    if len(keys) > 1:  # ({"n": 8, "first_error": 3}: a bare "n" beside a named field is a count)
        keys = [k for k in keys if k.lower() != "n"]
    keys.sort(key=lambda k: (k.lower() in ("answer", "step"), list(data).index(k)))
    flags = {data[k] for k in data if _JSON_FLAG_KEY.match(k.lower())}
    # a count of mistakes says whether there is one: {"error_count": 0}
    flags |= {
        bool(v)
        for k, v in data.items()
        if _JSON_COUNT_KEY.match(k.lower()) and isinstance(v, int) and not isinstance(v, bool)
    }
    found = _json_value(data[keys[0]], n_steps) if keys else None
    said_steps = {
        None if data[k] is None else data[k]
        for k in keys
        if data[k] is None or (isinstance(data[k], int) and not isinstance(data[k], bool))
    }
    if len(said_steps) > 1:
        # {"first_mistake": null, "thought": 4}: two step fields that disagree
        return TraceAnswer("ambiguous", None, "json:contradiction")
    if found is None:
        if flags == {False}:
            return TraceAnswer("ok", None, "json")
        if flags == {True}:
            return TraceAnswer("ambiguous", None, "json:mistake_without_place")
        return None
    said = {v for v in flags if isinstance(v, bool)}
    notes = [
        _resolve(_claims(_clean(v), n_steps), n_steps)
        for k, v in data.items()
        if isinstance(v, str) and k not in keys
    ]
    if found.status == "ok" and found.step is None:
        if said == {True} or any(n and n.rule == "wrong_step" and n.step for n in notes):
            return TraceAnswer("ambiguous", None, "json:contradiction")
    elif found.status in ("ok", "out_of_range") and said == {False}:
        return TraceAnswer("ambiguous", None, "json:contradiction")
    if found.status == "ok":
        # its own explanation, or the prose around the object, names another answer
        # ({"first_mistake": 3, "explanation": "The first incorrect thought is Thought 6 …"})
        start, end = text.find("{"), text.rfind("}")
        prose = _clean(text[:start] + " " + text[end + 1 :]).replace("```json", " ")
        for other in [_clean(v) for k, v in data.items() if isinstance(v, str) and k not in keys]:
            if _conflicts(other, other, found.step, n_steps):
                return TraceAnswer("ambiguous", None, "json:conflict")
        if _conflicts(prose, prose.strip("` \n"), found.step, n_steps):
            return TraceAnswer("ambiguous", None, "json:conflict")
        written = _read_region(prose.strip("` \n"), n_steps) if prose.strip("` \n") else None
        if (
            written
            and written.status == "ok"
            and written.rule == "wrong_step"
            and written.step != found.step
            and _is_mistake_claim(prose)
            and not re.search(r"\b(?:also|too|as\s+well|later|again)\b", prose)
        ):
            # "The mistake is in Thought 4.\n```json {"mistake_step": 2}```": the sentence
            # and the object each give an answer, and nothing chooses between them
            return TraceAnswer("ambiguous", None, "json:against_prose")
    return found


def parse_trace_answer(text: str | None, n_steps: int | None = None) -> TraceAnswer:
    """The first wrong step (1-based) or "No" from a direct_trace answer, `ambiguous` when its
    claims do not resolve, `unparsable` when it says nothing readable.

    Order: JSON; a first line that is exactly a number or "No"; the part after a
    self-correction ("Actually, …"); the part after the last answer marker; the whole answer.
    A part that gives an in-range answer wins; an out-of-range one is kept only if nothing
    after it gives one.
    """
    if text is None or not text.strip():
        return TraceAnswer("unparsable", None, "empty")
    found = _from_json(text, n_steps)
    if found is not None:
        return found
    clean = _clean(text)
    if not clean:
        return TraceAnswer("unparsable", None, "empty")
    said_no = _first_line_no(clean, n_steps)
    if said_no is not None:
        return said_no
    regions = _regions(clean, n_steps)
    if isinstance(regions, TraceAnswer):
        return regions
    fallback: TraceAnswer | None = None
    for name, region, rest in regions:
        got = _read_region(region, n_steps)
        if got is None:
            continue
        if name == "correction" and (
            got.rule == "plan_only"
            or (got.rule == "named_step" and _cut_off(clean))
            or (got.rule in ("named_step", "bare_number") and _recheck(clean))
        ):
            # "… Wait, let me re-check Thought 3, because the bracket count": a bare mention
            # "Thought 4. Actually, wait, I need to recheck Thought 2 …": withdrawn, no new answer
            return TraceAnswer("ambiguous", None, "correction:withdrawn")
        if got.status == "ok":
            against = (
                _marked_against(clean, region, got.step, n_steps)
                if name
                in (
                    "conclusion",
                    "marker",
                )
                else None
            )
            if against:
                return TraceAnswer("ambiguous", None, f"{name}:{against}")
            if name != "correction" and _conflicts(
                clean, rest, got.step, n_steps, concludes=name == "conclusion"
            ):
                return TraceAnswer("ambiguous", None, f"{name}:conflict")
            return TraceAnswer("ok", got.step, f"{name}:{got.rule}")
        if got.status == "out_of_range":
            fallback = fallback or TraceAnswer(got.status, got.step, f"{name}:{got.rule}")
            continue
        if name == "all":
            return fallback or TraceAnswer(got.status, got.step, f"{name}:{got.rule}")
    return fallback or TraceAnswer("unparsable", None, "none")


def _marked_against(clean: str, region: str, step: int | None, n_steps: int | None) -> str | None:
    """What a marked answer or conclusion stands against, if anything: an opening "no mistake"
    ("No mistakes. The first error is in Thought 6."), a checklist ("- Thought 3 ❌ …
    Conclusion: there are no mistakes"), or a trailing bare "No" ("So the first error is
    Thought 2.\n\nNo")."""
    if step is not None and _against_whole(clean, n_steps):
        return "against_whole"
    if _against_checklist(clean, region, step):
        return "against_checklist"
    if step is not None and _trailing_no(clean, region):
        return "against_last_line"
    return None


def _trailing_no(clean: str, region: str) -> bool:
    """The answer's last line, apart from the part read, is a bare "No" (the prompt's answer
    of no mistake), with no self-correction before it."""
    last = clean.rstrip().split("\n")[-1]
    return (
        "\n" in clean.strip()
        and bool(_BARE_NO.match(last))
        and last.strip() not in region
        and not _CORRECTION.search(clean)
    )


def _first_line_no(clean: str, n_steps: int | None) -> TraceAnswer | None:
    """A first line that is exactly "No" (what the prompt asks for) is the answer, unless a
    self-correction after it takes it back or the rest names a wrong step ("No\n\nThought 4
    miscounts …": two answers)."""
    first_line = clean.split("\n")[0]
    if not _BARE_NO.match(first_line) or _corrected_after_first_line(clean):
        return None
    if _conflicts(clean, clean[len(first_line) :], None, n_steps):
        return TraceAnswer("ambiguous", None, "first_line:conflict")
    return TraceAnswer("ok", None, "no")


def _regions(clean: str, n_steps: int | None) -> list[tuple[str, str, str]] | TraceAnswer:
    """The parts of an answer to read, in order: a first line that is the bare answer; the
    latest of a self-correction, an answer marker and a conclusion ("Therefore, …"); a last
    line that is the bare answer; the whole. Two "Answer:" lines that disagree are
    `ambiguous` (nothing chooses between them)."""
    regions: list[tuple[str, str, str]] = []
    first_line = clean.split("\n")[0]
    if _BARE.match(first_line) and not _corrected_after_first_line(clean):
        regions.append(("first_line", first_line, clean[len(first_line) :]))
    lead = _NUMBER_THEN_REASON.match(first_line)
    if (
        lead
        and not re.search(r"\d", lead.group(2))
        and _polarity(lead.group(2))[0] != "right"
        and not _HEDGE.search(lead.group(2))
        and not _DOUBT.search(lead.group(2))
        and not _corrected_after_first_line(clean)
    ):
        regions.append(("first_line", lead.group(1), clean[len(first_line) :]))
    dotted = _NUMBER_DOT_REASON.match(clean) if "\n" not in clean.strip() else None
    if (
        dotted
        and not _REF.search(dotted.group(2))
        and (
            _VALUE_CORRECTED.search(dotted.group(2))
            or _polarity(_refs(dotted.group(2), n_steps)[2])[0] == "wrong"
        )
        and not _HEDGE.search(dotted.group(2))
        and not _DOUBT.search(dotted.group(2))
        and not _CORRECTION.search(clean)
    ):
        # "3. -6 + 5 - 72 is -73, not -67.": the answer, a full stop, then why (its arithmetic
        # corrected, or a part called wrong), naming no other step
        regions.append(("first_line", dotted.group(1), ""))
    label = _LABEL_LINE.match(clean) if "\n" not in clean else None
    if label and _BARE.match(label.group(1)):
        regions.append(("label", label.group(1), ""))  # "Following your format: 8"
    late: list[tuple[int, str, str, str]] = []
    corrections = list(_CORRECTION.finditer(clean))
    if corrections:
        late.append((corrections[-1].end(), "correction", clean[corrections[-1].end() :], ""))
    markers = [m for m in _MARKER.finditer(clean) if not _in_echo(clean, m)]
    if markers:
        read = [_read_region(_marked(clean, m), n_steps) for m in markers]
        answers = {a.step if a.status == "ok" else a.status for a in read if a}
        if (
            len(answers) > 1
            and not corrections
            and all(_LINE_MARKER.match(m.group(0)) for m in markers)
        ):
            # "Answer: 3 … Answer: 5": two answers, nothing choosing between them
            return TraceAnswer("ambiguous", None, "marker:several_answers")
        steps = {
            a.step
            for a, m in zip(read, markers)
            if a and a.status == "ok" and (_line_start(clean, m) or m.group("first"))
        }
        if len(steps) > 1 and not corrections:
            # "First mistake: Thought 2\nFirst mistake: Thought 6": two labelled answers
            return TraceAnswer("ambiguous", None, "marker:several_answers")
        last_marker = markers[-1]
        marked = _marked(clean, last_marker)
        start = last_marker.start("first") if last_marker.group("first") else last_marker.start()
        rest = clean[:start] + clean[clean.find(marked, start) + len(marked) :]
        late.append((last_marker.end(), "marker", marked, rest))
    conclusions = list(_CONCLUSION.finditer(clean))
    if conclusions:
        conclusion = conclusions[-1]
        late.append(
            (conclusion.end(), "conclusion", clean[conclusion.end() :], clean[: conclusion.start()])
        )
    regions.extend((name, region, rest) for _, name, region, rest in sorted(late, reverse=True))
    last = clean.split("\n")[-1]
    if _row_cut_off(clean):
        return TraceAnswer("ambiguous", None, "cut_off:row")
    if "\n" in clean and (_BARE.match(last) or _BARE_NO.match(last)):
        regions.append(("last_line", last, clean[: -len(last)]))  # under an echo of the task
    regions.append(("all", clean, ""))
    return regions


def _conflicts(
    clean: str, rest: str, step: int | None, n_steps: int | None, concludes: bool = False
) -> bool:
    """The rest of the answer (outside the part read as its answer) makes a claim that the
    answer cannot stand beside, and nothing marks either as a correction of the other: a step
    called wrong before the step answered ("Thought 2 has an error. The first error is in
    Thought 4."; "| 3 | incorrect | … So the answer is 6") or beside an answer of no mistake,
    another step called *the first* mistake, the answered step called right ("Thought 4 is
    fine. Final answer: 4"; not before a conclusion, which may revise its walk), or "no
    mistakes" said of the whole beside a step. A later step also called wrong ("While Thought 6
    is also wrong, the first mistake is in Thought 2"), a bare mention, another step called
    right or claims that do not resolve are no other answer."""
    if not rest.strip() or _CORRECTION.search(clean):
        return False
    c = _claims(rest, n_steps)
    if c.empty() or c.hedge:
        return False
    if step in c.right and not (c.wrong or c.named or c.loose or c.plan or concludes):
        return True
    other = _resolve(c, n_steps)
    if other is None or other.status != "ok":
        return False
    if c.firsts and step not in c.firsts:
        return True  # "The first mistake is in Thought 6." beside {"first_mistake": 2}
    if other.rule == "wrong_step" and other.step is not None:
        return step is None or other.step < step
    # ("everything after is computed correctly from that wrong setup": of the rest, not the whole)
    return step is not None and other.rule == "no_mistake" and c.no_mistake and not c.named


def _recheck(clean: str) -> bool:
    """The last self-correction only means to look again ("Actually, let me recheck Thought 2"):
    the step it names is what it will check, no answer."""
    last = list(_CORRECTION.finditer(clean))[-1:]
    return bool(last) and last[0].group(0).startswith("let ")


def _corrected_after_first_line(clean: str) -> bool:
    """A self-correction after the first line ("Thought 8\n\nCorrection: Thought 7 …",
    "No\nWait, Thought 3 drops a bracket."): the bare first line is taken back, it does not win."""
    first = clean.find("\n")
    return first >= 0 and _CORRECTION.search(clean, first) is not None


# "3. -6 + 5 - 72 is -73, not -67.", "2. The stack is wrong.": the lone answer line "N." and why
_NUMBER_DOT_REASON = re.compile(r"^\s*(\d{1,2})\.\s+(?=[-+(\w])(.+)$")
# a value set right: "is -73, not -67", "= 56 (not 54)", "should be 12", "gives 9 instead of 8"
_VALUE_CORRECTED = re.compile(
    r"-?\d[\d.]*\s*\)?\s*,?\s*\(?\s*not\s+-?\d|\bshould\s+(?:be|give|equal)\s+-?\d|"
    r"\binstead\s+of\s+-?\d|\bnot\s+-?\d[\d.]*\s*(?:as\s+\w+\s+(?:says|claims|has))"
)


# "4 - the stack is wrong", "6: it swaps the wrong pair": a step number, then its reason
_NUMBER_THEN_REASON = re.compile(r"^\s*(\d{1,2})\s*(?:\s[-\u2014\u2013]|:)\s+(?=[a-z'])(.*)$")


# a first line that is a label and the bare answer ("Following your format: 8", "Here it
# is: Thought 3"), not a count ("Steps checked: 8", "Number of thoughts: 8")
_LABEL_LINE = re.compile(
    r"^(?![^:]*\b(?:number|count|total|checked|length|steps|thoughts|sum|value|result|confidence|"
    r"score|rating|probability|certainty|index|position|swaps?|moves?)\b)"
    r"[a-z][a-z ,'-]{0,60}:\s*(\S.{0,30}?)\s*$"
)
_CHECK_ROW = re.compile(
    r"(?m)^\s*(?:[-*+\u2022]|\d+[.)]|\|)?\s*(?:(?:thought|step)\s*#?\s*(?=\d)|(?<=\|)\s*)(\d+)\b[^\n]*?"
    r"(?:(?P<w>[" + _MARK_WRONG + r"])|[" + _MARK_RIGHT + r"])"
)


_STEP_ROW = re.compile(r"^\s*(?:[-*+\u2022]\s*)?(?:thought|step)\s*#?\s*(\d+)\b")


def _row_cut_off(clean: str) -> bool:
    """A check of the steps line by line whose last line is only the next step's label, with
    no verdict and no closing mark ("Thought 1 is correct.\nThought 2 …, correct.\nThought 3"):
    the answer stops inside a row; the label is no answer."""
    lines = [ln for ln in clean.split("\n") if ln.strip()]
    last = _STEP_ROW.match(lines[-1]) if len(lines) > 2 else None
    if not last or lines[-1][last.end() :].strip(" :-"):
        return False
    rows = [m for m in map(_STEP_ROW.match, lines[:-1]) if m]
    return len(rows) >= 2 and all(int(m.group(1)) < int(last.group(1)) for m in rows)


def _against_checklist(clean: str, region: str, step: int | None) -> bool:
    """A checklist of two rows or more (✅ / ❌ per step) before a conclusion that names another
    first mistake (or none where a row is ❌), with no self-correction between them."""
    before = clean[: clean.rfind(region)] if region in clean else clean
    rows = list(_CHECK_ROW.finditer(before))
    if len(rows) < 2 or _CORRECTION.search(clean):
        return False
    wrong = [int(m.group(1)) for m in rows if m.group("w")]
    return (min(wrong) if wrong else None) != step


def _cut_off(clean: str) -> bool:
    """The answer stops mid-sentence (no closing mark, not a bare answer line)."""
    last = clean.rstrip().split("\n")[-1]
    return not re.search(r"[.!?)\]>\u2705\u274c]\s*$", last) and not (
        _BARE.match(last) or _BARE_NO.match(last)
    )


def _against_whole(clean: str, n_steps: int | None) -> bool:
    """The answer opens on a sentence that says "no mistake" of the whole ("No mistakes.",
    "Everything is correct.") and then marks a wrong step, with no self-correction between
    them: the marked sentence does not choose between the two."""
    first = re.split(r"(?<=[.!?])\s|\n", clean, maxsplit=1)[0]
    if first == clean or _CORRECTION.search(clean) or re.search(r"\d", first) or _REF.search(first):
        return False
    got = _read_region(first, n_steps)
    return got is not None and got.status == "ok" and got.step is None


_LINE_MARKER = re.compile(r"\s*(?:(?:final\s+)?answer\s*[:\-=\u2014\u2013]|final\s*:)")


def _marked(clean: str, m: re.Match[str]) -> str:
    """What an answer marker marks: the rest of its line; of a sentence saying where the first
    mistake is, that sentence."""
    if m.group("first"):
        # (the sentence from its first word: the match may open on the line break before it)
        start = m.start("first") + len(m.group("first")) - len(m.group("first").lstrip())
        return re.split(r"(?<=[.!?])\s", clean[start:].split("\n")[0])[0]
    line = clean[m.end() :].split("\n")[0]
    # ("Answer: 3. Thought 6 is also wrong.": the answer is the sentence the marker opens)
    head = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    return head if _BARE.match(head) or _BARE_NO.match(head) else line


def _line_start(clean: str, m: re.Match[str]) -> bool:
    """The marker opens its line ("First mistake: …" as a label, not inside a sentence)."""
    return not clean[: m.start()].split("\n")[-1].strip()


def _in_echo(text: str, m: re.Match[str]) -> bool:
    """A marker followed by "if" parrots the instruction ('"Answer: Yes" if …')."""
    return bool(re.match(r"\s*\w+[.,]?\s+if\b", text[m.end() :]))


# -- step level -------------------------------------------------------------------------------

_YN = re.compile(
    r"\b(?:(?P<yes>yes|yeah|yep|yup)|(?P<no>no|nope|nah))\b(?!\s+(?:" + _MISTAKE_NOUN + r"|"
    r"(?:\w+\s+)?(?:" + _MISTAKE_NOUN + r")|if\b|wait\b))"
)
_MARKED_YN = re.compile(
    # (not what the speaker would have answered: "Initially I would answer No because …")
    r"(?:(?<!would\s)(?<!might\s)(?<!could\s)(?<!to\s)(?<!first\s)(?<!initially\s)"
    r"(?:final\s+answer|answer|verdict|conclusion)\s*(?:is)?\s*[:\-\u2014\u2013]?\s*|"
    r"\bfinal\s*[:\u2014\u2013]\s*|"
    r"\bthe\s+answer\s+is\s*:?\s*)(?P<v>yes|no|correct|incorrect)\b(?![.,]?\s+if\b)"
    r"(?!\s+(?:\w+\s+)?(?:" + _MISTAKE_NOUN + r")\b)"
)


_BARE_YN = re.compile(r"^\s*(?:yes|no)\s*[.!]?\s*$")
_ECHO = re.compile(
    r"answer\s*:?\s*yes\b.*\banswer\s*:?\s*no\b|answer\s*:?\s*no\b.*\banswer\s*:?\s*yes\b"
)


def _step_verdict(clause: str) -> str | None:
    """'yes' / 'no' / 'ambiguous' / None (says nothing) of one clause about the asked step."""
    _, _, blank = _refs(clause, None)
    plan = _PLAN.search(blank)
    if plan:
        rest = _after_plan(blank, plan)
        return _step_verdict(rest) if rest else None
    attitude = _ATTITUDE_ANSWER.fullmatch(blank.strip(" .!,"))
    if attitude:  # "Unfortunately not.", "I'm afraid not.", "Sadly, no."
        return "yes" if attitude.group(1) == "yes" else "no"
    if _HEDGE.search(_SUPPOSED.sub(" ", blank) if _has_modal(blank) else blank):
        return "ambiguous"
    agree = _NO_DENIAL.match(blank)
    if agree and _polarity(blank[agree.end() :])[:2] == ("right", True):
        # "No, there is no mistake in this thought.": the No answers "is there a mistake?"
        return "yes"
    votes = set()
    if _BARE_SIGN.fullmatch(blank.strip(" .!")):  # "Negative." / "Affirmative."
        return "no" if "negative" in blank else "yes"
    # "✅❌": a right mark and a wrong mark side by side say both
    right_mark = any(ch in _MARK_RIGHT for ch in blank)
    wrong_mark = any(ch in _MARK_WRONG for ch in blank)
    if right_mark and wrong_mark:
        return "ambiguous"
    if (right_mark or wrong_mark) and not _NEG_MARK.search(blank):
        # a checklist row "- Stack updated correctly ❌": the mark is the verdict, the words
        # before it name what was checked
        return "yes" if right_mark else "no"
    # each part of "partly right and partly wrong" votes
    for part in re.split(r"\band\b|,", blank):
        kind, _negated = _polarity(part)
        if kind is not None:
            votes.add("yes" if kind == "right" else "no")
    for m in _YN.finditer(blank):
        votes.add("yes" if m.group("yes") else "no")
    if len(votes) > 1:
        return "ambiguous"
    if votes == {"yes"} and _PART_OF.search(blank):
        return None  # "mostly right", "most of it is fine": not yet a verdict on the whole step
    return votes.pop() if votes else None


_LIST_ITEM = re.compile(r"\s*(?:[-*+\u2022]|\d{1,2}[.)])\s")
_NEG_MARK = re.compile(r"\b(?:not|no)\s*[\u2705\u2714\u2713\u2611\u274c\u2716\u2717\u2718\u2715]")
_BARE_SIGN = re.compile(r"negative|affirmative|in\s+the\s+(?:negative|affirmative)")
_PART_OF = re.compile(
    r"\b(?:mostly|largely|partly|partially|in\s+part|half|most\s+of|much\s+of|"
    r"(?:almost|nearly)(?!\s+(?:certainly|surely|definitely|sure|certain)\b)|"
    r"for\s+the\s+most\s+part)\b"
)


# an attitude word and a bare answer: "Unfortunately not.", "I'm afraid not.", "Sadly, no."
_ATTITUDE_ANSWER = re.compile(
    r"(?:unfortunately|sadly|regrettably|alas|i\s*(?:'m|am)\s+afraid|afraid|i\s+fear|"
    r"i\s+think|i\s+believe|i\s+would\s+say|certainly|definitely|clearly|obviously|of\s+course)"
    r"\s*,?\s*(not|no|yes)"
)
_PARTIAL_DOUBT = re.compile(
    r"(?:^|(?<=[.;\n]))[^.;\n?]*?(?:"
    + _DOUBT.pattern
    + r")\s+(?:about\s+|of\s+)?(?:every|each|all|some)"
    r"\b[^.;\n?]*?,?\s*\bbut\b\s*"
)
# a lead "No" that agrees with the denial after it: "No, there is no mistake …"
_NO_DENIAL = re.compile(r"^\s*(?:no|nope)\s*[,.;:!\u2014-]\s*")


def parse_step_answer(text: str | None, reasoning: bool = False) -> str:
    """'yes' (step correct), 'no' (step wrong), 'ambiguous' (claims that do not agree, or a
    hedge) or 'unparsable' (nothing readable).

    JSON ({"correct": false}, {"answer": "No"}) first; then an explicit "Answer: Yes/No"
    marker (its last occurrence; a line offering both is an echo of the instruction). Without
    `reasoning` (direct_step) the first clause that says something about the step is the
    answer; with it (cot_step) the last one is (the conclusion: keywords are everywhere in the
    reasoning before it).
    """
    if text is None or not text.strip():
        return "unparsable"
    got = _step_from_json(text)
    if got:
        return got
    clean = _clean(text, step=True)
    if (
        not re.search(r"\w", clean)
        and any(ch in _MARK_RIGHT for ch in clean)
        and any(ch in _MARK_WRONG for ch in clean)
    ):
        return "ambiguous"  # "✅ / ❌": both marks and no word choosing between them
    got = _marked_step_verdict(clean)
    if got:
        return got
    # a line offering both markers parrots the instruction: it answers nothing
    text_ = "\n".join("" if _ECHO.search(line) else line for line in clean.split("\n"))
    text_ = _CONDITIONAL.sub(" ", text_)
    # "I cannot verify every digit, but the step is correct.": a doubt about parts, conceded
    # before the verdict, takes nothing from it
    text_ = _PARTIAL_DOUBT.sub(" ", text_)
    corrections = list(_CORRECTION.finditer(text_))
    if corrections:
        # "Yes, it is correct. Wait — no, the count is off.": the corrected claim counts
        last = corrections[-1]
        text_, reasoning = (
            text_[last.start("takeback") if last.group("takeback") else last.end() :],
            True,
        )
    clauses = _clauses_of(text_)
    if _table_cut_off(text_) or (reasoning and _concluded_nothing(clauses, text_)):
        return "ambiguous"
    doubts = [i for i, c in enumerate(clauses) if _DOUBT.search(c.text)]
    if doubts and not any(_CONCLUSION.match(c.text) for c in clauses[doubts[-1] + 1 :]):
        return "ambiguous"  # "One could argue either way: …" with no conclusion after it
    told = _step_verdicts(clauses)
    verdicts = [v for _, v in told]
    if not verdicts:
        return "unparsable"
    if (
        reasoning
        and len(told) > 1
        and verdicts[-1] != verdicts[-2]
        and _BARE_YN.match(told[-1][0])
        and _CONCLUSION.match(told[-2][0])
    ):
        # "… So the thought is correct.\n\nNo": the conclusion and the final word disagree
        return "ambiguous"
    if _last_two_disagree(clauses, told) and (
        reasoning or all(len(t.split()) <= 3 for t, _ in told[-2:])
    ):
        return "ambiguous"  # "The step is correct. The step is incorrect.": nothing between
    got = _first_line_or_checklist(text_, told, reasoning, bool(corrections))
    if got:
        return got
    return _direct_verdict(text_, told) if not reasoning else verdicts[-1]


def _marked_step_verdict(clean: str) -> str | None:
    """The verdict of an explicit "Answer: Yes/No" marker (its last occurrence; a line
    offering both is an echo of the instruction), `ambiguous` against another marked verdict
    or the reasoning's own conclusion; None without a marker."""
    marked: list[str] = []
    for line in clean.split("\n"):
        found = [m.group("v") for m in _MARKED_YN.finditer(line)]
        if len(set(found)) == 1:
            marked.extend(found)
    if not marked:
        return None
    said = {{"correct": "yes", "incorrect": "no"}.get(v, v) for v in marked}
    if len(said) > 1 and not _CORRECTION.search(clean):
        # "Verdict: Yes\nVerdict: No": two marked verdicts, nothing choosing between them
        return "ambiguous"
    got = {"correct": "yes", "incorrect": "no"}.get(marked[-1], marked[-1])
    rest = "\n".join(ln for ln in clean.split("\n") if not _MARKED_YN.search(ln))
    if rest.strip() and not _CORRECTION.search(clean):
        # "… so it is incorrect.\n\nFinal answer: Yes": the reasoning concludes the other
        # verdict, nothing chooses between them
        told = _step_verdicts(_clauses_of(rest))
        if (
            told
            and _CONCLUSION_LEAD.match(told[-1][0])
            and told[-1][1] == {"yes": "no", "no": "yes"}.get(got)
        ):
            return "ambiguous"
    return got


def _first_line_or_checklist(
    text: str, told: list[tuple[str, str]], reasoning: bool, corrected: bool
) -> str | None:
    """A bare "Yes." / "No." first line against its reason's conclusion (`ambiguous`); the
    verdict after a ✅/❌ checklist (`ambiguous` against its rows); None otherwise."""
    verdicts = [v for _, v in told]
    if (
        reasoning
        and not corrected
        and len(told) > 1
        and _BARE_YN.match(text.strip().split("\n")[0])
        and verdicts[0] in ("yes", "no")
        and verdicts[-1] == {"yes": "no", "no": "yes"}[verdicts[0]]
        and not (
            verdicts[0] == "no" and _polarity(_refs(told[-1][0], None)[2])[:2] == ("right", True)
        )
    ):
        # "Yes.\n\nThe thought pops a bracket that was never pushed, so it is wrong.": the
        # answer line and its reason disagree (a reason that agrees keeps it; "No. There is no
        # mistake in it." answers "is there a mistake?")
        return "ambiguous"
    items = [ln for ln in text.split("\n") if _LIST_ITEM.match(ln)]
    rows = [
        i
        for i, (t, _) in enumerate(told)
        if any(ch in _MARK_RIGHT + _MARK_WRONG for ch in t) and any(t.strip() in ln for ln in items)
    ]
    if rows and rows[0] == 0 and rows[-1] < len(told) - 1:
        # a ✅/❌ checklist of what was checked, then the verdict ("So the thought is wrong: No"):
        # the verdict is the answer; against the rows (a ❌ row beside "correct") `ambiguous`
        said = "no" if any(told[i][1] == "no" for i in rows) else "yes"
        verdict = verdicts[-1] if reasoning else verdicts[rows[-1] + 1]
        return verdict if verdict in (said, "ambiguous") else "ambiguous"
    return None


# a clause that concludes: "so it is incorrect", "therefore the step is right"
_CONCLUSION_LEAD = re.compile(
    r"^\W*(?:so|therefore|thus|hence|in\s+conclusion|in\s+summary|overall|all\s+in\s+all)\b"
)


def _concluded_nothing(clauses: list[_Clause], text: str) -> bool:
    """A chain of thought that ends on an open question, or stops mid-sentence before its
    conclusion ("… \"lemon\": 'l' is 12th, correct. \"zinc\": 'z' is"): the verdicts on the
    way are no answer."""
    if not clauses:
        return False
    if clauses[-1].question:
        return True
    return bool(
        re.search(r"[\w'\":,]\s*$", text)
        and _cut_off(text)
        and _step_verdict(clauses[-1].text) is None
    )


def _table_cut_off(text: str) -> bool:
    """The answer stops inside a table: its last line is a row with fewer cells than the
    table's header ("| swap partners | ✓ |" then "| Alice holds |")."""
    lines = [ln.strip() for ln in text.rstrip().split("\n")]
    if not lines or not lines[-1].startswith("|"):
        return False
    k = len(lines) - 1
    while k > 0 and lines[k - 1].startswith("|"):
        k -= 1

    def cells(line: str) -> int:  # (a row's empty last cell is not filled in)
        return len([c for c in line.strip("|").split("|") if c.strip()])

    return k < len(lines) - 1 and cells(lines[-1]) < cells(lines[k])


def _direct_verdict(text: str, told: list[tuple[str, str]]) -> str:
    """A direct answer's verdict: its first, unless a lead word and the clause after it
    disagree ("Yes, it is wrong." → ambiguous) — a lead "No" that agrees with a denied mistake
    ("No. Nothing is wrong with it.") is yes."""
    verdicts = [v for _, v in told]
    first = verdicts[0]
    m = _LEAD_INTERJECTION.match(text)
    if (
        m
        and m.group(1) in ("no", "nope")
        and len(told) > 1
        and _polarity(_refs(told[1][0], None)[2])[:2] == ("right", True)
        and not _polarity(_refs(told[0][0], None)[2])[0]
    ):
        return "yes"
    if m and len(verdicts) > 1 and first != verdicts[1] and "ambiguous" not in verdicts[:2]:
        lead_only = _step_verdict(m.group(0)) is not None and len(_clauses(text)[0]) <= 6
        if lead_only:
            return "ambiguous"
    return first


def _last_two_disagree(clauses: list[_Clause], told: list[tuple[str, str]]) -> bool:
    """The answer ends on two whole sentences that give opposite verdicts with no reasoning,
    conclusion word or correction between them."""
    if len(told) < 2 or len(clauses) < 2 or told[-1][1] == told[-2][1]:
        return False
    a, b = clauses[-2], clauses[-1]
    return (
        (a.text, b.text) == (told[-2][0], told[-1][0])
        and a.whole
        and b.whole
        and not any(ch in _MARK_RIGHT + _MARK_WRONG for ch in a.text)
        and "ambiguous" not in (told[-1][1], told[-2][1])
        and not any(_CONCLUSION.match(c.text) or _CORRECTION.search(c.text) for c in (a, b))
        and len(b.text.split()) <= 6
    )


def _step_verdicts(clauses: list[_Clause]) -> list[tuple[str, str]]:
    """(clause, verdict) of the clauses that say something about the step. A question answered
    Yes / No is read as said / denied ("Is the step wrong? No." → yes), its answer word used up;
    an unanswered one says nothing, unless it ends the answer."""
    out: list[tuple[str, str]] = []
    used_up = False
    impression: int | None = None  # where in `out` "it looks wrong" stands, just before
    for i, c in enumerate(clauses):
        text = _LEAD_INTERJECTION.sub("", c.text, count=1) if used_up else c.text
        used_up = False
        verdict = _step_verdict(text) if text.strip() else None
        if impression is not None and not c.lead:
            # "It looks wrong but isn't." / "It looks fine, but it is wrong.": the impression
            # is taken back by what the same sentence says next
            flipped = {"yes": "no", "no": "yes"}.get(out[impression][1])
            if verdict is None and flipped and _BARE_DENIAL.match(text):
                out[impression] = (out[impression][0], flipped)
                impression = None
                continue
            if verdict == flipped:
                del out[impression]
        impression = None
        if c.question and i < len(clauses) - 1:
            answer = _question_answer(clauses, i)
            if answer is None:
                continue
            used_up = True
            flipped = {"yes": "no", "no": "yes"}.get(verdict or "")
            verdict = (flipped if answer == "no" else verdict) if flipped else answer
        if verdict:
            out.append((text, verdict))
            if verdict in ("yes", "no") and _LOOKS.search(text):
                impression = len(out) - 1
    # "Thought 3 is wrong but this one is right": a numbered step is another one, when the
    # answer also speaks of the step asked without a number
    unnamed = [(t, v) for t, v in out if not _REF.search(t)]
    said = any(_polarity(t)[0] for t, _ in unnamed)  # not only a bare "Yes," / "No,"
    return unnamed if said and len(unnamed) < len(out) else out


# the fields of a step answer that give its verdict: one that says the step is right
# ({"correct": true}, {"thought_correct": false}, {"answer": "Yes"}) or that it has a mistake
# ({"has_error": true}, {"is_wrong": false}: read the other way round)
_STEP_RIGHT_KEY = re.compile(
    r"^(?:(?:is|step|thought)_)?(?:correct|valid|right|ok)$|^(?:answer|verdict|final_answer)$"
)
_STEP_WRONG_KEY = re.compile(
    r"^(?:(?:has|contains)_(?:an?_)?(?:mistakes?|errors?|flaws?)|(?:is|step|thought)_(?:wrong|"
    r"incorrect|erroneous|flawed)|(?:mistakes?|errors?)_found)$"
)


def _step_from_json(text: str) -> str | None:
    """{"correct": false} → 'no', {"answer": "Yes"} → 'yes', {"has_error": true} → 'no';
    `ambiguous` when two such fields disagree; None without such a field."""
    data = _json_object(text)
    if data is None:
        return None
    said = []
    for key, value in data.items():
        k = key.lower()
        right, wrong = _STEP_RIGHT_KEY.match(k), _STEP_WRONG_KEY.match(k)
        if not (right or wrong):
            continue
        got = None
        if isinstance(value, bool):
            got = "yes" if value else "no"
        elif isinstance(value, str):
            got = _step_verdict(_clean(value, step=True))
        if got and wrong:
            got = {"yes": "no", "no": "yes"}.get(got, got)
        if got:
            said.append(got)
    if len(set(said)) > 1:
        return "ambiguous"  # {"is_correct": true, "has_error": true}: the object says both
    if said and said[0] in ("yes", "no"):
        # {"reasoning": "Every part of it matches …", "answer": "No"}: its own reason says the
        # other verdict
        other = {"yes": "no", "no": "yes"}[said[0]]
        for key, value in data.items():
            k = key.lower()
            own = _STEP_RIGHT_KEY.match(k) or _STEP_WRONG_KEY.match(k)
            reason = "" if own or not isinstance(value, str) or "{" in value else value
            if reason and parse_step_answer(reason, reasoning=True) == other:
                return "ambiguous"
    return said[0] if said else None


def first_no(step_answers: list[str]) -> int | None:
    """0-based index of the first 'no' (the paper's rule: later steps are ignored)."""
    for i, a in enumerate(step_answers):
        if a == "no":
            return i
    return None


# -- structured output (bbm/direct_trace_structured.v1: NOT the paper's protocol) -----------------


def parse_structured_trace(
    text: str | None, n_steps: int | None = None, key: str = "first_wrong_step"
) -> tuple[TraceAnswer | None, str | None]:
    """A structured trace answer {"first_wrong_step": k | null}: (TraceAnswer with rule 'json',
    None), or (None, why) when the JSON cannot be read (cut, not JSON, not the schema's shape)."""
    try:
        data = json.loads(text or "")
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(data, dict) or key not in data:
        return None, f"no field {key!r}"
    step = data[key]
    if step is None:
        return TraceAnswer("ok", None, "json"), None
    if isinstance(step, bool) or not isinstance(step, int):
        return None, f"{key} is neither an integer nor null"
    return _checked(step, n_steps, "json"), None
