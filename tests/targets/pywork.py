# SPDX-License-Identifier: MIT
# A CPython target for sampling sessions: known shares of CPU between two
# Python functions, a C extension called in a loop, threads of the
# threading module, a thread asleep, or an exec of another interpreter.
# Runs -s SECONDS (or until SIGUSR2), then prints "result: OK".
# Usage: python pywork.py -m MODE [-s SECONDS] [-x PYTHON] -r READYFILE
#   shares:  main thread: 70% of its CPU in hot_part, 30% in cold_part
#   cext:    main thread: zlib.compress in a loop, from compress_loop
#   threads: two threading.Thread workers (worker_a, worker_b) spinning
#   sleep:   a thread asleep in time.sleep (nap), main thread spinning
#   rate:    main thread spins, and prints "iterations: N" at the end
#   exec:    before_exec spins, then the process execs -x PYTHON on this
#            script (mode after_exec), which spins in after_exec
import getopt
import os
import signal
import sys
import threading
import time
import zlib

OPTS = dict(getopt.getopt(sys.argv[1:], "m:s:x:r:")[0])
MODE = OPTS.get("-m", "shares")
SECONDS = float(OPTS.get("-s", "60"))
END = time.monotonic() + SECONDS
stop = threading.Event()


def on_usr2(signum, frame):
    stop.set()


def over():
    return stop.is_set() or time.monotonic() >= END


def burn(until):
    # CPU until this thread's CPU clock reaches until.
    n = 0
    while time.thread_time() < until:
        n += 1
    return n


def hot_part(until):
    return burn(until)


def cold_part(until):
    return burn(until)


def shares():
    # A cycle of 13.1 ms of CPU: no multiple of a sampling period.
    while not over():
        t = time.thread_time()
        hot_part(t + 0.00917)
        cold_part(t + 0.0131)


def compress_loop():
    data = bytes(range(256)) * 256 + os.urandom(1 << 16)
    while not over():
        zlib.compress(data, 9)


def spin():
    total = 0
    while not over():
        for i in range(1000):
            total += i * i
    return total


def rate():
    n = 0
    while not over():
        for i in range(1000):
            n += 1
    print("iterations: %d" % n)


def worker_a():
    spin()


def worker_b():
    spin()


def nap():
    while not over():
        time.sleep(0.2)


def before_exec():
    burn(time.thread_time() + 1.0)


def after_exec():
    spin()


def ready():
    with open(OPTS["-r"] + ".tmp", "w") as f:
        f.write("%d.%d.%d %s\n" % (sys.version_info[:3] + (sys.executable,)))
    os.rename(OPTS["-r"] + ".tmp", OPTS["-r"])


def main():
    signal.signal(signal.SIGUSR2, on_usr2)
    threads = []
    if MODE == "threads":
        threads = [threading.Thread(target=worker_a), threading.Thread(target=worker_b)]
    elif MODE == "sleep":
        threads = [threading.Thread(target=nap)]
    for t in threads:
        t.start()
    if MODE != "after_exec":
        ready()
    if MODE == "shares":
        shares()
    elif MODE == "cext":
        compress_loop()
    elif MODE == "rate":
        rate()
    elif MODE in ("threads", "sleep"):
        if MODE == "sleep":
            spin()
        for t in threads:
            t.join()
    elif MODE == "exec":
        before_exec()
        left = "%.3f" % max(END - time.monotonic(), 0.5)
        sys.stdout.flush()
        os.execv(OPTS["-x"], [OPTS["-x"], sys.argv[0], "-m", "after_exec", "-s", left])
    elif MODE == "after_exec":
        after_exec()
    print("result: OK")


main()
