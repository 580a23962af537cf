"""The documentation stays true: every relative link in README.md and docs/*.md resolves (file
and `#anchor`, with GitHub's heading slugs), and every `python -m core …` example in them parses
with the real CLI parser (`core.cli.build_parser`), so a renamed flag or a moved section fails
here instead of misleading a reader."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

from core.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


# --- Markdown, just enough of it -------------------------------------------------------------

FENCE = re.compile(r"^(```|~~~)")


def split_fences(text: str) -> tuple[str, list[str]]:
    """(prose with fenced blocks blanked out, the fenced blocks' bodies). Line count is kept so
    that messages can name a line."""
    prose: list[str] = []
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.split("\n"):
        if FENCE.match(line.strip()):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
            prose.append("")
        elif current is not None:
            current.append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), blocks


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation other than `-`
    and `_` dropped, spaces turned into hyphens (github-slugger)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"[`*]", "", text)  # code and emphasis marks are not rendered
    text = text.strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LN" or cat in ("Mn", "Mc", "Pc"):
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, duplicates numbered as GitHub does."""
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in prose.split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = github_slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def relative_links(path: Path) -> list[str]:
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    prose = re.sub(r"`[^`]*`", "", prose)  # code spans hold no links
    return [
        target
        for target in LINK.findall(prose)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)  # http:, https:, mailto: …
    ]


def broken_links(path: Path) -> list[str]:
    problems = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{target}: no such file")
            continue
        if anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest.name
            problems.append(f"{target}: no heading #{anchor} in {shown}")
    return problems


# --- `python -m core …` examples ---------------------------------------------------------------


def cli_examples(path: Path) -> list[str]:
    """Every `python -m core …` in a code span or a fenced block, continuation lines joined
    (a trailing backslash, or an indented line under the command) and shell comments dropped."""
    prose, blocks = split_fences(path.read_text(encoding="utf-8"))
    found = [
        " ".join(span.split())
        for span in re.findall(r"`([^`]+)`", prose)
        if span.lstrip().startswith("python -m core")
    ]
    found.extend(command_table_rows(prose))
    for block in blocks:
        command: list[str] | None = None
        for line in block.split("\n"):
            code = re.sub(r"(^|\s)#.*$", "", line).rstrip()
            start = code.find("python -m core")
            if start >= 0:
                if command:
                    found.append(" ".join(" ".join(command).split()))
                command = [code[start:].rstrip("\\")]
            elif command is not None and line[:1].isspace() and code.strip():
                command.append(code.rstrip("\\"))
            else:
                if command:
                    found.append(" ".join(" ".join(command).split()))
                command = None
        if command:
            found.append(" ".join(" ".join(command).split()))
    return found


def command_table_rows(prose: str) -> list[str]:
    """The first cells of a `| command | … |` table (the CLI reference), as examples: `a / b`
    between command words names several commands, `\\|` is a `|` inside a cell."""
    rows: list[str] = []
    in_table = False
    for line in prose.split("\n"):
        if re.match(r"^\|\s*command\s*\|", line):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and (m := re.match(r"^\|\s*`([^`]+)`\s*\|", line.replace("\\|", "\x00"))):
            cell = m.group(1).replace("\x00", "|")
            if "python" in cell or cell.startswith((".", "/")):
                continue  # a script of its own (bench/), not a `python -m core` command
            words = re.match(r"^(\S+) ((?:\S+ / )+\S+)(.*)$", cell)
            names = words.group(2).split(" / ") if words else [None]
            for name in names:
                text = f"{words.group(1)} {name}{words.group(3)}" if words else cell
                rows.append("python -m core " + text)
    return rows


# A synopsis writes `[optional]`, `a | b` (alternatives of a group), `x|y` (values),
# `…` or `...` (more of the same / the rest elided). It is expanded into a few concrete command
# lines: every optional part left out, and every part in, taking the i-th alternative everywhere.


@dataclass
class Group:
    alternatives: list[list[str | Group]]
    optional: bool


def _parse_synopsis(text: str) -> list[list[str | Group]]:
    tokens = re.findall(r"\[|\]|\s\|\s|[^\s\[\]]+|\s+", text)
    pos = 0

    def seq(depth: int) -> list[list[str | Group]]:
        nonlocal pos
        alternatives: list[list[str | Group]] = [[]]
        while pos < len(tokens):
            tok = tokens[pos]
            pos += 1
            if tok == "[":
                alternatives[-1].append(Group(seq(depth + 1), optional=True))
            elif tok == "]":
                if depth == 0:
                    raise ValueError(f"unbalanced ']' in {text!r}")
                return alternatives
            elif tok.strip() == "|":
                alternatives.append([])
            elif tok.isspace():
                alternatives[-1].append(" ")
            else:
                alternatives[-1].append(tok)
        if depth:
            raise ValueError(f"unbalanced '[' in {text!r}")
        return alternatives

    return seq(0)


