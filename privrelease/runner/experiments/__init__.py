"""One module per experiment; ``privrelease run pipelines/NAME.toml`` calls ``run(report, **params)``
of the module named by the file's ``experiment`` key."""
