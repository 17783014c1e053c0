from rating_speed import get_rating, limit_speed


def test_get_rating():
    assert get_rating(28, 49) == 28
    assert get_rating(55, 16) == 39


def test_limit_speed():
    assert limit_speed(22, 14, 43) == 22
    assert limit_speed(43, 16, 37) == 37
