package io.clawfleet.worker.tools;

import io.clawfleet.worker.llm.ToolDefinition;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Which calls a supervised bot holds for an admin's approval (issue 22), judged without a node. */
class ToolPolicyTest {

    private final ToolPolicy policy = new ToolPolicy(true);
    private final ToolCallContext normal = new ToolCallContext("acme", "main", 1, "api", "alice", "alice", false, 1, 0, null);
    private final ToolCallContext admin = new ToolCallContext("acme", "main", 2, "api", "ops", "ops", true, 1, 0, null);

    private static Tool tool(String name, boolean mutating) {
        ToolDefinition definition = new ToolDefinition(name, name, new JsonObject().put("type", "object"));
        FunctionTool.Body body = (ctx, args) -> Future.succeededFuture("ok");
        return mutating ? FunctionTool.changing(definition, body) : FunctionTool.reading(definition, body);
    }

    private boolean waits(String name, JsonObject args, ToolCallContext ctx) {
        return policy.needsApproval(tool(name, true), args, ctx);
    }

    @Test
    void whatStaysInTheChatsOwnCornerRunsAtOnce() {
        assertThat(waits("fs_write", new JsonObject().put("path", "memory/api_alice.md"), normal)).isFalse();
        assertThat(waits("fs_edit", new JsonObject().put("path", "scratch/api_alice/notes.txt"), normal)).isFalse();
        assertThat(waits("memory_write", new JsonObject().put("scope", "chat"), normal)).isFalse();
        assertThat(waits("skills_enable", new JsonObject().put("name", "x"), normal)).isFalse();
        assertThat(waits("chat_register", new JsonObject().put("role", "admin"), normal)).as("the tool refuses it itself").isFalse();
        assertThat(waits("message_send", new JsonObject().put("chat_id", "alice"), normal)).isFalse();
        assertThat(waits("message_send", new JsonObject().put("chat_id", "api:alice"), normal)).isFalse();
        assertThat(policy.needsApproval(tool("fs_read", false), new JsonObject().put("path", "AGENTS.md"), admin)).isFalse();
    }

    @Test
    void whatActsBeyondTheChatWaitsEvenInAnAdminChat() {
        assertThat(waits("fs_write", new JsonObject().put("path", "AGENTS.md"), admin)).isTrue();
        assertThat(waits("fs_write", new JsonObject().put("path", "memory/api_alice.md"), admin)).isTrue();
        assertThat(waits("fs_write", new JsonObject().put("path", "scratch/api_alice/../../AGENTS.md"), normal)).isTrue();
        assertThat(waits("memory_write", new JsonObject().put("scope", "global"), admin)).isTrue();
        assertThat(waits("message_send", new JsonObject().put("chat_id", "telegram:bot1:42"), admin)).isTrue();
        assertThat(waits("shell_exec", new JsonObject().put("command", "ls"), admin)).isTrue();
        assertThat(waits("chat_set_role", new JsonObject().put("chat_id", "x").put("role", "admin"), admin)).isTrue();
        assertThat(waits("tasks_schedule", new JsonObject(), normal)).isTrue();
        assertThat(waits("mcp__github__create_issue", new JsonObject(), admin)).isTrue();
        assertThat(waits("text-tools__save_note", new JsonObject(), admin)).isTrue();
    }
}
