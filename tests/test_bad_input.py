"""Bad-input corpus for the CLI (issue 11): every case drives `core.cli.main([...])` in-process
and checks the one-line message (file and line where there is one), the exit code, that no
traceback escapes, and that the database is row-for-row unchanged where nothing should change
(or byte-for-byte, for database files the program must not touch).

Each case is a function that builds its input under `tmp` and returns a Case; the table at the
bottom lists them with readable ids.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from core.cli import main as cli
from core.store import Store
from core.store import database as storage

ROOT = Path(__file__).resolve().parent.parent

EVIL_CSV_HEADER = (
    "id,split,question,error,primary_category,secondary_category,explanation,gold_answer\n"
)


@dataclass
class Case:
    argv: list[str]
    rc: int
    messages: list[str]  # substrings of stderr (file:line where there is one)
    unchanged: bool = True  # database rows identical before/after
    setup: Callable[[Store], object] | None = None
    check: Callable[[Store], None] | None = None
    db_file_unchanged: Path | None = None  # a database file that must keep its bytes
    absent: list[Path] = field(default_factory=list)  # files that must not be created
    one_line: bool = False  # the whole of stderr is the one error line


# -- helpers ------------------------------------------------------------------------------------


def _rows_sql(table: str) -> str:
    """Every row of `table`; `meta`'s data_version (the count of write transactions, a cache
    key: a transaction that changes no row still counts) is bookkeeping, not data."""
    if table == "meta":
        return "SELECT * FROM meta WHERE key <> 'data_version'"
    return f"SELECT * FROM {table}"


def snapshot(store: Store) -> dict[str, list]:
    """Every table's rows, sorted (so 'row-for-row unchanged' ignores physical order)."""
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                "ORDER BY 1"
            ).fetchall()
        ]
        return {t: sorted(map(repr, con.execute(_rows_sql(t)).fetchall())) for t in tables}
    finally:
        con.close()


_SNAPSHOTS: dict[bytes, dict[str, list]] = {}


def file_snapshot(store: Store) -> dict[str, list]:
    """`snapshot`, read once per distinct file content: a database file whose bytes are the
    same (and no write-ahead log beside it) holds the same rows. Most cases start from the same
    seeded copy and leave it untouched; reading every table of it (24 queries, ~70 ms of CPU)
    twice per case was most of this module's time."""
    if Path(f"{store.path}.wal").exists():
        return snapshot(store)
    key = hashlib.sha256(store.path.read_bytes()).digest()
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = snapshot(store)
    return _SNAPSHOTS[key]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))  # no newline translation
    return path


def jsonl(records: list) -> str:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n"


def mp_item(**over) -> dict:
    rec = {
        "id": "e1",
        "split": "test",
        "question": "Who composed the Eroica in 1900?",
        "error": "error",
        "primary_category": "",
        "secondary_category": "Spelling Errors",
        "explanation": "spelling",
        "gold_answer": "Beethoven, 1804",
    }
    rec.update(over)
    return rec


def trace(**over) -> dict:
    rec = {
        "input": "Sort: b a",
        "steps": ["first letters: b, a", "so: a b. The answer is a b"],
        "answer": "a b",
        "target": "a b",
        "mistake_index": None,
    }
    rec.update(over)
    return rec


def m2_text(errors: bool = True, token: str = "test") -> str:
    """Four sentences, three annotator-0 errors (one eligible passage, N = 3) or none."""
    edit = (
        "A 1 2|||R:VERB:SVA|||is|||REQUIRED|||-NONE-|||0"
        if errors
        else "A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0"
    )
    sents = [f"S This are a {token} .", "S He go home .", "S She have cat .", "S Fine sentence ."]
    blocks = [
        f"{s}\n{edit}"
        if (errors and k < 3)
        else f"{s}\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0"
        for k, s in enumerate(sents)
    ]
    return "\n\n".join(blocks) + "\n"


def add_run(name: str, benchmark: str, run_id: str) -> Callable[[Store], None]:
    def setup(store: Store) -> None:
        store.execute(
            "INSERT INTO runs (run_id, benchmark, item_set, status, n_planned) "
            "VALUES (?, ?, ?, 'done', 10)",
            [run_id, benchmark, name],
        )

    return setup


