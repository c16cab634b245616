package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotStore;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.auth.ModelName;
import io.clawfleet.gateway.reply.ReplyHub;
import io.clawfleet.gateway.reply.ReplyWait;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.http.HttpErrors;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.message.StreamChunk;
import io.clawfleet.shared.store.Tenant;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/**
 * The OpenAI-compatible API. The server keeps each chat's history: {@code user} (or the header
 * {@code X-Clawfleet-Chat}) names the chat and only the last user message of the request is new
 * input. Without a chat name every request is a fresh one-message chat. {@code stream: true}
 * answers with Server-Sent Events in the Chat Completions chunk format.
 */
public final class OpenAiApi {

    public static final String CHANNEL = "openai";
    public static final String CHAT_HEADER = "x-clawfleet-chat";
    /** The bots /v1/models names at most. */
    private static final int MAX_LISTED_BOTS = 1_000;

    private final Ingest ingest;
    private final ReplyHub hub;
    private final String nodeId;
    private final ReplyWait replies;
    private final UsageStore usage;
    /** Request fields that ask the server to offer the client's own tools to the model. */
    private static final List<String> CLIENT_TOOLS = List.of("tools", "tool_choice", "functions", "function_call");

    private final BotScope bots;
    private final BotStore botStore;
    private final BotRoles roles;

    /**
     * @param roles the model roles each bot's requests may ask for: its own providers' or the cluster's
     * @param bots  resolves the bot a {@code model} names
     */
    public OpenAiApi(Ingest ingest, UsageStore usage, ReplyHub hub, String nodeId, ReplyWait replies,
                     BotRoles roles, BotScope bots, BotStore botStore) {
        this.roles = Objects.requireNonNull(roles);
        this.bots = Objects.requireNonNull(bots);
        this.botStore = Objects.requireNonNull(botStore);
        this.usage = Objects.requireNonNull(usage);
        this.ingest = Objects.requireNonNull(ingest);
        this.hub = Objects.requireNonNull(hub);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.replies = Objects.requireNonNull(replies);
    }

