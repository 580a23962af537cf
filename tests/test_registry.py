"""The benchmark registry: every entry point finds benchmarks there, and only there."""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from core import registry as benchmarks
from core.cli import build_parser
from core.cli import main as cli
from core.services.compare import Contribution
from core.services.playground import PlaygroundRole
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def example():
    from tests import example_benchmark

    bench = example_benchmark.install()
    yield bench
    benchmarks.BENCHMARKS.pop(bench.name, None)


def declared_packages() -> list[str]:
    """The packages under core/benchmarks/ whose __init__.py declares a BENCHMARK (read as
    text, independently of the registry's discovery)."""
    return sorted(
        f"core.benchmarks.{init.parent.name}"
        for init in (ROOT / "core" / "benchmarks").glob("*/__init__.py")
        if re.search(r"^BENCHMARK = Benchmark\(", init.read_text(), re.M)
    )


def test_every_declared_package_is_discovered_in_registry_order() -> None:
    discovered = benchmarks.discover()
    assert sorted(benchmark_packages(discovered).values()) == declared_packages()
    assert [b.name for b in discovered] == list(benchmarks.BENCHMARKS)[: len(discovered)]
    keys = [(b.order, b.name) for b in discovered]
    assert keys == sorted(keys) and len({b.name for b in discovered}) == len(discovered)
    # a benchmark that declares no order comes after every one that does
    assert all(b.order < benchmarks.Benchmark.order for b in discovered if b.order != 100)


def test_every_discovered_benchmark_loads_its_code() -> None:
    """Every code field loads (what mypy checks by type, here at run time)."""
    for bench in benchmarks.discover():
        assert callable(bench.imports.importer())
        assert isinstance(bench.task(), type)
        assert (ROOT / bench.results_page.path).exists()
        if bench.imports.builtin is not None:
            assert (ROOT / "data" / "samples" / bench.imports.builtin[1]).exists()
            assert callable(bench.imports.builtin[2]())
        hooks = bench.cli()
        for command in bench.cli_commands():  # each of its commands has its typed hook
            verb = hooks.verb(command.words)
            assert callable(verb.configure) and callable(verb.main)
            assert callable(command.load().configure)
        if isinstance(bench.scoring, benchmarks.Scored):  # rescore re-scores with its scorer
            assert callable(bench.scoring.scorer())
        else:
            assert callable(bench.scoring.judge()) and callable(bench.scoring.template())
        if bench.roles.comparison:
            assert isinstance(bench.roles.comparison(), Contribution)
        if bench.roles.playground:  # a multi-label LLM judge: people label with its named labels
            role = bench.roles.playground()
            assert isinstance(role, PlaygroundRole) and bench.judged_by_model
            assert bench.label_letters() and set(role.label_help) <= set(bench.label_letters())
            assert role.default_setting in role.settings
            assert role.default_judge_template in role.judge_templates()
        for _, reader in bench.paper.tables:
            assert isinstance(reader(), pd.DataFrame)
        if bench.paper.sources:
            assert callable(bench.paper.sources())
        if bench.no_controls_note:
            assert isinstance(bench.no_controls_note(), str)
        for field in bench.run_fields:
            if field.kind == "select":
                assert field.default in ("", *field.options())


def test_a_package_whose_benchmark_is_not_a_benchmark_is_a_clear_error() -> None:
    class Package:
        BENCHMARK = "errorbench"

    with pytest.raises(TypeError, match="pkg: BENCHMARK is not a core.registry.Benchmark"):
        benchmarks._declared(Package, "pkg")


def benchmark_packages(found: list[benchmarks.Benchmark] | None = None) -> dict[str, str]:
    """Benchmark name -> its package: where its descriptor's loaders are defined."""
    return {
        bench.name: bench.task.__module__
        for bench in (found if found is not None else benchmarks.BENCHMARKS.values())
    }


