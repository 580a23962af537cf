"""Issue 31, point 12: a damaged block in the middle of a DuckDB file. `dd` (the tool, not a
hand-made imitation) writes random bytes into one table's block; DuckDB opens the file and only
notices when that block is read, so an import that never reads it wrote into the damaged file
and exited 0. Every write now first checks the blocks' checksums: nothing is written, the
message names the blocks, their table and what `store copy` can still save."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import duckdb
import pytest

from core.store import DatabaseCorrupt, Store, blocks
from tests.conftest import ROOT
from tests.core_cli import run_core

SAMPLE = ROOT / "data" / "samples" / "misprompt_sample.csv"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _block_of(path: Path, table: str) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return int(
            con.execute(
                f"SELECT min(block_id) FROM pragma_storage_info('{table}') "
                "WHERE persistent AND block_id >= 0"
            ).fetchall()[0][0]
        )
    finally:
        con.close()


def _damage(path: Path, block: int) -> None:
    """`dd if=/dev/urandom … bs=4096 seek=S count=2 conv=notrunc`: 8 KiB of noise inside block
    `block` (past its 8-byte checksum), the file's length unchanged."""
    size = path.stat().st_size
    seek = (blocks.FILE_HEADERS_BYTES + block * blocks.BLOCK_SIZE) // 4096 + 1
    subprocess.run(
        ["dd", "if=/dev/urandom", f"of={path}", "bs=4096", f"seek={seek}", "count=2",
         "conv=notrunc", "status=none"],
        check=True,
    )  # fmt: skip
    assert path.stat().st_size == size


@pytest.fixture
def damaged(initialised_store: Store) -> tuple[Path, int]:
    """The published tables' block damaged (the long `published` table): an import never
    reads it."""
    path = initialised_store.path
    block = _block_of(path, "published")
    _damage(path, block)
    return path, block


@pytest.mark.parametrize(
    "argv",
    [
        ["import", "misprompt", str(SAMPLE), "--name", "more"],
        ["init"],
    ],
    ids=["import", "init"],
)
def test_a_damaged_block_is_found_before_any_write(damaged, argv):
    path, block = damaged
    before = _digest(path)
    done = run_core(*argv, "--db", str(path))
    assert done.returncode == 1, done
    err = done.stderr.strip()
    assert err.startswith(f"error: {path} is damaged: block {block} fails its checksum")
    assert "table published" in err and "nothing was written" in err
    assert "store copy" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in done.stderr
    assert _digest(path) == before  # not a byte written


def test_the_scan_finds_exactly_the_damaged_blocks(initialised_store, tmp_path):
    path = initialised_store.path
    assert blocks.damaged_blocks(path) == []  # an intact file, every used and free block
    items = _block_of(path, "items")
    _damage(path, items)
    assert blocks.damaged_blocks(path) == [items]
    with pytest.raises(DatabaseCorrupt, match=f"block {items} fails its checksum"):
        initialised_store.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")


def test_damage_in_no_table_is_copied_whole_by_store_copy(initialised_store, tmp_path):
    """A damaged free block holds no row: the message says `store copy` saves every row, and
    it does."""
    path = initialised_store.path
    store = initialised_store
    # free a block: a table written then dropped leaves its blocks free after a checkpoint
    store.execute(
        "CREATE TABLE scratch AS SELECT range AS x, repeat('y', 200) AS pad FROM range(200000)"
    )
    freed = _block_of(path, "scratch")
    store.execute("DROP TABLE scratch")
    con = duckdb.connect(str(path))
    con.execute("CHECKPOINT")
    con.close()
    _damage(path, freed)
    assert blocks.damaged_blocks(path) == [freed]
    done = run_core("import", "misprompt", str(SAMPLE), "--name", "more", "--db", str(path))
    assert done.returncode == 1
    assert "holds no table's rows" in done.stderr and "store copy" in done.stderr
    copy = tmp_path / "saved.duckdb"
    saved = run_core("store", "copy", "--from", str(path), "--to", str(copy))
    assert saved.returncode == 0, saved
    before = Store.open(path, create=False).scalar("SELECT count(*) FROM items")
    assert Store.open(copy, create=False).scalar("SELECT count(*) FROM items") == before
