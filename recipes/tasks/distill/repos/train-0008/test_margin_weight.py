from margin_weight import find_weight, fold_margin


def test_fold_margin():
    assert fold_margin(58, 8) == 50
    assert fold_margin(20, 61) == 7


def test_find_weight():
    assert find_weight([49, 26, 37]) == 49
    assert find_weight([26, 22, 2, 35, 2]) == 35
