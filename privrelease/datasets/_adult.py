"""The UCI Adult (Census Income) training file, shipped inside the package."""

from importlib import resources

import pandas as pd

__all__ = ["load_adult", "ADULT_COLUMNS"]

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]
_INT_COLUMNS = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
_EDUCATION_ORDER = [
    "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
    "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate",
]

ATTRIBUTION = (
    "Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20 (CC BY 4.0)"
)


def load_adult(*, as_frame=True):
    """Load the UCI Adult training file (32,561 people) shipped with privrelease.

    The file is read from the package (no download). Text columns become pandas
    categoricals (``education`` ordered from Preschool to Doctorate), numeric
    columns are integers, ``'?'`` becomes missing.

    Parameters
    ----------
    as_frame : bool, default=True
        Only ``True`` is supported; kept for scikit-learn familiarity.

    Returns
    -------
    data : pandas.DataFrame of shape (32561, 15)
        Columns ``age``, ``workclass``, ``fnlwgt``, ``education``,
        ``education-num``, ``marital-status``, ``occupation``, ``relationship``,
        ``race``, ``sex``, ``capital-gain``, ``capital-loss``,
        ``hours-per-week``, ``native-country``, ``income`` (``<=50K`` / ``>50K``).

    Notes
    -----
    Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning
    Repository. https://doi.org/10.24432/C5XW20. Licensed CC BY 4.0; the
    attribution ships next to the data (``privrelease/datasets/data/ADULT_README.md``).

    Examples
    --------
    >>> from privrelease.datasets import load_adult
    >>> df = load_adult()
    >>> df.shape
    (32561, 15)
    >>> sorted(df["income"].cat.categories)
    ['<=50K', '>50K']
    """
    if as_frame is not True:
        raise ValueError(f"load_adult supports only as_frame=True, got {as_frame!r}")
    path = resources.files("privrelease.datasets").joinpath("data/adult.data.gz")
    with resources.as_file(path) as p:
        df = pd.read_csv(
            p, header=None, names=ADULT_COLUMNS, sep=",", skipinitialspace=True,
            na_values="?", compression="gzip",
        )
    for col in _INT_COLUMNS:
        df[col] = df[col].astype("int64")
    for col in ADULT_COLUMNS:
        if col in _INT_COLUMNS:
            continue
        if col == "education":
            df[col] = pd.Categorical(df[col], categories=_EDUCATION_ORDER, ordered=True)
        else:
            df[col] = df[col].astype("category")
    return df
