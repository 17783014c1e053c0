from glacier_lumen import nudge_glacier, rank_lumen


def test_nudge_glacier():
    assert nudge_glacier(3, 60) == 27
    assert nudge_glacier(24, 36) == 492


def test_rank_lumen():
    assert rank_lumen(45, 33, 57) == 45
    assert rank_lumen(21, 3, 39) == 21
