package io.clawfleet.worker.tools.builtin;

import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.ReplyNotices;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.ChatTargets;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCallContext;
import io.clawfleet.worker.tools.ToolException;
import io.vertx.core.Future;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;

/**
 * {@code message_send(chat_id, content)}: the bot writes into a chat (another one only from an
 * admin chat). The message gets a deterministic id from the turn and the call, so a turn run
 * again after a crash does not send it twice; it is delivered like any reply.
 */
public final class MessageTools {

    private static final int MAX_TEXT = 20_000;

    private final ChatStore chats;
    private final EventBus bus;
    private final BusSigner signer;

    public MessageTools(ChatStore chats, EventBus bus, BusSigner signer) {
        this.chats = Objects.requireNonNull(chats);
        this.bus = Objects.requireNonNull(bus);
        this.signer = Objects.requireNonNull(signer);
    }

    public List<Tool> tools() {
        return List.of(new Send());
    }

    private final class Send implements Tool {
        @Override
        public String name() {
            return "message_send";
        }

        @Override
        public ToolDefinition definition() {
            ToolDefinition definition = Schemas.tool(name(), "Send a message to a chat (other chats: admin only).",
                    Schemas.required("chat_id", "content"), "chat_id", "chat id, or channel:chat id", "content", null);
            definition.parameters().getJsonObject("properties").getJsonObject("content").put("maxLength", MAX_TEXT);
            return definition;
        }

        @Override
        public boolean mutating() {
            return true;
        }

        @Override
        public Future<String> execute(ToolCallContext ctx, JsonObject args) {
            ChatTargets.Target target = ChatTargets.parse(args.getString("chat_id"), ctx.channel());
            String id = "s-" + ctx.inboxId() + "-" + ctx.callIndex();
            return chats.find(ctx.bot(), target.channel(), target.chatKey()).compose(found -> {
                if (found.isEmpty()) {
                    return Future.failedFuture(ToolException.error("no chat '" + target.chatKey() + "' on channel "
                            + target.channel() + " (a chat exists once it has sent a message)"));
                }
                return chats.send(found.get(), id, args.getString("content")).map(sent -> {
                    sent.ifPresent(reply -> ReplyNotices.publish(bus, signer, reply));
                    return "Sent to " + target.chatKey() + ".";
                });
            });
        }
    }
}
