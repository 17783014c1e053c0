from weight_rating import pick_weight, trim_rating


def test_pick_weight():
    assert pick_weight(25, 26) == 426
    assert pick_weight(38, 28) == 636


def test_trim_rating():
    assert trim_rating(32, 19) == 13
    assert trim_rating(43, 17) == 26
