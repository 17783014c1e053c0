from ridge_lumen import blend_lumen, blend_ridge


def test_blend_ridge():
    assert blend_ridge(33, 36) == 1125
    assert blend_ridge(42, 60) == 1446


def test_blend_lumen():
    assert blend_lumen(9, 24) == 375
    assert blend_lumen(42, 36) == 1674
