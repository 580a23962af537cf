"""Judge audit: a seeded sample of verdicts, people's labels for it, and agreement statistics.

A paper with an LLM judge may re-label a share of responses by hand (SPEC §1, "Human
evaluation": 10%) and report Fleiss' κ between annotators and the human-label F1 beside the
judge's. This module does the same
on the runs of any LLM-judged benchmark with named labels (registry: `judged_by_model`, `labels`).
What it needs of a benchmark comes from its registry entry, through `LabelSet`: the label names
(`labels`; a judging's labels are read from `results.labels`), their help texts (`label_help`) and
the per-run F1 that `f1_comparison` shows (`label_metrics`). One audit samples one benchmark's runs.

- `create_audit` draws a seeded sample stratified by run and category (default 10%, at least one
  per stratum, so every run gets its share even when two runs share a model) and stores it, in
  queue order, in `audit_samples` under a name.
- `save_labels` writes one annotator's labels for one sampled response in one transaction, so
  concurrent sessions lose nothing. Given the labels the page read when it showed the item
  (`expected`, optimistic concurrency), it refuses with `LabelConflict` when they changed since
  (the same annotator in another tab) instead of silently overwriting them.
- `next_position` resumes an annotator's queue at the first item they have not fully labelled.
- `cohen_kappa`, `fleiss_kappa`, `agreement_table`, `confusion_matrices`, `f1_comparison`: the
  numbers of the results panel. Every κ comes with its n and a seeded percentile bootstrap CI
  over items (`kappa_estimate`, `fleiss_estimate`), and is flagged below `MIN_N` items. Human-
  vs-judge F1 is always paired: the judge and the person on exactly the items the person labelled.
- `export_labels_csv` / `import_labels_csv`: labels as CSV; an import is validated row by row
  (errors name the line) and written in one transaction or not at all.

Degenerate κ (a choice of this project, shown in the UI): when chance agreement is 1 — every
rating of every rater is the same class — κ = (p_o − p_e)/(1 − p_e) is 0/0. sklearn and
statsmodels return NaN there; we return 1.0 because the raters agree perfectly and there is no
disagreement to explain. With no items at all, κ is NaN ("no data").

The package is split along its seams; `from core.services import audit` and `audit.<name>` reach
every public name, whichever module defines it:
`labelsets` (a benchmark's labels from the registry, the SQL reading judged labels),
`sampling` (candidate runs, the stratified sample, stored audits and their queue),
`labels` (saving and reading people's labels, progress), `agreement` (κ statistics, tables,
charts), `f1` (judge vs human F1), `labels_csv` (CSV export / import).
"""

from __future__ import annotations

from core.services.audit.agreement import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    CI_LEVEL,
    KAPPA_NOTE,
    MIN_N,
    KappaEstimate,
    agreement_table,
    cohen_kappa,
    confusion,
    confusion_figure,
    confusion_matrices,
    fleiss_estimate,
    fleiss_kappa,
    fleiss_table,
    format_kappa,
    kappa_estimate,
    kappa_figure,
    majority_labels,
    pairwise_kappa,
    percent_disagreement,
)
from core.services.audit.f1 import (
    MAJORITY,
    WHOLE_RUN,
    complete_labels,
    f1_comparison,
    mean_abs_difference,
)
from core.services.audit.labels import (
    LabelConflict,
    annotators,
    audit_labels,
    item_labels,
    next_position,
    progress,
    queue_progress,
    same_labels,
    save_labels,
)
from core.services.audit.labels_csv import (
    LABEL_CSV_COLUMNS,
    ImportResult,
    export_labels_csv,
    import_labels_csv,
)
from core.services.audit.labelsets import (
    AuditError,
    LabelSet,
    auditable_benchmarks,
    is_auditable,
    label_set,
    label_set_of_audit,
    label_set_of_run,
)
from core.services.audit.sampling import (
    AUDIT_META_PREFIX,
    CONTROL_CATEGORY,
    DEFAULT_FRACTION,
    NEW_AUDIT_KEY,
    AuditExists,
    AuditInfo,
    audit_queue,
    auditable_runs,
    create_audit,
    get_audit,
    judgings_of_audit,
    list_audits,
    stratified_sample,
    stratum_sizes,
    verdict_pool,
)

__all__ = [
    "AuditError",
    "LabelSet",
    "is_auditable",
    "auditable_benchmarks",
    "label_set",
    "label_set_of_run",
    "label_set_of_audit",
    "DEFAULT_FRACTION",
    "CONTROL_CATEGORY",
    "AUDIT_META_PREFIX",
    "stratum_sizes",
    "stratified_sample",
    "judgings_of_audit",
    "auditable_runs",
    "verdict_pool",
    "AuditInfo",
    "NEW_AUDIT_KEY",
    "AuditExists",
    "create_audit",
    "get_audit",
    "list_audits",
    "audit_queue",
    "LabelConflict",
    "same_labels",
    "save_labels",
    "annotators",
    "audit_labels",
    "item_labels",
    "progress",
    "next_position",
    "queue_progress",
    "KAPPA_NOTE",
    "cohen_kappa",
    "percent_disagreement",
    "confusion",
    "fleiss_kappa",
    "MIN_N",
    "BOOTSTRAP_DRAWS",
    "BOOTSTRAP_SEED",
    "CI_LEVEL",
    "KappaEstimate",
    "kappa_estimate",
    "fleiss_estimate",
    "format_kappa",
    "agreement_table",
    "confusion_matrices",
    "fleiss_table",
    "pairwise_kappa",
    "majority_labels",
    "confusion_figure",
    "kappa_figure",
    "WHOLE_RUN",
    "MAJORITY",
    "complete_labels",
    "f1_comparison",
    "mean_abs_difference",
    "LABEL_CSV_COLUMNS",
    "export_labels_csv",
    "ImportResult",
    "import_labels_csv",
]
