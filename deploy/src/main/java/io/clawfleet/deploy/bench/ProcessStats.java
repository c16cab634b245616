package io.clawfleet.deploy.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * CPU time and resident memory of processes, read from Linux's /proc: {@code utime + stime} of
 * /proc/PID/stat (clock ticks, 100 per second on Linux) and {@code VmRSS} of /proc/PID/status.
 */
final class ProcessStats {

    /** USER_HZ; the kernel reports it as 100 on every architecture Linux runs a JVM on. */
    private static final long TICKS_PER_SECOND = 100;

    private ProcessStats() {
    }

    static boolean available() {
        return Files.isReadable(Path.of("/proc/self/stat"));
    }

    /** CPU milliseconds the process has used so far (user + system), or -1 if it is gone. */
    static long cpuMillis(long pid) {
        String[] fields = statFields(pid);
        if (fields == null) {
            return -1;
        }
        return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * 1000 / TICKS_PER_SECOND;
    }

    /** CPU milliseconds of children the process has waited for (PostgreSQL backends that exited). */
    static long reapedChildrenCpuMillis(long pid) {
        String[] fields = statFields(pid);
        if (fields == null) {
            return 0;
        }
        return (Long.parseLong(fields[13]) + Long.parseLong(fields[14])) * 1000 / TICKS_PER_SECOND;
    }

    static long parentPid(long pid) {
        String[] fields = statFields(pid);
        return fields == null ? -1 : Long.parseLong(fields[1]);
    }

    /**
     * CPU milliseconds per kind of thread (the kernel's thread name with digits dropped, e.g.
     * "vert.x-eventloop-thread-", "C2 CompilerThread", "VM Thread"): where a JVM's CPU goes,
     * compiler and GC threads included, which a Java sampling profiler does not see.
     */
    static java.util.Map<String, Long> threadCpuMillis(long pid) {
        java.util.Map<String, Long> byKind = new java.util.TreeMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            tasks.forEach(task -> {
                try {
                    String stat = Files.readString(task.resolve("stat"));
                    String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replaceAll("[0-9]+", "#");
                    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
                    long millis = (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * 1000 / TICKS_PER_SECOND;
                    byKind.merge(name, millis, Long::sum);
                } catch (IOException | RuntimeException e) {
                    // The thread ended between listing and reading.
                }
            });
        } catch (IOException e) {
            // The process is gone.
        }
        return byKind;
    }

    /** Resident set size in KiB, or -1 if the process is gone. */
    static long rssKib(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
                }
            }
            return -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The live processes whose parent is {@code pid}. */
    static List<Long> children(long pid) {
        List<Long> children = new ArrayList<>();
        try (Stream<Path> entries = Files.list(Path.of("/proc"))) {
            entries.map(p -> p.getFileName().toString()).filter(n -> n.chars().allMatch(Character::isDigit))
                    .map(Long::parseLong).filter(child -> parentPid(child) == pid).forEach(children::add);
        } catch (IOException e) {
            // No /proc listing: report no children rather than wrong ones.
        }
        return children;
    }

    /**
     * The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses):
     * index 0 is the state, 1 the parent pid, 11 utime, 12 stime, 13 cutime, 14 cstime.
     */
    private static String[] statFields(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            return stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
