"""The response grid: items × runs of one benchmark and one item set, paged in SQL.

Why paged in DuckDB: 25,000 items × 8 runs are 200,000 responses. Filters (category, label,
disagreement, free text) and the sort (item, category, number of disagreements) are one
aggregate per item inside DuckDB; only one page of items (LIMIT/OFFSET) and their cells reach
pandas. Response texts of the page are cut in SQL (`CELL_CHARS`), collapsed here (`collapse`).

A column is a run, or a run × variant when a run asks several (registry `variants_per_run`).
A cell carries the response (collapsed), a short verdict or parsed answer, and whether it is
correct (the result record's `correct`): a multi-label judge's true labels as their letters
(registry `labels`), else the answer read against the gold answer; each benchmark's `grid_note`
says what its cells show. Disagreements of an item = how many of its cells differ from its most
common verdict (the label pattern where the benchmark has labels, else correctness). Failed
cells count for neither.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from core.registry import BENCHMARKS as REGISTRY
from core.registry import get as get_benchmark
from core.services.labels import judging_label
from core.store import Store


def benchmarks() -> tuple[str, ...]:
    """The registered benchmarks, read now (a benchmark registered after this module was
    imported is offered too)."""
    return tuple(REGISTRY)


def grid_labels(benchmark: str) -> dict[str, str]:
    """The named labels of a benchmark's records (a multi-label judge's) with their letters."""
    return get_benchmark(benchmark).label_letters()


SORTS = ("item id", "category", "disagreements")
CELL_CHARS = 300  # characters of a response shown in a collapsed cell
FETCH_CHARS = 4000  # characters fetched per cell (enough to see a repetition)
PAGE_SIZES = (25, 50, 100, 200)
# Pages beyond this are past any grid's end; the bound keeps OFFSET within DuckDB's BIGINT
# (a URL's g_page=99999999999999999999999 is an INT128 conversion error otherwise).
MAX_PAGE = 10**12


@dataclass
class GridPage:
    """One page of the grid: `rows` (one per item, cells wide), the columns, and the totals."""

    rows: pd.DataFrame
    columns: list[str]
    total: int
    page: int
    pages: int
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)


# -- choices --------------------------------------------------------------------------------


def grid_item_sets(store: Store, benchmark: str) -> pd.DataFrame:
    """Item sets of a benchmark that have at least one evaluation run, most runs first."""
    return store.df(
        """
        SELECT r.item_set, count(*) AS runs, any_value(s.n_items) AS n_items
        FROM runs r LEFT JOIN item_sets s ON s.name = r.item_set
        WHERE r.benchmark = ? AND coalesce(r.kind, 'eval') = 'eval' AND r.item_set IS NOT NULL
        GROUP BY r.item_set ORDER BY runs DESC, r.item_set""",
        [benchmark],
    )


def grid_runs(store: Store, benchmark: str, item_set: str) -> pd.DataFrame:
    """Runs of one benchmark over one item set (newest first), labelled by the judging whose
    records the cells show (each run's current one: core/services/labels.py)."""
    frame = store.df(
        """
        SELECT r.run_id, r.model, r.setting, r.mode, r.status, r.created_at,
               coalesce(r.weak_model, false) AS weak_model, c.judging,
               CASE WHEN j.kind = 'judge' THEN j.judge_model END AS judge_model,
               CASE WHEN j.kind = 'judge' THEN j.template_id END AS judge_template
        FROM runs r
        LEFT JOIN current_judgings c ON c.run_id = r.run_id
        LEFT JOIN all_judgings j ON j.run_id = c.run_id AND j.judging = c.judging
        WHERE r.benchmark = ? AND r.item_set = ? AND coalesce(r.kind, 'eval') = 'eval'
        ORDER BY r.created_at DESC, r.run_id""",
        [benchmark, item_set],
    )
    frame["label"] = [
        judging_label(str(r), m, jm, t, judging=jg)
        for r, m, jm, t, jg in zip(
            frame["run_id"],
            frame["model"],
            frame["judge_model"],
            frame["judge_template"],
            frame["judging"],
        )
    ]
    return frame


def grid_categories(store: Store, item_set: str) -> list[str]:
    """Primary then secondary categories of an item set (whatever its benchmark files there)."""
    frame = store.df(
        """
        SELECT DISTINCT c FROM (SELECT primary_category AS c FROM items WHERE item_set = ?
                                UNION ALL
                                SELECT secondary_category FROM items WHERE item_set = ?)
        WHERE c IS NOT NULL ORDER BY c""",
        [item_set, item_set],
    )
    return [str(c) for c in frame["c"]]


def grid_variants(store: Store, runs: tuple[str, ...]) -> list[str]:
    """Variants (registry `variant_name`: settings, conditions, methods …) of the chosen runs."""
    if not runs:
        return []
    marks = ", ".join("?" for _ in runs)
    frame = store.df(
        f"SELECT DISTINCT variant FROM responses WHERE run_id IN ({marks}) ORDER BY variant",
        list(runs),
    )
    return [str(v) for v in frame["variant"]]


# -- SQL pieces -----------------------------------------------------------------------------


# A cell reads the generic result record of each run's current judging (core/engine/results.py):
# every benchmark's judge or scorer wrote `answer`, `correct`, `labels` and `status` there.
_CELL_JOIN = """LEFT JOIN current_results v ON v.run_id = x.run_id AND v.item_id = x.item_id
                                    AND v.variant = x.variant AND v.epoch = x.epoch"""
_CELL_OK = "x.status = 'ok' AND v.status IS NOT NULL AND v.status <> 'failed'"
_CELL_ANSWER = (
    "CASE WHEN x.status <> 'ok' THEN 'response failed' "
    "WHEN v.status IS NULL THEN 'not judged' WHEN v.status = 'failed' THEN 'judge failed' "
    "ELSE coalesce(v.answer, v.status) END"
)
# what two cells disagree on: a multi-label judge's label pattern, else correctness
_CELL_KEY = f"CASE WHEN {_CELL_OK} THEN coalesce(v.labels::VARCHAR, v.correct::VARCHAR) END"
_CELL_CORRECT = f"CASE WHEN {_CELL_OK} THEN v.correct END"


def _label_sql(label: str) -> str:
    """A named label of the record as a boolean column (`label` checked by the caller)."""
    return f"TRY_CAST(v.labels->>'{label}' AS BOOLEAN)"


def _several_epochs(con: Any, runs: Sequence[str]) -> bool:
    """Whether a chosen run asked its items more than once (`run --epochs K`): only then do
    the cells fold K answers into one (a run of one epoch keeps the plain, faster query)."""
    if not runs:
        return False
    marks = ", ".join("?" for _ in runs)
    found = con.execute(
        f"SELECT 1 FROM responses WHERE run_id IN ({marks}) AND epoch > 1 LIMIT 1", list(runs)
    ).fetchall()
    return bool(found)


def _columns(con: Any, runs: Sequence[str], variants: Sequence[str]) -> list[tuple[str, str, str]]:
    """(column name, run_id, variant) for the chosen runs, in the order the runs were given."""
    if not runs:
        return []
    marks = ", ".join("?" for _ in runs)
    found = con.execute(
        f"SELECT DISTINCT run_id, variant FROM responses WHERE run_id IN ({marks})", list(runs)
    ).fetchall()
    by_run: dict[str, list[str]] = {}
    for run_id, variant in found:
        if variants and variant not in variants:
            continue
        by_run.setdefault(run_id, []).append(variant)
    out = []
    for run_id in runs:
        vs = sorted(by_run.get(run_id, []))
        for v in vs:
            out.append((run_id if len(vs) == 1 else f"{run_id} · {v}", run_id, v))
    return out


def _cells_cte(
    n_cols: int,
    *,
    answer: bool = False,
    labels: Sequence[str] = (),
    text: bool = False,
    items_in: int = 0,
    category: bool = False,
    epochs: bool = False,
) -> str:
    """The `cols` and `cells` CTEs: one row per (item, column) with only what the caller needs
    (the aggregate pass skips the answer text and the response; the page pass reads them for
    its items only). Parameters: the columns (4 each), the item set, then `items_in` ids.

    With `epochs` (a run asked K times), a cell folds its K answers (`_fold_epochs`)."""
    values = ", ".join("(?, ?, ?, ?)" for _ in range(n_cols))
    extra = []
    if answer:
        extra += [
            f"{_CELL_ANSWER} AS answer",
            "x.status AS response_status",
            f"left(x.response, {FETCH_CHARS}) AS response",
            "length(x.response) AS n_chars",
        ]
    extra += [f"{_label_sql(lb)} AS {lb}" for lb in labels]
    if text:
        extra += ["x.response", "i.prompt"]
    only = f"AND x.item_id IN ({', '.join('?' for _ in range(items_in))})" if items_in else ""
    if category:  # one more parameter (twice): filter the items before the aggregates
        only += " AND (i.primary_category = ? OR i.secondary_category = ?)"
    name = "answers" if epochs else "cells"
    cte = f"""
        cols(col, run_id, variant, pos) AS (VALUES {values}),
        {name} AS MATERIALIZED (
            SELECT x.item_id, c.col, c.pos, {_CELL_KEY} AS vkey, {_CELL_CORRECT} AS correct
                   {"".join(", " + e for e in extra)}{", x.epoch" if epochs else ""}
            FROM cols c JOIN responses x ON x.run_id = c.run_id AND x.variant = c.variant
            JOIN items i ON i.item_set = ? AND i.item_id = x.item_id
            {_CELL_JOIN}
            WHERE true {only}
        )"""
    if epochs:
        cte += ",\n        cells AS MATERIALIZED (" + _fold_epochs(answer, labels, text) + ")"
    return cte


def _fold_epochs(answer: bool, labels: Sequence[str], text: bool) -> str:
    """One cell from a run's K answers to an item: `correct` is the majority (more than half
    of the judged answers; a tie is not correct), the verdict key the most common one, a label
    true when true in any answer; the answer reads `k/K correct · ` before epoch 1's, whose response
    the cell shows (the drill-down lists all K)."""
    n_correct = "count(*) FILTER (WHERE correct)"
    extra = []
    if answer:
        first = "arg_min_null({0}, epoch)"  # epoch 1's, NULL included
        extra += [
            f"CASE WHEN count(*) = 1 THEN {first.format('answer')} "
            f"ELSE {n_correct} || '/' || count(*) || ' correct · ' || {first.format('answer')} "
            "END AS answer",
            f"{first.format('response_status')} AS response_status",
            f"{first.format('response')} AS response",
            f"{first.format('n_chars')} AS n_chars",
        ]
    extra += [f"bool_or({lb}) AS {lb}" for lb in labels]
    if text:
        extra += ["string_agg(response, ' ') AS response", "any_value(prompt) AS prompt"]
    return f"""
            SELECT item_id, col, pos, mode(vkey) AS vkey,
                   CASE WHEN count(correct) > 0 THEN 2 * {n_correct} > count(correct) END
                       AS correct
                   {"".join(", " + e for e in extra)}
            FROM answers GROUP BY item_id, col, pos"""


def _col_params(cols: list[tuple[str, str, str]]) -> list[Any]:
    params: list[Any] = []
    for pos, (name, run_id, variant) in enumerate(cols):
        params += [name, run_id, variant, pos]
    return params


# -- the page -------------------------------------------------------------------------------


def grid_page(
    store: Store,
    benchmark: str,
    item_set: str,
    runs: tuple[str, ...],
    category: str | None = None,
    label: str | None = None,
    disagree_only: bool = False,
    text: str | None = None,
    sort: str = "item id",
    page: int = 1,
    page_size: int = 50,
    variants: tuple[str, ...] = (),
    expanded: bool = False,
) -> GridPage:
    """One page of items × columns, filtered and sorted in SQL (see module docstring).

    `label` (a benchmark with named labels): keep items where the label is true in at least
    one column.
    `text`: case-insensitive substring of the prompt or of any shown response.
    `expanded`: cells hold the response as written (up to FETCH_CHARS), not collapsed.
    """
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}")
    known = grid_labels(benchmark)
    if label and label not in known:
        raise ValueError(
            f"label filter {label!r}: one of {', '.join(known) or '(none: no labels)'}"
        )
    page_size = max(1, int(page_size))
    with store.connect() as con:
        cols = _columns(con, runs, variants)
        if not cols:
            return GridPage(_empty_rows([]), [], 0, 1, 1)
        epochs = _several_epochs(con, runs)
        where, params = ["i.item_set = ?"], [item_set]
        cat_params = [category, category] if category else []
        having = []
        if label:
            having.append(f"bool_or(coalesce(c.{label}, false))")
        if text and text.strip():
            needle = text.strip().lower()
            having.append(
                "(bool_or(contains(lower(coalesce(c.response, '')), ?)) "
                "OR bool_or(contains(lower(coalesce(c.prompt, '')), ?)))"
            )
        order = {
            "item id": "i.item_id",
            "category": "i.primary_category NULLS LAST, i.secondary_category NULLS LAST, i.item_id",
            "disagreements": "a.n_disagree DESC, i.item_id",
        }[sort]
        having_sql = ("HAVING " + " AND ".join(having)) if having else ""
        text_params = [needle, needle] if text and text.strip() else []

        has_text = bool(text and text.strip())
        sql = f"""
            WITH {
            _cells_cte(
                len(cols),
                labels=[label] if label else [],
                text=has_text,
                category=bool(category),
                epochs=epochs,
            )
        },
            modal AS (SELECT item_id, max(n) AS top, sum(n) AS n_keyed
                      FROM (SELECT item_id, vkey, count(*) AS n FROM cells
                            WHERE vkey IS NOT NULL GROUP BY ALL) GROUP BY item_id),
            agg AS (SELECT c.item_id, count(*) AS n_cells,
                           count(*) FILTER (WHERE c.correct) AS n_correct
                    FROM cells c GROUP BY c.item_id {having_sql}),
            a AS (SELECT agg.*, coalesce(m.n_keyed - m.top, 0) AS n_disagree
                  FROM agg LEFT JOIN modal m USING (item_id))
            SELECT i.item_id, i.primary_category, i.secondary_category, i.is_error,
                   left(i.prompt, 200) AS prompt, a.n_cells, a.n_correct, a.n_disagree,
                   count(*) OVER () AS total
            FROM a JOIN items i ON i.item_id = a.item_id
            WHERE {" AND ".join(where)} {"AND a.n_disagree > 0" if disagree_only else ""}
            ORDER BY {order}"""
        args = _col_params(cols) + [item_set] + cat_params + text_params + params
        page = min(max(1, int(page)), MAX_PAGE)
        head = con.execute(
            sql + " LIMIT ? OFFSET ?", args + [page_size, (page - 1) * page_size]
        ).df()
        if head.empty and page > 1:  # past the end (filters narrowed): show the last page
            total = int(con.execute(f"SELECT count(*) FROM ({sql})", args).fetchall()[0][0])
            page = max(1, -(-total // page_size))
            head = con.execute(
                sql + " LIMIT ? OFFSET ?", args + [page_size, (page - 1) * page_size]
            ).df()
        total = int(head["total"].iloc[0]) if len(head) else 0
        cells = _page_cells(con, cols, item_set, list(head["item_id"]), epochs)
    rows = _wide(head.drop(columns=["total"]), cells, [c[0] for c in cols], expanded)
    pages = max(1, -(-total // page_size))
    return GridPage(rows, [c[0] for c in cols], total, page, pages, cells)


def _page_cells(
    con: Any,
    cols: list[tuple[str, str, str]],
    item_set: str,
    item_ids: list[str],
    epochs: bool = False,
) -> pd.DataFrame:
    if not item_ids:
        return pd.DataFrame(columns=["item_id", "col", "answer", "correct", "response", "n_chars"])
    return con.execute(
        f"""
        WITH {_cells_cte(len(cols), answer=True, items_in=len(item_ids), epochs=epochs)}
        SELECT item_id, col, pos, answer, correct, response_status, response, n_chars
        FROM cells ORDER BY item_id, pos""",
        _col_params(cols) + [item_set] + item_ids,
    ).df()


def _empty_rows(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(columns=["item_id", "category", "prompt", "disagreements", *columns])


def _wide(
    head: pd.DataFrame, cells: pd.DataFrame, columns: list[str], expanded: bool = False
) -> pd.DataFrame:
    """One row per item: id, category, prompt, disagreements, then one text cell per column."""
    if head.empty:
        return _empty_rows(columns)
    text: dict[tuple[str, str], str] = {}
    for r in cells.to_dict("records"):
        text[(r["item_id"], r["col"])] = cell_text(
            r["answer"], r["correct"], r["response"], r["n_chars"], expanded=expanded
        )
    category = [
        " / ".join(str(c) for c in (p, s) if c is not None and not pd.isna(c))
        or ("control" if e is not None and not pd.isna(e) and not e else "")
        for p, s, e in zip(head["primary_category"], head["secondary_category"], head["is_error"])
    ]
    out = pd.DataFrame(
        {
            "item_id": head["item_id"],
            "category": category,
            "prompt": head["prompt"].fillna(""),
            "disagreements": head["n_disagree"].astype(int),
        }
    )
    for col in columns:
        out[col] = [text.get((item, col), "") for item in head["item_id"]]
    return out.reset_index(drop=True)


MARK = {True: "✓", False: "✗", None: "–"}


def cell_text(
    answer: Any,
    correct: Any,
    response: Any,
    n_chars: Any = None,
    limit: int = CELL_CHARS,
    expanded: bool = False,
) -> str:
    """`✓ D IA · first 300 characters…` — the mark is the correctness colour. Expanded: the
    response as written (as fetched), line breaks kept."""
    ok = None if correct is None or pd.isna(correct) else bool(correct)
    text = response if isinstance(response, str) else ""
    body = text if expanded else collapse(text, limit)
    total = int(n_chars) if n_chars is not None and not pd.isna(n_chars) else len(body)
    if isinstance(response, str) and total > len(response):  # cut by FETCH_CHARS in SQL
        body = body.rstrip("…") + f"… [{total:,} chars]"
    return f"{MARK[ok]} {answer or ''} · {body}".strip()


_WS = re.compile(r"\s+")


def collapse(text: str, limit: int = CELL_CHARS, min_repeats: int = 3) -> str:
    """A response for a grid cell: runs of ≥3 identical lines become one `[repeated line ×N]`,
    a phrase repeated ≥3 times in a row becomes `[repeated ×N]`, then the first `limit`
    characters (`…` when cut). Line breaks are shown as ` ⏎ `."""
    lines = [ln.strip() for ln in (text or "").splitlines()]
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        count = j - i + 1
        if lines[i] and count >= min_repeats:
            out.append(f"{lines[i]} [repeated line ×{count}]")
        else:
            out.extend(lines[i : j + 1])
        i = j + 1
    flat = " ⏎ ".join(ln for ln in out if ln)
    flat = _collapse_phrases(_WS.sub(" ", flat), min_repeats)
    if len(flat) > limit:
        return flat[:limit].rstrip() + "…"
    return flat


_PHRASE = re.compile(r"(.{4,120}?)(?:\s*\1){2,}", re.S)


def _collapse_phrases(text: str, min_repeats: int) -> str:
    def repl(m: re.Match) -> str:
        unit = m.group(1)
        n = len(re.findall(re.escape(unit), m.group(0)))
        return f"{unit.strip()} [repeated ×{n}]" if n >= min_repeats else m.group(0)

    return _PHRASE.sub(repl, text)


# -- drill-down -----------------------------------------------------------------------------


def grid_detail(
    store: Store,
    item_set: str,
    runs: tuple[str, ...],
    item_id: str,
    variants: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """One item: its prompt, gold, explanation, and per column the full response and its
    result record (answer, correct, labels, explanation, metadata, the judge's raw output), as
    plain values. A run asked K times (`--epochs K`) has K cells, one per answer: `epoch` says
    which, `epochs` how many the column has."""
    with store.connect() as con:
        item = con.execute(
            """SELECT item_id, is_error, primary_category, secondary_category,
                                     prompt, explanation, gold FROM items
                              WHERE item_set = ? AND item_id = ?""",
            [item_set, item_id],
        ).df()
        if item.empty:
            return None
        cols = _columns(con, runs, variants)
        if not cols:
            return {**_plain(item.iloc[0].to_dict()), "cells": []}
        values = ", ".join("(?, ?, ?, ?)" for _ in cols)
        frame = con.execute(
            f"""
            WITH cols(col, run_id, variant, pos) AS (VALUES {values})
            SELECT c.col, c.run_id, c.variant, x.status AS response_status, x.error,
                   x.response, x.scores, {_CELL_ANSWER} AS answer,
                   {_CELL_CORRECT} AS correct, r.model, v.status AS result_status, v.labels,
                   v.explanation, v.metadata, v.raw AS judge_raw, v.parse_note, v.judge_model,
                   v.error AS judge_error,
                   x.epoch, count(*) OVER (PARTITION BY c.pos) AS epochs
            FROM cols c JOIN responses x ON x.run_id = c.run_id AND x.variant = c.variant
            JOIN runs r ON r.run_id = x.run_id
            LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = x.item_id
            {_CELL_JOIN}
            WHERE x.item_id = ? ORDER BY c.pos, x.epoch""",
            _col_params(cols) + [item_id],
        ).df()
    cells = []
    for row in frame.to_dict("records"):
        row = _plain(row)
        for key in ("labels", "metadata", "scores"):
            if isinstance(row.get(key), str):
                try:
                    row[key] = json.loads(row[key])
                except ValueError:
                    pass
        cells.append(row)
    return {**_plain(item.iloc[0].to_dict()), "cells": cells}


def _plain(row: dict) -> dict:
    return {
        k: (None if not isinstance(v, (list, dict, str)) and pd.isna(v) else v)
        for k, v in row.items()
    }
