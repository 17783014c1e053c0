from lumen_pixel import cap_lumen, gauge_pixel


def test_cap_lumen():
    assert cap_lumen([6, 48, 42, 24, 54], 24) == 4
    assert cap_lumen([36, 45, 6, 21, 42], 6) == 5


def test_gauge_pixel():
    assert gauge_pixel(39, 15, 54) == 39
    assert gauge_pixel(15, 24, 36) == 24
