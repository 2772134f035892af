// SPDX-License-Identifier: MIT
// NpeLoop: a Java thread that throws and catches NullPointerException in a
// loop, the JVM's signal-heavy case: HotSpot compiles the null check into a
// plain load and takes SIGSEGV when it faults.  The target of
// bench/signals.sh.
//
//   java -XX:-OmitStackTraceInFastThrow NpeLoop LOGFILE READYFILE WARMUP_SECONDS
//
// Without -XX:-OmitStackTraceInFastThrow, HotSpot soon throws a
// preallocated exception from an explicit check instead, and no signal is
// raised.  After WARMUP_SECONDS it writes "ready" to READYFILE; from then
// on, every 100 ms, it appends "MONO_NS CAUGHT" to LOGFILE: System.nanoTime()
// (CLOCK_MONOTONIC on Linux) and the exceptions caught so far.  It runs
// until killed.
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

public final class NpeLoop {
    private static volatile long caught;
    private static volatile long sink;

    private static int hashOf(Object o) {
        return o.hashCode();
    }

    private static void work() {
        long n = 0, c = 0;
        for (;;) {
            for (int i = 0; i < 1000; i++) {
                Object o = (i & 1) == 0 ? null : "x";
                try {
                    n += hashOf(o);
                } catch (NullPointerException e) {
                    c++;
                }
            }
            caught = c;
            sink = n;
        }
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        if (args.length != 3) {
            System.err.println("usage: NpeLoop LOGFILE READYFILE WARMUP_SECONDS");
            System.exit(64);
        }
        Thread worker = new Thread(NpeLoop::work, "npe-worker");
        worker.setDaemon(true);
        worker.start();
        Thread.sleep((long) (Double.parseDouble(args[2]) * 1000));
        Files.write(Paths.get(args[1] + ".tmp"), "ready\n".getBytes());
        Files.move(Paths.get(args[1] + ".tmp"), Paths.get(args[1]), StandardCopyOption.ATOMIC_MOVE);
        try (PrintWriter log = new PrintWriter(new FileWriter(args[0]))) {
            for (;;) {
                log.println(System.nanoTime() + " " + caught);
                log.flush();
                if (log.checkError())
                    System.exit(2);
                Thread.sleep(100);
            }
        }
    }
}
