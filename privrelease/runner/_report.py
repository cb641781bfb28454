"""A report folder: ``report.md`` with tables (CSV + markdown) and PNG plots.

Experiments write into a :class:`Report`; the command line saves it.
"""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["Report", "markdown_table"]


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "nan"
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.3e}"
        return f"{v:.4f}".rstrip("0").rstrip(".") if abs(v) < 1e5 else f"{v:.0f}"
    return str(v).replace("|", "\\|")


def markdown_table(df, max_rows=60):
    """Render a DataFrame as a GitHub-flavoured markdown table (no extra dependency)."""
    df = df.reset_index(drop=True) if not isinstance(df.index, pd.RangeIndex) else df
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.head(max_rows).itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    if len(df) > max_rows:
        lines.append(f"\n*({len(df) - max_rows} more rows in the CSV)*")
    return "\n".join(lines)


class Report:
    """Collects the sections of one report and writes them to a folder.

    Parameters
    ----------
    output_dir : str or Path
        Created if missing. Files: ``report.md``, ``<name>.csv``, ``<name>.png``,
        ``<name>.json``.
    title : str
        First heading of ``report.md``.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from privrelease.runner import Report
    >>> rep = Report(tempfile.mkdtemp(), title="demo")
    >>> rep.section("Numbers")
    >>> rep.table(pd.DataFrame({"delta": [0.0, 1.0], "leakage": [0.1, 0.0]}), "curve").name
    'curve.csv'
    >>> rep.save().name
    'report.md'
    """

    def __init__(self, output_dir, title="privrelease report"):
        self.output_dir = Path(output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.title = title
        self._parts = [f"# {title}\n"]
        self.files = []

    def section(self, heading, level=2):
        """Start a section."""
        self._parts.append(f"\n{'#' * level} {heading}\n")

    def text(self, text):
        """A paragraph of markdown."""
        self._parts.append(f"\n{text.strip()}\n")

    def table(self, df, name, caption=None, max_rows=60):
        """Save ``df`` as ``name.csv`` and show it as a markdown table."""
        path = self.output_dir / f"{name}.csv"
        df.to_csv(path, index=False)
        self.files.append(path)
        if caption:
            self._parts.append(f"\n{caption}\n")
        self._parts.append("\n" + markdown_table(df, max_rows=max_rows) + f"\n\n(`{path.name}`)\n")
        return path

    def figure(self, fig, name, caption=None):
        """Save a matplotlib figure as ``name.png`` and embed it."""
        import matplotlib.pyplot as plt

        path = self.output_dir / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.files.append(path)
        self._parts.append(f"\n![{caption or name}]({path.name})\n")
        if caption:
            self._parts.append(f"\n*{caption}*\n")
        return path

    def json(self, obj, name):
        """Save ``obj`` (numbers, lists, dicts; numpy values converted) as ``name.json``."""

        def default(o):
            if isinstance(o, np.generic):
                return o.item()
            if isinstance(o, np.ndarray):
                return o.tolist()
            raise TypeError(f"cannot serialise {type(o).__name__}")

        path = self.output_dir / f"{name}.json"
        path.write_text(json.dumps(obj, indent=2, default=default))
        self.files.append(path)
        return path

    def markdown(self):
        return "".join(self._parts)

    def save(self):
        """Write ``report.md`` and return its path."""
        path = self.output_dir / "report.md"
        path.write_text(self.markdown())
        return path
