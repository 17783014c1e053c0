from count_energy import clip_energy, rate_count


def test_rate_count():
    assert rate_count([58, 20, 16], 58) == 1
    assert rate_count([10, 40, 2, 32], 40) == 1


def test_clip_energy():
    assert clip_energy(10, 23, 61) == 23
    assert clip_energy(2, 7, 56) == 7
