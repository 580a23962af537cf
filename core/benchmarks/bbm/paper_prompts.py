"""The paper's own 3-shot, task-specific mistake-finding prompts, read as data.

BIG-Bench Mistake's repository (github.com/WHGTyen/BIG-Bench-Mistake, folder
mistake_finding_prompts/) holds one Python file per task, `<task>_prompts.py`, with string
constants and tuples of chat messages: per method a `*_MESSAGES` tuple (an instruction, then three
solved examples as user/assistant turns) and a `*_TEMPLATE` string with `{input}`, `{steps}` and,
for the step methods, `{current_step}`. A request is that message sequence followed by one user
message: the template filled in with the trace ("Thought 1: …" lines, up to the asked step for the
step methods). Nothing is added or reworded and there is no system message.

The files are Python source, so they are parsed with `ast` and the assignments evaluated with
`ast.literal_eval` after replacing `textwrap.dedent('''…''')` calls by their result — never
executed or imported. The project ships none of them (Apache-2.0, the authors'): point
`--paper-prompts-dir` at a checkout's mistake_finding_prompts/ folder.
"""

from __future__ import annotations

import ast
import hashlib
import io
import string
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path

from core.benchmarks.bbm.prompts import numbered_trace
from core.engine import templates

SOURCE_URL = "github.com/WHGTyen/BIG-Bench-Mistake (folder mistake_finding_prompts)"
TEMPLATE_PREFIX = "bbm-paper"
# method -> (messages variable, template variable) in <task>_prompts.py
VARIABLES: dict[str, tuple[str, str]] = {
    "direct_trace": ("DIRECT_MESSAGES", "DIRECT_TEMPLATE"),
    "direct_step": ("DIRECT_PERSTEP_MESSAGES", "DIRECT_PERSTEP_TEMPLATE"),
    "cot_step": ("COT_PERSTEP_MESSAGES", "COT_PERSTEP_TEMPLATE"),
}
FIELDS = {
    "direct_trace": {"input", "steps"},
    "direct_step": {"input", "steps", "current_step"},
    "cot_step": {"input", "steps", "current_step"},
}
ROLES = ("system", "user", "assistant")


class PaperPromptError(ValueError):
    """A missing or malformed prompt file; the message names the file (and line)."""


def template_id(method: str) -> str:
    """The id stored with a paper-protocol run, e.g. 'bbm-paper/direct_trace'."""
    return f"{TEMPLATE_PREFIX}/{method}"


def is_paper_template(stored_id: str | None) -> bool:
    return bool(stored_id) and str(stored_id).startswith(TEMPLATE_PREFIX + "/")


def file_for(directory: Path | str, task: str) -> Path:
    return Path(directory) / f"{task}_prompts.py"


def _dedent_calls(node: ast.AST, where: str) -> ast.AST:
    """Replace `textwrap.dedent(<str>)` calls by the dedented string (the only call allowed)."""

    class Inline(ast.NodeTransformer):
        def visit_Call(self, call: ast.Call) -> ast.AST:
            func = call.func
            is_dedent = (
                isinstance(func, ast.Attribute)
                and func.attr == "dedent"
                and isinstance(func.value, ast.Name)
                and func.value.id == "textwrap"
            )
            if not (
                is_dedent
                and len(call.args) == 1
                and not call.keywords
                and isinstance(call.args[0], ast.Constant)
                and isinstance(call.args[0].value, str)
            ):
                raise PaperPromptError(
                    f'{where}:{call.lineno}: only textwrap.dedent("…") '
                    "calls are read; found another expression"
                )
            return ast.copy_location(ast.Constant(textwrap.dedent(call.args[0].value)), call)

    return Inline().visit(node)


def _too_deep_line(source: str) -> int | None:
    """The first line of the statement that Python's parser cannot hold (None if not found):
    each logical line is parsed alone, so the message can name where the file went wrong."""
    lines = source.splitlines(keepends=True)
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    start: int | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if start is None and token.type not in (*skip, tokenize.NEWLINE):
                start = token.start[0]
            if token.type != tokenize.NEWLINE or start is None:
                continue
            try:
                ast.parse("".join(lines[start - 1 : token.end[0]]))
            except (MemoryError, RecursionError):
                return start
            except SyntaxError:
                pass  # an indented block alone; not the culprit
            start = None
    except (tokenize.TokenError, SyntaxError, MemoryError, RecursionError):
        return None
    return None


def read_assignments(path: Path) -> dict[str, tuple[object, int]]:
    """Top-level `NAME = <literal>` assignments of a prompts file: {name: (value, line)}.
    Assignments whose value is not a literal are reported only when asked for (see _value)."""
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PaperPromptError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PaperPromptError(f"{path}: cannot read ({exc})") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise PaperPromptError(f"{path}:{exc.lineno}: not valid Python ({exc.msg})") from None
    except (MemoryError, RecursionError):  # e.g. 100,000 nested `-` or a 200,000-term sum
        line = _too_deep_line(source)
        raise PaperPromptError(
            f"{path}{f':{line}' if line else ''}: an expression nested too deeply to read "
            "(thousands of levels); the paper's prompt files are flat string literals"
        ) from None
    out: dict[str, tuple[object, int]] = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        name = node.targets[0].id
        try:
            value = ast.literal_eval(_dedent_calls(node.value, str(path)))
        except PaperPromptError as exc:
            value = exc
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = PaperPromptError(f"{path}:{node.lineno}: {name} is not a literal value")
        out[name] = (value, node.lineno)
    return out


