from glacier_orbit import nudge_orbit, tally_glacier


def test_tally_glacier():
    assert tally_glacier([30, 9, 6], 30) == 1
    assert tally_glacier([15, 45, 45], 45) == 2


def test_nudge_orbit():
    assert nudge_orbit(9) == 1485
    assert nudge_orbit(6) == 693