def n_items(name: str, n: int) -> Callable[[Store], None]:
    def check(store: Store) -> None:
        assert store.scalar("SELECT count(*) FROM items WHERE item_set = ?", [name]) == n

    return check


# -- cases: Mis-prompt items --------------------------------------------------------------------


def mp_separators_are_text(tmp: Path, db: Path) -> Case:
    """U+2028, U+0085 and form feed inside a value are text, not line breaks; CRLF is fine."""
    f = write(
        tmp / "seps.jsonl",
        jsonl(
            [
                mp_item(question="Who composed\u2028the Eroica\x85 in 1900?\x0c"),
                mp_item(
                    id="c1",
                    error="no_error",
                    secondary_category="",
                    gold_answer="Paris",
                    question="Capital of France?\u2029",
                ),
            ]
        ).replace("\n", "\r\n"),
    )
    return Case(
        ["import", "misprompt", str(f), "--name", "seps", "--db", str(db)],
        0,
        [],
        unchanged=False,
        check=n_items("seps", 2),
    )


def mp_csv_separators_are_text(tmp: Path, db: Path) -> Case:
    f = write(
        tmp / "seps.csv",
        EVIL_CSV_HEADER
        + "e1,test,Who composed\u2028the Eroica\x0c in 1900?,error,,Spelling Errors,x,"
        "Beethoven\r\n",
    )
    return Case(
        ["import", "misprompt", str(f), "--name", "seps-csv", "--db", str(db)],
        0,
        [],
        unchanged=False,
        check=n_items("seps-csv", 1),
    )


def mp_bool_question(tmp: Path, db: Path) -> Case:
    f = write(
        tmp / "b.json", json.dumps([mp_item(id="ok"), mp_item(id="bad", question=True)], indent=1)
    )
    return Case(
        ["import", "misprompt", str(f), "--db", str(db)],
        1,
        [f"{f}:12: question must be a string, got bool true", "nothing was imported"],
    )


def mp_numeric_question(tmp: Path, db: Path) -> Case:
    f = write(tmp / "n.jsonl", jsonl([mp_item(), mp_item(id="e2", question=42.5)]))
    return Case(
        ["import", "misprompt", str(f), "--db", str(db)],
        1,
        [f"{f}:2: question must be a string, got float 42.5"],
    )


def mp_list_gold(tmp: Path, db: Path) -> Case:
    f = write(tmp / "g.jsonl", jsonl([mp_item(gold_answer=["a", "b"])]))
    return Case(
        ["import", "misprompt", str(f), "--db", str(db)],
        1,
        [f"{f}:1: gold_answer must be a string, got list"],
    )


def mp_nul_byte(tmp: Path, db: Path) -> Case:
    f = write(
        tmp / "nul.csv",
        EVIL_CSV_HEADER + "e1,test,ok?,no_error,,,,\n" + "e2,test,bad\x00,no_error,,,,\n",
    )
    return Case(
        ["import", "misprompt", str(f), "--db", str(db)], 1, [f"{f}:3: contains a NUL byte"]
    )


def mp_not_utf8(tmp: Path, db: Path) -> Case:
    f = write(
        tmp / "latin.csv",
        EVIL_CSV_HEADER.encode() + "e1,test,caf\xe9?,no_error,,,,\n".encode("latin-1"),
    )
    return Case(["import", "misprompt", str(f), "--db", str(db)], 1, [f"{f}:2: not UTF-8 text"])


def mp_deep_json(tmp: Path, db: Path) -> Case:
    f = write(tmp / "deep.json", "\n" + "[" * 100_000 + "]" * 100_000)
    return Case(
        ["import", "misprompt", str(f), "--db", str(db)], 1, [f"{f}:2: JSON nested too deeply"]
    )


def mp_deep_jsonl(tmp: Path, db: Path) -> Case:
    f = write(tmp / "deep.jsonl", jsonl([mp_item()]) + '{"id": ' + "[" * 100_000 + "\n")
    return Case(
        ["import", "misprompt", str(f), "--db", str(db)], 1, [f"{f}:2: JSON nested too deeply"]
    )


