package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.store.ConversationStore.ChatState;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolCatalog;
import io.clawfleet.worker.tools.ToolRegistry;
import io.clawfleet.worker.workspace.WorkspaceSnapshot;
import io.vertx.core.Future;

import java.util.List;
import java.util.Objects;
import java.util.function.BiFunction;

/**
 * The agent's turns: the context built for the chat and the tools it offers (also those of the bot's MCP
 * servers the chat's role may use), then the agent loop.
 */
public final class AgentTurns implements TurnHandler {

    private final String nodeId;
    private final ContextBuilder context;
    private final ToolCatalog tools;
    private final AgentLoop loop;
    private final TenantSettings tenants;
    private final Compactor compactor;
    /** The MCP servers' tools of a bot that a chat of the role may use. */
    @FunctionalInterface
    public interface McpOffer {
        Future<List<Tool>> tools(io.clawfleet.shared.store.BotRef bot, WorkspaceSnapshot snapshot, boolean admin);
    }

    private final McpOffer mcpTools;
    private final BiFunction<Long, String, Future<Boolean>> roleNow;

    /**
     * @param mcpTools   the MCP servers' tools a chat of the role may use, found anew for each turn; must not fail
     * @param roleNow    whether a sender acts as admin in a chat (chat id, sender id), read from the record
     */
    public AgentTurns(String nodeId, ContextBuilder context, ToolCatalog tools, AgentLoop loop, TenantSettings tenants,
                      Compactor compactor, McpOffer mcpTools,
                      BiFunction<Long, String, Future<Boolean>> roleNow) {
        this.roleNow = Objects.requireNonNull(roleNow);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.context = Objects.requireNonNull(context);
        this.tools = Objects.requireNonNull(tools);
        this.loop = Objects.requireNonNull(loop);
        this.tenants = Objects.requireNonNull(tenants);
        this.compactor = Objects.requireNonNull(compactor);
        this.mcpTools = Objects.requireNonNull(mcpTools);
    }

    @Override
    public Future<TurnOutcome> run(TurnRequest turn, ChatLane lane) {
        // The role as it is now, not as the lane loaded it: the operator (or an admin chat) may have changed it since.
        // It is the sender's: in a group, admin is a property of the sender. An admin's decision carries on the
        // waiting call with the rights of the sender who asked for it, never with the decider's.
        InboundMessage message = turn.message();
        ChatState state = lane.state();
        String sender = InboundMessage.KIND_APPROVAL.equals(message.kind()) && state != null && state.pending() != null
                ? state.pending().requestedBy() : message.senderId();
        // A chat that was not an admin chat when its message was accepted (or read) runs the turn without admin rights
        // and without reading the role: the per-message read was one of the two statements a turn made (issue 19).
        // Rights are never granted on that word: a turn that would run as admin reads the role now, so a revoke
        // committed before the turn starts always applies, and a grant applies to messages accepted after it.
        Future<Boolean> admin = Boolean.FALSE.equals(message.adminChat()) ? Future.succeededFuture(false)
                : roleNow.apply(message.chatId(), sender);
        return admin.compose(isAdmin -> run(turn, lane, withRole(lane.state(), isAdmin)))
                .recover(failure -> Future.succeededFuture(new TurnOutcome.Failed(failure)));
    }

    private static ChatState withRole(ChatState chat, boolean admin) {
        return chat.admin() == admin ? chat : new ChatState(chat.doneSeq(), chat.summary(), chat.history(), admin,
                chat.disabledSkills(), chat.alwaysAllowed(), chat.pending(), chat.storedMessages(), chat.consolidatedThrough());
    }

    private Future<TurnOutcome> run(TurnRequest turn, ChatLane lane, ChatState chat) {
        return Future.all(context.build(turn, chat.disabledSkills(), chat.admin(), lane.history(), lane.summary()),
                        tenants.settings(turn.message().bot()))
                .compose(both -> {
                    TenantSettings.Settings settings = both.resultAt(1);
                    // A message that names no role gets its bot's default role (null: the cluster's default).
                    String role = turn.message().modelRole() != null ? turn.message().modelRole() : settings.defaultRole();
                    ContextBuilder.Context built = both.resultAt(0);
                    ToolRegistry registry = tools.forTurn(built.workspace(), chat.disabledSkills());
                    Future<ToolRegistry> offered = mcpTools.tools(turn.message().bot(), built.workspace(), chat.admin())
                            .map(registry::plus);
                    return offered.compose(all -> loop.run(new AgentLoop.Turn(turn, nodeId, built.messages(), all, chat,
                            settings.autonomy(), role)));
                })
                .recover(failure -> Future.succeededFuture(new TurnOutcome.Failed(failure)));
    }

    /** Compacts a chat grown past the threshold; whatever it found, the lane reads the chat again after. */
    @Override
    public Future<Boolean> maintain(TurnRequest turn, ChatLane lane) {
        if (!compactor.due(lane.unconsolidated()) || lane.state() == null) {
            return Future.succeededFuture(false);
        }
        Fence fence = new Fence(turn.partition(), nodeId, turn.epoch());
        return compactor.compact(fence, turn.message(), lane.state().consolidatedThrough(), lane.summary()).map(true);
    }
}
