from canyon_voltage import probe_voltage, warp_canyon


def test_warp_canyon():
    assert warp_canyon([54, 51, 9, 3, 60]) == 60
    assert warp_canyon([48, 45, 39]) == 48


def test_probe_voltage():
    assert probe_voltage(42) == 51471
    assert probe_voltage(18) == 9747
