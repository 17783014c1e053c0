from balance_distance import merge_distance, pick_balance


def test_pick_balance():
    assert pick_balance(53, 53) == 0
    assert pick_balance(61, 49) == 12


def test_merge_distance():
    assert merge_distance(52) == 27560
    assert merge_distance(34) == 11900
