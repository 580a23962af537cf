"""How numbers read in tables: p-values, counts and empty cells as text (issue 31, point 6).

Why text: a Styler's `na_rep` does not reach every column Streamlit draws (an Int64 column's
<NA> was drawn "None"), and `precision=2` turned p = 0.0004 into "0.00". The CSV download keeps
the numbers at full precision; only what people read is formatted here."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

EMPTY = ""  # an empty cell: nothing to say (e.g. McNemar's b/c/p of an F1 row)
P_FLOOR = 0.001


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    try:
        return bool(math.isnan(float(value)))
    except (TypeError, ValueError):
        return False


def p_text(p: Any) -> str:
    """A p-value as people read it: '< 0.001' below a thousandth (never '0.00'), else three
    decimals; '' when there is none."""
    if _missing(p):
        return EMPTY
    value = float(p)
    return f"< {P_FLOOR:g}" if value < P_FLOOR else f"{value:.3f}"


def count_text(value: Any) -> str:
    """A count, or '' when there is none (not 'None' / '<NA>')."""
    return EMPTY if _missing(value) else f"{int(value):,}"


def number_text(value: Any, digits: int = 3) -> str:
    """A number rounded for reading, or '' when there is none."""
    return EMPTY if _missing(value) else f"{float(value):.{digits}f}"


def rounded(frame: pd.DataFrame, digits: int = 1) -> pd.DataFrame:
    """`frame` with its float columns rounded for display (the download keeps `frame`)."""
    out = frame.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].round(digits)
    return out


DASH = "–"  # a missing value in a table people read (the source has none)


def dash_missing(frame: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """`frame` for reading: float columns rounded to `digits`; each column with a missing
    value becomes text — numbers rounded, a missing one '–'. Streamlit draws a missing cell as a grey "None" whatever a
    Styler's `na_rep` says (checked in Chromium); columns without gaps keep their numbers."""
    out = frame.copy()
    for col in out.columns:
        values = out[col]
        if not values.isna().any():
            if pd.api.types.is_float_dtype(values):
                out[col] = values.round(digits)  # 85.7143 reads 85.71 (digits=2)
            continue
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            out[col] = [DASH if _missing(v) else str(v) for v in values]
        elif pd.api.types.is_integer_dtype(values):
            out[col] = [DASH if _missing(v) else f"{int(v)}" for v in values]
        else:
            out[col] = [DASH if _missing(v) else f"{float(v):.{digits}f}" for v in values]
    return out


def readable_table(frame: pd.DataFrame, name: str, digits: int = 2, **kwargs: Any) -> None:
    """`pages.ui.common.table` with missing cells shown as '–' (dash_missing); the CSV
    download keeps every value as it is."""
    import streamlit as st

    from pages.ui.common import download

    st.dataframe(dash_missing(frame, digits), width="stretch", hide_index=True, **kwargs)
    download(frame, name)
