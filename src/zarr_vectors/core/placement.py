"""Where a write builds a store and how the finished store is put in place (docs/spec.md §13).

Local directories are always built in a hidden sibling staging directory and renamed into place
when complete, so no reader ever sees half a store and of two writers racing for one new path
exactly one wins: renaming a directory onto a non-empty one fails on every POSIX system and on
Windows.  An overwrite exchanges the staging directory with the old store in one
``renameat2(RENAME_EXCHANGE)`` call where the kernel offers it (Linux), else in two renames.

Every temporary name carries the host and process id of its writer
(``.NAME.zv-staging-HOST-PID-RANDOM``, ``.NAME.zv-old-HOST-PID-RANDOM``, ``zv-spill-HOST-PID-...``)
so a later run can tell the leftovers of a killed writer (same host, process gone) from the work
of a writer still running, and remove only the former.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import shutil
import socket
import tempfile
import time
import uuid
from enum import Enum
from pathlib import Path

from zarr_vectors.errors import StoreExistsError

__all__ = [
    "LEGACY_AGE_S",
    "OLD",
    "SPILL",
    "STAGING",
    "Occupant",
    "abandoned",
    "abandoned_name",
    "classify_dir",
    "commit_new",
    "leftovers",
    "make_spill_dir",
    "overlapping",
    "remove_abandoned",
    "run_tag",
    "spill_leftovers",
    "staging_dir",
    "swap_in",
]

STAGING = ".zv-staging-"
OLD = ".zv-old-"
SPILL = "zv-spill-"
LEGACY_AGE_S = 24 * 3600.0
"""Leftovers named without host and process (older releases) count as abandoned after a day."""

_RENAME_EXCHANGE = 2


class Occupant(Enum):
    """What a location holds, as far as replacing it is concerned."""

    NOTHING = "nothing"
    """Absent, or an empty directory."""
    ZVF = "zvf"
    """A ZVF store (root attributes carry ``zarr_vectors_version``)."""
    OTHER = "other"
    """Anything else: a file, a plain Zarr hierarchy, the user's own files."""


def run_tag() -> str:
    """``HOST-PID-RANDOM``: names this writer's temporary files (dashes in HOST become ``_``)."""
    host = socket.gethostname().replace("-", "_") or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def staging_dir(final: Path) -> Path:
    """Return a fresh staging directory name next to ``final`` (not created)."""
    return final.parent / f".{final.name}{STAGING}{run_tag()}"


def _old_dir(final: Path) -> Path:
    return final.parent / f".{final.name}{OLD}{run_tag()}"


def classify_dir(path: Path) -> Occupant:
    """Say whether ``path`` is absent/empty, a ZVF store, or something else."""
    if not path.exists() and not path.is_symlink():
        return Occupant.NOTHING
    if path.is_symlink() or not path.is_dir():
        return Occupant.OTHER
    if not any(path.iterdir()):
        return Occupant.NOTHING
    for name, nested in (("zarr.json", True), (".zattrs", False)):
        doc = _read_json(path / name)
        attrs = doc.get("attributes") if nested and isinstance(doc, dict) else doc
        if isinstance(attrs, dict) and "zarr_vectors_version" in attrs:
            return Occupant.ZVF
    return Occupant.OTHER


def _read_json(path: Path) -> object:
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def commit_new(staged: Path, final: Path, where: str) -> None:
    """Rename the complete ``staged`` store to the new location ``final``, exclusively.

    Raises
    ------
    StoreExistsError
        Something other than an empty directory appeared at ``final`` meanwhile (another writer
        won the race); ``staged`` is removed and ``final`` left as it is.
    """
    try:
        os.rename(staged, final)
    except OSError as exc:
        shutil.rmtree(staged, ignore_errors=True)
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise StoreExistsError(
                f"{where} already holds data (another writer created it first); "
                "pass overwrite=True to replace it"
            ) from exc
        raise


def swap_in(staged: Path, final: Path) -> None:
    """Replace the store ``final`` by the complete ``staged`` one (old data kept until then)."""
    if _exchange(staged, final):
        shutil.rmtree(staged, ignore_errors=True)  # now holds the old store
        return
    for _ in range(8):  # another overwriter may put its store in between: last one wins
        trash = _old_dir(final)
        with contextlib.suppress(FileNotFoundError):
            final.rename(trash)
        try:
            staged.rename(final)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            continue
        finally:
            shutil.rmtree(trash, ignore_errors=True)
        return
    raise StoreExistsError(f"{final} kept being replaced by other writers; nothing was swapped in")


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two directories with ``renameat2``; False where unsupported."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None or not b.is_dir():
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    at_fdcwd = -100
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(rc == 0)


def overlapping(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are the same path or one lies inside the other.

    Both are resolved first (``..`` and symbolic links), so ``src/0/..`` is ``src``.
    """
    ra, rb = a.resolve(), b.resolve()
    return ra == rb or ra.is_relative_to(rb) or rb.is_relative_to(ra)


def leftovers(final: Path) -> list[Path]:
    """Staging and old-swap directories of any writer next to ``final``, sorted."""
    parent = final.parent
    if not parent.is_dir():
        return []
    stem = f".{final.name}"
    return sorted(
        p
        for p in parent.iterdir()
        if p.name.startswith(stem + STAGING) or p.name.startswith(stem + OLD)
    )


def abandoned(path: Path) -> bool:
    """Whether a temporary directory belongs to a writer that is gone.

    Its name ends in ``HOST-PID-RANDOM``: abandoned when HOST is this machine and no process
    PID runs.  Other hosts' work is never judged; names without host and process (older
    releases) count as abandoned after :data:`LEGACY_AGE_S`.
    """
    verdict = abandoned_name(path.name)
    if verdict is not None:
        return verdict
    try:
        return time.time() - path.lstat().st_mtime > LEGACY_AGE_S
    except OSError:
        return False


def abandoned_name(name: str) -> bool | None:
    """Judge a temporary name by its ``HOST-PID-RANDOM`` tail; None if it has none."""
    parts = name.rsplit("-", 3)
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    if parts[1] != (socket.gethostname().replace("-", "_") or "host"):
        return False
    return not _pid_alive(int(parts[2]))


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name != "posix":
        return True  # no cheap liveness test: keep it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_abandoned(paths: list[Path]) -> list[Path]:
    """Remove the abandoned ones of ``paths``; return those removed."""
    gone = []
    for p in paths:
        if abandoned(p):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            gone.append(p)
    return gone


def spill_leftovers(spill_dir: Path) -> list[Path]:
    """Spill directories of any writer in ``spill_dir``."""
    if not spill_dir.is_dir():
        return []
    return sorted(p for p in spill_dir.iterdir() if p.name.startswith(SPILL) and p.is_dir())


def make_spill_dir(spill_dir: str | os.PathLike[str] | None) -> Path:
    """Create a spill directory in ``spill_dir`` (default: the system temp directory).

    Spill directories of killed writers found there are removed first.
    """
    base = Path(tempfile.gettempdir() if spill_dir is None else spill_dir)
    remove_abandoned(spill_leftovers(base))
    path = base / f"{SPILL}{run_tag()}"
    path.mkdir(mode=0o700, parents=True)
    return path
