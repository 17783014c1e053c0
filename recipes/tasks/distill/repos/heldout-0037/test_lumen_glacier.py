from lumen_glacier import boost_glacier, rank_lumen


def test_rank_lumen():
    assert rank_lumen([6, 30, 9, 9, 6], 6) == 5
    assert rank_lumen([9, 42, 33], 33) == 2


def test_boost_glacier():
    assert boost_glacier(45, 57) == 2082
    assert boost_glacier(60, 51) == 2751
