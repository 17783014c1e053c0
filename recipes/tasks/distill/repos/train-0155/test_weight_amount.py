from weight_amount import find_amount, trim_weight


def test_trim_weight():
    assert trim_weight(52, 50) == 2
    assert trim_weight(26, 31) == 5


def test_find_amount():
    assert find_amount(17) == 306
    assert find_amount(50) == 2550
