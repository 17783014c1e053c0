from balance_rating import scale_rating, total_balance


def test_total_balance():
    assert total_balance(34) == 20230
    assert total_balance(28) == 13804


def test_scale_rating():
    assert scale_rating(34, 22) == 12
    assert scale_rating(49, 29) == 20