def _render(parts: list[str | Group], choice: int | None) -> str:
    out = []
    for part in parts:
        if isinstance(part, Group):
            if choice is None and part.optional:
                continue
            alt = part.alternatives[min(choice or 0, len(part.alternatives) - 1)]
            out.append(_render(alt, choice))
        else:
            values = part.split("|") if "|" in part.strip("|") else [part]
            out.append(values[min(choice or 0, len(values) - 1)])
    return "".join(out)


def expand(example: str) -> list[str]:
    top = _parse_synopsis(example)
    width = max(
        [len(top)] + [len(p.split("|")) for p in re.findall(r"\S+", example) if "|" in p] + [2]
    )
    lines = {" ".join(_render(top[0], None).split())}
    for i in range(width):
        lines.add(" ".join(_render(top[min(i, len(top) - 1)], i).split()))
    return sorted(lines)


# Placeholders a reader replaces; only those the parser checks (numbers, choices) need a value.
PLACEHOLDERS = {"N": "3", "S": "0", "T": "0.5", "K": "1", "B": "misprompt", "M": "strict"}


def argv_of(line: str) -> list[str]:
    words = shlex.split(line.replace("…", " ").replace("...", " "))
    assert words[:3] == ["python", "-m", "core"], line
    return [PLACEHOLDERS.get(w, w) for w in words[3:]]


def _lenient(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The same parser with nothing required (for elided examples): it still refuses an unknown
    command, flag or value, which argparse would otherwise hide behind a missing argument."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.required = False
            for sub in action.choices.values():
                _lenient(sub)
        elif action.option_strings:
            action.required = False
        elif action.nargs is None:
            action.nargs = "?"
        elif action.nargs == "+":
            action.nargs = "*"
    return parser


def parse_error(argv: list[str], *, lenient: bool = False) -> str | None:
    """The CLI parser's complaint about `argv`, or None when it parses (`--help` included)."""
    parser = _lenient(build_parser()) if lenient else build_parser()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            return None if exc.code == 0 else err.getvalue().strip().splitlines()[-1]
    return None


def example_problems(example: str) -> list[str]:
    """Why an example does not parse. An elided example (`…`) or a bare command name (`python -m
    core export` in a sentence) may leave out required parts but not name an unknown command,
    flag or value."""
    elided = "…" in example or re.search(r"(?<![\]\w])\.\.\.", example) is not None
    problems = []
    for line in expand(example):
        argv = argv_of(line)
        bare = len(argv) <= 2 and not any(w.startswith("-") for w in argv)
        error = parse_error(argv, lenient=elided or bare)
        if error:
            problems.append(f"{line}\n    {error}")
    return problems


# --- the tests ---------------------------------------------------------------------------------


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


@pytest.mark.parametrize("path", doc_files(), ids=_ids(doc_files()))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


@pytest.mark.parametrize("path", doc_files(), ids=_ids(doc_files()))
def test_every_cli_example_parses(path: Path) -> None:
    problems = [p for example in cli_examples(path) for p in example_problems(example)]
    assert problems == [], "\n".join(problems)


def test_the_link_check_catches_bad_anchors_and_files(tmp_path: Path) -> None:
    """The checker itself: GitHub's slugs (duplicates numbered, code blocks skipped), a missing
    file or heading fails, web links and code spans are left alone."""
    assert github_slug("Judgings: re-judge and re-score without asking the model") == (
        "judgings-re-judge-and-re-score-without-asking-the-model"
    )
    assert github_slug("`data/models.toml`, API keys") == "datamodelstoml-api-keys"
    (tmp_path / "b.md").write_text("# Title\n\n## Same\n\n## Same\n\n```\n# not a heading\n```\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#title) [dup](b.md#same-1) [self](#top) [bad](b.md#nope) [gone](c.md)\n"
        "[code](b.md#not-a-heading) [web](https://example.org/x#y) `[x](nope.md)`\n\n# Top\n"
    )
    assert broken_links(page) == [
        "b.md#nope: no heading #nope in b.md",
        "c.md: no such file",
        "b.md#not-a-heading: no heading #not-a-heading in b.md",
    ]


def test_the_example_check_catches_unknown_commands_flags_and_values() -> None:
    """The checker itself: synopses with brackets, alternatives and placeholders parse; an
    unknown command, flag or choice does not, elided (`…`) or not."""
    ok = "python -m core metrics misprompt [--source published|RUN] [--format csv|json]"
    assert expand(ok) == [
        "python -m core metrics misprompt",
        "python -m core metrics misprompt --source RUN --format json",
        "python -m core metrics misprompt --source published --format csv",
    ]
    assert example_problems(ok) == []
    limited = (
        "python -m core run bbm --items SET --method direct_trace [--limit N [--sample-seed S]]"
    )
    assert example_problems(limited) == []
    assert example_problems("python -m core run …") == []
    assert example_problems("python -m core export") == []
    assert example_problems("python -m core export --out PATH")
    assert (
        example_problems("python -m core rescore --source RUN [--as NAME | --judge-model ID]") == []
    )
    assert example_problems("python -m core run bbm --items SET --no-such-flag")
    assert example_problems("python -m core frobnicate --items SET")
    assert example_problems("python -m core metrics bbm --format xml …")
    assert example_problems("python -m core run bbm --items SET --limit N --bogus …")
