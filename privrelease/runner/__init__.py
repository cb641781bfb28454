"""Experiment runner behind the command line: report folders and pipeline files."""

from ._report import Report, markdown_table

__all__ = ["Report", "markdown_table"]
