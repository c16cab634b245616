package io.clawfleet.sandbox.exec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The read-only system a bubblewrap run sees: {@code /usr} and the top-level program and library
 * folders (as the symlinks they are on merged-/usr hosts), and only the {@code /etc} files programs
 * need to start. Nothing else of the host: no {@code /home}, {@code /root}, {@code /var}, {@code /run},
 * no node configuration, no other {@code /etc} file.
 */
final class SystemMounts {

    private static final List<String> TOP_LEVEL = List.of("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32");
    /** What dynamic linking, locales, time and Debian's alternatives need. */
    private static final List<String> ETC = List.of("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
            "/etc/alternatives", "/etc/localtime", "/etc/mime.types");
    /**
     * What name resolution and TLS need, given only to runs granted the network; their resolv.conf is
     * their own (pasta's DNS forwarder), the host's may name a resolver they cannot reach.
     */
    private static final List<String> ETC_NETWORK = List.of("/etc/hosts", "/etc/nsswitch.conf",
            "/etc/host.conf", "/etc/gai.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/pki");

    private SystemMounts() {
    }

    static List<String> args() {
        List<String> args = new ArrayList<>(List.of("--ro-bind", "/usr", "/usr"));
        for (String dir : TOP_LEVEL) {
            Path path = Path.of(dir);
            if (Files.isSymbolicLink(path)) {
                try {
                    args.addAll(List.of("--symlink", Files.readSymbolicLink(path).toString(), dir));
                } catch (IOException e) {
                    // Unreadable link: leave it out, as if it did not exist.
                }
            } else if (Files.isDirectory(path)) {
                args.addAll(List.of("--ro-bind", dir, dir));
            }
        }
        return args;
    }

    static List<String> etc(boolean network) {
        List<String> args = new ArrayList<>();
        for (String path : ETC) {
            args.addAll(List.of("--ro-bind-try", path, path));
        }
        if (network) {
            for (String path : ETC_NETWORK) {
                args.addAll(List.of("--ro-bind-try", path, path));
            }
        }
        return args;
    }
}
