package io.clawfleet.worker.turn;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.worker.llm.StreamSink;
import io.clawfleet.worker.tools.ToolCallParser;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;

import java.util.Objects;

/**
 * The reply of one turn as it is produced. Model text is scrubbed of secrets in pieces cut where
 * no secret can straddle two of them ({@link SecretScrubber#safeCut}), and each piece goes at once
 * to the gateway holding the caller's connection, when there is one. The durable reply is exactly
 * the text shown: the answers of every model call of the turn (a model that says "let me look"
 * before calling a tool keeps that), then whatever the turn adds (a question, a notice). Tool calls
 * a model writes as text are never shown: streaming stops where one may begin.
 *
 * <p>Chunks are best effort; the gateway sends whatever of the committed reply the chunks missed.
 * Not thread-safe: a turn runs on one event loop.
 */
final class ReplyStream {

    private final SecretScrubber scrubber;
    private final EventBus bus;
    private final BusSigner signer;
    /** The gateway holding the caller's connection, or null. */
    private final String replyNode;
    /** The gateway's stream address, or null when nobody waits on a connection. */
    private final String address;
    private final long inboxId;
    private final StringBuilder shown = new StringBuilder();
    /** Text of the current model answer received but not shown yet. */
    private final StringBuilder pending = new StringBuilder();
    private int received;
    private int index;

    ReplyStream(SecretScrubber scrubber, EventBus bus, BusSigner signer, String replyNode, long inboxId) {
        this.scrubber = Objects.requireNonNull(scrubber);
        this.bus = Objects.requireNonNull(bus);
        this.signer = Objects.requireNonNull(signer);
        this.replyNode = replyNode;
        this.address = replyNode == null ? null : Addresses.stream(replyNode);
        this.inboxId = inboxId;
    }

    /** Where a provider streams the next answer to; null when nobody waits (then the provider need not stream). */
    StreamSink sink() {
        return address == null ? null : this::delta;
    }

    private void delta(String text) {
        if (received == 0) {
            separate();
        }
        received += text.length();
        pending.append(text);
        // Nothing from a possible text-form tool call on is shown while the answer arrives: if it is
        // one, the user must see none of it; if not, answered() shows the rest.
        int cut = scrubber.safeCut(pending.substring(0, ToolCallParser.mayStartCall(pending)));
        if (cut > 0) {
            show(scrubber.scrub(pending.substring(0, cut)));
            pending.delete(0, cut);
        }
    }

    /** A model answer is complete; its content is the truth, whatever arrived in pieces. */
    void answered(String content) {
        answered(content, content == null ? 0 : content.length());
    }

    /**
     * A model answer is complete, and only its first {@code visible} characters are for the user:
     * the rest is tool calls written as text, dropped (streaming never went past their start).
     */
    void answered(String content, int visible) {
        String text = content == null ? "" : content.substring(0, Math.min(visible, content.length()));
        int shownOfThis = received - pending.length();
        if (received == 0 && !text.isBlank()) {
            separate();
        }
        if (text.length() > shownOfThis) {
            show(scrubber.scrub(text.substring(shownOfThis)));
        }
        pending.setLength(0);
        received = 0;
    }

    /** Text the turn adds itself (a notice, a question, an error), after a blank line. */
    void append(String text) {
        if (text != null && !text.isEmpty()) {
            separate();
            show(scrubber.scrub(text));
        }
    }

    boolean isEmpty() {
        return shown.toString().isBlank();
    }

    String text() {
        return shown.toString();
    }

    private void separate() {
        if (!shown.isEmpty() && !shown.toString().endsWith("\n\n")) {
            show(shown.charAt(shown.length() - 1) == '\n' ? "\n" : "\n\n");
        }
    }

    private void show(String text) {
        if (text.isEmpty()) {
            return;
        }
        shown.append(text);
        if (address != null) {
            // Signed for that gateway: it drops chunks any other process on the bus makes up.
            StreamChunk chunk = new StreamChunk(inboxId, index++, text);
            bus.send(address, chunk, signer.signTo(new DeliveryOptions(), BusSigner.CHUNK, replyNode, chunk));
        }
    }
}
