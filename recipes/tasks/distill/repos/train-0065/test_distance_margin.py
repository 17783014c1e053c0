from distance_margin import bound_distance, sum_margin


def test_bound_distance():
    assert bound_distance(7, 46) == 286
    assert bound_distance(16, 34) == 658


def test_sum_margin():
    assert sum_margin(14) == 6405
    assert sum_margin(13) == 5551
