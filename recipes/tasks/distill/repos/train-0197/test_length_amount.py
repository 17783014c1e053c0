from length_amount import rate_length, total_amount


def test_rate_length():
    assert rate_length([26, 23, 49, 46, 31], 23) == 5
    assert rate_length([49, 5, 52], 5) == 3


def test_total_amount():
    assert total_amount(8) == 1152
    assert total_amount(32) == 16896
