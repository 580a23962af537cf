"""One prompt-template system for every benchmark: files data/prompts/<benchmark>/<name>.v<N>.txt.

Why files and versions: the papers' exact wording is mostly not published, so ours is data. A
change is a new version file, never an edit, and every run stores the id of the template it used
(`<benchmark>/<name>.v<N>`, e.g. `<benchmark>/direct_trace.v1`), so a result stays attributable to the
exact words that produced it.

File format: optional `#` comment lines before the first section, then sections introduced by
`=== name ===` lines (`system`, `user`, or any name a benchmark needs). Text before any section
header is the `user` section. `{{name}}` placeholders are filled in one pass (a value is never
re-scanned, so braces in a Dyck-language trace are safe); a placeholder without a value is an
error rather than silently left in the prompt. A section's leading and trailing blank lines are
dropped, except in a template whose comment lines include `#! verbatim`: there every section is
the exact text after its header line up to the next header (newlines kept), for a paper's
prompt that must be sent byte for byte (a judge prompt copied from a paper's code).

One spelling: the full id `<benchmark>/<name>.v<N>` is what runs store, what pages show and
what every CLI flag and run form accepts (`choose`); a short name (`judge.v2`) or an old id is
refused with one line naming the valid ids, so a script never silently picks another template.
Ids stored before this module existed (`<benchmark>/direct_trace_v1`, `<benchmark>-v1`) are normalised
when read (`resolve_id`; each benchmark declares its old ids, core/declared.py), so old runs
still find and show their template under today's id without a migration.

Structured-output templates: a template whose name ends in `_structured` or is `structured`
(`<benchmark>/structured.v1`, `<benchmark>/direct_trace_structured.v1`) asks for JSON bounded by an
OpenAI `response_format` schema that its benchmark sends with each request, so a small model's
answer stays readable. That is NOT the papers' protocol (they read free text): `is_structured`
and `label` let every place that shows a template id say so.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.store import PROJECT_ROOT

PROMPTS_DIR = PROJECT_ROOT / "data" / "prompts"
_SECTION = re.compile(r"^=== *([A-Za-z_][\w-]*) *===\s*$")
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_VERSION = re.compile(r"^(?P<name>.+)\.v(?P<v>\d+)\.txt$")
_ID = re.compile(r"^(?P<benchmark>[\w-]+)/(?P<name>[\w-]+)\.v(?P<v>\d+)$")


class TemplateError(ValueError):
    pass


@dataclass(frozen=True)
class Template:
    """A parsed template file: `id` is '<benchmark>/<name>.v<N>'."""

    id: str
    sections: Mapping[str, str]

    @property
    def benchmark(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1].rsplit(".v", 1)[0]

    @property
    def version(self) -> int:
        return int(self.id.rsplit(".v", 1)[1])

    def section(self, name: str) -> str:
        if name not in self.sections:
            raise TemplateError(f"template {self.id} has no section {name!r}")
        return self.sections[name]

    def render(self, section: str, **values: Any) -> str:
        return fill(self.section(section), values, self.id)

    def placeholders(self, section: str) -> list[str]:
        """The placeholder names a section uses, in order of first use."""
        return list(dict.fromkeys(_PLACEHOLDER.findall(self.section(section))))


def fill(text: str, values: Mapping[str, Any], where: str = "template") -> str:
    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise TemplateError(f"{where}: no value for placeholder {{{{{key}}}}}")
        value = values[key]
        return "" if value is None else str(value)

    return _PLACEHOLDER.sub(sub, text)


VERBATIM = "#! verbatim"


def _parse_verbatim(text: str, template_id: str) -> Template:
    """Sections as the exact text between header lines (see VERBATIM)."""
    headers = [m for m in re.finditer(r"^.*$\n?", text, re.M) if _SECTION.match(m.group(0))]
    if not headers:
        raise TemplateError(f"template {template_id}: a verbatim template needs section headers")
    sections: dict[str, str] = {}
    for i, header in enumerate(headers):
        name = _SECTION.match(header.group(0))
        assert name is not None
        if name.group(1) in sections:
            raise TemplateError(f"template {template_id}: section {name.group(1)!r} appears twice")
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        sections[name.group(1)] = text[header.end() : end]
    return Template(template_id, sections)


def parse_template(text: str, template_id: str) -> Template:
    head = text.split("\n=== ", 1)[0].splitlines()
    if VERBATIM in (line.strip() for line in head if line.startswith("#")):
        return _parse_verbatim(text, template_id)
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match:
            current = match.group(1)
            if current in sections:
                raise TemplateError(f"template {template_id}: section {current!r} appears twice")
            sections[current] = []
            continue
        if current is None:
            if line.startswith("#") or not line.strip():
                continue
            current = "user"
            sections[current] = []
        sections[current].append(line)
    if not sections:
        raise TemplateError(f"template {template_id} is empty")
    return Template(template_id, {k: "\n".join(v).strip("\n") for k, v in sections.items()})


def make_id(benchmark: str, name: str, version: int) -> str:
    return f"{benchmark}/{name}.v{int(version)}"


def split_id(template_id: str) -> tuple[str, str, int]:
    """'<benchmark>/direct_trace.v1' -> ('<benchmark>', 'direct_trace', 1); aliases are resolved
    first."""
    match = _ID.match(resolve_id(template_id))
    if not match:
        raise TemplateError(
            f"not a template id: {template_id!r} (expected <benchmark>/<name>.v<N>)"
        )
    return match.group("benchmark"), match.group("name"), int(match.group("v"))


def ids_named(benchmark: str, name: str) -> list[str]:
    """The ids of one template's versions, oldest first: ['<benchmark>/judge.v1', …]."""
    return [make_id(benchmark, name, v) for v in available_versions(name, benchmark)]


