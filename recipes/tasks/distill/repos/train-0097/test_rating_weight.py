from rating_weight import find_rating, rate_weight


def test_find_rating():
    assert find_rating(17) == 612
    assert find_rating(34) == 2380


def test_rate_weight():
    assert rate_weight([40, 43, 16, 7]) == 43
    assert rate_weight([52, 52, 53, 25, 50]) == 53
