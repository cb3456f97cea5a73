"""Multiscale pyramids: coarser levels for every geometry type (FORMAT.md §10)."""

from zarr_vectors.multiscale.pyramid import PyramidLevel, build_pyramid, coarsen_parts
from zarr_vectors.multiscale.select import choose_level, estimate_vertices

__all__ = ["PyramidLevel", "build_pyramid", "choose_level", "coarsen_parts", "estimate_vertices"]
