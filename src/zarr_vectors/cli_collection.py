"""``zarr-vectors info`` of a collection: the tree of its children with their counts."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from zarr_vectors.edit.collection import ChildSummary, open_collection

__all__ = ["print_collection"]


def _label(child: ChildSummary) -> str:
    head = f"[bold]{escape(child.name)}[/] ({escape(child.geometry_type)})"
    if child.problem is not None:
        return f"{head}: [bold red]unreadable[/] {escape(child.problem)}"
    levels = "level" if child.levels == 1 else "levels"
    return (
        f"{head}: {child.vertex_count:,} vertices, {child.object_count:,} objects, "
        f"{child.levels} {levels}"
    )


def print_collection(store: str, as_json: bool) -> None:
    """Print the children of the collection at ``store`` (a tree, or JSON with ``as_json``)."""
    children = open_collection(store).summary()
    if as_json:
        doc = {"store": store, "collection": True, "children": [asdict(c) for c in children]}
        typer.echo(json.dumps(doc, indent=2))
        return
    tree = Tree(f"[bold]{escape(store)}[/] (collection, {len(children)} children)")
    for child in children:
        tree.add(_label(child))
    Console().print(tree, highlight=False)
