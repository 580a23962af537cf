"""The app as ./start.sh starts it: the shipped .streamlit/config.toml turns the file watcher
off, and bench/bench_browser.py measures that server, not one with the tests' extra flags
(issue 31, point 8)."""

from __future__ import annotations

import re
import shlex

from tests.conftest import ROOT


def test_streamlit_reads_no_file_watcher_from_the_shipped_config(monkeypatch):
    """Streamlit's own config reader, from the checkout as start.sh runs it: the watcher of a
    checkout (and its .venv) overflowed inotify by the thousand and slowed every rerun."""
    from streamlit import config

    monkeypatch.chdir(ROOT)
    try:
        config.get_config_options(force_reparse=True)
        assert config.get_option("server.fileWatcherType") == "none"
        assert config.get_option("server.runOnSave") is False
    finally:
        monkeypatch.undo()
        config.get_config_options(force_reparse=True)


def _start_sh_flags() -> list[str]:
    line = next(ln for ln in (ROOT / "start.sh").read_text().splitlines() if "streamlit run" in ln)
    words = shlex.split(line)
    return [w for w in words[words.index("app.py") + 1 :] if w.startswith("--")]


def test_the_browser_bench_starts_the_server_as_start_sh_does():
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    import bench_browser

    command = bench_browser.server_command(12345)
    assert command[1:5] == ["-m", "streamlit", "run", "app.py"]
    flags = [w for w in command[5:] if w.startswith("--")]
    assert flags == _start_sh_flags() == ["--server.address", "--server.port"]
    assert not any(re.search("fileWatcher|runOnSave|postScriptGC", w) for w in command)