def mp_folder(tmp: Path, db: Path) -> Case:
    d = tmp / "items.csv"
    d.mkdir()
    return Case(
        ["import", "misprompt", str(d), "--db", str(db)], 1, [f"{d}: is a folder, not a file"]
    )


def mp_missing(tmp: Path, db: Path) -> Case:
    return Case(
        ["import", "misprompt", str(tmp / "nope.csv"), "--db", str(db)],
        1,
        [f"{tmp / 'nope.csv'}: no such file"],
    )


def mp_zero_items(tmp: Path, db: Path) -> Case:
    f = write(tmp / "misprompt-sample.csv", EVIL_CSV_HEADER)
    return Case(
        ["import", "misprompt", str(f), "--db", str(db)],
        1,
        [f"{f}: no items in the file"],
        check=n_items("misprompt-sample", 88),
    )


def mp_used_set(tmp: Path, db: Path) -> Case:
    f = write(tmp / "other.jsonl", jsonl([mp_item()]))
    return Case(
        ["import", "misprompt", str(f), "--name", "misprompt-sample", "--db", str(db)],
        1,
        [
            "item set 'misprompt-sample' is used by 1 run(s) (mp-run-1)",
            "--name misprompt-sample-2",
            "nothing was imported",
        ],
        setup=add_run("misprompt-sample", "misprompt", "mp-run-1"),
        check=n_items("misprompt-sample", 88),
    )


def mp_other_benchmark_name(tmp: Path, db: Path) -> Case:
    f = write(tmp / "x.jsonl", jsonl([mp_item()]))
    return Case(
        ["import", "misprompt", str(f), "--name", "bbm-sample", "--db", str(db)],
        1,
        ["item set 'bbm-sample' already exists for benchmark 'bbm'"],
    )


# -- cases: BIG-Bench Mistake -------------------------------------------------------------------


def bbm_separators_are_text(tmp: Path, db: Path) -> Case:
    f = write(
        tmp / "word_sorting.jsonl",
        jsonl([trace(input="Sort:\u2028b a\x0c"), trace(steps=["x\x85y", "z"])]),
    )
    return Case(
        ["import", "bbm", str(f), "--name", "bbm-seps", "--db", str(db)],
        0,
        [],
        unchanged=False,
        check=n_items("bbm-seps", 2),
    )


def bbm_nul(tmp: Path, db: Path) -> Case:
    f = write(tmp / "word_sorting.jsonl", jsonl([trace()]) + '{"input": "a\x00"}\n')
    return Case(
        ["import", "bbm", str(f), "--db", str(db)],
        1,
        [f"{f}:2: contains a NUL byte", "nothing was imported"],
    )


def bbm_deep(tmp: Path, db: Path) -> Case:
    f = write(tmp / "word_sorting.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")
    return Case(["import", "bbm", str(f), "--db", str(db)], 1, [f"{f}:1: JSON nested too deeply"])


def bbm_number_input(tmp: Path, db: Path) -> Case:
    f = write(tmp / "word_sorting.jsonl", jsonl([trace(), trace(input=7)]))
    return Case(
        ["import", "bbm", str(f), "--db", str(db)],
        1,
        [f"{f}:2: 'input' must be a non-empty string"],
    )


def bbm_folder(tmp: Path, db: Path) -> Case:
    d = tmp / "word_sorting.jsonl"
    d.mkdir()
    return Case(["import", "bbm", str(d), "--db", str(db)], 1, [f"{d}: is a folder, not a file"])


def bbm_used_set(tmp: Path, db: Path) -> Case:
    f = write(tmp / "word_sorting.jsonl", jsonl([trace()]))
    return Case(
        ["import", "bbm", str(f), "--name", "bbm-sample", "--db", str(db)],
        1,
        ["item set 'bbm-sample' is used by 2 run(s) (bbm-a, bbm-b)", "--name bbm-sample-2"],
        setup=lambda s: (
            add_run("bbm-sample", "bbm", "bbm-a")(s),
            add_run("bbm-sample", "bbm", "bbm-b")(s),
        ),
        check=n_items("bbm-sample", 12),
    )


# -- cases: ErrorBench M2 / SGML ----------------------------------------------------------------


