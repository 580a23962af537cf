"""What Mis-prompt declares for the shared layers (core/declared.py; registry `declared`)."""

from __future__ import annotations

from core.declared import Declarations, PublishedColumn, PublishedTable

PUBLISHED_F1 = PublishedTable(
    "published_misprompt",  # one row per cell of the paper's F1 tables
    (
        PublishedColumn("source", long="source"),  # 'misprompt:T6'
        PublishedColumn("paper"),
        PublishedColumn("table_id"),
        PublishedColumn("evaluator"),  # judge | human
        PublishedColumn("model", long="model"),
        PublishedColumn("setting", long="setting"),  # zero-shot | one-shot | … | sft
        PublishedColumn("category_level"),  # all | primary | secondary
        PublishedColumn("category", long="category"),
        PublishedColumn("metric", long="measure"),
        PublishedColumn("f1", "DOUBLE", long="value"),
    ),
)

PUBLISHED_COUNTS = PublishedTable(
    "published_counts",  # the data set's instances per category
    (
        PublishedColumn("paper", long="source"),
        PublishedColumn("primary_category", long="category"),
        PublishedColumn("secondary_category"),
        PublishedColumn("instances", "INTEGER", long="n"),
    ),
)

DECLARED = Declarations(
    setting_short={
        "zero-shot": "zs",
        "one-shot": "1s",
        "three-shot": "3s",
        "cot": "cot",
        "sft": "sft",
    },
    published=(PUBLISHED_F1, PUBLISHED_COUNTS),
    # its judge counts and intervals of finished runs (metrics.py), by run in `source`
    caches=(("run_counts", "source"),),
)
