"""The OpenAI `response_format` of a structured template's request, written once: a JSON
schema (strict) of one object with one required key, as the structured templates ask."""

from __future__ import annotations

from typing import Any


def one_key_format(name: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    """`response_format` asking for `{key: <value>}` and nothing else, the schema named `name`
    (e.g. value `{"type": "integer", "minimum": -1}`)."""
    schema = {
        "type": "object",
        "properties": {key: value},
        "required": [key],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