def m2_separators_are_text(tmp: Path, db: Path) -> Case:
    f = write(tmp / "seps.m2", m2_text(token="te\u2028st\x0cx"))
    return Case(
        ["import", "m2", str(f), "--name", "m2-seps", "--db", str(db)],
        0,
        [],
        unchanged=False,
        check=n_items("m2-seps", 1),
    )


def m2_zero_eligible(tmp: Path, db: Path) -> Case:
    """The tester's case: 0 eligible passages emptied the 13-passage set with exit 0."""
    f = write(tmp / "none.m2", m2_text(errors=False))
    return Case(
        ["import", "m2", str(f), "--name", "errorbench-sample", "--db", str(db)],
        1,
        [f"{f}: no passage of 4 sentences has 3–7 errors", "nothing was imported"],
        check=n_items("errorbench-sample", 13),
    )


def m2_used_set(tmp: Path, db: Path) -> Case:
    f = write(tmp / "three.m2", m2_text())
    return Case(
        ["import", "m2", str(f), "--name", "errorbench-sample", "--db", str(db)],
        1,
        ["item set 'errorbench-sample' is used by 1 run(s) (eb-1)", "--name errorbench-sample-2"],
        setup=add_run("errorbench-sample", "errorbench", "eb-1"),
        check=n_items("errorbench-sample", 13),
    )


def m2_folder(tmp: Path, db: Path) -> Case:
    d = tmp / "dir.m2"
    d.mkdir()
    return Case(["import", "m2", str(d), "--db", str(db)], 1, [f"{d}: is a folder, not a file"])


def m2_nul(tmp: Path, db: Path) -> Case:
    f = write(tmp / "nul.m2", "S A b .\nA 0 1|||R:X|||a\x00|||REQUIRED|||-NONE-|||0\n")
    return Case(["import", "m2", str(f), "--db", str(db)], 1, [f"{f}, line 2: contains a NUL byte"])


def m2_not_utf8(tmp: Path, db: Path) -> Case:
    f = write(tmp / "latin.m2", b"S A b .\n\nS caf\xe9 .\n")
    return Case(["import", "m2", str(f), "--db", str(db)], 1, [f"{f}, line 3: not UTF-8 text"])


def m2_bad_line(tmp: Path, db: Path) -> Case:
    f = write(tmp / "bad.m2", "S A b .\nX what\n")
    return Case(
        ["import", "m2", str(f), "--db", str(db)],
        1,
        [f"{f}, line 2: expected a line starting with 'S ' or 'A '"],
    )


def sgml_not_utf8(tmp: Path, db: Path) -> Case:
    f = write(tmp / "ok.m2", m2_text())
    s = write(tmp / "essays.sgml", b'<DOC nid="1">\n<TEXT>\n<P>caf\xe9</P>\n')
    return Case(
        ["import", "m2", str(f), "--sgml", str(s), "--db", str(db)],
        1,
        [f"{s}, line 3: not UTF-8 text"],
    )


def sgml_folder(tmp: Path, db: Path) -> Case:
    f = write(tmp / "ok.m2", m2_text())
    s = tmp / "essays.sgml"
    s.mkdir()
    return Case(
        ["import", "m2", str(f), "--sgml", str(s), "--db", str(db)],
        1,
        [f"{s}: is a folder, not a file"],
    )


def sgml_mismatch(tmp: Path, db: Path) -> Case:
    f = write(tmp / "ok.m2", m2_text())
    s = write(
        tmp / "essays.sgml",
        '<DOC nid="1">\n<TEXT>\n<P>Something else entirely.</P>\n</TEXT>\n</DOC>\n',
    )
    return Case(
        ["import", "m2", str(f), "--sgml", str(s), "--db", str(db)],
        1,
        [f"{s}: the SGML text does not match M2 sentence 1 (line 1)"],
    )


# -- cases: output paths ------------------------------------------------------------------------


def export_out_folder(tmp: Path, db: Path) -> Case:
    d = tmp / "out.csv"
    d.mkdir()
    return Case(
        ["export", "--source", "exp-run", "--out", str(d), "--db", str(db)],
        1,
        [f"--out {d} is a directory; give a file path"],
        setup=add_run("misprompt-sample", "misprompt", "exp-run"),
    )


