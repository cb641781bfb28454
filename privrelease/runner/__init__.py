"""Experiment runner behind the command line: report folders, pipeline files and their schemas."""

from ._pipeline import (
    ReportWriteError,
    RunIncomplete,
    available_experiments,
    check_run,
    load_pipeline,
    pipeline_params,
    run_experiment,
    run_pipeline,
)
from ._report import Report, markdown_table, prepare_output_folder
from ._schema import OutputFolderError, ParameterTypeError, PipelineError, validate_params

__all__ = [
    "Report",
    "markdown_table",
    "prepare_output_folder",
    "available_experiments",
    "check_run",
    "load_pipeline",
    "pipeline_params",
    "run_experiment",
    "run_pipeline",
    "validate_params",
    "PipelineError",
    "ParameterTypeError",
    "OutputFolderError",
    "RunIncomplete",
    "ReportWriteError",
]
