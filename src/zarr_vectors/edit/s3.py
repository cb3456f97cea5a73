"""Committing an edit of a store on S3, where nothing can be renamed.

S3 writes one object atomically and nothing more: there is no rename and no multi-object
transaction, so an edit cannot swap a directory as it does locally.  An edit of the store at
``bucket/.../NAME`` therefore goes:

1. **Stage.** The complete new store is built by the ordinary write pipeline in a local
   scratch directory (many small writes: fast locally, slow as S3 requests); the files whose
   bytes differ from the live key of the same name (ETag = MD5) are uploaded under the
   sibling prefix ``.NAME.zv-staging-HOST-PID-RANDOM`` (parallel PUTs); the live store is not
   touched.  A failure or a kill here leaves the live store as it was.
2. **Journal.** The lease of the edit lock is renewed (:func:`~zarr_vectors.edit.lock.renew`:
   a writer whose lock was taken over stops here), then ``.NAME.zv-commit`` is written naming
   the staging prefix and every key of the new state.  From this object on the edit is
   committed: a writer killed later is rolled forward by the next editor.
3. **Publish.** The live root document is written without its ZVF attributes (the completion
   marker, docs/spec.md §13), so a reader opening the store from now on gets
   :class:`~zarr_vectors.errors.StoreNotFoundError` ("a write that did not finish") rather
   than a mix of old and new keys; after a grace period (:data:`READER_GRACE_S`, for reads
   that opened the store just before) keys that the new state lacks are deleted and the staged
   keys are copied over (server-side copies), chunks before array documents, deepest
   documents first, and the root document **last**: writing it is the point at which the new
   state becomes visible.
4. **Clean up.** The journal and the staging prefix are removed.

So a reader opening the store sees the old state, the new state, or a clear
``StoreNotFoundError`` while the publish runs (one copy request per changed key); it never
opens a mixed state.  A read that opened the store before the publish and still reads chunks
after the grace period can read new chunks under old metadata: long reads of an S3 store that
is being edited should use an Icechunk repository (true snapshots) instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zarr.core.sync import sync
from zarr.storage import FsspecStore

from zarr_vectors.core.placement import STAGING, run_tag
from zarr_vectors.edit.lock import held_remote_lock, renew
from zarr_vectors.errors import UnsupportedEditError

__all__ = [
    "JOURNAL",
    "LOCK",
    "READER_GRACE_S",
    "commit_s3",
    "is_s3",
    "live_path",
    "lock_object",
    "recover_s3",
]

LOCK = ".zv-lock"
JOURNAL = ".zv-commit"
READER_GRACE_S = 0.5
"""Seconds between hiding the old state and overwriting its first key."""

_ROOT_DOCS = ("zarr.json", ".zgroup", ".zattrs")
_METADATA = frozenset(("zarr.json", ".zarray", ".zgroup", ".zattrs"))
_PARALLEL = 16


def is_s3(store: Any) -> bool:
    """Whether ``store`` is an fsspec store on S3 (s3fs)."""
    if not isinstance(store, FsspecStore):
        return False
    protocol = store.fs.protocol
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return "s3" in names or "s3a" in names


def live_path(store: FsspecStore) -> str:
    """``bucket/prefix/NAME`` of an S3 store, refusing a store at a bucket's root."""
    path = str(store.path).strip("/")
    if "/" not in path:
        raise UnsupportedEditError(
            f"s3://{path}: a store at the root of a bucket cannot be edited (its lock and "
            "staging objects need a parent prefix); keep stores under a prefix"
        )
    return path


def _sibling(path: str, tag: str) -> str:
    parent, _, name = path.rpartition("/")
    return f"{parent}/.{name}{tag}"


def lock_object(path: str) -> str:
    """``bucket/.../.NAME.zv-lock``: the edit lock of the store at ``path``."""
    return _sibling(path, LOCK)


async def _get_json(fs: Any, path: str) -> Any:
    try:
        raw = await fs._cat_file(path)
    except FileNotFoundError:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


async def _etags(fs: Any, prefix: str) -> dict[str, str]:
    """``{key relative to prefix: ETag}`` of every object under ``prefix``."""
    fs.invalidate_cache(prefix)  # listings must be current: they decide what is deleted
    found = await fs._find(prefix, detail=True)
    return {
        p[len(prefix) + 1 :]: str(info.get("ETag", ""))
        for p, info in found.items()
        if p.startswith(prefix + "/")
    }


def _order(key: str) -> tuple[int, int, str]:
    """Copy order: chunks, then metadata documents deepest first, the root's last of all."""
    depth = key.count("/")
    if key in _ROOT_DOCS:
        return (2, _ROOT_DOCS.index(key), key)
    if key.rsplit("/", 1)[-1] in _METADATA:
        return (1, -depth, key)
    return (0, 0, key)


async def _gather(jobs: list[Any]) -> None:
    gate = asyncio.Semaphore(_PARALLEL)

    async def run(job: Any) -> None:
        async with gate:
            await job

    await asyncio.gather(*(run(j) for j in jobs))