# -- cases: damaged, read-only and missing databases --------------------------------------------


def _copy_db(db: Path, tmp: Path, name: str) -> Path:
    target = tmp / name
    shutil.copy(db, target)
    return target


def db_truncated(tmp: Path, db: Path) -> Case:
    bad = _copy_db(db, tmp, "trunc.duckdb")
    bad.write_bytes(bad.read_bytes()[:5000])
    return Case(
        ["runs", "--db", str(bad)],
        1,
        [f"{bad} could not be opened as a DuckDB database", "damaged", "python -m core init"],
        db_file_unchanged=bad,
    )


def db_truncated_import(tmp: Path, db: Path) -> Case:
    bad = _copy_db(db, tmp, "trunc2.duckdb")
    bad.write_bytes(bad.read_bytes()[:5000])
    f = write(tmp / "x.jsonl", jsonl([mp_item()]))
    return Case(
        ["import", "misprompt", str(f), "--db", str(bad)],
        1,
        [f"{bad} could not be opened"],
        db_file_unchanged=bad,
    )


def db_schema_not_a_number(tmp: Path, db: Path) -> Case:
    bad = _copy_db(db, tmp, "meta.duckdb")
    con = duckdb.connect(str(bad))
    con.execute("UPDATE meta SET value = 'two' WHERE key = 'schema_version'")
    con.close()
    return Case(
        ["runs", "--db", str(bad)],
        1,
        [f"{bad} has schema version 'two' in table meta, which is not a whole number"],
        db_file_unchanged=bad,
    )


def db_folder(tmp: Path, db: Path) -> Case:
    d = tmp / "db.duckdb"
    d.mkdir()
    return Case(["runs", "--db", str(d)], 1, [f"{d} is a folder, not a database file"])


def db_missing_reader(tmp: Path, db: Path) -> Case:
    missing = tmp / "none.duckdb"
    return Case(
        ["runs", "--db", str(missing)],
        1,
        [f"No database at {missing}", "python -m core init"],
        absent=[missing],
    )


def db_missing_export(tmp: Path, db: Path) -> Case:
    missing = tmp / "none2.duckdb"
    return Case(
        ["export", "--source", "x", "--out", str(tmp / "o.csv"), "--db", str(missing)],
        1,
        [f"No database at {missing}"],
        absent=[missing, tmp / "o.csv"],
    )


def _half(db: Path, tmp: Path, name: str) -> Path:
    """A real store file cut to half its size, as the hostile-input run did."""
    bad = _copy_db(db, tmp, name)
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    return bad


def _truncated_write(words: list[str]) -> Callable[[Path, Path], Case]:
    """A command that writes, against a half file: refused before anything is written."""

    def build(tmp: Path, db: Path) -> Case:
        bad = _half(db, tmp, "half.duckdb")
        argv = [w.replace("{tmp}", str(tmp)) for w in words]
        write(tmp / "x.jsonl", jsonl([mp_item()]))
        return Case(
            [*argv, "--db", str(bad)],
            1,
            [f"{bad} could not be opened as a DuckDB database: it is truncated", "nothing was"],
            db_file_unchanged=bad,
            absent=[Path(f"{bad}.wal"), tmp / "run-logs"],
            one_line=True,
        )

    return build


RUN_ARGS = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--quiet"]


def _bad_url(url: str, why: str) -> Callable[[Path, Path], Case]:
    def build(tmp: Path, db: Path) -> Case:
        return Case(
            ["run", "misprompt", "--items", "misprompt-sample", "--limit", "1", "--db", str(db)]
            + ["--base-url", url, "--model", "m", "--quiet"],
            1,
            [f"error: --base-url {url!r} is not a valid URL ({why})"],
            one_line=True,
        )

    return build


def run_negative_seed(tmp: Path, db: Path) -> Case:
    return Case(
        ["run", "misprompt", "--items", "misprompt-sample", "--limit", "2"]
        + ["--sample-seed", "-1", "--db", str(db), *RUN_ARGS],
        1,
        ["error: --sample-seed must be ≥ 0 (got -1)"],
        one_line=True,
    )


