"""What the last stops left open outside the engine (stop 24): a report's file written again keeps its place, one
warning per lost set of users, warnings pointing at the user's line, a saved certificate checked on load, a budget
ledger's total and lock, a prior with subnormal masses."""
import warnings

import numpy as np
import pytest

from privrelease.runner import Report


# ------------------------------------------------------------------------------------------------ report
def test_report_replaces_a_part_written_again_in_place(tmp_path):
    # the replaced table moved to the end of the report
    import pandas as pd

    rep = Report(tmp_path / "out")
    rep.table(pd.DataFrame({"x": [1]}), "t", caption="first")
    rep.table(pd.DataFrame({"x": [5]}), "kept", caption="kept")
    with pytest.warns(UserWarning, match=r"already had a file named 't\.csv'"):
        rep.table(pd.DataFrame({"x": [2]}), "t", caption="second")
    md = rep.markdown()
    assert md.index("second") < md.index("kept") and "first" not in md and md.count("(`t.csv`)") == 1


def test_report_csv_after_a_table_of_its_name_keeps_the_table(tmp_path):
    # csv(name) after table(name) dropped the table: both were asked for; the table shows what the file holds
    import pandas as pd

    rep = Report(tmp_path / "out")
    rep.table(pd.DataFrame({"x": [1]}), "t", caption="the table")
    rep.text("after")
    with pytest.warns(UserWarning, match=r"already had a file named 't\.csv'"):
        rep.csv(pd.DataFrame({"x": [7, 8]}), "t")
    rep.save()
    assert pd.read_csv(tmp_path / "out" / "t.csv")["x"].tolist() == [7, 8]
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.count("(`t.csv`)") == 1 and md.index("the table") < md.index("after")
    table = md[md.index("the table"):md.index("(`t.csv`)")]
    assert "| 7 |" in table and "| 8 |" in table and "| 1 |" not in table
