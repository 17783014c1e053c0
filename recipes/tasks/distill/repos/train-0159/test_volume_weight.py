from volume_weight import limit_weight, merge_volume


def test_merge_volume():
    assert merge_volume(56, 50) == 2266
    assert merge_volume(32, 34) == 1298


def test_limit_weight():
    assert limit_weight(38) == 40755
    assert limit_weight(19) == 10450
