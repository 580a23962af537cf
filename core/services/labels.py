"""How a run and one of its judgings are named on every page: one function, one spelling.

Why: after a `rescore` a run has several judgings; a label built from the run's own row said
`judge.v1` while the numbers beside it came from a `judge.v2` judging. Every caption, row label,
selector and title builds its label here from the judging actually shown (`all_judgings` /
`current_judgings`: judge model, template id, judging name). Charts put `short_label`s on their
axes (a phone has 390 px) and the full label in the hover.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from core.engine import templates

if TYPE_CHECKING:
    from core.store import Store

SHORT_LABEL_CHARS = 24


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and pd.isna(value)) or not str(value):
        return None
    return str(value)


def judging_label(
    run_id: str,
    model: Any,
    judge_model: Any,
    template_id: Any,
    mode: Any = None,
    judging: Any = None,
) -> str:
    """'my-run · SmolLM2 (judge SmolLM2, <benchmark>/judge.v2, proactive, judging j2)': the run,
    its model and the judging whose numbers are shown (judge model and template of that
    judging; its name unless it is the run's own 'default'). A code-scored run (no judge
    model, no template) is 'run · model'; `mode` is left out when None."""
    judge = _text(judge_model)
    template = templates.shown_id(template_id)
    parts: list[str] = []
    if judge is not None or template is not None:
        parts.append(f"judge {judge or '?'}")
        parts.append(template or "judge template unknown")
    if mode is not None:
        parts.append(_text(mode) or "proactive")
    name = _text(judging)
    if name is not None and name != "default":
        parts.append(f"judging {name}")
    head = f"{run_id} · {_text(model) or '?'}"
    return f"{head} ({', '.join(parts)})" if parts else head


def short_labels(labels: Sequence[str], width: int = SHORT_LABEL_CHARS) -> list[str]:
    """Axis labels of at most `width` characters, unique, in the order given: a label that fits
    stays as it is; a longer one is cut with '…'; labels that would then clash get '~2', '~3'
    (cut further so they still fit). The full label goes to the hover."""
    out: list[str] = []
    seen: set[str] = set()
    for label in labels:
        label = str(label)
        short = label if len(label) <= width else label[: width - 1].rstrip() + "…"
        k = 2
        while short in seen:
            tail = f"~{k}"
            base = label if len(label) + len(tail) <= width else label[: width - len(tail) - 1]
            short = (base if base == label else base.rstrip() + "…") + tail
            k += 1
        seen.add(short)
        out.append(short)
    return out


PUBLISHED_JUDGING = "published"  # the `judging` of a published row (the paper's own scoring)


def judging_text(name: Any, template_id: Any) -> str:
    """The `judging` column of a metrics row: 'again (<benchmark>/judge.v1)', or the name alone
    when the judging stored no template. One spelling for every benchmark's CLI and page."""
    shown = templates.shown_id(template_id)
    head = _text(name) or "default"
    return f"{head} ({shown})" if shown else head


def judgings_shown(
    store: Store, run_ids: Sequence[str], judging: str | None = None
) -> dict[str, str]:
    """Per run, the `judging` column of the numbers shown: the judging named, else the run's
    current one (`current_judgings`) — so a `rescore` never changes the default output
    silently, the column says which judging it is. Template: the judging's own (a judge's), else
    the run's prompt template (a code-scored run's answers are read by it)."""
    ids = list(run_ids)
    if not ids:
        return {}
    pick = (
        "a.judging = ?"
        if judging is not None
        else "(a.run_id, a.judging) IN (SELECT (run_id, judging) FROM current_judgings)"
    )
    rows = store.rows(
        "SELECT a.run_id, a.judging, coalesce(a.template_id, r.template_id) FROM all_judgings a "
        f"JOIN runs r USING (run_id) WHERE list_contains(?, a.run_id) AND {pick}",
        [ids] + ([judging] if judging is not None else []),
    )
    return {run: judging_text(name, template) for run, name, template in rows}
