package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.store.ApprovalStore;
import io.clawfleet.shared.store.ApprovalStore.Decision;
import io.clawfleet.shared.store.ApprovalStore.Outcome;
import io.clawfleet.shared.store.Tenant;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.Objects;
import java.util.Set;

/**
 * The tenant's admin decides on tool calls waiting for approval (issue 22):
 * <pre>
 * GET  /api/v1/approvals        -> {"approvals":[{"id","channel","chatId","tool","arguments","argsHash",
 *                                   "requestedBy","createdAt","expiresAt","status","decidedBy"}]}
 * POST /api/v1/approvals/{id}   {"decision":"approve|deny|always","argsHash":"..."} -> {"approval":{...}}
 * </pre>
 * A decision names the exact call by its arguments hash: a call that is not the one the admin looked
 * at (409 {@code args_mismatch}), that expired (410 {@code expired}) or that another admin decided
 * already (409 {@code already_decided}) is not touched. The decision enters the asking chat's inbox
 * and its owner carries the turn on.
 */
public final class ApprovalsApi {

    private static final Set<String> FIELDS = Set.of("decision", "argsHash");
    private static final int LISTED = 500;

    private final ApprovalStore approvals;
    private final EventBus bus;

    public ApprovalsApi(ApprovalStore approvals, EventBus bus) {
        this.approvals = Objects.requireNonNull(approvals);
        this.bus = Objects.requireNonNull(bus);
    }

    public void list(RoutingContext ctx) {
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        approvals.waiting(BotScope.bot(ctx), LISTED).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("approvals cannot be listed", result.cause(), 1));
                return;
            }
            JsonArray out = new JsonArray();
            result.result().forEach(call -> out.add(call.toJson()));
            ctx.json(new JsonObject().put("approvals", out));
        });
    }

    public void decide(RoutingContext ctx) {
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        JsonRequest request = JsonRequest.parse(ctx, FIELDS);
        Decision decision;
        try {
            decision = Decision.parse(request.requiredString("decision", 16));
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("field 'decision': " + e.getMessage());
        }
        String argsHash = request.requiredString("argsHash", 64);
        String id = ctx.pathParam("id");
        if (id.length() > 64) {
            throw ApiException.notFound("no call waits for approval under '" + id.substring(0, 64) + "...'");
        }
        approvals.decide(BotScope.bot(ctx), id, decision, argsHash, "api key of tenant " + tenant.id(), null).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("the decision cannot be recorded", result.cause(), 1));
                return;
            }
            switch (result.result()) {
                case Outcome.Decided decided -> {
                    if (decided.message() != null) {
                        bus.publish(Addresses.partitionWake(decided.message().partition()), new WakeUp(decided.message()));
                    }
                    ctx.json(new JsonObject().put("approval", decided.call().toJson()));
                }
                case Outcome.NotFound n -> ctx.fail(ApiException.notFound("no call waits for approval under '" + id
                        + "' (it may have been answered or withdrawn)"));
                case Outcome.Expired expired -> ctx.fail(new ApiException(410, "expired", "the call '" + id + "' expired at "
                        + expired.at() + " and can no longer be approved"));
                case Outcome.AlreadyDecided already -> ctx.fail(new ApiException(409, "already_decided",
                        "the call '" + id + "' was already decided: " + already.decision()));
                case Outcome.Mismatch m -> ctx.fail(new ApiException(409, "args_mismatch", "argsHash does not name the call "
                        + "waiting under '" + id + "'; list it again (GET /api/v1/approvals) and decide on what it runs"));
                case Outcome.OwnChat o -> ctx.fail(new ApiException(403, "forbidden", "a call cannot be decided from its own chat"));
            }
        });
    }
}
