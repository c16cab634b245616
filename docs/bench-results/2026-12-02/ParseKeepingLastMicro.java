// Throwaway timing of the gateway's read of an OpenAI request (docs/PERFORMANCE.md, "a long chat's request, read to
// its last message"). Run from the checkout after ./clawfleet build:
//   javac -cp deploy/target/clawfleet.jar -d /tmp/m docs/bench-results/2026-12-02/ParseKeepingLastMicro.java
//   java -cp deploy/target/clawfleet.jar:/tmp/m io.clawfleet.gateway.http.ParseKeepingLastMicro
package io.clawfleet.gateway.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

public class ParseKeepingLastMicro {
    static String utf8(Buffer raw) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw.getBytes())).toString();
        } catch (CharacterCodingException e) {
            throw new IllegalStateException(e);
        }
    }

    public static void main(String[] a) {
        for (int history : new int[] {0, 20, 200}) {
            // as the bench's clients send it (LoadDriver.clientHistory): the conversation so far, then the new message
            JsonArray messages = new JsonArray();
            for (int i = 0; i < history; i += 2) {
                messages.add(new JsonObject().put("role", "user").put("content", "chat-17 says " + i));
                messages.add(new JsonObject().put("role", "assistant").put("content", "echo: chat-17 says " + i));
            }
            messages.add(new JsonObject().put("role", "user").put("content", "chat-17 says " + history));
            String body = new JsonObject().put("model", "default").put("user", "chat-17").put("messages", messages).encode();
            Buffer raw = Buffer.buffer(body);
            long sink = 0;
            for (int round = 0; round < 5; round++) {
                int n = history == 200 ? 20_000 : 200_000;
                long t0 = System.nanoTime();
                // both as JsonRequest does it: the bytes checked as UTF-8 into a string first
                for (int i = 0; i < n; i++) sink += ((JsonObject) Json.decodeValue(utf8(raw))).size();
                long t1 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    sink += utf8(raw).length();
                    JsonRequest.Trimmed trimmed = JsonRequest.Trimmed.of(raw, "messages");
                    sink += ((JsonObject) Json.decodeValue(trimmed.body())).size() + trimmed.dropped();
                }
                long t2 = System.nanoTime();
                System.out.printf("history %d (%,d bytes), round %d: whole decode %.2f us, keeping the last %.2f us%n",
                        history, body.length(), round, (t1 - t0) / 1e3 / n, (t2 - t1) / 1e3 / n);
            }
            System.out.println(sink);
        }
    }
}
