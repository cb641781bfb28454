from importlib import resources

import pandas as pd
import pytest

from privrelease.datasets import ADULT_COLUMNS, load_adult


def test_load_adult_is_the_uci_training_file():
    df = load_adult()
    assert df.shape == (32561, 15)
    assert list(df.columns) == ADULT_COLUMNS
    assert df["age"].dtype == "int64" and df["age"].between(17, 90).all()
    assert df["income"].value_counts().to_dict() == {"<=50K": 24720, ">50K": 7841}
    assert df["education"].cat.ordered
    assert df["education"].cat.categories[0] == "Preschool" and df["education"].cat.categories[-1] == "Doctorate"
    assert df["education"].notna().all()
    # '?' is read as missing, not as a category
    assert df["workclass"].isna().sum() == 1836 and "?" not in df["workclass"].cat.categories
    assert isinstance(df["sex"].dtype, pd.CategoricalDtype)


def test_attribution_ships_with_the_data():
    text = resources.files("privrelease.datasets").joinpath("data/ADULT_README.md").read_text()
    assert "CC BY 4.0" in text and "10.24432/C5XW20" in text


def test_load_adult_rejects_bad_arguments():
    with pytest.raises(ValueError, match="as_frame=True, got False"):
        load_adult(as_frame=False)
