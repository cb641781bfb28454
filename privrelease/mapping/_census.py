"""The Census (UCI Adult) prior of the paper's Sec. VI-A: sex, age band, education band vs income."""

import numpy as np

from ..utils._validation import plain_value

__all__ = ["census_prior", "CENSUS_LEVELS", "CENSUS_FEATURES", "CENSUS_PRIVATE_LEVELS"]

CENSUS_FEATURES = ["sex", "age", "education"]
CENSUS_LEVELS = [
    ["Male", "Female"],
    ["young", "adult", "old"],
    ["high-school", "college", "masters", "doctorate"],
]
CENSUS_PRIVATE_LEVELS = ["<=50K", ">50K"]

_ADULT_EDUCATION = ("Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
                    "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate")
_EDU_BAND = {
    "Some-college": 1, "Assoc-acdm": 1, "Assoc-voc": 1, "Bachelors": 1,
    "Masters": 2, "Prof-school": 2, "Doctorate": 3,
}


def census_codes(data=None):
    """Per-person codes ``(public (n, 3) int, private (n,) int)`` from the Adult table.

    Bands: age young < 30, adult 30-54, old >= 55; education high-school = below
    Some-college in the ordered categorical, college = Some-college, Assoc-acdm,
    Assoc-voc, Bachelors; masters = Masters, Prof-school; doctorate = Doctorate.
    Income ``<=50K`` -> 0, ``>50K`` -> 1. Rows with a missing value are dropped.
    """
    if data is None:
        from ..datasets import load_adult

        data = load_adult()
    if not (hasattr(data, "columns") and hasattr(data, "dropna")):
        raise TypeError(f"data must be a pandas DataFrame like load_adult() returns, got {type(data).__name__}")
    missing = [c for c in ("sex", "age", "education", "income") if c not in data.columns]
    if missing:
        raise ValueError(f"data has no column(s) {missing!r}; expected the UCI Adult columns sex, age, education "
                         f"and income (its columns are {list(data.columns)[:20]!r})")
    df = data[["sex", "age", "education", "income"]].dropna()
    # a value outside the Adult coding used to fall silently into a band ('male' -> Female,
    # 'PhD' -> high-school, 'rich' -> <=50K)
    for col, allowed in (("sex", {"Male", "Female"}), ("education", set(_ADULT_EDUCATION)),
                         ("income", {"<=50K", ">50K", "<=50K.", ">50K."})):
        values = df[col].astype(str).str.strip()
        bad = ~values.isin(allowed)
        if bad.any():
            raise ValueError(f"data[{col!r}] holds {int(bad.sum())} value(s) outside the UCI Adult coding, for "
                             f"example {plain_value(values[bad].iloc[0])!r}; expected one of {sorted(allowed)!r}")
    try:
        age = np.asarray(df["age"].to_numpy(), dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"data['age'] must hold numbers (years), got {plain_value(df['age'].iloc[0])!r}") from None
    if not np.all(np.isfinite(age)) or np.any(age < 0):
        raise ValueError(f"data['age'] must hold finite ages >= 0, got "
                         f"{plain_value(age[~(np.isfinite(age) & (age >= 0))][0])!r}")
    sex = np.where(df["sex"].astype(str).str.strip().to_numpy() == "Male", 0, 1)
    age_band = np.where(age < 30, 0, np.where(age < 55, 1, 2))
    edu = df["education"].astype(str).str.strip().map(lambda e: _EDU_BAND.get(e, 0)).to_numpy().astype(int)
    income = np.where(df["income"].astype(str).str.strip().str.startswith(">50K"), 1, 0)
    return np.column_stack([sex, age_band, edu]).astype(np.int64), income.astype(np.int64)


def census_prior(data=None):
    """Joint prior p(income, (sex, age band, education band)) estimated from UCI Adult.

    Parameters
    ----------
    data : pandas.DataFrame, optional
        The Adult table (default :func:`privrelease.datasets.load_adult`).

    Returns
    -------
    prior : ndarray of shape (2, n_inputs)
        Empirical joint; row 0 is income ``<=50K``, row 1 ``>50K``.
    input_tuples : ndarray of int, shape (n_inputs, 3)
        The observed (sex, age band, education band) code tuples, one per column
        of ``prior`` (sorted lexicographically).
    feature_names : list of str
        ``["sex", "age", "education"]``.
    level_names : list of list of str
        Names of the codes of each feature: sex ``Male, Female``; age
        ``young (<30), adult (30-54), old (>=55)``; education
        ``high-school, college, masters, doctorate``.

    References
    ----------
    Salamatian et al., Sec. VI-A (Fig. 4 and 5). Feed ``input_tuples`` to
    :func:`~privrelease.mapping.erasure_alphabet` and
    :func:`~privrelease.mapping.erasure_distortion` for the erasure experiment.

    Examples
    --------
    >>> prior, tuples, names, levels = census_prior()
    >>> prior.shape[0], tuples.shape[1], names
    (2, 3, ['sex', 'age', 'education'])
    """
    public, income = census_codes(data)
    tuples, idx = np.unique(public, axis=0, return_inverse=True)
    counts = np.zeros((2, tuples.shape[0]))
    np.add.at(counts, (income, idx.ravel()), 1.0)
    return counts / counts.sum(), tuples, list(CENSUS_FEATURES), [list(v) for v in CENSUS_LEVELS]
