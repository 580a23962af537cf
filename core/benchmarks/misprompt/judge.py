"""The Mis-prompt LLM judge: one call per response -> six boolean labels with rationales.

Why this shape (SPEC §1): the judge is asked for JSON through the server's JSON-schema
response format; servers and small models still return fenced, chatty, nested or stringly-typed
JSON, so parsing is defensive, and a reply that still cannot be read gets exactly ONE repair
request (the bad output is sent back with a request for valid JSON). The raw output is always
kept. A verdict where an "accurate" label is true but its "attempt" is false is flagged
`inconsistent` and left as the judge said it: counted and shown, never silently fixed.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from core.benchmarks.misprompt import prompts
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS

JUDGE_MAX_TOKENS = 500  # six one-line rationales in JSON take ~300 tokens
TRUNCATE_RESPONSE_CHARS = 1500  # only when the server says the judge request is too long
REPAIR_ECHO_CHARS = 800  # how much of a bad judge output is shown back in the repair request
LABEL_PAIRS = (
    ("identification_accurate", "identification_attempt"),
    ("correction_accurate", "correction_attempt"),
)

RATIONALE_MAX_CHARS = (
    160  # one line; bounds a weak judge that loops inside a string (seen with SmolLM2)
)


def judge_schema(bounded: bool = True) -> dict[str, Any]:
    """Six labels, each {"rationale", "value"}; rationale first so the judge reasons, then decides."""
    rationale: dict[str, Any] = {"type": "string"}
    if bounded:
        rationale["maxLength"] = RATIONALE_MAX_CHARS
    return {
        "type": "object",
        "properties": {
            label: {
                "type": "object",
                "properties": {"rationale": rationale, "value": {"type": "boolean"}},
                "required": ["rationale", "value"],
                "additionalProperties": False,
            }
            for label in JUDGE_LABELS
        },
        "required": list(JUDGE_LABELS),
        "additionalProperties": False,
    }


def _format(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "misprompt_verdict", "strict": True, "schema": schema},
    }


JUDGE_SCHEMA: dict[str, Any] = judge_schema(bounded=False)
RESPONSE_FORMAT: dict[str, Any] = _format(JUDGE_SCHEMA)
BOUNDED_RESPONSE_FORMAT: dict[str, Any] = _format(judge_schema(bounded=True))
# Tried in order until a server accepts one: bounded rationales (llama.cpp, vLLM), the plain
# schema (OpenAI's strict mode refuses maxLength), then no response_format at all.
FORMAT_LADDER: tuple[dict[str, Any] | None, ...] = (BOUNDED_RESPONSE_FORMAT, RESPONSE_FORMAT, None)
# Which rung each endpoint accepted, so later calls skip the refused ones.
_ACCEPTED_RUNG: dict[tuple, int] = {}

_TRUE = {"true", "yes", "y", "1", "t", "correct", "present"}
_FALSE = {"false", "no", "n", "0", "f", "none", "absent", "incorrect"}
_LABEL_ALIASES = {
    "error_detection": "detection",
    "detected": "detection",
    "attempt_at_identification": "identification_attempt",
    "attempt_at_error_identification": "identification_attempt",
    "identification": "identification_attempt",
    "accurate_identification": "identification_accurate",
    "identification_accuracy": "identification_accurate",
    "attempt_at_correction": "correction_attempt",
    "attempt_at_error_correction": "correction_attempt",
    "correction": "correction_attempt",
    "accurate_correction": "correction_accurate",
    "correction_accuracy": "correction_accurate",
    "error_guidance": "guidance",
}
_RATIONALE_KEYS = ("rationale", "reason", "reasoning", "explanation", "justification", "why")
_VALUE_KEYS = ("value", "label", "answer", "result", "verdict", "decision")


class VerdictParseError(ValueError):
    pass


@dataclass
class ParsedVerdict:
    labels: dict[str, bool]
    rationales: dict[str, str]
    note: str  # "json" | "lenient" (needed cleanup) ...


# -- parsing ----------------------------------------------------------------------------------


def _key(name: Any) -> str:
    text = re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_")
    return _LABEL_ALIASES.get(text, text)


def to_bool(value: Any) -> bool | None:
    """True/False from booleans, 0/1 and strings like "true", "Yes.", "no"; None if unclear."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".!\"'").strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        first = re.split(r"[\s,.;:()-]+", word, maxsplit=1)[0]
        if first in _TRUE:
            return True
        if first in _FALSE:
            return False
    return None


