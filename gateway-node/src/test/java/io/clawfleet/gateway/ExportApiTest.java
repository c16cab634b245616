package io.clawfleet.gateway;

import io.clawfleet.gateway.export.TenantExport;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.KeyStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestDatabases;
import io.clawfleet.shared.testing.TestNodes;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.streams.WriteStream;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code GET /api/v1/export} over real HTTP (issue 13): a tenant with rows of every kind comes back
 * whole, without a secret; another tenant's rows never appear; only an admin key may export; and a
 * large tenant is streamed, read from the database only as fast as the client takes the archive.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ExportApiTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();
    /** Messages of the large tenant; {@code -Dclawfleet.export.messages=100000} for the figure in docs/PERFORMANCE.md. */
    private static final int BIG = Integer.getInteger("clawfleet.export.messages", 50_000);

    private NodeRuntime node;
    private Vertx client;
    private Database database;
    private String base;
    private Tenant big;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    void start() {
        DbUrl db = TestDatabases.freshEmpty();
        node = TestNodes.start(TestNodes.config("gateway", Map.of("nodeId", "gw-export")), db, List.of(GatewayRole::new));
        base = "http://127.0.0.1:" + node.httpPort();
        client = Vertx.vertx();
        database = Database.connect(client, db, 2, 5_000);
        big = newTenant();
        seed(big, "big-marker");
        sql("""
                INSERT INTO messages (tenant_id, chat_id, role, sender_id, content)
                SELECT $1, (SELECT id FROM chats WHERE tenant_id = $1 AND chat_key = 'chat-' || $2), 'user', 'alice',
                       'message number ' || n || ' of a long history, ' || md5(n::text)
                  FROM generate_series(1, $3::int) AS n""", big, "big-marker", BIG);
    }

    @AfterAll
    void stop() {
        result(node.stop(), Duration.ofSeconds(60));
        result(database.close());
        result(client.close());
    }

    private record Tenant(String id, String key) {
    }

    private Tenant newTenant() {
        String id = "export" + TENANTS.incrementAndGet();
        String key = "key-" + id + "-0123456789abcdef";
        result(new TenantStore(database.pool()).ensure(id, "Tenant " + id, key));
        return new Tenant(id, key);
    }

    private void sql(String statement, Tenant tenant, String marker, Object... more) {
        Object[] params = new Object[2 + more.length];
        params[0] = tenant.id();
        params[1] = marker;
        System.arraycopy(more, 0, params, 2, more.length);
        result(database.pool().preparedQuery(statement).execute(Tuple.from(params)));
    }

    /** One row of every kind a tenant owns, each carrying {@code marker}; the bot's token is {@code token-<marker>}. */
    private void seed(Tenant tenant, String marker) {
        String chat = "(SELECT id FROM chats WHERE tenant_id = $1 AND chat_key = 'chat-' || $2)";
        String inbox = "(SELECT min(id) FROM inbox WHERE tenant_id = $1)";
        sql("INSERT INTO chats (tenant_id, channel, chat_key, partition, display_name) VALUES ($1, 'api', 'chat-' || $2, 3, $2)",
                tenant, marker);
        for (String statement : List.of(
                "INSERT INTO conversation_state (chat_id, tenant_id, summary) VALUES (" + chat + ", $1, 'summary ' || $2)",
                "INSERT INTO chat_admins (chat_id, tenant_id, sender_id) VALUES (" + chat + ", $1, 'admin-' || $2)",
                "INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, text, status)"
                        + " VALUES ($1, " + chat + ", 3, 1, 'm1', 'alice', 'hello ' || $2, 'done')",
                "INSERT INTO messages (tenant_id, chat_id, inbox_id, role, sender_id, content)"
                        + " VALUES ($1, " + chat + ", " + inbox + ", 'user', 'alice', 'hello ' || $2)",
                "INSERT INTO messages (tenant_id, chat_id, inbox_id, role, content)"
                        + " VALUES ($1, " + chat + ", " + inbox + ", 'assistant', 'answer ' || $2)",
                "INSERT INTO outbox (id, tenant_id, chat_id, seq, in_reply_to, text)"
                        + " VALUES ('r-' || $2, $1, " + chat + ", 1, " + inbox + ", 'answer ' || $2)",
                "INSERT INTO tasks (id, tenant_id, chat_id, prompt, schedule_type, schedule_value)"
                        + " VALUES ('task-' || $2, $1, " + chat + ", 'remind ' || $2, 'interval', '3600000')",
                "INSERT INTO task_runs (tenant_id, task_id, due_at, status, result_preview)"
                        + " VALUES ($1, 'task-' || $2, now(), 'success', 'ran ' || $2)",
                "INSERT INTO llm_usage (tenant_id, chat_id, model, input_tokens, output_tokens)"
                        + " VALUES ($1, " + chat + ", 'model-' || $2, 10, 20)",
                "INSERT INTO usage_messages_daily (tenant_id, day, bot_id, key_id, messages)"
                        + " VALUES ($1, current_date - 20, 'main', 'key-' || $2, 4)",
                "INSERT INTO usage_calls_daily (tenant_id, day, bot_id, provider, model, key_id, calls, turns, input_tokens,"
                        + " output_tokens, cached_tokens, cost_micros, unpriced)"
                        + " VALUES ($1, current_date - 50, 'main', 'p', 'model-' || $2, '', 3, 2, 30, 60, 0, 90, 0)",
                "INSERT INTO audit_events (tenant_id, event_type, tool_name, outcome, reason)"
                        + " VALUES ($1, 'tool_call', 'fs_read', 'success', 'audit ' || $2)",
                "INSERT INTO dead_letters (tenant_id, kind, ref_id, payload, error)"
                        + " VALUES ($1, 'inbound', 'dead-' || $2, jsonb_build_object('text', $2), 'failed ' || $2)",
                "INSERT INTO channel_bots (tenant_id, channel, name, token, token_hash, api_url, enabled)"
                        + " VALUES ($1, 'telegram', 'bot_' || $2, 'token-' || $2, 'tokenhash-' || $2, 'http://127.0.0.1:1', false)",
                "INSERT INTO tenant_data_keys (tenant_id, key_id, wrapped_key, master_key_id)"
                        + " VALUES ($1, 1, '\\x00'::bytea, 'master-' || $2)",
                "INSERT INTO webhook_endpoints (tenant_id, bot_id, url, events, secret_enc, secret_key_id, secret_hint, enabled)"
                        + " VALUES ($1, 'main', 'https://hooks.example.com/' || $2, ARRAY['reply.sent'],"
                        + " convert_to('whsec-' || $2, 'UTF8'), 1, 'whsec_…hint', false)",
                "INSERT INTO workspace_files (tenant_id, path, content) VALUES ($1, 'memory/MEMORY.md', 'remember ' || $2)",
                "INSERT INTO workspace_files (tenant_id, path, content) VALUES ($1, 'IDENTITY.md', 'I am ' || $2)",
                "INSERT INTO pending_approvals (chat_id, tenant_id, inbox_id, tool, call_id, arguments, state, approval_id,"
                        + " args_hash, requested_by, expires_at) VALUES (" + chat + ", $1, " + inbox + ", 'shell_exec', 'call_1',"
                        + " jsonb_build_object('command', 'echo ' || $2), '{}'::jsonb, 'approval-' || $2, 'h', 'alice', now())",
                "INSERT INTO turn_steps (inbox_id, step, tenant_id, kind, payload)"
                        + " VALUES (" + inbox + ", 1, $1, 'model', jsonb_build_object('text', 'step ' || $2))")) {
            sql(statement, tenant, marker);
        }
    }

    private HttpResponse<InputStream> export(String key) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/export")).timeout(Duration.ofSeconds(30))
                .header("authorization", "Bearer " + key).GET().build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    /** The archive's entries, read as a stream (as a client without the central directory would). */
    private static Map<String, byte[]> unzip(InputStream in) throws IOException {
        Map<String, byte[]> entries = new LinkedHashMap<>();
        try (ZipInputStream zip = new ZipInputStream(in, StandardCharsets.UTF_8)) {
            for (ZipEntry entry = zip.getNextEntry(); entry != null; entry = zip.getNextEntry()) {
                entries.put(entry.getName(), zip.readAllBytes());
            }
        }
        return entries;
    }

    private Map<String, byte[]> exported(Tenant tenant) throws Exception {
        HttpResponse<InputStream> response = export(tenant.key());
        assertThat(response.statusCode()).isEqualTo(200);
        return unzip(response.body());
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static long lines(byte[] bytes) {
        return text(bytes).lines().count();
    }

    @Test
    void everyKindOfRowIsExportedAndCountedWithoutASecret() throws Exception {
        // given a tenant with one row of every kind, and a second key
        Tenant tenant = newTenant();
        seed(tenant, "alpha-marker");
        KeyStore.Made readKey = result(new KeyStore(database.pool()).create(tenant.id(), "dashboard", Set.of("read"), null, null)).orElseThrow();
        // when its admin exports it
        HttpResponse<InputStream> response = export(tenant.key());
        // then the archive names itself and holds everything, as the manifest counts it
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("content-type")).hasValue("application/zip");
        assertThat(response.headers().firstValue("content-disposition").orElseThrow())
                .startsWith("attachment; filename=\"clawfleet-export-" + tenant.id() + "-").endsWith(".zip\"");
        Map<String, byte[]> entries = unzip(response.body());
        List<String> names = List.copyOf(entries.keySet());
        assertThat(names.get(0)).isEqualTo("tenant.json");
        assertThat(names.get(names.size() - 1)).isEqualTo("manifest.json");
        JsonObject manifest = new JsonObject(text(entries.get("manifest.json")));
        assertThat(manifest.getString("format")).isEqualTo(TenantExport.FORMAT);
        assertThat(manifest.getInteger("version")).isEqualTo(1);
        assertThat(manifest.getString("tenant")).isEqualTo(tenant.id());
        JsonObject counts = manifest.getJsonObject("entries");
        Map<String, Integer> expected = new LinkedHashMap<>();
        expected.put("keys.jsonl", 2);
        expected.put("bots/main/channels.jsonl", 1);
        expected.put("bots/main/webhooks.jsonl", 1);
        expected.put("bots/main/workspace.jsonl", 2);
        expected.put("bots/main/chats.jsonl", 1);
        expected.put("bots/main/inbox.jsonl", 1);
        expected.put("bots/main/messages.jsonl", 2);
        expected.put("bots/main/outbox.jsonl", 1);
        expected.put("bots/main/approvals.jsonl", 1);
        expected.put("bots/main/turn_steps.jsonl", 1);
        expected.put("bots/main/tasks.jsonl", 1);
        expected.put("bots/main/task_runs.jsonl", 1);
        expected.put("usage.jsonl", 1);
        expected.put("usage_messages.jsonl", 1);
        expected.put("usage_calls.jsonl", 1);
        expected.put("audit.jsonl", 1);
        expected.put("dead_letters.jsonl", 1);
        expected.forEach((path, count) -> {
            assertThat(counts.getLong(path)).as(path).isEqualTo(count.longValue());
            assertThat(lines(entries.get(path))).as(path).isEqualTo(count.longValue());
        });
        assertThat(counts.getLong("bots/main/workspace/")).isEqualTo(2);
        assertThat(text(entries.get("bots/main/workspace/memory/MEMORY.md"))).isEqualTo("remember alpha-marker");
        assertThat(text(entries.get("bots/main/workspace/IDENTITY.md"))).isEqualTo("I am alpha-marker");
        JsonObject tenantJson = new JsonObject(text(entries.get("tenant.json")));
        assertThat(tenantJson.getString("id")).isEqualTo(tenant.id());
        assertThat(tenantJson.getString("timeZone")).isEqualTo("UTC");
        JsonObject chat = new JsonObject(text(entries.get("bots/main/chats.jsonl")).strip());
        assertThat(chat.getJsonObject("state").getString("summary")).isEqualTo("summary alpha-marker");
        assertThat(chat.getJsonArray("admins").getJsonObject(0).getString("senderId")).isEqualTo("admin-alpha-marker");
        JsonObject message = new JsonObject(text(entries.get("bots/main/messages.jsonl")).lines().findFirst().orElseThrow());
        assertThat(message.getLong("chat")).isEqualTo(chat.getLong("id"));
        assertThat(message.getString("content")).isEqualTo("hello alpha-marker");
        // and no secret: no key, no key digest, no bot token or its digest
        String all = entries.values().stream().map(ExportApiTest::text).reduce("", String::concat);
        assertThat(all).contains("bot_alpha-marker").contains(readKey.key().prefix())
                .doesNotContain(tenant.key()).doesNotContain(TenantStore.hashKey(tenant.key()))
                .doesNotContain(readKey.secret()).doesNotContain(TenantStore.hashKey(readKey.secret()))
                .doesNotContain("token-alpha-marker").doesNotContain("tokenhash-alpha-marker").doesNotContain("whsec-alpha-marker");
    }

    @Test
    void aTenantsExportHoldsNoneOfAnotherTenantsRows() throws Exception {
        // given two tenants with the same kinds of rows, told apart by their markers
        Tenant a = newTenant();
        Tenant b = newTenant();
        seed(a, "only-in-a-7f3k");
        seed(b, "only-in-b-9q2m");
        // when each exports
        String ofA = exported(a).values().stream().map(ExportApiTest::text).reduce("", String::concat);
        String ofB = exported(b).values().stream().map(ExportApiTest::text).reduce("", String::concat);
        // then each holds its own rows only
        assertThat(ofB).contains("only-in-b-9q2m").doesNotContain("only-in-a-7f3k").doesNotContain(a.id() + "\"");
        assertThat(ofA).contains("only-in-a-7f3k").doesNotContain("only-in-b-9q2m").doesNotContain(b.id() + "\"");
    }

    @Test
    void aKeyWithoutTheAdminScopeMayNotExport() throws Exception {
        Tenant tenant = newTenant();
        KeyStore.Made readKey = result(new KeyStore(database.pool()).create(tenant.id(), "ro", Set.of("read"), null, null)).orElseThrow();
        HttpResponse<InputStream> refused = export(readKey.secret());
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(text(refused.body().readAllBytes())).contains("admin");
    }

    @Test
    void aLargeTenantIsExportedWhole() throws Exception {
        // when the tenant with 50,000 messages is exported over HTTP, read as a stream
        long started = System.nanoTime();
        HttpResponse<InputStream> response = export(big.key());
        assertThat(response.statusCode()).isEqualTo(200);
        long messages = 0;
        JsonObject manifest = null;
        CountingStream body = new CountingStream(response.body());
        try (ZipInputStream zip = new ZipInputStream(body, StandardCharsets.UTF_8)) {
            for (ZipEntry entry = zip.getNextEntry(); entry != null; entry = zip.getNextEntry()) {
                if (entry.getName().equals("bots/main/messages.jsonl")) {
                    messages = new java.io.BufferedReader(new java.io.InputStreamReader(zip, StandardCharsets.UTF_8)).lines().count();
                } else if (entry.getName().equals("manifest.json")) {
                    manifest = new JsonObject(new String(zip.readAllBytes(), StandardCharsets.UTF_8));
                }
            }
        }
        // (a figure for docs/PERFORMANCE.md, not an assertion)
        System.out.printf("export of %,d messages: %,d ms, %,d bytes%n", BIG, (System.nanoTime() - started) / 1_000_000,
                body.count);
        // then every message is there, as the manifest says
        assertThat(messages).isEqualTo(BIG + 2);
        assertThat(manifest).isNotNull();
        assertThat(manifest.getJsonObject("entries").getLong("bots/main/messages.jsonl")).isEqualTo(BIG + 2L);
    }

    /** Counts the bytes read through it. */
    private static final class CountingStream extends java.io.FilterInputStream {
        long count;

        CountingStream(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            count += b < 0 ? 0 : 1;
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            count += Math.max(n, 0);
            return n;
        }
    }

    @Test
    void theDatabaseIsReadOnlyAsFastAsTheClientTakesTheArchive() throws Exception {
        // given a client that takes at most 16 KiB until the test lets it read, and batches of 20 rows
        // (2,500 batches for the messages: a chain of futures per batch once overflowed the stack at 1,000)
        HeldSink sink = new HeldSink(16 * 1024);
        TenantExport export = new TenantExport(client, database.pool(), 20, 60_000);
        Context context = client.getOrCreateContext();
        AtomicReference<TenantExport.Run> run = new AtomicReference<>();
        Promise<JsonObject> done = Promise.promise();
        context.runOnContext(v -> export.open(big.id()).onSuccess(opened -> {
            run.set(opened.orElseThrow());
            opened.get().writeTo(sink).onComplete(done);
        }).onFailure(done::fail));
        // when the client reads only whenever the export waits for it
        int waits = 0;
        long readAtFirstWait = -1;
        while (true) {
            Await.until("the export to wait for the client or end", Duration.ofSeconds(30),
                    () -> done.future().isComplete() || (run.get() != null && run.get().waitingForRoom()));
            if (done.future().isComplete()) {
                break;
            }
            waits++;
            if (readAtFirstWait < 0) {
                readAtFirstWait = run.get().rowsRead();
            }
            // then while the client does not read, what waits for it stays bounded (limit + a chunk + a batch)
            assertThat(sink.queued()).isLessThanOrEqualTo(16 * 1024 + 2 * 64 * 1024);
            Promise<Void> drained = Promise.promise();
            context.runOnContext(v -> {
                sink.drain();
                drained.complete();
            });
            result(drained.future());
        }
        JsonObject manifest = result(done.future());
        // the export waited for the client again and again, and had read a small part of the database when it first did
        assertThat(waits).isGreaterThan(10);
        assertThat(readAtFirstWait).isPositive().isLessThan(BIG / 10);
        assertThat(run.get().rowsRead()).isGreaterThan(BIG);
        Map<String, byte[]> entries = unzip(new ByteArrayInputStream(sink.all()));
        assertThat(lines(entries.get("bots/main/messages.jsonl"))).isEqualTo(BIG + 2);
        assertThat(manifest.getJsonObject("entries").getLong("bots/main/messages.jsonl")).isEqualTo(BIG + 2L);
    }

    @Test
    void anExportThatFailsMidwayLeavesAnArchiveEveryReaderRefuses() throws Exception {
        // given an export waiting for a slow client
        HeldSink sink = new HeldSink(16 * 1024);
        TenantExport export = new TenantExport(client, database.pool(), 100, 60_000);
        Context context = client.getOrCreateContext();
        AtomicReference<TenantExport.Run> run = new AtomicReference<>();
        Promise<JsonObject> done = Promise.promise();
        context.runOnContext(v -> export.open(big.id()).onSuccess(opened -> {
            run.set(opened.orElseThrow());
            opened.get().writeTo(sink).onComplete(done);
        }).onFailure(done::fail));
        Await.until("the export to wait for the client", Duration.ofSeconds(30),
                () -> run.get() != null && run.get().waitingForRoom());
        // when its database session ends, and the client reads on
        result(database.pool().query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                + " WHERE application_name = 'clawfleet-export'").execute());
        context.runOnContext(v -> sink.drain());
        // then the export fails, and what the client got has no manifest and no central directory
        Await.failure(done.future());
        byte[] got = sink.all();
        assertThat(got.length).isPositive();
        Map<String, byte[]> entries = new LinkedHashMap<>();
        try (ZipInputStream zip = new ZipInputStream(new ByteArrayInputStream(got), StandardCharsets.UTF_8)) {
            for (ZipEntry entry = zip.getNextEntry(); entry != null; entry = zip.getNextEntry()) {
                entries.put(entry.getName(), zip.readAllBytes());
            }
        } catch (IOException truncated) {
            // a stream cut inside an entry: as broken as it should be
        }
        assertThat(entries).containsKey("tenant.json").doesNotContainKey("manifest.json");
        java.nio.file.Path file = java.nio.file.Files.createTempFile("export", ".zip");
        try {
            java.nio.file.Files.write(file, got);
            assertThatThrownBy(() -> new java.util.zip.ZipFile(file.toFile()).close()).isInstanceOf(IOException.class);
        } finally {
            java.nio.file.Files.deleteIfExists(file);
        }
    }

    /** A client that keeps what it got and says it is full beyond {@code limit} bytes until {@link #drain()}. */
    private static final class HeldSink implements WriteStream<Buffer> {
        private final int limit;
        private final ByteArrayOutputStream all = new ByteArrayOutputStream();
        private volatile int queued;
        private volatile Handler<Void> drainHandler;

        HeldSink(int limit) {
            this.limit = limit;
        }

        int queued() {
            return queued;
        }

        synchronized byte[] all() {
            return all.toByteArray();
        }

        void drain() {
            Handler<Void> handler;
            synchronized (this) {
                queued = 0;
                handler = drainHandler;
                drainHandler = null;
            }
            if (handler != null) {
                handler.handle(null);
            }
        }

        @Override
        public synchronized Future<Void> write(Buffer data) {
            all.writeBytes(data.getBytes());
            queued += data.length();
            return Future.succeededFuture();
        }

        @Override
        public boolean writeQueueFull() {
            return queued >= limit;
        }

        @Override
        public synchronized WriteStream<Buffer> drainHandler(Handler<Void> handler) {
            this.drainHandler = handler;
            return this;
        }

        @Override
        public WriteStream<Buffer> exceptionHandler(Handler<Throwable> handler) {
            return this;
        }

        @Override
        public Future<Void> end() {
            return Future.succeededFuture();
        }

        @Override
        public WriteStream<Buffer> setWriteQueueMaxSize(int maxSize) {
            return this;
        }
    }
}
