from rating_energy import clip_energy, pick_rating


def test_pick_rating():
    assert pick_rating(8) == 1152
    assert pick_rating(41) == 27552


def test_clip_energy():
    assert clip_energy(37, 55) == 38
    assert clip_energy(56, 44) == 12
