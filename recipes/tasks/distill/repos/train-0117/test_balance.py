from balance import count_balance, scale_balance


def test_count_balance():
    assert count_balance([41, 2, 61], 2) == 3
    assert count_balance([32, 47, 10], 47) == 1


def test_scale_balance():
    assert scale_balance(7, 59) == 444
    assert scale_balance(11, 37) == 642
