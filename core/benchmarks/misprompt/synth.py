"""Synthetic Mis-prompt runs (items, runs, responses, verdicts) built in SQL, for benchmarks and tests.

Built with DuckDB `range()` so a million verdicts take seconds, not minutes of Python loops.
Labels are deterministic pseudo-random draws (`hash`) whose rates depend on the model, the
category and whether the item is a control, so the heatmaps have structure. Nothing here is a
real model output: runs are named `synthetic-…` and their params say so.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from core.benchmarks.misprompt.record import derive_sql
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, PRIMARY_OF, SECONDARY
from core.store import Store

SETTINGS = ("zero-shot", "one-shot", "three-shot", "cot", "sft")


@dataclass(frozen=True)
class SynthSpec:
    n_verdicts: int = 1_000_000
    n_models: int = 8
    settings: tuple[str, ...] = SETTINGS
    control_every: int = 2  # every k-th item is a control (2 -> 1:1 like the paper); 0: none
    item_set: str = "synthetic"
    prefix: str = "synthetic"
    with_responses: bool = True
    failed_every: int = 0  # every k-th verdict is status 'failed' (0: none)
    # finish each run as the runner does (the task's after_run: its page intervals kept)
    after_run: bool = False

    @property
    def n_runs(self) -> int:
        return self.n_models * len(self.settings)

    @property
    def n_items(self) -> int:
        return max(1, self.n_verdicts // self.n_runs)


def fill(store: Store, spec: SynthSpec = SynthSpec()) -> dict[str, int]:
    """Insert one item set and n_models × len(settings) runs over it (replacing earlier ones)."""
    n_items, cats = spec.n_items, len(SECONDARY)
    cat_values = ", ".join(f"({i}, '{s}', '{PRIMARY_OF[s]}')" for i, s in enumerate(SECONDARY))
    settings_values = ", ".join(f"({i}, '{s}')" for i, s in enumerate(spec.settings))
    ctrl = (
        f"(i.k % {spec.control_every} = {spec.control_every - 1})"
        if spec.control_every
        else "false"
    )
    label_exprs = []
    for j, label in enumerate(JUDGE_LABELS):
        # Erroneous: rate falls with label difficulty, rises with model index and setting;
        # controls: small false-alarm rate.
        label_exprs.append(
            f"CASE WHEN i.is_error THEN (hash(r.run_id, i.item_id, {j}) % 1000) < "
            f"(700 - {j * 90} + r.m * 25 + r.s * 15 - (i.cat % 4) * 40) "
            f"ELSE (hash(r.run_id, i.item_id, {j}) % 1000) < (60 + {j * 10} - r.m * 5) END "
            f"AS {label}"
        )
    labels_sql = ",\n               ".join(label_exprs)
    failed = (
        f"CASE WHEN (hash(r.run_id, i.item_id) % {spec.failed_every}) = 0 THEN 'failed' "
        "ELSE 'ok' END"
        if spec.failed_every
        else "'ok'"
    )

    def write(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
        con.execute(
            "DELETE FROM results WHERE run_id IN (SELECT run_id FROM runs WHERE item_set = ?)",
            [spec.item_set],
        )
        con.execute(
            "DELETE FROM responses WHERE run_id IN (SELECT run_id FROM runs WHERE item_set = ?)",
            [spec.item_set],
        )
        con.execute("DELETE FROM runs WHERE item_set = ?", [spec.item_set])
        con.execute("DELETE FROM items WHERE item_set = ?", [spec.item_set])
        con.execute("DELETE FROM item_sets WHERE name = ?", [spec.item_set])
        con.execute(f"""
            CREATE TEMP TABLE _cats AS SELECT * FROM (VALUES {cat_values}) t(cat, secondary, prim);
            CREATE TEMP TABLE _items AS
            SELECT range AS k, printf('syn-%07d', range) AS item_id,
                   NOT {ctrl.replace("i.k", "range")} AS is_error,
                   (range // {max(spec.control_every, 1)}) % {cats} AS cat
            FROM range({n_items});
            INSERT INTO items (item_set, item_id, benchmark, split, is_error, primary_category,
                               secondary_category, prompt, explanation, gold)
            SELECT '{spec.item_set}', i.item_id, 'misprompt', 'synthetic', i.is_error,
                   CASE WHEN i.is_error THEN c.prim END, CASE WHEN i.is_error THEN c.secondary END,
                   'Synthetic prompt ' || i.item_id, 'synthetic', 'synthetic ground truth'
            FROM _items i JOIN _cats c ON c.cat = i.cat;
            CREATE TEMP TABLE _runs AS
            SELECT printf('{spec.prefix}-m%d-%s', m.range, s.name) AS run_id,
                   printf('synth-model-%d', m.range) AS model, s.name AS setting,
                   m.range AS m, s.idx AS s
            FROM range({spec.n_models}) m, (VALUES {settings_values}) s(idx, name);
            INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, mode,
                              judge_model, template_id, params, weak_model, status, n_planned)
            SELECT run_id, 'misprompt', 'eval', '{spec.item_set}', model, 'synthetic', setting,
                   'proactive', 'synthetic-judge', 'synthetic', '{{"synthetic": true}}', false,
                   'done', {n_items} FROM _runs;
        """)
        con.execute(f"""
            INSERT INTO results (run_id, item_id, variant, judge_model, status, labels,
                                 metadata, raw, parse_note)
            SELECT run_id, item_id, setting, 'synthetic-judge', status,
                   json_object({", ".join(f"'{lb}', {lb}" for lb in JUDGE_LABELS)}),
                   json_object('rationales', NULL, 'inconsistent',
                               (identification_accurate AND NOT identification_attempt)
                               OR (correction_accurate AND NOT correction_attempt)),
                   NULL, 'synthetic'
            FROM (
                SELECT r.run_id, i.item_id, r.setting, {failed} AS status,
                       {labels_sql}
                FROM _runs r, _items i)
            ORDER BY run_id, item_id     -- a real runner writes one run after the other
        """)
        if spec.with_responses:
            con.execute("""
                INSERT INTO responses (run_id, item_id, variant, status, messages, response,
                                       attempts, prompt_tokens, completion_tokens, latency_ms,
                                       cost_usd, cached)
                SELECT r.run_id, i.item_id, r.setting, 'ok', NULL,
                       'Synthetic response to ' || i.item_id, 1, 20, 40, 100.0, 0.0, false
                FROM _runs r, _items i ORDER BY r.run_id, i.item_id
            """)
        con.execute(
            "INSERT INTO item_sets (name, benchmark, origin, n_items) VALUES (?, 'misprompt', 'synthetic', ?)",
            [spec.item_set, n_items],
        )
        counted = con.execute("SELECT count(*) FROM results v JOIN _runs USING (run_id)").fetchone()
        n_verdicts = counted[0] if counted else 0  # count(*) always returns one row
        con.execute(derive_sql(" AND v.run_id IN (SELECT run_id FROM _runs)"))
        for t in ("_cats", "_items", "_runs"):
            con.execute(f"DROP TABLE {t}")
        return {"items": n_items, "runs": spec.n_runs, "verdicts": n_verdicts}

    counts = store.transaction(write)
    if spec.after_run:  # what MispromptTask.after_run does for each, in one call
        from core.benchmarks.misprompt.queries import keep_page_intervals

        keep_page_intervals(store, *_run_ids(spec))
    return counts


def _run_ids(spec: SynthSpec) -> list[str]:
    """The run ids `fill` writes (as its SQL names them)."""
    return [f"{spec.prefix}-m{m}-{s}" for m in range(spec.n_models) for s in spec.settings]
