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
 * {@code chat_register(role, bootstrap_key)} and {@code chat_set_role(chat_id, role)} (seed 000
 * §12.3). The first admin comes from the bootstrap key (single use, locked after repeated wrong
 * keys); after that only an admin makes admins.
 */
public final class ChatTools {

    /** Wrong bootstrap keys before the lockout. */
    static final int MAX_FAILURES = 5;
    /** Minutes the bootstrap stays locked after too many wrong keys. */
    static final int LOCKOUT_MINUTES = 15;

    private final ChatStore chats;
    private final String bootstrapKey;

    /** @param bootstrapKey CLAWFLEET_ADMIN_BOOTSTRAP_KEY, or null when admin bootstrap is off */
    public ChatTools(ChatStore chats, String bootstrapKey) {
        this.chats = Objects.requireNonNull(chats);
        this.bootstrapKey = bootstrapKey;
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
            return Schemas.withEnum(Schemas.tool(name(), "Register this chat; role admin needs the bootstrap key.",
                    Schemas.required("role"), "role", null, "bootstrap_key", "needed for admin"), "role", "normal", "admin");
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
            if (bootstrapKey == null || bootstrapKey.isBlank()) {
                return Future.failedFuture(ToolException.denied(
                        "admin bootstrap is not configured on this Clawfleet (CLAWFLEET_ADMIN_BOOTSTRAP_KEY)"));
            }
            String given = args.getString("bootstrap_key");
            if (given == null || given.isBlank()) {
                return Future.failedFuture(ToolException.invalid("role admin needs the argument 'bootstrap_key'"));
            }
            return chats.bootstrapAdmin(ctx.tenantId(), ctx.chatId(), given, bootstrapKey, MAX_FAILURES, LOCKOUT_MINUTES)
                    .compose(result -> switch (result) {
                        case GRANTED -> Future.succeededFuture("This chat is now an admin chat.");
                        case ALREADY_USED -> Future.failedFuture(ToolException.denied(
                                "the bootstrap key was already used; an admin chat can grant the role with chat_set_role"));
                        case LOCKED -> Future.failedFuture(ToolException.denied("admin bootstrap is locked after "
                                + MAX_FAILURES + " wrong keys; try again in " + LOCKOUT_MINUTES + " minutes"));
                        case WRONG_KEY -> chats.bootstrapFailures(ctx.tenantId()).compose(failures -> Future.failedFuture(
                                ToolException.denied("wrong bootstrap key (" + (MAX_FAILURES - failures)
                                        + " attempts left before a " + LOCKOUT_MINUTES + "-minute lockout)")));
                    });
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
            return chats.setRole(ctx.tenantId(), target.channel(), target.chatKey(), role).compose(found -> found
                    ? Future.succeededFuture("Chat " + target.chatKey() + " is now " + role + ".")
                    : Future.failedFuture(ToolException.error("no chat '" + target.chatKey() + "' on channel " + target.channel())));
        }
    }
}
