"""The benchmark registry: every entry point finds benchmarks there, and only there."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core import benchmarks
from core.cli import build_parser
from core.cli import main as cli
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def example():
    from tests import example_benchmark

    bench = example_benchmark.install()
    yield bench
    benchmarks.BENCHMARKS.pop(bench.name, None)


def test_the_three_benchmarks_are_registered_with_resolvable_code() -> None:
    assert list(benchmarks.BENCHMARKS) == ["misprompt", "errorbench", "bbm"]
    for bench in benchmarks.BENCHMARKS.values():
        assert callable(benchmarks.resolve(bench.importer))
        assert isinstance(benchmarks.resolve(bench.task), type)
        assert (ROOT / bench.page).exists()
        assert bench.builtin is not None
        assert (ROOT / "data" / "samples" / bench.builtin[1]).exists()
        assert callable(benchmarks.resolve(bench.builtin[2]))
        for command in bench.cli_commands():
            module = benchmarks.resolve(command.module)
            assert callable(module.configure) and callable(module.main)
        if not bench.judged_by_model:  # rescore re-scores with the benchmark's scorer
            assert bench.scorer and callable(benchmarks.resolve(bench.scorer))


ENTRY_POINTS = [
    "core/cli.py",
    "core/setup.py",
    "core/jobs.py",
    "core/runs_cli.py",
    "core/rescore.py",
    "pages/runs.py",
    "pages/import_data.py",
    "pages/ui/runs.py",
    "pages/grid.py",
]


def test_no_other_module_lists_the_benchmarks() -> None:
    """Entry points loop over the registry: no list of the three names elsewhere, and the
    entry points never branch on a benchmark's name or guess an importer's name."""
    import re

    offenders = []
    for path in [*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/**/*.py")]:
        text = path.read_text()
        if path.name == "benchmarks.py":
            continue
        if re.search(
            r"[\[({]\s*[\"']misprompt[\"'][^\n]*[\"']errorbench[\"'][^\n]*[\"']bbm[\"']", text
        ):
            offenders.append(str(path.relative_to(ROOT)))
    for name in ENTRY_POINTS:
        text = (ROOT / name).read_text()
        if (
            re.search(r"==\s*[\"'](misprompt|errorbench|bbm|m2)[\"']", text)
            or "inspect.signature" in text
        ):
            offenders.append(name)
    assert offenders == []


def test_help_is_fast_and_imports_no_benchmark_code() -> None:
    code = (
        "import sys, core.cli; core.cli.build_parser(['--help']);"
        "print(sorted(m for m in sys.modules if m.startswith(('core.misprompt', 'core.bbm',"
        " 'core.errorbench', 'pandas', 'duckdb'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_every_command_configures(capsys) -> None:
    parser = build_parser()  # every command, every module imported and configured
    for words in (["run", "misprompt"], ["rescore"], ["metrics", "bbm"], ["import", "m2"]):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args([*words, "--help"])
        assert exit_.value.code == 0
    assert "--db" in capsys.readouterr().out


def test_a_registered_example_benchmark_imports_runs_rescores_and_reports(
    example, store, tmp_path, capsys
):
    items = tmp_path / "lines.txt"
    items.write_text("alpha\nbeta\ngamma\n")
    assert cli(["import", "example", str(items), "--name", "ex-set"]) == 0
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 'ex-set'") == 3
    with FakeOpenAI() as server:  # echoes the last user message: "echo: Repeat: alpha"
        assert (
            cli(
                [
                    "run",
                    "example",
                    "--items",
                    "ex-set",
                    "--base-url",
                    server.url,
                    "--model",
                    "echo-model",
                    "--run-name",
                    "ex-run",
                    "--quiet",
                ]
            )
            == 0
        )
        assert len(server.chat_requests) == 3
    capsys.readouterr()
    assert cli(["metrics", "example", "--source", "ex-run"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert table.to_dict("records") == [{"source": "ex-run", "n": 3, "accuracy": 100.0}]
    # rescore finds the example's scorer through the registry too, with no model call
    assert cli(["rescore", "--source", "ex-run", "--as", "again", "--quiet"]) == 0
    assert store.rows(
        "SELECT count(*), bool_and(status = 'ok') FROM verdicts "
        "WHERE run_id = 'ex-run' AND judging = 'again'"
    ) == [(3, True)]
    from core import jobs

    assert "example" in jobs.list_runs(store)["benchmark"].tolist()
