"""The link-reading engine shared by every type that stores links (graphs, skeletons, meshes).

* :mod:`~zarr_vectors.core.links.keys`: vertex keys of a level or of fetched chunks, stored
  ``links`` and ``cross_chunk_links`` rows as keys, and edge sorting.
* :mod:`~zarr_vectors.core.links.read`: whole-object reads with their links decoded beside the
  vertices, links mapped to returned positions.
* :mod:`~zarr_vectors.core.links.rows`: a query on a graph level as vertices plus the edges
  among them.
* :mod:`~zarr_vectors.core.links.parents`: whole trees plus the parent of each node.
* :mod:`~zarr_vectors.core.links.faces`: a query on a mesh level as vertices plus the faces
  among them.

:func:`zarr_vectors.core.engine.gather` picks one of them by the type's topology.
"""
