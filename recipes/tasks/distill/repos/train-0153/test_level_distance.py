from level_distance import grow_distance, trim_level


def test_trim_level():
    assert trim_level(31, 25) == 6
    assert trim_level(26, 52) == 59


def test_grow_distance():
    assert grow_distance(44) == 52470
    assert grow_distance(28) == 21518
