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
from collections.abc import Iterator
from dataclasses import dataclass
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


# -- the central directory, one entry at a time -----------------------------------------------
#
# zipfile.ZipFile keeps a ZipInfo of every member (~0.6 KB each: 59 MB for a 100,000-sample
# Inspect log) while it is open; a big log's import reads the directory as a stream instead.

_EOCD = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")


@dataclass(frozen=True, slots=True)
class Entry:
    """What reading a member needs of its central directory record."""

    name: str
    method: int
    crc: int
    compress_size: int
    file_size: int
    header_offset: int


def _directory(path: Path, handle: IO[bytes]) -> tuple[int, int]:
    """(offset, number of entries) of the central directory (zip64 too)."""
    handle.seek(0, 2)
    size = handle.tell()
    tail_at = max(0, size - (_EOCD.size + 65535))
    handle.seek(tail_at)
    tail = handle.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        raise SourceError(
            f"{path}: not a complete zip file (no end of central directory); an Inspect .eval "
            "log is a zip — was it truncated or still being written?"
        )
    _, _, _, _, count, _, offset, _ = _EOCD.unpack_from(tail, at)
    if count == 0xFFFF or offset == 0xFFFFFFFF:
        locator = tail[at - _ZIP64_LOCATOR.size : at] if at >= _ZIP64_LOCATOR.size else b""
        if len(locator) < _ZIP64_LOCATOR.size or locator[:4] != b"PK\x06\x07":
            raise SourceError(f"{path}: not a complete zip file (damaged zip64 directory)")
        handle.seek(_ZIP64_LOCATOR.unpack(locator)[2])
        record = handle.read(_ZIP64_EOCD.size)
        if len(record) < _ZIP64_EOCD.size or record[:4] != b"PK\x06\x06":
            raise SourceError(f"{path}: not a complete zip file (damaged zip64 directory)")
        fields = _ZIP64_EOCD.unpack(record)
        count, offset = fields[7], fields[9]
    return offset, count


def entries(path: Path) -> Iterator[Entry]:
    """The members' central directory records in order, read as a stream (one in memory at a
    time); a SourceError naming the file when the directory is damaged or cut."""
    try:
        with open(path, "rb") as raw:
            offset, count = _directory(path, raw)
            raw.seek(offset)
            handle = io.BufferedReader(raw, 1 << 16)
            for _ in range(count):
                head = handle.read(_CENTRAL.size)
                if len(head) < _CENTRAL.size or head[:4] != b"PK\x01\x02":
                    raise SourceError(
                        f"{path}: not a complete zip file (damaged central directory)"
                    )
                f = _CENTRAL.unpack(head)
                flags, method, crc, csize, usize = f[5], f[6], f[9], f[10], f[11]
                name_len, extra_len, comment_len, local = f[12], f[13], f[14], f[18]
                raw_name = handle.read(name_len)
                extra = handle.read(extra_len)
                handle.read(comment_len)
                name = raw_name.decode("utf-8" if flags & 0x800 else "cp437")
                if 0xFFFFFFFF in (csize, usize, local):
                    usize, csize, local = _zip64_extra(extra, usize, csize, local)
                yield Entry(name, method, crc, csize, usize, local)
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from None


def _zip64_extra(extra: bytes, usize: int, csize: int, local: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<2H", extra, at)
        if kind == 1:
            values = list(struct.unpack_from(f"<{size // 8}Q", extra, at + 4))
            if usize == 0xFFFFFFFF and values:
                usize = values.pop(0)
            if csize == 0xFFFFFFFF and values:
                csize = values.pop(0)
            if local == 0xFFFFFFFF and values:
                local = values.pop(0)
            break
        at += 4 + size
    return usize, csize, local


def read_entry(handle: IO[bytes], entry: Entry, path: Path) -> bytes:
    """A member's bytes, by its directory record (stored, deflated or Zstandard), CRC checked."""
    handle.seek(entry.header_offset)
    header = handle.read(_LOCAL.size)
    if len(header) < _LOCAL.size or header[:4] != b"PK\x03\x04":
        raise SourceError(f"{path}: member {entry.name}: no local header (damaged zip)")
    fields = _LOCAL.unpack(header)
    handle.seek(entry.header_offset + _LOCAL.size + fields[-2] + fields[-1])
    raw = handle.read(entry.compress_size)
    if len(raw) < entry.compress_size:
        raise SourceError(f"{path}: member {entry.name} is cut short (truncated file)")
    try:
        if entry.method == zipfile.ZIP_STORED:
            data = raw
        elif entry.method == zipfile.ZIP_DEFLATED:
            data = zlib.decompress(raw, -15)
        elif entry.method == ZSTD:
            try:
                import zstandard
            except ImportError:
                raise SourceError(
                    f"{path}: member {entry.name} is Zstandard-compressed (zip method 93) and "
                    "the zstandard package is not installed; `pip install -r requirements.txt` "
                    "installs it. Nothing was written."
                ) from None
            data = (
                zstandard.ZstdDecompressor()
                .stream_reader(io.BytesIO(raw), read_across_frames=True)
                .read()
            )
        else:
            raise SourceError(
                f"{path}: member {entry.name}: compression method {entry.method} is not supported"
            )
    except SourceError:
        raise
    except Exception as exc:  # zlib.error, zstandard.ZstdError
        raise SourceError(
            f"{path}: member {entry.name} cannot be read ({exc}); the file is damaged or truncated"
        ) from None
    if zlib.crc32(data) & 0xFFFFFFFF != entry.crc or len(data) != entry.file_size:
        raise SourceError(f"{path}: member {entry.name} fails its CRC check (the file is damaged)")
    return data


def entry_stream(handle: IO[bytes], entry: Entry, path: Path) -> _Checked:
    """A member as a stream of its decompressed bytes (a Zstandard one never whole in memory;
    read_entry's checks): for a member that can be big, such as a journal's summary chunk."""
    if entry.method != ZSTD:
        data = read_entry(handle, entry, path)
        return _Checked(io.BytesIO(data), _info(entry), path)
    try:
        import zstandard
    except ImportError:
        read_entry(handle, entry, path)  # its message: the codec is missing
        raise
    handle.seek(entry.header_offset)
    header = handle.read(_LOCAL.size)
    if len(header) < _LOCAL.size or header[:4] != b"PK\x03\x04":
        raise SourceError(f"{path}: member {entry.name}: no local header (damaged zip)")
    fields = _LOCAL.unpack(header)
    start = entry.header_offset + _LOCAL.size + fields[-2] + fields[-1]
    raw = zstandard.ZstdDecompressor().stream_reader(
        cast(IO[bytes], _Slice(handle, start, entry.compress_size)), read_across_frames=True
    )
    return _Checked(raw, _info(entry), path)


def _info(entry: Entry) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(entry.name)
    info.CRC, info.file_size = entry.crc, entry.file_size
    return info