def _label_entry(value: Any) -> tuple[bool | None, str]:
    """One label's value in any of the accepted forms -> (bool or None, rationale)."""
    if isinstance(value, Mapping):
        norm = {_key(k): v for k, v in value.items()}
        rationale = next((str(norm[k]) for k in _RATIONALE_KEYS if k in norm), "")
        for k in _VALUE_KEYS:
            if k in norm:
                return to_bool(norm[k]), rationale
        bools = [v for v in norm.values() if isinstance(v, bool)]
        return (bools[0] if len(bools) == 1 else None), rationale
    if isinstance(value, (list, tuple)) and value:
        flag = to_bool(value[0])
        return flag, str(value[1]) if len(value) > 1 else ""
    return to_bool(value), ""


def _from_mapping(obj: Mapping[str, Any]) -> tuple[dict[str, bool], dict[str, str]] | None:
    norm = {_key(k): v for k, v in obj.items()}
    labels: dict[str, bool] = {}
    rationales: dict[str, str] = {}
    for label in JUDGE_LABELS:
        if label not in norm:
            continue
        flag, why = _label_entry(norm[label])
        if flag is None:
            continue
        labels[label] = flag
        if why:
            rationales[label] = why
    if len(labels) != len(JUDGE_LABELS):
        return None
    # flat forms: {"detection": true, "detection_rationale": "..."} or {"rationales": {...}}
    extra = norm.get("rationales") or norm.get("reasons") or {}
    for label in JUDGE_LABELS:
        if label in rationales:
            continue
        for key in (f"{label}_rationale", f"{label}_reason", f"{label}_explanation"):
            if key in norm:
                rationales[label] = str(norm[key])
        if isinstance(extra, Mapping):
            extra_norm = {_key(k): v for k, v in extra.items()}
            if label in extra_norm:
                rationales[label] = str(extra_norm[label])
    return labels, rationales


def _from_list(items: list[Any]) -> tuple[dict[str, bool], dict[str, str]] | None:
    """[{"label": "detection", "value": true, "rationale": "..."}, ...]"""
    merged: dict[str, Any] = {}
    for entry in items:
        if isinstance(entry, Mapping):
            norm = {_key(k): v for k, v in entry.items()}
            name = norm.get("label") or norm.get("name") or norm.get("criterion")
            if isinstance(name, str) and _key(name) in JUDGE_LABELS:
                merged[_key(name)] = {
                    k: v for k, v in norm.items() if k not in ("label", "name", "criterion")
                }
    return _from_mapping(merged) if merged else None


def _search(obj: Any, depth: int = 0) -> tuple[dict[str, bool], dict[str, str]] | None:
    """Find the six labels at the top or nested inside (e.g. {"verdict": {...}})."""
    if depth > 4:
        return None
    if isinstance(obj, Mapping):
        found = _from_mapping(obj)
        if found:
            return found
        for value in obj.values():
            found = _search(value, depth + 1)
            if found:
                return found
    elif isinstance(obj, list):
        found = _from_list(obj)
        if found:
            return found
        for value in obj:
            found = _search(value, depth + 1)
            if found:
                return found
    elif isinstance(obj, str) and obj.strip().startswith("{") and depth < 3:
        try:
            return _search(json.loads(obj), depth + 1)  # JSON encoded twice
        except json.JSONDecodeError:
            return None
    return None


def _candidates(text: str) -> list[tuple[Any, bool]]:
    """Decoded JSON values found in text, each with 'needed cleanup' flag."""
    out: list[tuple[Any, bool]] = []
    stripped = text.strip()
    try:
        out.append((json.loads(stripped), False))
    except (json.JSONDecodeError, ValueError):
        pass
    fences = re.findall(r"```(?:json|JSON)?\s*(.*?)```", text, flags=re.S)
    pieces = fences + [text]
    decoder = json.JSONDecoder()
    for piece in pieces:
        pos = 0
        while True:
            match = re.compile(r"[{\[]").search(piece, pos)
            if not match:
                break
            try:
                value, end = decoder.raw_decode(piece, match.start())
            except json.JSONDecodeError:
                pos = match.start() + 1
                continue
            out.append((value, True))  # trailing text after it is ignored
            pos = end
    # Python-literal dicts ({'detection': True}) and trailing commas, as a last resort
    for match in re.finditer(r"\{.*\}", text, flags=re.S):
        snippet = re.sub(r",\s*([}\]])", r"\1", match.group(0))
        try:
            out.append((json.loads(snippet), True))
        except json.JSONDecodeError:
            try:
                out.append((ast.literal_eval(snippet), True))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                pass
    return out