def _value(found: dict[str, tuple[object, int]], name: str, path: Path) -> tuple[object, int]:
    if name not in found:
        raise PaperPromptError(f"{path}: no {name} assignment")
    value, line = found[name]
    if isinstance(value, PaperPromptError):
        raise value
    return value, line


@dataclass(frozen=True)
class PaperPrompt:
    """One task × method: the paper's message sequence and its final template."""

    task: str
    method: str
    path: str
    sha256: str
    messages: tuple[dict[str, str], ...]
    template: str

    def render(
        self, question: str, steps: list[str], step: int | None = None
    ) -> list[dict[str, str]]:
        """The request: the paper's messages, then its template filled with the trace."""
        values: dict[str, object] = {"input": question}
        if self.method == "direct_trace":
            values["steps"] = numbered_trace(steps)
        else:
            if step is None:
                raise ValueError(f"{self.method} needs the step asked about")
            values["steps"] = numbered_trace(steps, step)
            values["current_step"] = step
        final = self.template.format_map(values)
        return [dict(m) for m in self.messages] + [{"role": "user", "content": final}]


def load_paper_prompt(directory: Path | str, task: str, method: str) -> PaperPrompt:
    """The paper's prompt for one task and method from `<directory>/<task>_prompts.py`."""
    if method not in VARIABLES:
        raise PaperPromptError(f"unknown method {method!r}; known: {', '.join(VARIABLES)}")
    path = file_for(directory, task)
    if not path.is_file():
        raise PaperPromptError(
            f"{path}: no such file — the paper's prompts for task {task!r} are missing (get "
            f"mistake_finding_prompts/ from {SOURCE_URL})"
        )
    found = read_assignments(path)
    messages_var, template_var = VARIABLES[method]
    messages, m_line = _value(found, messages_var, path)
    template, t_line = _value(found, template_var, path)
    if not isinstance(messages, (tuple, list)) or not messages:
        raise PaperPromptError(f"{path}:{m_line}: {messages_var} is not a non-empty sequence")
    for k, msg in enumerate(messages):
        if (
            not isinstance(msg, dict)
            or set(msg) != {"role", "content"}
            or msg["role"] not in ROLES
            or not isinstance(msg["content"], str)
        ):
            raise PaperPromptError(
                f"{path}:{m_line}: {messages_var}[{k}] is not a "
                "{'role': 'user'|'assistant', 'content': str} message"
            )
    if not isinstance(template, str):
        raise PaperPromptError(f"{path}:{t_line}: {template_var} is not a string")
    try:
        fields = {f for _, f, spec, conv in string.Formatter().parse(template) if f is not None}
        specs = [
            (spec, conv)
            for _, f, spec, conv in string.Formatter().parse(template)
            if f is not None and (spec or conv)
        ]
    except ValueError as exc:
        raise PaperPromptError(f"{path}:{t_line}: {template_var}: {exc}") from None
    expected = FIELDS[method]
    if fields != expected or specs:
        raise PaperPromptError(
            f"{path}:{t_line}: {template_var} has fields {{{', '.join(sorted(fields))}}}; "
            f"expected {{{', '.join(sorted(expected))}}}"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return PaperPrompt(
        task,
        method,
        str(path),
        digest,
        tuple({"role": m["role"], "content": m["content"]} for m in messages),
        template,
    )


def load_for_tasks(directory: Path | str, tasks: list[str], method: str) -> dict[str, PaperPrompt]:
    """One PaperPrompt per task (all checked before any call is made)."""
    if not Path(directory).is_dir():
        raise PaperPromptError(
            f"{directory}: no such directory (get mistake_finding_prompts/ from {SOURCE_URL})"
        )
    return {task: load_paper_prompt(directory, task, method) for task in tasks}


def template_info(stored_id: str | None) -> dict:
    """What a run's stored template id names, for the pages: a caption and the template's
    sections (none for the paper's own prompts, which are not ours to show)."""
    if is_paper_template(stored_id):
        return {
            "caption": f"{stored_id}: the paper's own 3-shot prompts ({SOURCE_URL}); the "
            "run's params hold the folder and each file's SHA-256.",
            "sections": {},
        }
    found = templates.find(stored_id)
    if found is None:
        return {"caption": f"{stored_id or '(none)'}: no template file of this id.", "sections": {}}
    resolved = templates.resolve_id(str(stored_id))
    alias = f" (stored as {stored_id})" if resolved != stored_id else ""
    return {
        "caption": f"template {templates.label(found.id)}{alias}, file "
        f"data/prompts/{found.benchmark}/"
        f"{found.name}.v{found.version}.txt",
        "sections": dict(found.sections),
    }
