from balance_height import pick_height, scale_balance


def test_scale_balance():
    assert scale_balance(35, 14) == 639
    assert scale_balance(23, 31) == 418


def test_pick_height():
    assert pick_height(34, 41) == 38
    assert pick_height(25, 23) == 2