def parse_verdict(text: str | None) -> ParsedVerdict:
    """Six labels and rationales from a judge reply; raises VerdictParseError."""
    if not text or not text.strip():
        raise VerdictParseError("empty judge output")
    for value, cleaned in _candidates(text):
        found = _search(value)
        if found:
            labels, rationales = found
            return ParsedVerdict(labels, rationales, "lenient" if cleaned else "json")
    raise VerdictParseError("no JSON object with the six labels found in the judge output")


def inconsistent(labels: Mapping[str, bool | None]) -> bool:
    """An 'accurate' label true while its 'attempt' label is false (kept as is, only flagged)."""
    return any(bool(labels.get(acc)) and labels.get(att) is False for acc, att in LABEL_PAIRS)


# -- calling ----------------------------------------------------------------------------------


@dataclass
class _Call:
    messages: list[dict[str, str]]
    response_format: dict[str, Any] | None


def _empty_verdict(judge_model: str | None) -> dict[str, Any]:
    verdict: dict[str, Any] = {"judge_model": judge_model, "status": "failed"}
    verdict.update({label: None for label in JUDGE_LABELS})
    verdict.update(
        {
            "rationales": None,
            "raw": None,
            "parse_note": None,
            "inconsistent": None,
            "error": None,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "latency_ms": 0.0,
            "cost_usd": 0.0,
        }
    )
    return verdict


def _protocol(
    item: Mapping[str, Any],
    response_text: str,
    judge_model: str | None,
    use_schema: bool = True,
    server_key: tuple | None = None,
    template: str | int | None = None,
) -> Generator[_Call, Any, dict[str, Any]]:
    """The judge conversation as a generator: yields calls, receives ChatResult or exception.

    Driven by `judge_response` (the runner, rescore and the playground all judge through it).
    """
    verdict = _empty_verdict(judge_model)
    messages = prompts.judge_messages(item, response_text, template)
    if not use_schema:
        rung = len(FORMAT_LADDER) - 1
    else:
        rung = _ACCEPTED_RUNG.get(server_key, 0) if server_key is not None else 0
    fmt = FORMAT_LADDER[rung]
    notes: list[str] = []
    raws: list[str] = []

    def account(result: Any) -> None:
        verdict["prompt_tokens"] += int(getattr(result, "prompt_tokens", 0) or 0)
        verdict["completion_tokens"] += int(getattr(result, "completion_tokens", 0) or 0)
        verdict["latency_ms"] += float(getattr(result, "latency_ms", 0.0) or 0.0)
        verdict["cost_usd"] += float(getattr(result, "cost_usd", 0.0) or 0.0)

    result = yield _Call(messages, fmt)
    while isinstance(result, BaseException) and fmt is not None and _rejects_schema(result):
        # the server refuses this response_format: step down the ladder (the last rung is no
        # schema at all, parsed defensively) and remember the step for this server
        rung += 1
        fmt = FORMAT_LADDER[rung]
        if fmt is None:
            notes.append("no-schema")
        result = yield _Call(messages, fmt)
    if server_key is not None and not isinstance(result, BaseException):
        _ACCEPTED_RUNG[server_key] = rung
    if (
        isinstance(result, BaseException)
        and _context_exceeded(result)
        and len(response_text) > TRUNCATE_RESPONSE_CHARS
    ):
        # small-context servers (e.g. a llama.cpp server with a small per-slot context): judge the start of
        # a rambling response rather than nothing, and say so in parse_note
        notes.append("response-truncated")
        messages = prompts.judge_messages(
            item, _truncate(response_text, TRUNCATE_RESPONSE_CHARS), template
        )
        result = yield _Call(messages, fmt)
    if isinstance(result, BaseException):
        verdict["error"] = f"judge call failed: {_describe(result)}"
        verdict["parse_note"] = "+".join(notes) or None
        return verdict
    account(result)
    raws.append(result.text or "")
    try:
        parsed = parse_verdict(result.text)
        notes.append(("schema" if fmt else "plain") + ("" if parsed.note == "json" else "+lenient"))
    except VerdictParseError as first_error:
        # ONE repair retry: show the judge its own output and ask for valid JSON only
        repair = messages + [
            {"role": "assistant", "content": _truncate(result.text or "", REPAIR_ECHO_CHARS)},
            prompts.repair_message(template),
        ]
        retry = yield _Call(repair, fmt)
        if isinstance(retry, BaseException):
            verdict["raw"] = raws[0]
            verdict["error"] = (
                f"unparseable judge output ({first_error}); repair call failed: {_describe(retry)}"
            )
            verdict["parse_note"] = "+".join(notes + ["repair-failed"])
            return verdict
        account(retry)
        raws.append(retry.text or "")
        try:
            parsed = parse_verdict(retry.text)
            notes.append(("schema" if fmt else "plain") + "+repaired")
        except VerdictParseError as second_error:
            verdict["raw"] = _join_raws(raws)
            verdict["error"] = f"unparseable judge output after one repair retry: {second_error}"
            verdict["parse_note"] = "+".join(notes + ["unparseable"])
            return verdict
    verdict.update(parsed.labels)
    verdict["rationales"] = {label: parsed.rationales.get(label, "") for label in JUDGE_LABELS}
    verdict["raw"] = _join_raws(raws)
    verdict["parse_note"] = "+".join(notes)
    verdict["inconsistent"] = inconsistent(parsed.labels)
    verdict["status"] = "ok"
    return verdict


