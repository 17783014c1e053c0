from price_salary import get_salary, sum_price


def test_sum_price():
    assert sum_price(44, 56) == 1596
    assert sum_price(49, 8) == 1723


def test_get_salary():
    assert get_salary([7, 41, 5, 11]) == 41
    assert get_salary([19, 55, 28]) == 55
