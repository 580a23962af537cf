"""Judge audit, the Results tab: κ per label, confusion matrices, Fleiss' κ, human vs judge F1,
and the judge-corrected (PPI) estimates."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core.ppi import MIN_LABELLED
from core.registry import get as get_benchmark
from core.services import audit
from core.services import judge_trust as jt
from core.stats import MIN_N
from pages.ui.common import (
    download,
    md_escape,
    source_caption,
    table,
    uncached,
)
from pages.ui.formats import readable_table

NEW = audit.NEW_AUDIT_KEY  # ?audit=new: a stable key in the URL, shown as NEW_LABEL
NEW_LABEL = "➕ New audit"


def _masked(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """κ values resting on fewer than MIN_N items blanked (n and the flag stay visible)."""
    out = frame.copy()
    if "n_too_small" in out:
        out.loc[out["n_too_small"].astype(bool), columns] = float("nan")
    return out


def _fmt_kappa(value: Any) -> str:
    """A κ or CI bound for reading: two decimals ("0.00", never "-0.00" or the bootstrap's
    0.0000000000000002), "—" when there is none (never "None" or "nan")."""
    if value is None or pd.isna(value):
        return "—"
    text = f"{float(value):.2f}"
    return "0.00" if text == "-0.00" else text


def _kappa_table(frame: pd.DataFrame, columns: list[str], name: str) -> None:
    """κ table: masked below MIN_N, shown rounded (as text, "—" when blank); the CSV keeps
    the unrounded numbers."""
    masked = _masked(frame, columns)
    shown = masked.copy()
    for col in columns:
        shown[col] = [_fmt_kappa(v) for v in masked[col]]
    if "disagreement_pct" in shown:
        shown["disagreement_pct"] = shown["disagreement_pct"].astype(float).round(1)
    st.dataframe(shown, width="stretch", hide_index=True)
    download(masked, name)


def results_tab(
    name: str, annotator: str, info: audit.AuditInfo | None, label_set: audit.LabelSet
) -> None:
    label_names = label_set.names
    labels = uncached(audit.audit_labels, name)
    if labels.empty:
        st.info("No labels yet. Label a few items in the Label tab.")
        return
    runs = ", ".join(info.runs) if info else ""
    names = sorted(labels["annotator"].unique())
    st.caption(
        audit.KAPPA_NOTE + f" Every κ is given with its n (items) and a 95% percentile "
        f"bootstrap CI ({audit.BOOTSTRAP_DRAWS} resamples of the items, seed "
        f'{audit.BOOTSTRAP_SEED}); below n = {audit.MIN_N} it reads "n too small".'
    )
    agreement = audit.agreement_table(labels, names=label_names)
    kappa_cols = ["cohen_kappa", "ci_low", "ci_high"]

    focus = annotator if annotator in names else names[0]
    _kappa_tiles(agreement, focus, label_names)
    st.plotly_chart(audit.kappa_figure(agreement, names=label_names), key="au_kappa_chart")
    source_caption(f"audit {name} (runs {runs})", "human_labels vs verdicts")
    _judgings_compared(info)
    _kappa_table(agreement, kappa_cols, f"audit_{name}_agreement")
    _between_annotators(name, labels, names, focus, label_names)
    _f1_section(name, runs, label_set)
    _ppi_section(name, info)


def _kappa_tiles(agreement: pd.DataFrame, focus: str, label_names: tuple[str, ...]) -> None:
    """One tile per label: Cohen's κ of the judge vs `focus`, its n and CI ("n too small"
    below MIN_N items)."""
    st.markdown(f"**Cohen's κ, judge vs {md_escape(focus)}**")
    mine = agreement[agreement["annotator"] == focus].set_index("label")
    cols = [c for _ in range(0, len(label_names), 3) for c in st.columns(3)]
    for col, label in zip(cols, label_names):
        with col:
            if label not in mine.index:
                st.metric(label, "—")
                st.caption("n = 0")
                continue
            r = mine.loc[label].to_dict()
            est = audit.KappaEstimate(
                float(r["cohen_kappa"]), int(r["n"]), float(r["ci_low"]), float(r["ci_high"])
            )
            help_text = f"disagreement {r['disagreement_pct']:.1f}% on {est.n} items"
            if not est.reliable:
                st.metric(label, "n too small", help=help_text)
                st.caption(f"n = {est.n} (κ needs ≥ {audit.MIN_N} items)")
            else:
                st.metric(label, _fmt_kappa(est.kappa), help=help_text)
                st.caption(
                    f"n = {est.n} · 95% CI [{_fmt_kappa(est.ci_low)}, {_fmt_kappa(est.ci_high)}]"
                )


def _judgings_compared(info: audit.AuditInfo | None) -> None:
    """Which judging of each run the people's labels are compared with."""
    judged_by = uncached(audit.judgings_of_audit, tuple(info.runs) if info else ())
    if len(judged_by):
        st.caption(
            md_escape(
                "Judge labels compared: "
                + "; ".join(
                    f"{r.run_id!s} — judging {r.judging!s} ({r.judge_model!s}, "
                    f"{r.template_id or 'template ?'!s})"
                    for r in judged_by.itertuples()
                )
                + ". Each run's latest finished judging; `python -m core rescore` adds others."
            )
        )


