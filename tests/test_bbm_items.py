"""BIG-Bench Mistake importer: good files, bad lines reported by number, nothing written on error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.benchmarks.bbm import items as bi
from core.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SHARED_BBM = ROOT.parent / "shared" / "data" / "bigbench_mistake"
SAMPLE = ROOT / "data" / "samples" / "bbm_sample.jsonl"


def trace(**over):
    rec = {
        "input": "b a",
        "steps": ["first letters: b, a", "so: a b. The answer is a b"],
        "answer": "a b",
        "target": "a b",
        "mistake_index": None,
    }
    rec.update(over)
    return rec


def write(path: Path, records: list) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines), encoding="utf-8")  # released files: no final newline
    return path


def n_items(store, name=None) -> int:
    if name:
        return store.scalar("SELECT count(*) FROM items WHERE item_set = ?", [name])
    return store.scalar("SELECT count(*) FROM items")


def test_good_file_task_from_file_name(store, tmp_path, capsys):
    path = write(
        tmp_path / "word_sorting.jsonl",
        [trace(), trace(mistake_index=1, answer="b a"), trace(answer=None)],
    )
    assert cli(["import", "bbm", str(path), "--name", "ws"]) == 0
    out = capsys.readouterr().out
    assert "3 traces" in out and "1 with a mistake" in out
    rows = store.df("SELECT * FROM items WHERE item_set = 'ws' ORDER BY item_id")
    assert list(rows["item_id"]) == ["word_sorting:1", "word_sorting:2", "word_sorting:3"]
    assert set(rows["benchmark"]) == {"bbm"}
    assert set(rows["primary_category"]) == {"word_sorting"}
    assert list(rows["is_error"]) == [False, True, False]
    payloads = [json.loads(p) for p in rows["payload"]]
    assert payloads[1]["mistake_index"] == 1 and payloads[1]["steps"] == trace()["steps"]
    assert [p["answer_correct"] for p in payloads] == [True, False, False]
    info = json.loads(store.scalar("SELECT info FROM item_sets WHERE name = 'ws'"))
    assert info["with_mistake"] == 1 and info["without_mistake"] == 2


def test_task_flag_and_per_line_task(store, tmp_path):
    path = write(tmp_path / "traces.jsonl", [trace(), trace()])
    with pytest.raises(bi.ImportProblem) as exc:
        bi.import_files(store, [path], name="x")
    assert "traces.jsonl:1: cannot tell the task" in str(exc.value)
    assert "traces.jsonl:2: cannot tell the task" in str(exc.value)
    res = bi.import_files(store, [path], name="x", task="Dyck languages")
    assert res.n_items == 2
    assert set(store.df("SELECT primary_category FROM items")["primary_category"]) == {
        "dyck_languages"
    }
    mixed = write(
        tmp_path / "mixed.jsonl",
        [trace(task="logical_deduction"), trace(task="multistep_arithmetic")],
    )
    bi.import_files(store, [mixed], name="m")
    cats = store.df("SELECT primary_category FROM items WHERE item_set='m' ORDER BY item_id")
    assert list(cats["primary_category"]) == ["logical_deduction", "multistep_arithmetic"]


def test_bad_lines_reported_with_numbers_and_nothing_written(store, tmp_path, capsys):
    good = write(tmp_path / "logical_deduction.jsonl", [trace()])
    bad = write(
        tmp_path / "word_sorting.jsonl",
        [
            trace(),  # 1 ok
            "{not json",  # 2
            trace(mistake_index=2),  # 3 out of range (2 steps)
            "",  # 4 blank: skipped
            trace(steps=[]),  # 5
            {"input": "x", "steps": ["a"], "target": "t"},  # 6 missing mistake_index
            trace(mistake_index="1"),  # 7 wrong type
            trace(mistake_index=True),  # 8 bool is not an index
            trace(task="chess"),  # 9 unknown task
            [1, 2],  # 10 not an object
        ],
    )
    before = n_items(store)
    rc = cli(["import", "bbm", str(good), str(bad), "--name", "broken"])
    err = capsys.readouterr().err
    assert rc == 1
    lines = [ln for ln in err.splitlines() if ln.startswith(str(bad))]
    numbers = [int(ln.split(":")[1]) for ln in lines]
    assert numbers == [2, 3, 5, 6, 7, 8, 9, 10]
    assert "invalid JSON" in lines[0]
    assert "out of range for 2 steps" in lines[1]
    assert "missing key(s) mistake_index" in lines[3]
    assert "unknown task 'chess'" in lines[6]
    assert "nothing was imported" in err
    assert n_items(store) == before
    assert store.scalar("SELECT count(*) FROM item_sets WHERE name = 'broken'") == 0


def test_reimport_replaces_set_atomically(store, tmp_path):
    path = write(tmp_path / "word_sorting.jsonl", [trace(), trace()])
    bi.import_files(store, [path], name="s")
    write(path, [trace()])
    res = bi.import_files(store, [path], name="s")
    assert res.replaced and n_items(store, "s") == 1
    write(path, [trace(), "oops"])
    with pytest.raises(bi.ImportProblem):
        bi.import_files(store, [path], name="s")
    assert n_items(store, "s") == 1  # the failed import left the old set alone


def test_name_clash_with_other_benchmark_is_refused(store, tmp_path):
    store.execute("INSERT INTO item_sets (name, benchmark) VALUES ('taken', 'misprompt')")
    path = write(tmp_path / "word_sorting.jsonl", [trace()])
    with pytest.raises(bi.ImportProblem, match="already exists for benchmark 'misprompt'"):
        bi.import_files(store, [path], name="taken")


def test_task_names():
    assert bi.canonical_task("Word sorting") == "word_sorting"
    assert bi.canonical_task("dyck-languages") == "dyck_languages"
    assert bi.canonical_task("chess") is None
    assert (
        bi.task_from_filename(Path("bbm_tracking_shuffled_objects.jsonl"))
        == "tracking_shuffled_objects"
    )


def test_builtin_sample_is_ours_and_covers_the_tasks(initialised_store):
    traces = bi.read_traces([SAMPLE])
    assert len(traces) >= 10
    assert {t.task for t in traces} == set(bi.TASKS)
    assert any(t.mistake_index is None for t in traces)
    assert any(t.mistake_index is not None for t in traces)
    # a trace with a mistake can still reach the right answer (the paper's correct_ans vs mis)
    assert any(t.mistake_index is not None and t.answer_correct for t in traces)
    assert n_items(initialised_store, "bbm-sample") == len(traces)
    if SHARED_BBM.is_dir():  # written by us: no trace input is copied from the released data
        released = set()
        for f in SHARED_BBM.glob("*.jsonl"):
            released |= {json.loads(ln)["input"] for ln in f.read_text().splitlines() if ln}
        assert not {t.input for t in traces} & released


def test_init_twice_same_rows(initialised_store):
    from core.services.setup import init

    before = initialised_store.df(
        "SELECT * FROM items WHERE item_set = 'bbm-sample' ORDER BY item_id"
    )
    init(initialised_store)
    after = initialised_store.df(
        "SELECT * FROM items WHERE item_set = 'bbm-sample' ORDER BY item_id"
    )
    assert before.equals(after)


@pytest.mark.skipif(not SHARED_BBM.is_dir(), reason="shared BIG-Bench Mistake data not present")
def test_released_files_import_with_table2_counts(store):
    files = sorted(SHARED_BBM.glob("*.jsonl"))
    res = bi.import_files(store, files, name="full")
    assert res.n_items == 2186
    assert res.info["with_mistake"] == 1708 and res.info["without_mistake"] == 478
    # Table 2 of the paper: correct_ans traces per task (exact match answer == target)
    correct = {task: d["answer_correct"] for task, d in res.info["tasks"].items()}
    assert correct == {
        "word_sorting": 45,
        "tracking_shuffled_objects": 45,
        "logical_deduction": 45,
        "multistep_arithmetic": 45,
        "dyck_languages": 482,
    }


def test_reimport_over_a_set_with_runs_is_refused_unless_identical(store, tmp_path, capsys):
    """Item sets that runs use are immutable (issue 11 A): an identical re-import is a no-op,
    a different one is refused naming the runs and a free name, and nothing changes."""
    path = write(tmp_path / "word_sorting.jsonl", [trace()])
    assert cli(["import", "bbm", str(path), "--name", "used"]) == 0
    store.execute("INSERT INTO runs (run_id, benchmark, item_set) VALUES ('r1', 'bbm', 'used')")
    before = store.rows("SELECT * FROM items WHERE item_set = 'used'")
    capsys.readouterr()
    assert cli(["import", "bbm", str(path), "--name", "used"]) == 0
    assert store.rows("SELECT * FROM items WHERE item_set = 'used'") == before
    other = write(tmp_path / "word_sorting.jsonl", [trace(), trace(input="c b a")])
    assert cli(["import", "bbm", str(other), "--name", "used"]) == 1
    err = capsys.readouterr().err
    assert "item set 'used' is used by 1 run(s) (r1) and cannot be changed" in err
    assert "--name used-2" in err and "nothing was imported" in err
    assert store.rows("SELECT * FROM items WHERE item_set = 'used'") == before


def test_an_optional_group_is_kept_in_the_payload(store, tmp_path):
    """`group` = the source traces share: the metrics' intervals then resample groups."""
    path = write(
        tmp_path / "word_sorting.jsonl",
        [trace(group="story-1"), trace(group=7), trace(), trace(group=None)],
    )
    bi.import_files(store, [path], name="g")
    groups = store.rows(
        "SELECT json_extract_string(payload, '$.group') FROM items WHERE item_set = 'g' "
        "ORDER BY item_id"
    )
    assert [g for (g,) in groups] == ["story-1", "7", None, None]
    bad = write(tmp_path / "dyck_languages.jsonl", [trace(group=["a"])])
    with pytest.raises(bi.ImportProblem, match="'group' must be a string"):
        bi.import_files(store, [bad], name="bad")
