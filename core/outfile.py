"""Writing an output file whole or not at all (`write_atomic`), and the one error an export
raises (`ExportError`, a line naming the file and what to do).

Why a module of its own, below the services and the sources: the generic export
(core/services/export.py) and the format writers it hands a run to (core/sources/eee_export.py)
both write this way; kept here, neither has to import the other's layer to do so."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path


class ExportError(ValueError):
    """A refused or failed export; the message names the file and what to do."""


def write_atomic(path: Path, data: bytes) -> None:
    """Write a temporary file next to `path`, then rename it over `path` (os.replace): a reader
    sees the old file or the whole new one, and a failure (disk full...) leaves no partial file."""
    parent = path.resolve().parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {_os_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; an export is an ordinary file
        os.replace(tmp, path.resolve() if path.is_symlink() else path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ExportError(
                f"cannot write {path}: {_os_reason(exc)}; nothing was written"
            ) from None
        raise


def _os_reason(exc: OSError) -> str:
    """The OS's reason in words, with a hint for the common ones."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return f"{reason} (free some space or write elsewhere)"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{reason} (choose a folder you can write to)"
    return reason
