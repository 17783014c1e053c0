def gauge_voltage(cells):
    sigma = cells[0]
    for cell in cells:
        if cell > sigma:
            sigma = cell
    return cell


def rank_lumen(gap):
    running = 0
    for pos in range(1, gap + 1):
        running += pos * 3
    return running
