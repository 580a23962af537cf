"""Items of the judged example: one JSON object a line, `{"id", "question", "error"}`; an
empty or missing `error` makes the question a control. Every line is checked before anything
is written; a bad one is reported as FILE:LINE: why."""

from __future__ import annotations

import json

import pandas as pd

from core.store import Store, replace_item_set

NAME = "judged"


def read_items(data: bytes, filename: str) -> pd.DataFrame:
    """The items of an upload, or a ValueError listing every bad line."""
    rows: list[dict[str, object]] = []
    problems: list[str] = []
    seen: set[str] = set()
    for n, line in enumerate(data.decode("utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{filename}:{n}: not JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict) or not str(obj.get("id") or "").strip():
            problems.append(f"{filename}:{n}: needs an object with an 'id'")
            continue
        item_id, question = str(obj["id"]).strip(), str(obj.get("question") or "").strip()
        if not question:
            problems.append(f"{filename}:{n}: empty question")
        elif item_id in seen:
            problems.append(f"{filename}:{n}: id {item_id!r} repeated")
        else:
            seen.add(item_id)
            error = str(obj.get("error") or "").strip()
            rows.append(
                {
                    "item_id": item_id,
                    "benchmark": NAME,
                    "prompt": question,
                    "is_error": bool(error),
                    "gold": error or None,
                    "primary_category": "planted error" if error else "control",
                }
            )
    if problems:
        raise ValueError("\n".join(problems))
    return pd.DataFrame(rows)


def import_bytes(store: Store, data: bytes, filename: str, name: str) -> int:
    """Import an upload as item set `name` (the CLI's `import judged` and the Import page)."""
    frame = read_items(data, filename).assign(item_set=name)
    store.transaction(lambda con: replace_item_set(con, name, NAME, frame, origin=filename))
    return len(frame)
