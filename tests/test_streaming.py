"""Importers stream: memory follows the number of distinct stacks and samples, not the
size of the file (a 1 GB text must not be read into memory at once)."""
import io
import tracemalloc

from analysis.importers import perf_script
from conftest import SPINPOOL

SOURCE = (SPINPOOL / "1.0.0-busy.truth-script.txt").read_bytes()


class RepeatedInput(io.RawIOBase):
    """The same capture text `times` times over, produced as it is read."""

    def __init__(self, times: int) -> None:
        self.left = times
        self.buf = b""

    def readable(self):
        return True

    def readinto(self, b):
        while not self.buf and self.left:
            self.buf = SOURCE + b"\n"
            self.left -= 1
        n = min(len(b), len(self.buf))
        b[:n] = self.buf[:n]
        self.buf = self.buf[n:]
        return n


def _peak(times: int) -> tuple[int, int]:
    tracemalloc.start()
    try:
        p = perf_script.parse(io.BufferedReader(RepeatedInput(times)))
        return tracemalloc.get_traced_memory()[1], p.sample_count()
    finally:
        tracemalloc.stop()


def test_memory_does_not_follow_file_size():
    small, n_small = _peak(10)
    large, n_large = _peak(80)
    assert (n_small, n_large) == (9730, 77840)
    input_growth = 70 * len(SOURCE)  # 26 MB more text
    # per-sample columns grow (48 bytes a sample); the text itself is never held
    assert large - small < input_growth / 5
    assert large < 80 * len(SOURCE) / 2
