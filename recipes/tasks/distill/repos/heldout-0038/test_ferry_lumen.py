from ferry_lumen import rank_ferry, tune_lumen


def test_rank_ferry():
    assert rank_ferry(12, 60) == 306
    assert rank_ferry(48, 60) == 1386


def test_tune_lumen():
    assert tune_lumen([6, 48, 6, 15, 54]) == 54
    assert tune_lumen([24, 42, 24, 24]) == 42
