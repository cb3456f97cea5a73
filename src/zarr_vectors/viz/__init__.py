"""See your data: matplotlib renderings and a Neuroglancer export of ZVF stores.

Install with ``pip install zarr-vectors[viz]``.  :func:`render` draws one level to a PNG;
:func:`export_neuroglancer` writes Neuroglancer *precomputed* annotations, skeletons or meshes,
:func:`viewer_state` builds the Neuroglancer state that shows them, and :func:`serve` shares a
directory over HTTP (with CORS) so a Neuroglancer client can load it.
"""

from __future__ import annotations

from zarr_vectors.viz.neuroglancer import (
    ExportKind,
    NeuroglancerExport,
    export_neuroglancer,
    viewer_state,
)
from zarr_vectors.viz.render import Projection, RenderResult, render
from zarr_vectors.viz.serve import DEFAULT_CLIENT, StaticServer, neuroglancer_url, serve

__all__ = [
    "DEFAULT_CLIENT",
    "ExportKind",
    "NeuroglancerExport",
    "Projection",
    "RenderResult",
    "StaticServer",
    "export_neuroglancer",
    "neuroglancer_url",
    "render",
    "serve",
    "viewer_state",
]