async def _demote(fs: Any, live: str) -> None:
    """Remove the completion marker of the live store (its root ZVF attributes)."""
    doc = await _get_json(fs, f"{live}/zarr.json")
    if isinstance(doc, dict):
        doc["attributes"] = {}
        await fs._pipe_file(f"{live}/zarr.json", json.dumps(doc).encode())
    if await fs._exists(f"{live}/.zattrs"):
        await fs._pipe_file(f"{live}/.zattrs", b"{}")


async def _publish(fs: Any, staged: str, live: str, keys: set[str]) -> None:
    """Make the staged store the live one (steps 3 and 4 of the module notes).

    ``keys`` are all keys of the new state; the staging prefix holds those whose bytes differ
    from the live key of the same name (the others are already in place).
    """
    await _demote(fs, live)
    await asyncio.sleep(READER_GRACE_S)
    old = set(await _etags(fs, live))
    await _gather([fs._rm_file(f"{live}/{k}") for k in sorted(old - keys) if k not in _ROOT_DOCS])
    ranked = sorted(await _etags(fs, staged), key=_order)
    body = [k for k in ranked if _order(k)[0] == 0]
    docs = [k for k in ranked if _order(k)[0] == 1]
    await _gather([fs._cp_file(f"{staged}/{k}", f"{live}/{k}") for k in body])
    for depth in sorted({_order(k)[1] for k in docs}):  # deeper documents first
        level = [k for k in docs if _order(k)[1] == depth]
        await _gather([fs._cp_file(f"{staged}/{k}", f"{live}/{k}") for k in level])
    for k in (k for k in ranked if _order(k)[0] == 2):
        await fs._cp_file(f"{staged}/{k}", f"{live}/{k}")  # the root document: commit point
    for k in sorted(old & set(_ROOT_DOCS) - keys):
        await fs._rm_file(f"{live}/{k}")
    await _drop(fs, _sibling(live, JOURNAL))
    await _drop(fs, staged)


async def _drop(fs: Any, path: str) -> None:
    try:
        if await fs._isdir(path):
            await fs._rm(path, recursive=True)
        else:
            await fs._rm_file(path)
    except FileNotFoundError:
        pass


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


async def _upload(fs: Any, local: Path, staged: str, live: str) -> list[str]:
    """Upload the files of ``local`` that differ from the live store; return every key.

    A live object whose ETag is the MD5 of the new file already holds its bytes (a
    single-part upload's ETag is its MD5); root documents are always uploaded, since the
    publish rewrites them.
    """
    live_tags = await _etags(fs, live)
    keys, jobs = [], []
    for p in sorted(p for p in local.rglob("*") if p.is_file()):
        key = p.relative_to(local).as_posix()
        keys.append(key)
        if key in _ROOT_DOCS or live_tags.get(key, "").strip('"') != _md5(p):
            jobs.append(fs._put_file(str(p), f"{staged}/{key}"))
    await _gather(jobs)
    return keys


def commit_s3(store: FsspecStore, build: Callable[[str], None]) -> None:
    """Build the new state with ``build(scratch path)`` and publish it over ``store``.

    Must run under the store's edit lock (:func:`~zarr_vectors.edit.lock.remote_lock`).
    If ``build`` raises, the staging prefix is removed and the store is untouched.
    """
    fs = store.fs
    live = live_path(store)
    staged = _sibling(live, f"{STAGING}{run_tag()}")
    try:
        with tempfile.TemporaryDirectory(prefix="zv-edit-") as tmp:
            scratch = Path(tmp) / "store.zarr"
            build(str(scratch))
            keys = sync(_upload(fs, scratch, staged, live))
    except BaseException:
        sync(_drop(fs, staged))
        raise
    lock = held_remote_lock(lock_object(live))
    if lock is not None:
        try:
            renew(lock)
        except BaseException:
            sync(_drop(fs, staged))
            raise
    entry = {"staging": staged, "since": time.time(), "keys": keys}
    sync(fs._pipe_file(_sibling(live, JOURNAL), json.dumps(entry).encode()))
    sync(_publish(fs, staged, live, set(keys)))


async def _recover(fs: Any, live: str) -> bool:
    rolled = False
    entry = await _get_json(fs, _sibling(live, JOURNAL))
    if isinstance(entry, dict) and isinstance(entry.get("staging"), str):
        keys = entry.get("keys")
        if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
            # committed but not published: roll forward
            await _publish(fs, entry["staging"], live, set(keys))
            rolled = True
    await _drop(fs, _sibling(live, JOURNAL))
    parent, _, name = live.rpartition("/")
    stem = f"{parent}/.{name}{STAGING}"
    fs.invalidate_cache(parent)
    for path in await fs._glob(f"{stem}*"):
        await _drop(fs, path)  # we hold the lock: every other staging prefix is abandoned
    return rolled


def recover_s3(store: FsspecStore) -> bool:
    """Finish or discard an edit killed mid-way (lock held); return whether one was finished."""
    return bool(sync(_recover(store.fs, live_path(store))))
