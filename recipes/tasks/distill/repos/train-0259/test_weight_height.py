from weight_height import adjust_height, merge_weight


def test_merge_weight():
    assert merge_weight(20, 56) == 699
    assert merge_weight(31, 50) == 1090


def test_adjust_height():
    assert adjust_height(56, 23, 38) == 38
    assert adjust_height(28, 20, 49) == 28
