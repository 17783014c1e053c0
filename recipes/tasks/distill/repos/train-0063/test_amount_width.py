from amount_width import scale_amount, scale_width


def test_scale_amount():
    assert scale_amount([23, 13, 8, 34], 13) == 3
    assert scale_amount([29, 29, 2, 61, 14], 29) == 3


def test_scale_width():
    assert scale_width(61, 11) == 50
    assert scale_width(10, 8) == 2
