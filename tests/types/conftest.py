"""Fixtures and brute-force oracles shared by the path-type tests (polyline, streamline, line).

The oracles recompute, from the *input* paths and plain numpy, what a read must return
(FORMAT.md §2 half-open boxes, §7 whole objects, §8 object ids) and what the level arrays must
hold (§6 row order and ``cross_chunk_links``).  They never call the library.

Stores come from the package-wide ``store`` / ``zarr_format`` / ``store_factory`` fixtures
(``tests/conftest.py``); this file only adds the oracle.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import numpy.typing as npt
import pytest
import zarr
from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.errors import UnstableSpecificationWarning

from zarr_vectors.core.payload import rows as zv_rows
from zarr_vectors.core.payload import store_io as zv_store_io
from zarr_vectors.testing.stores import open_zip

AnyArray = npt.NDArray[Any]


def offsets_of(paths: Sequence[AnyArray]) -> AnyArray:
    """CSR offsets of a list of paths."""
    off = np.zeros(len(paths) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in paths], out=off[1:])
    return off


@contextlib.contextmanager
def plain_root(store: Any) -> Iterator[zarr.Group]:
    """Open a store's root with plain zarr, read-only (a ``.zip`` path becomes a ZipStore)."""
    if isinstance(store, str) and store.endswith(".zip"):
        zipped = open_zip(Path(store), "r")
        try:
            yield zarr.open_group(zipped, mode="r")
        finally:
            zipped.close()
    else:
        yield zarr.open_group(store, mode="r")


_DENSE_PARTS = ("/object_index/", "/vertex_counts/", "/object_attributes/", "/groupings")


def _is_dense_key(key: str) -> bool:
    """Whether ``key`` belongs to a dense (per-object or per-chunk table) array, not a payload."""
    return any(part in key for part in _DENSE_PARTS)


