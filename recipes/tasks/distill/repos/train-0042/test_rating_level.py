from rating_level import find_level, score_rating


def test_score_rating():
    assert score_rating([20, 50, 56, 35, 32], 56) == 1
    assert score_rating([2, 5, 28, 40], 2) == 4


def test_find_level():
    assert find_level(22) == 4807
    assert find_level(43) == 17974
