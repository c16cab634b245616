package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.Tenant;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * {@code PUT /api/v1/chats/{channel}/{chatKey}/role}: the tenant's operator makes a chat an admin chat, or
 * a normal one again. This is the only way a chat becomes admin: a chat cannot promote itself, since a
 * key typed into a chat is stored in the inbox and sent to the model provider (issue 22). The chat must
 * exist, i.e. have sent a message. Every change is a {@code role_change} row of the audit trail (besides the
 * request's {@code http_write} row), written before the answer.
 */
public final class ChatsApi {

    private static final Logger LOG = LoggerFactory.getLogger(ChatsApi.class);
    private static final Set<String> FIELDS = Set.of("role", "senders");
    private static final int MAX_SENDERS = 100;
    private static final Set<String> ROLES = Set.of("admin", "normal");

    /** The route this API answers on, as the audit names it. */
    public static final String ROLE = "/api/v1/chats/:channel/:chatKey/role";

    private final ChatStore chats;
    private final AuditStore audit;

    public ChatsApi(ChatStore chats, AuditStore audit) {
        this.chats = Objects.requireNonNull(chats);
        this.audit = Objects.requireNonNull(audit);
    }

    /** The admin senders named, each a non-blank id; none when the field is absent. */
    private static List<String> senders(JsonObject body) {
        Object raw = body.getValue("senders");
        if (raw == null) {
            return List.of();
        }
        if (!(raw instanceof JsonArray array) || array.size() > MAX_SENDERS) {
            throw ApiException.badRequest("field 'senders' must be an array of at most " + MAX_SENDERS + " sender ids");
        }
        List<String> out = new ArrayList<>();
        for (Object value : array) {
            if (!(value instanceof String id) || id.isBlank() || id.length() > 128) {
                throw ApiException.badRequest("field 'senders' must hold sender ids (non-empty strings of at most 128 characters)");
            }
            out.add(id.strip());
        }
        return List.copyOf(new java.util.LinkedHashSet<>(out));
    }

    public void setRole(RoutingContext ctx) {
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        JsonRequest request = JsonRequest.parse(ctx, FIELDS);
        String role = request.requiredString("role", 16);
        if (!ROLES.contains(role)) {
            throw ApiException.badRequest("field 'role' must be 'admin' or 'normal', got '" + role + "'");
        }
        String channel = ctx.pathParam("channel");
        String chatKey = ctx.pathParam("chatKey");
        List<String> senders = senders(request.json());
        if (!senders.isEmpty() && !role.equals("admin")) {
            throw ApiException.badRequest("field 'senders' names a chat's admin senders; it goes with role 'admin' only");
        }
        if (role.equals("admin") && senders.isEmpty() && Channels.isGroup(channel, chatKey)) {
            throw ApiException.badRequest("'" + chatKey + "' is a group chat: in a group, admin is a property of the "
                    + "sender, so name the senders who act as admins (field 'senders', their user ids)");
        }
        chats.setRole(BotScope.bot(ctx), channel, chatKey, role, senders).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the role cannot be changed right now (database unavailable)", 1));
            } else if (!result.result()) {
                ctx.fail(ApiException.notFound("no chat '" + chatKey + "' on channel '" + channel
                        + "' for this tenant; a chat exists once it has sent a message"));
            } else {
                TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
                String client = HttpAudit.client(ctx);
                LOG.info("audit: chat role set [tenant: {}, channel: {}, chat: {}, role: {}, senders: {}, key: {}, client: {}]",
                        tenant.id(), channel, chatKey, role, senders, key.keyId(), client);
                JsonObject metadata = new JsonObject().put("role", role).put("senders", new JsonArray(senders));
                if (client != null) {
                    metadata.put("client", client);
                }
                audit.append(new AuditStore.NewEvent(tenant.id(), AuditStore.ROLE_CHANGE, "success", key.keyId(),
                                key.keyName(), "PUT", ROLE, 200, null, channel, chatKey, "role set to " + role, metadata,
                                BotScope.bot(ctx).botId()))
                        .onComplete(written -> {
                            if (written.failed()) {
                                LOG.error("role change not audited [tenant: {}, channel: {}, chat: {}, role: {}]: {}",
                                        tenant.id(), channel, chatKey, role, written.cause().getMessage());
                            }
                            ctx.json(new JsonObject().put("channel", channel).put("chatId", chatKey).put("role", role)
                                    .put("senders", new JsonArray(senders)));
                        });
            }
        });
    }
}