def _deep_paper_prompts(body: str) -> Callable[[Path, Path], Case]:
    """A prompts folder whose every task file has one unreadably deep expression on line 3."""

    def build(tmp: Path, db: Path) -> Case:
        folder = tmp / "prompts"
        tasks = duckdb.connect(str(db), read_only=True)
        try:
            names = [
                r[0]
                for r in tasks.execute(
                    "SELECT DISTINCT primary_category FROM items WHERE item_set = 'bbm-sample'"
                ).fetchall()
            ]
        finally:
            tasks.close()
        for task in names:
            write(
                folder / f"{task}_prompts.py",
                f"X = 1\n\nDIRECT_MESSAGES = (\n{body})\nDIRECT_TEMPLATE = '{{input}}'\n",
            )
        first = sorted(names)[0]
        return Case(
            ["run", "bbm", "--method", "direct_trace", "--items", "bbm-sample"]
            + ["--prompts", "paper", "--paper-prompts-dir", str(folder), "--db", str(db)]
            + RUN_ARGS,
            2,  # as every other unusable --paper-prompts-dir (tests/test_bbm_paper_prompts.py)
            [f"{folder / f'{first}_prompts.py'}:3: an expression nested too deeply to read"],
            one_line=True,
        )

    return build


def _missing_db_writer(words: list[str]) -> Callable[[Path, Path], Case]:
    def build(tmp: Path, db: Path) -> Case:
        missing = tmp / "absent.duckdb"
        return Case(
            [*words, "--db", str(missing)],
            1,
            [f"No database at {missing}", "python -m core init"],
            absent=[missing, Path(f"{missing}.wal"), tmp / "run-logs"],
            one_line=True,
        )

    return build


CASES = {
    "misprompt-u2028-u0085-formfeed-crlf-accepted": mp_separators_are_text,
    "misprompt-csv-u2028-formfeed-accepted": mp_csv_separators_are_text,
    "misprompt-json-boolean-question": mp_bool_question,
    "misprompt-jsonl-numeric-question": mp_numeric_question,
    "misprompt-jsonl-list-gold": mp_list_gold,
    "misprompt-csv-nul-byte": mp_nul_byte,
    "misprompt-csv-not-utf8": mp_not_utf8,
    "misprompt-json-100000-nested-lists": mp_deep_json,
    "misprompt-jsonl-deep-line": mp_deep_jsonl,
    "misprompt-path-is-folder": mp_folder,
    "misprompt-path-missing": mp_missing,
    "misprompt-zero-items-keeps-set": mp_zero_items,
    "misprompt-used-set-refused": mp_used_set,
    "misprompt-name-of-other-benchmark": mp_other_benchmark_name,
    "bbm-u2028-u0085-formfeed-accepted": bbm_separators_are_text,
    "bbm-nul-byte": bbm_nul,
    "bbm-100000-nested-lists": bbm_deep,
    "bbm-numeric-input": bbm_number_input,
    "bbm-path-is-folder": bbm_folder,
    "bbm-used-set-refused": bbm_used_set,
    "m2-u2028-formfeed-accepted": m2_separators_are_text,
    "m2-zero-eligible-keeps-set": m2_zero_eligible,
    "m2-used-set-refused": m2_used_set,
    "m2-path-is-folder": m2_folder,
    "m2-nul-byte": m2_nul,
    "m2-not-utf8": m2_not_utf8,
    "m2-bad-line": m2_bad_line,
    "sgml-not-utf8-names-file": sgml_not_utf8,
    "sgml-path-is-folder": sgml_folder,
    "sgml-mismatch-names-file": sgml_mismatch,
    "export-out-is-folder": export_out_folder,
    "db-truncated": db_truncated,
    "db-truncated-on-import": db_truncated_import,
    "db-schema-version-not-a-number": db_schema_not_a_number,
    "db-path-is-folder": db_folder,
    "db-missing-reader-creates-nothing": db_missing_reader,
    "db-missing-export-creates-nothing": db_missing_export,
    "db-half-truncated-import-refused": _truncated_write(
        ["import", "misprompt", "{tmp}/x.jsonl", "--name", "new"]
    ),
    "db-half-truncated-init-refused": _truncated_write(["init"]),
    "db-half-truncated-run-refused": _truncated_write(
        ["run", "misprompt", "--items", "misprompt-sample", "--limit", "1", *RUN_ARGS]
    ),
    "db-half-truncated-rescore-refused": _truncated_write(
        ["rescore", "--source", "r1", "--judge-base-url", "http://127.0.0.1:9/v1"]
        + ["--judge-model", "m", "--quiet"]
    ),
    "run-base-url-port-out-of-range": _bad_url(
        "http://127.0.0.1:99999/v1", "Port out of range 0-65535"
    ),
    "run-base-url-invalid-ipv6": _bad_url("http://[::1", "Invalid IPv6 URL"),
    "run-negative-sample-seed": run_negative_seed,
    "bbm-paper-prompt-100000-deep-expression": _deep_paper_prompts("-" * 100_000 + "1"),
    "bbm-paper-prompt-200000-term-sum": _deep_paper_prompts("+".join(["1"] * 200_000)),
    "db-missing-run-creates-nothing": _missing_db_writer(
        ["run", "misprompt", "--items", "misprompt-sample", *RUN_ARGS]
    ),
    "db-missing-run-bbm-creates-nothing": _missing_db_writer(
        ["run", "bbm", "--method", "direct_trace", "--items", "bbm-sample", *RUN_ARGS]
    ),
    "db-missing-run-errorbench-creates-nothing": _missing_db_writer(
        ["run", "errorbench", "--items", "errorbench-sample", *RUN_ARGS]
    ),
    "db-missing-rescore-creates-nothing": _missing_db_writer(
        ["rescore", "--source", "r1", "--judge-base-url", "http://127.0.0.1:9/v1"]
        + ["--judge-model", "m", "--quiet"]
    ),
}


