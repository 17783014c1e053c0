from fee_speed import limit_speed, total_fee


def test_total_fee():
    assert total_fee(26) == 16497
    assert total_fee(37) == 33041


def test_limit_speed():
    assert limit_speed([4, 20, 61, 31]) == 61
    assert limit_speed([49, 5, 16, 47]) == 49
