package io.clawfleet.worker.tools;

import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ArgumentRedactorTest {

    private final ArgumentRedactor redactor = new ArgumentRedactor(new SecretScrubber(List.of("known-secret-value")));

    @Test
    void sensitiveNamesAreBlankedInsideArraysToo() {
        // given arguments with credentials in objects inside an array, and a known secret in a list of texts
        JsonObject args = new JsonObject()
                .put("headers", new JsonArray().add(new JsonObject().put("cookie", "session=abc123"))
                        .add(new JsonObject().put("accept", "text/html")))
                .put("notes", new JsonArray().add("hello").add("known-secret-value"));
        // when they are redacted for keeping
        JsonObject kept = redactor.redact(args, 2_000);
        // then the array keeps its shape, the sensitive value and the secret are gone, the rest stays
        assertThat(kept.getJsonArray("headers").getJsonObject(0).getString("cookie")).isEqualTo(SecretScrubber.REDACTED);
        assertThat(kept.getJsonArray("headers").getJsonObject(1).getString("accept")).isEqualTo("text/html");
        assertThat(kept.getJsonArray("notes")).containsExactly("hello", SecretScrubber.REDACTED);
    }

    @Test
    void aCallLosesSomethingOnlyWhenRedactionChangesItsArguments() {
        assertThat(redactor.changes(new ToolCallRequest("1", "fs_read", "{ \"path\" : \"a.md\" }"))).isFalse();
        assertThat(redactor.changes(new ToolCallRequest("2", "chat_register", "{\"bootstrap_key\":\"x\"}"))).isTrue();
        assertThat(redactor.changes(new ToolCallRequest("3", "fs_write", "{\"content\":\"known-secret-value\"}"))).isTrue();
    }
}
