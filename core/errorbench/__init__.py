"""ErrorBench: numeric anchoring vs count-based F1 on CoNLL-2014 passages (SPEC §2).

m2 (parse M2/SGML) → passages (group, select) → prompts (five conditions) → parsing (reported
count) → extract (hypothesis edits) → scoring (count and span metrics) → bootstrap → charts;
task (runner Task) and cli (commands) tie them to the database.
"""

BENCHMARK = "errorbench"
