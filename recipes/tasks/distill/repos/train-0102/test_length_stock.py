from length_stock import find_stock, total_length


def test_total_length():
    assert total_length(17, 17) == 0
    assert total_length(7, 19) == 10


def test_find_stock():
    assert find_stock(13, 44) == 460
    assert find_stock(28, 10) == 906
