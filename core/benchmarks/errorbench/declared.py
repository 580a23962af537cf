"""What ErrorBench declares for the shared layers (core/declared.py; registry `declared`)."""

from __future__ import annotations

from core.declared import Declarations

DECLARED = Declarations(
    setting_short={
        "blind": "b",
        "hinted": "h",
        "anchored": "a",
        "mislead_high": "mh",
        "mislead_low": "ml",
    },
    # the id stored with runs before the one-template-system change -> today's
    template_aliases={"errorbench-v1": "errorbench/quoted.v1"},
)
