package io.clawfleet.gateway.export;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.streams.WriteStream;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.zip.Deflater;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * A zip archive written entry by entry into a {@link WriteStream} (an HTTP response), holding at
 * most about {@value #CHUNK} bytes of its own: {@link #room()} tells the producer when the stream
 * can take more. Entries are deflated with data descriptors, so no size is needed in advance; the
 * central directory is written by {@link #finish()} only, so an archive that was not finished is
 * one every zip reader refuses.
 */
final class ZipStream {

    /** Bytes gathered before they are handed to the stream. */
    static final int CHUNK = 64 * 1024;

    private final Vertx vertx;
    private final WriteStream<Buffer> out;
    private final long stallTimeoutMs;
    private final Collector collector = new Collector();
    private final ZipOutputStream zip = new ZipOutputStream(collector, StandardCharsets.UTF_8);
    // Read by observers on other threads (tests, logs): volatile, written once per batch at most.
    private volatile Promise<Void> waiting;
    private volatile long bytesOut;

    ZipStream(Vertx vertx, WriteStream<Buffer> out, long stallTimeoutMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.out = Objects.requireNonNull(out);
        this.stallTimeoutMs = stallTimeoutMs;
        // Export runs on an event loop: the fastest level keeps each batch's compression short.
        zip.setLevel(Deflater.BEST_SPEED);
    }

    void begin(String path) {
        try {
            zip.putNextEntry(new ZipEntry(path));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    void write(String text) {
        write(text.getBytes(StandardCharsets.UTF_8));
    }

    void write(byte[] bytes) {
        try {
            zip.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (collector.pending.length() >= CHUNK) {
            flush();
        }
    }

    void end() {
        try {
            zip.closeEntry();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes the central directory: from here on the archive is complete. */
    void finish() {
        try {
            zip.finish();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        flush();
    }

    /** Hands what was gathered to the stream. */
    void flush() {
        if (collector.pending.length() > 0) {
            Buffer chunk = collector.pending;
            collector.pending = Buffer.buffer(CHUNK + 1024);
            bytesOut += chunk.length();
            out.write(chunk);
        }
    }

    /**
     * Completes when the stream can take more: at once if its queue is not full, else when it drains.
     * Fails when it stays full longer than the stall timeout (a client that stopped reading) or when
     * {@link #abort} is called (the client went away).
     */
    Future<Void> room() {
        flush();
        if (!out.writeQueueFull()) {
            return Future.succeededFuture();
        }
        Promise<Void> promise = Promise.promise();
        waiting = promise;
        long timer = vertx.setTimer(stallTimeoutMs, id -> promise.tryFail(new ExportException(
                "the client read nothing for " + stallTimeoutMs + " ms")));
        out.drainHandler(v -> promise.tryComplete());
        return promise.future().andThen(done -> {
            vertx.cancelTimer(timer);
            waiting = null;
        });
    }

    /** Whether the producer is waiting for the stream to drain. */
    boolean waitingForRoom() {
        return waiting != null;
    }

    void abort(Throwable cause) {
        Promise<Void> promise = waiting;
        if (promise != null) {
            promise.tryFail(cause);
        }
    }

    long bytesOut() {
        return bytesOut;
    }

    /** The zip library writes here; bytes wait in one buffer until {@link #flush()}. */
    private static final class Collector extends OutputStream {
        Buffer pending = Buffer.buffer(CHUNK + 1024);

        @Override
        public void write(int b) {
            pending.appendByte((byte) b);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            pending.appendBytes(b, off, len);
        }
    }
}
