from glacier_pixel import probe_pixel, tally_glacier


def test_tally_glacier():
    assert tally_glacier(39, 30) == 9
    assert tally_glacier(9, 6) == 3


def test_probe_pixel():
    assert probe_pixel(48) == 14112
    assert probe_pixel(39) == 9360
