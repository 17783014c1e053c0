from width_rating import bound_rating, mix_width


def test_mix_width():
    assert mix_width(10, 8, 44) == 10
    assert mix_width(47, 7, 52) == 47


def test_bound_rating():
    assert bound_rating(53, 23) == 30
    assert bound_rating(14, 37) == 49
