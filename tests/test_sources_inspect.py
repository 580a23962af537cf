"""Inspect AI logs imported as runs (core.sources.inspect), from the files Inspect 0.3.285 wrote
(tests/data/tools/inspect, README.md there): .eval with Zstandard members, .json, a log that
ended in error, epochs, two scorers, a dataset without ids; bad inputs; idempotence."""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from core.sources import SourceError, detect
from core.sources.service import Options, import_file, plan_file
from core.sources.zipread import open_zip, read_member
from tests.core_cli import run_core

LOGS = Path(__file__).parent / "data" / "tools" / "inspect"
FE_A = LOGS / "first_error_a.eval"


def _member(path: Path, name: str) -> dict:
    with open_zip(path) as zf:
        return json.loads(read_member(zf, zf.getinfo(name), path))


def _results(store, run_id: str) -> list[tuple]:
    return store.rows(
        "SELECT x.item_id, x.epoch, x.status, x.response, x.prompt_tokens, x.completion_tokens, "
        "v.answer, v.correct, v.score, v.explanation FROM responses x LEFT JOIN results v "
        "USING (run_id, item_id, variant, epoch) WHERE run_id = ? ORDER BY ALL",
        [run_id],
    )


def test_every_member_is_zstandard_and_detected() -> None:
    with zipfile.ZipFile(FE_A) as zf:
        assert {i.compress_type for i in zf.infolist()} == {93}
    assert detect(FE_A) == "inspect"
    assert detect(LOGS / "first_error_a.json") == "inspect"


def test_unmatched_items_are_refused_then_a_new_set_takes_all(initialised_store) -> None:
    plans = plan_file(initialised_store, FE_A, Options())
    plan = plans[0]
    assert (plan.items, plan.matched, plan.unmatched, plan.samples) == (15, 12, 3, 30)
    assert plan.item_set == "processbench-sample"
    with pytest.raises(SourceError, match="3 sample item\\(s\\) match no item"):
        import_file(initialised_store, FE_A, Options())
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0
    plans, written = import_file(
        initialised_store, FE_A, Options(new_item_set="fe-items", benchmark="processbench")
    )
    assert written == 30
    items = initialised_store.rows(
        "SELECT item_id, prompt, gold FROM items WHERE item_set = 'fe-items' ORDER BY item_id"
    )
    assert len(items) == 15 and ("new-1", None, None) not in items
    header = _member(FE_A, "header.json")
    run = initialised_store.df("SELECT * FROM runs WHERE run_id = ?", [plans[0].run_id]).iloc[0]
    params = json.loads(run["params"])
    assert run["model"] == header["eval"]["model"] == "openai/fixture-model-a"
    assert run["status"] == "done" and run["item_set"] == "fe-items"
    assert params["source"]["eval_id"] == header["eval"]["eval_id"]
    assert params["source"]["tool_version"] == "0.3.285"
    assert params["plan_config"]["temperature"] == 0.0
    assert params["epochs"] == 2


def test_each_sample_and_epoch_as_inspect_wrote_it(initialised_store) -> None:
    plans, _ = import_file(
        initialised_store, FE_A, Options(new_item_set="fe-items", benchmark="processbench")
    )
    rows = {(r[0], r[1]): r for r in _results(initialised_store, plans[0].run_id)}
    assert {e for _, e in rows} == {1, 2}
    with open_zip(FE_A) as zf:
        names = [n for n in zf.namelist() if n.startswith("samples/")]
        assert len(names) == len(rows) == 30
        for name in names:
            sample = json.loads(read_member(zf, zf.getinfo(name), FE_A))
            row = rows[(str(sample["id"]), sample["epoch"])]
            first = sample["scores"]["match"]  # the log's first scorer (results.scores[0])
            assert row[3] == sample["output"]["completion"]
            assert row[4] == sample["output"]["usage"]["input_tokens"]
            assert row[5] == sample["output"]["usage"]["output_tokens"]
            assert row[6] == first["answer"]
            assert row[7] == (first["value"] == "C")
            assert row[8] == {"C": 1.0, "I": 0.0}[first["value"]]
    meta = json.loads(
        initialised_store.scalar(
            "SELECT metadata FROM results WHERE run_id = ? AND item_id = 'gsm8k-0' AND epoch = 1",
            [plans[0].run_id],
        )
    )
    assert set(meta["scores"]) == {"match", "first_error_index"}
    assert meta["scores"]["first_error_index"]["metadata"]["label"] == -1