def _join_raws(raws: list[str]) -> str:
    if len(raws) == 1:
        return raws[0]
    return "\n".join(f"--- attempt {i + 1} ---\n{r}" for i, r in enumerate(raws))


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "http_status", None)
    last = getattr(exc, "last_error", None)
    text = str(last or exc) or type(exc).__name__
    return f"HTTP {status}: {text}" if status else text


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… truncated: {len(text) - limit} more characters]"


def _context_exceeded(exc: BaseException) -> bool:
    """A 400/413 saying the request does not fit the model's context window."""
    status = getattr(exc, "http_status", None)
    text = f"{getattr(exc, 'last_error', '')} {exc}".lower()
    return status in (400, 413, 422) and any(
        w in text
        for w in ("context size", "context length", "context window", "maximum context", "too long")
    )


def _rejects_schema(exc: BaseException) -> bool:
    """A 400/422 mentioning response_format/json_schema means: no schema support."""
    status = getattr(exc, "http_status", None)
    text = f"{getattr(exc, 'last_error', '')} {exc}".lower()
    return status in (400, 422) and any(
        w in text for w in ("response_format", "json_schema", "schema", "grammar")
    )


def _model_name(client: Any) -> str | None:
    endpoint = getattr(client, "endpoint", None)
    return getattr(endpoint, "model", None)


def _server_key(client: Any) -> tuple | None:
    endpoint = getattr(client, "endpoint", None)
    if endpoint is None:
        return None
    return (tuple(getattr(endpoint, "base_urls", ()) or ()), getattr(endpoint, "model", None))


async def judge_response(
    client: Any,
    item: Mapping[str, Any],
    response_text: str,
    *,
    max_tokens: int = JUDGE_MAX_TOKENS,
    use_schema: bool = True,
    template: str | int | None = None,
    **chat_kwargs: Any,
) -> dict[str, Any]:
    """Judge one response with a judge template (a full id such as 'misprompt/judge.v1';
    None = the default). Returns the verdict's columns (record.to_result makes the Result)."""
    gen = _protocol(
        item, response_text, _model_name(client), use_schema, _server_key(client), template
    )
    call = next(gen)
    while True:
        try:
            result: Any = await client.chat(
                call.messages,
                temperature=0.0,
                max_tokens=max_tokens,
                response_format=call.response_format,
                role="judge",
                **chat_kwargs,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # CallFailed and anything the client lets through
            result = exc
        try:
            call = gen.send(result)
        except StopIteration as stop:
            return stop.value
