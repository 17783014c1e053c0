from length_stock import merge_length, mix_stock


def test_merge_length():
    assert merge_length(29) == 7395
    assert merge_length(14) == 1785


def test_mix_stock():
    assert mix_stock([22, 38, 59]) == 59
    assert mix_stock([20, 44, 22, 19]) == 44
