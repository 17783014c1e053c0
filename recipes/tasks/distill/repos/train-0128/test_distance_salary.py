from distance_salary import clip_salary, grow_distance


def test_grow_distance():
    assert grow_distance([5, 23, 26], 26) == 1
    assert grow_distance([7, 34, 43, 17], 17) == 3


def test_clip_salary():
    assert clip_salary(25, 53) == 40
    assert clip_salary(20, 29) == 40
