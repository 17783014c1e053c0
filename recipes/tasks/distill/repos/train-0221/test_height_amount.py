from height_amount import fold_amount, limit_height


def test_limit_height():
    assert limit_height(26, 28) == 41
    assert limit_height(59, 7) == 52


def test_fold_amount():
    assert fold_amount(11, 43) == 362
    assert fold_amount(20, 58) == 638
