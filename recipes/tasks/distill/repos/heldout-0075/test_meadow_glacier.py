from meadow_glacier import cap_glacier, warp_meadow


def test_warp_meadow():
    assert warp_meadow([48, 42, 21], 48) == 1
    assert warp_meadow([36, 48, 18], 48) == 1


def test_cap_glacier():
    assert cap_glacier(21, 9) == 12
    assert cap_glacier(36, 12) == 24
