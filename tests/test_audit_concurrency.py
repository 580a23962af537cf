"""Several labelling sessions at once lose nothing, and readers never see half an item's labels.

Two layers: threads in one process (the app's browser sessions share one Streamlit process)
and separate OS processes (two app instances, or the app and a CLI on one DuckDB file, where
DuckDB's file lock serialises writers). The page-level version (two AppTest sessions) is in
tests/test_pages_playground_audit.py.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import audit
from core.store import Store
from tests.audit_fixtures import two_runs

ROOT = Path(__file__).resolve().parent.parent

WORKER = r"""
import sys, time
from pathlib import Path
from core.services import audit
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store
db, name, annotator, parity = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ready = Path(sys.argv[5])
store = Store.open(db, lock_timeout=120)
(ready / annotator).touch()  # both processes start saving at the same moment
while len(list(ready.iterdir())) < 2:
    time.sleep(0.01)
for row in audit.audit_queue(store, name).itertuples():
    values = {l: (row.position + i + parity) % 2 == 0 for i, l in enumerate(JUDGE_LABELS)}
    audit.save_labels(store, row.run_id, row.item_id, row.variant, annotator, values,
                      note=f"{annotator} {row.position}")
print("done")
"""


def _expected(queue, parity):
    return {
        (r.run_id, r.item_id, l): (r.position + i + parity) % 2 == 0
        for r in queue.itertuples()
        for i, l in enumerate(JUDGE_LABELS)
    }


def _saved(store, annotator):
    rows = store.rows(
        "SELECT run_id, item_id, label, value FROM human_labels WHERE annotator = ?", [annotator]
    )
    return {(r, i, l): v for r, i, l, v in rows}


def test_threads_lose_nothing_and_readers_never_see_half_an_item(store):
    two_runs(store)
    audit.create_audit(store, "conc", ["run-a", "run-b"], fraction=0.5, seed=1)
    queue = audit.audit_queue(store, "conc")
    errors: list[BaseException] = []
    partial: list[tuple] = []
    stop = threading.Event()

    def label(annotator: str, parity: int) -> None:
        try:
            own = Store(path=store.path, _migrated=True)  # a session's own handle
            for r in queue.to_dict("records"):
                values = {
                    l: (r["position"] + i + parity) % 2 == 0 for i, l in enumerate(JUDGE_LABELS)
                }
                audit.save_labels(own, r["run_id"], r["item_id"], r["variant"], annotator, values)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        while not stop.is_set():
            counts = store.rows(
                "SELECT annotator, run_id, item_id, count(*) FROM human_labels "
                "GROUP BY ALL HAVING count(*) <> ?",
                [len(JUDGE_LABELS)],
            )
            partial.extend(counts)

    reader = threading.Thread(target=read)
    writers = [
        threading.Thread(target=label, args=(name, parity))
        for name, parity in [("alice", 0), ("bob", 1), ("alice", 0)]
    ]
    # the file held open meanwhile (Store.session), as a long-lived app process keeps it: each
    # save and read still has its own connection and transaction, but not its own open and
    # checkpoint of the file (~12 ms each), so the writers finish sooner and the reader, which
    # never pauses, spins for less time
    with store.session():
        reader.start()
        for t in writers:
            t.start()
        for t in writers:
            t.join(timeout=120)
        stop.set()
        reader.join(timeout=30)
    assert not errors, errors
    assert partial == []  # every item's six labels appear together
    assert _saved(store, "alice") == _expected(queue, 0)
    assert _saved(store, "bob") == _expected(queue, 1)
    assert store.scalar("SELECT count(*) FROM human_labels") == 2 * len(queue) * len(JUDGE_LABELS)
    assert audit.next_position(store, "conc", "alice") is None


def test_two_processes_lose_nothing(store, tmp_path):
    two_runs(store)
    audit.create_audit(store, "procs", ["run-a", "run-b"], fraction=0.2, seed=2)
    queue = audit.audit_queue(store, "procs")
    ready = tmp_path / "ready"
    ready.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(store.path), "procs", name, str(parity), str(ready)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, parity in [("carol", 0), ("dave", 1)]
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        assert out.strip() == "done"
    assert _saved(store, "carol") == _expected(queue, 0)
    assert _saved(store, "dave") == _expected(queue, 1)
    notes = store.df("SELECT DISTINCT annotator, note FROM human_labels")
    assert len(notes) == 2 * len(queue)