def _between_annotators(
    name: str, labels: pd.DataFrame, names: list[str], focus: str, label_names: tuple[str, ...]
) -> None:
    """Confusion matrices of one annotator, Fleiss' κ of three or more, pairwise Cohen's κ."""
    kappa_cols = ["cohen_kappa", "ci_low", "ci_high"]
    st.markdown("**Confusion matrices**")
    who = st.selectbox("Annotator", names, index=names.index(focus), key="au_cm_annotator")
    st.plotly_chart(
        audit.confusion_figure(audit.confusion_matrices(labels, who, names=label_names), who),
        key="au_cm_chart",
    )
    source_caption(f"audit {name}", f"labels by {who}")

    st.markdown("**Fleiss' κ across annotators** (the judge not included)")
    if len(names) < 3:
        st.caption(
            f"Needs three or more annotators who labelled the same items; this audit has "
            f"{len(names)} ({md_escape(', '.join(names))})."
        )
    else:
        raters = st.multiselect("Annotators", names, default=names, key="au_fleiss_raters")
        if len(raters) < 3:
            st.caption("Choose at least three annotators.")
        else:
            fleiss = audit.fleiss_table(labels, raters, names=label_names)
            _kappa_table(fleiss, ["fleiss_kappa", "ci_low", "ci_high"], f"audit_{name}_fleiss")
            source_caption(f"audit {name}", "items labelled by every chosen annotator")

    if len(names) >= 2:
        st.markdown("**Cohen's κ between annotators** (each pair, on the items both labelled)")
        _kappa_table(
            audit.pairwise_kappa(labels, names=label_names), kappa_cols, f"audit_{name}_pairwise"
        )


def _f1_section(name: str, runs: str, label_set: audit.LabelSet) -> None:
    """Human-label F1 beside the judge's, paired on the same items, and their mean difference."""
    label_names = label_set.names
    st.markdown(
        "**F1 from human labels beside the judge's** (like the paper's Table 12 vs Table 6)"
    )
    f1 = uncached(audit.f1_comparison, name)
    readable_table(f1, f"audit_{name}_f1", digits=1)  # 85.7 (the CSV keeps 85.714285…)
    st.caption(
        "Per run: the judge's F1 over the whole run (context), then pairs on identical "
        "items — the judge and each annotator on exactly the items that annotator "
        f"labelled (all {len(label_names)} labels), and the judge and the annotators' majority (a tie "
        "counts as false) on the items two or more of them labelled; `n` = items. F1 in "
        "percent (erroneous items give TP/FN, controls FP); without control items the value "
        "is recall."
    )
    mad = audit.mean_abs_difference(f1, names=label_names)
    if not mad.empty:
        readable_table(mad, f"audit_{name}_mean_abs_diff", digits=2)
        st.caption(
            "Mean absolute difference between the human-label and the judge F1 over the "
            f"{len(label_names)} labels, each pair on the same n items (the paper reports 5.59 points)."
        )
    source_caption(
        f"audit {name} (runs {runs})",
        f"{get_benchmark(label_set.benchmark).label} F1 (its metrics)",
    )


