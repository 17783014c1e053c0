from budget_height import clip_height, mix_budget


def test_mix_budget():
    assert mix_budget(28, 28) == 0
    assert mix_budget(34, 46) == 46


def test_clip_height():
    assert clip_height([49, 61, 52]) == 61
    assert clip_height([16, 5, 44]) == 44