def test_the_json_log_gives_the_same_results_as_the_eval_log(initialised_store) -> None:
    """The same task, model and scripted replies written as .json and as .eval."""
    a, _ = import_file(
        initialised_store, FE_A, Options(new_item_set="fe", benchmark="processbench")
    )
    b, _ = import_file(
        initialised_store,
        LOGS / "first_error_a.json",
        Options(new_item_set="fe", benchmark="processbench", name="from-json"),
    )
    strip = [r[:3] + r[4:] for r in _results(initialised_store, a[0].run_id)]
    assert strip == [r[:3] + r[4:] for r in _results(initialised_store, b[0].run_id)]


def test_a_log_that_ended_in_error_imports_what_completed(initialised_store) -> None:
    path = LOGS / "first_error_partial_error.eval"
    plans, written = import_file(
        initialised_store, path, Options(new_item_set="fe-partial", benchmark="processbench")
    )
    assert written == 13
    assert "partial log (status error)" in (plans[0].run.note or "")
    run_id = plans[0].run_id
    assert initialised_store.scalar("SELECT status FROM runs WHERE run_id = ?", [run_id]) == (
        "failed"
    )
    failed = initialised_store.rows(
        "SELECT item_id, error FROM responses WHERE run_id = ? AND status = 'failed' ORDER BY 1",
        [run_id],
    )
    assert [f[0] for f in failed] == ["math-3", "new-0"]
    assert "scripted failure on sample math-3" in failed[0][1]
    assert (
        initialised_store.scalar(
            "SELECT count(*) FROM results WHERE run_id = ? AND judging = 'default'", [run_id]
        )
        == 11
    )


def test_integer_ids_match_by_text(initialised_store) -> None:
    plans, written = import_file(initialised_store, LOGS / "bbm_no_ids_a.eval", Options())
    assert plans[0].item_set == "bbm-sample" and written == 12
    pairs = initialised_store.rows(
        "SELECT x.item_id, i.prompt FROM responses x JOIN items i ON i.item_set = 'bbm-sample' "
        "AND i.item_id = x.item_id WHERE x.run_id = ?",
        [plans[0].run_id],
    )
    with open_zip(LOGS / "bbm_no_ids_a.eval") as zf:
        inputs = {
            json.loads(read_member(zf, i, LOGS))["input"]
            for i in zf.infolist()
            if i.filename.startswith("samples/")
        }
    assert {p for _, p in pairs} == inputs and len(pairs) == 12


def test_same_log_again_is_a_no_op_and_another_log_under_its_name_is_refused(
    initialised_store, db_path
) -> None:
    args = ["import", "results", str(LOGS / "misprompt_a.eval"), "--name", "mp-a"]
    first = run_core(*args)
    assert first.returncode == 0, first.stderr
    version = initialised_store.data_version()
    again = run_core(*args)
    assert again.returncode == 0 and "already imported" in again.stdout
    assert initialised_store.data_version() == version
    other = run_core("import", "results", str(LOGS / "misprompt_b.eval"), "--name", "mp-a")
    assert other.returncode == 1
    assert "already has a run 'mp-a'" in other.stderr and "misprompt_b.eval" in other.stderr
    assert initialised_store.data_version() == version


# -- bad inputs: one error naming the file, nothing written ------------------------------------


def _nothing_written(store) -> None:
    assert store.scalar("SELECT count(*) FROM runs") == 0
    assert store.scalar("SELECT count(*) FROM responses") == 0


