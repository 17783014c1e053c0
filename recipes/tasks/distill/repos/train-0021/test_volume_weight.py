from volume_weight import merge_volume, rate_weight


def test_merge_volume():
    assert merge_volume(20, 52) == 4
    assert merge_volume(4, 47) == 4


def test_rate_weight():
    assert rate_weight(10, 35) == 55
    assert rate_weight(29, 17) == 12
