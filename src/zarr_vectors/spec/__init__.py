"""The on-disk contract of ZVF 1.0: names, enums and metadata documents; no I/O."""
