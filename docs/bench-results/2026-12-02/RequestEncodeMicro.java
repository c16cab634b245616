// Throwaway timing of the OpenAI request encode (docs/PERFORMANCE.md, "the model request's constant part"). Run from the
// checkout after ./clawfleet build:
//   javac -cp deploy/target/clawfleet.jar -d /tmp/m docs/bench-results/2026-12-02/RequestEncodeMicro.java
//   java -cp deploy/target/clawfleet.jar:/tmp/m RequestEncodeMicro
import io.clawfleet.worker.llm.*;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.core.json.JsonArray;
import java.util.*;

public class RequestEncodeMicro {
    static List<ToolDefinition> tools() {
        List<ToolDefinition> out = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            JsonObject props = new JsonObject();
            for (int p = 0; p < 3; p++) props.put("param_" + p, new JsonObject().put("type", "string").put("description", "what parameter " + p + " of tool " + i + " means, in a sentence"));
            out.add(new ToolDefinition("tool_" + i, "Tool number " + i + " does a useful thing for the chat; call it when asked.",
                    new JsonObject().put("type", "object").put("properties", props).put("required", new JsonArray().add("param_0"))));
        }
        return out;
    }
    public static void main(String[] a) {
        Vertx vertx = Vertx.vertx();
        OpenAiCompatibleProvider p = new OpenAiCompatibleProvider(vertx, "http://127.0.0.1:1/v1", "k", "m", 1000, 0, 10);
        String bot = "You are a helpful assistant. ".repeat(110);
        List<ChatMessage> history = new ArrayList<>();
        history.add(ChatMessage.system(bot));
        history.add(ChatMessage.system("This chat is api:chat-17, role normal."));
        for (int i = 0; i < 20; i++) history.add(i % 2 == 0 ? ChatMessage.user("message number " + i + " from the user") : ChatMessage.assistant("echo: message number " + i));
        long sink = 0;
        for (int round = 0; round < 6; round++) {
            int n = 50_000;
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) sink += p.requestJson(new LlmRequest(null, history, tools()), false).toBuffer().length();
            long t1 = System.nanoTime();
            for (int i = 0; i < n; i++) sink += p.requestBody(new LlmRequest(null, history, tools()), false).length();
            long t2 = System.nanoTime();
            long t3 = System.nanoTime();
            for (int i = 0; i < n; i++) sink += tools().size();
            long t4 = System.nanoTime();
            System.out.printf("round %d: json+toBuffer %.1f us, requestBody %.1f us, of which building tools %.1f us; bytes %d%n", round,
                    (t1 - t0) / 1e3 / n, (t2 - t1) / 1e3 / n, (t4 - t3) / 1e3 / n,
                    p.requestBody(new LlmRequest(null, history, tools()), false).length());
        }
        System.out.println(sink);
        vertx.close();
    }
}
