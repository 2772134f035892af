# SPDX-License-Identifier: MIT
# A CPython target whose threads sit in known Python stacks; it writes those
# stacks, as sys._current_frames() sees them, to READYFILE once they are
# still.  One line per thread: TID KIND then name:line, innermost first.
# Usage: python pystacks.py [-s SECONDS] -r READYFILE
import ctypes
import getopt
import os
import sys
import threading
import time

OPTS = dict(getopt.getopt(sys.argv[1:], "s:r:")[0])
SECONDS = float(OPTS.get("-s", "60"))
stop = threading.Event()


def nap_inner():
    time.sleep(SECONDS)


def nap_middle():
    nap_inner()


def nap_outer():
    nap_middle()


def call_c():
    # A C extension (_ctypes, libffi) calls libc: native frames above this one.
    ctypes.CDLL(None).sleep(int(SECONDS))


class Spinner:
    def run(self):
        while not stop.is_set():
            self.work()

    def work(self):
        total = 0
        for i in range(2000):
            total += i * i
        return total


def recurse(n):
    if n == 0:
        return stop.wait(SECONDS)
    return recurse(n - 1)


def code_name(f):
    code = f.f_code
    return getattr(code, "co_qualname", code.co_name)


def stack_of(frame):
    out = []
    while frame is not None:
        out.append("%s:%d" % (code_name(frame), frame.f_lineno))
        frame = frame.f_back
    return out


def snapshot(threads):
    frames = sys._current_frames()
    return {t.native_id: stack_of(frames.get(t.ident)) for t, _ in threads}


def report(path, threads):
    """Waits until the still threads' stacks stop changing, then writes them."""
    kinds = {t.native_id: kind for t, kind in threads}
    last = None
    while True:
        now = snapshot(threads)
        still = {tid: s for tid, s in now.items() if kinds[tid] != "spin"}
        naps = [s for tid, s in still.items() if kinds[tid] in ("nap", "cext")]
        if last == still and all(s and s[0].split(":")[0] in ("nap_inner", "call_c")
                                 for s in naps):
            break
        last = still
        time.sleep(0.2)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("python %d.%d.%d\n" % sys.version_info[:3])
        for t, kind in threads:
            f.write("%d %s %s\n" % (t.native_id, kind, " ".join(now[t.native_id])))
    os.rename(tmp, path)


def main():
    path = OPTS["-r"]
    threads = [(threading.main_thread(), "main")]
    for name, kind, target in (("napper", "nap", nap_outer),
                               ("spinner", "spin", Spinner().run),
                               ("waiter", "wait", lambda: recurse(5)),
                               ("cext", "cext", call_c)):
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        threads.append((t, kind))
    while any(t.native_id is None for t, _ in threads):
        time.sleep(0.01)
    reporter = threading.Thread(target=report, args=(path, threads), daemon=True)
    reporter.start()
    stop.wait(SECONDS)
    stop.set()


if __name__ == "__main__":
    main()