@pytest.fixture(scope="module")
def seeded_db(tmp_path_factory) -> Path:
    """One `init`ed database, copied per case (init is the slow part)."""
    from core.services.setup import init

    path = tmp_path_factory.mktemp("seed") / "seed.duckdb"
    init(Store.open(path))
    return path


@pytest.mark.parametrize("build", list(CASES.values()), ids=list(CASES))
def test_bad_input(build, seeded_db, tmp_path, capsys):
    db = tmp_path / "results.duckdb"
    shutil.copy(seeded_db, db)
    store = Store.open(db)
    case = build(tmp_path, db)
    if case.setup:
        case.setup(store)
    before = file_snapshot(store)
    kept = case.db_file_unchanged
    before_bytes = kept.read_bytes() if kept else None
    before_stat = (kept.stat().st_size, kept.stat().st_mtime_ns) if kept else None
    capsys.readouterr()
    try:
        rc = cli(case.argv)
    except SystemExit as exc:  # flag errors raised as SystemExit("error: …"), as a shell sees
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        rc = exc.code if isinstance(exc.code, int) else 1
    err = capsys.readouterr().err
    assert rc == case.rc, err
    for message in case.messages:
        assert message in err, err
    assert "Traceback" not in err
    if case.rc:
        assert err.startswith("error:") or err.startswith(str(tmp_path)), err
    if case.one_line:
        assert len(err.strip().splitlines()) == 1, err
    if case.unchanged:
        assert file_snapshot(store) == before
    if case.check:
        case.check(store)
    if kept is not None:
        assert kept.read_bytes() == before_bytes
        assert (kept.stat().st_size, kept.stat().st_mtime_ns) == before_stat
    for path in case.absent:
        assert not path.exists()


# -- read-only and vanished databases (need the process's view of permissions) ----------------


