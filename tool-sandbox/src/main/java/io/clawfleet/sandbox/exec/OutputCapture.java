package io.clawfleet.sandbox.exec;

import java.io.IOException;
import java.io.InputStream;

/** Reads one output stream of a run, keeping at most the cap; past it the run is stopped. */
final class OutputCapture {
    private final int cap;
    private final Runnable stop;
    private final java.io.ByteArrayOutputStream kept = new java.io.ByteArrayOutputStream();
    private volatile boolean overflowed;
    private volatile boolean ended;

    OutputCapture(int cap, Runnable stop) {
        this.cap = cap;
        this.stop = stop;
    }

    void drain(InputStream in) {
        // When the process exits, the JDK moves what is left in the pipe into a buffer and closes the
        // pipe; a read caught in between can fail, and reading again gets those last bytes.
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                copy(in);
                break;
            } catch (IOException e) {
                // The pipe closed under the read: try the buffer once.
            }
        }
        try {
            in.close();
        } catch (IOException e) {
            // Nothing more to read either way.
        }
    }

    private void copy(InputStream in) throws IOException {
        byte[] buffer = new byte[8_192];
        int read;
        while ((read = in.read(buffer)) >= 0) {
            int room = cap - kept.size();
            if (read > room) {
                kept.write(buffer, 0, Math.max(0, room));
                if (!overflowed) {
                    overflowed = true;
                    stop.run();
                }
            } else {
                kept.write(buffer, 0, read);
            }
        }
    }

    boolean overflowed() {
        return overflowed;
    }

    /** Whether a stream given by {@link #limit} reached its end: the program closed its output. */
    boolean ended() {
        return ended;
    }

    /**
     * {@code in} as a stream for a {@link ProcessSandbox.Dialogue}: read bytes are counted, not kept, and past the cap the
     * run is stopped and the read fails.
     */
    InputStream limit(InputStream in) {
        return new java.io.FilterInputStream(in) {
            private long count;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                int read = read(one, 0, 1);
                return read < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] buffer, int offset, int length) throws IOException {
                int read = super.read(buffer, offset, length);
                if (read < 0) {
                    ended = true;
                } else if ((count += read) > cap) {
                    if (!overflowed) {
                        overflowed = true;
                        stop.run();
                    }
                    throw new IOException("the program wrote more than " + cap + " bytes");
                }
                return read;
            }
        };
    }

    /** What was kept, as UTF-8 (a character cut at the cap becomes U+FFFD). */
    String text() {
        synchronized (kept) {
            return kept.toString(java.nio.charset.StandardCharsets.UTF_8);
        }
    }
}
