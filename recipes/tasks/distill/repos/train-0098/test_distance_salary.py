from distance_salary import score_salary, total_distance


def test_total_distance():
    assert total_distance([26, 4, 29, 35, 37], 4) == 5
    assert total_distance([29, 26, 46], 26) == 3


def test_score_salary():
    assert score_salary(40) == 11480
    assert score_salary(44) == 13860
