from budget_level import adjust_budget, merge_level


def test_adjust_budget():
    assert adjust_budget(59, 55) == 3182
    assert adjust_budget(2, 32) == 138


def test_merge_level():
    assert merge_level(22, 46) == 44
    assert merge_level(38, 34) == 4
