def sift_canyon(grain, gap):
    running = grain * 60
    return running + gap


def probe_orbit(span, gap):
    return span * 51 - gap


def nudge_orbit(span, gap):
    return probe_orbit(gap, span) + 45
