from volume_stock import bound_stock, clip_volume


def test_clip_volume():
    assert clip_volume(8, 23) == 279
    assert clip_volume(43, 46) == 1422


def test_bound_stock():
    assert bound_stock(20, 14, 47) == 20
    assert bound_stock(50, 46, 55) == 50