def choose(asked: str, choices: Sequence[str], what: str = "template") -> str:
    """`asked` when it is one of `choices` (full ids); anything else — a short name, an old
    alias, a typo — is a TemplateError naming the valid ids, so flags and forms accept one
    spelling only."""
    if asked in choices:
        return asked
    raise TemplateError(f"unknown {what} {asked!r}; valid ids: {', '.join(choices) or 'none'}")


def shown_id(stored_id: object) -> str | None:
    """How a stored template id is shown: today's full id (old aliases normalised), None when
    the run stored none (NULL, NaN, '')."""
    if stored_id is None or stored_id != stored_id or not str(stored_id):  # NaN != NaN
        return None
    return resolve_id(str(stored_id))


def resolve_id(stored_id: str) -> str:
    """Today's id for a stored one: aliases mapped, composite ids ('…+passive.v1', '…+3shot')
    resolved part by part (only the first part can be an alias)."""
    from core.declared import template_aliases  # each benchmark's older ids -> today's

    head, sep, rest = str(stored_id).partition("+")
    return template_aliases().get(head, head) + sep + rest


STRUCTURED_NOTE = "structured JSON output — not the paper's protocol"


def is_structured(template_id: object) -> bool:
    """A structured-output template (name `structured` or `<x>_structured`): its requests carry
    a JSON-schema response_format and its answers are read as JSON."""
    shown = shown_id(template_id)
    if shown is None:
        return False
    match = _ID.match(shown.partition("+")[0])
    name = match.group("name") if match else ""
    return name == "structured" or name.endswith("_structured")


def label(template_id: object) -> str:
    """A template id as shown to people: the id, with STRUCTURED_NOTE for a structured-output
    template (so it is never mistaken for the paper's protocol); '—' for none."""
    shown = shown_id(template_id)
    if shown is None:
        return "—"
    return f"{shown} ({STRUCTURED_NOTE})" if is_structured(shown) else shown


def available_versions(name: str, benchmark: str) -> list[int]:
    folder = PROMPTS_DIR / benchmark
    versions = []
    for path in folder.glob(f"{name}.v*.txt"):
        match = _VERSION.match(path.name)
        if match and match.group("name") == name:
            versions.append(int(match.group("v")))
    return sorted(versions)


def latest_version(name: str, benchmark: str) -> int:
    versions = available_versions(name, benchmark)
    if not versions:
        raise TemplateError(f"no template {benchmark}/{name}.v*.txt in {PROMPTS_DIR}")
    return versions[-1]


def template_ids(benchmark: str) -> list[str]:
    """Every template id of a benchmark, sorted by name then version."""
    found = []
    for path in (PROMPTS_DIR / benchmark).glob("*.v*.txt"):
        match = _VERSION.match(path.name)
        if match:
            found.append((match.group("name"), int(match.group("v"))))
    return [make_id(benchmark, n, v) for n, v in sorted(found)]


@functools.lru_cache(maxsize=128)
def load_template(benchmark: str, name: str, version: int | None = None) -> Template:
    """The template file `<benchmark>/<name>.v<version>.txt` (newest version when None)."""
    if version is None:
        version = latest_version(name, benchmark)
    path = PROMPTS_DIR / benchmark / f"{name}.v{int(version)}.txt"
    if not path.is_file():
        known = ", ".join(template_ids(benchmark)) or "none"
        raise TemplateError(f"no template file {path} (known {benchmark} templates: {known})")
    return parse_template(path.read_text(encoding="utf-8"), make_id(benchmark, name, version))


def load(template_id: str) -> Template:
    """A template by id (an old alias works too): '<benchmark>/<name>.v<N>', or an alias."""
    benchmark, name, version = split_id(template_id)
    return load_template(benchmark, name, version)


def find(stored_id: str | None) -> Template | None:
    """The template a run's stored id names (first part of a composite id), or None if the id
    names no template file (e.g. a paper's own prompts, '<benchmark>-paper/…')."""
    if not stored_id:
        return None
    head = resolve_id(stored_id).partition("+")[0]
    try:
        return load(head)
    except TemplateError:
        return None