class PathOracle:
    """Brute-force expectations over input paths (static helpers, exposed as a fixture)."""

    # -- geometry -----------------------------------------------------------------------------

    @staticmethod
    def chunk_of(points: AnyArray, chunk_shape: Sequence[float]) -> AnyArray:
        """Chunk coordinates ``floor(p / C)`` (FORMAT.md §2), computed exactly in float64."""
        c = np.asarray(chunk_shape, dtype=np.float64)
        return np.floor(np.asarray(points, dtype=np.float64) / c).astype(np.int64)

    @staticmethod
    def inside(points: AnyArray, lo: Sequence[float], hi: Sequence[float]) -> AnyArray:
        """Rows with ``lo <= p < hi`` on every axis, compared in float64."""
        p = np.asarray(points, dtype=np.float64).reshape(len(points), -1)
        return np.all((p >= np.asarray(lo)) & (p < np.asarray(hi)), axis=1)

    @classmethod
    def touching(
        cls, paths: Sequence[AnyArray], lo: Sequence[float], hi: Sequence[float]
    ) -> list[int]:
        """Input indices of paths with at least one vertex in the box, ascending."""
        return [i for i, p in enumerate(paths) if len(p) and cls.inside(p, lo, hi).any()]

    @classmethod
    def runs(cls, path: AnyArray, lo: Sequence[float], hi: Sequence[float]) -> list[slice]:
        """Maximal runs of consecutive in-box vertices of one path."""
        out: list[slice] = []
        start = None
        for j, ok in enumerate(cls.inside(path, lo, hi).tolist()):
            if ok and start is None:
                start = j
            elif not ok and start is not None:
                out.append(slice(start, j))
                start = None
        if start is not None:
            out.append(slice(start, len(path)))
        return out

    # -- comparisons --------------------------------------------------------------------------

    @staticmethod
    def assert_identical(actual: Any, expected: Any, what: str) -> None:
        """Same shape, same dtype (strings: same labels) and bit-identical values."""
        a, e = np.asarray(actual), np.asarray(expected)
        if e.dtype.kind in "USO":
            assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
            assert [str(x) for x in a.ravel()] == [str(x) for x in e.ravel()], what
            return
        assert a.dtype == e.dtype, f"{what}: dtype {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
        a_bytes = np.ascontiguousarray(a).view(np.uint8)
        e_bytes = np.ascontiguousarray(e).view(np.uint8)
        assert np.array_equal(a_bytes, e_bytes), f"{what}: values differ\n{a!r}\n!=\n{e!r}"

    @classmethod
    def assert_columns(
        cls, actual: Mapping[str, Any], expected: Mapping[str, Any], what: str
    ) -> None:
        """Same names and identical values per name."""
        assert sorted(actual) == sorted(expected), f"{what}: names {sorted(actual)}"
        for name, values in expected.items():
            cls.assert_identical(actual[name], values, f"{what} {name!r}")

    # -- raw store access ---------------------------------------------------------------------

    @staticmethod
    def store_contents(store: Store) -> dict[str, Any]:
        """Every key of a store; JSON documents parsed, ``creation_timestamp`` dropped."""

        async def collect() -> dict[str, Any]:
            out: dict[str, Any] = {}
            proto = default_buffer_prototype()
            async for key in store.list():
                buf = await store.get(key, proto)
                assert buf is not None
                out[key] = buf.to_bytes()
            return out

        raw = sync(collect())
        for key, value in raw.items():
            if key.rsplit("/", 1)[-1] in ("zarr.json", ".zattrs", ".zgroup", ".zarray"):
                doc = json.loads(value)
                for holder in (doc, doc.get("attributes", {})):
                    if isinstance(holder, dict):
                        holder.pop("creation_timestamp", None)
                raw[key] = doc
        return raw

    @staticmethod
    def payloads(store: Any, path: str) -> tuple[dict[tuple[int, ...], AnyArray], AnyArray]:
        """Decode a per-chunk array with plain zarr: ``{chunk coords: (rows, width)}``, origin.

        Only chunks with vertices (``vertex_counts`` > 0) are fetched; empty payloads are left
        out.  Rows are decoded with the array's ``dtype``/``width`` attributes (§6).
        """
        with plain_root(store) as root, warnings.catch_warnings():
            warnings.simplefilter("ignore", UnstableSpecificationWarning)
            origin = np.asarray(root.attrs["chunk_grid"]["origin"], dtype=np.int64)  # type: ignore[index,call-overload]
            level = path.split("/", 1)[0]
            counts = np.asarray(root[f"{level}/vertex_counts"][...])  # type: ignore[index]
            filled = np.nonzero(counts)
            arr = root[path]
            assert isinstance(arr, zarr.Array)
            values = arr.get_coordinate_selection(filled) if filled[0].size else []
            dtype = np.dtype(str(arr.attrs["dtype"]))
            width = int(arr.attrs["width"])  # type: ignore[call-overload]
        out: dict[tuple[int, ...], AnyArray] = {}
        for k, blob in enumerate(np.asarray(values, dtype=object).ravel()):
            if len(blob):
                idx = np.array([axis[k] for axis in filled])
                coords = tuple(int(i) for i in idx + origin)
                out[coords] = np.frombuffer(blob, dtype=dtype).reshape(-1, width)
        return out, origin

    @staticmethod
    def model_rows(
        paths: Sequence[AnyArray], chunk_shape: Sequence[float]
    ) -> Iterator[tuple[int, int, tuple[int, ...], int]]:
        """Yield ``(object, vertex, chunk coords, row)`` per FORMAT.md §6 row order.

        Rows of a chunk are ordered by object id, each object's rows in traversal order.
        """
        next_row: dict[tuple[int, ...], int] = {}
        for i, path in enumerate(paths):
            chunks = PathOracle.chunk_of(path, chunk_shape)
            for j, c in enumerate(map(tuple, chunks.tolist())):
                row = next_row.get(c, 0)
                next_row[c] = row + 1
                yield i, j, c, row

    # -- whole-result checks ------------------------------------------------------------------

    @classmethod
    def assert_selection(
        cls,
        result: Any,
        paths: Sequence[AnyArray],
        sel: Sequence[int],
        *,
        ids: AnyArray,
        attributes: Mapping[str, AnyArray],
        object_attributes: Mapping[str, AnyArray],
        groups: Mapping[str, Sequence[int]],
        group_attributes: Mapping[str, AnyArray] | None,
    ) -> None:
        """A :class:`~zarr_vectors.Polylines` holds exactly input paths ``sel``, whole, in order.

        ``attributes`` are flat per input vertex; ``groups`` name input indices; ``ids`` are the
        ids a read reports per input path.  ``group_attributes=None`` skips that check.
        """
        sel = [int(i) for i in sel]
        ndim = paths[0].shape[1] if paths else result.positions.shape[1]
        assert result.object_ids.tolist() == np.asarray(ids)[sel].tolist(), "object ids"
        want = [paths[i] for i in sel]
        cls.assert_identical(result.offsets, offsets_of(want), "offsets")
        dtype = paths[0].dtype if paths else result.positions.dtype
        expected = np.concatenate(want) if want else np.zeros((0, ndim), dtype)
        cls.assert_identical(result.positions, expected, "positions")
        off = offsets_of(paths)
        rows = np.concatenate([np.arange(off[i], off[i + 1]) for i in sel] + [np.zeros(0, int)])
        rows = rows.astype(np.int64)
        cls.assert_columns(
            result.attributes, {k: v[rows] for k, v in attributes.items()}, "vertex attribute"
        )
        cls.assert_columns(
            result.object_attributes,
            {k: v[sel] for k, v in object_attributes.items()},
            "object attribute",
        )
        chosen = set(sel)
        assert sorted(result.groups) == sorted(groups), "group names"
        for g, members in groups.items():
            kept = [m for m in members if m in chosen]
            assert result.groups[g].tolist() == np.asarray(ids)[kept].tolist(), f"group {g!r}"
        if group_attributes is not None:
            cls.assert_columns(result.group_attributes, group_attributes, "group attribute")

    @classmethod
    def assert_clipped(
        cls,
        result: Any,
        paths: Sequence[AnyArray],
        lo: Sequence[float],
        hi: Sequence[float],
        *,
        ids: AnyArray,
        attributes: Mapping[str, AnyArray],
        object_attributes: Mapping[str, AnyArray],
    ) -> None:
        """A clipped read holds the maximal in-box runs of every path, in order."""
        off = offsets_of(paths)
        pieces = [
            (i, np.arange(off[i] + s.start, off[i] + s.stop))
            for i in range(len(paths))
            for s in cls.runs(paths[i], lo, hi)
        ]
        owners = [i for i, _ in pieces]
        assert result.object_ids.tolist() == np.asarray(ids)[owners].tolist(), "piece ids"
        lengths = np.array([len(r) for _, r in pieces], dtype=np.int64)
        cls.assert_identical(result.offsets, np.concatenate([[0], np.cumsum(lengths)]).astype(
            np.int64), "piece offsets")  # fmt: skip
        rows = np.concatenate([r for _, r in pieces] + [np.zeros(0, int)]).astype(np.int64)
        flat = np.concatenate(paths) if paths else result.positions[:0]
        cls.assert_identical(result.positions, flat[rows], "clipped positions")
        cls.assert_columns(
            result.attributes, {k: v[rows] for k, v in attributes.items()}, "clipped attribute"
        )
        cls.assert_columns(
            result.object_attributes,
            {k: v[owners] for k, v in object_attributes.items()},
            "clipped object attribute",
        )

    # -- on-disk layout -----------------------------------------------------------------------

    @classmethod
    def check_rows_and_links(
        cls, store: Any, paths: Sequence[AnyArray], chunk_shape: Sequence[float]
    ) -> None:
        """Vertices sit at their §6 rows; each chunk crossing has exactly one link record.

        A record is ``[chunk of a..., row of a, chunk of b..., row of b]`` for consecutive
        vertices ``a -> b`` of a path, stored in the chunk of ``a``; nothing else is stored.
        """
        d = len(chunk_shape)
        vertices, _ = cls.payloads(store, "0/vertices")
        where: dict[tuple[int, int], tuple[tuple[int, ...], int]] = {}
        rows_per_chunk: Counter[tuple[int, ...]] = Counter()
        for i, j, c, row in cls.model_rows(paths, chunk_shape):
            where[i, j] = (c, row)
            rows_per_chunk[c] += 1
            cls.assert_identical(vertices[c][row], paths[i][j], f"vertex {j} of path {i}")
        assert {c: len(v) for c, v in vertices.items()} == dict(rows_per_chunk)
        expected: Counter[tuple[tuple[int, ...], tuple[int, ...]]] = Counter()
        for i, path in enumerate(paths):
            for j in range(len(path) - 1):
                (ca, ra), (cb, rb) = where[i, j], where[i, j + 1]
                if ca != cb:
                    expected[ca, (*ca, ra, *cb, rb)] += 1
        with plain_root(store) as root, warnings.catch_warnings():
            warnings.simplefilter("ignore", UnstableSpecificationWarning)
            level = root["0"]
            assert isinstance(level, zarr.Group)
            present = "cross_chunk_links" in level
        got: Counter[tuple[tuple[int, ...], tuple[int, ...]]] = Counter()
        if present:
            links, _ = cls.payloads(store, "0/cross_chunk_links")
            for c, records in links.items():
                assert records.dtype == np.dtype("<i8")
                assert records.shape[1] == 2 * (d + 1)
                got.update((c, tuple(rec)) for rec in records.tolist())
        assert got == expected, "cross_chunk_links records"

    @staticmethod
    def chunk_keys(store: Any, arrays: Sequence[str], chunks: set[tuple[int, ...]]) -> set[str]:
        """Store keys of ``chunks`` (chunk coordinates) in level-0 per-chunk ``arrays``."""
        keys = set()
        with plain_root(store) as root, warnings.catch_warnings():
            warnings.simplefilter("ignore", UnstableSpecificationWarning)
            origin = np.asarray(root.attrs["chunk_grid"]["origin"])  # type: ignore[index,call-overload]
            for name in arrays:
                arr = root[f"0/{name}"]
                assert isinstance(arr, zarr.Array)
                for c in chunks:
                    idx = tuple(int(i) for i in np.asarray(c) - origin)
                    keys.add(f"0/{name}/{arr.metadata.encode_chunk_key(idx)}")
        return keys

    @staticmethod
    def payload_reads(read: Callable[[], Any]) -> list[str]:
        """Run ``read`` and return every payload key it fetched through the batched path."""
        seen: list[str] = []
        original = zv_store_io.get_many
        original_local = zv_rows.PayloadArray.decode_rows_local

        def spy(store: Any, keys: Sequence[str], *rest: Any) -> Any:
            seen.extend(keys)
            return original(store, keys, *rest)

        def spy_local(self: Any, flat: int, *args: Any) -> Any:  # local files, read in place
            seen.append(self._key(flat))
            return original_local(self, flat, *args)

        with (
            mock.patch.object(zv_store_io, "get_many", spy),
            mock.patch.object(zv_rows.PayloadArray, "decode_rows_local", spy_local),
        ):
            read()
        # dense index arrays (object manifests) use the same batched path; keep payloads only
        return [k for k in seen if not _is_dense_key(k)]

    @classmethod
    def check_single_object_reads(
        cls,
        store: Any,
        path: AnyArray,
        chunk_shape: Sequence[float],
        attribute_names: Sequence[str],
        read: Callable[[], Any],
    ) -> None:
        """``read`` (one object) fetches exactly the chunks of ``path``, each once."""
        chunks = {tuple(c) for c in cls.chunk_of(path, chunk_shape).tolist()}
        arrays = ["vertices", *(f"attributes/{a}" for a in attribute_names)]
        seen = cls.payload_reads(read)
        assert set(seen) == cls.chunk_keys(store, arrays, chunks)
        assert len(seen) == len(set(seen)), "a chunk was fetched twice"


@pytest.fixture(scope="session")
def path_oracle() -> type[PathOracle]:
    """The brute-force oracle (session scoped so hypothesis tests may use it)."""
    return PathOracle
