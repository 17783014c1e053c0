from budget_length import clip_budget, merge_length


def test_clip_budget():
    assert clip_budget(52, 34) == 18
    assert clip_budget(43, 52) == 28


def test_merge_length():
    assert merge_length(29, 56) == 37
    assert merge_length(37, 22) == 15
