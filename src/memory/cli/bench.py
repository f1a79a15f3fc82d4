"""`memory bench …`: benchmark commands (placeholder; the bench work fills this in)."""

from __future__ import annotations

import click

__all__ = ["bench"]


@click.group("bench")
def bench() -> None:
    """Run the retrieval-quality and speed benchmarks."""
