from price_salary import count_price, find_salary


def test_count_price():
    assert count_price([35, 38, 61, 44], 35) == 4
    assert count_price([47, 32, 37, 31, 19], 31) == 4


def test_find_salary():
    assert find_salary(28, 23) == 163
    assert find_salary(4, 19) == 39
