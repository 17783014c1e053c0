from volume_weight import merge_weight, trim_volume


def test_trim_volume():
    assert trim_volume(41, 14) == 27
    assert trim_volume(58, 31) == 27


def test_merge_weight():
    assert merge_weight(16, 13) == 845
    assert merge_weight(38, 14) == 1990
