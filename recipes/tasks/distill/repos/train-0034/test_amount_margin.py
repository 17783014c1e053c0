from amount_margin import make_amount, total_margin


def test_make_amount():
    assert make_amount(32, 46) == 1710
    assert make_amount(23, 4) == 1200


def test_total_margin():
    assert total_margin(61, 38) == 23
    assert total_margin(53, 47) == 6
