"""Converters between ZVF stores and other vector formats (SWC, networkx, ...).

Each module converts one foreign format and imports its optional dependency at module level
(install the ``formats`` extra), so importing :mod:`zarr_vectors` never needs them.
"""
