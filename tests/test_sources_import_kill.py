"""A results import killed part-way (SIGKILL, a real process) leaves no visible run, and the
next import cleans up and imports the file whole; a failure while moving the staged rows in
deletes what was moved (core.sources.service: staged, then moved in committed chunks, the
`runs` row last).

The child process stops at a logged event (a staged batch, a moved chunk) and waits there on
its stdin until it is killed, so the kill lands at that point, never after a guessed sleep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from core.sources import SourceError
from core.sources.service import MARKER, Options, import_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from make_big_eval import write_log  # noqa: E402

N = 200  # samples of the log (100 items × 2 epochs, two scorers)

CHILD = r"""
import logging, sys
sys.path.insert(0, sys.argv[3])
import core.sources.service as service
from core.sources.service import Options, import_file
from core.store import Store

service.BATCH, service.MOVE_ROWS = 50, 100  # several staged batches and moved chunks
stop_at = sys.argv[4]

class StopHere(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        if message.startswith(stop_at):
            print("EVENT " + message, flush=True)
            sys.stdin.read()  # wait here until the test kills the process

log = logging.getLogger("core.sources.service")
log.setLevel(logging.INFO)
log.addHandler(StopHere())
import_file(Store.open(sys.argv[2]), sys.argv[1], Options(new_item_set="k", benchmark="processbench"))
print("FINISHED", flush=True)
"""


@pytest.fixture(scope="module")
def log_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("killlog") / "big.eval"
    write_log(N, path, ROOT / "tests/data/tools/inspect/first_error_a.eval")
    return path


def _kill_at(store, log: Path, event: str, tmp: Path) -> int:
    """Run the import in a child process, SIGKILL it at `event`; returns its pid."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(log), str(store.path), str(ROOT), event],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()
        assert line.startswith("EVENT " + event), line
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return proc.pid


def _visible(store) -> tuple:
    return (
        store.scalar("SELECT count(*) FROM runs"),
        store.scalar("SELECT count(*) FROM item_sets WHERE name = 'k'"),
    )


def _whole(store) -> tuple:
    return (
        store.scalar("SELECT count(*) FROM runs"),
        store.scalar("SELECT count(*) FROM responses"),
        store.scalar("SELECT count(*) FROM results"),
        store.scalar("SELECT count(*) FROM items WHERE item_set = 'k'"),
        store.scalar("SELECT n_items FROM item_sets WHERE name = 'k'"),
        store.scalar("SELECT count(*) FROM meta WHERE key LIKE ?", [MARKER + "%"]),
    )


EXPECTED = (1, N, 2 * N, N // 2, N // 2, 0)


@pytest.mark.parametrize(
    "event",
    [
        "staged batch 3 ",  # while reading the log into the stage: the store is untouched
        "moved chunk 4 ",  # while moving: chunks committed, the runs row not yet
    ],
)
def test_a_killed_import_leaves_no_run_and_the_next_one_imports_cleanly(
    initialised_store, log_file, tmp_path, monkeypatch, event
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pid = _kill_at(initialised_store, log_file, event, tmp)
    assert _visible(initialised_store) == (0, 0)  # no run, no item set
    if event.startswith("moved"):  # its committed chunks are there, under its marker
        assert initialised_store.scalar("SELECT count(*) FROM responses") > 0
        (value,) = initialised_store.rows("SELECT value FROM meta WHERE key LIKE ?", [MARKER + "%"])
        assert json.loads(value[0])["pid"] == pid
    else:
        assert initialised_store.scalar("SELECT count(*) FROM responses") == 0
    assert [p.name for p in tmp.iterdir() if p.name.startswith(f"ehw-import-{pid}-")]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    plans, written = import_file(
        initialised_store, log_file, Options(new_item_set="k", benchmark="processbench")
    )
    assert written == N and plans[0].new == N // 2
    assert _whole(initialised_store) == EXPECTED
    assert list(tmp.iterdir()) == []  # the killed import's stage is swept, ours removed
    _, again = import_file(
        initialised_store, log_file, Options(new_item_set="k", benchmark="processbench")
    )
    assert again == 0 and _whole(initialised_store) == EXPECTED


def test_a_failure_while_moving_deletes_what_was_moved(
    initialised_store, log_file, monkeypatch
) -> None:
    import core.sources.service as service

    monkeypatch.setattr(service, "MOVE_ROWS", 100)
    real = service._finish_plan

    def fail(con, plan, done):
        assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == N  # all moved
        raise SourceError("the last step failed")

    monkeypatch.setattr(service, "_finish_plan", fail)
    with pytest.raises(SourceError, match="the last step failed"):
        import_file(
            initialised_store, log_file, Options(new_item_set="k", benchmark="processbench")
        )
    assert _whole(initialised_store) == (0, 0, 0, 0, None, 0)
    monkeypatch.setattr(service, "_finish_plan", real)
    import_file(initialised_store, log_file, Options(new_item_set="k", benchmark="processbench"))
    assert _whole(initialised_store) == EXPECTED


def test_an_import_in_progress_elsewhere_is_left_alone(initialised_store, log_file) -> None:
    """A run being imported by a live process (its marker, this test's own pid here) is
    refused, and neither the sweep nor the refused import's clean-up touches that marker."""
    import socket

    from core.sources.service import plan_file

    options = Options(new_item_set="k", benchmark="processbench")
    run_id = plan_file(initialised_store, log_file, options)[0].run_id
    marker = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "item_set": "k"})
    initialised_store.transaction(
        lambda con: con.execute("INSERT INTO meta VALUES (?, ?)", [MARKER + run_id, marker])
    )
    with pytest.raises(SourceError, match="being imported"):
        import_file(initialised_store, log_file, options)
    assert initialised_store.rows("SELECT value FROM meta WHERE key = ?", [MARKER + run_id]) == [
        (marker,)
    ]
    assert initialised_store.scalar("SELECT count(*) FROM responses") == 0
