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
from typing import IO, Any, cast

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


class _Slice:
    """`size` bytes of a file from `offset` on, read in pieces (a member's compressed data)."""

    def __init__(self, handle: IO[bytes], offset: int, size: int) -> None:
        self.handle, self.offset, self.left = handle, offset, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.handle.seek(self.offset)
        data = self.handle.read(n)
        self.offset += len(data)
        self.left -= len(data)
        return data


class _Checked:
    """A member's decompressed stream, its CRC-32 and size checked when it ends; every read
    error a SourceError naming the file and member."""

    def __init__(self, raw: Any, info: zipfile.ZipInfo, path: Path) -> None:
        self.raw, self.info, self.path = raw, info, path
        self.crc = self.size = 0

    def read(self, n: int = -1) -> bytes:
        name = self.info.filename
        try:
            data: bytes = self.raw.read(n)
        except SourceError:
            raise
        except Exception as exc:  # zstandard.ZstdError, zipfile.BadZipFile, zlib.error...
            raise SourceError(
                f"{self.path}: member {name} cannot be read ({exc}); the file is damaged or "
                "truncated"
            ) from None
        if data:  # (an empty read(0) is ijson asking bytes or text, not the end)
            self.crc = zlib.crc32(data, self.crc)
            self.size += len(data)
        elif n and (self.crc & 0xFFFFFFFF != self.info.CRC or self.size != self.info.file_size):
            raise SourceError(
                f"{self.path}: member {name} fails its CRC check (the file is damaged)"
            )
        return data


def member_stream(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> _Checked:
    """The member as a stream of its decompressed bytes (read_member's checks, never the whole
    member in memory): for a member that can be big, such as a journal's summary chunk."""
    if info.compress_type != ZSTD:
        try:
            return _Checked(zf.open(info), info, path)
        except NotImplementedError as exc:
            raise SourceError(f"{path}: member {info.filename}: {exc}") from None
        except (zipfile.BadZipFile, OSError) as exc:
            raise SourceError(f"{path}: member {info.filename} cannot be read ({exc})") from None
    try:
        import zstandard
    except ImportError:
        _read_zstd(zf, info)  # its message: the codec is missing
        raise
    handle: IO[bytes] = zf.fp  # type: ignore[assignment]
    handle.seek(info.header_offset)
    header = handle.read(_LOCAL.size)
    if len(header) < _LOCAL.size or header[:4] != b"PK\x03\x04":
        raise SourceError(f"{path}: member {info.filename}: no local header (damaged zip)")
    fields = _LOCAL.unpack(header)
    start = info.header_offset + _LOCAL.size + fields[-2] + fields[-1]
    raw = zstandard.ZstdDecompressor().stream_reader(
        cast(IO[bytes], _Slice(handle, start, info.compress_size)), read_across_frames=True
    )
    return _Checked(raw, info, path)
