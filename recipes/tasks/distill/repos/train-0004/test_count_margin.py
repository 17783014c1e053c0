from count_margin import rate_margin, shift_count


def test_shift_count():
    assert shift_count(40, 2) == 210
    assert shift_count(34, 56) == 132


def test_rate_margin():
    assert rate_margin(4, 43) == 7
    assert rate_margin(14, 52) == 7
