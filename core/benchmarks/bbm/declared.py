"""What BIG-Bench Mistake declares for the shared layers (core/declared.py; registry
`declared`)."""

from __future__ import annotations

from core.declared import Declarations, PublishedColumn, PublishedTable

PUBLISHED = PublishedTable(
    "published_bbm",  # the paper's Tables 4, 5 and 9, one row per cell
    (
        PublishedColumn("source", long="source"),  # 'bigbench_mistake:T4'
        PublishedColumn("paper"),
        PublishedColumn("table_id"),
        PublishedColumn("subset"),
        PublishedColumn("task", long="category"),
        PublishedColumn("model", long="model"),
        PublishedColumn("method", long="setting"),
        PublishedColumn("measure", long="measure"),
        PublishedColumn("value", "DOUBLE", long="value"),
        PublishedColumn("note"),
    ),
)

DECLARED = Declarations(
    setting_short={"direct_trace": "dt", "direct_step": "ds", "cot_step": "cs"},
    # ids stored with runs before the one-template-system change -> today's
    template_aliases={
        "bbm/direct_trace_v1": "bbm/direct_trace.v1",
        "bbm/direct_step_v1": "bbm/direct_step.v1",
        "bbm/cot_step_v1": "bbm/cot_step.v1",
    },
    published=(PUBLISHED,),
)
