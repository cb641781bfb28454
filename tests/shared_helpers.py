"""Helpers shared by tests in several folders: running the command line, and a fake MovieLens 100k folder."""

import warnings
from pathlib import Path

import numpy as np


def run_cli(argv, capsys):
    """``privrelease <argv>`` in this process: ``(exit status, stdout, stderr)``, warnings silenced."""
    from privrelease.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def quick_census_run(tmp_path_factory, name):
    """One real ``--quick`` run of the census pipeline into a new folder; returns the folder."""
    from privrelease.cli import main

    out = tmp_path_factory.mktemp(name) / "out"
    census = str(Path(__file__).resolve().parents[1] / "pipelines" / "census_erasure.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", census, "--quick", "-o", str(out)]) == 0
    return out


def fake_ml100k(folder, n_users=160, n_items=30, seed=0, ages=None):
    """A MovieLens 100k folder (``u.data``, ``u.user``, ``u.item``) holding ``make_ratings`` data whose gender is
    the attribute; ``ages`` per user (default 30 for all). Returns ``(folder, R, a)``."""
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(n_users, n_items, attribute_strength=2.0, random_state=seed)
    coo = R.tocoo()
    ages = np.full(n_users, 30) if ages is None else ages
    folder.mkdir(parents=True)
    (folder / "u.data").write_text("".join(f"{u + 1}\t{i + 1}\t{int(r)}\t88{k:07d}\n"
                                           for k, (u, i, r) in enumerate(zip(coo.row, coo.col, coo.data))))
    (folder / "u.user").write_text("".join(f"{u + 1}|{ages[u]}|{'F' if a[u] else 'M'}|other|00000\n"
                                           for u in range(n_users)))
    (folder / "u.item").write_bytes("".join(f"{i + 1}|Movie {i}|01-Jan-1995||http://x|0|0\n"
                                            for i in range(n_items)).encode("latin-1"))
    return folder, R, a
