"""The engine: chunking, planning, I/O and the single write and read pipelines."""
