from amount import rate_amount, total_amount


def test_total_amount():
    assert total_amount(34, 13) == 21
    assert total_amount(59, 58) == 1


def test_rate_amount():
    assert rate_amount(5, 19) == 16
    assert rate_amount(58, 23) == 35
