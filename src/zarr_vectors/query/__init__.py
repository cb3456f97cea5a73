"""Queries beyond boxes: attribute predicates, spheres, counts, plans, level budgets, Dask.

The public verbs (:func:`~zarr_vectors.query.api.count`, ``explain``, ``iter_levels``,
``to_dask``, ``to_dask_objects``) are exported by :mod:`zarr_vectors`.  This package module
imports nothing: :mod:`zarr_vectors.core.writer` calls
:func:`zarr_vectors.query.statistics.write_statistics` when it finishes a level, so importing
the package must not pull in the geometry types (which import the writer).

Modules, one job each: ``predicates`` (``where=``), ``shapes`` (box, sphere), ``statistics``
(per-chunk min/max and value sets: written with every level, read for pruning), ``planning``
(which chunks a query touches), ``execute`` (reads with predicates), ``count``, ``explain``,
``lod`` (level-of-detail budgets), ``table`` (results as vertex tables), ``dask`` (optional
extra) and ``api`` (the public verbs).  The command is :mod:`zarr_vectors.cli_query`.
"""
