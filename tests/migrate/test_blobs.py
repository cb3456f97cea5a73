"""Upstream payload decoders against a plain encoder written from the documented layout."""

from __future__ import annotations

import itertools
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.migrate.blobs import (
    decode_cross_records,
    decode_fragments,
    decode_manifest,
    decode_neighbour_links,
    permutation,
)

# a fragment is ("range", start, count) or ("explicit", [rows])
fragment = st.one_of(
    st.tuples(st.just("range"), st.integers(0, 1000), st.integers(0, 50)),
    st.tuples(st.just("explicit"), st.lists(st.integers(0, 1000), max_size=6)),
)


def encode_fragments(frags: list[tuple]) -> bytes:
    """Header, LSB-first range bitmap padded to 8 bytes, range table, CSR of explicit rows."""
    ranges = [f for f in frags if f[0] == "range"]
    explicit = [f[1] for f in frags if f[0] == "explicit"]
    out = struct.pack("<IHHII", 0x5A564647, 1, 0, len(frags), len(ranges))
    bitmap = bytearray(-(-len(frags) // 8))
    for i, f in enumerate(frags):
        if f[0] == "range":
            bitmap[i // 8] |= 1 << (i % 8)
    out += bytes(bitmap) + bytes(-len(bitmap) % 8)
    for _, start, count in ranges:
        out += struct.pack("<qq", start, count)
    if frags:
        offsets = np.cumsum([0] + [len(e) for e in explicit])
        out += struct.pack(f"<{len(offsets)}I", *offsets.tolist())
        for rows in explicit:
            out += struct.pack(f"<{len(rows)}q", *rows)
    return out


@given(st.lists(fragment, max_size=20))
def test_fragments_match_a_plain_encoder(frags: list[tuple]) -> None:
    got = decode_fragments(encode_fragments(frags), "test")
    want = [list(range(f[1], f[1] + f[2])) if f[0] == "range" else list(f[1]) for f in frags]
    assert [g.tolist() for g in got] == want


block = st.tuples(
    st.tuples(st.integers(-5, 5), st.integers(-5, 5), st.integers(-5, 5)),
    st.one_of(
        st.tuples(st.just(0), st.integers(0, 100)),
        st.tuples(st.just(1), st.integers(0, 100), st.integers(0, 5)),
        st.tuples(st.just(2), st.lists(st.integers(0, 100), max_size=5)),
    ),
)


def encode_manifest(blocks: list[tuple]) -> bytes:
    out = struct.pack("<I", len(blocks))
    for coords, ref in blocks:
        out += struct.pack("<3q", *coords) + bytes([ref[0]])
        if ref[0] == 0:
            out += struct.pack("<q", ref[1])
        elif ref[0] == 1:
            out += struct.pack("<qq", ref[1], ref[2])
        else:
            out += struct.pack("<I", len(ref[1])) + struct.pack(f"<{len(ref[1])}q", *ref[1])
    return out


@given(st.lists(block, max_size=8))
def test_manifests_match_a_plain_encoder(blocks: list[tuple]) -> None:
    got = decode_manifest(encode_manifest(blocks), 3, "test")
    want = []
    for coords, ref in blocks:
        frags = (
            [ref[1]]
            if ref[0] == 0
            else (list(range(ref[1], ref[1] + ref[2])) if ref[0] == 1 else list(ref[1]))
        )
        want.append((coords, frags))
    assert got == want


def test_bad_payloads_raise_corrupt_payload() -> None:
    with pytest.raises(CorruptPayloadError, match="bad header"):
        decode_fragments(b"\x00" * 16, "t")
    with pytest.raises(CorruptPayloadError, match="truncated"):
        decode_manifest(encode_manifest([((0, 0, 0), (0, 1))])[:-3], 3, "t")
    with pytest.raises(CorruptPayloadError, match="trailing"):
        decode_manifest(encode_manifest([((0, 0, 0), (0, 1))]) + b"\x00", 3, "t")
    with pytest.raises(CorruptPayloadError, match="mode 7"):
        decode_manifest(struct.pack("<I3qB", 1, 0, 0, 0, 7), 3, "t")
    with pytest.raises(CorruptPayloadError, match="whole records"):
        decode_cross_records(np.zeros(7, "<i8").tobytes(), 3, 2, "t")
    with pytest.raises(CorruptPayloadError, match="out of range"):
        permutation(6, 3, "t")


def test_cross_records_and_neighbour_links() -> None:
    recs = np.array([[[0, 0, 1, 5], [0, 1, 1, 2]]], "<i8")
    np.testing.assert_array_equal(decode_cross_records(recs.tobytes(), 3, 2, "t"), recs)
    # K = 1 group at byte offset 0, then (perm, row, row) records
    raw = np.array([1, 0, 1, 3, 2, 0, 4, 5], "<i8").tobytes()
    np.testing.assert_array_equal(decode_neighbour_links(raw, 2, True, "t"), [[1, 3, 2], [0, 4, 5]])
    flat = np.array([0, 1, 2, 3], "<i8").tobytes()
    np.testing.assert_array_equal(
        decode_neighbour_links(flat, 2, False, "t"), [[0, 0, 1], [0, 2, 3]]
    )


@pytest.mark.parametrize("code", range(6))
def test_permutation_codes_are_lexicographic(code: int) -> None:
    assert permutation(code, 3, "t") == list(itertools.permutations(range(3)))[code]
