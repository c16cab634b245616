package io.clawfleet.sandbox.exec;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A sandboxed program that serves many exchanges over its stdin and stdout (a warm MCP server), started by
 * {@link ProcessSandbox#open}. Its stdout counts bytes against the output cap per message, not over its whole
 * life: {@link #newMessage()} starts a new count, and a read past the cap fails. Its stderr keeps only the last
 * {@link #STDERR_TAIL} bytes, so a chatty program cannot fill the node's memory. {@link #close()} kills it and
 * everything it started and removes its run directory; at {@code lifeMs} it is killed whatever it is doing.
 * Thread-safe; its own threads (the stderr reader, the life watchdog) are virtual.
 */
public final class LongRun implements AutoCloseable {

    /** Bytes of stderr kept: the end of what the program wrote. */
    public static final int STDERR_TAIL = 8_192;
    private static final Logger LOG = LoggerFactory.getLogger(LongRun.class);
    private static final long READER_GRACE_MS = 2_000;

    private final ProcessSandbox sandbox;
    private final Process process;
    private final RunDirectory dir;
    private final ProcessSandbox.Spec spec;
    private final Meter stdout;
    private final Tail stderr = new Tail(STDERR_TAIL);
    private final Thread stderrReader;
    private final Thread watchdog;
    private final AtomicBoolean closed = new AtomicBoolean();

    LongRun(ProcessSandbox sandbox, Process process, RunDirectory dir, ProcessSandbox.Spec spec, int cap, long lifeMs) {
        this.sandbox = sandbox;
        this.process = process;
        this.dir = dir;
        this.spec = spec;
        this.stdout = new Meter(process.getInputStream(), cap);
        this.stderrReader = Thread.ofVirtual().name("sandbox-long-stderr").start(() -> stderr.drain(process.getErrorStream()));
        this.watchdog = Thread.ofVirtual().name("sandbox-long-life").start(() -> {
            try {
                if (!process.waitFor(lifeMs, TimeUnit.MILLISECONDS)) {
                    LOG.warn("a long run reached its life limit and was killed [pid: {}, ms: {}]", process.pid(), lifeMs);
                    sandbox.kill(process);
                }
            } catch (InterruptedException e) {
                // Closed before its life ended.
            }
        });
    }

    /** The program's stdin; closing it tells the program no more will come. */
    public OutputStream stdin() {
        return process.getOutputStream();
    }

    /** The program's stdout, counted: a read that takes the current message past the cap fails with an {@link IOException}. */
    public InputStream stdout() {
        return stdout;
    }

    /** Starts the count of a new message at zero (before sending a request whose answer is capped on its own). */
    public void newMessage() {
        stdout.newCount();
    }

    /** Whether the current message went past the output cap. */
    public boolean outputLimited() {
        return stdout.overflowed;
    }

    /** Whether stdout reached its end: the program closed it (it exited, or is exiting). */
    public boolean outputEnded() {
        return stdout.ended;
    }

    public boolean alive() {
        return process.isAlive();
    }

    /** The outermost process of the run (bubblewrap, or pasta when the run has a network of its own). */
    public long pid() {
        return process.pid();
    }

    /** The program's exit code (128 + signal when killed), or -1 while it runs. */
    public int exitCode() {
        return process.isAlive() ? -1 : process.exitValue();
    }

    /** Waits up to {@code ms} for the program to exit, then for what it wrote on stderr to be read; whether it exited. */
    public boolean awaitExit(long ms) throws InterruptedException {
        if (!process.waitFor(ms, TimeUnit.MILLISECONDS)) {
            return false;
        }
        stderrReader.join(Duration.ofMillis(ms));
        return true;
    }

    /** How many bytes the program has written on stderr so far: a mark for {@link #stderrSince}. */
    public long stderrMark() {
        return stderr.total();
    }

    /** What it wrote on stderr since {@code mark}, as far as the tail still holds it, with the node's egress note. */
    public String stderrSince(long mark) {
        return sandbox.withEgressNote(stderr.since(mark), spec);
    }

    /** The tail of its stderr, with the node's egress note. */
    public String stderr() {
        return stderrSince(0);
    }

    /**
     * A program that exited before it could serve (at its start) may have been stopped by the sandbox itself,
     * not by its own fault.
     *
     * @throws SetupFailure when the sandbox no longer works on this node
     */
    public void checkStarted() throws SetupFailure {
        if (!process.isAlive()) {
            sandbox.checkSandboxStarted(process.exitValue(), stderr.since(0), spec);
        }
    }

    /** Kills the program and everything it started, and removes its run directory. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        watchdog.interrupt();
        sandbox.kill(process);
        try {
            process.waitFor(READER_GRACE_MS, TimeUnit.MILLISECONDS);
            stderrReader.join(Duration.ofMillis(READER_GRACE_MS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (stderrReader.isAlive()) {
            LOG.warn("a long run's stderr stayed open after it was killed (a process escaped its group?) [pid: {}]", process.pid());
        }
        closeQuietly(process.getOutputStream());
        closeQuietly(process.getInputStream());
        closeQuietly(process.getErrorStream());
        sandbox.forget(process);
        try {
            dir.close();
        } catch (UncheckedIOException e) {
            LOG.warn("a long run's directory cannot be removed [pid: {}]: {}", process.pid(), e.getMessage());
        }
    }

    private static void closeQuietly(java.io.Closeable stream) {
        try {
            stream.close();
        } catch (IOException e) {
            // Closed already.
        }
    }

    /** Counts the bytes read of the current message; past the cap, every read fails until the next message. */
    private static final class Meter extends FilterInputStream {
        private final int cap;
        private volatile long count;
        private volatile boolean overflowed;
        private volatile boolean ended;

        Meter(InputStream in, int cap) {
            super(in);
            this.cap = cap;
        }

        void newCount() {
            count = 0;
            overflowed = false;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int read = read(one, 0, 1);
            return read < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            if (overflowed) {
                throw new IOException("the program wrote more than " + cap + " bytes");
            }
            int read = super.read(buffer, offset, length);
            if (read < 0) {
                ended = true;
            } else if ((count += read) > cap) {
                overflowed = true;
                throw new IOException("the program wrote more than " + cap + " bytes");
            }
            return read;
        }
    }

    /** The last {@code size} bytes of a stream, and how many it carried in all. */
    private static final class Tail {
        private final byte[] ring;
        private long total;

        Tail(int size) {
            this.ring = new byte[size];
        }

        void drain(InputStream in) {
            byte[] buffer = new byte[4_096];
            try (in) {
                int read;
                while ((read = in.read(buffer)) >= 0) {
                    append(buffer, read);
                }
            } catch (IOException e) {
                // The pipe closed under the read: the program is gone.
            }
        }

        private synchronized void append(byte[] bytes, int length) {
            for (int i = 0; i < length; i++) {
                ring[(int) (total++ % ring.length)] = bytes[i];
            }
        }

        synchronized long total() {
            return total;
        }

        /** What was written since {@code mark} and is still held, as UTF-8 (a character cut at the start becomes U+FFFD). */
        synchronized String since(long mark) {
            long from = Math.max(mark, Math.max(0, total - ring.length));
            byte[] out = new byte[(int) (total - from)];
            for (int i = 0; i < out.length; i++) {
                out[i] = ring[(int) ((from + i) % ring.length)];
            }
            return new String(out, StandardCharsets.UTF_8);
        }
    }
}
