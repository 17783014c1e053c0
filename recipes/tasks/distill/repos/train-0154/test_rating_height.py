from rating_height import rate_height, scale_rating


def test_scale_rating():
    assert scale_rating(35, 28) == 1952
    assert scale_rating(58, 16) == 3252


def test_rate_height():
    assert rate_height(40, 43) == 1643
    assert rate_height(25, 20) == 1020
