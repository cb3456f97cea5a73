"""Tests of the query package (zarr_vectors.query)."""
