package io.clawfleet.sandbox.exec;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/** Facts about processes read from {@code /proc}, for limits and clean-up without bubblewrap. */
final class ProcessCount {

    private static final Path PROC = Path.of("/proc");

    private ProcessCount() {
    }

    static int currentUid() {
        try {
            return ((Number) Files.getAttribute(PROC.resolve("self"), "unix:uid")).intValue();
        } catch (IOException | UnsupportedOperationException e) {
            return -1;
        }
    }

    /** Tasks (threads included, as RLIMIT_NPROC counts them) whose owner is {@code uid}. */
    static int tasksOf(int uid) {
        int tasks = 0;
        try (DirectoryStream<Path> processes = Files.newDirectoryStream(PROC, ProcessCount::isPid)) {
            for (Path process : processes) {
                try {
                    if (((Number) Files.getAttribute(process, "unix:uid")).intValue() == uid) {
                        try (DirectoryStream<Path> threads = Files.newDirectoryStream(process.resolve("task"))) {
                            for (Path ignored : threads) {
                                tasks++;
                            }
                        }
                    }
                } catch (IOException e) {
                    // It exited while we looked.
                }
            }
        } catch (IOException e) {
            return 0;
        }
        return tasks;
    }

    /** Whether any live process is in process group {@code pgid} (so the number still names that group). */
    static boolean groupHasMembers(long pgid) {
        try (DirectoryStream<Path> processes = Files.newDirectoryStream(PROC, ProcessCount::isPid)) {
            for (Path process : processes) {
                try {
                    String stat = Files.readString(process.resolve("stat"));
                    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so read after the last ')'.
                    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    if (fields.length > 2 && Long.parseLong(fields[2]) == pgid) {
                        return true;
                    }
                } catch (IOException | RuntimeException e) {
                    // It exited while we looked.
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }

    private static boolean isPid(Path path) {
        String name = path.getFileName().toString();
        return !name.isEmpty() && name.chars().allMatch(Character::isDigit);
    }
}
