from points_margin import limit_margin, total_points


def test_total_points():
    assert total_points([31, 56, 44, 58, 19], 31) == 4
    assert total_points([7, 14, 35], 7) == 3


def test_limit_margin():
    assert limit_margin(43, 20) == 23
    assert limit_margin(59, 25) == 34
