"""Benchmark harness comparing ``zarr_vectors`` with peer formats and libraries."""