def test_truncated_eval(initialised_store, tmp_path) -> None:
    cut = tmp_path / "cut.eval"
    cut.write_bytes(FE_A.read_bytes()[: FE_A.stat().st_size // 2])
    done = run_core("import", "results", str(cut))
    assert done.returncode == 1
    assert str(cut) in done.stderr and "not a complete zip file" in done.stderr
    _nothing_written(initialised_store)


def _rewrite(src: Path, dst: Path, change: dict[str, object]) -> None:
    """A copy of a real log with some members replaced (stored uncompressed)."""
    with zipfile.ZipFile(dst, "w") as out, open_zip(src) as zf:
        for info in zf.infolist():
            data = read_member(zf, info, src)
            if info.filename in change:
                data = json.dumps(change[info.filename]).encode()
            out.writestr(info.filename, data)


def test_unknown_schema_version(initialised_store, tmp_path) -> None:
    header = _member(LOGS / "misprompt_a.eval", "header.json")
    bad = tmp_path / "v9.eval"
    _rewrite(LOGS / "misprompt_a.eval", bad, {"header.json": {**header, "version": 9}})
    with pytest.raises(SourceError, match="schema version 9") as err:
        import_file(initialised_store, bad, Options())
    assert str(bad) in str(err.value)
    _nothing_written(initialised_store)


def test_a_sample_without_an_id_fails_the_whole_file(initialised_store, tmp_path) -> None:
    src = LOGS / "misprompt_a.eval"
    with zipfile.ZipFile(src) as zf:
        last = sorted(n for n in zf.namelist() if n.startswith("samples/"))[-1]
    sample = _member(src, last)
    sample.pop("id")
    bad = tmp_path / "noid.eval"
    _rewrite(src, bad, {last: sample})
    with pytest.raises(SourceError, match="no id|without an id") as err:
        import_file(initialised_store, bad, Options())
    assert last in str(err.value)
    _nothing_written(initialised_store)


def test_json_that_is_not_a_log(initialised_store, tmp_path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"eval": "no", "run_id": 3}')
    done = run_core("import", "results", str(path), "--format", "inspect")
    assert (
        done.returncode == 1
        and str(path) in done.stderr
        and "not an Inspect AI log" in (done.stderr)
    )
    plain = tmp_path / "plain.json"
    plain.write_text("[1, 2]")
    done = run_core("import", "results", str(plain))
    assert done.returncode == 1 and "not a results file this program reads" in done.stderr
    _nothing_written(initialised_store)


def test_missing_codec_is_named(initialised_store, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard -> ImportError
    with pytest.raises(SourceError, match="Zstandard-compressed .*zstandard package") as err:
        import_file(initialised_store, LOGS / "misprompt_a.eval", Options())
    assert "misprompt_a.eval" in str(err.value)
    _nothing_written(initialised_store)


def test_a_damaged_member_fails_its_check(initialised_store, tmp_path) -> None:
    data = bytearray((LOGS / "misprompt_a.eval").read_bytes())
    with zipfile.ZipFile(LOGS / "misprompt_a.eval") as zf:
        info = [i for i in zf.infolist() if i.filename.startswith("samples/")][0]
    spot = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 20
    data[spot] ^= 0xFF
    bad = tmp_path / "flip.eval"
    bad.write_bytes(bytes(data))
    with pytest.raises(SourceError, match=info.filename) as err:
        import_file(initialised_store, bad, Options())
    assert str(bad) in str(err.value)
    _nothing_written(initialised_store)


def test_a_failure_while_writing_leaves_nothing(initialised_store, tmp_path, monkeypatch) -> None:
    """All or nothing: the write fails after some batches; no run, item or response stays."""
    import core.sources.service as service

    monkeypatch.setattr(service, "BATCH", 5)
    calls = {"n": 0}
    real = service.write_batch

    def flaky(con, batch, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise SourceError("disk went away")
        return real(con, batch, **kw)

    monkeypatch.setattr(service, "write_batch", flaky)
    with pytest.raises(SourceError, match="disk went away"):
        import_file(initialised_store, FE_A, Options(new_item_set="x", benchmark="processbench"))
    _nothing_written(initialised_store)
    assert initialised_store.scalar("SELECT count(*) FROM items WHERE item_set = 'x'") == 0
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_matching_reads_the_summaries_and_falls_back_to_the_samples(tmp_path) -> None:
    """Item matching reads the journal's summary chunks (a fraction of the samples' size);
    the same keys, inputs and targets as the samples, and the samples when chunks are
    missing."""
    from core.sources.inspect import read

    def keys(samples) -> list[tuple]:
        return sorted((s.key, s.epoch, s.input, s.target) for s in samples)

    run = read(FE_A)[0]
    assert run.index is not None
    assert keys(run.index()) == keys(run.samples()) and len(keys(run.index())) == 30
    bare = tmp_path / "bare.eval"
    with zipfile.ZipFile(bare, "w") as out, open_zip(FE_A) as zf:
        for info in zf.infolist():
            if not info.filename.startswith("_journal/summaries/"):
                out.writestr(info.filename, read_member(zf, info, FE_A))
    assert read(bare)[0].index is None
    assert keys(read(bare)[0].samples()) == keys(run.samples())


def test_every_other_scorer_is_a_judging_of_its_own(initialised_store) -> None:
    """first_error has two scorers: `match` (the log's first) is the run's own judging,
    `first_error_index` a finished judging beside it, each sample's own Score."""
    plans, _ = import_file(
        initialised_store, FE_A, Options(new_item_set="fe", benchmark="processbench")
    )
    run_id = plans[0].run_id
    assert initialised_store.rows(
        "SELECT judging, kind, status FROM all_judgings WHERE run_id = ? ORDER BY 1", [run_id]
    ) == [("default", "parser", "done"), ("scorer:first_error_index", "parser", "done")]
    assert (
        initialised_store.scalar("SELECT judging FROM current_judgings WHERE run_id = ?", [run_id])
        == "default"
    )
    other = {
        (r[0], r[1]): r[2:]
        for r in initialised_store.rows(
            "SELECT item_id, epoch, score, answer FROM results WHERE run_id = ? "
            "AND judging = 'scorer:first_error_index'",
            [run_id],
        )
    }
    assert len(other) == 30
    with open_zip(FE_A) as zf:
        for info in zf.infolist():
            if info.filename.startswith("samples/"):
                sample = json.loads(read_member(zf, info, FE_A))
                theirs = sample["scores"]["first_error_index"]
                assert other[(str(sample["id"]), sample["epoch"])] == (
                    theirs["value"],
                    theirs["answer"],
                )
    done = run_core(
        "export", "--source", run_id, "--judging", "scorer:first_error_index", "--out",
        str(Path(initialised_store.path).parent / "fe.csv"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_samples_no_chunk_lists_are_read_whole(tmp_path) -> None:
    from core.sources.inspect import read

    part = tmp_path / "part.eval"
    with zipfile.ZipFile(part, "w") as out, open_zip(FE_A) as zf:
        for info in zf.infolist():
            if info.filename != "_journal/summaries/3.json":
                out.writestr(info.filename, read_member(zf, info, FE_A))
    run = read(part)[0]
    keys = sorted((s.key, s.epoch, s.input) for s in run.index())  # type: ignore[misc]
    assert keys == sorted((s.key, s.epoch, s.input) for s in run.samples()) and len(keys) == 30


def _big_json_log(path: Path, copies: int) -> int:
    """Inspect's own .json log with its samples repeated under new ids (the header and every
    sample as Inspect wrote them), written sample by sample; returns its size in bytes."""
    log = json.loads((LOGS / "first_error_a.json").read_text())
    samples = log.pop("samples")
    reductions = log.pop("reductions", None)
    with open(path, "w") as out:
        out.write(json.dumps(log)[:-1] + ', "samples": [')
        for n in range(copies):
            for i, sample in enumerate(samples):
                out.write(
                    ("" if n == i == 0 else ", ")
                    + json.dumps({**sample, "id": f"c{n}-{sample['id']}"})
                )
        out.write("], " + json.dumps({"reductions": reductions})[1:])
    return path.stat().st_size


def test_a_json_log_is_streamed_one_sample_at_a_time(tmp_path) -> None:
    """A .json log is read as a stream: the memory Python allocates while reading the header
    and every sample stays a small fraction of the log's size (json.load of the whole log
    needs several times its size)."""
    import tracemalloc

    from core.sources.inspect import read

    path = tmp_path / "big.json"
    size = _big_json_log(path, 40)  # 1,200 samples, ~16 MB
    assert size > 15e6
    sum(1 for _ in read(LOGS / "first_error_a.json")[0].samples())  # imports done before
    tracemalloc.start()
    try:
        run = read(path)[0]
        n = sum(1 for _ in run.samples())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 1200
    # ~2.2 MB: one sample's objects, ijson's 64 KiB buffer, the sha256's 1 MiB blocks; the
    # same whole-log read with json.load peaks at several times the log's 16 MB
    assert peak < 4e6, (peak, size)


def test_a_truncated_json_log_names_the_sample(initialised_store, tmp_path) -> None:
    whole = (LOGS / "first_error_a.json").read_bytes()
    cut = tmp_path / "cut.json"
    start = whole.index(b'"samples"')
    cut.write_bytes(whole[: start + (len(whole) - start) // 2])  # inside the samples
    with pytest.raises(SourceError, match=r"samples\[\d+\] or after: not JSON") as err:
        import_file(initialised_store, cut, Options(new_item_set="x", benchmark="processbench"))
    assert str(cut) in str(err.value)
    _nothing_written(initialised_store)
    head = tmp_path / "head.json"
    head.write_bytes(whole[: start // 2])  # inside the header
    with pytest.raises(SourceError, match="not JSON") as err:
        import_file(initialised_store, head, Options(fmt="inspect"))
    _nothing_written(initialised_store)


def test_an_unknown_file_lists_every_registered_format(tmp_path) -> None:
    """detect's error names the formats from each reader's DESCRIPTION (as --help does), so a
    benchmark's own format (PCBench's verdicts) is listed by being registered."""
    from core.sources import FORMATS, module

    plain = tmp_path / "plain.txt"
    plain.write_text("hello")
    with pytest.raises(SourceError) as err:
        detect(plain)
    message = str(err.value)
    assert message.startswith(f"{plain}: not a results file this program reads")
    for fmt in FORMATS:
        assert module(fmt).DESCRIPTION in message and fmt in message
    assert "PCBench" in message  # core.benchmarks.pcbench's result_formats


def test_the_import_writes_under_memory_limits_and_puts_the_store_s_back(
    initialised_store, monkeypatch
) -> None:
    """DuckDB keeps what it caches up to its memory_limit: the staged batches are written
    under STAGE_MEMORY_LIMIT (the stage's own instance), the move into the store under
    IMPORT_MEMORY_LIMIT, and the store's limit before it is back afterwards, also when the
    import fails."""
    import core.sources.service as service

    def limit() -> str:
        return str(initialised_store.scalar("SELECT current_setting('memory_limit')"))

    def setting(con) -> str:
        return str(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])

    before = limit()
    seen: list[str] = []
    moved: list[str] = []
    real, finish = service.write_batch, service._finish_plan

    def watch(con, batch, **kw):
        seen.append(setting(con))
        return real(con, batch, **kw)

    def watch_finish(con, plan, done):
        moved.append(setting(con))
        if len(moved) == 1:
            raise SourceError("stop here")
        return finish(con, plan, done)

    monkeypatch.setattr(service, "BATCH", 5)
    monkeypatch.setattr(service, "write_batch", watch)
    monkeypatch.setattr(service, "_finish_plan", watch_finish)
    with pytest.raises(SourceError, match="stop here"):
        import_file(initialised_store, FE_A, Options(new_item_set="x", benchmark="processbench"))
    assert seen and set(seen) == {"30.5 MiB"}  # 32MB as DuckDB shows it
    assert moved == ["244.1 MiB"]  # 256MB
    assert limit() == before != "244.1 MiB"
    _nothing_written(initialised_store)
    seen.clear()
    import_file(initialised_store, FE_A, Options(new_item_set="x", benchmark="processbench"))
    assert set(seen) == {"30.5 MiB"} and moved[-1] == "244.1 MiB" and limit() == before


def test_the_directory_is_read_as_a_stream_zip64_too(tmp_path) -> None:
    """zipread.entries (the directory one record at a time, no ZipInfo per member) gives what
    zipfile reads, also for a zip64 directory (more than 65,535 members, as a 100,000-sample
    log has)."""
    from core.sources.zipread import entries

    def fields(path: Path) -> list[tuple]:
        with zipfile.ZipFile(path) as zf:
            return [
                (i.filename, i.compress_type, i.CRC, i.compress_size, i.file_size, i.header_offset)
                for i in zf.infolist()
            ]

    def ours(path: Path) -> list[tuple]:
        return [
            (e.name, e.method, e.crc, e.compress_size, e.file_size, e.header_offset)
            for e in entries(path)
        ]

    assert ours(FE_A) == fields(FE_A) and len(ours(FE_A)) == 37
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w", zipfile.ZIP_DEFLATED) as zf:
        for k in range(65_600):
            zf.writestr(f"samples/s{k}_epoch_1.json", b"{}")
    assert ours(many) == fields(many) and len(ours(many)) == 65_600


def test_a_damaged_journal_chunk_is_named(initialised_store, tmp_path) -> None:
    """The journal's summary chunks are streamed; one whose bytes are damaged is a clear error
    naming the file and the chunk, and nothing is written."""
    with zipfile.ZipFile(FE_A) as zf:
        info = zf.getinfo("_journal/summaries/2.json")
    data = bytearray(FE_A.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    middle = start + info.compress_size // 2
    data[middle : middle + 8] = bytes(b ^ 0xFF for b in data[middle : middle + 8])
    bad = tmp_path / "bad.eval"
    bad.write_bytes(bytes(data))
    with pytest.raises(SourceError, match=r"_journal/summaries/2\.json") as err:
        import_file(initialised_store, bad, Options(new_item_set="x", benchmark="processbench"))
    assert str(bad) in str(err.value)
    _nothing_written(initialised_store)
