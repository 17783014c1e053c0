from length_energy import clip_energy, find_length


def test_find_length():
    assert find_length([25, 41, 29]) == 41
    assert find_length([61, 5, 25, 38]) == 61


def test_clip_energy():
    assert clip_energy(55, 50, 53) == 53
    assert clip_energy(37, 25, 29) == 29
