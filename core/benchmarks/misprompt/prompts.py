"""Mis-prompt message building from the versioned templates in data/prompts/misprompt/.

The template files, their format and the loader are the engine's (core/engine/templates.py, shared by
all benchmarks); this module builds Mis-prompt's messages from them. Every run stores the
template id it used (e.g. `misprompt/zero-shot.v1+passive.v1`). Template, TemplateError, fill,
parse_template, available_versions and PROMPTS_DIR are re-exported for existing callers.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.benchmarks.misprompt import SETTINGS  # declared with the benchmark (re-exported)
from core.engine import templates
from core.engine.templates import PROMPTS_DIR, Template, TemplateError, fill, parse_template  # noqa: F401 (re-exported)
from core.store import PROJECT_ROOT

SAMPLE_CSV = PROJECT_ROOT / "data" / "samples" / "misprompt_sample.csv"
N_EXEMPLARS = {"zero-shot": 0, "one-shot": 1, "three-shot": 3, "cot": 0}


def available_versions(name: str, benchmark: str = "misprompt") -> list[int]:
    return templates.available_versions(name, benchmark)


def load_template(name: str, version: int | None = None, benchmark: str = "misprompt") -> Template:
    """The template file `name.v<version>.txt` (newest version when version is None)."""
    return templates.load_template(benchmark, name, version)


def _short(template: Template) -> str:
    return template.id.split("/", 1)[1]


def template_id(setting: str, passive: bool = False) -> str:
    """The id stored with a run, e.g. 'misprompt/one-shot.v1+passive.v1'."""
    check_setting(setting)
    tid = load_template(setting).id
    return tid + ("+" + _short(load_template("passive")) if passive else "")


def check_setting(setting: str) -> None:
    if setting not in SETTINGS:
        raise TemplateError(f"unknown setting {setting!r}; choose one of {', '.join(SETTINGS)}")


# -- exemplars --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exemplar:
    item_id: str
    question: str
    answer: str
    secondary_category: str


@functools.lru_cache(maxsize=4)
def exemplar_pool(path: str = str(SAMPLE_CSV)) -> tuple[Exemplar, ...]:
    """Erroneous items of our own sample, ordered so consecutive ones differ in primary category.

    Fixed order (not random) so that every item of a run sees the same exemplars, which keeps
    runs reproducible and cacheable; the item itself is skipped (see pick_exemplars).
    """
    from core.benchmarks.misprompt.taxonomy import PRIMARY, PRIMARY_OF, canonical_secondary

    by_primary: dict[str, list[Exemplar]] = {p: [] for p in PRIMARY}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        for row in csv.DictReader(handle):
            if row.get("error") != "error":
                continue
            secondary = canonical_secondary(row["secondary_category"]) or ""
            by_primary[PRIMARY_OF.get(secondary, PRIMARY[0])].append(
                Exemplar(row["id"], row["question"], row["gold_answer"], secondary)
            )
    # Factual first: the most recognisable kind of error makes the clearest single example.
    order = ["Factual Errors", "Language Errors", "Logical Errors", "Incomplete Information"]
    pool: list[Exemplar] = []
    longest = max((len(v) for v in by_primary.values()), default=0)
    for k in range(longest):
        for primary in order:
            if k < len(by_primary[primary]):
                pool.append(by_primary[primary][k])
    return tuple(pool)


def _norm(text: str) -> str:
    return " ".join(str(text).split()).lower()


def pick_exemplars(
    item: Mapping[str, Any], k: int, pool: Sequence[Exemplar] | None = None
) -> list[Exemplar]:
    """The first k exemplars of the pool that are not the item itself (by id or by text)."""
    if k <= 0:
        return []
    pool = exemplar_pool() if pool is None else pool
    own_text = _norm(item.get("prompt") or item.get("question") or "")
    own_id = str(item.get("item_id") or item.get("id") or "")
    chosen = [e for e in pool if _norm(e.question) != own_text and e.item_id != own_id][:k]
    if len(chosen) < k:
        raise TemplateError(f"only {len(chosen)} exemplars available, {k} needed")
    return chosen


# -- messages ---------------------------------------------------------------------------------


def build_messages(
    item: Mapping[str, Any],
    setting: str,
    passive: bool = False,
    exemplars: Sequence[Exemplar] | None = None,
) -> list[dict[str, str]]:
    """The chat messages sent to the model for one item under a setting (and mode).

    Passive mode puts the error-handling instruction before the setting's message (so passive
    one-shot = instruction + exemplars + question); zero-shot proactive is the prompt alone.
    """
    check_setting(setting)
    prompt = str(item.get("prompt") or item.get("question") or "")
    template = load_template(setting)
    if exemplars is None:
        exemplars = pick_exemplars(item, N_EXEMPLARS[setting])
    values: dict[str, Any] = {"prompt": prompt}
    if "exemplar" in template.sections:
        values["exemplars"] = "\n\n".join(
            template.render("exemplar", n=i + 1, question=e.question, answer=e.answer)
            for i, e in enumerate(exemplars)
        )
    content = template.render("user", **values)
    if passive:
        content = load_template("passive").render("user", prompt=content)
    messages = []
    if "system" in template.sections:
        messages.append({"role": "system", "content": template.render("system", **values)})
    messages.append({"role": "user", "content": content})
    return messages


# C.1 definitions + consistent control wording (docs/benchmarks.md)
DEFAULT_JUDGE_TEMPLATE = "misprompt/judge.v2"


def judge_templates() -> list[str]:
    """The selectable judge templates (full ids, the one spelling), oldest first:
    ['misprompt/judge.v1', 'misprompt/judge.v2']. Every flag and form offers this list."""
    return templates.ids_named("misprompt", "judge")


def judge_version(template: str | int | None) -> int:
    """The version number of a judge template: a full id from judge_templates(), a version
    int (code callers) or None (DEFAULT_JUDGE_TEMPLATE). Anything else is refused, naming the
    valid ids."""
    if template is None:
        template = DEFAULT_JUDGE_TEMPLATE
    if isinstance(template, int):
        version = template
        if version not in available_versions("judge"):
            templates.choose(f"misprompt/judge.v{version}", judge_templates(), "judge template")
        return version
    text = str(template).strip()
    return templates.split_id(templates.choose(text, judge_templates(), "judge template"))[2]


def judge_messages(
    item: Mapping[str, Any], response_text: str, version: int | str | None = None
) -> list[dict[str, str]]:
    """The judge's messages for one response (the control-item wording when is_error is false)."""
    from core.benchmarks.misprompt.taxonomy import display_name

    template = load_template("judge", judge_version(version))
    is_error = bool(item.get("is_error", True))
    secondary = item.get("secondary_category") or ""
    primary = item.get("primary_category") or ""
    category = f"{primary} / {display_name(secondary)}" if primary else display_name(secondary)
    values = {
        "prompt": item.get("prompt") or item.get("question") or "",
        "category": category or "(not given)",
        "explanation": item.get("explanation") or "(no explanation given)",
        "gold": item.get("gold") or item.get("gold_answer") or "(no reference given)",
        "response": response_text,
    }
    section = "user_error" if is_error else "user_control"
    return [
        {"role": "system", "content": template.render("system", **values)},
        {"role": "user", "content": template.render(section, **values)},
    ]


def judge_template_id(asked: str | None = None) -> str:
    """The id stored with a run for the judge template a flag or form asked for: one of
    judge_templates() exactly (None = the default); a short name or other spelling is a
    TemplateError naming the valid ids."""
    if asked is None:
        return DEFAULT_JUDGE_TEMPLATE
    return templates.choose(str(asked), judge_templates(), "judge template")


def repair_message(version: int | str | None = None) -> dict[str, str]:
    return {
        "role": "user",
        "content": load_template("judge", judge_version(version)).render("repair"),
    }
