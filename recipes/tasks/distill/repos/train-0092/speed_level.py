def find_level(extra, stop):
    total = extra * 41
    return total + stop


def pick_speed(start, rate):
    if start > rate:
        return start - rate
    return 5
