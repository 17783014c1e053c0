from glacier_tide import blend_glacier, gauge_tide


def test_blend_glacier():
    assert blend_glacier(27, 48) == 573
    assert blend_glacier(45, 57) == 942


def test_gauge_tide():
    assert gauge_tide(36, 54) == 1242
    assert gauge_tide(12, 6) == 402
