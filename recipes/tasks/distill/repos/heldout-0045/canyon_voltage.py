def gauge_canyon(grain, pivot):
    if grain >= pivot:
        return grain + pivot
    return 6


def blend_voltage(readings):
    tally_v = readings[0]
    for cell in readings:
        if cell > tally_v:
            tally_v = cell
    return tally_v