@pytest.fixture
def readonly(monkeypatch, seeded_db, tmp_path) -> Path:
    """A database whose folder this process may not write. The tests run as root, for whom
    permission bits do not bind, so os.access (what Store.open consults) is made to say so; the
    connection then really is DuckDB read_only=True, and a write really fails inside DuckDB if
    it gets that far."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "results.duckdb"
    shutil.copy(seeded_db, db)
    real_access = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and Path(path).resolve().is_relative_to(folder.resolve()):
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(storage.os, "access", access)
    return db


def test_readonly_database_browses_and_refuses_writes(readonly, tmp_path, capsys):
    before = readonly.read_bytes()
    store = Store.open(readonly)
    assert store.read_only
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 'misprompt-sample'") == 88
    assert cli(["runs", "--db", str(readonly)]) == 0  # listing works
    f = write(tmp_path / "x.jsonl", jsonl([mp_item()]))
    capsys.readouterr()
    assert cli(["import", "misprompt", str(f), "--name", "new", "--db", str(readonly)]) == 1
    err = capsys.readouterr().err
    assert f"error: {readonly} is read-only (the file or its folder is not writable)" in err
    assert "writes (runs, imports, labels) are disabled" in err and "Traceback" not in err
    with pytest.raises(storage.DatabaseReadOnly):
        store.execute("DELETE FROM items")
    # even a write that bypasses Store.transaction is refused by DuckDB itself
    with pytest.raises(storage.DatabaseReadOnly), store.connect() as con:
        con.execute("DELETE FROM items")
    assert readonly.read_bytes() == before


def test_readonly_database_that_needs_a_migration_says_so(readonly):
    con = duckdb.connect(str(readonly))
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(storage.DatabaseReadOnly, match="needs upgrading to"):
        Store.open(readonly)


def test_database_deleted_while_open_is_reported_not_recreated(seeded_db, tmp_path, capsys):
    db = tmp_path / "gone.duckdb"
    shutil.copy(seeded_db, db)
    store = Store.open(db)
    db.unlink()
    with pytest.raises(
        storage.DatabaseMissing,
        match="was deleted or moved while the app was running; run `python -m "
        "core init` or restore it",
    ):
        store.df("SELECT * FROM runs")
    with pytest.raises(storage.DatabaseMissing):
        store.execute("DELETE FROM runs")
    assert not db.exists()


def test_truncated_file_that_opens_fails_on_read_with_the_same_message(seeded_db, tmp_path):
    """Some truncations open fine and fail on the first read of a missing block."""
    db = tmp_path / "half.duckdb"
    data = seeded_db.read_bytes()
    failures = 0
    for cut in range(len(data) // 4, len(data), max(1, len(data) // 16)):
        db.write_bytes(data[:cut])
        try:
            store = Store.open(db, create=False)
            for table in ("meta", "items", "runs", "published_misprompt"):
                store.df(f"SELECT * FROM {table}")
        except storage.DatabaseCorrupt as exc:
            assert "could not be opened as a DuckDB database" in str(exc)
            failures += 1
        # any other exception type fails the test: no raw duckdb error escapes
    assert failures >= 1


# -- the damage probe (core.store.database.damage_probe) ----------------------------------------


def test_damage_probe_knows_duckdbs_file_layout(seeded_db):
    """An intact file is exactly the headers plus its blocks: if a DuckDB upgrade changes the
    layout, this fails here instead of the probe refusing good files (or missing bad ones)."""
    con = duckdb.connect(str(seeded_db), read_only=True)
    try:
        blocks, size = con.execute(
            "SELECT total_blocks, block_size FROM pragma_database_size()"
        ).fetchall()[0]
    finally:
        con.close()
    assert blocks > 0
    assert seeded_db.stat().st_size == storage._FILE_HEADERS_BYTES + blocks * size


def test_file_truncated_under_an_open_store_refuses_the_next_write(seeded_db, tmp_path):
    """E.g. the app holds a Store while the file is cut: the write is refused, not made."""
    db = tmp_path / "cut-later.duckdb"
    shutil.copy(seeded_db, db)
    store = Store.open(db)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) * 3 // 4])
    before = (db.read_bytes(), db.stat().st_size, db.stat().st_mtime_ns)
    with pytest.raises(storage.DatabaseCorrupt, match="it is truncated"):
        store.execute("DELETE FROM runs")
    assert (db.read_bytes(), db.stat().st_size, db.stat().st_mtime_ns) == before


def test_bad_base_url_in_the_endpoints_file_is_one_message(tmp_path):
    from core.engine.endpoints import EndpointError, load_endpoints

    models = write(
        tmp_path / "models.toml",
        '[endpoints.far]\nbase_url = "http://127.0.0.1:99999/v1"\nmodel = "m"\n',
    )
    with pytest.raises(EndpointError, match=r"\[endpoints.far\].*Port out of range"):
        load_endpoints(models)
