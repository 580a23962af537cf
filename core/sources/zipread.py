"""Reading zip members one at a time, Zstandard ones too.

Inspect AI writes `.eval` logs whose members are Zstandard-compressed (zip method 93) on
recent versions; Python 3.11's zipfile reads their directory but cannot open them. A member of
method 93 is read here from its local header and decompressed with the `zstandard` package
(pinned in requirements.txt), its CRC-32 checked as zipfile would; other members go through
zipfile. One member is in memory at a time, so a log of any size reads in bounded memory.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path
from typing import IO

from core.sources import SourceError

ZSTD = 93
_LOCAL = struct.Struct("<4s5HL2L2H")  # the local file header's fixed 30 bytes


def open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise SourceError(
            f"{path}: not a complete zip file ({exc}); an Inspect .eval log is a zip — was "
            "it truncated or still being written?"
        ) from None
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from None


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    """The member's bytes (a SourceError naming the file and member when it cannot be read)."""
    try:
        if info.compress_type != ZSTD:
            with zf.open(info) as handle:
                return handle.read()
        return _read_zstd(zf, info)
    except SourceError:
        raise
    except NotImplementedError as exc:
        raise SourceError(f"{path}: member {info.filename}: {exc}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, struct.error) as exc:
        raise SourceError(
            f"{path}: member {info.filename} cannot be read ({exc}); the file is damaged or "
            "truncated"
        ) from None


def _read_zstd(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    path = Path(str(zf.filename))
    try:
        import zstandard
    except ImportError:
        raise SourceError(
            f"{path}: member {info.filename} is Zstandard-compressed (zip method 93) and the "
            "zstandard package is not installed; `pip install -r requirements.txt` installs "
            "it. Nothing was written."
        ) from None
    handle: IO[bytes] = zf.fp  # type: ignore[assignment]
    handle.seek(info.header_offset)
    header = handle.read(_LOCAL.size)
    if len(header) < _LOCAL.size or header[:4] != b"PK\x03\x04":
        raise SourceError(f"{path}: member {info.filename}: no local header (damaged zip)")
    fields = _LOCAL.unpack(header)
    name_len, extra_len = fields[-2], fields[-1]
    handle.seek(info.header_offset + _LOCAL.size + name_len + extra_len)
    raw = handle.read(info.compress_size)
    if len(raw) < info.compress_size:
        raise SourceError(f"{path}: member {info.filename} is cut short (truncated file)")
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(raw), read_across_frames=True
        )
        data = reader.read()
    except zstandard.ZstdError as exc:
        raise SourceError(
            f"{path}: member {info.filename}: not valid Zstandard data ({exc})"
        ) from None
    if zlib.crc32(data) & 0xFFFFFFFF != info.CRC or len(data) != info.file_size:
        raise SourceError(
            f"{path}: member {info.filename} fails its CRC check (the file is damaged)"
        )
    return data
