from budget_height import count_budget, count_height


def test_count_budget():
    assert count_budget(56, 32) == 2779
    assert count_budget(20, 22) == 989


def test_count_height():
    assert count_height(40, 22) == 2462
    assert count_height(37, 16) == 2273
