"""Experiment runner behind the command line: report folders and pipeline files."""

from ._pipeline import available_experiments, load_pipeline, run_experiment, run_pipeline
from ._report import Report, markdown_table

__all__ = [
    "Report",
    "markdown_table",
    "available_experiments",
    "load_pipeline",
    "run_experiment",
    "run_pipeline",
]