def allowed_files() -> set[Path]:
    """Where benchmarks may be named: the registry, each benchmark's own package (a directory
    or a module) and its results page."""
    allowed = {Path(benchmarks.__file__).resolve()}
    for package in benchmark_packages().values():
        base = ROOT.joinpath(*package.split("."))
        allowed |= {p.resolve() for p in base.rglob("*.py")} if base.is_dir() else set()
        allowed.add(base.with_suffix(".py").resolve())
    allowed |= {
        (ROOT / bench.results_page.path).resolve() for bench in benchmarks.BENCHMARKS.values()
    }
    return allowed


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                found.add(id(body[0].value))
    return found


def benchmark_mentions(path: Path, names: list[str], packages: list[str]) -> list[str]:
    """'path:line: text' for each line that names a benchmark in a string (the name itself,
    the name quoted inside the string as in SQL, or a "module:attr" ref into its package) or
    imports a benchmark package. Docstrings and comments do not count."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    skip = _docstrings(tree)
    any_name = "|".join(map(re.escape, names))
    any_package = "|".join(map(re.escape, packages))
    quoted = re.compile(rf"""(?:^|['"])(?:{any_name})(?:['"]|$)""")
    ref = re.compile(rf"^(?:{any_package})(?:\.\w+)*(?::\w+)?$")  # "core.x.mod:attr"
    module = re.compile(rf"^(?:{any_package})(?:\.|$)")
    hits: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if quoted.search(node.value) or ref.match(node.value):
                span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
                named = [n for n in span if quoted.search(lines[n - 1])]
                hits.update(named or [node.lineno])
        elif isinstance(node, ast.Import):
            if any(module.match(alias.name) for alias in node.names):
                hits.add(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            full = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            if any(module.match(name) for name in full):
                hits.add(node.lineno)
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [f"{rel}:{n}: {lines[n - 1].strip()}" for n in sorted(hits)]


def test_only_the_registry_and_a_benchmarks_own_code_name_it() -> None:
    """No shared module or page names a benchmark (a string literal, quoted in SQL, or a code
    ref) or imports a benchmark package: they ask the registry. Allowed: the registry, each
    benchmark's package and its results page - all read from the registry itself."""
    names = list(benchmarks.BENCHMARKS)
    packages = sorted(set(benchmark_packages().values()))
    allowed = allowed_files()
    files = sorted({*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/**/*.py"), ROOT / "app.py"})
    offenders = []
    for path in files:
        if path.resolve() not in allowed:
            offenders += benchmark_mentions(path, names, packages)
    assert offenders == [], "\n".join(offenders)


def test_the_scan_finds_names_sql_refs_and_imports_not_docstrings(tmp_path) -> None:
    source = tmp_path / "shared.py"
    source.write_text(
        '''"""About misprompt and 'bbm'."""
import core.benchmarks.bbm.items
from core.benchmarks import errorbench
from core.benchmarks.misprompt.task import X  # 'bbm'
A = "bbm"
B = """SELECT *
FROM runs WHERE benchmark = 'misprompt'"""
C = "core.benchmarks.errorbench.task:ErrorBenchTask"
D = "Mis-prompt results, see core.benchmarks.misprompt.metrics F1"  # a label, not a name
E = f"misprompt:T{A}"


def f():
    """'errorbench'"""
'''
    )
    found = benchmark_mentions(
        source,
        ["misprompt", "errorbench", "bbm"],
        ["core.benchmarks.misprompt", "core.benchmarks.errorbench", "core.benchmarks.bbm"],
    )
    assert [int(line.split(":")[1]) for line in found] == [2, 3, 4, 5, 7, 8]


# Released migrations are history (never edited): the tables and words they name stay there.
_HISTORY = re.compile(r"^_?V\d+(?:_[A-Z]+)?$")


def benchmark_words() -> dict[str, re.Pattern[str]]:
    """What else names a benchmark in shared code (issue 30): its page's path, the tables and
    views it declares (published tables, caches, its own views), its template ids' prefix
    (`bbm/…`), its variant names (whole strings, or quoted inside one) and its name as a word
    of a sentence."""
    from core.declared import store_extensions

    exts = store_extensions()
    tables = {t for b in benchmarks.BENCHMARKS.values() for t, _ in b.paper.tables}
    tables |= {c for ext in exts for c, _ in ext.caches}
    tables |= {
        v for ext in exts for v in re.findall(r"VIEW\s+(?:IF NOT EXISTS\s+)?(\w+)", ext.views)
    }
    tables |= {
        v for ext in exts for v in re.findall(r"TABLE\s+(?:IF NOT EXISTS\s+)?(\w+)", ext.views)
    }
    pages = {b.results_page.path for b in benchmarks.BENCHMARKS.values()} - {"pages/overview.py"}
    modes = {"proactive", "passive"}  # the shared `mode` vocabulary, not one benchmark's words
    variants = {v for b in benchmarks.BENCHMARKS.values() for v in b.variants} - modes
    names = list(benchmarks.BENCHMARKS)

    def any_of(words: set[str] | list[str]) -> str:
        return "|".join(map(re.escape, sorted(words, key=len, reverse=True)))

    return {
        "page": re.compile(rf"(?:{any_of(pages)})"),
        "table": re.compile(rf"\b(?:{any_of(tables)})\b"),
        "template": re.compile(rf"(?<![\w/.-])(?:{any_of(names)})/"),
        "variant": re.compile(rf"""(?:^|['"])(?:{any_of(variants)})(?:['"]|$)"""),
        # a name as a word of a sentence, e.g. a suggested `python -m core run <name>`
        "word": re.compile(rf"(?<![\w./-])(?:{any_of(names)})(?![\w./-])"),
    }


def knowledge_mentions(path: Path, words: dict[str, re.Pattern[str]]) -> list[str]:
    """'path:line: kind: text' for each string (not a docstring, not a released migration)
    that holds one of `words`."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    skip = _docstrings(tree)
    history: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and _HISTORY.match(t.id) for t in node.targets
        ):
            history |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    hits: dict[int, str] = {}
    for found in ast.walk(tree):
        if (
            isinstance(found, ast.Constant)
            and isinstance(found.value, str)
            and id(found) not in skip
        ):
            if found.lineno in history:
                continue
            for kind, pattern in words.items():
                for match in pattern.finditer(found.value):
                    offset = found.value[: match.start()].count("\n")
                    hits.setdefault(found.lineno + offset, kind)
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [f"{rel}:{n}: {kind}: {lines[n - 1].strip()}" for n, kind in sorted(hits.items())]


def test_no_shared_module_names_a_benchmarks_pages_tables_templates_or_variants() -> None:
    """Below the packages no string names a benchmark's page, tables or views, template ids or
    variants: they come from what the package declares (core/declared.py, the registry)."""
    words = benchmark_words()
    allowed = allowed_files()
    files = sorted({*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/**/*.py"), ROOT / "app.py"})
    offenders = []
    for path in files:
        if path.resolve() not in allowed:
            offenders += knowledge_mentions(path, words)
    assert offenders == [], "\n".join(offenders)


def test_the_wider_scan_finds_pages_tables_templates_and_variants(tmp_path) -> None:
    source = tmp_path / "shared.py"
    source.write_text(
        '''"""pages/anchoring.py, published_bbm, bbm/x.v1, 'zero-shot' in a docstring."""
A = "pages/anchoring.py"
B = """SELECT *
FROM published_misprompt"""
C = "misprompt/judge.v2"
D = "zero-shot"
E = "a proactive run, setting 'one-shot'"
F = "errorbench-v1 is not a template prefix; proactive is a mode; core.benchmarks.bbm.x"
_V3 = "FROM published_counts"
G = "start one: `python -m core run misprompt --items SET`"


def f():
    """'blind'"""
    return "run_counts"
'''
    )
    found = knowledge_mentions(source, benchmark_words())
    assert [(int(line.split(":")[1]), line.split(": ")[1]) for line in found] == [
        (2, "page"),
        (4, "table"),
        (5, "template"),
        (6, "variant"),
        (7, "variant"),
        (10, "word"),
        (15, "table"),
    ]


def benchmark_spellings() -> re.Pattern[str]:
    """Every way shared code could spell a benchmark, from the descriptors: its name, its label
    and the short form its page title puts in parentheses (`Mistake finding (BBM)`), in any
    case, as a word of its own (so `<name>_verdicts` and `<name>/judge.v1` count too)."""
    words: set[str] = set()
    for bench in benchmarks.BENCHMARKS.values():
        words |= {bench.name, bench.label, *re.findall(r"\(([^)]+)\)", bench.results_page.title)}
    any_word = "|".join(map(re.escape, sorted(words, key=len, reverse=True)))
    return re.compile(rf"(?<![A-Za-z0-9])(?:{any_word})(?![A-Za-z0-9])", re.IGNORECASE)


def spelling_mentions(path: Path, pattern: re.Pattern[str]) -> list[str]:
    """'path:line: text' for each line that spells a benchmark anywhere: code, strings,
    docstrings and comments alike; only released migrations (history, never edited) are left
    out."""
    text = path.read_text()
    history: set[int] = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and _HISTORY.match(t.id) for t in node.targets
        ):
            history |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [
        f"{rel}:{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if n not in history and pattern.search(line)
    ]


# Help texts another branch of issue 30 rewrites (the generic CLI): the only lines left that
# name a benchmark below the packages, word for word; a new one anywhere still fails.
def test_no_shared_module_spells_a_benchmark_even_in_docstrings_or_comments() -> None:
    """Below the packages nothing names a benchmark, not even a docstring, a comment or a
    caption: shared code says what it does for any benchmark and takes a benchmark's words
    from its descriptor. Allowed: each benchmark's package and its own results page (the
    registry, which holds the contract, names none either)."""
    pattern = benchmark_spellings()
    allowed = allowed_files() - {Path(benchmarks.__file__).resolve()}
    files = sorted({*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/**/*.py"), ROOT / "app.py"})
    offenders = []
    for path in files:
        if path.resolve() not in allowed:
            offenders += spelling_mentions(path, pattern)
    assert offenders == [], "\n".join(offenders)


def test_the_spelling_scan_reads_docstrings_comments_and_labels(tmp_path) -> None:
    source = tmp_path / "shared.py"
    source.write_text(
        '''"""About the Mis-prompt paper."""
# scored like BIG-Bench Mistake
A = f"{1} (BBM)"  # fine: a comment without a name
B = "misprompt_verdicts"
C = "bbm/direct_trace.v1"
_V3 = "FROM published_counts -- misprompt"
D = "errorbenchx, a pcbenchmark and pages/processbenches: other words"


def f():
    """PCBench's judge."""
'''
    )
    found = spelling_mentions(source, benchmark_spellings())
    assert [int(line.split(":")[1]) for line in found] == [1, 2, 3, 4, 5, 11]


def test_no_shared_module_guesses_a_benchmarks_signature() -> None:
    """Shared code calls benchmark code by its registered contract, never by inspecting it."""
    allowed = allowed_files()
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted({*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/**/*.py")})
        if path.resolve() not in allowed and "inspect.signature" in path.read_text()
    ]
    assert offenders == []


def test_help_is_fast_and_imports_no_benchmark_code() -> None:
    """Only each benchmark package's __init__ (its declaration) is read, no module of it."""
    code = (
        "import sys, core.cli; core.cli.build_parser(['--help']);"
        "print(sorted(m for m in sys.modules if m.startswith(('pandas', 'duckdb', "
        "'importlib.metadata')) or (m.startswith('core.benchmarks.') and m.count('.') > 2)))"
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
        "SELECT count(*), bool_and(status = 'ok') FROM results "
        "WHERE run_id = 'ex-run' AND judging = 'again'"
    ) == [(3, True)]
    from core.services import jobs

    assert "example" in jobs.list_runs(store)["benchmark"].tolist()


def _run_args(bench: benchmarks.Benchmark, *extra: str) -> Any:
    """`run <name> --items S` parsed (a required select given its default)."""
    words = ["run", bench.name, "--items", "s"]
    for f in bench.run_fields:
        if f.required and f.kind == "select":
            words += [f.flag, str(f.default)]
    return build_parser(words).parse_args([*words, *extra])


def test_run_flags_come_from_the_declared_run_fields(example, capsys) -> None:
    """One declaration for the run form and `run <name>`: each RunField is a flag with the
    form's choices and default (the example's configure adds no --variant of its own)."""
    assert _run_args(example, "--variant", "plain").variant == "plain"
    with pytest.raises(SystemExit):
        _run_args(example, "--variant", "fancy")
    assert "invalid choice: 'fancy'" in capsys.readouterr().err
    for bench in benchmarks.BENCHMARKS.values():
        args = _run_args(bench)
        for f in bench.run_fields:
            got = getattr(args, f.key)
            if f.kind == "flag":
                assert got is False
            elif f.kind == "multi":
                assert got == ",".join(f.default)
            else:
                assert got == (f.default or None), (bench.name, f.flag)
                assert set(f.options()) - {""} <= set(_choices(bench, f.flag))


def _choices(bench: benchmarks.Benchmark, flag: str) -> list[str]:
    parser = build_parser(["run", bench.name])
    run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = run.choices["run"]._actions
    group = next(a for a in sub if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in group.choices[bench.name]._actions if flag in a.option_strings)
    return list(action.choices or [])


def _subparser(words: tuple[str, ...]) -> argparse.ArgumentParser:
    """The parser of the command `words`, configured as `python -m core <words>` configures it."""
    node = build_parser(list(words))
    for word in words:
        group = next(a for a in node._actions if isinstance(a, argparse._SubParsersAction))
        node = group.choices[word]
    return node


def _arg_name(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def test_import_and_metrics_flags_come_from_the_declared_options(example, capsys) -> None:
    """One declaration per argument of `import <word>`, `metrics <name>` and a benchmark's own
    commands (core.registry Option): the generic command adds exactly the declared arguments,
    in order, with their help, choices and defaults, then only the shared store flags."""
    from core.cli import add_db_arg, add_store_args

    shared = argparse.ArgumentParser()
    add_db_arg(shared)
    add_store_args(shared)
    shared_names = [_arg_name(a) for a in shared._actions][1:]  # after -h
    checked = 0
    for bench in benchmarks.BENCHMARKS.values():
        hooks = bench.cli()
        declared: list[tuple[tuple[str, ...], benchmarks.Options]] = [
            (("import", bench.imports.word), hooks.import_),
            (("metrics", bench.name), hooks.metrics),
            *((w, v) for w, v in hooks.extra.items() if isinstance(v, benchmarks.Options)),
        ]
        for words, served in declared:
            sub = _subparser(words)
            got = [_arg_name(a) for a in sub._actions]
            assert got == ["-h", *(o.name for o in served.options), *shared_names], words
            if served.description:
                assert sub.description == served.description
            for option in served.options:
                action = next(a for a in sub._actions if _arg_name(a) == option.name)
                assert action.help == (option.help or None), (words, option.name)
                assert tuple(action.choices or ()) == tuple(option.choices or ())
                assert action.metavar == option.metavar
                if option.action != "store_true":
                    assert action.default == option.default, (words, option.name)
                if option.name.startswith("-"):
                    assert action.required == option.required
                checked += 1
    assert checked > 40  # the shipped five's and the example's
    # the example declares `--name` required and `--source` required: nothing else says so
    with pytest.raises(SystemExit):
        build_parser(["import", "example", "f.txt"]).parse_args(["import", "example", "f.txt"])
    assert "the following arguments are required: --name" in capsys.readouterr().err
    args = build_parser(["metrics", "example"]).parse_args(["metrics", "example", "--source", "r"])
    assert args.source == "r"


def test_general_help_names_the_registered_benchmarks(example, capsys) -> None:
    """rescore's help says which benchmarks are judged and which scored, from their entries
    (a registered code-scored example among the scored)."""
    with pytest.raises(SystemExit):
        build_parser(["--help"]).parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    judged = [b.label for b in benchmarks.BENCHMARKS.values() if b.judged_by_model]
    scored = [b.label for b in benchmarks.BENCHMARKS.values() if not b.judged_by_model]
    assert "Example" in scored
    assert f"judge ({', '.join(judged)}) or score ({', '.join(scored)})" in out
