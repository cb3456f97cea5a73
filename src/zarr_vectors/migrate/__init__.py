"""Read stores written by the upstream ``zarr-vectors`` package and copy them into ZVF 1.0.

:func:`zarr_vectors.migrate` (in :mod:`zarr_vectors.migrate.run`) is the entry point;
:mod:`~zarr_vectors.migrate.detect` recognises upstream stores.  This package imports nothing at
import time so that the store layer can use the detector without a cycle.
"""
