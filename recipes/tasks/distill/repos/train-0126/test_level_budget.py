from level_budget import fold_budget, limit_level


def test_limit_level():
    assert limit_level(43, 4) == 2025
    assert limit_level(2, 23) == 117


def test_fold_budget():
    assert fold_budget(25, 52) == 1152
    assert fold_budget(4, 17) == 193
