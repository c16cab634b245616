// Throwaway timing of the gateway's UTF-8 check of a request body (docs/PERFORMANCE.md, "the UTF-8 check without the
// body's text"). Run from the checkout after ./clawfleet build:
//   javac -cp deploy/target/clawfleet.jar -d /tmp/m docs/bench-results/2026-12-03/Utf8CheckMicro.java
//   java -cp deploy/target/clawfleet.jar:/tmp/m io.clawfleet.gateway.http.Utf8CheckMicro
package io.clawfleet.gateway.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

public class Utf8CheckMicro {
    /** The check before: the whole body decoded strictly into a string. */
    static String before(Buffer raw) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw.getBytes())).toString();
        } catch (CharacterCodingException e) {
            throw new IllegalStateException(e);
        }
    }

    public static void main(String[] a) {
        for (String word : new String[] {"says", "s\u00e4gt"}) {
            for (int history : new int[] {0, 20, 200}) {
                // as the bench's clients send it (LoadDriver.clientHistory): the conversation so far, then the new one
                JsonArray messages = new JsonArray();
                for (int i = 0; i < history; i += 2) {
                    messages.add(new JsonObject().put("role", "user").put("content", "chat-17 " + word + " " + i));
                    messages.add(new JsonObject().put("role", "assistant").put("content", "echo: chat-17 " + word + " " + i));
                }
                messages.add(new JsonObject().put("role", "user").put("content", "chat-17 " + word + " " + history));
                String body = new JsonObject().put("model", "default").put("user", "chat-17").put("messages", messages).encode();
                Buffer raw = Buffer.buffer(body);
                long sink = 0;
                for (int round = 0; round < 5; round++) {
                    int n = history == 200 ? 50_000 : 500_000;
                    long t0 = System.nanoTime();
                    for (int i = 0; i < n; i++) sink += before(raw).length();
                    long t1 = System.nanoTime();
                    for (int i = 0; i < n; i++) sink += JsonRequest.isUtf8(raw.getBytes()) ? 1 : 0;
                    long t2 = System.nanoTime();
                    System.out.printf("'%s', history %d (%,d bytes), round %d: string %.2f us, check only %.2f us%n",
                            word, history, raw.length(), round, (t1 - t0) / 1e3 / n, (t2 - t1) / 1e3 / n);
                }
                System.out.println(sink);
            }
        }
    }
}
