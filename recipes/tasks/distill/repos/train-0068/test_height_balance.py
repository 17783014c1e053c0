from height_balance import make_balance, total_height


def test_total_height():
    assert total_height(25, 20) == 5
    assert total_height(4, 19) == 40


def test_make_balance():
    assert make_balance(58) == 83839
    assert make_balance(14) == 5145
