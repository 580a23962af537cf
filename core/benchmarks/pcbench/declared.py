"""What PCBench declares for the shared layers (core/declared.py; registry `declared`)."""

from __future__ import annotations

from core.declared import Declarations, PublishedColumn, PublishedTable

PUBLISHED = PublishedTable(
    "published_pcbench",  # the paper's per-model statistics, one row per cell
    (
        PublishedColumn("source", long="source"),  # 'pcbench:statistics'
        PublishedColumn("paper"),
        PublishedColumn("model", long="model"),
        PublishedColumn("error_type", long="category"),  # a conflict_type, or 'all'
        PublishedColumn("difficulty"),  # normal | medium | hard, or 'all'
        PublishedColumn("variant", long="setting"),  # proactive | assisted
        PublishedColumn("n", "INTEGER", long="n"),  # problems judged
        PublishedColumn("critiqued", "INTEGER"),  # of which the judge says: critiques the premise
        PublishedColumn("rate", "DOUBLE", long="value"),  # percent
        PublishedColumn("mean_len_tokens", "DOUBLE"),  # mean response length in tokens
        PublishedColumn("note"),
    ),
)

DECLARED = Declarations(published=(PUBLISHED,))