    /**
     * The models a key may ask for: the default bot's roles ("default", "fast", ...) and, per other bot the key
     * reaches, the bot ("support") and each of its roles ("support/fast").
     */
    public void models(RoutingContext ctx) {
        var key = ApiKeyAuth.key(ctx);
        Future<List<BotStore.Bot>> listed = botStore.list(key.tenant().id(), null, MAX_LISTED_BOTS, key.botIds());
        Future<Map<String, Set<String>>> own = roles.own(key.tenant().id());
        Future.all(listed, own).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("models cannot be listed", result.cause(), 1));
                return;
            }
            JsonArray data = new JsonArray();
            if (key.reaches(BotRef.MAIN)) {
                rolesOf(own.result(), BotRef.MAIN).forEach(model -> data.add(model(model)));
            }
            for (BotStore.Bot bot : listed.result()) {
                if (bot.ref().isMain() || bot.deleting()) {
                    continue;
                }
                data.add(model(bot.id()));
                rolesOf(own.result(), bot.id()).stream().filter(role -> !"default".equals(role))
                        .forEach(role -> data.add(model(bot.id() + "/" + role)));
            }
            ctx.json(new JsonObject().put("object", "list").put("data", data));
        });
    }

    private java.util.Collection<String> rolesOf(Map<String, Set<String>> own, String botId) {
        return own.containsKey(botId) ? own.get(botId) : roles.operatorRoles();
    }

    private static JsonObject model(String id) {
        return new JsonObject().put("id", id).put("object", "model").put("created", 0).put("owned_by", "clawfleet");
    }

    public void completions(RoutingContext ctx) {
        // OpenAI clients send many optional fields (temperature, stream_options, ...): accept, use ours.
        JsonRequest body = JsonRequest.parseKeepingLast(ctx, "messages");
        String model = body.optionalString("model", 256);
        if (model == null) {
            throw ApiException.badRequest("missing required field 'model'; use \"default\" (see GET /v1/models)");
        }
        for (String field : CLIENT_TOOLS) {
            if (body.json().getValue(field) != null) {
                // Silently ignoring them would let a client believe its tools were offered to the model.
                throw new ApiException(400, "unsupported_parameter", "field '" + field + "' is not supported: the bot "
                        + "runs its own tools (skills, MCP servers) and does not call tools the client defines");
            }
        }
        String text = lastUserText(body);
        boolean stream = body.optionalBoolean("stream", false);
        Object options = body.json().getValue("stream_options");
        boolean includeUsage = options instanceof JsonObject o && Boolean.TRUE.equals(o.getValue("include_usage"));
        Object n = body.json().getValue("n");
        if (n != null && !(n instanceof Number number && number.intValue() == 1)) {
            throw ApiException.badRequest("field 'n' must be 1 (one answer per request)");
        }
        String user = body.optionalString("user", 256);
        String header = ctx.request().getHeader(CHAT_HEADER);
        if (header != null && (header.isBlank() || header.length() > 256)) {
            throw ApiException.badRequest("header X-Clawfleet-Chat must be 1 to 256 characters");
        }
        String chatKey = header != null ? header : user != null ? user : "anon-" + UUID.randomUUID();
        String idempotency = ctx.request().getHeader("idempotency-key");
        if (idempotency != null && (idempotency.isBlank() || idempotency.length() > 256)) {
            throw ApiException.badRequest("header Idempotency-Key must be 1 to 256 characters");
        }
        if (hub.full()) {
            throw ApiException.unavailable("too many requests are waiting for replies on this gateway", 1);
        }
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        roles.roles(BotRef.main(tenant.id()))
                .map(mainRoles -> ModelName.parse(model, mainRoles))
                .compose(name -> botOf(ctx, model, name).compose(bot -> ingest.accept(bot, CHANNEL, chatKey,
                        idempotency != null ? idempotency : UUID.randomUUID().toString(), user != null ? user : chatKey, text,
                        nodeId, ModelName.DEFAULT_ROLE.equals(name.role()) ? null : name.role(), ApiKeyAuth.key(ctx).keyId())))
                .onComplete(result -> {
            if (result.failed()) {
                ctx.fail(result.cause());
                return;
            }
            long inboxId = result.result().message().id();
            boolean fresh = result.result().created();
            if (stream) {
                streamReply(ctx, tenant, inboxId, fresh, model, includeUsage);
            } else {
                Promise<Void> closed = Promise.promise();
                ctx.response().closeHandler(v -> closed.tryComplete());
                replies.awaitWithTokens(tenant.id(), inboxId, fresh, null, closed.future())
                        .onComplete(done -> {
                            if (done.failed()) {
                                ctx.fail(done.cause());
                                return;
                            }
                            OutboundReply reply = done.result().getKey();
                            ctx.json(completion(inboxId, model, reply.text()).put("usage", usage(done.result().getValue())));
                            replies.delivered(reply.id());
                        });
            }
        });
    }

    /** The bot {@code model} names when the key reaches it and it has the role named; else 404 model_not_found (or 403). */
    private Future<BotRef> botOf(RoutingContext ctx, String model, ModelName name) {
        return bots.resolve(ctx, name.botId())
                .recover(failure -> Future.failedFuture(failure instanceof ApiException api && api.status() == 404
                        ? new ApiException(404, "model_not_found", "model '" + model + "' does not exist: no bot '"
                                + name.botId() + "' and no model role of that name (GET /v1/models)")
                        : failure))
                .compose(bot -> roles.roles(bot).compose(botRoles -> botRoles.contains(name.role()) ? Future.succeededFuture(bot)
                        : Future.failedFuture(new ApiException(404, "model_not_found", "model '" + model + "' does not exist: "
                                + "bot " + bot.botId() + " has no model role '" + name.role() + "'; its roles: " + botRoles
                                + ", asked for as \"<role>\", \"<bot>\" or \"<bot>/<role>\" (GET /v1/models)"))));
    }

    private void streamReply(RoutingContext ctx, Tenant tenant, long inboxId, boolean fresh, String model, boolean includeUsage) {
        HttpServerResponse response = ctx.response();
        response.setChunked(true)
                .putHeader("content-type", "text/event-stream")
                .putHeader("cache-control", "no-cache")
                .putHeader("x-accel-buffering", "no");
        String id = "chatcmpl-" + inboxId;
        response.write(sse(chunk(id, model, new JsonObject().put("role", "assistant").put("content", ""), null)));
        StringBuilder streamed = new StringBuilder();
        awaitReply(ctx, tenant, inboxId, fresh, piece -> {
            if (!response.ended() && !response.closed()) {
                streamed.append(piece.delta());
                response.write(sse(chunk(id, model, new JsonObject().put("content", piece.delta()), null)));
            }
        }).onComplete(reply -> {
            if (response.ended() || response.closed()) {
                return;
            }
            if (reply.failed()) {
                ApiException error = reply.cause() instanceof ApiException api ? api
                        : new ApiException(500, "internal", "the reply failed (error id "
                        + ApiException.errorId(reply.cause(), "an OpenAI-API reply failed") + ")");
                response.end(sse(HttpErrors.body(error.code(), error.getMessage())) + "data: [DONE]\n\n");
                return;
            }
            String text = reply.result().text();
            // The durable reply is the truth: send whatever the streamed pieces did not cover.
            String rest = text.startsWith(streamed.toString()) ? text.substring(streamed.length()) : text;
            if (!rest.isEmpty()) {
                response.write(sse(chunk(id, model, new JsonObject().put("content", rest), null)));
            }
            response.write(sse(chunk(id, model, new JsonObject(), "stop")));
            replies.delivered(reply.result().id());
            if (!includeUsage) {
                response.end("data: [DONE]\n\n");
                return;
            }
            // As OpenAI sends it with stream_options.include_usage: one last chunk, no choices, the usage (the notice's
            // when the reply was served from it, else read).
            UsageStore.TurnTokens carried = reply.result().tokens();
            (carried != null ? Future.succeededFuture(carried) : usage.ofMessage(tenant.id(), inboxId)).onComplete(tokens -> {
                if (tokens.succeeded()) {
                    response.write(sse(new JsonObject().put("id", id).put("object", "chat.completion.chunk")
                            .put("created", System.currentTimeMillis() / 1000).put("model", model)
                            .put("choices", new JsonArray()).put("usage", usage(tokens.result()))));
                }
                response.end("data: [DONE]\n\n");
            });
        });
    }

    /** The committed reply to one message ({@link ReplyWait}); the wait ends when the client goes away. */
    private Future<OutboundReply> awaitReply(RoutingContext ctx, Tenant tenant, long inboxId, boolean fresh,
                                             java.util.function.Consumer<StreamChunk> onChunk) {
        Promise<Void> closed = Promise.promise();
        ctx.response().closeHandler(v -> closed.tryComplete());
        return replies.await(tenant.id(), inboxId, fresh, onChunk, closed.future());
    }

    /** The last message's text; the messages before it were not built ({@link JsonRequest#parseKeepingLast}). */
    private static String lastUserText(JsonRequest body) {
        Object raw = body.json().getValue("messages");
        if (!(raw instanceof JsonArray messages) || messages.isEmpty()) {
            throw ApiException.badRequest("field 'messages' must be a non-empty array of {role, content}");
        }
        Object last = messages.getValue(messages.size() - 1);
        if (!(last instanceof JsonObject message)) {
            throw ApiException.badRequest("messages[" + (body.dropped() + messages.size() - 1) + "] must be an object {role, content}");
        }
        if (!"user".equals(message.getValue("role"))) {
            throw ApiException.badRequest("the last message must have role 'user'; the server keeps the rest of the history");
        }
        Object content = message.getValue("content");
        if (content instanceof String text && !text.isBlank()) {
            return text;
        }
        if (content instanceof JsonArray parts) {
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < parts.size(); i++) {
                if (parts.getValue(i) instanceof JsonObject part && "text".equals(part.getValue("type"))
                        && part.getValue("text") instanceof String piece) {
                    text.append(piece);
                } else {
                    throw ApiException.badRequest("messages[-1].content[" + i + "] must be a {\"type\":\"text\",\"text\":...} part");
                }
            }
            if (!text.toString().isBlank()) {
                return text.toString();
            }
        }
        throw ApiException.badRequest("the last message's content must be a non-empty string or text parts");
    }

    /** OpenAI's usage object for the tokens a turn used. */
    private static JsonObject usage(UsageStore.TurnTokens tokens) {
        return new JsonObject().put("prompt_tokens", tokens.input()).put("completion_tokens", tokens.output())
                .put("total_tokens", tokens.input() + tokens.output());
    }

    static JsonObject completion(long inboxId, String model, String text) {
        return new JsonObject()
                .put("id", "chatcmpl-" + inboxId)
                .put("object", "chat.completion")
                .put("created", System.currentTimeMillis() / 1000)
                .put("model", model)
                .put("choices", new JsonArray().add(new JsonObject().put("index", 0)
                        .put("message", new JsonObject().put("role", "assistant").put("content", text))
                        .put("finish_reason", "stop")));
    }

    private static JsonObject chunk(String id, String model, JsonObject delta, String finish) {
        JsonObject choice = new JsonObject().put("index", 0).put("delta", delta);
        if (finish == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", finish);
        }
        return new JsonObject().put("id", id).put("object", "chat.completion.chunk")
                .put("created", System.currentTimeMillis() / 1000).put("model", model)
                .put("choices", new JsonArray().add(choice));
    }

    private static String sse(JsonObject event) {
        return "data: " + event.encode() + "\n\n";
    }
}
