package io.clawfleet.sandbox.exec;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The seccomp filter every bubblewrap run gets ({@code bwrap --seccomp FD}): a classic BPF program that refuses, with
 * {@code EPERM}, the system calls no tool needs and an escape would: loading kernel modules, mounting, {@code ptrace}
 * and reading other processes' memory, the kernel keyring, {@code bpf}, {@code perf_event_open}, entering or making
 * namespaces, {@code userfaultfd}, {@code io_uring}, file handles, the clock, swap, reboot, {@code kexec}. {@code clone3}
 * answers {@code ENOSYS}, so the C library falls back to {@code clone}, whose flags user namespaces (refused by
 * {@code --disable-userns}) and dropped capabilities already confine. A call of another architecture's ABI (x32,
 * i386 on x86_64) kills the process: the filter's numbers would not mean the same calls there.
 * <p>
 * Only x86_64 has a table: on other architectures runs get no filter and the node says so at start (the namespaces,
 * dropped capabilities and rlimits stay). The program is made once per node and written as a file the run's user can
 * read; it holds nothing secret.
 */
public final class SeccompFilter {

    /** {@code AUDIT_ARCH_X86_64}. */
    static final int AUDIT_ARCH_X86_64 = 0xC000003E;
    /** x32 system calls on x86_64 have this bit set. */
    static final int X32_SYSCALL_BIT = 0x40000000;

    static final int RET_KILL_PROCESS = 0x80000000;
    static final int RET_ALLOW = 0x7FFF0000;
    static final int RET_ERRNO = 0x00050000;
    static final int EPERM = 1;
    static final int ENOSYS = 38;

    // BPF instruction classes and modes
    private static final short LD_W_ABS = 0x20;
    private static final short JEQ_K = 0x15;
    private static final short JGE_K = 0x35;
    private static final short RET_K = 0x06;
    /** offsetof(struct seccomp_data, nr) and arch. */
    private static final int NR = 0;
    private static final int ARCH = 4;

    /** x86_64 numbers of the calls refused with {@code EPERM}, by name. */
    static final Map<String, Integer> DENIED_X86_64 = denied();

    private static Map<String, Integer> denied() {
        Map<String, Integer> calls = new TreeMap<>();
        // debugging and other processes' memory
        calls.put("ptrace", 101);
        calls.put("process_vm_readv", 310);
        calls.put("process_vm_writev", 311);
        calls.put("kcmp", 312);
        // kernel modules and kexec
        calls.put("init_module", 175);
        calls.put("finit_module", 313);
        calls.put("delete_module", 176);
        calls.put("create_module", 174);
        calls.put("kexec_load", 246);
        calls.put("kexec_file_load", 320);
        // mounts and the new mount API
        calls.put("mount", 165);
        calls.put("umount2", 166);
        calls.put("pivot_root", 155);
        calls.put("open_tree", 428);
        calls.put("move_mount", 429);
        calls.put("fsopen", 430);
        calls.put("fsconfig", 431);
        calls.put("fsmount", 432);
        calls.put("fspick", 433);
        calls.put("mount_setattr", 442);
        // namespaces
        calls.put("unshare", 272);
        calls.put("setns", 308);
        // keyring, bpf, perf
        calls.put("keyctl", 250);
        calls.put("add_key", 248);
        calls.put("request_key", 249);
        calls.put("bpf", 321);
        calls.put("perf_event_open", 298);
        // kernel attack surface no tool needs
        calls.put("userfaultfd", 323);
        calls.put("io_uring_setup", 425);
        calls.put("io_uring_enter", 426);
        calls.put("io_uring_register", 427);
        calls.put("open_by_handle_at", 304);
        calls.put("name_to_handle_at", 303);
        calls.put("lookup_dcookie", 212);
        calls.put("fanotify_init", 300);
        calls.put("uselib", 134);
        calls.put("_sysctl", 156);
        calls.put("syslog", 103);
        calls.put("vhangup", 153);
        calls.put("iopl", 172);
        calls.put("ioperm", 173);
        // the machine's state
        calls.put("reboot", 169);
        calls.put("swapon", 167);
        calls.put("swapoff", 168);
        calls.put("acct", 163);
        calls.put("quotactl", 179);
        calls.put("quotactl_fd", 443);
        calls.put("settimeofday", 164);
        calls.put("clock_settime", 227);
        calls.put("clock_adjtime", 305);
        calls.put("adjtimex", 159);
        calls.put("sethostname", 170);
        calls.put("setdomainname", 171);
        return Map.copyOf(calls);
    }

    /** {@code clone3} on x86_64: answered {@code ENOSYS} (the C library then uses {@code clone}). */
    static final int CLONE3_X86_64 = 435;

    private SeccompFilter() {
    }

    /** Whether this JVM's architecture has a filter ({@code os.arch}). */
    public static boolean supported() {
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        return arch.equals("amd64") || arch.equals("x86_64");
    }

    /** The program as the kernel reads it: {@code struct sock_filter} entries in native (little-endian) order. */
    public static byte[] program() {
        List<Integer> denied = new ArrayList<>(DENIED_X86_64.values());
        denied.sort(Integer::compareTo);
        // Layout: arch check, load nr, x32 check, clone3, the denied calls, then the returns: allow (the
        // fall-through), kill, ENOSYS, EPERM.
        int allow = 6 + denied.size();
        int kill = allow + 1;
        int enosys = allow + 2;
        int eperm = allow + 3;
        List<int[]> code = new ArrayList<>();   // {code, jt, jf, k}
        code.add(new int[]{LD_W_ABS, 0, 0, ARCH});
        code.add(new int[]{JEQ_K, 1, 0, AUDIT_ARCH_X86_64});
        code.add(new int[]{RET_K, 0, 0, RET_KILL_PROCESS});
        code.add(new int[]{LD_W_ABS, 0, 0, NR});
        code.add(new int[]{JGE_K, jump(code.size(), kill), 0, X32_SYSCALL_BIT});
        code.add(new int[]{JEQ_K, jump(code.size(), enosys), 0, CLONE3_X86_64});
        for (int nr : denied) {
            code.add(new int[]{JEQ_K, jump(code.size(), eperm), 0, nr});
        }
        code.add(new int[]{RET_K, 0, 0, RET_ALLOW});
        code.add(new int[]{RET_K, 0, 0, RET_KILL_PROCESS});
        code.add(new int[]{RET_K, 0, 0, RET_ERRNO | ENOSYS});
        code.add(new int[]{RET_K, 0, 0, RET_ERRNO | EPERM});
        if (code.size() != eperm + 1) {
            throw new IllegalStateException("filter layout");
        }
        return encode(code);
    }

    /** A conditional jump's offset from the instruction at {@code from} to {@code to} (counted from the next one). */
    private static int jump(int from, int to) {
        int offset = to - from - 1;
        if (offset < 0 || offset > 255) {
            throw new IllegalStateException("jump out of range: " + offset);
        }
        return offset;
    }

    private static byte[] encode(List<int[]> code) {
        ByteBuffer out = ByteBuffer.allocate(code.size() * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (int[] insn : code) {
            out.putShort((short) insn[0]).put((byte) insn[1]).put((byte) insn[2]).putInt(insn[3]);
        }
        return out.array();
    }
}
