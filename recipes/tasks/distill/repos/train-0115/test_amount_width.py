from amount_width import bound_width, scale_amount


def test_scale_amount():
    assert scale_amount(49, 14) == 35
    assert scale_amount(55, 14) == 41


def test_bound_width():
    assert bound_width(37, 22) == 96
    assert bound_width(53, 4) == 110
