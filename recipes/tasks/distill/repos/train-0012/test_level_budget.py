from level_budget import find_budget, limit_level


def test_limit_level():
    assert limit_level(38) == 14079
    assert limit_level(2) == 57


def test_find_budget():
    assert find_budget(52, 29, 47) == 47
    assert find_budget(61, 19, 29) == 29
