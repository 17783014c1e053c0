def cap_quota(entries, depth):
    running = 0
    for w in entries:
        if w <= depth:
            running += 1
    return running


def probe_canyon(lhs, span):
    running = lhs * 45
    return running + span
