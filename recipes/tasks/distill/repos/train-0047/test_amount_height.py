from amount_height import score_height, total_amount


def test_total_amount():
    assert total_amount([28, 38, 41, 40, 11], 38) == 3
    assert total_amount([16, 34, 28, 13, 53], 16) == 4


def test_score_height():
    assert score_height(61, 52) == 9
    assert score_height(46, 28) == 18
