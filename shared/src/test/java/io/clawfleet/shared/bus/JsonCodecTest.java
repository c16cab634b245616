package io.clawfleet.shared.bus;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.message.WorkspaceChanged;
import io.vertx.core.buffer.Buffer;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.UsageStore;
import io.clawfleet.shared.json.Json;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JsonCodecTest {

    private static final InboundMessage MESSAGE = new InboundMessage(42, "default", "api", "chat-1", 7, 3, 5,
            "alice", "héllo ✓", "user", Instant.parse("2026-11-22T10:00:00Z"), "gw-1");

    @Test
    void wakeUpSurvivesTheWire() {
        // given a wake-up / when encoded and decoded as between nodes / then it is equal, type included
        JsonCodec<WakeUp> codec = new JsonCodec<>(WakeUp.class, WakeUp.TYPE);
        Buffer buffer = Buffer.buffer().appendString("prefix");
        codec.encodeToWire(buffer, new WakeUp(MESSAGE));
        WakeUp decoded = codec.decodeFromWire(6, buffer);
        assertThat(decoded).isEqualTo(new WakeUp(MESSAGE));
        assertThat(decoded.type()).isEqualTo("wake-up-v1");
    }

    @Test
    void aWakeUpCarriesTheMessagesTraceparentAndOneFromAnOlderNodeHasNone() {
        JsonCodec<WakeUp> codec = new JsonCodec<>(WakeUp.class, WakeUp.TYPE);
        InboundMessage traced = new InboundMessage(42, new BotRef("default", "main"), "api", "chat-1", 7, 3, 5, "alice", "hi",
                "user", Instant.parse("2026-11-22T10:00:00Z"), "gw-1", null, null,
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        Buffer buffer = Buffer.buffer();
        codec.encodeToWire(buffer, new WakeUp(traced));
        assertThat(codec.decodeFromWire(0, buffer).message().traceParent())
                .isEqualTo("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assertThat(MESSAGE.traceParent()).isNull();
    }

    @Test
    void toolCallKeepsFilesAndEnv() {
        JsonCodec<ToolCall> codec = new JsonCodec<>(ToolCall.class, ToolCall.TYPE);
        ToolCall call = new ToolCall("c1", "default", 7, "shell_exec", "{\"command\":\"ls\"}",
                Map.of("notes.md", "x"), Map.of("LANG", "C"), 30_000);
        Buffer buffer = Buffer.buffer();
        codec.encodeToWire(buffer, call);
        assertThat(codec.decodeFromWire(0, buffer)).isEqualTo(call);
    }

    @Test
    void aToolCallFromAnOlderSenderHasNoNetwork() {
        // given a tool-call-v1 written before the network field existed / when decoded / then it asks for no egress
        byte[] json = ("{\"type\":\"tool-call-v1\",\"callId\":\"c1\",\"tenantId\":\"t\",\"chatId\":1,"
                + "\"tool\":\"shell_exec\",\"timeoutMs\":1000}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Buffer buffer = Buffer.buffer().appendInt(json.length).appendBytes(json);
        ToolCall call = new JsonCodec<>(ToolCall.class, ToolCall.TYPE).decodeFromWire(0, buffer);
        assertThat(call.network()).isFalse();
        assertThat(call.arguments()).isEqualTo("{}");
    }

    @Test
    void aToolResultKeepsStderrAndDeletedFilesAndReadsOlderPayloads() {
        JsonCodec<ToolResult> codec = new JsonCodec<>(ToolResult.class, ToolResult.TYPE);
        ToolResult result = new ToolResult("c1", "ok", 0, "out", false, Map.of("a.txt", "x"), "warn", List.of("b.txt"));
        Buffer buffer = Buffer.buffer();
        codec.encodeToWire(buffer, result);
        assertThat(codec.decodeFromWire(0, buffer)).isEqualTo(result);
        byte[] old = "{\"type\":\"tool-result-v1\",\"callId\":\"c1\",\"status\":\"ok\",\"exitCode\":0,\"truncated\":false}"
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ToolResult decoded = codec.decodeFromWire(0, Buffer.buffer().appendInt(old.length).appendBytes(old));
        assertThat(decoded.stderr()).isEmpty();
        assertThat(decoded.deletedFiles()).isEmpty();
    }

    @Test
    void workspaceChangeSurvivesTheWire() {
        JsonCodec<WorkspaceChanged> codec = new JsonCodec<>(WorkspaceChanged.class, WorkspaceChanged.TYPE);
        Buffer buffer = Buffer.buffer();
        codec.encodeToWire(buffer, new WorkspaceChanged(BotRef.main("default"), "memory/MEMORY.md"));
        WorkspaceChanged decoded = codec.decodeFromWire(0, buffer);
        assertThat(decoded).isEqualTo(new WorkspaceChanged(BotRef.main("default"), "memory/MEMORY.md"));
        assertThat(decoded.type()).isEqualTo("workspace-changed-v1");
    }

    @Test
    void aPayloadOfAnotherTypeIsRefused() {
        // given an outbound reply on the wire / when decoded as a wake-up / then refused naming both types
        Buffer buffer = Buffer.buffer();
        new JsonCodec<>(OutboundReply.class, OutboundReply.TYPE).encodeToWire(buffer,
                new OutboundReply("r-1", BotRef.main("default"), "api", "c", 1, 1, 1, "hi", Instant.now()));
        JsonCodec<WakeUp> wakeUps = new JsonCodec<>(WakeUp.class, WakeUp.TYPE);
        assertThatThrownBy(() -> wakeUps.decodeFromWire(0, buffer))
                .hasMessageContaining("wake-up-v1").hasMessageContaining("outbound-reply-v1");
    }

    @Test
    void aReplyNoticeCarriesItsTurnsTokensAndOneWithoutThemIsWhatOlderNodesSendAndRead() {
        JsonCodec<OutboundReply> codec = new JsonCodec<>(OutboundReply.class, OutboundReply.TYPE);
        Instant at = Instant.parse("2026-12-01T08:00:00Z");
        // given a turn's notice with its tokens / when it crosses the wire / then it is equal, tokens included
        OutboundReply notice = new OutboundReply("r-1", BotRef.main("default"), "api", "c", 1, 2, 3, "hi", at,
                new UsageStore.TurnTokens(120, 7));
        Buffer buffer = Buffer.buffer();
        codec.encodeToWire(buffer, notice);
        assertThat(codec.decodeFromWire(0, buffer)).isEqualTo(notice);
        // a reply without tokens is encoded with exactly the fields nodes older than them send and sign
        String plain = Json.toString(new OutboundReply("r-1", BotRef.main("default"), "api", "c", 1, 2, 3, "hi", at));
        assertThat(new io.vertx.core.json.JsonObject(plain).fieldNames()).containsExactlyInAnyOrder("type", "id", "tenantId",
                "channel", "chatKey", "chatId", "seq", "inReplyTo", "text", "at", "botId");
        // and an older node's notice (no tokens) is read with none
        byte[] old = plain.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Buffer wire = Buffer.buffer().appendInt(old.length).appendBytes(old);
        assertThat(codec.decodeFromWire(0, wire).tokens()).isNull();
    }

    @Test
    void aPayloadMissingARequiredFieldIsRefused() {
        byte[] json = "{\"type\":\"inbound-message-v1\",\"id\":1,\"tenantId\":\"t\",\"channel\":\"api\"}".getBytes();
        Buffer buffer = Buffer.buffer().appendInt(json.length).appendBytes(json);
        assertThatThrownBy(() -> new JsonCodec<>(InboundMessage.class, InboundMessage.TYPE).decodeFromWire(0, buffer))
                .hasMessageContaining("at chatId");
    }

    @Test
    void localDeliveryPassesTheSameImmutableRecord() {
        JsonCodec<WakeUp> codec = new JsonCodec<>(WakeUp.class, WakeUp.TYPE);
        WakeUp wakeUp = new WakeUp(MESSAGE);
        assertThat(codec.transform(wakeUp)).isSameAs(wakeUp);
    }
}
