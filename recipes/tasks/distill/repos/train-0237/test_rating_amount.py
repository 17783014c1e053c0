from rating_amount import find_rating, fold_amount


def test_find_rating():
    assert find_rating([41, 38, 16, 25], 16) == 4
    assert find_rating([23, 20, 38, 2, 43], 23) == 3


def test_fold_amount():
    assert fold_amount(14, 28, 44) == 28
    assert fold_amount(26, 28, 41) == 28
