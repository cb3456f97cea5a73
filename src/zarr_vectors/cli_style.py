"""How the ``zarr-vectors`` help pages look: the typer command classes every command uses.

typer prints a value type after every option in ``--help`` (``--overwrite <bool>``), flags
included, although a flag takes no value.  :class:`FlagCommand` and :class:`FlagGroup` blank the
type of flags (``--help``, ``--json``, ``--overwrite``) and keep it for options that take a value
(``--level <int>``).  Pass them as ``cls=`` to ``typer.Typer`` and ``app.command``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typer.core import TyperCommand, TyperGroup, TyperOption

__all__ = ["FlagCommand", "FlagGroup", "hide_flag_types"]


def hide_flag_types(params: Sequence[Any]) -> list[Any]:
    """Give every flag option without a metavar the empty one, so help shows no type."""
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return list(params)


class FlagCommand(TyperCommand):
    """A typer command whose help shows no value type for flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        """Return the parameters, flags without a metavar."""
        return hide_flag_types(super().get_params(ctx))


class FlagGroup(TyperGroup):
    """A typer group whose help shows no value type for flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        """Return the parameters, flags without a metavar."""
        return hide_flag_types(super().get_params(ctx))
