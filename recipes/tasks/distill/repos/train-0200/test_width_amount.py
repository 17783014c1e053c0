from width_amount import bound_width, count_amount


def test_bound_width():
    assert bound_width(43, 13) == 2507
    assert bound_width(14, 53) == 865


def test_count_amount():
    assert count_amount(7) == 1120
    assert count_amount(35) == 25200
