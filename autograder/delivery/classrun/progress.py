"""A progress bar for long gradings: the count, the rate and the time left.

On a terminal it redraws one line; in a log (CI, ``nohup``) it prints a line every ``every_s``
seconds and at the end, so the log stays readable.
"""
from __future__ import annotations

import shutil
import sys
import time


def clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total, done=0, stream=None, every_s=10.0, clock=time.monotonic):
        self.total, self.done, self.start_done = total, done, done
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.clock = clock
        self.started = self.last_line = clock()
        self.every_s = every_s

    def line(self, note=""):
        """``[#####-----]  57/200  2.4/s  1:00 left  alice 86/86``"""
        elapsed = self.clock() - self.started
        graded = self.done - self.start_done  # this run's: earlier runs' work says nothing of our rate
        rate = graded / elapsed if graded and elapsed > 0 else None
        left = (self.total - self.done) / rate if rate else None
        width = 24
        filled = width * self.done // self.total if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        text = (f"[{bar}] {self.done:>{len(str(self.total))}}/{self.total}"
                f"  {f'{rate:.1f}/s' if rate else '-/s'}"
                f"  {clock(left) + ' left' if left is not None else 'time left: -'}")
        return f"{text}  {note}" if note else text

    def advance(self, note=""):
        self.done += 1
        now = self.clock()
        if self.tty:
            columns = shutil.get_terminal_size((100, 20)).columns
            self.stream.write("\r\033[K" + self.line(note)[:columns - 1])
            if self.done == self.total:
                self.stream.write("\n")
        elif self.done == self.total or now - self.last_line >= self.every_s:
            self.stream.write(self.line(note) + "\n")
            self.last_line = now
        self.stream.flush()

    def say(self, text):
        """A message that must not be drawn over by the bar."""
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        if self.tty and self.done < self.total:
            self.stream.write(self.line())
        self.stream.flush()
