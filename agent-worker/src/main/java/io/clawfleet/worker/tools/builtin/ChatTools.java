package io.clawfleet.worker.tools.builtin;

import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.ChatTargets;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;

/**
 * {@code chat_register(role)} and {@code chat_set_role(chat_id, role)} (seed 000 §12.3). No chat makes
 * itself admin: the first admin chat is granted by the tenant's operator ({@code clawfleet admin grant},
 * {@code PUT /api/v1/chats/{channel}/{chat}/role}), because a key typed into a chat would be stored in the
 * inbox and sent to the model provider (issue 22). After that an admin chat may make others admin.
 */
public final class ChatTools {

    /** What a chat that asks to become admin is told. */
    static final String HOW_TO_BECOME_ADMIN = "a chat cannot make itself an admin chat; the operator grants the role "
            + "with 'clawfleet admin grant --chat <channel>:<chat id>' or PUT /api/v1/chats/<channel>/<chat id>/role";

    private final ChatStore chats;

    public ChatTools(ChatStore chats) {
        this.chats = Objects.requireNonNull(chats);
    }

    public List<Tool> tools() {
        return List.of(new Register(), new SetRole());
    }

    private final class Register implements Tool {
        @Override
        public String name() {
            return "chat_register";
        }

        @Override
        public ToolDefinition definition() {
            return Schemas.withEnum(Schemas.tool(name(), "Register this chat (role normal; admin is granted by the operator).",
                    Schemas.required("role"), "role", null), "role", "normal", "admin");
        }

        @Override
        public boolean mutating() {
            return true;
        }

        @Override
        public Future<String> execute(ToolCallContext ctx, JsonObject args) {
            if ("normal".equals(args.getString("role"))) {
                return chats.register(ctx.chatId()).map(v -> "This chat is registered.");
            }
            if (ctx.admin()) {
                return Future.succeededFuture("This chat is already an admin chat.");
            }
            return Future.failedFuture(ToolException.denied(HOW_TO_BECOME_ADMIN));
        }
    }

    private final class SetRole implements Tool {
        @Override
        public String name() {
            return "chat_set_role";
        }

        @Override
        public ToolDefinition definition() {
            return Schemas.withEnum(Schemas.tool(name(), "Set a chat's role (admin only).", Schemas.required("chat_id", "role"),
                    "chat_id", "chat id, or channel:chat id", "role", null), "role", "admin", "normal");
        }

        @Override
        public boolean mutating() {
            return true;
        }

        @Override
        public Future<String> execute(ToolCallContext ctx, JsonObject args) {
            ChatTargets.Target target = ChatTargets.parse(args.getString("chat_id"), ctx.channel());
            String role = args.getString("role");
            return chats.setRole(ctx.bot(), target.channel(), target.chatKey(), role).compose(found -> found
                    ? Future.succeededFuture("Chat " + target.chatKey() + " is now " + role + ".")
                    : Future.failedFuture(ToolException.error("no chat '" + target.chatKey() + "' on channel " + target.channel())));
        }
    }
}
