from stock_count import mix_stock, sum_count


def test_mix_stock():
    assert mix_stock(35) == 38430
    assert mix_stock(4) == 610


def test_sum_count():
    assert sum_count([40, 47, 8, 50, 52]) == 52
    assert sum_count([29, 4, 28]) == 29
