"""The payload layer: how per-chunk payload arrays and dense arrays are stored and read.

Two kinds of arrays live in a level group (FORMAT.md §6, §9):

* **per-chunk payload arrays**: variable-length bytes, one element per spatial chunk, element
  chunks of shape ``(1,)*D``; the element is the little-endian rows of that chunk;
* **dense arrays**: ordinary numeric arrays (``vertex_counts``, object index, ...).

Arrays are created and described by zarr-python, so any Zarr reader can open them; reading
and writing many elements goes through batched paths that encode and decode the same bytes
zarr-python does.  One module per job:

=================  ==========================================================================
``rows``           :class:`~zarr_vectors.core.payload.rows.PayloadArray`, the row-reading
                   interface every reader uses
``access``         stored elements of a payload array: codec, keys, fetch, write, whole decodes
``local``          local, unsharded payload files read in place (only the frames/blocks asked)
``codec``          encode/decode one element, byte-identical to zarr-python
``chain``          which codec chains are decoded here, from an array's metadata
``zstd_frames``    seekable zstd frames and bounded zstd decoding
``element``        the vlen-bytes element header and decode size limits
``compression``    ``compressor=`` presets and checks, codecs of new arrays, frame sizes
``create``         creating and opening payload and dense arrays
``dense``          dense arrays: batched writes, whole and row reads
``store_io``       batched raw key reads and writes, chunk key names
``local_nodes``    opening local Zarr v3 hierarchies quickly
``concurrency``    threads of encodes and decodes
``blosc_blocks``   the Blosc 1 format: block tables, decoding only some blocks
``blosc_many``     decoding the needed blocks of many chunks with one decoder call
``lz4_blocks``     encoding Blosc-LZ4 in blocks of exact size (the only ``ctypes`` use)
``caches``         the process-wide memo tables
=================  ==========================================================================

zarr-python internals are reached only through :mod:`zarr_vectors.core.zarr_adapter`.
Import from the modules themselves: this package re-exports nothing.
"""