def _ppi_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The PPI table for reading: rates and F1 in percent with their interval, n's, λ; rows on
    fewer than MIN_N people's labels keep their numbers but say so."""
    return pd.DataFrame(
        {
            "label": frame["label"],
            "metric": frame["metric"].map({"rate": "rate", "f1": "F1"}),
            "judge only": [f"{v * 100:.1f}%" if pd.notna(v) else "—" for v in frame["judge_only"]],
            "people only": [f"{v * 100:.1f}%" if pd.notna(v) else "—" for v in frame["human_only"]],
            "PPI [95% CI]": [
                jt.interval_text(v, lo, hi)
                for v, lo, hi in zip(frame["ppi"], frame["ci_low"], frame["ci_high"])
            ],
            "F1 bootstrap 95% CI": [
                jt.interval_text(v, lo, hi) if pd.notna(lo) else "—"
                for v, lo, hi in zip(frame["ppi"], frame["boot_ci_low"], frame["boot_ci_high"])
            ],
            "n_human": frame["n_human"],
            "n_judge": frame["n_judge"],
            "effective n": [f"{v:.0f}" if pd.notna(v) else "—" for v in frame["n_effective"]],
            "λ": frame["lam"].round(2),
            "note": ["n too small" if small else "" for small in frame["n_too_small"]],
        }
    )


def _ppi_section(name: str, info: audit.AuditInfo | None) -> None:
    """Judge-only vs prediction-powered estimates per run, with the judging's self-agreement
    (rescore --repeat) and the same-family flag (issue 18, point 4)."""
    st.markdown("**Judge-corrected estimates** (prediction-powered inference, PPI++)")
    runs = info.runs if info else []
    if not runs:
        st.caption("This audit has no runs.")
        return
    run_id = st.selectbox("Run", runs, key="au_ppi_run") if len(runs) > 1 else runs[0]
    try:
        frame = uncached(jt.run_ppi, run_id, name)
        changes = uncached(jt.verdict_changes, run_id)
        flags = uncached(jt.family_flags, (run_id,))
    except audit.AuditError as exc:
        st.warning(md_escape(str(exc)))
        return
    flag = flags.iloc[0]
    if flag["same_family"]:
        st.warning(
            md_escape(
                f"Same model family: {flag['model']} is judged by {flag['judge_model']} (both "
                f"{flag['same_family']}). A judge may favour its own family's answers; the "
                "people's labels below are the check."
            )
        )
    if len(frame) and bool(frame["few_labels"].any()):
        st.warning(
            f"Fewer than {MIN_LABELLED} people's labels "
            f"({int(frame['n_human'].min())} on some rows): the PPI intervals are rough; the "
            "F1 bootstrap interval is the one to read, and more labels would narrow both."
        )
    st.dataframe(_ppi_shown(frame), width="stretch", hide_index=True)
    download(frame, f"audit_{name}_ppi_{run_id}")
    st.caption(
        "Judge only: the judging's number over all n_judge responses. People only: the "
        "annotators' majority on the n_human responses they labelled. PPI: the judge's number "
        "corrected by the people's labels (Angelopoulos et al. 2023; λ tuned as in PPI++: 0 = "
        "people alone, 1 = plain PPI), with its 95% interval; F1's by the delta method on the "
        "TP and FP rates; F1 bootstrap: percentiles of the whole estimator redrawn (labelled and "
        "unlabelled responses resampled apart, λ re-tuned each draw). Effective n: how many "
        "people's labels alone would give an interval "
        f'this narrow. Below n = {MIN_N} people\'s labels a row says "n too small". '
        "`python -m core audit ppi` prints the same table."
    )
    st.markdown("**The judge judged again** (share of verdicts that change)")
    if changes.empty:
        st.caption(md_escape(f"{run_id}: {jt.NOT_MEASURED}."))
    else:
        table(changes, f"audit_{name}_rejudged_{run_id}")
        st.caption(
            "Per label: the share of responses whose verdict is not the same in every one "
            "of the k judgings (the judging and its `@rK` repeats), with n and a Wilson 95% "
            "interval."
        )
    source_caption(
        f"audit {name}, run {run_id}, judging {flag['judging']}", "human_labels vs results"
    )
