from glacier_canyon import blend_canyon, gauge_glacier


def test_gauge_glacier():
    assert gauge_glacier([6, 3, 15, 30, 30], 30) == 2
    assert gauge_glacier([21, 12, 27], 27) == 1


def test_blend_canyon():
    assert blend_canyon(9, 12) == 390
    assert blend_canyon(18, 12) == 768
