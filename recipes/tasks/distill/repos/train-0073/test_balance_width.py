from balance_width import count_width, limit_balance


def test_limit_balance():
    assert limit_balance(26, 10) == 16
    assert limit_balance(14, 19) == 58


def test_count_width():
    assert count_width([38, 10, 50, 23]) == 50
    assert count_width([32, 40, 28, 56]) == 56
