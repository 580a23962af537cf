"""Damage inside a DuckDB file: every block's checksum, checked before a process first writes.

Why: DuckDB verifies a block's checksum only when it reads that block. A file with a damaged
block in the middle (`dd if=/dev/urandom … conv=notrunc`) opens fine; an import that never reads
the block wrote into the damaged file and exited 0, and a later reader failed. damage_probe
(database.py) catches a cut tail from the file's length; this catches the rest by reading the
blocks once: ~10 ms CPU and 25–70 ms wall for a 45 MB file of 200,000 responses on this shared
machine (bench/bench_store_probe.py), so it runs once per Store before its first write, not on
every flush.

The layout (DuckDB 1.4/1.5 storage, unencrypted): three 4 KiB file headers, then blocks of
`block_size` bytes, each an 8-byte checksum of the rest of the block followed by its data. The
checksum (duckdb/src/common/checksum.cpp): 5381 XOR, over the data as little-endian uint64
words, of each word × 0xbf58476d1ce4e5b9 (mod 2^64). A block of zeros is a hole DuckDB punched
into free space and holds nothing: skipped. If no block at all verifies, the layout is not the
one above (another storage version): nothing is claimed and DuckDB's own check remains.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from core.store import files

FILE_HEADERS_BYTES = 3 * 4096
BLOCK_SIZE = 262_144  # DuckDB's default block_size (pragma_database_size says the file's own)
_MULTIPLIER = np.uint64(0xBF58476D1CE4E5B9)
_SEED = np.uint64(5381)
_CHUNK_BLOCKS = 16  # read 4 MiB at a time


def damaged_blocks(
    path: Path, block_size: int = BLOCK_SIZE, total_blocks: int | None = None
) -> list[int]:
    """The ids of the blocks whose stored checksum does not match their data ([] when the
    file is intact, or when its layout is not one this module knows)."""
    bad: list[int] = []
    verified = 0
    words_per_block = block_size // 8
    with files.reading(path) as handle:  # not open(): it would drop DuckDB's lock on the file
        handle.seek(FILE_HEADERS_BYTES)
        block = 0
        while total_blocks is None or block < total_blocks:
            data = handle.read(block_size * _CHUNK_BLOCKS)
            whole = len(data) // block_size
            if not whole:
                break
            words = np.frombuffer(data, dtype="<u8", count=whole * words_per_block).reshape(
                whole, words_per_block
            )
            with np.errstate(over="ignore"):
                sums = np.bitwise_xor.reduce(words[:, 1:] * _MULTIPLIER, axis=1) ^ _SEED
            stored = words[:, 0]
            empty = ~words.any(axis=1)
            for n in np.flatnonzero((sums != stored) & ~empty):
                if total_blocks is None or block + int(n) < total_blocks:
                    bad.append(block + int(n))
            verified += int(((sums == stored) & ~empty).sum())
            block += whole
    return bad if verified else []


def tables_in_blocks(con: Any, ids: list[int]) -> list[str]:
    """The tables with column data stored in any of these blocks (from pragma_storage_info)."""
    tables = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND NOT temporary ORDER BY 1"
        ).fetchall()
    ]
    wanted = set(ids)
    hit = []
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        try:
            rows = con.execute(
                "SELECT DISTINCT unnest(list_prepend(block_id, "
                "coalesce(additional_block_ids, []))) "
                "FROM pragma_storage_info(?) WHERE persistent",
                [quoted],
            ).fetchall()
        except duckdb.Error:  # its own metadata sits in a damaged block: it is hit too
            hit.append(table)
            continue
        if wanted & {int(r[0]) for r in rows if r[0] is not None}:
            hit.append(table)
    return hit


def damage_message(path: Path, ids: list[int], block_size: int, tables: list[str]) -> str:
    """One line: which blocks, where, in which tables, that nothing was written, and what
    `store copy` can still save."""
    shown = ", ".join(str(b) for b in ids[:5]) + (
        f" and {len(ids) - 5} more" if len(ids) > 5 else ""
    )
    first = FILE_HEADERS_BYTES + ids[0] * block_size
    head = (
        f"{path} is damaged: block {shown} fails its checksum"
        if len(ids) == 1
        else f"{path} is damaged: blocks {shown} fail their checksums"
    ) + f" (from byte {first:,})"
    if tables:
        where = f"table {tables[0]}" if len(tables) == 1 else "tables " + ", ".join(tables)
        save = (
            f", in {where}; nothing was written to it. `python -m core store copy` copies a "
            f"whole store or nothing, so it cannot save this one while {where} cannot be read; "
            "the other tables still read (copy them out with DuckDB, e.g. `COPY items TO "
            "'items.parquet'`), or restore a backup."
        )
    else:
        save = (
            ", which holds no table's rows (free space or an index); nothing was written to it. "
            f"`python -m core store copy --from {path} --to NEW.duckdb` can still save every "
            "row into a new file (it changes nothing if it cannot read one); then use that file."
        )
    return head + save
