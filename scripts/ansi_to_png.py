#!/usr/bin/python3
"""Renders a terminal capture with colours (tmux capture-pane -e -p) to a
PNG, cell by cell in DejaVu Sans Mono: how docs/top.png was made from a real
`connscope top` screen. Needs python3-pil (Debian); no test uses it.

  tmux capture-pane -e -p -t top > top.ansi
  /usr/bin/python3 scripts/ansi_to_png.py top.ansi docs/top.png
"""
import re
import sys

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
FONT_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
SIZE = 15
BG, FG = (30, 30, 30), (215, 215, 215)
PALETTE = [(0, 0, 0), (224, 90, 80), (110, 200, 110), (220, 190, 80),
           (100, 150, 230), (200, 120, 200), (90, 200, 210), (215, 215, 215)]
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(line):
    """(char, fg, bold, dim, reverse) for each column of one captured line."""
    state = {"fg": None, "bold": False, "dim": False, "reverse": False}
    out, at = [], 0
    for m in SGR.finditer(line + "\x1b[m"):
        for ch in line[at:m.start()]:
            out.append((ch, state["fg"], state["bold"], state["dim"], state["reverse"]))
        at = m.end()
        codes = [int(c) for c in m.group(1).split(";") if c] or [0]
        for c in codes:
            if c == 0:
                state = {"fg": None, "bold": False, "dim": False, "reverse": False}
            elif c == 1:
                state["bold"] = True
            elif c == 2:
                state["dim"] = True
            elif c == 7:
                state["reverse"] = True
            elif c == 22:
                state["bold"] = state["dim"] = False
            elif c == 27:
                state["reverse"] = False
            elif 30 <= c <= 37:
                state["fg"] = PALETTE[c - 30]
            elif 90 <= c <= 97:
                state["fg"] = PALETTE[c - 90]
            elif c == 39:
                state["fg"] = None
    return out


def main():
    lines = open(sys.argv[1], encoding="utf-8").read().rstrip("\n").split("\n")
    font, bold = ImageFont.truetype(FONT, SIZE), ImageFont.truetype(FONT_BOLD, SIZE)
    width = max(int(font.getlength("M")), 1)
    height = SIZE + 4
    cols = max(len(cells(l)) for l in lines)
    image = Image.new("RGB", (cols * width + 16, len(lines) * height + 16), BG)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        for col, (ch, fg, is_bold, dim, reverse) in enumerate(cells(line)):
            x, y = 8 + col * width, 8 + row * height
            color = fg or FG
            if dim:
                color = tuple(c * 6 // 10 for c in color)
            back = BG
            if reverse:
                color, back = BG, color
                draw.rectangle([x, y, x + width, y + height], fill=back)
            if "\u2581" <= ch <= "\u2588":  # block elements: drawn to fill the cell's height
                eighths = ord(ch) - 0x2580
                draw.rectangle([x, y + height - height * eighths // 8, x + width - 1, y + height - 1], fill=color)
            elif ch != " ":
                draw.text((x, y), ch, font=bold if is_bold else font, fill=color)
    image.save(sys.argv[2])


if __name__ == "__main__":
    main()
