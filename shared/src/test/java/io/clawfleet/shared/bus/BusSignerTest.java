package io.clawfleet.shared.bus;

import io.clawfleet.shared.bus.BusSigner.Verdict;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.DeliveryOptions;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class BusSignerTest {

    private static final String SECRET = "a-cluster-secret-of-at-least-32-characters";

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final BusSigner signer = new BusSigner(SECRET, clock::get, 60_000);

    private static ToolCall call(String arguments, Map<String, String> files) {
        return new ToolCall("call-1", "acme", 7, "shell_exec", arguments, files, Map.of("LANG", "C"), 30_000, false, 5_000);
    }

    @Test
    void aSignedCallIsAcceptedAfterTheWire() {
        // given a call signed for node sb-1, with files in some order
        Map<String, String> files = new LinkedHashMap<>();
        files.put("b.txt", "2");
        files.put("a.txt", "1");
        ToolCall sent = call("{\"command\":\"ls\"}", files);
        DeliveryOptions options = signer.sign(new DeliveryOptions(), BusSigner.CALL, "sb-1", sent, "");
        // when it crosses the wire (decoded into a new record) and is checked by sb-1
        JsonCodec<ToolCall> codec = new JsonCodec<>(ToolCall.class, ToolCall.TYPE);
        Buffer buffer = Buffer.buffer();
        codec.encodeToWire(buffer, sent);
        ToolCall received = codec.decodeFromWire(0, buffer);
        // then it is valid
        assertThat(signer.verify(options.getHeaders(), BusSigner.CALL, "sb-1", received, "")).isEqualTo(Verdict.VALID);
    }

    @Test
    void everyTamperedFieldIsRejected() {
        // given a signature over a call
        ToolCall good = call("{\"command\":\"ls\"}", Map.of("a.txt", "1"));
        String signature = signer.sign(BusSigner.CALL, "sb-1", good, "");
        // when any part of the call is changed / then the signature no longer fits
        for (ToolCall tampered : new ToolCall[]{
                new ToolCall("call-2", "acme", 7, "shell_exec", good.arguments(), good.files(), good.env(), 30_000, false, 5_000),
                new ToolCall("call-1", "other", 7, "shell_exec", good.arguments(), good.files(), good.env(), 30_000, false, 5_000),
                new ToolCall("call-1", "acme", 8, "shell_exec", good.arguments(), good.files(), good.env(), 30_000, false, 5_000),
                new ToolCall("call-1", "acme", 7, "evil__run", good.arguments(), good.files(), good.env(), 30_000, false, 5_000),
                new ToolCall("call-1", "acme", 7, "shell_exec", "{\"command\":\"rm -rf /\"}", good.files(), good.env(), 30_000, false, 5_000),
                new ToolCall("call-1", "acme", 7, "shell_exec", good.arguments(), Map.of("a.txt", "2"), good.env(), 30_000, false, 5_000),
                new ToolCall("call-1", "acme", 7, "shell_exec", good.arguments(), good.files(), Map.of("LANG", "D"), 30_000, false, 5_000),
                new ToolCall("call-1", "acme", 7, "shell_exec", good.arguments(), good.files(), good.env(), 60_000, false, 5_000),
                new ToolCall("call-1", "acme", 7, "shell_exec", good.arguments(), good.files(), good.env(), 30_000, true, 5_000),
                new ToolCall("call-1", "acme", 7, "shell_exec", good.arguments(), good.files(), good.env(), 30_000, false, 9_000)}) {
            assertThat(signer.verify(BusSigner.CALL, "sb-1", tampered, "", signature)).as(tampered.toString()).isEqualTo(Verdict.FORGED);
        }
        assertThat(signer.verify(BusSigner.CALL, "sb-1", good, "", signature)).isEqualTo(Verdict.VALID);
    }

    @Test
    void aReplyNoticesTokensAreSignedWithItAndSurviveTheWire() {
        // given a turn's reply notice with its tokens, signed
        OutboundReply sent = new OutboundReply("r-1", BotRef.main("acme"), "api", "c", 1, 2, 3, "hi",
                Instant.parse("2026-12-01T08:00:00Z"), new UsageStore.TurnTokens(120, 7));
        DeliveryOptions options = signer.sign(new DeliveryOptions(), BusSigner.REPLY, Addresses.REPLY_READY, sent, "");
        // when it crosses the wire / then it is valid
        JsonCodec<OutboundReply> codec = new JsonCodec<>(OutboundReply.class, OutboundReply.TYPE);
        Buffer buffer = Buffer.buffer();
        codec.encodeToWire(buffer, sent);
        OutboundReply received = codec.decodeFromWire(0, buffer);
        assertThat(signer.verify(options.getHeaders(), BusSigner.REPLY, Addresses.REPLY_READY, received, "")).isEqualTo(Verdict.VALID);
        // and with other tokens, or none, the signature no longer fits
        String signature = options.getHeaders().get(BusSigner.SIGNATURE);
        for (UsageStore.TurnTokens other : new UsageStore.TurnTokens[]{new UsageStore.TurnTokens(121, 7),
                new UsageStore.TurnTokens(120, 6), null}) {
            OutboundReply tampered = new OutboundReply(sent.id(), sent.bot(), sent.channel(), sent.chatKey(), sent.chatId(),
                    sent.seq(), sent.inReplyTo(), sent.text(), sent.at(), other);
            assertThat(signer.verify(BusSigner.REPLY, Addresses.REPLY_READY, tampered, "", signature)).as(String.valueOf(other))
                    .isEqualTo(Verdict.FORGED);
        }
    }

    @Test
    void aCallForAnotherNodeOrPurposeOrWithAnotherIssueTimeIsRejected() {
        ToolCall call = call("{}", Map.of());
        String signature = signer.sign(BusSigner.CALL, "sb-1", call, "");
        assertThat(signer.verify(BusSigner.CALL, "sb-2", call, "", signature)).isEqualTo(Verdict.FORGED);
        assertThat(signer.verify(BusSigner.RESULT, "sb-1", call, "", signature)).isEqualTo(Verdict.FORGED);
        String later = (Long.parseLong(signature.substring(0, signature.indexOf('.'))) + 1) + signature.substring(signature.indexOf('.'));
        assertThat(signer.verify(BusSigner.CALL, "sb-1", call, "", later)).isEqualTo(Verdict.FORGED);
        DeliveryOptions options = signer.sign(new DeliveryOptions(), BusSigner.CALL, "sb-1", call, "");
        assertThat(signer.verify(options.getHeaders(), BusSigner.CALL, "sb-2", call, "")).isEqualTo(Verdict.WRONG_NODE);
    }

    @Test
    void aSignatureMadeWithAnotherSecretIsRejected() {
        StreamChunk chunk = new StreamChunk(42, 0, "hello");
        BusSigner intruder = new BusSigner("another-secret-of-at-least-32-characters!", clock::get, 60_000);
        String forged = intruder.sign(BusSigner.CHUNK, "gw-1", chunk, "");
        assertThat(signer.verify(BusSigner.CHUNK, "gw-1", chunk, "", forged)).isEqualTo(Verdict.FORGED);
    }

    @Test
    void aMissingOrMalformedSignatureIsRejected() {
        StreamChunk chunk = new StreamChunk(42, 0, "hello");
        assertThat(signer.verify(new DeliveryOptions().getHeaders(), BusSigner.CHUNK, "gw-1", chunk, "")).isEqualTo(Verdict.MISSING);
        assertThat(signer.verify(BusSigner.CHUNK, "gw-1", chunk, "", "nonsense")).isEqualTo(Verdict.MALFORMED);
        assertThat(signer.verify(BusSigner.CHUNK, "gw-1", chunk, "", "12.%%%")).isEqualTo(Verdict.MALFORMED);
        assertThat(signer.verify(BusSigner.CHUNK, "gw-1", chunk, "", "12.AAAA")).isEqualTo(Verdict.FORGED);
    }

    @Test
    void anExpiredOrFutureSignatureIsRejected() {
        // given a signed chunk
        StreamChunk chunk = new StreamChunk(42, 0, "hello");
        String signature = signer.sign(BusSigner.CHUNK, "gw-1", chunk, "");
        // when the clock moves past the window / then it has expired
        clock.addAndGet(60_000);
        assertThat(signer.verify(BusSigner.CHUNK, "gw-1", chunk, "", signature)).isEqualTo(Verdict.VALID);
        clock.addAndGet(1);
        assertThat(signer.verify(BusSigner.CHUNK, "gw-1", chunk, "", signature)).isEqualTo(Verdict.EXPIRED);
        // and a signature issued too far ahead of this clock is refused as well
        clock.addAndGet(-200_000);
        assertThat(signer.verify(BusSigner.CHUNK, "gw-1", chunk, "", signature)).isEqualTo(Verdict.EXPIRED);
    }

    @Test
    void aResultIsBoundToTheCallItAnswers() {
        ToolResult result = ToolResult.of("call-1", ToolResult.OK, "done");
        String signature = signer.sign(BusSigner.RESULT, "sb-1", result, "sig-of-call-1");
        assertThat(signer.verify(BusSigner.RESULT, "sb-1", result, "sig-of-call-1", signature)).isEqualTo(Verdict.VALID);
        assertThat(signer.verify(BusSigner.RESULT, "sb-1", result, "sig-of-call-2", signature)).isEqualTo(Verdict.FORGED);
        ToolResult withFiles = new ToolResult("call-1", ToolResult.OK, 0, "done", false, Map.of("AGENTS.md", "evil"));
        assertThat(signer.verify(BusSigner.RESULT, "sb-1", withFiles, "sig-of-call-1", signature)).isEqualTo(Verdict.FORGED);
    }

    @Test
    void aReplayedIdIsRejectedUntilItsSignatureHasExpired() {
        // given ids remembered for two minutes
        RecentIds recent = new RecentIds(2, 120_000, clock::get);
        // when the same id comes again / then it is a replay
        assertThat(recent.remember("call-1")).isEqualTo(RecentIds.Outcome.NEW);
        assertThat(recent.remember("call-1")).isEqualTo(RecentIds.Outcome.REPLAY);
        // and a full cache of live ids refuses a new one rather than forget one
        assertThat(recent.remember("call-2")).isEqualTo(RecentIds.Outcome.NEW);
        assertThat(recent.remember("call-3")).isEqualTo(RecentIds.Outcome.FULL);
        // and once their time has passed they are forgotten
        clock.addAndGet(120_000);
        assertThat(recent.remember("call-3")).isEqualTo(RecentIds.Outcome.NEW);
        assertThat(recent.size()).isEqualTo(1);
    }
}
