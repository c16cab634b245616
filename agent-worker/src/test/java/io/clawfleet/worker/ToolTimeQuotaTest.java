package io.clawfleet.worker;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.message.ToolCall;
import io.clawfleet.shared.message.ToolResult;
import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.UsageStore;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tenant's tool time per UTC day ({@code toolSecondsPerDay}, issue 14) on a real worker node, whose sandbox is a
 * stand-in that takes {@link #RUN_MS} per run: once a tenant's tools have run its limit, its next call is not run and
 * the model is told why (the turn still answers); a tenant without the limit is not touched; raising the limit holds
 * at once.
 */
class ToolTimeQuotaTest {

    /** How long the stand-in sandbox takes per run: more than the limited tenant's whole day (1 s). */
    private static final long RUN_MS = 1_100;
    private static final String LIMITED = "tight";
    private static final String FREE = "loose";

    private final Vertx client = Vertx.vertx();
    private final Partitioner partitioner = new Partitioner(16);
    /** Runs the stand-in sandbox was asked for. */
    private final AtomicInteger sandboxRuns = new AtomicInteger();
    private MockLlmServer model;
    private NodeRuntime worker;
    private Database database;
    private InboxStore inbox;

    @BeforeEach
    void start() {
        model = new MockLlmServer(client, 0);
        result(model.start("127.0.0.1", 0));
        DbUrl db = TestDatabases.freshEmpty();
        Map<String, String> config = Map.of("llm.baseUrl", "http://127.0.0.1:" + model.port() + "/v1", "llm.model", "mock",
                "nodeId", "w1", "agent.autonomy", "full");
        worker = TestNodes.start(TestNodes.config("worker,sandbox", config), db, List.of(WorkerRole::new, SlowSandbox::new));
        database = Database.connect(client, db, 4, 5_000);
        inbox = new InboxStore(database.pool());
        TenantStore tenants = new TenantStore(database.pool());
        result(tenants.ensure(LIMITED, "Tight", "tight-key-" + UUID.randomUUID()));
        result(tenants.ensure(FREE, "Loose", "loose-key-" + UUID.randomUUID()));
        result(tenants.update(LIMITED, null, null, new JsonObject().put("toolSecondsPerDay", 1)));
    }

    @AfterEach
    void stop() {
        result(worker.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    /** A sandbox node's role as far as the worker can tell: it answers each run, signed, after {@link #RUN_MS}. */
    private final class SlowSandbox implements NodeRole {

        @Override
        public String name() {
            return "sandbox";
        }

        @Override
        public Future<Void> start(NodeContext ctx) {
            return ctx.vertx().eventBus().<ToolCall>consumer(Addresses.sandboxExecute(ctx.nodeId()), message -> {
                sandboxRuns.incrementAndGet();
                ctx.vertx().setTimer(RUN_MS, t -> {
                    ToolResult result = ToolResult.of(message.body().callId(), ToolResult.OK, "the page");
                    message.reply(result, ctx.signer().sign(new DeliveryOptions(), BusSigner.RESULT, ctx.nodeId(), result,
                            message.headers().get(BusSigner.SIGNATURE)));
                });
            }).completion();
        }

        @Override
        public Future<Void> stop() {
            return Future.succeededFuture();
        }
    }

    @Test
    void aTenantOverItsToolTimeGetsAClearToolErrorAndTheToolDoesNotRun() {
        // given a tenant whose tools may run 1 s a day
        String chat = "c-" + UUID.randomUUID();
        String note = WorkspacePaths.chatScratch("api", chat) + "/note.md";
        // when its turn fetches a page (1.1 s on a sandbox node), then writes a file
        String reply = ask(LIMITED, chat, fetchThenWrite(note), 1);
        // then the fetch ran, the write was refused by the limit and not run, and the model still answered
        assertThat(sandboxRuns.get()).isEqualTo(1);
        String midnight = LocalDate.now(ZoneOffset.UTC).plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant().toString();
        assertThat(reply).startsWith("tool fs_write said: error (denied): this tenant's tools ran ")
                .containsPattern("ran 1\\.\\d{3} s today, its limit 'toolSecondsPerDay' is 1 s; tools run again after "
                        + java.util.regex.Pattern.quote(midnight));
        assertThat(file(LIMITED, note)).isNull();
        // and the audit trail says so: the fetch with its time on a sandbox node, the write refused without a time
        List<AuditStore.Event> events = result(new AuditStore(database.pool()).list(LIMITED, 0, 100));
        AuditStore.Event fetch = events.stream().filter(e -> e.toolName().equals("web_fetch")).findFirst().orElseThrow();
        assertThat(fetch.outcome()).isEqualTo("success");
        assertThat(fetch.metadata().getLong("durationMs")).isGreaterThanOrEqualTo(RUN_MS);
        assertThat(fetch.metadata().getBoolean("sandbox")).isTrue();
        AuditStore.Event write = events.stream().filter(e -> e.toolName().equals("fs_write")).findFirst().orElseThrow();
        assertThat(write.outcome()).isEqualTo("denied");
        assertThat(write.reason()).contains("'toolSecondsPerDay' is 1 s");
        assertThat(write.metadata().containsKey("durationMs")).isFalse();
        // and the day's tool time is what the fetch took
        assertThat(result(new UsageStore(database.pool()).toolTimeToday(LIMITED, Instant.now())).usedMillis())
                .isEqualTo(fetch.metadata().getLong("durationMs"));

        // when the operator raises the limit (the gateway announces the change on the bus)
        result(new TenantStore(database.pool()).update(LIMITED, null, null, new JsonObject().put("toolSecondsPerDay", 60)));
        worker.vertx().eventBus().publish(Addresses.TENANT_CHANGED, new TenantChanged(LIMITED));
        // then its tools run again at once
        assertThat(ask(LIMITED, chat, "call:fs_write {\"path\":\"" + note + "\",\"content\":\"later\"}", 2))
                .startsWith("tool fs_write said: Wrote " + note);
        assertThat(file(LIMITED, note)).isEqualTo("later");
    }

    @Test
    void aTenantWithoutTheLimitIsNotTouched() {
        String chat = "c-" + UUID.randomUUID();
        String note = WorkspacePaths.chatScratch("api", chat) + "/note.md";
        // when a tenant without the limit does what stopped the limited one
        String reply = ask(FREE, chat, fetchThenWrite(note), 1);
        // then both calls ran
        assertThat(sandboxRuns.get()).isEqualTo(1);
        assertThat(reply).startsWith("tool fs_write said: Wrote " + note);
        assertThat(file(FREE, note)).isEqualTo("written");
        assertThat(result(new UsageStore(database.pool()).toolTimeToday(FREE, Instant.now())).limitSeconds()).isNull();
    }

    private static String fetchThenWrite(String path) {
        return "call:web_fetch {\"url\":\"https://example.com/\"} then: call:fs_write {\"path\":\"" + path
                + "\",\"content\":\"written\"}";
    }

    /** Sends a message of the tenant's main bot and waits for the chat's {@code replyNumber}-th reply. */
    private String ask(String tenant, String chat, String text, int replyNumber) {
        InboundMessage message = result(inbox.accept(tenant, "api", chat, partitioner.partitionOf(tenant, "api", chat),
                UUID.randomUUID().toString(), "alice", "user", text, null)).message();
        worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
        OutboxStore outbox = new OutboxStore(database.pool());
        List<String> texts = new ArrayList<>();
        Await.until(replyNumber + " replies in " + chat, Duration.ofSeconds(30), () -> {
            texts.clear();
            result(outbox.repliesAfter(BotRef.main(tenant), "api", chat, 0, 1_000)).forEach(r -> texts.add(r.text()));
            return texts.size() >= replyNumber;
        });
        return texts.get(replyNumber - 1);
    }

    /** A workspace file's content, or null when there is none. */
    private String file(String tenant, String path) {
        var rows = result(database.pool().preparedQuery("SELECT content FROM workspace_files WHERE tenant_id = $1 AND path = $2")
                .execute(Tuple.of(tenant, path)));
        return rows.size() == 0 ? null : rows.iterator().next().getString(0);
    }
}
