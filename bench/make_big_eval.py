"""Write a big Inspect AI `.eval` log fast, from a real one's members (for the import benches).

    .venv/bin/python bench/make_big_eval.py N OUT [--source tests/data/tools/inspect/first_error_a.eval]

Why: Inspect's own recorder (`tests/data/tools/make_fixtures.py --big`) needs Inspect's venv and
~40 minutes for 100,000 samples; the memory bench wants logs of several sizes. This copies the
source log's members as Inspect wrote them — each sample member with a new id
(`<id>~<copy>`, epochs kept) and uuid, the journal's summary chunks (one every N // 20
samples, as a flushing recorder writes them), `summaries.json`, `reductions.json`,
`header.json` with the dataset's size — every member Zstandard-compressed (zip method 93) as
recent Inspect writes them. Python's zipfile cannot write method 93: members are written
stored and their headers patched to method 93 with the real CRC and size.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import zstandard

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.sources.zipread import read_member  # noqa: E402

ZSTD = 93


def write_log(n: int, out: Path, source: Path) -> None:
    with zipfile.ZipFile(source) as zf:

        def member(name: str) -> Any:
            return json.loads(read_member(zf, zf.getinfo(name), source))

        names = [i.filename for i in zf.infolist()]
        base = [member(x) for x in names if x.startswith("samples/")]
        header = member("header.json")
        start = member("_journal/start.json")
        reductions = read_member(zf, zf.getinfo("reductions.json"), source)
    summaries = {
        (s["id"], s["epoch"]): s
        for chunk in [x for x in names if x.startswith("_journal/summaries/")]
        for s in _load(source, chunk)
    }
    base.sort(key=lambda s: (s["epoch"], str(s["id"])))
    epochs = max(s["epoch"] for s in base)
    per_epoch = [s for s in base if s["epoch"] == 1]
    n_ids = -(-n // epochs)
    compressor = zstandard.ZstdCompressor(level=3)
    patches: list[tuple[zipfile.ZipInfo, int, int]] = []  # (info, crc, size) of real data
    out.unlink(missing_ok=True)
    every = max(10, n // 20)
    chunk: list[dict[str, Any]] = []
    all_summaries: list[dict[str, Any]] = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as zw:

        def put(name: str, data: bytes) -> None:
            info = zipfile.ZipInfo(name, date_time=(2026, 12, 4, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            zw.writestr(info, compressor.compress(data))
            patches.append((zw.getinfo(name), zlib.crc32(data) & 0xFFFFFFFF, len(data)))

        put("_journal/start.json", json.dumps(start).encode())
        flushed = 0
        for i in range(n):
            epoch = 1 + i // n_ids
            k = i % n_ids
            src = per_epoch[k % len(per_epoch)]
            sample = (
                next(s for s in base if s["id"] == src["id"] and s["epoch"] == epoch)
                if (epochs > 1)
                else src
            )
            new_id = f"{src['id']}~{k // len(per_epoch)}"
            sample = {**sample, "id": new_id, "uuid": f"u{i:09d}"}
            put(f"samples/{new_id}_epoch_{epoch}.json", json.dumps(sample).encode())
            summary = {**summaries[(src["id"], sample["epoch"])], "id": new_id}
            chunk.append(summary)
            all_summaries.append(summary)
            if len(chunk) >= every:
                flushed += 1
                put(f"_journal/summaries/{flushed}.json", json.dumps(chunk).encode())
                chunk = []
        if chunk:
            put(f"_journal/summaries/{flushed + 1}.json", json.dumps(chunk).encode())
        put("summaries.json", json.dumps(all_summaries).encode())
        put("reductions.json", reductions)
        header["eval"]["dataset"]["samples"] = n_ids
        header["eval"]["dataset"]["sample_ids"] = [
            f"{s['id']}~{k // len(per_epoch)}"
            for k, s in ((k, per_epoch[k % len(per_epoch)]) for k in range(n_ids))
        ]
        header["eval"]["eval_id"] = f"big{n}"
        results = header.get("results") or {}
        results["total_samples"] = results["completed_samples"] = n_ids
        put("header.json", json.dumps(header).encode())
        for info, crc, size in patches:  # the central directory: method 93, real CRC, size
            info.compress_type, info.CRC, info.file_size = ZSTD, crc, size
    with open(out, "r+b") as handle:  # the local headers likewise
        for info, crc, size in patches:
            handle.seek(info.header_offset + 8)
            handle.write(struct.pack("<H", ZSTD))
            handle.seek(info.header_offset + 14)
            handle.write(struct.pack("<L", crc))
            handle.seek(info.header_offset + 22)
            handle.write(struct.pack("<L", size))


def _load(source: Path, name: str) -> list[dict[str, Any]]:
    with zipfile.ZipFile(source) as zf:
        data: list[dict[str, Any]] = json.loads(read_member(zf, zf.getinfo(name), source))
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--source", type=Path, default=ROOT / "tests/data/tools/inspect/first_error_a.eval"
    )
    args = parser.parse_args()
    started = time.monotonic()
    write_log(args.n, args.out, args.source)
    size = args.out.stat().st_size / 1e6
    print(
        f"wrote {args.n} samples to {args.out}: {size:.1f} MB in {time.monotonic() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
